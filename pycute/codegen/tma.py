"""CUDA C++ for TMA plans: the issuing ``__device__`` function (called by one elected thread) and the header part
``pycute/tma.cuh`` (the tensor map type, the load / store wrappers of every rank, bulk groups, expect_tx), rendered
from ``arch.sm90.tma``."""
from __future__ import annotations

from ..arch.sm100.tma_pair import tma_pair_ptx
from ..arch.sm90.tma import MAX_RANK, REDUCE_TYPES, tma_ptx
from ..copy.tma.plan import TmaPlan
from ..views import provides
from .common import ABI_VERSION, check_function_name

__all__ = ["emit_tma_copy", "tma_helper", "tma_header_functions"]


def tma_helper(direction: str, rank: int, multicast: bool = False, reduce: str | None = None,
               pair: bool = False) -> str:
    """The header's wrapper of a ``rank``-dimensional tile-mode load (``multicast``: to a CTA mask; ``pair``: the
    cta_group::2 form), store (or ``reduce``) or prefetch."""
    if reduce is not None:
        return f"pycute_tma_reduce_{reduce}_{rank}d"
    return f"pycute_tma_{direction}{'_multicast' if multicast else ''}{'_pair' if pair else ''}_{rank}d"


# Per wrapper form: its parameters before the coordinates, its operands ({c}: the coordinates' registers) and the
# constraints of the operands before the coordinates.
_FORMS = {
    "load": ("const void* map, unsigned smem, unsigned mbar, ", "[%0], [%1, {c}], [%2]",
             '"r"(smem), "l"(map), "r"(mbar)'),
    "multicast": ("const void* map, unsigned smem, unsigned mbar, unsigned short mask, ", "[%0], [%1, {c}], [%2], %3",
                  '"r"(smem), "l"(map), "r"(mbar), "h"(mask)'),
    "store": ("const void* map, unsigned smem, ", "[%0, {c}], [%1]", '"l"(map), "r"(smem)'),
    "prefetch": ("const void* map, ", "[%0, {c}]", '"l"(map)'),
}


def _wrapper(name: str, ptx: str, form: str, rank: int) -> str:
    """``name(<form's parameters>, int c0, ...)``: the one ``asm`` statement of ``ptx`` at those coordinates."""
    params, operands, leading = _FORMS[form]
    first = leading.count("(")                                # the coordinates' first operand number
    coords = ", ".join(f"int c{k}" for k in range(rank))
    regs = ", ".join(f"%{first + k}" for k in range(rank))
    constraints = ", ".join(f'"r"(c{k})' for k in range(rank))
    return (f"__device__ __forceinline__ void {name}({params}{coords}) {{\n"
            f'  asm volatile("{ptx} {operands.format(c="{" + regs + "}")};"\n'
            f'               :: {leading}, {constraints} : "memory");\n}}')


def tma_header_functions() -> str:
    """Every rank's load, store, prefetch, multicast load and reduction wrapper (the header's TMA part)."""
    ranks = range(1, MAX_RANK + 1)
    plain = [_wrapper(tma_helper(d, r), tma_ptx(d, r), d, r) for d in ("load", "store", "prefetch") for r in ranks]
    multicast = [_wrapper(tma_helper("load", r, True), tma_ptx("load", r, True), "multicast", r) for r in ranks]
    multicast += [_wrapper(tma_helper("load", r, pair=True), tma_pair_ptx(r), "load", r) for r in ranks]
    reduce = [_wrapper(tma_helper("store", r, reduce=op), tma_ptx("store", r, reduce=op), "store", r)
              for op in REDUCE_TYPES for r in ranks]
    return "\n".join(plain + multicast + reduce)


def _coordinate(plan: TmaPlan, dim: int, offset: int) -> str:
    terms = [f"t{t.mode} * {t.scale}" if t.scale != 1 else f"t{t.mode}" for t in plan.tile if t.dim == dim]
    if plan.multicast is not None and plan.multicast.dim == dim:
        terms.append(f"rank * {plan.multicast.coord_step}")
    if offset or not terms:
        terms.append(str(offset))
    return " + ".join(terms)


