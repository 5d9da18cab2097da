"""CUDA C++ for the MMA's descriptors: an operand's shared-memory descriptor as a ``__device__`` function of the
buffer address, the k-block and the run-time stages, and an instruction descriptor as a constant (the values come
from ``pycute.mma``; the start-address field from the header's ``pycute_smem_desc_at``)."""
from __future__ import annotations

from ..arch.sm100.datapath import DATA_PATHS, FOLD_LANES
from ..arch.sm100.descriptor import START_ADDRESS
from ..arch.sm100.mma import MMA_KINDS, mma_ptx
from ..mma.instr import InstrDescriptor
from ..mma.operand import UmmaDescriptor
from ..mma.plan import MmaPlan
from ..mma.tmem_operand import TmemOperand
from ..views import provides
from .common import ABI_VERSION, check_function_name

__all__ = ["emit_umma_desc", "emit_instr_desc", "emit_mma", "mma_helper", "mma_header_functions", "soft_mma_tables",
           "soft_mma_functions"]


def mma_helper(kind: str, cta_group: int, scale_vec: int | None = None, a_tmem: bool = False,
               ws: bool = False) -> str:
    """The header's wrapper of one tcgen05.mma form (A and B descriptors; ``_ts``: A at a TMEM address; ``_ws``
    the weight-stationary form)."""
    return (f"pycute_tcgen05_mma{'_ws' if ws else ''}_{kind}" + (f"_{scale_vec}x" if scale_vec else "")
            + f"_cg{cta_group}" + ("_ts" if a_tmem else ""))


def _a_param(a_tmem: bool) -> str:
    return "unsigned a" if a_tmem else "unsigned long long a"


def _mma_wrapper(kind: str, cta_group: int, scale_vec: int | None, a_tmem: bool, ws: bool) -> str:
    scaled = scale_vec is not None
    sf = ", unsigned sfa, unsigned sfb" if scaled else ""
    operands = "[%0], " + ("[%1]" if a_tmem else "%1") + ", %2, %3, " + ("[%5], [%6], p" if scaled else "p")
    inputs = f'"r"(d), "{"r" if a_tmem else "l"}"(a), "l"(b), "r"(idesc), "r"(accumulate)' + \
        (', "r"(sfa), "r"(sfb)' if scaled else "")
    return (f"__device__ __forceinline__ void {mma_helper(kind, cta_group, scale_vec, a_tmem, ws)}(unsigned d, "
            f"{_a_param(a_tmem)}, unsigned long long b, unsigned idesc{sf}, unsigned accumulate) {{\n"
            f'  asm volatile("{{\\n\\t.reg .pred p;\\n\\tsetp.ne.b32 p, %4, 0;\\n\\t'
            f'{mma_ptx(kind, cta_group, scale_vec, ws)} '
            f'{operands};\\n\\t}}" :: {inputs} : "memory");\n}}')


def _forms():
    """Every (kind, cta_group, scale_vec, A in TMEM, .ws) form of tcgen05.mma the header wraps (.ws: cta_group::1,
    the dense kinds)."""
    for kind, k in MMA_KINDS.items():
        for group in (1, 2):
            for vec in (k.scale_vecs if k.block_scaled else (None,)):
                for a_tmem in (False, True):
                    for ws in (False, True) if group == 1 and not k.block_scaled else (False,):
                        yield kind, group, vec, a_tmem, ws


def mma_header_functions() -> str:
    """Every kind x cta_group (x scale_vec) x A-operand (x .ws) wrapper of tcgen05.mma."""
    return "\n".join(_mma_wrapper(*form) for form in _forms())


def _k_offset(desc: UmmaDescriptor) -> tuple[list[str], str]:
    """Declarations and the expression of k-block ``k``'s byte offset: ``k * step`` when the blocks are evenly
    spaced, else a table."""
    offsets = list(desc.k_offsets)
    step = offsets[1] - offsets[0] if len(offsets) > 1 else 0
    if all(o == offsets[0] + j * step for j, o in enumerate(offsets)):
        expr = f"k * {step}u" if step else "0u"
        return [], expr if not offsets[0] else f"{offsets[0]}u + {expr}"
    table = ", ".join(f"{o}u" for o in offsets)
    return [f"  constexpr unsigned offsets[{len(offsets)}] = {{{table}}};"], "offsets[k]"


