"""CUDA C++ for Hopper's wgmma: a plan's issuing function (one ``wgmma.mma_async`` per k-step from one base
descriptor per operand plus the k-step's start advance), an operand's descriptor as a function of the buffer
address, and the text of ``pycute/wgmma.cuh`` (all from ``arch.sm90.wgmma`` / ``arch.sm90.gmma_descriptor``)."""
from __future__ import annotations

from ..arch.sm90.gmma_descriptor import GMMA_START
from ..arch.sm90.wgmma import (COMMIT_PTX, D_RUN, FENCE_PTX, MAXNREG_RANGE, SETMAXNREG, WAIT_PTX, WARPGROUP_THREADS,
                               WARPGROUP_WARPS, WGMMA_M)
from ..mma.gmma_operand import GmmaDescriptor
from ..mma.wgmma_fragment import values_per_register
from ..mma.wgmma_plan import WgmmaPlan
from ..tensor.rmem import RegisterFragment
from ..views import provides
from .common import ABI_VERSION, check_function_name
from .templates import render

__all__ = ["emit_wgmma", "emit_gmma_desc", "wgmma_header", "fragment_formula", "WGMMA_HEADER"]

WGMMA_HEADER = "pycute/wgmma.cuh"
_CTYPE = {"f32": ("float", "f"), "f16": ("unsigned", "r"), "i32": ("int", "r")}
_PER_LINE = 16


def wgmma_header() -> str:
    """The text of ``pycute/wgmma.cuh``."""
    shift = GMMA_START.unit.bit_length() - 1
    return render("header_wgmma.cuh", abi=ABI_VERSION, warpgroup_threads=WARPGROUP_THREADS,
                  warpgroup_warps=WARPGROUP_WARPS, warpgroup_last=WARPGROUP_THREADS - 1, start_lo=GMMA_START.lo,
                  start_hi=GMMA_START.lo + GMMA_START.width - 1, start_shift=shift, start_unit=GMMA_START.unit,
                  start_mask=f"0x{(1 << GMMA_START.width) - 1:X}", start_bits=GMMA_START.width + shift,
                  fence=FENCE_PTX, commit=COMMIT_PTX, wait=WAIT_PTX, inc=SETMAXNREG["inc"], dec=SETMAXNREG["dec"],
                  nreg_min=MAXNREG_RANGE.start, nreg_max=MAXNREG_RANGE.stop - 1, nreg_step=MAXNREG_RANGE.step)


def fragment_formula(run: int) -> tuple[str, str]:
    """(row, column) of value ``i`` of thread ``t`` of warpgroup ``g`` in a wgmma fragment whose threads hold ``run``
    adjacent columns (``arch.sm90.wgmma.warpgroup_fragment``), as C expressions."""
    row = f"{WGMMA_M} * g + 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / {run}) % 2)" if run > 1 else \
        f"{WGMMA_M} * g + 16 * (t / 32) + (t % 32) / 4 + 8 * (i % 2)"
    col = f"{4 * run} * (i / {2 * run}) + {run} * (t % 4)" + (f" + i % {run}" if run > 1 else "")
    return row, col


def _indexed(offsets: list[int], var: str) -> str:
    """``offsets[var]`` as a C expression: ``var * step`` when they are evenly spaced from 0, else a chain of
    conditionals (never an indexed array, which would live in local memory)."""
    step = offsets[1] - offsets[0] if len(offsets) > 1 else 0
    if offsets[0] == 0 and all(o == j * step for j, o in enumerate(offsets)):
        return f"{var} * {step}u" if step else "0u"
    expr = f"{offsets[-1]}u"
    for j in range(len(offsets) - 2, -1, -1):
        expr = f"({var} == {j}u ? {offsets[j]}u : {expr})"
    return expr


def _address(desc: GmmaDescriptor, base: str, extra: list[str]) -> str:
    terms = [base] + ([f"{desc.start_offset}u"] if desc.start_offset else []) + extra
    terms += [f"{s.name} * {s.smem_step}u" for s in desc.stages]
    return " + ".join(t for t in terms if t != "0u")


@provides("cuda", GmmaDescriptor)
def emit_gmma_desc(desc: GmmaDescriptor, name: str = "pycute_gmma_desc") -> str:
    check_function_name(name)
    stages = "".join(f", unsigned {s.name}" for s in desc.stages)
    k_expr = _indexed(list(desc.k_offsets), "k")
    return "\n".join([
        f'#include "{WGMMA_HEADER}"', "",
        f"// {desc!r}, pycute C ABI {ABI_VERSION}",
        f"// `smem`: the buffer's shared-window address ({desc.tensor.base_align}-byte aligned); k: the k-step in "
        f"[0, {desc.k_blocks}) ({desc.k_per_mma} elements each).",
        f"__device__ __forceinline__ unsigned long long {name}(unsigned smem, unsigned k{stages}) {{",
        f"  return pycute_gmma_desc_at({desc.descriptor.encode():#018x}ull, {_address(desc, 'smem', [k_expr])});",
        "}"]) + "\n"