@provides("cuda", TmaPlan)
def emit_tma_copy(plan: TmaPlan, name: str = "pycute_tma_copy") -> str:
    """The issuing function of ``plan`` and ``<name>_expect_tx`` (a load's bytes per tile)."""
    check_function_name(name)
    m = plan.tensor_map
    tiles = ", ".join([f"int t{k}" for k in range(len(plan.tile_shape))] + [f"unsigned {s.name}" for s in plan.stages])
    load = plan.direction == "load"
    head = [plan.convention.comment(),
            f"// {len(plan.instructions)} x {plan.atom.ptx} (box {m.box}, swizzle {m.swizzle.name}), "
            f"pycute C ABI {ABI_VERSION}",
            f"// tensor map: {m.dtype} dims {m.global_dims} strides {m.global_strides} B box {m.box} swizzle "
            f"{m.swizzle.name} (plan.tensor_map.encode(address))",
            f"// tile {plan.tile_shape} of {plan.gmem!r}, shared {plan.smem!r}",
            "// Call from one thread (elected): `map` is the tensor map's generic address (a __grid_constant__",
            "// parameter, or global memory after pycute_tensormap_acquire), `smem` the tile's shared address",
            f"// ({plan.smem.base_align}-byte aligned), t<i> the tile index along array mode i."]
    prefetch = plan.direction == "prefetch"
    if prefetch:
        head.append("// An L2 prefetch of the tile's boxes: no shared memory, no completion to wait for.")
        sig = f"const void* map, {tiles}"
    elif load:
        head.append(f"// Arm `mbar` with pycute_mbarrier_arrive_expect_tx(mbar, {name}_expect_tx) in the same phase.")
        sig = f"const void* map, unsigned smem, unsigned mbar, {tiles}"
    else:
        head += ["// The threads that wrote the tile run pycute_fence_proxy_async_shared() and a barrier first; the",
                 "// stores form one bulk group: pycute_bulk_wait_group_read<0>() before reusing `smem`,",
                 "// pycute_bulk_wait_group<0>() before the global writes are visible."]
        sig = f"const void* map, unsigned smem, {tiles}"
    mc = plan.multicast
    body = []
    if plan.atom.pair:
        head += ["// Pair load (.cta_group::2, sm_100a): each CTA of the pair calls it with its own tile and `mbar` the",
                 f"// CTA-local address of the barrier; the even CTA's barrier receives both ({name}_expect_tx bytes).",
                 "// Only the even CTA arms it."]
        body.append("  mbar = pycute_mapa(mbar, pycute_cluster_ctarank() & ~1u);   // the even CTA's barrier")
    if mc is not None:
        head += [f"// Multicast: every CTA of a {mc.ctas}-CTA cluster calls it; CTA r loads slice r into all of",
                 "// them, and each CTA's mbarrier receives the whole tile (arm it in every CTA, then a cluster",
                 "// barrier, first)."]
        body.append(f"  const unsigned rank = pycute_cluster_ctarank();   // 0..{mc.ctas - 1}")
    for inst in plan.instructions:
        coords = ", ".join(_coordinate(plan, d, c) for d, c in enumerate(inst.coords))
        smem = f"smem + {inst.smem_offset}u" if inst.smem_offset else "smem"
        smem += "".join(f" + {s.name} * {s.smem_step}u" for s in plan.stages)
        if mc is not None:
            smem += f" + rank * {mc.smem_step}u"
            args = f"map, {smem}, mbar, {mc.mask:#x}, {coords}"
        elif prefetch:
            args = f"map, {coords}"
        else:
            args = f"map, {smem}, mbar, {coords}" if load else f"map, {smem}, {coords}"
        body.append(f"  {tma_helper(plan.direction, m.rank, mc is not None, plan.reduce, plan.atom.pair)}({args});")
    if plan.direction == "store":
        body.append("  pycute_bulk_commit_group();")
    lines = ['#include "pycute/tma.cuh"', "", *head]
    if load:
        lines.append(f"constexpr unsigned {name}_expect_tx = {plan.expect_tx}u;")
    lines += [f"__device__ __forceinline__ void {name}({sig}) {{", *body, "}"]
    return "\n".join(lines) + "\n"
