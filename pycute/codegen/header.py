"""The device headers a kernel composes around generated copies, one per mechanism, rendered from the facts of
``arch/`` and shipped as package data under ``include_dir()``:

* ``pycute/cp_async.cuh``: cp.async copies, groups, the mbarrier arrive (``arch.sm80``; sm_80 and later,
  standing alone);
* ``pycute/common.cuh``: warps, elect, clusters, mbarriers, proxy fences (``arch.sm90``; sm_90 and later);
* ``pycute/tma.cuh``: TMA tile loads and stores, the tensor map type, bulk groups, expect_tx (``arch.sm90``);
* ``pycute/bulk.cuh``: flat bulk copies, DSMEM copies, ``mapa`` and remote mbarrier arrivals (``arch.sm90``);
* ``pycute/smem_ldst.cuh``: registers <-> shared memory (stmatrix / ldmatrix, ld/st.shared), the packing
  conversions, named barriers (``arch.sm90``, ``arch.sm100.matrix``, ``arch.sm80.cvt``);
* ``pycute/pipeline.cuh``: the state a pipeline's roles keep (``pycute.pipeline``; sm_90 and later);
* ``pycute/scheduler.cuh``: the tile type and cluster launch control (``arch.sm100.clc``; sm_100a);
* ``pycute/tcgen05.cuh``: the shared-memory descriptor, TMEM allocation, tcgen05 fences and commit, and the soft
  build's TMEM model with its tcgen05.cp (``arch.sm100``);
* ``pycute/tcgen05_ldst.cuh``: tcgen05.ld / st wrappers of every shape and their software model (``arch.sm100``);
* ``pycute/tcgen05_mma.cuh``: tcgen05.mma wrappers of every kind, cta_group, scale_vec, A operand and .ws
  (``arch.sm100.mma``);
* ``pycute/sm100.cuh``: all of them, the one include the C ABI promises;
* ``pycute/wgmma.cuh``: Hopper's wgmma: the sm_90 descriptor, fences and groups, the warpgroup, ``setmaxnreg``
  (``arch.sm90.wgmma``; sm_90a, outside ``sm100.cuh``, in ``STANDALONE``).

A new copy variant adds its part to ``PARTS``. The shipped files are this module's output, checked in so that nvcc
users find them in the wheel; ``tests/codegen`` asserts they are current, and ``python -m pycute header --write``
rewrites them.
"""
from __future__ import annotations

from pathlib import Path

from ..arch.sm100.tcgen05_cp import FP4_CONTAINER_SHIFT, PAIR_CTA_MASK, commit_ptx
from ..arch.sm100.descriptor import LBO, SBO, START_ADDRESS, SWIZZLE
from ..arch.sm100.smem import SMEM_MAX_BYTES
from ..arch.sm100.swizzle_modes import UNIT_BYTES, SwizzleMode
from ..arch.sm100.tmem import ALLOC_COLUMNS, CELL_BITS, COLUMNS, LANE_SHIFT, LANES, QUADRANT_LANES
from ..arch.sm100.tcgen05_ldst import PACK_BITS
from ..arch.sm90.bulk import MAPA_PTX
from ..arch.sm90.warp import FULL_WARP_MASK, WARP_THREADS
from ..compile.nvrtc import include_dir
from ..dtypes import BF16_SHIFT, TF32_MASK
from .common import ABI_VERSION
from .constants import field_get, swizzle_tables
from .tcgen05_ldst import ldst_header_functions, ldst_header_tables
from .tma import tma_header_functions
from .cp_async import cp_async_header
from .bulk import bulk_header
from .smem_ldst import smem_ldst_header
from .pipeline import pipeline_header
from .scheduler import scheduler_header
from .mma import mma_header_functions, soft_mma_functions, soft_mma_tables
from .wgmma import WGMMA_HEADER, wgmma_header
from .templates import render

__all__ = ["ABI_VERSION", "HEADER_NAME", "PARTS", "STANDALONE", "headers", "sm100_header", "header_path", "include_dir",
           "write_header"]

HEADER_NAME = "pycute/sm100.cuh"


def common_header() -> str:
    """The text of ``pycute/common.cuh``."""
    return render("header_common.cuh", abi=ABI_VERSION, warp_threads=WARP_THREADS, full_mask=f"0x{FULL_WARP_MASK:X}")


def tcgen05_header() -> str:
    """The text of ``pycute/tcgen05.cuh``."""
    shift = START_ADDRESS.unit.bit_length() - 1
    return render(
        "header_tcgen05.cuh", abi=ABI_VERSION, lanes=LANES, columns=COLUMNS, lane_shift=LANE_SHIFT,
        quadrant_lanes=QUADRANT_LANES, alloc_min=ALLOC_COLUMNS[0], pair_mask=PAIR_CTA_MASK,
        pair_mask_bin=f"0b{PAIR_CTA_MASK:b}", smem_max=SMEM_MAX_BYTES, start_lo=START_ADDRESS.lo,
        start_hi=START_ADDRESS.lo + START_ADDRESS.width - 1, start_unit=START_ADDRESS.unit, start_shift=shift,
        start_mask=f"0x{(1 << START_ADDRESS.width) - 1:X}", start_bits=START_ADDRESS.width + shift,
        swizzle_tables=swizzle_tables("pycute_soft"), desc_start=field_get(START_ADDRESS, "desc"),
        desc_lbo=field_get(LBO, "desc"), desc_sbo=field_get(SBO, "desc"), desc_swizzle=field_get(SWIZZLE, "desc"),
        column_mask=f"0x{(1 << LANE_SHIFT) - 1:X}", window_mask=f"0x{START_ADDRESS.limit - 1:X}",
        code_none=SwizzleMode.NONE.code, unit_bytes=UNIT_BYTES, unit_words=UNIT_BYTES * 8 // CELL_BITS,
        commit_1=commit_ptx(1), commit_2=commit_ptx(2), fp4_shift=FP4_CONTAINER_SHIFT, fp4_high=FP4_CONTAINER_SHIFT + 3)