def _literals(text: str, width: int = 96) -> list[str]:
    """``text`` (one PTX statement, no newline) as adjacent C string literals of about ``width`` characters, split
    after commas, so that the compiled PTX keeps it on one line."""
    out, cur = [], ""
    for part in text.split(", "):
        if cur and len(cur) + len(part) > width:
            out.append(f'"{cur}, "')
            cur = ""
        cur = part if not cur else f"{cur}, {part}"
    return out + [f'"{cur}"']


def _mma_asm(plan: WgmmaPlan, k: int, a: str, b: str) -> list[str]:
    """One ``asm volatile`` issuing k-step ``k``: D's registers read and written, A's descriptor ``a`` (or the A
    fragment's 4 registers), B's descriptor ``b``; the first k-step takes ``scale_d`` (a predicate), the later
    ones accumulate (the immediate 1)."""
    atom, regs = plan.atom, plan.d_registers
    letter = _CTYPE[plan.d.dtype.name][1]
    inputs = [f'"r"(a[{r}])' for r in plan.instructions[k].a_registers] if atom.a_registers else [f'"l"({a})']
    inputs += [f'"l"({b})']
    a_op = "{" + ", ".join(f"%{regs + i}" for i in range(4)) + "}" if atom.a_registers else f"%{regs}"
    b_op = f"%{regs + len(inputs) - 1}"
    scale = "1"
    if k == 0:
        inputs.append('"r"(scale_d)')
        scale = "p"
    imm = ", 1, 1" if atom.negates else ""
    if atom.transposes:
        imm += f", {int(atom.trans_b)}" if atom.a_registers else f", {int(atom.trans_a)}, {int(atom.trans_b)}"
    d_op = "{" + ", ".join(f"%{r}" for r in range(regs)) + "}"
    lines = _literals(f"{atom.ptx} {d_op}, {a_op}, {b_op}, {scale}{imm};")
    if k == 0:                       # the predicate from scale_d, in a scope of its own
        lines = [f'"{{\\n\\t.reg .pred p;\\n\\tsetp.ne.b32 p, %{regs + len(inputs) - 1}, 0;\\n\\t"'] + lines \
            + ['"\\n\\t}"']     # the brace indented: PTX's own closing brace is the one at column 0
    outputs = [f'"+{letter}"(d[{r}])' for r in range(regs)]
    out_lines = [", ".join(outputs[i:i + 8]) + ("," if i + 8 < regs else "") for i in range(0, regs, 8)]
    return (["  asm volatile("] + [f"      {s}" for s in lines] + [f"      : {out_lines[0]}"]
            + [f"        {line}" for line in out_lines[1:]] + [f"      : {', '.join(inputs)}", '      : "memory");'])


def _signature(plan: WgmmaPlan, name: str, warpgroup_arg: bool) -> str:
    ctype = _CTYPE[plan.d.dtype.name][0]
    a = f"const unsigned (&a)[{plan.a_register_count}]" if plan.a_in_registers else "unsigned smem_a"
    group = ", unsigned warpgroup" if plan.warpgroups > 1 or warpgroup_arg else ""
    stages = "".join(f", unsigned {n}" for n in plan.stage_names)
    return (f"__device__ __forceinline__ void {name}({a}, unsigned smem_b, {ctype} (&d)[{plan.d_registers}], "
            f"unsigned scale_d{group}{stages})")


