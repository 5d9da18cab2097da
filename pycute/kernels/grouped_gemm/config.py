"""The grouped GEMM, ``D[rows of g] = scale * A[rows of g] B[g]^T`` for every group ``g`` in one launch (sm_90a): A is
``(sum M_g) x K`` (or a padded batch ``G x M_max x K``), B is ``G x N x K``, D ``(sum M_g) x N`` (or ``G x M_max x
N``), bf16, f32 accumulation. The group sizes live on the device -- int32 cumulative ends (``torch._grouped_mm``'s
``offs``) or counts per group of the padded batch -- and the host never reads them.

Plans: the Hopper GEMM's pipeline with both loads at element coordinates (A's rows ``row0 + m BM`` through one map of
the whole A: rows past the group land in accumulator rows that are never stored, D's rows being independent; B's
rows ``g N + n BN`` of B viewed as ``(G N) x K``: rows past N land in columns past D's, which its map clips), its
wgmma and epilogue, the grouped scheduler (``make_grouped_scheduler``: a forward cursor over the groups per CTA) and
D's map retargeted per group a consumer warpgroup meets (``tensormap.replace``: the group's first row and its rows,
docs/tma.md section 1c), so a store clips at the group's last row: nothing is written outside a group."""
from __future__ import annotations

import functools
from pathlib import Path

import attrs

from ...compile.nvrtc import Compiled, compile_cuda
from ...copy.smem_ldst.epilogue import EpiloguePlan, make_epilogue
from ...copy.tma.params import TensorMapParams
from ...copy.tma.planner import make_tma_copy
from ...copy.tma.retarget import TensorMapReplace
from ...dtypes import bf16, f32
from ...errors import PlanError
from ...layout import Layout
from ...mma import WgmmaPlan, make_mma, wgmma_accumulator
from ...pipeline import Consumer, PipelinePlan, Producer, make_pipeline
from ...pipeline.grouped import GroupForm, GroupedScheduler, make_grouped_scheduler
from ...tensor import dynamic, kmajor_smem_tensor, make_global_tensor, make_stages
from ..hopper_gemm.config import PRODUCER_REGISTERS, SM_SHARED, WGMMA_ROWS
from ..hopper_gemm.plans import CHUNK, TEMPLATE
from ..protocol import LaunchShape, make_launch_shape
from ..source import handwritten_lines, kernel_source

__all__ = ["GroupedGemm", "GroupedPlans", "grouped_candidates", "HANDWRITTEN_LINES", "kernel_body_lines", "MAP_BYTES"]

BODY = Path(__file__).with_name("kernel.cuh")
#: A tensor map's bytes (CUDA driver API, CUtensorMap): a consumer warpgroup's scratch copy to edit, and its slot in
#: the workspace of retargeted maps.
MAP_BYTES = 128


@attrs.frozen
class GroupedPlans:
    """The plans of one configuration for arrays of ``rows x K`` (A), ``G N x K`` (B) and ``rows x N`` (D)."""

    mainloop: PipelinePlan
    mma: WgmmaPlan
    store_d: EpiloguePlan
    retarget_d: TensorMapReplace
    sched: GroupedScheduler

    @classmethod
    def of(cls, g: "GroupedGemm", rows: int, bn_rows: int, N: int, K: int) -> "GroupedPlans":
        a = make_global_tensor(bf16, Layout((rows, K), (K, 1)))
        b = make_global_tensor(bf16, Layout((bn_rows, K), (K, 1)))
        d = make_global_tensor(bf16, Layout((rows, N), (N, 1)))
        at = (dynamic("row"), dynamic("k"))
        load_a = make_tma_copy(kmajor_smem_tensor(bf16, g.BM, g.BK, "128B"), a, origin=at)
        load_b = make_tma_copy(kmajor_smem_tensor(bf16, g.BN, g.BK, "128B"), b, origin=at,
                               multicast=g.cluster if g.cluster > 1 else None)
        mainloop = make_pipeline({"a": load_a, "b": load_b}, consumer=Consumer("warpgroup", g.consumers),
                                 producer=Producer("tma", "warp"), stages=g.stages, reserve=g.epilogue_bytes + 1024,
                                 name="mainloop")
        mma = make_mma(wgmma_accumulator(f32, g.BM, g.BN), mainloop.ring("a"), mainloop.ring("b"))
        ring_d = make_stages(kmajor_smem_tensor(bf16, WGMMA_ROWS, CHUNK, "128B"), 2)[:, :, dynamic("slot")]
        store_d = make_epilogue(wgmma_accumulator(f32, WGMMA_ROWS, CHUNK), ring_d, d, barrier_id=dynamic("bar"))
        retarget_d = store_d.tma.retarget(extents=(dynamic("rows"), None))
        sched = make_grouped_scheduler(g.BM, form=g.form, cluster=(g.cluster, 1), swizzle=g.group, name="grp")
        assert isinstance(mma, WgmmaPlan)
        return cls(mainloop, mma, store_d, retarget_d, sched)

    def maps(self) -> tuple[TensorMapParams, TensorMapParams, TensorMapParams]:
        """The tensor-map parameters of A, B (viewed as ``G N x K``) and D (the template each group's is edited
        from)."""
        loads = dict(self.mainloop.loads)
        return loads["a"].tensor_map, loads["b"].tensor_map, self.store_d.tma.tensor_map


