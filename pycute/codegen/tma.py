"""CUDA C++ for TMA plans: the issuing ``__device__`` function (called by one elected thread) and the header part
``pycute/tma.cuh`` (the tensor map type, the load / store wrappers of every rank, bulk groups, expect_tx), rendered
from ``arch.sm90.tma``."""
from __future__ import annotations

from ..arch.sm90.tma import MAX_RANK, REDUCE_TYPES, ReduceOp, tma_ptx
from ..copy.tma.plan import TmaPlan
from ..views import provides
from .common import ABI_VERSION, check_function_name

__all__ = ["emit_tma_copy", "tma_helper", "tma_header_functions"]


def tma_helper(direction: str, rank: int, multicast: bool = False, reduce: str | None = None) -> str:
    """The header's wrapper of a ``rank``-dimensional tile-mode load (``multicast``: to a CTA mask), store (or
    ``reduce``) or prefetch."""
    if reduce is not None:
        return f"pycute_tma_reduce_{reduce}_{rank}d"
    return f"pycute_tma_{direction}{'_multicast' if multicast else ''}_{rank}d"


def _reduce_wrapper(op: ReduceOp, rank: int) -> str:
    coords = ", ".join(f"int c{k}" for k in range(rank))
    regs = ", ".join(f"%{2 + k}" for k in range(rank))
    operands = ", ".join(f'"r"(c{k})' for k in range(rank))
    return (f"__device__ __forceinline__ void {tma_helper('store', rank, reduce=op)}(const void* map, unsigned smem, "
            f"{coords}) {{\n"
            f'  asm volatile("{tma_ptx("store", rank, reduce=op)} [%0, {{{regs}}}], [%1];"\n'
            f'               :: "l"(map), "r"(smem), {operands} : "memory");\n}}')


def _multicast_wrapper(rank: int) -> str:
    coords = ", ".join(f"int c{k}" for k in range(rank))
    regs = ", ".join(f"%{4 + k}" for k in range(rank))
    operands = ", ".join(f'"r"(c{k})' for k in range(rank))
    return (f"__device__ __forceinline__ void {tma_helper('load', rank, True)}(const void* map, unsigned smem, "
            f"unsigned mbar, unsigned short mask, {coords}) {{\n"
            f'  asm volatile("{tma_ptx("load", rank, True)} [%0], [%1, {{{regs}}}], [%2], %3;"\n'
            f'               :: "r"(smem), "l"(map), "r"(mbar), "h"(mask), {operands} : "memory");\n}}')


def _wrapper(direction: str, rank: int) -> str:
    coords = ", ".join(f"int c{k}" for k in range(rank))
    if direction == "prefetch":
        regs = ", ".join(f"%{1 + k}" for k in range(rank))
        operands = ", ".join(f'"r"(c{k})' for k in range(rank))
        return (f"__device__ __forceinline__ void {tma_helper('prefetch', rank)}(const void* map, {coords}) {{\n"
                f'  asm volatile("{tma_ptx("prefetch", rank)} [%0, {{{regs}}}];"\n'
                f'               :: "l"(map), {operands} : "memory");\n}}')
    if direction == "load":
        regs = ", ".join(f"%{3 + k}" for k in range(rank))
        operands = ", ".join(f'"r"(c{k})' for k in range(rank))
        return (f"__device__ __forceinline__ void {tma_helper('load', rank)}(const void* map, unsigned smem, "
                f"unsigned mbar, {coords}) {{\n"
                f'  asm volatile("{tma_ptx("load", rank)} [%0], [%1, {{{regs}}}], [%2];"\n'
                f'               :: "r"(smem), "l"(map), "r"(mbar), {operands} : "memory");\n}}')
    regs = ", ".join(f"%{2 + k}" for k in range(rank))
    operands = ", ".join(f'"r"(c{k})' for k in range(rank))
    return (f"__device__ __forceinline__ void {tma_helper('store', rank)}(const void* map, unsigned smem, "
            f"{coords}) {{\n"
            f'  asm volatile("{tma_ptx("store", rank)} [%0, {{{regs}}}], [%1];"\n'
            f'               :: "l"(map), "r"(smem), {operands} : "memory");\n}}')


def tma_header_functions() -> str:
    """Every rank's load and store wrapper (the header's TMA part)."""
    return "\n".join([_wrapper(d, r) for d in ("load", "store", "prefetch") for r in range(1, MAX_RANK + 1)]
                     + [_multicast_wrapper(r) for r in range(1, MAX_RANK + 1)]
                     + [_reduce_wrapper(op, r) for op in REDUCE_TYPES for r in range(1, MAX_RANK + 1)])


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
    head = [f"// {len(plan.instructions)} x {plan.atom.ptx} (box {m.box}, swizzle {m.swizzle.name}), "
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
        body.append(f"  {tma_helper(plan.direction, m.rank, mc is not None, plan.reduce)}({args});")
    if plan.direction == "store":
        body.append("  pycute_bulk_commit_group();")
    lines = ['#include "pycute/tma.cuh"', "", *head]
    if load:
        lines.append(f"constexpr unsigned {name}_expect_tx = {plan.expect_tx}u;")
    lines += [f"__device__ __forceinline__ void {name}({sig}) {{", *body, "}"]
    return "\n".join(lines) + "\n"