def _comment(plan: WgmmaPlan, warpgroup_arg: bool) -> list[str]:
    m, n, k = plan.shape
    row, col = fragment_formula(D_RUN)
    per = values_per_register(plan.d.dtype.bits)
    d_regs = "d[i]" if per == 1 else "the low (i even) or high (i odd) half of d[i / 2]"
    head = [f"// {len(plan.instructions)} x {plan.atom.ptx} ({plan.atom.sass}; M {m} N {n} K {k}), pycute C ABI "
            f"{ABI_VERSION}", f"// A: {plan.a!r}", f"// B: {plan.b!r}",
            f"// Call from all {WARPGROUP_THREADS} threads of a warpgroup ({WARPGROUP_WARPS} consecutive warps, the "
            f"first a multiple of {WARPGROUP_WARPS}), converged.",
            f"// D: value i of thread t (pycute_warpgroup_thread()) of warpgroup g is {d_regs}: element",
            f"//   row {row}, column {col}."]
    if plan.warpgroups > 1:
        head.append(f"// `warpgroup` g (0..{plan.warpgroups - 1}) picks the 64-row slice of A and D this warpgroup "
                    f"computes.")
    else:
        head.append("// g is 0: the tile is one warpgroup's 64 rows" +
                    (" (`warpgroup` is 0)." if warpgroup_arg else "."))
    if isinstance(plan.a, RegisterFragment):
        per = values_per_register(plan.a.dtype.bits)
        arow, acol = fragment_formula(per)
        where = f"a[i / {per}], its (i % {per})-th {plan.a.dtype.bits}-bit element from the low bits" if per > 1 \
            else "a[i]"
        head += [f"// A in registers: value i of thread t is {where}: element", f"//   row {arow}, k {acol};",
                 "//   k-step j reads a[4 j .. 4 j + 3]. Fence (pycute_wgmma_fence) after writing them."]
    else:
        head.append("// `smem_a` / `smem_b`: the buffers' shared-window addresses (the tiles' base alignment).")
    head += ["// `scale_d` 0: D = A B^T (the first k-step ignores D); 1: D += A B^T. It issues only the MMAs: fence",
             "// (pycute_wgmma_fence) before, then pycute_wgmma_commit_group and pycute_wgmma_wait_group<N> (pycute/"
             "wgmma.cuh)."]
    return head


@provides("cuda", WgmmaPlan)
def emit_wgmma(plan: WgmmaPlan, name: str = "pycute_wgmma", wait: int | None = None, commit: bool = False,
               warpgroup_arg: bool = False) -> str:
    """The issuing function of ``plan``: the base descriptors, then one ``wgmma.mma_async`` per k-step; with
    ``commit`` also the fences before and the commit after (the caller waits), with ``wait`` N the commit and
    ``wait_group<N>`` too; with ``warpgroup_arg`` a ``warpgroup`` parameter even for a one-warpgroup tile (it must
    be 0 there)."""
    check_function_name(name)
    if wait is not None and (not isinstance(wait, int) or isinstance(wait, bool) or wait < 0):
        raise TypeError(f"plan.cuda: wait is None (issue only) or the groups left pending (an int >= 0), got {wait!r}")
    if not isinstance(commit, bool):
        raise TypeError(f"plan.cuda: commit is a bool, got {commit!r}")
    fenced = commit or wait is not None
    body = []
    if isinstance(plan.a, GmmaDescriptor):
        rows = [_indexed(list(plan.a_rows), "warpgroup")] if plan.warpgroups > 1 else []
        body.append(f"  const unsigned long long desc_a = pycute_gmma_desc_at("
                    f"{plan.a.descriptor.encode():#018x}ull, {_address(plan.a, 'smem_a', rows)});")
    body.append(f"  const unsigned long long desc_b = pycute_gmma_desc_at({plan.b.descriptor.encode():#018x}ull, "
                f"{_address(plan.b, 'smem_b', [])});")
    if fenced:
        body += ["  pycute_wgmma_fence_operand(d);", "  pycute_wgmma_fence();"]
    for inst in plan.instructions:
        a = "" if inst.a_offset is None else _advanced("desc_a", inst.a_offset)
        body += _mma_asm(plan, inst.k, a, _advanced("desc_b", inst.b_offset))
    if fenced:
        body.append("  pycute_wgmma_commit_group();")
    if wait is not None:
        body += [f"  pycute_wgmma_wait_group<{wait}>();", "  pycute_wgmma_fence_operand(d);"]
    head = _comment(plan, warpgroup_arg)
    if wait is not None:
        head[-2:] = [f"// `scale_d` 0: D = A B^T (the first k-step ignores D); 1: D += A B^T. It fences, issues, "
                     f"commits and waits", f"// until at most {wait} of the thread's wgmma groups are pending."]
    elif commit:
        head[-2:] = ["// `scale_d` 0: D = A B^T (the first k-step ignores D); 1: D += A B^T. It fences, issues and "
                     "commits one", "// group; the caller waits (pycute_wgmma_wait_group<N>, then "
                     "pycute_wgmma_fence_operand(d) before reading D)."]
    return "\n".join([f'#include "{WGMMA_HEADER}"', "", *head, _signature(plan, name, warpgroup_arg) + " {", *body,
                      "}"]) + "\n"


def _advanced(desc: str, offset: int) -> str:
    """The descriptor ``desc`` with its start ``offset`` bytes on (one 64-bit add of 16-byte units)."""
    units = offset // GMMA_START.unit
    return desc if not units else f"pycute_gmma_desc_add({desc}, {units}ull)"
