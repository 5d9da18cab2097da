"""CUDA C++ for TMA plans: the issuing ``__device__`` function (called by one elected thread) and the header part
``pycute/tma.cuh`` (the tensor map type, the load / store wrappers of every rank, bulk groups, expect_tx), rendered
from ``arch.sm90.tma``."""
from __future__ import annotations

from ..arch.sm100.tma_pair import tma_pair_ptx
from ..arch.sm90.tma import MAX_RANK, REDUCE_TYPES, tma_ptx
from ..copy.tma.plan import TmaPlan
from ..views import provides
from .cache import createpolicy_statement
from .tma_modes import tma_mode_header_functions
from .common import ABI_VERSION, check_function_name

__all__ = ["emit_tma_copy", "tma_helper", "tma_header_functions"]


def tma_helper(direction: str, rank: int, multicast: bool = False, reduce: str | None = None,
               pair: bool = False, cache_hint: bool = False) -> str:
    """The header's wrapper of a ``rank``-dimensional tile-mode load (``multicast``: to a CTA mask; ``pair``: the
    cta_group::2 form), store (or ``reduce``) or prefetch; ``cache_hint``: the form taking an L2 policy."""
    hint = "_hint" if cache_hint else ""
    if reduce is not None:
        return f"pycute_tma_reduce_{reduce}{hint}_{rank}d"
    return f"pycute_tma_{direction}{'_multicast' if multicast else ''}{'_pair' if pair else ''}{hint}_{rank}d"


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


def _wrapper(name: str, ptx: str, form: str, rank: int, cache_hint: bool = False) -> str:
    """``name(<form's parameters>, [policy,] int c0, ...)``: the one ``asm`` statement of ``ptx`` at those
    coordinates (the policy operand last, as ``.L2::cache_hint`` takes it)."""
    params, operands, leading = _FORMS[form]
    first = leading.count("(")                                # the coordinates' first operand number
    coords = ", ".join(f"int c{k}" for k in range(rank))
    regs = ", ".join(f"%{first + k}" for k in range(rank))
    constraints = ", ".join(f'"r"(c{k})' for k in range(rank))
    operands = operands.format(c="{" + regs + "}")
    if cache_hint:
        params += "unsigned long long policy, "
        operands += f", %{first + rank}"
        constraints += ', "l"(policy)'
    return (f"__device__ __forceinline__ void {name}({params}{coords}) {{\n"
            f'  asm volatile("{ptx} {operands};"\n'
            f'               :: {leading}, {constraints} : "memory");\n}}')


def tma_header_functions() -> str:
    """Every rank's load, store, prefetch, multicast, pair and reduction wrapper, each with and without an L2
    cache policy (the header's TMA part)."""
    out = []
    for hint in (False, True):
        for r in range(1, MAX_RANK + 1):
            out += [_wrapper(tma_helper(d, r, cache_hint=hint), tma_ptx(d, r, cache_hint=hint), d, r, hint)
                    for d in ("load", "store", "prefetch")]
            out.append(_wrapper(tma_helper("load", r, True, cache_hint=hint), tma_ptx("load", r, True, cache_hint=hint),
                                "multicast", r, hint))
            out.append(_wrapper(tma_helper("load", r, pair=True, cache_hint=hint), tma_pair_ptx(r, False, hint),
                                "load", r, hint))
            out.append(_wrapper(tma_helper("load", r, True, pair=True, cache_hint=hint), tma_pair_ptx(r, True, hint),
                                "multicast", r, hint))
            out += [_wrapper(tma_helper("store", r, reduce=op, cache_hint=hint),
                             tma_ptx("store", r, reduce=op, cache_hint=hint), "store", r, hint) for op in REDUCE_TYPES]
    return "\n".join(out) + "\n" + tma_mode_header_functions()


def _coordinate(plan: TmaPlan, dim: int, offset: int) -> str:
    terms = [t.formula() for t in plan.tile if t.dim == dim]
    if plan.multicast is not None and plan.multicast.dim == dim:
        terms.append(f"slice * {plan.multicast.coord_step}")
    if offset or not terms:
        terms.append(str(offset))
    return " + ".join(terms)


def _multicast_lines(plan: TmaPlan, name: str) -> tuple[list[str], list[str]]:
    """The comment and the statements that give the calling CTA its ``slice`` of the tile and its ``mask``."""
    mc = plan.multicast
    assert mc is not None
    spec = mc.spec
    head = [f"// Multicast over the {spec.describe()}: each CTA of a mask loads its slice of the tile into all",
            "// of them, and each CTA's mbarrier receives the whole tile (arm it in every CTA of the mask, then a",
            "// cluster barrier, first)."]
    body = ["  const unsigned rank = pycute_cluster_ctarank();"]
    if spec.mask is not None:
        if spec.mask != (1 << spec.size) - 1:
            head.append(f"// Call it from the CTAs of mask {spec.mask:#06x} (any other CTA returns at once).")
            body.append(f"  if (!(({spec.mask:#x}u >> rank) & 1u)) return;")
        body += ["  const unsigned short mask = " + f"{spec.mask:#x};",
                 "  const unsigned slice = " + ("rank;" if spec.mask == (1 << spec.ctas) - 1 else
                                               f"__popc({spec.mask:#x}u & ((1u << rank) - 1u));")]
    else:
        step = spec.axis_stride
        head.append(f"// Every CTA of the cluster calls it; the line of CTAs along {spec.along} through it shares "
                    f"the tile.")
        body += [f"  const unsigned slice = (rank / {step}u) % {spec.ctas}u;   // the CTA's {spec.along} in the cluster",
                 f"  const unsigned short mask = (unsigned short)({spec.line_mask:#x}u << (rank - slice * {step}u));"]
    return head, body


