"""CUDA C++ for register fragments (docs/fragments.md): the coordinate helpers of ``fragment_coords``, the
reductions of ``make_reduction`` and the conversions of ``make_fragment_convert``.

``coords.cuda(name)`` writes, from the ``(thread, value) -> (row, col)`` layout, one formula per axis split into a
per-thread base and a ``constexpr`` per-value offset: in an unrolled loop over the values the offsets are constants
and the base is computed once, so a mask or a bound written against ``<name>_col(t, v)`` costs what the hand-derived
``8 * (v / 4) + 2 * (t % 4) + v % 2`` costs (tests/codegen/test_fragment_code.py compares the SASS).
"""
from __future__ import annotations

from typing import Sequence

from ..arch.sm90.warp import FULL_WARP_MASK, WARP_THREADS
from ..errors import CompileError
from ..mma.convert import FragmentConvertPlan, Unit
from ..mma.reduce import ReducePlan
from ..tensor.coords import Axis, FragmentCoords, coord_modes
from ..views import provides
from .common import ABI_VERSION, check_function_name
from .smem_ldst import cvt_helper

__all__ = ["emit_fragment_coords", "emit_reduction", "emit_fragment_convert", "lane_expr", "c_axis", "c_slot"]

_AXES: tuple[Axis, Axis] = ("row", "col")


def c_axis(modes: list[tuple[int, int, int]], axis: int, x: str, top: bool = True) -> str:
    """The C expression (unsigned) of the ``axis`` component of a ``(size, axis, step)`` mode list at index ``x``:
    ``sum((x % (prefix * size)) / prefix * step)``. ``top``: the last mode's ``% size`` is left out (``x`` is in range)."""
    parts, prefix = [], 1
    last = max((k for k, (n, _, _) in enumerate(modes) if n > 1), default=-1)
    for k, (n, a, step) in enumerate(modes):
        if n > 1 and a == axis and step:
            digit = x if top and k == last else f"{x} % {prefix * n}u"     # (x % (prefix n)) / prefix: the hand form
            digit = digit if prefix == 1 else (f"{x} / {prefix}u" if digit == x else f"({digit}) / {prefix}u")
            parts.append(f"({digit})" + (f" * {step}u" if step != 1 else ""))
        prefix *= n
    return " + ".join(parts) or "0u"


def slot_modes(modes: list[tuple[int, int, int]], axis: int) -> list[tuple[int, int, int]]:
    """The modes of a value's slot along ``axis``: its digits on the ``axis`` modes, compacted (mixed radix in mode
    order), which is ``FragmentCoords.slots``' order; the other modes only count."""
    out, radix = [], 1
    for n, a, step in modes:
        on = n > 1 and a == axis and step != 0
        out.append((n, 0 if on else -1, radix if on else 0))
        radix *= n if on else 1
    return out


def c_slot(modes: list[tuple[int, int, int]], axis: int, x: str) -> str:
    """The C expression of value ``x``'s slot along ``axis``."""
    return c_axis(slot_modes(modes, axis), 0, x)


def _check(coords: FragmentCoords) -> None:
    if coords.layout is None:
        raise CompileError(f"{coords.fragment!r}: its (thread, value) -> (row, col) map is not a layout; the device "
                           f"helpers need one (the tables .row / .col still hold)")
    for axis, name in enumerate(_AXES):
        modes = coord_modes(coords.layout[1])
        slot_of = _slot_values(modes, axis, coords.values)
        want = [0] * coords.values
        for s, vs in enumerate(coords.slots(name)):
            for v in vs:
                want[v] = s
        if slot_of != want:
            raise CompileError(f"{coords.fragment!r}: two value digits give one {name} offset; the slot helpers need "
                               f"distinct offsets")