@provides("cuda", UmmaDescriptor)
def emit_umma_desc(desc: UmmaDescriptor, name: str = "pycute_umma_desc") -> str:
    check_function_name(name)
    stages = "".join(f", unsigned {s.name}" for s in desc.stages)
    decls, k_expr = _k_offset(desc)
    terms = [f"{desc.start_offset}u"] if desc.start_offset else []
    terms += [k_expr] + [f"{s.name} * {s.smem_step}u" for s in desc.stages]
    return "\n".join([
        '#include "pycute/sm100.cuh"', "",
        desc.convention.comment(),
        f"// {desc!r}, pycute C ABI {ABI_VERSION}",
        f"// `smem`: the buffer's shared-window address ({desc.tensor.base_align}-byte aligned); k: the k-block in "
        f"[0, {desc.k_blocks}) ({desc.k_per_mma} elements each).",
        f"__device__ __forceinline__ unsigned long long {name}(unsigned smem, unsigned k{stages}) {{",
        *decls,
        f"  return pycute_smem_desc_at({desc.descriptor.encode():#018x}ull, smem + {' + '.join(terms)});",
        "}"]) + "\n"


@provides("cuda", InstrDescriptor)
def emit_instr_desc(desc: InstrDescriptor, name: str = "pycute_idesc") -> str:
    check_function_name(name)
    return f"// {desc!r}\nconstexpr unsigned {name} = {desc.value:#010x}u;\n"


def _base_desc(desc: UmmaDescriptor, smem: str) -> str:
    """The descriptor of k-block 0 (its start field at the buffer's, the tile's and the stages' offset)."""
    terms = [smem] + ([f"{desc.start_offset}u"] if desc.start_offset else [])
    terms += [f"{s.name} * {s.smem_step}u" for s in desc.stages]
    return f"pycute_smem_desc_at({desc.descriptor.encode():#018x}ull, {' + '.join(terms)})"


def _operand(desc: UmmaDescriptor | TmemOperand, base: str, offset: int) -> str:
    """k-block ``offset``'s operand: an A in TMEM at its column, or the base descriptor's start field ``offset``
    bytes on (one 64-bit add; the field never carries, see pycute_smem_desc_add)."""
    if isinstance(desc, TmemOperand):
        return f"tmem_base + {desc.column + offset}u"
    units = offset // START_ADDRESS.unit
    return base if not units else f"pycute_smem_desc_add({base}, {units})"


