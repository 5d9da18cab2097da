"""A caller's pinned form (``make_smem_copy(..., form=...)``), as ``make_tiled_copy`` takes ``shape=``: the PTX
spelling of the instruction, its fixed qualifiers optional.

* ``stmatrix`` / ``ldmatrix`` with any of ``.sync .aligned .shared``, a shape (``.m8n8``, ``.m16n8``,
  ``.m16n16``, ``.m8n16``), ``.x1`` / ``.x2`` / ``.x4``, ``.trans``, a type (``.b16``, ``.b8``) and an unpacking
  load's ``.b8x16.b4x16_p64``: ``.trans`` means what it does in PTX (written: transposed; left out: not); a shape,
  ``.num`` or type left out is the planner's to choose (a plan of five registers is then ``.x4`` and ``.x1``).
* ``st.shared`` / ``ld.shared`` with ``.v4.b32``, ``.v2.b32``, ``.b32``, ``.b16`` or ``.b8`` (16 to 1 bytes per
  thread); without one, the planner chooses the width.

``form_pin`` parses the text once; ``FormPin.admits_*`` filter the planner's candidates; a pin that names no form
the copy's direction or target has is refused here, one that cannot move the layouts where they are weighed.
"""
from __future__ import annotations

from typing import Literal

import attrs

from ...arch.sm100.matrix import UNPACK_FORMATS
from ...arch.sm90.matrix import MATRIX_NUMS, MatrixForm, MatrixOp
from ...errors import PlanError

__all__ = ["FormPin", "form_pin"]

_MATRIX_SHAPES = ("m8n8", "m16n8", "m16n16", "m8n16")
_MATRIX_TYPES = ("b16", "b8")
_VECTOR = {("v4", "b32"): 16, ("v2", "b32"): 8, ("b32",): 4, ("b16",): 2, ("b8",): 1}
_IGNORED = ("sync", "aligned", "shared")


@attrs.frozen
class FormPin:
    """What the caller pinned: ``kind`` (``matrix``: stmatrix / ldmatrix; ``vector``: st / ld.shared), its
    direction, and each qualifier written (None: the planner's choice)."""

    text: str
    op: MatrixOp
    kind: Literal["matrix", "vector"]
    shape: str | None = None
    num: int | None = None
    trans: bool = False
    type: str | None = None
    unpack: str | None = None
    width: int | None = None                 # bytes per thread, st / ld.shared

    def admits_matrix(self, forms: tuple[MatrixForm, ...]) -> tuple[MatrixForm, ...]:
        """The forms of a family (one shape, ``.trans`` or not; x4 / x2 / x1) the pin leaves, () if none."""
        f = forms[0]
        if (self.kind != "matrix" or self.trans != f.trans or self.shape not in (None, f.shape)
                or self.type not in (None, f.type) or self.unpack != f.unpack):
            return ()
        return tuple(g for g in forms if self.num in (None, g.num))

    def admits_width(self, width: int) -> bool:
        return self.kind == "vector" and self.width in (None, width)


def _refuse(text: str, why: str) -> PlanError:
    return PlanError(f"make_smem_copy: form {text!r}: {why}")


def form_pin(text: object, op: MatrixOp) -> FormPin:
    """``text`` parsed for a copy of direction ``op`` (``"st"``: registers -> shared; ``"ld"``: back); PlanError
    names the word it cannot read or the rule it breaks, TypeError a form that is not a string."""
    if not isinstance(text, str):
        raise TypeError(f"make_smem_copy: form must be a PTX instruction name (e.g. 'stmatrix.x4.trans', "
                        f"'st.shared.v4.b32') or None, got {text!r}")
    words = [w for w in text.strip().split(".") if w]
    head = words[0] if words else ""
    if head in ("stmatrix", "ldmatrix"):
        pin = _matrix(text, "st" if head == "stmatrix" else "ld", words[1:])
    elif head in ("st", "ld"):
        pin = _vector(text, "st" if head == "st" else "ld", words[1:])
    else:
        raise _refuse(text, "it names no register <-> shared instruction: stmatrix, ldmatrix, st.shared or "
                            "ld.shared")
    if pin.op != op:
        doing = "stores a register fragment into a shared tile" if op == "st" else \
            "loads a register fragment from a shared tile"
        raise _refuse(text, f"it {'stores' if pin.op == 'st' else 'loads'}; this copy {doing} "
                            f"({'stmatrix or st.shared' if op == 'st' else 'ldmatrix or ld.shared'})")
    return pin


def _matrix(text: str, op: MatrixOp, words: list[str]) -> FormPin:
    shape = num = type_ = unpack = None
    trans = False
    k = 0
    while k < len(words):
        w = words[k]
        if w in _IGNORED:
            pass
        elif w == "trans":
            trans = True
        elif w in _MATRIX_SHAPES:
            shape = w
        elif w in {f"x{n}" for n in MATRIX_NUMS}:
            num = int(w[1:])
        elif w in _MATRIX_TYPES:
            type_ = w
        elif w == "b8x16" and k + 1 < len(words) and words[k + 1] in UNPACK_FORMATS:
            type_, unpack = "b8", words[k + 1]
            k += 1
        else:
            raise _refuse(text, f"{w!r} is no qualifier of {op}matrix (.sync .aligned .shared, a shape "
                                f"{'/'.join(_MATRIX_SHAPES)}, .x1/.x2/.x4, .trans, .b16/.b8, "
                                f".b8x16.{'/'.join(UNPACK_FORMATS)})")
        k += 1
    return FormPin(text, op, "matrix", shape, num, trans, type_, unpack)


def _vector(text: str, op: MatrixOp, words: list[str]) -> FormPin:
    if not words or words[0] != "shared":
        space = f"{op}.{words[0]}" if words else op
        raise _refuse(text, f"{space} is no shared-memory {'store' if op == 'st' else 'load'}: the register <-> "
                            f"shared forms are {op}.shared and {op}matrix")
    rest = tuple(words[1:])
    if rest and rest not in _VECTOR:
        raise _refuse(text, f"{op}.shared{''.join('.' + w for w in rest)} is no width pycute moves: "
                            f"{', '.join(op + '.shared.' + '.'.join(k) for k in _VECTOR)}")
    return FormPin(text, op, "vector", width=_VECTOR[rest] if rest else None)
