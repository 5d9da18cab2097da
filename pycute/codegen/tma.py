"""CUDA C++ for TMA plans: the issuing ``__device__`` function (called by one elected thread) and the header part
``pycute/tma.cuh`` (the tensor map type, the load / store wrappers of every rank, bulk groups, expect_tx), rendered
from ``arch.sm90.tma``."""
from __future__ import annotations

from ..arch.sm100.tma_pair import tma_pair_ptx
from ..arch.sm90.tma import (GLOBAL_ALIGN, MAX_RANK, REDUCE_TYPES, TENSOR_MAP_BYTES, TENSORMAP_ACQUIRE_PTX,
                              TENSORMAP_PUBLISH_PTX, tensormap_replace_ptx, tma_ptx)
from ..copy.tma.plan import TmaPlan
from ..copy.tma.retarget import TensorMapReplace
from ..views import provides
from .cache import createpolicy_statement
from .common import ABI_VERSION, check_function_name
from .tma_modes import tma_mode_header_functions

__all__ = ["emit_tma_copy", "emit_tma_retarget", "tma_helper", "tma_header_functions", "retarget_header_functions"]


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
    return "\n".join(out) + "\n\n" + retarget_header_functions() + "\n" + tma_mode_header_functions()


def retarget_header_functions() -> str:
    """The header's device-side retargeting helpers: fetch a map into shared memory (a warp), replace one field,
    publish it (a warp), acquire it."""
    words = TENSOR_MAP_BYTES // 4
    return f"""// Retargeting a tensor map on the device (sm_90a; PTX ISA tensormap.replace, tensormap.cp_fenceproxy): a warp
// copies the map into {TENSOR_MAP_BYTES} bytes of shared memory, one lane replaces fields, the warp publishes it to global
// memory, and the thread that issues copies through it acquires it first (generated: plan.retarget(...).cuda()).
__device__ __forceinline__ void pycute_tensormap_acquire_gpu(const void* map) {{
  asm volatile("{TENSORMAP_ACQUIRE_PTX}" :: "l"(map) : "memory");
}}
// The calling warp ({words} lanes, one word each) copies the map at generic address `map` to shared `smap`.
__device__ __forceinline__ void pycute_tensormap_fetch(unsigned smap, const void* map) {{
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  const unsigned word = static_cast<const unsigned*>(map)[lane];
  asm volatile("st.shared.u32 [%0], %1;" :: "r"(smap + 4u * lane), "r"(word) : "memory");
}}
__device__ __forceinline__ void pycute_tensormap_replace_global_address(unsigned smap, const void* address) {{
  asm volatile("{tensormap_replace_ptx("global_address")} [%0], %1;"
               :: "r"(smap), "l"(reinterpret_cast<unsigned long long>(address)) : "memory");
}}
// Dimension ORD's extent, in elements.
template <int ORD>
__device__ __forceinline__ void pycute_tensormap_replace_global_dim(unsigned smap, unsigned extent) {{
  asm volatile("{tensormap_replace_ptx("global_dim")} [%0], %1, %2;" :: "r"(smap), "n"(ORD), "r"(extent)
               : "memory");
}}
// Dimension ORD + 1's stride, in bytes (a multiple of 16).
template <int ORD>
__device__ __forceinline__ void pycute_tensormap_replace_global_stride(unsigned smap, unsigned long long bytes) {{
  asm volatile("{tensormap_replace_ptx("global_stride")} [%0], %1, %2;" :: "r"(smap), "n"(ORD), "l"(bytes)
               : "memory");
}}
// The whole warp: copy the map at shared `smap` to global `gmap` and release it to the tensormap proxy.
__device__ __forceinline__ void pycute_tensormap_publish(void* gmap, unsigned smap) {{
  asm volatile("{TENSORMAP_PUBLISH_PTX}" :: "l"(gmap), "r"(smap) : "memory");
}}"""