@provides("cuda", MmaPlan)
def emit_mma(plan: MmaPlan, name: str = "pycute_mma") -> str:
    """The issuing function of ``plan``: one wrapper call per k-block."""
    check_function_name(name)
    scaled, a_tmem = plan.sfa is not None, plan.atom.a_tmem
    names = {s.name for s in plan.a.stages + plan.b.stages}
    stages = "".join(f", unsigned {n}" for n in sorted(names))
    sig = (f"{'' if a_tmem else 'unsigned smem_a, '}unsigned smem_b, unsigned tmem_base"
           f"{', unsigned tmem_sfa, unsigned tmem_sfb' if scaled else ''}, unsigned accumulate{stages}")
    helper = mma_helper(plan.atom.kind, plan.atom.cta_group, plan.atom.scale_vec, a_tmem, plan.atom.ws)
    body = []
    if not isinstance(plan.a, TmemOperand):
        body.append(f"  const unsigned long long desc_a = {_base_desc(plan.a, 'smem_a')};")
    body.append(f"  const unsigned long long desc_b = {_base_desc(plan.b, 'smem_b')};")
    for i in plan.instructions:
        sf = f", tmem_sfa + {i.sfa_column}u, tmem_sfb + {i.sfb_column}u" if scaled else ""
        acc = "accumulate" if i.k == 0 else "1u"
        body.append(f"  {helper}(tmem_base + {plan.d_column}u, {_operand(plan.a, 'desc_a', i.a_offset)}, "
                    f"{_operand(plan.b, 'desc_b', i.b_offset)}, {i.idesc:#010x}u{sf}, {acc});")
    m, n, k = plan.shape
    head = [plan.convention.comment(),
            f"// {len(plan.instructions)} x {plan.atom.ptx} (M {m} N {n} K {k}), pycute C ABI {ABI_VERSION}",
            f"// A: {plan.a!r}", f"// B: {plan.b!r}",
            "// Call from one thread (elected) after the operands have landed; `smem_a` / `smem_b` are the buffers'",
            "// shared-window addresses" + (" (A is in TMEM, at its columns of the allocation)" if a_tmem else "")
            + ", `tmem_base` the TMEM allocation's address"
            + (", `tmem_sfa` / `tmem_sfb` the SF tensors' TMEM addresses" if scaled else "") + ";",
            f"// `accumulate` 0 overwrites D with the first k-block. Then pycute_tcgen05_commit<{plan.atom.cta_group}>"
            f"(mbar)."]
    return "\n".join(['#include "pycute/sm100.cuh"', "", *head,
                      f"__device__ __forceinline__ void {name}({sig}) {{", *body, "}"]) + "\n"


# The soft build's element formats (PYCUTE_SOFT_TCGEN05): name -> (id, bits) of the soft decoder. E2M1 is modelled
# packed (mxf4, mxf4nvf4); in the 8-bit containers of f8f6f4 / mxf8f6f4, and every type outside this table (6-bit
# floats, integers), the soft model traps rather than guess.
_SOFT_FORMATS = {"f16": (0, 16), "bf16": (1, 16), "tf32": (2, 32), "f8e4m3": (3, 8), "f8e5m2": (4, 8),
                 "f4e2m1": (5, 4)}


def _soft_format(kind: str, name: str) -> int | None:
    if name not in _SOFT_FORMATS or (name == "f4e2m1") != MMA_KINDS[kind].packed:
        return None
    return _SOFT_FORMATS[name][0]


def _field(table, name: str, desc: str = "idesc") -> str:
    f = next(f for f in table if f.name == name)
    value = f"(({desc} >> {f.lo}) & {(1 << f.width) - 1}u)"
    return f"({value} << {f.shift})" if f.shift else value


def soft_mma_tables() -> str:
    """The soft build's operand formats per kind and code, their bits (C arrays) and D's placement per data path
    (soft_d_place), for the header."""
    rows = []
    for kind in MMA_KINDS:
        codes = ["-1"] * 8
        for name, code in MMA_KINDS[kind].operand_codes.items():
            fmt = _soft_format(kind, name)
            if fmt is not None:
                codes[code] = str(fmt)
        rows.append("{" + ", ".join(codes) + "}")
    bits = [str(b) for _, b in sorted(_SOFT_FORMATS.values())]
    return "\n".join([f"static __device__ const int pycute_soft_mma_format[{len(rows)}][8] = {{{', '.join(rows)}}};",
                      f"static __device__ const int pycute_soft_format_bits[{len(bits)}] = {{{', '.join(bits)}}};",
                      soft_d_place()])


def _soft_wrapper(k: int, kind: str, group: int, vec: int | None, a_tmem: bool, ws: bool) -> str:
    sf = ", unsigned sfa, unsigned sfb" if vec else ""
    sfs = "sfa, sfb" if vec else "0u, 0u"
    return (f"__device__ __forceinline__ void {mma_helper(kind, group, vec, a_tmem, ws)}(unsigned d, "
            f"{_a_param(a_tmem)}, unsigned long long b, unsigned idesc{sf}, unsigned accumulate) {{\n"
            f"  pycute_soft_tcgen05_mma({k}, {group}, {vec or 0}, {int(a_tmem)}, {int(ws)}, d, a, b, idesc, {sfs}, "
            f"accumulate);\n}}")


