"""Pipelines and tile schedulers as plans, between the copies and MMAs they order and the code generated for them.

``make_pipeline`` derives a ring of shared-memory stages, its producer and consumer roles and its barriers (counts,
bytes, phases) from the producer's copy plans (``plan``, ``planner``); ``make_tile_scheduler`` plans a persistent
CTA's walk over output tiles and ``make_clc_scheduler`` Blackwell's cluster launch control (``scheduler``);
``make_turns`` groups of consumers that read the same stages taking turns at the tensor cores (``turns``);
``make_split_k_scheduler`` shares tiles' k-blocks among CTAs (split-K, stream-K) with a deterministic fixup
(``split_k``); ``make_grouped_scheduler`` walks a grouped GEMM's (group, tile) pairs from group sizes on the device
(``grouped``). Their
CUDA comes from ``pycute.codegen``; ``pycute.sim.pipeline`` model-checks a pipeline's protocol and
``pycute.sim.clc`` emulates cluster launch control (docs/pipelines.md)."""
from .plan import (BarrierInit, Consumer, PipelineFunction, PipelinePlan, Producer, ProducerKind, Release,
                   caller_threads)
from .planner import STAGE_INDEX, make_pipeline, smem_capacity
from .mainloop import MODE_LETTERS, MmaMainloop, make_mma_mainloop
from .accumulator import AccumulatorEpilogue, make_accumulator_epilogue
from .turns import TurnsPlan, make_turns
from .scheduler import (ClcScheduler, Raster, SchedulerFunction, TileScheduler, make_clc_scheduler,
                        make_tile_scheduler)
from .split_k import KSplit, Piece, SplitKScheduler, make_split_k_scheduler
from .split_cost import SplitCost, choose_k_split, modelled_time
from .grouped import GroupForm, GroupTile, GroupedScheduler, make_grouped_scheduler
