"""``make_instr_desc``: the 32-bit ``tcgen05.mma`` instruction descriptor, every field from ``arch.sm100.mma``,
refusing every combination the PTX ISA forbids (or the sources leave open) with the rule that decides."""
from __future__ import annotations

import attrs

from ..arch.sm100.mma import (Major, BLOCK_SCALED_FIELDS, DENSE_FIELDS, MAX_SHIFTS, MMA_KINDS, TRANSPOSABLE, WS_SHAPES,
                              MmaKind)
from ..arch.sm100.tmem import check_cta_group
from ..dtypes import DTypeLike, dtype as as_dtype
from ..errors import DescriptorError, PlanError
from ..int_tuple import as_int
from ..views import view

__all__ = ["InstrDescriptor", "make_instr_desc", "check_mma_shape"]

_MAJORS = ("K", "MN")


@attrs.frozen(repr=False)
class InstrDescriptor:
    """A ``tcgen05.mma`` instruction descriptor: ``value`` (32 bits) of ``kind``; ``fields`` by name."""

    kind: str
    value: int

    @property
    def fields(self) -> dict:
        table = BLOCK_SCALED_FIELDS if MMA_KINDS[self.kind].block_scaled else DENSE_FIELDS
        return {f.name: f.get(self.value) for f in table}

    @classmethod
    def decode(cls, kind: str, value: int) -> "InstrDescriptor":
        """The descriptor ``value`` read as ``kind``; bits outside its fields must be 0."""
        k = _kind(kind)
        value = as_int(value, "InstrDescriptor.decode: value")
        table = BLOCK_SCALED_FIELDS if k.block_scaled else DENSE_FIELDS
        used = sum(((1 << f.width) - 1) << f.lo for f in table)
        if not 0 <= value < 1 << 32 or value & ~used:
            raise DescriptorError(f"instruction descriptor {value:#010x}: bits {value & ~used & 0xFFFFFFFF:#010x} are "
                                  f"reserved for kind::{kind}")
        return cls(kind, value)

    def cuda(self, name: str = "pycute_idesc") -> str:
        """``constexpr unsigned name``: the descriptor as generated code (nothing to paste)."""
        return view("cuda", self, name)

    def __repr__(self) -> str:
        f = self.fields
        names = {v: n for n, v in MMA_KINDS[self.kind].operand_codes.items()}
        parts = [f"kind::{self.kind}", f"M{f['m']} N{f['n']}", f"A {names.get(f['a_type'], f['a_type'])}"
                 f"{' MN' if f['transpose_a'] else ' K'}", f"B {names.get(f['b_type'], f['b_type'])}"
                 f"{' MN' if f['transpose_b'] else ' K'}"]
        if "d_type" in f:
            d = {v: n for n, v in MMA_KINDS[self.kind].d_codes.items()}
            parts.append(f"D {d.get(f['d_type'], f['d_type'])}")
        else:
            s = {v: n for n, v in MMA_KINDS[self.kind].scale_types.items()}
            parts.append(f"scale {s.get(f['scale_type'], f['scale_type'])} SFA id {f['sfa_id']} SFB id {f['sfb_id']}")
        if f["sparse"]:
            parts.append("sparse A" + (f" (selector {f['sparse_selector']})" if f.get("sparse_selector") else ""))
        return f"InstrDescriptor({self.value:#010x}: {', '.join(parts)})"


def _kind(kind) -> MmaKind:
    if not isinstance(kind, str):
        raise TypeError(f"make_instr_desc: kind must be a string, got {kind!r}")
    if kind not in MMA_KINDS:
        raise DescriptorError(f"unknown tcgen05.mma kind {kind!r}; one of {', '.join(MMA_KINDS)}")
    return MMA_KINDS[kind]


def _name(dt, what: str) -> str:
    try:
        return as_dtype(dt).name
    except PlanError as e:
        raise DescriptorError(f"make_instr_desc: {what}: {e}") from None


def _type_code(k: MmaKind, which: str, name: str) -> int:
    if name not in k.operand_codes:
        raise DescriptorError(f"kind::{k.name} takes {which} of {', '.join(k.operand_codes)}, not {name}")
    return k.operand_codes[name]


