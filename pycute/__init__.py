"""pycute: cuTe's layout algebra in Python, and the copy family (planned from layouts, emitted as CUDA, emulated) from
global memory to the tensor cores.

The import name is ``pycute``; the distribution is ``pycute-tcgen05`` (the PyPI name ``pycute`` belongs to an
unrelated project, and NVIDIA's ``nvidia-cutlass`` wheel also installs a top-level ``pycute``).

Layers, lowest first (a module imports only from its own layer and those below; ``compile`` imports nothing
above ``errors``): the algebra (``int_tuple``, ``basis``, ``dtypes``, ``memo``, ``layout``, ``composition``,
``recast``, ``tiling``, ``swizzle``, ``parse``), hardware facts by generation (``arch.sm90``, ``arch.sm100``),
tensors by memory space (``tensor``), the atoms (``atoms``), the copy family's planners and ``copy_async``
(``copy``) beside the MMA's operands (``mma``), pipelines and tile schedulers (``pipeline``), CUDA text
(``codegen``), the machine, executors and PTX interpreter
(``sim``), and on top the round trips (``harness``), the cost model (``cost``), pictures (``viz``), the demo and the
command line. A copy variant has the same file name in every layer (``tcgen05_cp``, ``tcgen05_ldst``). ``views``
lets a lower-layer value offer a view a higher layer implements (``plan.cuda()``, ``plan.verify()``).
"""
from .basis import E, ScaledBasis
from .dtypes import (DType, bf16, dtype, f4e2m1, f6e2m3, f6e3m2, f8e4m3, f8e5m2, f16, f32, f64, i8, i16, i32, i64,
                     tf32, u8, u16, u32, u64)
from .errors import CompileError, DescriptorError, EmulationError, LaunchError, LayoutError, PlanError, PycuteError
from .int_tuple import (ceil_div, congruent, crd2crd, crd2idx, elem_scale, flatten, has_none, idx2crd, inner_product,
                        is_int, is_tuple, prefix_product, product, product_each, shape_div, signum, slice_, tuple_max,
                        weakly_congruent)
from .memo import clear_caches
from .layout import (Layout, LayoutLeft, LayoutRight, coalesce, cosize, depth, filter, is_layout,
                     make_layout, rank, size, slice_and_offset)
from .modes import LayoutBase, append, get, group, latex as print_latex, make_identity_layout, prepend, select, take
from .composition import complement, composition, left_inverse, max_common_layout, max_common_vector, right_inverse
from .recast import downcast, make_ordered_layout, recast, upcast
from .tiling import (blocked_product, flat_divide, flat_product, hier_unzip, logical_divide, logical_product,
                     raked_product, tile_to_shape, tiled_divide, tiled_product, zipped_divide, zipped_product)
from .swizzle import ComposedLayout, Swizzle, shiftl, shiftr
from .parse import parse_layout
from .arch.sm100 import SmemDescriptor, SwizzleMode, TCol, TLane
from .arch.sm100.tmem import alloc_columns_for
from .tensor import (GlobalTensor, RegisterFragment, SmemTensor, TmemAllocation, TmemTensor, dynamic,
                     global_tensor_from, kmajor_smem_buffer, kmajor_smem_tensor, make_fragment, make_global_tensor, make_smem_tensor,
                     FragmentCoords, fragment_coords,
                     make_stages, make_tmem_tensor, mnmajor_smem_tensor)
from .atoms import CopyAtom, Tcgen05CpAtom, TmemLoadAtom, TmemStoreAtom, atom_tmem_tensor
from .copy import (BulkPlan, CopyPlan, CpAsyncPlan, DsmemPlan, Plan, Tcgen05CpPlan, Tcgen05LdStPlan, TmaPlan,
                   TmemCopyPlan, copy_async, expected_tmem, make_bulk_copy, make_cp_async_copy, make_dsmem_copy,
                   make_tiled_copy, make_tma_copy, make_tmem_copy)
from .copy import EpiloguePlan, SmemCopyPlan, make_epilogue, make_smem_copy
from .copy.tma import (ConvProblem, Gather4Plan, Im2colPlan, Im2colWPlan, Multicast, im2col_reference,
                       make_im2col_copy, make_im2col_w_copy, make_tma_gather4)
from .arch.sm80.cache import CachePolicy
from .mma import MmaPlan, make_mma, mma_accumulator
from .mma import GmmaDescriptor, WgmmaPlan, make_gmma_desc, wgmma_a_fragment, wgmma_accumulator
from .mma import Fp8Scaling, make_fp8_scaling
from .mma import FragmentConvertPlan, ReducePlan, make_fragment_convert, make_reduction
from .pipeline import (ClcScheduler, Consumer, PipelinePlan, Producer, TileScheduler, TurnsPlan, make_clc_scheduler,
                       make_pipeline, make_tile_scheduler, make_turns)
from .pipeline import (GroupedScheduler, KSplit, SplitKScheduler, choose_k_split, make_grouped_scheduler,
                       make_split_k_scheduler)
from .pipeline import AccumulatorEpilogue, MmaMainloop, make_accumulator_epilogue, make_mma_mainloop
from . import compile  # pycute.compile (NVRTC, cache, SASS), reachable as pc.compile
from . import codegen  # registers plan.cuda()
from .codegen import header_path, include_dir
from .codegen.tcgen05_cp import commit_asm
from .codegen.probe import probe_source
from .mma import (InstrDescriptor, ScaleFactorTensor, UmmaDescriptor, check_scale_factor_copy, make_instr_desc,
                  make_umma_desc, scale_factor_smem, scale_factor_tensor)
