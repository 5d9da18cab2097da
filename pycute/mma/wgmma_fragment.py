"""The register fragments of ``wgmma.mma_async`` (PTX ISA #asynchronous-warpgroup-level-matrix-register-fragment):
``wgmma_accumulator`` (D, M x N over M / 64 warpgroups) and ``wgmma_a_fragment`` (an A in registers, M x K). Both
are ``RegisterFragment``s of an ``M x N`` (``M x K``) tile whose layout maps (thread, value) to the coordinate index
``row + M * col`` (CuTe's thread-value convention, as ``Tcgen05LdStPlan.fragment``; ``fragment_coords`` reads it): thread ``t`` is the ``t % 128``-th thread of warpgroup
``t / 128``, which computes rows ``64 (t / 128) ..``; value ``v`` sits in register ``v / (32 / bits)``, the
``v % (32 / bits)``-th from the low bits."""
from __future__ import annotations

from ..arch.sm90.wgmma import D_PTX, D_RUN, WARPGROUP_THREADS, WGMMA_M, WGMMA_TYPES, n_values, warpgroup_fragment
from ..dtypes import DTypeLike, dtype as as_dtype
from ..errors import PlanError
from ..int_tuple import as_int
from ..tensor.rmem import RegisterFragment

__all__ = ["wgmma_accumulator", "wgmma_a_fragment", "fragment_shape", "values_per_register"]


def _rows(m: object, who: str) -> int:
    m = as_int(m, f"{who}: M")
    if m <= 0 or m % WGMMA_M:
        raise PlanError(f"{who}: M={m} is not a multiple of {WGMMA_M} (one {WGMMA_M}-row slice per warpgroup; PTX "
                        f"#asynchronous-warpgroup-level-matrix-shape)")
    return m


def values_per_register(bits: int) -> int:
    """Elements of ``bits`` one 32-bit register holds (1 for f32 / s32 / tf32, 2 for 16-bit, 4 for 8-bit)."""
    return 32 // bits


def wgmma_accumulator(dtype: DTypeLike, M: int, N: int) -> RegisterFragment:
    """D of an ``M x N`` wgmma tile in registers: ``M / 64`` warpgroups of 128 threads, ``N / 2`` values each (f32 and
    s32: one register per value; f16: two per register, ``N / 4`` registers). Thread ``t`` of warp ``w`` of its
    warpgroup ``g`` holds, as value ``i``, element (``64 g + 16 w + t / 4 + 8 ((i / 2) % 2)``, ``8 (i / 4) +
    2 (t % 4) + i % 2``)."""
    dt = as_dtype(dtype)
    if dt.name not in D_PTX:
        raise PlanError(f"wgmma_accumulator: wgmma accumulates into {', '.join(D_PTX)}, not {dt.name}")
    m, n = _rows(M, "wgmma_accumulator"), as_int(N, "wgmma_accumulator: N")
    if n not in n_values("f16"):
        raise PlanError(f"wgmma_accumulator: N={n} is not a wgmma width: 8 to 256 in steps of 8 (PTX "
                        f"#asynchronous-warpgroup-level-matrix-shape)")
    return RegisterFragment(dt, 2 * m, warpgroup_fragment(m, n, D_RUN), (m, n))


def wgmma_a_fragment(dtype: DTypeLike, M: int, K: int) -> RegisterFragment:
    """A (``M x K``) in registers, as ``wgmma.mma_async`` reads it: per warpgroup (rows ``64 g ..``) and k-step,
    4 registers per thread; thread ``t`` of warp ``w`` holds ``32 / bits`` adjacent K elements from ``(32 / bits)
    (t % 4)`` of rows ``16 w + t / 4`` and ``+ 8``, repeated every ``4 (32 / bits)`` elements of K."""
    dt = as_dtype(dtype)
    if dt.name not in WGMMA_TYPES:
        raise PlanError(f"wgmma_a_fragment: wgmma reads {', '.join(WGMMA_TYPES)} operands, not {dt.name}")
    m, k = _rows(M, "wgmma_a_fragment"), as_int(K, "wgmma_a_fragment: K")
    step = WGMMA_TYPES[dt.name].k
    if k <= 0 or k % step:
        raise PlanError(f"wgmma_a_fragment: K={k} is not whole {dt.name} k-steps of {step}")
    return RegisterFragment(dt, 2 * m, warpgroup_fragment(m, k, values_per_register(dt.bits)), (m, k))


def fragment_shape(fragment: RegisterFragment) -> tuple[int, int]:
    """(rows, columns) of the tile a wgmma fragment covers: ``threads / 2`` rows (64 per warpgroup) and twice its
    values per thread as columns (each thread holds ``rows * cols / threads`` elements)."""
    if fragment.layout is None or fragment.threads % WARPGROUP_THREADS:
        raise PlanError(f"{fragment!r} is not a wgmma fragment: whole warpgroups of {WARPGROUP_THREADS} threads with "
                        f"a (thread, value) layout (wgmma_accumulator, wgmma_a_fragment)")
    return fragment.threads // 2, 2 * fragment.layout[1].size()