def _coordinate(plan: TmaPlan, dim: int, offset: int) -> str:
    """Dimension ``dim``'s coordinate expression: the tile index (times the tile's extent) or the element origin
    (over the part it is viewed in), the multicast CTA's slice, and the box's own offset."""
    if plan.origin:
        terms = []
        for o in plan.origin:
            if o.dim != dim:
                continue
            if o.name is None:
                offset += o.value // o.step      # type: ignore[operator]
            else:
                terms.append(o.name if o.step == 1 else f"{o.name} / {o.step}")
    else:
        terms = [t.formula() for t in plan.tile if t.dim == dim]
    if plan.multicast is not None and not plan.multicast.plain and plan.multicast.dim == dim:
        terms.append(f"slice * {plan.multicast.coord_step}")
    if offset or not terms:
        terms.append(str(offset))
    return " + ".join(terms)


def _multicast_lines(plan: TmaPlan, name: str) -> tuple[list[str], list[str]]:
    """The comment and the statements that give the calling CTA its ``slice`` of the tile and its ``mask``."""
    mc = plan.multicast
    assert mc is not None
    spec = mc.spec
    if mc.plain:                                # each mask names its issuer alone: a plain load
        if spec.mask is None:
            return [f"// Multicast over the {spec.describe()}: each CTA loads its own tile, a plain load."], []
        rank = spec.participants()[0]
        return ([f"// Multicast over the {spec.describe()}: the mask names one CTA, so rank {rank} loads the whole",
                 "// tile into its own shared memory with a plain load; any other CTA returns at once."],
                ["  const unsigned rank = pycute_cluster_ctarank();",
                 f"  if (rank != {rank}u) return;"])
    head = [f"// Multicast over the {spec.describe()}: each CTA of a mask loads its slice of the tile into all",
            "// of them, and each CTA's mbarrier receives the whole tile (arm it in every CTA of the mask, then a",
            "// cluster barrier, first)."]
    body = ["  const unsigned rank = pycute_cluster_ctarank();"]
    if spec.mask is not None:
        if spec.mask != (1 << spec.size) - 1:
            head.append(f"// Call it from the CTAs of mask {spec.mask:#06x} (any other CTA returns at once).")
            body.append(f"  if (({spec.mask:#x}u & (1u << rank)) == 0u) return;")
        table = sum(spec.slice_of(r) << (4 * r) for r in spec.participants())      # each rank's slice, 4 bits
        body += ["  const unsigned short mask = " + f"{spec.mask:#x};",
                 "  const unsigned slice = " + ("rank;" if spec.mask == (1 << spec.ctas) - 1 else
                                               f"(unsigned)({table:#x}ull >> (4u * rank)) & 0xFu;")]
    else:
        step = spec.axis_stride
        head.append(f"// Every CTA of the cluster calls it; the line of CTAs along {spec.along} through it shares "
                    f"the tile.")
        body += [f"  const unsigned slice = (rank / {step}u) % {spec.ctas}u;   // the CTA's {spec.along} in the cluster",
                 f"  const unsigned short mask = (unsigned short)({spec.line_mask:#x}u << (rank - slice * {step}u));"]
    return head, body


def _checks(plan: TmaPlan, name: str) -> list[str]:
    """The checked build's guards (``-DPYCUTE_CHECKED``): a printf naming the broken precondition, then a trap."""
    if not plan.preconditions:
        return []
    out = ["#ifdef PYCUTE_CHECKED"]
    for p in plan.preconditions:
        rule = p.rule.replace("%", "%%")
        out += [f"  if ({p.broken_c}) {{",
                f'    printf("pycute: {name}: {p.name} = %d breaks {rule}: {p.why}\\n", {p.name});',
                "    __trap();", "  }"]
    return out + ["#endif"]