def _slot_values(modes: list[tuple[int, int, int]], axis: int, values: int) -> list[int]:
    sm = slot_modes(modes, axis)
    out = []
    for v in range(values):
        slot, prefix = 0, 1
        for n, a, step in sm:
            slot += (v // prefix) % n * step if a == 0 else 0
            prefix *= n
        out.append(slot)
    return out


@provides("cuda", FragmentCoords)
def emit_fragment_coords(coords: FragmentCoords, name: str) -> str:
    """``<name>_row(t, v)``, ``<name>_col(t, v)`` with their parts ``<name>_row_thread(t)`` / ``<name>_row_value(v)``
    (``constexpr``), ``<name>_values``, the slot helpers ``<name>_row_slots`` / ``<name>_row_slot(v)`` (and
    ``col``), and ``<name>_for_each(t, f)``: ``f(v, row, col)`` for every value, unrolled."""
    check_function_name(name)
    _check(coords)
    assert coords.layout is not None
    threads, values = coords.layout[0], coords.layout[1]
    tm, vm = coord_modes(threads), coord_modes(values)
    rows, cols = coords.shape
    lines = [f"// {name}: the coordinates of {coords.fragment!r}",
             f"// pycute C ABI {ABI_VERSION}: value v (0 <= v < {coords.values}) of fragment thread t (0 <= t < "
             f"{coords.threads}) holds element ({name}_row(t, v), {name}_col(t, v))",
             f"// of the {rows} x {cols} tile; (thread, value) -> (row, col) is {coords.layout!r}.",
             f"// Each coordinate is a per-thread base plus a constexpr per-value offset: in an unrolled loop over v "
             f"the offsets fold to constants.",
             f"constexpr int {name}_values = {coords.values};"]
    for axis, ax in enumerate(_AXES):
        lines += [
            f"__device__ __forceinline__ int {name}_{ax}_thread(unsigned t) {{ return int({c_axis(tm, axis, 't')}); }}",
            f"__host__ __device__ constexpr int {name}_{ax}_value(int v) {{ "
            f"return int({c_axis(vm, axis, 'unsigned(v)')}); }}",
            f"__device__ __forceinline__ int {name}_{ax}(unsigned t, int v) {{ "
            f"return {name}_{ax}_thread(t) + {name}_{ax}_value(v); }}",
            f"// a thread holds {name}_{ax}_slots {ax}s (a per-{ax} state array's size); value v lies on slot "
            f"{name}_{ax}_slot(v)",
            f"constexpr int {name}_{ax}_slots = {len(coords.slots(ax))};",
            f"__host__ __device__ constexpr int {name}_{ax}_slot(int v) {{ "
            f"return int({c_slot(vm, axis, 'unsigned(v)')}); }}"]
    lines += [
        f"// f(v, row, col) for every value v of thread t, in value order (a lambda: [&](int v, int row, int col) "
        f"{{ ... }})",
        "template <class F>",
        f"__device__ __forceinline__ void {name}_for_each(unsigned t, F&& f) {{",
        f"  const int row = {name}_row_thread(t), col = {name}_col_thread(t);",
        "#pragma unroll",
        f"  for (int v = 0; v < {coords.values}; ++v) f(v, row + {name}_row_value(v), col + {name}_col_value(v));",
        "}"]
    return "\n".join(lines) + "\n"


_COMBINE = {"max": "fmaxf({}, {})", "sum": "({} + {})"}


def _tree_expr(op: str, xs: list[str]) -> str:
    """``ReducePlan``'s thread step as one expression: neighbours combined level by level."""
    while len(xs) > 1:
        xs = [_COMBINE[op].format(xs[i], xs[i + 1]) if i + 1 < len(xs) else xs[i] for i in range(0, len(xs), 2)]
    return xs[0]


def _lanes(plan: ReducePlan, op: str, var: str) -> list[str]:
    return [f"  for (int s = 0; s < {len(plan.slots)}; ++s) {var}[s] = "
            + _COMBINE[op].format(f"{var}[s]", f"__shfl_xor_sync(0x{FULL_WARP_MASK:X}u, {var}[s], {m})") + ";"
            for m in plan.masks]


@provides("cuda", ReducePlan)
def emit_reduction(plan: ReducePlan, name: str) -> str:
    """The functions of ``ReducePlan.cuda``: every one unrolled, the slots' trees and shuffles interleaved (the
    order within each slot is the plan's)."""
    check_function_name(name)
    ax, values, slots = plan.axis, plan.coords.values, len(plan.slots)
    frag, state = f"const float (&frag)[{values}]", f"float (&x)[{slots}]"
    lanes = ", ".join(str(m) for m in plan.masks)
    out = [f"// {name}_{ax}_*: reductions along the {ax}s of {plan.fragment!r}",
           f"// pycute C ABI {ABI_VERSION}: slot s (0 <= s < {slots}) is the thread's s-th {ax} "
           f"(fragment_coords' slots); order: the slot's values",
           f"// as a pairwise tree in value order, then x op= shfl_xor(x, m) for m in {{{lanes}}} from the lowest, then "
           f"the state (docs/fragments.md)."]

    def function(op: str, suffix: str, lanes_too: bool, with_frag: bool) -> list[str]:
        conv = plan.convention if lanes_too else plan.partial_convention
        head = [conv.comment(),
                f"__device__ __forceinline__ void {name}_{ax}_{suffix}({frag + ', ' if with_frag else ''}{state}) {{"]
        if with_frag:
            body = [f"  float p[{slots}];"]
            body += [f"  p[{s}] = {_tree_expr(op, [f'frag[{v}]' for v in vs])};" for s, vs in enumerate(plan.slots)]
            body += _lanes(plan, op, "p") if lanes_too else []
            body += [f"  for (int s = 0; s < {slots}; ++s) x[s] = " + _COMBINE[op].format("x[s]", "p[s]") + ";"]
        else:
            body = _lanes(plan, op, "x")
        return head + [("#pragma unroll\n" if line.startswith("  for") else "") + line for line in body] + ["}"]

    for op in ("max", "sum"):
        into = "max(x[s], {})" if op == "max" else "x[s] + {}"
        out += [f"// x[s] = {into.format(f'the {op} of {ax} slot s over the fragment')}"]
        out += function(op, op, True, True)
        out += [f"// x[s] = {into.format(f'the {op} of the values this thread holds on {ax} slot s')}"]
        out += function(op, f"{op}_partial", False, True)
        out += [f"// x[s] = the {op} of x[s] over the threads sharing {ax} slot s (their partials), in place"]
        out += function(op, f"allreduce_{op}", True, False)
    return "\n".join(out) + "\n"


def lane_expr(table: Sequence[int], lane: str = "lane") -> str:
    """A per-lane constant ``table[lane]`` (32 entries) as a C expression of ``lane``: a constant, a select on the
    one lane bit it depends on, or a lookup in a packed 64-bit constant indexed by the lane bits it depends on."""
    values = [int(x) for x in table]
    if len(set(values)) == 1:
        return f"{values[0]}u"
    bits = [b for b in range(5) if any(values[ln] != values[ln ^ (1 << b)] for ln in range(WARP_THREADS))]
    if len(bits) == 1:
        b = 1 << bits[0]
        if (values[0], values[b]) == (0, 1):
            return f"(({lane} >> {bits[0]}) & 1u)"
        return f"(({lane} & {b}u) ? {values[b]:#x}u : {values[0]:#x}u)"
    width, n = max(values).bit_length(), 1 << len(bits)
    if width * n > 64:
        raise CompileError(f"a per-lane table depending on lane bits {bits} with {width}-bit values does not fit a "
                           f"64-bit constant: {values}")
    contiguous = bits == list(range(bits[0], bits[0] + len(bits)))
    idx = (f"(({lane} >> {bits[0]}) & {n - 1}u)" if contiguous else
           "(" + " | ".join(f"((({lane} >> {b}) & 1u) << {i})" for i, b in enumerate(bits)) + ")")
    packed = sum(values[sum(1 << b for i, b in enumerate(bits) if (j >> i) & 1)] << (j * width) for j in range(n))
    return f"unsigned(({packed:#x}ull >> ({idx} * {width}u)) & {(1 << width) - 1:#x}u)"


def _unit_name(u: Unit) -> str:
    return f"u{u.hi}_{u.lo}"


@provides("cuda", FragmentConvertPlan)
def emit_fragment_convert(plan: FragmentConvertPlan, name: str = "pycute_fragment_convert") -> str:
    """``name(const float (&src)[n], unsigned (&dst)[m])``: the plan's ``cvt``s, shuffles and ``prmt``s."""
    check_function_name(name)
    conv = plan.conversion
    cvt = cvt_helper(conv.dst, conv.satfinite)
    per = 32 // conv.result_bits
    n, m = plan.src_registers, plan.dst_registers
    permuted = any(k != p for k, p in enumerate(plan.permutation))
    lines = ['#include "pycute/smem_ldst.cuh"', "",
             f"// {name}: {plan!r}",
             f"// pycute C ABI {ABI_VERSION}: {plan.src!r} -> {plan.dst!r} with {conv.ptx} (the first source in the "
             f"upper part);",
             f"// `src` the thread's {n} accumulator values, `dst` its {m} A registers (value v in register "
             f"v / {32 // plan.dst.dtype.bits}, from the low bits)."]
    if permuted:
        lines.append(f"// A's column k holds the source's column p[k], p = {list(plan.permutation)}: permute the next "
                     f"MMA's B rows alike.")
    lines += [plan.convention.comment(),
              f"__device__ __forceinline__ void {name}(const float (&src)[{n}], unsigned (&dst)[{m}]) {{"]
    if not plan.rounds:
        for r, units in enumerate(plan.registers):
            parts = [f"{cvt}(src[{u.hi}], src[{u.lo}])" for u in units]
            lines.append(f"  dst[{r}] = " + (parts[0] if per == 1 else f"pycute_pack_b16x2({', '.join(parts)})") + ";")
        return "\n".join(lines + ["}"]) + "\n"
    kind = "unsigned" if per == 1 else "unsigned short"
    lines += ["  unsigned lane;", '  asm("mov.u32 %0, %%laneid;" : "=r"(lane));']
    lines += [f"  const {kind} {_unit_name(u)} = {cvt}(src[{u.hi}], src[{u.lo}]);" for u in plan.units]

    def word(units: tuple[Unit, ...]) -> str:
        names = [_unit_name(u) for u in units]
        return names[0] if per == 1 else f"pycute_pack_b16x2({', '.join(names)})"

    for c, rnd in enumerate(plan.rounds):
        options = list(dict.fromkeys(rnd.send))
        pick = lane_expr([options.index(w) for w in rnd.send])
        offered = word(options[0])
        for i, w in enumerate(options[1:], 1):
            offered = f"({pick} == {i}u ? {word(w)} : {offered})" if len(options) > 2 else \
                f"({pick} ? {word(w)} : {offered})"
        distance = lane_expr([s ^ ln for ln, s in enumerate(rnd.src_lane)])
        lines.append(f"  const unsigned r{c} = __shfl_sync(0x{FULL_WARP_MASK:X}u, {offered}, lane ^ {distance});")
    for r, asm in enumerate(plan.assembly):
        lines.append(f"  dst[{r}] = __byte_perm(r{asm.a}, r{asm.b}, {lane_expr(asm.selector)});")
    return "\n".join(lines + ["}"]) + "\n"
