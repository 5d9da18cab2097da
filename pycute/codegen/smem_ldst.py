"""CUDA C++ for register <-> shared plans: the ``__device__`` function every thread of the fragment calls, and the
header part ``pycute/smem_ldst.cuh`` (every stmatrix / ldmatrix form, ld/st.shared widths, the packing conversions,
a named barrier), rendered from ``arch.sm90``, ``arch.sm100`` and ``arch.sm80``."""
from __future__ import annotations

from ..arch.sm100.matrix import UNPACK_FORMATS, b8_forms, unpack_forms
from ..arch.sm80.cvt import MOV_PACK_PTX, PACK_CONVERSIONS, pack_conversion
from ..arch.sm90.matrix import MatrixForm, MatrixOp, m8n8_forms
from ..arch.sm90.shared import NAMED_BARRIER_PTX, SHARED_WIDTHS, ld_shared_ptx, st_shared_ptx
from ..atoms.smem_ldst import SmemMatrixAtom
from ..copy.smem_ldst.plan import SmemCopyPlan
from ..dtypes import BF16_SHIFT
from ..swizzle import Swizzle
from ..views import provides
from .common import ABI_VERSION, check_function_name
from .templates import render

__all__ = ["matrix_helper", "vector_helper", "cvt_helper", "smem_ldst_header", "emit_smem_copy", "c_layout",
           "c_swizzle"]


def matrix_helper(form: MatrixForm) -> str:
    """The header's wrapper of one stmatrix / ldmatrix form."""
    return (f"pycute_{form.op}matrix_{form.shape}_x{form.num}" + ("_trans" if form.trans else "") +
            ("" if form.type == "b16" or form.unpack else f"_{form.type}") + (f"_{form.unpack}" if form.unpack else ""))


def vector_helper(op: str, width: int) -> str:
    return f"pycute_{op}_shared_{width}"


def cvt_helper(dst: str, satfinite: bool) -> str:
    return f"pycute_cvt_{PACK_CONVERSIONS[dst][0]}" + ("_satfinite" if satfinite else "")


def _matrix_wrapper(form: MatrixForm) -> str:
    n = form.registers
    regs = ", ".join(f"%{k + 1}" for k in range(n))
    if form.op == "st":
        params = ", ".join(f"unsigned r{k}" for k in range(n))
        ins = ", ".join(f'"r"(r{k})' for k in range(n))
        return (f"__device__ __forceinline__ void {matrix_helper(form)}(unsigned smem, {params}) {{\n"
                f'  asm volatile("{form.ptx} [%0], {{{regs}}};" :: "r"(smem), {ins} : "memory");\n}}')
    params = ", ".join(f"unsigned& r{k}" for k in range(n))
    outs = ", ".join(f'"=r"(r{k})' for k in range(n))
    regs = ", ".join(f"%{k}" for k in range(n))
    return (f"__device__ __forceinline__ void {matrix_helper(form)}(unsigned smem, {params}) {{\n"
            f'  asm volatile("{form.ptx} {{{regs}}}, [%{n}];" : {outs} : "r"(smem) : "memory");\n}}')