def check_mma_shape(k: MmaKind, m: int, n: int, cta_group: int, ws: bool) -> None:
    """M x N is a shape of kind ``k`` with ``cta_group`` (and ``.ws``); DescriptorError names the rule otherwise."""
    if ws:
        if cta_group != 1 or k.block_scaled:
            raise DescriptorError(f"the .ws MMA forms take cta_group::1 and a dense kind, not cta_group::{cta_group} "
                                  f"kind::{k.name} (PTX #tcgen05-mma-instructions-mma-ws)")
        if m not in WS_SHAPES or n not in WS_SHAPES[m]:
            raise DescriptorError(f".ws MMA M={m} N={n}: legal M {sorted(WS_SHAPES)}, N {WS_SHAPES.get(m, (64, 128, 256))}")
        return
    for (group, mm), why in k.open_shapes:
        if (group, mm) == (cta_group, m):
            raise DescriptorError(f"kind::{k.name} M={m} with cta_group::{cta_group} is refused: {why}")
    if m not in k.m_values[cta_group]:
        raise DescriptorError(f"kind::{k.name} with cta_group::{cta_group} takes M in {k.m_values[cta_group]}, not {m}")
    if not k.n_legal(cta_group, n):
        raise DescriptorError(f"kind::{k.name} with cta_group::{cta_group} takes N from {k.n_step[cta_group]} to 256 "
                              f"in steps of {k.n_step[cta_group]}, not {n}")


def _check_majors(k: MmaKind, a_major: str, b_major: str, a: str, b: str) -> None:
    for which, major, name in (("A", a_major, a), ("B", b_major, b)):
        if major not in _MAJORS:
            raise DescriptorError(f"{which} major {major!r} is 'K' or 'MN'")
        if major == "MN" and not k.transpose:
            raise DescriptorError(f"kind::{k.name} does not transpose: {which} must be K-major (PTX "
                                  f"#tcgen05-transpose-negate-mma-kind)")
        if major == "MN" and name not in TRANSPOSABLE:
            raise DescriptorError(f"{which} of {name} cannot be MN-major: only {', '.join(sorted(TRANSPOSABLE))} "
                                  f"transpose (fp6 and fp4 do not)")


def _scale(k: MmaKind, scale_type, scale_vec, sfa_id: int, sfb_id: int) -> tuple[int, int]:
    scale_type = (next(iter(k.scale_types)) if len(k.scale_types) == 1 else "ue4m3") if scale_type is None \
        else _name(scale_type, "scale_type")
    if scale_type not in k.scale_types:
        raise DescriptorError(f"kind::{k.name} scales with {', '.join(k.scale_types)}, not {scale_type}")
    if scale_vec is None:
        scale_vec = 4 if scale_type == "ue4m3" else k.scale_vecs[0]
    if scale_vec not in k.scale_vecs or (scale_type == "ue4m3" and scale_vec != 4):
        raise DescriptorError(f"kind::{k.name} with {scale_type} takes scale_vec {k.scale_vecs if scale_type != 'ue4m3' else (4,)}"
                              f", not {scale_vec} (PTX #tcgen05-mma-scale-valid-comb)")
    legal = {1: (0, 1, 2, 3), 2: (0, 2), 4: (0,)}[scale_vec]
    for which, sf in (("SFA", sfa_id), ("SFB", sfb_id)):
        if sf not in legal:
            raise DescriptorError(f"{which} id {sf} with scale_vec::{scale_vec}X: the id is the SF's byte in its "
                                  f"32-bit TMEM word and must be one of {legal} (PTX #tcgen05-block-scaling)")
    return k.scale_types[scale_type], scale_vec


def _check_sparse(k: MmaKind, sparse: bool, selector: int) -> None:
    """The sparsity selector (bits 0-1) is a field of the dense kinds' table and means something only for .sp."""
    if not selector:
        return
    if not sparse:
        raise DescriptorError(f"sparsity selector {selector} without sparse=True (it selects .sp metadata)")
    if k.block_scaled:
        raise DescriptorError(f"kind::{k.name}'s descriptor has no sparsity selector (bits 0-1 are 0; PTX "
                              f"#tcgen05-instruction-descriptor)")
    if not 0 <= selector < 4:
        raise DescriptorError(f"the sparsity selector is 2 bits (0..3), not {selector}")


