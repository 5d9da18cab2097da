"""CUDA C++ for cp.async plans: the ``__device__`` function every copying thread calls, and the header part
``pycute/cp_async.cuh`` (the copy wrappers of every width, cache operator and L2 prefetch size, groups and the
mbarrier arrive), rendered from ``arch.sm80.cp_async``."""
from __future__ import annotations

from ..arch.sm80.cp_async import (ARRIVE_NOINC_PTX, CG_SIZE, COMMIT_GROUP_PTX, CP_ASYNC_SIZES,
                                  L2_PREFETCH_SIZES, MBARRIER_ARRIVE_PTX, WAIT_ALL_PTX, WAIT_GROUP_PTX,
                                  CpAsyncCache, L2Prefetch, cp_async_ptx)
from ..atoms.cp_async import cp_async_atom
from ..copy.cp_async.plan import CpAsyncInstruction, CpAsyncPlan, Terms
from ..swizzle import Swizzle
from ..views import provides
from .common import ABI_VERSION, check_function_name
from .templates import render

__all__ = ["cp_async_helper", "cp_async_header", "emit_cp_async_copy"]


def cp_async_helper(cache: str, size: int, l2_prefetch: int | None = None) -> str:
    """The header's wrapper of one cp.async form."""
    return (f"pycute_cp_async_{cache}_{size}" + (f"_l2_{l2_prefetch}" if l2_prefetch else "")
)


def _wrapper(cache: CpAsyncCache, size: int, l2: L2Prefetch | None) -> str:
    return (f"__device__ __forceinline__ void {cp_async_helper(cache, size, l2)}(unsigned smem, const void* gmem, "
            f"unsigned src_size) {{\n"
            f'  asm volatile("{cp_async_ptx(cache, l2)} [%0], [%1], {size}, %2;" :: "r"(smem), '
            f'"l"(gmem), "r"(src_size) : "memory");\n}}')


def cp_async_header() -> str:
    """The text of ``pycute/cp_async.cuh``."""
    caches: tuple[CpAsyncCache, ...] = ("ca", "cg")
    forms = [(c, s) for s in CP_ASYNC_SIZES for c in caches if c == "ca" or s == CG_SIZE]
    functions = [_wrapper(c, s, l2) for c, s in forms
                 for l2 in (None, *L2_PREFETCH_SIZES)]
    return render("header_cp_async.cuh", abi=ABI_VERSION, cp_async_functions="\n".join(functions),
                  commit=COMMIT_GROUP_PTX, wait=WAIT_GROUP_PTX, arrive=ARRIVE_NOINC_PTX, wait_all=WAIT_ALL_PTX,
                  mbarrier_arrive=MBARRIER_ARRIVE_PTX)


def _expr(terms: Terms, e: str, wide: bool = False) -> str:
    """``terms`` at the C expression ``e`` (unsigned; ``wide``: as long long)."""
    parts = []
    for div, mod, coef in terms.terms:
        x = e if div == 1 else f"({e} / {div}u)"
        x = f"({x} % {mod}u)"
        parts.append(f"(long long){x} * {coef}LL" if wide else (x if coef == 1 else f"{x} * {coef}u"))
    if terms.const or not parts:
        parts.append(f"{terms.const}LL" if wide else f"{terms.const}u")
    return " + ".join(parts)


def _swizzled(sw: Swizzle | None, x: str) -> str:
    """``sw`` applied to the element offset ``x``, parenthesised (the caller scales it to bytes)."""
    if sw is None:
        return f"({x})"
    shift = f">> {sw.shift}" if sw.shift >= 0 else f"<< {-sw.shift}"
    return f"(({x}) ^ ((({x}) & {sw.yyy_mask:#x}u) {shift}))"


def _quantities(plan: CpAsyncPlan, it: int) -> dict[str, str]:
    """C expressions of the iteration's shared byte offset, global element offset and coordinates."""
    e, step = "e", it * plan.threads * plan.vector
    out = {}
    if "smem" in plan.linear:
        out["smem"] = f"s_t + {plan.smem_byte(step) - plan.smem_byte(0)}u"
    else:
        out["smem"] = f"{_swizzled(plan.smem.swizzle, _expr(plan.smem_terms, e))} * {plan.elem_bytes}u"
    out["gmem"] = (f"g_t + {plan.gmem_terms(step) - plan.gmem_terms(0)}LL" if "gmem" in plan.linear
                   else _expr(plan.gmem_terms, e, wide=True))
    for k, c in enumerate(plan.coords):
        out[f"c{k}"] = (f"o{k} + (long long)(c{k}_t + {c(step) - c(0)}u)" if f"coord{k}" in plan.linear
                        else f"o{k} + (long long)({_expr(c, e)})")
    return out