def _head(plan: TmaPlan, name: str) -> tuple[list[str], str]:
    """The function's comment lines and its parameter list."""
    m = plan.tensor_map
    tiles = ", ".join([f"int {c}" for c in plan.coordinate_names] + [f"unsigned {s.name}" for s in plan.stages])
    head = [plan.convention.comment(),
            f"// {len(plan.instructions)} x {plan.atom.ptx} (box {m.box}, swizzle {m.swizzle.name}), "
            f"pycute C ABI {ABI_VERSION}",
            f"// tensor map: {m.dtype} dims {m.global_dims} strides {m.global_strides} B box {m.box} swizzle "
            f"{m.swizzle.name} (plan.tensor_map.encode(address))",
            f"// tile {plan.tile_shape} of {plan.gmem!r}, shared {plan.smem!r}",
            "// Call from one thread (elected): `map` is the tensor map's generic address (a __grid_constant__",
            "// parameter, or global memory after pycute_tensormap_acquire), `smem` the tile's shared address",
            f"// ({plan.smem.base_align}-byte aligned), "
            + ("t<i> the tile index along array mode i." if not plan.origin else
               "the box's origin in array elements: " + ", ".join(
                   f"mode {o.mode} at {o.label()}" for o in plan.origin) + ".")]
    if plan.origin:
        head.append("// Any origin" + (" keeping the preconditions" if plan.preconditions else "")
                    + " is copied as the array has it there"
                    + (" (elements outside it load as the fill)." if plan.direction != "store" else
                       " (elements outside it are not stored)."))
    if plan.preconditions:
        head.append("// Preconditions (a checked build, -DPYCUTE_CHECKED, traps on them): "
                    + "; ".join(p.rule for p in plan.preconditions) + ".")
    if plan.direction == "prefetch":
        head.append("// An L2 prefetch of the tile's boxes: no shared memory, no completion to wait for.")
        sig = f"const void* map, {tiles}"
    elif plan.direction == "load":
        head.append(f"// Arm `mbar` with pycute_mbarrier_arrive_expect_tx(mbar, {name}_expect_tx) in the same phase.")
        sig = f"const void* map, unsigned smem, unsigned mbar, {tiles}"
    else:
        head += ["// The threads that wrote the tile run pycute_fence_proxy_async_shared() and a barrier first; the",
                 "// stores form one bulk group, committed here: pycute_bulk_wait_group_read<0>() before reusing",
                 "// `smem`, pycute_bulk_wait_group<0>() before the global writes are visible."]
        sig = f"const void* map, unsigned smem, {tiles}"
    if plan.cache_hint is not None:
        head.append(f"// Every box carries the L2 policy {plan.cache_hint} (createpolicy, .L2::cache_hint).")
    return head, sig.rstrip(", ")


@provides("cuda", TmaPlan)
def emit_tma_copy(plan: TmaPlan, name: str = "pycute_tma_copy") -> str:
    """The issuing function of ``plan`` and ``<name>_expect_tx`` (a load's bytes per tile)."""
    check_function_name(name)
    head, sig = _head(plan, name)
    load, prefetch, mc = plan.direction == "load", plan.direction == "prefetch", plan.multicast
    body = _checks(plan, name)
    if plan.cache_hint is not None:
        body.append(createpolicy_statement(plan.cache_hint))
    if mc is not None:
        more, lines = _multicast_lines(plan, name)
        head += more
        body += lines
    if plan.atom.pair:
        head += ["// Pair load (.cta_group::2, sm_100a): each CTA of the pair calls it with `mbar` the CTA-local address",
                 f"// of its barrier; the even CTA's barrier receives the pair's bytes ({name}_expect_tx). Only the even",
                 "// CTA arms it."]
        body.append("  mbar = pycute_mapa(mbar, pycute_cluster_ctarank() & ~1u);   // the even CTA's barrier")
    policy = ", policy" if plan.cache_hint is not None else ""
    cast = mc is not None and not mc.plain
    helper = tma_helper(plan.direction, plan.tensor_map.rank, cast, plan.reduce, plan.atom.pair,
                        plan.cache_hint is not None)
    for inst in plan.instructions:
        coords = ", ".join(_coordinate(plan, d, c) for d, c in enumerate(inst.coords))
        smem = f"smem + {inst.smem_offset}u" if inst.smem_offset else "smem"
        smem += "".join(f" + {s.name} * {s.smem_step}u" for s in plan.stages)
        if cast:
            assert mc is not None
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


