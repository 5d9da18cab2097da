"""make_smem_copy: plan the instructions that move a register fragment into a shared tile (``st``) or back
(``ld``), converting f32 to the tile's type on the way in where the two differ.

The fragment is a CuTe thread-value layout ``(thread, value) -> coordinate index`` of the tile (a ``tcgen05.ld``
plan's ``fragment``, an MMA accumulator's, or any the user gives); composed with the tile's (swizzled) layout it
gives every value's shared address. Every form the target has is tried (``stmatrix`` / ``ldmatrix`` families,
``st/ld.shared`` of 16 to 1 bytes, ``forms``); the plan is the one that takes the fewest shared-memory wavefronts
(``banks``), then the fewest instructions. Each other form is kept with its count or the rule it broke.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...arch.sm100.matrix import B8_MATRIX_TARGETS, b8_forms, unpack_forms
from ...arch.sm80.cvt import PackConversion, pack_conversion
from ...arch.sm90.matrix import MatrixForm, MatrixOp, m8n8_forms
from ...arch.sm90.shared import SHARED_TARGETS, SHARED_WIDTHS
from ...errors import PlanError
from ...int_tuple import product
from ...tensor.rmem import RegisterFragment
from ...tensor.smem import SmemTensor
from ...tensor.stages import smem_stages
from ...tensor.tile import mode_extents
from ...tensor.values import layout_values, smem_element_offsets
from ..protocol import Reject, Rejection
from ..tcgen05_cp.decompress import unpadded_source
from .address import address_plan, byte_swizzle
from .forms import Move, matrix_moves, vector_moves
from .pin import FormPin, form_pin
from .plan import Candidate, SmemCopyPlan

__all__ = ["make_smem_copy"]

_ROW_ALIGN = 16


def _operands(dst: object, src: object) -> tuple[MatrixOp, RegisterFragment, SmemTensor]:
    if isinstance(dst, SmemTensor) and isinstance(src, RegisterFragment):
        return "st", src, dst
    if isinstance(dst, RegisterFragment) and isinstance(src, SmemTensor):
        return "ld", dst, src
    raise TypeError(f"make_smem_copy: one tensor is a register fragment (make_fragment) and the other a shared tile "
                    f"(make_smem_tensor), got {type(dst).__name__} <- {type(src).__name__}")


def _conversion(op: str, frag: RegisterFragment, smem: SmemTensor, satfinite: bool | None) -> PackConversion | None:
    if frag.dtype == smem.dtype:
        if satfinite:
            raise PlanError(f"make_smem_copy: satfinite applies to a conversion; {frag.dtype.name} is stored as it is")
        return None
    if op == "ld" or frag.dtype.name != "f32":
        raise PlanError(f"make_smem_copy: {'a load moves' if op == 'ld' else 'a store converts f32 only; it moves'} "
                        f"{frag.dtype.name} registers and {smem.dtype.name} elements unchanged; give both the same "
                        f"type{' or f32 registers' if op == 'st' else ''}")
    return pack_conversion(smem.dtype.name, satfinite)


def _table(frag: RegisterFragment, smem: SmemTensor, op: str) -> np.ndarray:
    """``(threads, values)``: the tile coordinate index of each value, checked against the tile."""
    tv = frag.layout
    where = f"\n  fragment: {frag!r}\n  tile:     {smem!r}"
    if tv is None:
        raise PlanError(f"make_smem_copy: the fragment has no (thread, value) layout; give it (make_fragment(..., "
                        f"layout=...), a tcgen05.ld plan's fragment, an MMA accumulator's){where}")
    if tv.rank() != 2 or tv[0].size() != frag.threads:
        raise PlanError(f"make_smem_copy: the fragment's layout {tv!r} is not (thread, value) with {frag.threads} "
                        f"threads{where}")
    if frag.shape is not None and _extents(frag.shape) != mode_extents(smem.layout):
        raise PlanError(f"make_smem_copy: the fragment is of a {frag.shape} tile, the shared tile is "
                        f"{smem.layout.shape}: the shapes differ{where}")
    table = layout_values(tv).reshape(tv[1].size(), frag.threads).T
    size = smem.layout.size()
    if table.max() >= size:
        t, v = np.argwhere(table >= size)[0]
        raise PlanError(f"make_smem_copy: thread {t}'s value {v} is element {int(table[t, v])} of a tile of {size} "
                        f"elements ({smem.layout.shape}): not in the tile{where}")
    if op == "st":
        flat = table.ravel()
        order = np.argsort(flat, kind="stable")
        dup = np.flatnonzero(flat[order][1:] == flat[order][:-1])
        if dup.size:
            a, b = (divmod(int(order[k]), table.shape[1]) for k in (dup[0], dup[0] + 1))
            raise PlanError(f"make_smem_copy: element {int(flat[order][dup[0]])} is held by (thread, value) {a} and "
                            f"{b}; a store would write it twice{where}")
    return table


def _extents(shape: object) -> tuple[int, ...]:
    """The size of each top-level mode of a shape."""
    return tuple(product(m) for m in (shape if isinstance(shape, tuple) else (shape,)))


def _families(op: MatrixOp, arch: str | None, unpack: bool) -> list[tuple[MatrixForm, ...]]:
    """The matrix families (x4 / x2 / x1 of one shape, ``.trans`` or not) of the target: non-transposed first."""
    if unpack:                                                            # 4-bit elements: the unpacking loads only
        forms = unpack_forms("b4x16_p64")
        return [forms[:3], forms[3:]]
    families = [m8n8_forms(op)[:3], m8n8_forms(op)[3:]]
    return families + [b8_forms(op)] if arch in B8_MATRIX_TARGETS else families


def _unusable(forms: tuple[MatrixForm, ...], e: int, arch: str | None) -> str | None:
    """Why a family cannot move ``e``-byte elements for ``arch``, or None."""
    if e == 1 and forms[0].element_bits == 16 and forms[0].trans:
        return f"{forms[0].ptx} transposes 16-bit elements; the tile's are 8-bit"
    if arch and arch not in forms[0].targets:
        return f"{forms[0].ptx} needs one of {', '.join(forms[0].targets)}, not {arch}"
    return None


def _candidates(op: MatrixOp, e: int, arch: str | None, addressable: Callable[[list[np.ndarray]], bool],
                pin: FormPin | None, unpack: bool = False) -> list:
    """``(name, planner)`` per form family, in preference order for equal cost (matrix before vector); each
    planner gives the moves and the fewest wavefronts any plan of the family takes. A ``pin`` keeps the forms it
    names, or is refused with the rule it breaks."""
    out = []
    for forms in _families(op, arch, unpack):
        if pin is not None:
            forms = pin.admits_matrix(forms)
            if not forms:
                continue
        why = _unusable(forms, e, arch)
        if why is not None:
            if pin is not None:
                raise PlanError(f"make_smem_copy: form {pin.text!r}: {why}")
            continue
        name = forms[0].ptx if len(forms) == 1 else forms[0].ptx.replace(".x4", "").replace(".x2", "")
        out.append((name, lambda a, f, forms=forms: matrix_moves(forms, e, a, f, addressable)))
    for w in SHARED_WIDTHS:
        if (pin is not None and not pin.admits_width(w)) or unpack or (arch and arch not in SHARED_TARGETS):
            continue
        if w < e:
            if pin is not None and pin.width == w:
                raise PlanError(f"make_smem_copy: form {pin.text!r} moves {w} byte(s) per thread; a tile element "
                                f"is {e}")
            continue
        out.append((f"{op}.shared {w} B", lambda a, f, w=w: _exact(vector_moves(op, w, e, a, f))))
    if pin is not None and not out:
        raise PlanError(f"make_smem_copy: form {pin.text!r}: {_no_form(pin, op, arch, unpack)}")
    return out


def _no_form(pin: FormPin, op: MatrixOp, arch: str | None, unpack: bool) -> str:
    """Why no family of the target admits the pin: another target's form, the wrong element width, or none."""
    if unpack:
        return ("4-bit elements load with the unpacking ldmatrix forms only (ldmatrix.m8n16 / .m16n16 "
                ".b8x16.b4x16_p64)")
    elsewhere = [forms for forms in (*_families(op, B8_MATRIX_TARGETS[0], False), *_families(op, None, True))
                 if pin.admits_matrix(forms)]
    if elsewhere and not any(f[0].unpack for f in elsewhere):
        targets = elsewhere[0][0].targets
        return (f"{elsewhere[0][0].ptx} is a form of {', '.join(targets)}; the copy targets {arch or 'sm_90a'} "
                f"(pass arch={targets[0]!r})")
    if elsewhere:
        return "the unpacking ldmatrix forms load 4-bit elements (a f4e2m1 tile into u8 registers)"
    have = sorted({f.ptx.replace(".x4", ".x{1,2,4}").replace(".x2", ".x{1,2}") for forms in
                   _families(op, B8_MATRIX_TARGETS[0], False) for f in forms[:1]})
    return f"no {op}matrix form has these qualifiers; the forms are {', '.join(have)}"