def _iteration(plan: CpAsyncPlan, inst: CpAsyncInstruction, helper: str) -> list[str]:
    q = _quantities(plan, inst.iteration)
    u = plan.order[0]
    modes = plan.array_modes
    elem = plan.elem_bytes
    guard = " && ".join(f"c{k} >= 0 && c{k} < {n}LL" for k, (n, _) in enumerate(modes))
    straight = {"smem", "gmem", *(f"coord{k}" for k in range(len(modes)))} <= plan.linear
    body = [] if straight else [f"const unsigned e = (thread + {inst.iteration * plan.threads}u) * {plan.vector}u;"]
    body += [f"const long long c{k} = {q[f'c{k}']};" for k in range(len(modes))]
    body += [f"const long long n = ({guard}) ? ({modes[u][0]}LL - c{u} < {plan.vector}LL ? {modes[u][0]}LL - c{u} "
             f": {plan.vector}LL) : 0;",
             f"const long long g = origin + {q['gmem']};"]
    tail = plan.tail
    checked = tail is not None and inst.iteration in tail.iterations
    wide = (f"{helper}({'s' if checked else 'smem + ' + q['smem']}, base + (n ? g * {elem}LL : 0LL), "
            f"static_cast<unsigned>(n) * {elem}u);")
    if tail is None or not checked:
        body.append(wide)
    else:
        body.append(f"const unsigned s = smem + {q['smem']};")
        body.append(f"if (n && g + {plan.vector}LL > {plan.alloc_bytes // elem}LL) {{   // the vector that ends the "
                    f"array: no source window past its last byte")
        for c in tail.copies:
            h = cp_async_helper(cp_async_atom(c.size).cache, c.size, plan.atom.l2_prefetch)
            src = f"base + g * {elem}LL + {c.offset}LL" if c.src_size else "base"
            body.append(f"  {h}(s + {c.offset}u, {src}, {c.src_size}u);")
        if tail.residue:
            r = tail.residue_offset
            body.append(f"  pycute_cp_async_residue(s + {r}u, base + g * {elem}LL + {r}LL, {tail.residue}u);")
            if plan.completion == "arrive":
                body.append("  residue = true;")
        body += ["} else {", f"  {wide}", "}"]
    head = "  {" if inst.active == plan.threads else f"  if (thread < {inst.active}u) {{"
    return [head, *(f"    {b}" for b in body), "  }"]


@provides("cuda", CpAsyncPlan)
def emit_cp_async_copy(plan: CpAsyncPlan, name: str = "pycute_cp_async_copy") -> str:
    """The copying function of ``plan`` (and ``<name>_arrivals`` for an mbarrier completion)."""
    check_function_name(name)
    modes = plan.array_modes
    tiles = ", ".join([f"int t{k}" for k in range(len(modes))] + [f"unsigned {s.name}" for s in plan.stages])
    mbar = ", unsigned mbar" if plan.completion == "arrive" else ""
    helper = cp_async_helper(plan.atom.cache, plan.atom.size, plan.atom.l2_prefetch)
    head = [plan.convention.comment(),
            f"// {plan.vectors} x {plan.atom.ptx} ({plan.atom.size} B) per tile over {plan.threads} threads, "
            f"pycute C ABI {ABI_VERSION}",
            f"// tile {plan.tile_shape} of {plan.gmem!r} into {plan.smem!r}",
            f"// Every thread t in [0, {plan.threads}) calls it with thread = t: `gmem` is the array's base, `smem` the "
            f"tile's shared",
            f"// address ({plan.smem.base_align}-byte aligned), t<i> the tile index along array mode i. Elements outside "
            f"the array are zero-filled."]
    if plan.tail is not None:
        head.append(f"// The vector that ends the array ({plan.tail.bytes} of its {plan.atom.size} B) is narrower copies: no "
                    f"source window leaves the array's {plan.alloc_bytes} B.")
    head.append("// Then pycute_cp_async_wait_group<0>() (or <N> to keep N groups in flight) and a barrier."
                if plan.completion == "group" else
                f"// Each thread arrives on `mbar` when its copies land: count {name}_arrivals in its mbarrier.init.")
    body = ["  const unsigned char* base = static_cast<const unsigned char*>(gmem);"]
    body += [f"  const long long o{k} = (long long)t{k} * {n};" for k, n in enumerate(plan.tile_shape)]
    body.append("  const long long origin = " + " + ".join(f"o{k} * {d}LL" for k, (_, d) in enumerate(modes)) + ";")
    body += [f"  smem += {s.name} * {s.smem_step}u;" for s in plan.stages]
    e0 = "thread * " + f"{plan.vector}u"
    if "smem" in plan.linear:
        body.append(f"  const unsigned s_t = {_swizzled(plan.smem.swizzle, _expr(plan.smem_terms, e0))} * "
                    f"{plan.elem_bytes}u;")
    if "gmem" in plan.linear:
        body.append(f"  const long long g_t = {_expr(plan.gmem_terms, e0, wide=True)};")
    body += [f"  const unsigned c{k}_t = {_expr(c, e0)};" for k, c in enumerate(plan.coords)
             if f"coord{k}" in plan.linear]
    flag = plan.completion == "arrive" and plan.tail is not None and plan.tail.residue > 0
    if flag:
        body.append("  bool residue = false;        // stored the array's last bytes with generic stores")
    for inst in plan.instructions:
        body += _iteration(plan, inst, helper)
    if plan.completion == "group":
        body.append("  pycute_cp_async_commit_group();")
    elif flag:
        body += ["  if (residue) pycute_cp_async_mbarrier_arrive_release(mbar);",
                 "  else pycute_cp_async_mbarrier_arrive_noinc(mbar);"]
    else:
        body.append("  pycute_cp_async_mbarrier_arrive_noinc(mbar);")
    lines = ['#include "pycute/cp_async.cuh"', "", *head]
    if plan.completion == "arrive":
        lines.append(f"constexpr unsigned {name}_arrivals = {plan.arrivals}u;")
    lines += [f"__device__ __forceinline__ void {name}(const void* gmem, unsigned smem, unsigned thread, "
              f"{tiles}{mbar}) {{", *body, "}"]
    return "\n".join(lines) + "\n"