@provides("cuda", TensorMapReplace)
def emit_tma_retarget(r: TensorMapReplace, name: str = "pycute_tma_retarget") -> str:
    """The retargeting function of ``r``: fetch, replace each field, publish (one whole warp calls it)."""
    check_function_name(name)
    ints = "".join(f", int {n}" for n in r.names)
    head = [f"// Retarget the tensor map of {r.plan!r}, pycute C ABI {ABI_VERSION}:",
            "// " + "; ".join(_field_comment(f) for f in r.fields) + ".",
            "// One whole warp calls it (tensormap.cp_fenceproxy is .sync.aligned): `tmpl` is the map to start from",
            f"// (the kernel's __grid_constant__ map, or any map of the plan), `gmap` this CTA's {TENSOR_MAP_BYTES}-byte map in",
            f"// global memory ({TENSOR_MAP_BYTES}-byte aligned), `smap` {TENSOR_MAP_BYTES} bytes of shared scratch "
            f"({TENSOR_MAP_BYTES}-byte aligned),",
            f"// `address` the group's base ({GLOBAL_ALIGN}-byte aligned). Then the thread that issues copies runs",
            "// pycute_tensormap_acquire_gpu(gmap) before its first copy through gmap (from another warp: after a CTA",
            "// barrier). Wait for earlier copies through gmap to finish reading it before retargeting it again",
            "// (loads: their mbarrier phases; stores: pycute_bulk_wait_group_read<0>())."]
    if r.preconditions:
        head.append("// Preconditions (a checked build, -DPYCUTE_CHECKED, traps on them): "
                    + "; ".join(p.rule for p in r.preconditions) + ".")
    # A warp vote first: the lowest lane that finds a value broken prints it, the warp meets, then every lane traps
    # (a lane trapping before the printing one has printed would cut the message off).
    checks = ["#ifdef PYCUTE_CHECKED", "  unsigned lane_;", '  asm("mov.u32 %0, %%laneid;" : "=r"(lane_));']
    tests = [(f"reinterpret_cast<unsigned long long>(address) % {GLOBAL_ALIGN}ull != 0",
              f"pycute: {name}: address %llx is not {GLOBAL_ALIGN}-byte aligned (a tensor map's global address is)",
              "reinterpret_cast<unsigned long long>(address)")]
    for p in r.preconditions:
        tests.append((p.broken_c, f"pycute: {name}: {p.name} = %d breaks " + p.rule.replace("%", "%%") + f": {p.why}",
                      p.name))
    for test, message, value in tests:
        checks += [f"  if (const unsigned bad_ = __ballot_sync(0xFFFFFFFFu, {test})) {{",
                   f'    if (lane_ == __ffs(bad_) - 1u) printf("{message}\\n", {value});',
                   "    __syncwarp();", "    __trap();", "  }"]
    checks.append("#endif")
    edits = []
    for f in r.fields:
        if f.field == "global_address":
            edits.append("    pycute_tensormap_replace_global_address(smap, address);")
        else:
            edits.append(f"    pycute_tensormap_replace_{f.field}<{f.ordinal}>(smap, {f.c_value()});")
    body = [*checks, "  pycute_tensormap_fetch(smap, tmpl);", "  __syncwarp();",
            "  if (pycute_elect_one_sync()) {", *edits, "  }", "  __syncwarp();",
            "  pycute_tensormap_publish(gmap, smap);"]
    lines = ['#include "pycute/tma.cuh"', "", *head,
             f"__device__ __forceinline__ void {name}(const void* tmpl, void* gmap, unsigned smap, "
             f"const void* address{ints}) {{", *body, "}"]
    return "\n".join(lines) + "\n"


def _field_comment(f) -> str:
    at = "" if f.ordinal is None else f"[{f.ordinal}]"
    return f"{f.field}{at} = " + ("address" if f.field == "global_address" else f.c_value())