from .sim import check_fixup, check_pipeline, verify, verify_plan, verify_tmem_copy
from .sim.operand import reference_mma, verify_operand
from .viz import draw_layout, draw_plan, draw_smem, layout_grid, print_layout

from .version import __version__  # noqa: E402  (one source: pycute/version.py)

__all__ = [
    # values and errors
    "Layout", "ComposedLayout", "Swizzle", "ScaledBasis", "E", "TLane", "TCol", "DType", "SmemDescriptor",
    "SwizzleMode", "Plan", "Tcgen05CpPlan", "Tcgen05LdStPlan", "CopyPlan", "TmemCopyPlan", "PycuteError",
    "LayoutError", "PlanError", "CompileError", "DescriptorError",
    "EmulationError", "LaunchError",
    # dtypes
    "dtype", "u8", "i8", "f8e4m3", "f8e5m2", "bf16", "f16", "f32", "tf32", "u16", "i16", "u32", "i32", "f4e2m1",
    "f6e2m3", "f6e3m2", "u64", "i64", "f64",
    # int tuples
    "flatten", "product", "inner_product", "prefix_product", "shape_div", "elem_scale", "congruent",
    "weakly_congruent", "crd2idx", "idx2crd", "crd2crd",
    # layout algebra
    "make_layout", "LayoutLeft", "LayoutRight", "LayoutBase", "append", "prepend", "group", "select", "take", "get",
    "make_identity_layout", "print_latex", "ceil_div", "product_each",
    "size", "cosize", "rank", "depth", "coalesce", "filter", "composition", "complement",
    "right_inverse", "left_inverse", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide",
    "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product",
    "hier_unzip", "max_common_vector", "max_common_layout", "upcast", "downcast", "recast", "make_ordered_layout",
    "tile_to_shape", "slice_and_offset", "is_layout", "shiftl", "shiftr", "parse_layout", "clear_caches",
    # copies: tensors by memory space (the canonical K-major tiles by swizzle name), the family's one operator,
    # atoms, plans, TMEM placement
    "make_global_tensor", "global_tensor_from", "make_smem_tensor", "make_tmem_tensor", "make_fragment",
    "GlobalTensor", "RegisterFragment",
    "kmajor_smem_tensor", "kmajor_smem_buffer", "make_stages", "atom_tmem_tensor", "copy_async", "verify", "make_tma_copy", "TmaPlan",
    "Multicast", "CachePolicy", "ConvProblem", "make_im2col_copy", "Im2colPlan", "im2col_reference",
    "make_im2col_w_copy", "Im2colWPlan", "make_tma_gather4", "Gather4Plan",
    "make_mma", "MmaPlan", "make_cp_async_copy", "CpAsyncPlan", "make_bulk_copy", "BulkPlan", "make_dsmem_copy", "DsmemPlan", "make_tiled_copy",
    "verify_plan", "expected_tmem", "dynamic", "TmemAllocation", "alloc_columns_for", "TmemTensor", "SmemTensor",
    "CopyAtom", "Tcgen05CpAtom", "TmemLoadAtom", "TmemStoreAtom",
    # composing into a kernel: the protocol header, the completion signal, a standalone probe kernel, NVRTC
    "include_dir", "header_path", "commit_asm", "probe_source", "compile",
    # TMEM <-> registers
    "make_tmem_copy", "mma_accumulator", "verify_tmem_copy",
    # registers <-> shared memory, and the epilogue
    "make_smem_copy", "SmemCopyPlan", "make_epilogue", "EpiloguePlan",
    # feeding tcgen05.mma
    "make_umma_desc", "UmmaDescriptor", "make_instr_desc", "InstrDescriptor", "scale_factor_tensor", "scale_factor_smem",
    "ScaleFactorTensor", "check_scale_factor_copy", "verify_operand", "reference_mma",
    # Hopper's wgmma (sm_90a): make_mma with a register accumulator
    "wgmma_accumulator", "wgmma_a_fragment", "make_gmma_desc", "GmmaDescriptor", "WgmmaPlan", "mnmajor_smem_tensor",
    "make_fp8_scaling", "Fp8Scaling",
    # register fragments: each value's (row, col), reductions along rows, the accumulator as the next MMA's A
    "fragment_coords", "FragmentCoords", "make_reduction", "ReducePlan", "make_fragment_convert",
    "FragmentConvertPlan",
    # kernels around the instructions: pipelines (roles, barriers, phases) and tile schedulers
    "make_pipeline", "PipelinePlan", "Producer", "Consumer", "check_pipeline", "make_tile_scheduler",
    "TileScheduler", "make_clc_scheduler", "ClcScheduler", "make_turns", "TurnsPlan", "make_split_k_scheduler",
    "SplitKScheduler", "KSplit", "choose_k_split", "check_fixup", "make_grouped_scheduler", "GroupedScheduler",
    "make_mma_mainloop", "MmaMainloop", "make_accumulator_epilogue", "AccumulatorEpilogue",
    # pictures
    "print_layout", "layout_grid", "draw_layout", "draw_smem", "draw_plan",
]

#: Importable from ``pycute`` for code written against CUTLASS's pure-Python pycute (whose ``from pycute import *``
#: brings them), but helpers rather than the tour: ``from pycute.compat import *`` gives CUTLASS's namespace.
COMPAT_NAMES = ("is_int", "is_tuple", "slice_", "has_none", "signum", "tuple_max")