def _vector_wrapper(op: str, width: int) -> str:
    name = vector_helper(op, width)
    n = max(1, width // 4)
    kind, c = ("unsigned", "r") if width >= 4 else ("unsigned short", "h")
    if op == "st":
        params = ", ".join(f"{kind} r{k}" for k in range(n))
        regs = "%1" if n == 1 else "{" + ", ".join(f"%{k + 1}" for k in range(n)) + "}"
        ins = ", ".join(f'"{c}"(r{k})' for k in range(n))
        return (f"__device__ __forceinline__ void {name}(unsigned smem, {params}) {{\n"
                f'  asm volatile("{st_shared_ptx(width)} [%0], {regs};" :: "r"(smem), {ins} : "memory");\n}}')
    params = ", ".join(f"{kind}& r{k}" for k in range(n))
    regs = "%0" if n == 1 else "{" + ", ".join(f"%{k}" for k in range(n)) + "}"
    outs = ", ".join(f'"={c}"(r{k})' for k in range(n))
    return (f"__device__ __forceinline__ void {name}(unsigned smem, {params}) {{\n"
            f'  asm volatile("{ld_shared_ptx(width)} {regs}, [%{n}];" : {outs} : "r"(smem) : "memory");\n}}')


def _cvt_wrapper(dst: str, satfinite: bool) -> str:
    conv = pack_conversion(dst, satfinite)
    kind, c = ("unsigned", "r") if conv.result_bits == 32 else ("unsigned short", "h")
    return (f"__device__ __forceinline__ {kind} {cvt_helper(dst, satfinite)}(float a, float b) {{\n"
            f"  {kind} d;\n"
            f'  asm("{conv.ptx} %0, %1, %2;" : "={c}"(d) : "f"(a), "f"(b));\n  return d;\n}}')


def smem_ldst_header() -> str:
    """The text of ``pycute/smem_ldst.cuh``."""
    ops: tuple[MatrixOp, ...] = ("st", "ld")
    forms = [f for op in ops for f in m8n8_forms(op) + b8_forms(op)]
    forms += [f for fmt in UNPACK_FORMATS for f in unpack_forms(fmt)]
    vectors = [_vector_wrapper(op, w) for op in ("st", "ld") for w in SHARED_WIDTHS]
    cvts = [_cvt_wrapper(d, s) for d, (_, _, mandatory, _) in PACK_CONVERSIONS.items()
            for s in ((True,) if mandatory else (False, True))]
    return render("header_smem_ldst.cuh", abi=ABI_VERSION, matrix_functions="\n".join(map(_matrix_wrapper, forms)),
                  vector_functions="\n".join(vectors), cvt_functions="\n".join(cvts), mov_pack=MOV_PACK_PTX,
                  half_bits=BF16_SHIFT, half_mask=f"0x{(1 << BF16_SHIFT) - 1:X}", named_barrier=NAMED_BARRIER_PTX)


def c_layout(layout, x: str) -> str:
    """``layout`` (a layout of one integer) at the C expression ``x``: ``sum((x / prefix) % shape * stride)``."""
    from ..int_tuple import flatten
    parts, prefix = [], 1
    shapes, strides = flatten(layout.shape), flatten(layout.stride)
    for k, (n, d) in enumerate(zip(shapes, strides)):
        if n > 1 and d != 0:
            digit = x if prefix == 1 else f"({x} / {prefix}u)"
            if k < len(shapes) - 1:
                digit = f"({digit} % {n}u)"
            parts.append(digit if d == 1 else f"{digit} * {d}u")
        prefix *= n
    return " + ".join(parts) or "0u"


def c_swizzle(sw: Swizzle | None, x: str) -> str:
    """``sw`` applied to the byte offset ``x``."""
    if sw is None:
        return f"({x})"
    shift = f">> {sw.shift}" if sw.shift >= 0 else f"<< {-sw.shift}"
    return f"(({x}) ^ ((({x}) & {sw.yyy_mask:#x}u) {shift}))"


def _fragment_param(plan: SmemCopyPlan) -> tuple[str, int]:
    """The C element type of the fragment array and its length: f32 values as floats, anything else as its 32-bit
    registers."""
    if plan.fragment.dtype.name == "f32":
        return "float", plan.values
    return "unsigned", plan.values * plan.fragment.dtype.bits // 32


def _register(plan: SmemCopyPlan, k: int) -> str:
    return f"__float_as_uint(frag[{k}])" if plan.fragment.dtype.name == "f32" else f"frag[{k}]"


def _store_word(plan: SmemCopyPlan, word: tuple[int, ...]) -> str:
    """The C expression of one stored register (or, for a 1- or 2-byte store, its low part)."""
    e, conv = plan.elem_bytes, plan.conversion
    if conv is None:
        per = 4 // e
        k, p = divmod(word[0], per)
        if len(word) * e == 4:
            return _register(plan, k)
        return f"pycute_b16_of({_register(plan, k)}, {p * e // 2}u)" if len(word) * e == 2 else \
            f"pycute_b8_of({_register(plan, k)}, {p}u)"
    cvt = cvt_helper(conv.dst, conv.satfinite)
    v = [f"frag[{x}]" for x in word]
    if conv.bits == 16:
        return f"{cvt}({v[1]}, {v[0]})" if len(v) == 2 else f"pycute_b16_of({cvt}(0.0f, {v[0]}), 0u)"
    if len(v) == 4:
        return f"pycute_pack_b16x2({cvt}({v[1]}, {v[0]}), {cvt}({v[3]}, {v[2]}))"
    return f"{cvt}({v[1]}, {v[0]})" if len(v) == 2 else f"pycute_b8_of({cvt}(0.0f, {v[0]}), 0u)"


def _helper(move) -> str:
    atom = move.atom
    return matrix_helper(atom.form) if isinstance(atom, SmemMatrixAtom) else vector_helper(atom.op, atom.width)


def _store(plan: SmemCopyPlan, move, addr: str) -> list[str]:
    return [f"  {_helper(move)}({addr}, {', '.join(_store_word(plan, w) for w in move.words)});"]


def _load(plan: SmemCopyPlan, move, addr: str) -> list[str]:
    narrow = not isinstance(move.atom, SmemMatrixAtom) and move.atom.width < 4
    temps = [f"r{g}" for g in range(len(move.words))]
    lines = [f"  {{ unsigned{' short' if narrow else ''} {', '.join(temps)};",
             f"    {_helper(move)}({addr}, {', '.join(temps)});"]
    e = plan.elem_bytes
    for t, word in zip(temps, move.words):
        k, p = divmod(word[0] * e, 4)
        if not narrow:
            value = f"__uint_as_float({t})" if plan.fragment.dtype.name == "f32" else t
        elif len(word) * e == 2:
            value = f"pycute_with_b16(frag[{k}], {p // 2}u, {t})"
        else:
            value = f"pycute_with_b8(frag[{k}], {p}u, {t})"
        lines.append(f"    frag[{k}] = {value};")
    return lines + ["  }"]


def _head(plan: SmemCopyPlan, name: str) -> list[str]:
    kind, n = _fragment_param(plan)
    conv = f", converting with {plan.conversion.ptx}" if plan.conversion else ""
    return [f"// {plan!r}", f"// pycute C ABI {ABI_VERSION}: tile {plan.smem!r}{conv}",
            f"// Every thread t of the fragment's {plan.threads} calls it with thread = t (all lanes of each warp: "
            f"stmatrix / ldmatrix are",
            f"// warp-collective); `smem` is the tile's shared address ({plan.smem.base_align}-byte aligned), "
            f"`frag` the thread's {n} {kind} values",
            f"// in the fragment's value order ({plan.fragment.dtype.name}" +
            (", two or four per register" if kind == "unsigned" and plan.fragment.dtype.bits < 32 else "") + ")." +
            (" Then fence.proxy.async.shared::cta and a barrier before a TMA store reads the tile."
             if plan.op == "st" else "")]


@provides("cuda", SmemCopyPlan)
def emit_smem_copy(plan: SmemCopyPlan, name: str = "pycute_smem_copy") -> str:
    """The function of ``plan``: ``name(unsigned smem, unsigned thread, [const] T (&frag)[n], unsigned stage...)``."""
    check_function_name(name)
    kind, n = _fragment_param(plan)
    const = "const " if plan.op == "st" else ""
    stages = "".join(f", unsigned {s.name}" for s in plan.stages)
    ap = plan.address_plan()
    body = [f"  smem += {s.name} * {s.smem_step}u;" for s in plan.stages]
    body.append(f"  const unsigned p = {c_layout(ap.thread_layout, 'thread')};")
    for k, b in enumerate(ap.bases):
        body.append(f"  const unsigned b{k} = " + (f"smem + {c_swizzle(ap.swizzle, f'p + {b.const}u')};"
                                                   if b.kind == "formula" else f"b{b.of} ^ {b.const:#x}u;"))
    for move, (base, off) in zip(plan.moves, ap.uses):
        addr = f"b{base}" + (f" + {off}u" if off else "")
        body += _store(plan, move, addr) if plan.op == "st" else _load(plan, move, addr)
    lines = ['#include "pycute/smem_ldst.cuh"', "", *_head(plan, name),
             f"__device__ __forceinline__ void {name}(unsigned smem, unsigned thread, {const}{kind} (&frag)[{n}]"
             f"{stages}) {{", *body, "}"]
    return "\n".join(lines) + "\n"