def _exact(moves: list[Move]) -> tuple[list[Move], int]:
    """A family whose values leave no choice: its bound is its plan's wavefronts."""
    return moves, sum(m.wavefronts for m in moves)


def _addressable(tile: SmemTensor) -> Callable[[list[np.ndarray]], bool]:
    """Whether the generated code can compute instructions' per-thread addresses (``address.address_plan``)."""
    sw = byte_swizzle(tile)

    def check(addresses: list[np.ndarray]) -> bool:
        try:
            address_plan(addresses, sw, tile.base_align, "")
        except PlanError:
            return False
        return True
    return check


def _choose(op: MatrixOp, e: int, addr: np.ndarray, fixed: bool, arch: str | None,
            addressable: Callable[[list[np.ndarray]], bool], pin: FormPin | None, where: str,
            unpack: bool = False) -> tuple:
    """The moves of the fewest wavefronts, then the fewest instructions; and every candidate weighed."""
    best: tuple | None = None
    weighed, rejected = [], []
    for rank, (name, plan) in enumerate(_candidates(op, e, arch, addressable, pin, unpack)):
        try:
            moves, bound = plan(addr, fixed)
        except Reject as why:
            weighed.append(Candidate(name, None, None, str(why)))
            rejected.append(Rejection(name, why))
            continue
        waves = sum(m.wavefronts for m in moves)
        weighed.append(Candidate(name, len(moves), waves, bound=bound))
        key = (waves, len(moves), rank)
        if best is None or key < best[0]:
            best = (key, moves, name)
    if best is None:
        what = f"form {pin.text!r} cannot move" if pin is not None else "no form moves"
        raise PlanError(f"make_smem_copy: {what} the fragment:\n" + "\n".join(f"  {r}" for r in rejected) + where)
    return best[1], tuple(weighed), tuple(rejected)