def soft_d_place() -> str:
    """The soft build's D placement: lane and column of accumulator (row, column) for each data path whose map
    ``arch.sm100.datapath`` knows (C text); false for the others."""
    out = ["__device__ bool pycute_soft_d_place(unsigned m, int cta_group, int ws, unsigned n, unsigned r, unsigned c,",
           "                                    unsigned* lane, unsigned* col) {"]
    for (m, group, ws), path in DATA_PATHS.items():
        if path.row_modes is None:
            continue
        terms, step = [], 1
        for extent, stride in path.row_modes:
            terms.append(f"((r / {step}u) % {extent}u) * {stride}u")
            step *= extent
        fold = (f" + (c >= n / 2u ? {FOLD_LANES}u : 0u)", "c % (n / 2u)") if path.column_halves else ("", "c")
        out.append(f"  if (m == {m}u && cta_group == {group} && ws == {int(ws)}) {{   // Layout {path.letter}")
        out.append(f"    *lane = {' + '.join(terms)}{fold[0]};")
        out.append(f"    *col = {fold[1]};")
        out.append("    return true;")
        out.append("  }")
    return "\n".join(out + ["  return false;", "}"])


def soft_mma_functions() -> str:
    """The soft build's tcgen05.mma (every data path pycute places, cta_group::1 or 2, .ws, D f32; the formats of
    soft_mma_tables, the block-scaled kinds with their scale types) and its wrappers: C text."""
    from ..arch.sm100.mma import BLOCK_SCALED_FIELDS, DENSE_FIELDS
    kinds = list(MMA_KINDS)
    wrappers = [_soft_wrapper(kinds.index(form[0]), *form) for form in _forms()]
    f = lambda name: _field(DENSE_FIELDS, name)                    # noqa: E731
    s = lambda name: _field(BLOCK_SCALED_FIELDS, name)             # noqa: E731
    # the UE4M3 code of kind::mxf4nvf4 (the only kind with two scale types); the others read UE8M0
    nvf4, ue4m3 = kinds.index("mxf4nvf4"), MMA_KINDS["mxf4nvf4"].scale_types["ue4m3"]
    d_f32 = MMA_KINDS["f16"].d_codes["f32"]
    return "\n".join([
        "__device__ void pycute_soft_tcgen05_mma(int kind, int cta_group, int vec, int a_tmem, int ws, unsigned d,",
        "                                        unsigned long long a, unsigned long long b, unsigned idesc,",
        "                                        unsigned sfa, unsigned sfb, unsigned accumulate) {",
        f"  const unsigned m = vec ? {s('m')} : {f('m')}, n = {f('n')};",
        f"  const int fa = pycute_soft_mma_format[kind][{f('a_type')}], fb = pycute_soft_mma_format[kind][{f('b_type')}];",
        f"  const int ue4m3 = vec && kind == {nvf4} && {s('scale_type')} == {ue4m3}u;",
        f"  const bool f32 = vec || {f('d_type')} == {d_f32}u;",
        "  unsigned lane, col;",
        "  if (!pycute_soft_d_place(m, cta_group, ws, n, 0u, 0u, &lane, &col) || fa < 0 || fb < 0 || !f32 ||",
        "      (cta_group == 2 && (pycute_cluster_ctarank() & 1u))) {",
        '    printf("pycute soft tcgen05: tcgen05.mma%s kind %d, cta_group %d, M %u with these operand types is not '
        'modelled (a data path pycute places, issued by the even CTA of a pair; f16/bf16/tf32/fp8 operands, packed '
        'e2m1 for mxf4*; an f32 D)\\n", ws ? ".ws" : "", kind, cta_group, m);',
        "    __trap();",
        "  }",
        f"  pycute_soft_mma_tile(d, a, a_tmem, b, m, n, fa, fb, {f('transpose_a')}, {f('transpose_b')}, accumulate,",
        f"                       cta_group, ws, vec, ue4m3, sfa, sfb, {s('sfa_id')}, {s('sfb_id')});",
        "}",
        *wrappers])