def make_instr_desc(kind: str, a_dtype: DTypeLike, b_dtype: DTypeLike, d_dtype: DTypeLike | None = None,
                    M: int = 128, N: int = 256, a_major: Major = "K", b_major: Major = "K", cta_group: int = 1,
                    negate_a: bool = False, negate_b: bool = False, saturate: bool = False,
                    scale_type: str | None = None, scale_vec: int | None = None, sfa_id: int = 0, sfb_id: int = 0,
                    ws: bool = False, max_shift: int = 0, sparse: bool = False, sparse_selector: int = 0
                    ) -> InstrDescriptor:
    """The instruction descriptor of ``tcgen05.mma.cta_group::<cta_group>.kind::<kind>`` (M x N, A/B majors,
    negation, saturation (i8), ``.ws`` max shift, for the block-scaled kinds the scale type, ``scale_vec`` and
    SF ids, and for ``tcgen05.mma.sp`` the sparse flag with, in the dense kinds' table, the 2-bit sparsity
    selector). Raises ``DescriptorError`` for a combination the PTX ISA forbids."""
    k = _kind(kind)
    cta_group = check_cta_group(cta_group)
    m, n = as_int(M, "make_instr_desc: M"), as_int(N, "make_instr_desc: N")
    for name, flag in (("negate_a", negate_a), ("negate_b", negate_b), ("saturate", saturate), ("ws", ws),
                       ("sparse", sparse)):
        if not isinstance(flag, bool):
            raise TypeError(f"make_instr_desc: {name} must be a bool, got {flag!r}")
    a, b = _name(a_dtype, "a_dtype"), _name(b_dtype, "b_dtype")
    values = {"a_type": _type_code(k, "A", a), "b_type": _type_code(k, "B", b)}
    check_mma_shape(k, m, n, cta_group, ws)
    _check_majors(k, a_major, b_major, a, b)
    if (negate_a or negate_b) and not k.negate:
        raise DescriptorError(f"kind::{k.name} does not negate (PTX #tcgen05-transpose-negate-mma-kind)")
    if saturate and not k.saturate:
        raise DescriptorError(f"saturate is for kind::i8 only, not kind::{k.name}")
    values.update(transpose_a=int(a_major == "MN"), transpose_b=int(b_major == "MN"), negate_a=int(negate_a),
                  negate_b=int(negate_b), n=n, m=m, sparse=int(sparse))
    _check_sparse(k, sparse, as_int(sparse_selector, "make_instr_desc: sparse_selector"))
    values.update(sparse_selector=sparse_selector)
    d = ("f32" if "f32" in k.d_codes else next(iter(k.d_codes))) if d_dtype is None else _name(d_dtype, "d_dtype")
    if d not in k.d_codes:
        raise DescriptorError(f"kind::{k.name} accumulates in {', '.join(k.d_codes)}, not {d}")
    if k.block_scaled:
        code, _ = _scale(k, scale_type, scale_vec, as_int(sfa_id, "sfa_id"), as_int(sfb_id, "sfb_id"))
        values.update(scale_type=code, sfa_id=sfa_id, sfb_id=sfb_id)
        table = BLOCK_SCALED_FIELDS
    else:
        if scale_type is not None or scale_vec is not None or sfa_id or sfb_id:
            raise DescriptorError(f"kind::{k.name} is not block-scaled: no scale type, scale_vec or SF ids")
        if max_shift and not ws:
            raise DescriptorError("max_shift is a .ws field")
        if max_shift not in MAX_SHIFTS:
            raise DescriptorError(f"max_shift {max_shift} is one of {', '.join(map(str, MAX_SHIFTS))}")
        values.update(d_type=k.d_codes[d], saturate=int(saturate), max_shift=MAX_SHIFTS[max_shift])
        table = DENSE_FIELDS
    value = 0
    for f in table:
        v = values.get(f.name, 0)
        if not f.fits(v):
            raise DescriptorError(f"instruction descriptor field {f.name} cannot hold {v}")
        value |= f.put(v)
    return InstrDescriptor(kind, value)