def make_smem_copy(dst: SmemTensor | RegisterFragment, src: RegisterFragment | SmemTensor, arch: str | None = None,
                   satfinite: bool | None = None, form: str | None = None) -> SmemCopyPlan:
    """Plan the move of a register fragment into a shared tile (``dst`` the tile) or out of it (``src`` the tile).

    The fragment's ``layout`` maps (thread, value) to the tile's coordinate index; its ``dtype`` is the registers'
    type: f32 registers stored into a bf16 / f16 / e4m3 / e5m2 tile are converted (``cvt.rn``, ``satfinite`` for
    ``.satfinite``; the 8-bit types always saturate). ``arch`` adds the forms of a later target (``"sm_100a"``: the
    8-bit stmatrix / ldmatrix); by default the plan uses what sm_90a has. ``form`` pins the instruction by its PTX
    name, the fixed qualifiers optional (``"stmatrix.x4.trans"``, ``"st.shared.v4.b32"``, ``"ldmatrix"``: see
    ``pin.py``): the plan is then the fewest wavefronts of that form, or a PlanError naming the rule it breaks.
    PlanError names the rule a pair breaks."""
    op, frag, smem = _operands(dst, src)
    if arch is not None and not isinstance(arch, str):
        raise TypeError(f"make_smem_copy: arch must be a target name or None, got {arch!r}")
    pin = None if form is None else form_pin(form, op)
    if op == "ld" and smem.bits == 4:
        return _unpacking_load(frag, smem, arch, pin)
    conversion = _conversion(op, frag, smem, satfinite)
    if arch is not None and conversion is not None and arch not in conversion.targets:
        raise PlanError(f"make_smem_copy: {conversion.ptx} needs one of {', '.join(conversion.targets)}, not {arch}")
    if smem.bits % 8 or smem.bits > 32:
        raise PlanError(f"make_smem_copy: {smem.dtype.name} elements are {smem.bits} bits; register <-> shared "
                        f"plans move 8-, 16- and 32-bit elements")
    stages = smem_stages(smem, _ROW_ALIGN, "make_smem_copy")
    tile = smem.at(**{d.name: 0 for d in smem.dynamic}) if smem.dynamic else smem
    if tile.swizzle is not None and tile.base_align % (tile.swizzle.size() * tile.bits // 8):
        raise PlanError(f"make_smem_copy: the swizzle {tile.swizzle!r} XORs address bits above the buffer's "
                        f"{tile.base_align}-byte alignment; align the buffer to the swizzle's period ({tile!r})")
    table = _table(frag, tile, op)
    e = tile.bits // 8
    addr = smem_element_offsets(tile)[table] * e
    moves, weighed, rejected = _choose(op, e, addr, conversion is None, arch, _addressable(tile), pin,
                                       f"\n  fragment: {frag!r}\n  tile:     {tile!r}")
    covers = bool(np.unique(table).size == tile.layout.size())
    return SmemCopyPlan(op, frag, tile, conversion, tuple(moves), table, weighed, stages, rejected, covers,
                        pinned=form)


def _unpacking_load(frag: RegisterFragment, smem: SmemTensor, arch: str | None, pin: FormPin | None) -> SmemCopyPlan:
    """4-bit elements in ``.b4x16_p64`` units (16 elements, then 8 bytes of padding) into one byte each: sm_100a's
    ``ldmatrix ... .b8x16.b4x16_p64`` on the tile's 8-bit view (``unpadded_source``: byte ``16 u + i`` is element
    ``i`` of unit ``u``, at the unit's own address)."""
    if frag.dtype.bits != 8:
        raise PlanError(f"make_smem_copy: an unpacking load puts each {smem.dtype.name} element in a byte; the "
                        f"fragment holds 8-bit containers (u8), not {frag.dtype.name}")
    if arch not in B8_MATRIX_TARGETS:
        raise PlanError(f"make_smem_copy: {smem.dtype.name} loads unpack with sm_100a's ldmatrix .b8x16.b4x16_p64 "
                        f"(arch='sm_100a'), not on {arch or 'sm_90a'}")
    stages = smem_stages(smem, _ROW_ALIGN, "make_smem_copy")
    tile = smem.at(**{d.name: 0 for d in smem.dynamic}) if smem.dynamic else smem
    view = unpadded_source(tile, "make_smem_copy")
    table = _table(frag, view, "ld")
    addr = smem_element_offsets(view)[table]
    moves, weighed, rejected = _choose("ld", 1, addr, True, arch, _addressable(view), pin,
                                       f"\n  fragment: {frag!r}\n  tile:     {tile!r}", unpack=True)
    return SmemCopyPlan("ld", frag, view, None, tuple(moves), table, weighed, stages, rejected,
                        bool(np.unique(table).size == view.layout.size()), source=tile,
                        pinned=None if pin is None else pin.text)