def tcgen05_ldst_header() -> str:
    """The text of ``pycute/tcgen05_ldst.cuh``."""
    return render("header_tcgen05_ldst.cuh", abi=ABI_VERSION, column_mask=f"0x{(1 << LANE_SHIFT) - 1:X}",
                  pack_bits=PACK_BITS, pack_mask=f"0x{(1 << PACK_BITS) - 1:X}", ldst_tables=ldst_header_tables(),
                  ldst_functions=ldst_header_functions())


def tma_header() -> str:
    """The text of ``pycute/tma.cuh``."""
    return render("header_tma.cuh", abi=ABI_VERSION, tma_functions=tma_header_functions(), mapa=MAPA_PTX)


def tcgen05_mma_header() -> str:
    """The text of ``pycute/tcgen05_mma.cuh``."""
    return render("header_tcgen05_mma.cuh", abi=ABI_VERSION, mma_functions=mma_header_functions(),
                  soft_mma_functions=soft_mma_functions(), soft_mma_tables=soft_mma_tables(), desc_start=field_get(START_ADDRESS, "desc"),
                  desc_lbo=field_get(LBO, "desc"), desc_sbo=field_get(SBO, "desc"),
                  desc_swizzle=field_get(SWIZZLE, "desc"), code_none=SwizzleMode.NONE.code, unit_bytes=UNIT_BYTES,
                  column_mask=f"0x{(1 << LANE_SHIFT) - 1:X}",
                  bf16_shift=BF16_SHIFT, tf32_mask=f"0x{TF32_MASK:X}")


#: The parts of ``pycute/sm100.cuh``, in include order: (name, what it holds, its renderer).
PARTS = (
    ("pycute/cp_async.cuh", "cp.async copies, groups and the mbarrier arrive (sm_80 and later)", cp_async_header),
    ("pycute/common.cuh", "warps, elect, clusters, mbarriers, proxy fences (sm_90 and later)", common_header),
    ("pycute/tma.cuh", "TMA tile loads and stores, tensor maps, bulk groups, expect_tx (sm_90)", tma_header),
    ("pycute/bulk.cuh", "flat bulk copies, DSMEM, mapa, remote mbarrier arrivals (sm_90)", bulk_header),
    ("pycute/smem_ldst.cuh", "stmatrix / ldmatrix, ld/st.shared, packing cvt, named barriers (sm_90)",
     smem_ldst_header),
    ("pycute/pipeline.cuh", "a pipeline role's state: stage index and phase bit (sm_90)", pipeline_header),
    ("pycute/scheduler.cuh", "tile schedulers: the tile type, cluster launch control (sm_100a)", scheduler_header),
    ("pycute/tcgen05.cuh", "shared-memory descriptor, TMEM allocation, tcgen05 fences and commit, the soft model",
     tcgen05_header),
    ("pycute/tcgen05_ldst.cuh", "tcgen05.ld / tcgen05.st, every shape x .num x pack", tcgen05_ldst_header),
    ("pycute/tcgen05_mma.cuh", "tcgen05.mma, A in shared memory or TMEM, every kind x cta_group", tcgen05_mma_header),
)


#: Headers outside ``pycute/sm100.cuh`` (instructions sm_100a does not have), each included on its own: (name, what
#: it holds, its renderer).
STANDALONE = (
    (WGMMA_HEADER, "wgmma (sm_90a): the sm_90 descriptor, fences and groups, the warpgroup, setmaxnreg", wgmma_header),
)


def sm100_header() -> str:
    """The text of ``pycute/sm100.cuh``: every part, in order."""
    return render("header_sm100.cuh", abi=ABI_VERSION,
                  parts="\n".join(f"//   {name:<24} {what}" for name, what, _ in PARTS),
                  includes="\n".join(f'#include "{name}"' for name, _, _ in PARTS))


def headers() -> dict[str, str]:
    """Every shipped header's name (under ``include_dir()``) and text."""
    return {**{name: render_part() for name, _, render_part in PARTS}, HEADER_NAME: sm100_header(),
            **{name: render_part() for name, _, render_part in STANDALONE}}


def header_path() -> Path:
    """Where the shipped header is: ``include_dir() / "pycute" / "sm100.cuh"``."""
    return include_dir() / HEADER_NAME


def write_header() -> Path:
    """Rewrite the shipped headers from the facts (after a change to ``arch/`` or a template); returns
    ``header_path()``."""
    for name, text in headers().items():
        (include_dir() / name).write_text(text, encoding="utf-8")
    return header_path()