@attrs.frozen
class GroupedGemm:
    """A configuration: the ``form`` of the group sizes, BN, two cooperative consumer warpgroups of ``m_blocks``
    64-row blocks each, the stages (None: as many as fit), the cluster (CTAs along M that share B by multicast: a
    cluster's CTAs take adjacent tiles of one group) and the raster's band height within a group."""

    form: GroupForm = "offsets"
    BN: int = 128
    m_blocks: int = 1
    stages: int | None = None
    cluster: int = 1
    group: int = 8

    consumers = 2
    dtype = "bf16"
    mode = "cooperative"
    BK = 64

    def __attrs_post_init__(self) -> None:
        if self.BN % CHUNK or self.m_blocks * self.BN > 256:
            raise PlanError(f"GroupedGemm: BN={self.BN}, m_blocks={self.m_blocks}: BN a multiple of {CHUNK} and at "
                            f"most 64 x 256 of accumulator per warpgroup")

    @property
    def BM(self) -> int:
        return WGMMA_ROWS * self.m_blocks * self.consumers

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def epilogue_bytes(self) -> int:
        """Each consumer's ring of two 64 x 64 bf16 tiles and the scratch copy of its D map."""
        return self.consumers * (2 * WGMMA_ROWS * CHUNK * 2 + MAP_BYTES)

    @functools.cached_property
    def plans(self) -> GroupedPlans:
        return GroupedPlans.of(self, TEMPLATE, TEMPLATE, TEMPLATE, TEMPLATE)

    @property
    def smem_bytes(self) -> int:
        return self.plans.mainloop.smem_bytes + self.epilogue_bytes + 1024

    @property
    def launch_shape(self) -> LaunchShape:
        return make_launch_shape("grouped_gemm", self.threads, self.smem_bytes, self.cluster)

    @property
    def consumer_registers(self) -> int:
        """setmaxnreg's budget for a consumer thread (one CTA per SM)."""
        per_thread = min(255, 65536 // self.threads) // 8 * 8
        return min(240, (per_thread * self.threads - PRODUCER_REGISTERS * 128) // (128 * self.consumers) // 8 * 8)

    def constants(self) -> dict[str, bool | int]:
        """The compile-time constants ``kernel.cuh`` reads."""
        return {"THREADS": self.threads, "CONSUMERS": self.consumers, "BM": self.BM, "BN": self.BN, "BK": self.BK,
                "M_BLOCKS": self.m_blocks, "SLICE_ROWS": WGMMA_ROWS, "ACC_VALUES": self.BN // 2, "CHUNK": CHUNK,
                "CHUNK_VALUES": CHUNK // 2, "CHUNKS_N": self.BN // CHUNK, "EPILOGUE_SLOTS": 2,
                "EPILOGUE_RING_BYTES": 2 * WGMMA_ROWS * CHUNK * 2, "MAP_BYTES": MAP_BYTES,
                "PRODUCER_REGISTERS": PRODUCER_REGISTERS, "CONSUMER_REGISTERS": self.consumer_registers}

    def source(self) -> str:
        """The constants, the plans' functions, then ``kernel.cuh``."""
        p = self.plans
        return kernel_source(repr(self), self.constants(),
                             [p.mainloop.cuda(), p.mma.cuda("mma", warpgroup_arg=True), p.store_d.cuda("store_d"),
                              p.retarget_d.cuda("retarget_d"), p.sched.cuda()], BODY)

    def compile(self) -> Compiled:
        return compile_cuda(self.source(), arch="sm_90a", options=("-std=c++17",))

    def explain(self) -> str:
        p, s = self.plans, self.launch_shape
        head = (f"{self!r}: {self.BM} x {self.BN} tiles, {p.mainloop.stages} stages, {s.threads} threads, "
                f"{s.smem_bytes} B of shared memory, cluster {s.cluster}")
        return "\n\n".join([head, p.mainloop.explain(), p.mma.explain(), p.store_d.explain(),
                            p.retarget_d.explain(), p.sched.explain()])


@functools.lru_cache(maxsize=None)
def grouped_candidates(form: GroupForm) -> tuple[GroupedGemm, ...]:
    """The configurations the op chooses among (``op.choose_grouped``): 128 x 128 tiles with B multicast over a
    cluster of two, 128 x 256 for groups of many rows and a wide N, 128 x 64 when the tiles cannot fill the GPU."""
    return (GroupedGemm(form, BN=128, cluster=2), GroupedGemm(form, BN=256), GroupedGemm(form, BN=64))


def kernel_body_lines() -> int:
    """The hand-written lines of ``kernel.cuh``."""
    return handwritten_lines(BODY.read_text(encoding="utf-8"), "grouped_gemm")


HANDWRITTEN_LINES = 61