def _head(plan: TmaPlan, name: str) -> list[str]:
    """The function's comment: what it issues, the map, how to call it and how its copies complete."""
    m = plan.tensor_map
    head = [f"// {len(plan.instructions)} x {plan.atom.ptx} (box {m.box}, swizzle {m.swizzle.name}), "
            f"pycute C ABI {ABI_VERSION}",
            f"// tensor map: {m.dtype} dims {m.global_dims} strides {m.global_strides} B box {m.box} swizzle "
            f"{m.swizzle.name} (plan.tensor_map.encode(address))",
            f"// tile {plan.tile_shape} of {plan.gmem!r}, shared {plan.smem!r}",
            "// Call from one thread (elected): `map` is the tensor map's generic address (a __grid_constant__",
            "// parameter, or global memory after pycute_tensormap_acquire), `smem` the tile's shared address",
            f"// ({plan.smem.base_align}-byte aligned), t<i> the tile index along array mode i."]
    if plan.direction == "prefetch":
        head.append("// An L2 prefetch of the tile's boxes: no shared memory, no completion to wait for.")
    elif plan.direction == "load":
        head.append(f"// Arm `mbar` with pycute_mbarrier_arrive_expect_tx(mbar, {name}_expect_tx) in the same phase.")
    else:
        head += ["// The threads that wrote the tile run pycute_fence_proxy_async_shared() and a barrier first; the",
                 "// stores form one bulk group: pycute_bulk_wait_group_read<0>() before reusing `smem`,",
                 "// pycute_bulk_wait_group<0>() before the global writes are visible."]
    if plan.cache_hint is not None:
        head.append(f"// Every box carries the L2 policy {plan.cache_hint} (createpolicy, .L2::cache_hint).")
    if plan.atom.pair:
        head += ["// Pair load (.cta_group::2, sm_100a): each CTA of the pair calls it with `mbar` the CTA-local address",
                 f"// of its barrier; the even CTA's barrier receives the pair's bytes ({name}_expect_tx). Only the even",
                 "// CTA arms it."]
    return head


@provides("cuda", TmaPlan)
def emit_tma_copy(plan: TmaPlan, name: str = "pycute_tma_copy") -> str:
    """The issuing function of ``plan`` and ``<name>_expect_tx`` (a load's bytes per tile)."""
    check_function_name(name)
    m = plan.tensor_map
    tiles = ", ".join([f"int t{k}" for k in range(len(plan.tile_shape))] + [f"unsigned {s.name}" for s in plan.stages])
    load, prefetch = plan.direction == "load", plan.direction == "prefetch"
    head = _head(plan, name)
    sig = (f"const void* map, {tiles}" if prefetch else f"const void* map, unsigned smem, unsigned mbar, {tiles}"
           if load else f"const void* map, unsigned smem, {tiles}")
    mc = plan.multicast
    body = [] if plan.cache_hint is None else [createpolicy_statement(plan.cache_hint)]
    if mc is not None:
        more, lines = _multicast_lines(plan, name)
        head += more
        body += lines
    if plan.atom.pair:
        body.append("  mbar = pycute_mapa(mbar, pycute_cluster_ctarank() & ~1u);   // the even CTA's barrier")
    policy = ", policy" if plan.cache_hint is not None else ""
    helper = tma_helper(plan.direction, m.rank, mc is not None, plan.reduce, plan.atom.pair,
                        plan.cache_hint is not None)
    for inst in plan.instructions:
        coords = ", ".join(_coordinate(plan, d, c) for d, c in enumerate(inst.coords))
        smem = f"smem + {inst.smem_offset}u" if inst.smem_offset else "smem"
        smem += "".join(f" + {s.name} * {s.smem_step}u" for s in plan.stages)
        if mc is not None:
            smem += f" + slice * {mc.smem_step}u"
            args = f"map, {smem}, mbar, mask{policy}, {coords}"
        elif prefetch:
            args = f"map{policy}, {coords}"
        else:
            args = f"map, {smem}, mbar{policy}, {coords}" if load else f"map, {smem}{policy}, {coords}"
        body.append(f"  {helper}({args});")
    if plan.direction == "store":
        body.append("  pycute_bulk_commit_group();")
    lines = ['#include "pycute/tma.cuh"', "", *head]
    if load:
        lines.append(f"constexpr unsigned {name}_expect_tx = {plan.expect_tx}u;")
    lines += [f"__device__ __forceinline__ void {name}({sig}) {{", *body, "}"]
    return "\n".join(lines) + "\n"
