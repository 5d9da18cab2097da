"""``tcgen05.cp`` atoms: one class per form of ``arch.sm100.CP_FORMS``, each instantiated for cta_group 1 and 2.

An atom carries what the planner, the emitter and the emulator read: its form's geometry (rows, bits, columns,
16-byte units), the row -> lane map with its replicas, and the PTX and SASS opcodes.
"""
from __future__ import annotations

from typing import ClassVar, NamedTuple

import attrs

from ..arch.sm100.tcgen05_cp import CP_FORMS, LEGAL_MULTICASTS, CpForm, parse_cp_opcode
from ..arch.sm100.swizzle_modes import UNIT_BITS
from ..arch.sm100.tmem import CELL_BITS, CTA_GROUPS, TCol, check_cta_group
from ..basis import E
from ..errors import PlanError
from ..dtypes import DTypeLike
from ..layout import Layout, make_layout
from ..tensor.tmem import TmemTensor, make_tmem_tensor
from .base import CopyAtom

__all__ = ["Tcgen05CpAtom", "Cp128x256b", "Cp4x256b", "Cp128x128b", "Cp64x128bWarpx2_02_13",
           "Cp64x128bWarpx2_01_23", "Cp32x128bWarpx4", "TCGEN05_CP_FORMS", "TCGEN05_CP_ATOMS", "cp_candidates",
           "find_cp_atom", "parse_cp_ptx", "LEGAL_MULTICASTS", "TBit", "atom_tmem_tensor",
           "Tcgen05CpIssue"]

TBit = E("TBit")   # the bit within a 32-bit TMEM cell (only for describing atoms bit-exactly)


class Tcgen05CpIssue(NamedTuple):
    """One issued ``tcgen05.cp``, as a plan streams it and as the PTX interpreter reads it back from compiled code:
    the opcode as PTX spells it, the TMEM address (lane << 16 | column) and the 64-bit shared-memory descriptor."""

    ptx: str
    taddr: int
    desc: int


@attrs.frozen(repr=False)
class Tcgen05CpAtom(CopyAtom):
    """A ``tcgen05.cp`` form issued with ``cta_group``: ``rows`` rows of ``bits`` bits from a shared-memory matrix
    descriptor into TMEM."""

    cta_group: int = 1

    FORM: ClassVar[CpForm]

    def __attrs_post_init__(self):
        object.__setattr__(self, "cta_group", check_cta_group(self.cta_group))

    # -- identity -------------------------------------------------------------------------------------------
    @property
    def form(self) -> CpForm:
        return self.FORM

    @property
    def shape(self) -> str:
        return self.FORM.shape

    @property
    def multicast(self) -> str:
        return self.FORM.multicast

    @property
    def name(self) -> str:
        """``shape[.multicast]``, e.g. ``64x128b.warpx2::02_13``."""
        return self.FORM.name

    @property
    def ptx(self) -> str:
        """The full opcode, e.g. ``tcgen05.cp.cta_group::1.64x128b.warpx2::02_13``."""
        return self.FORM.ptx(self.cta_group)

    @property
    def sass(self) -> str:
        """The SASS opcode ptxas assembles it to, e.g. ``UTCCP.T.S.2CTA.4x32dp128bit``."""
        return self.FORM.sass(self.cta_group)

    # -- geometry -------------------------------------------------------------------------------------------
    @property
    def rows(self) -> int:
        return self.FORM.rows

    @property
    def bits(self) -> int:
        """Bits per row."""
        return self.FORM.bits

    @property
    def columns(self) -> int:
        """32-bit TMEM columns one row occupies."""
        return self.bits // CELL_BITS

    @property
    def units(self) -> int:
        """16-byte shared-memory units per row."""
        return self.bits // UNIT_BITS

    @property
    def bytes(self) -> int:
        """Shared-memory bytes one instruction reads."""
        return self.rows * self.bits // 8

    @property
    def lane_pattern(self) -> Layout:
        """Row index -> TMEM lane offset (on the ``TLane`` axis)."""
        return self.FORM.lane_pattern

    @property
    def replica(self) -> Layout | None:
        """Multicast copy index -> TMEM lane offset; ``None`` for forms without multicast."""
        return self.FORM.replica

    @property
    def replicas(self) -> int:
        return self.replica.size() if self.replica is not None else 1

    def lanes(self, row: int) -> tuple[int, ...]:
        """TMEM lane offsets (relative to the address's lane field) that source row ``row`` is written to."""
        return self.FORM.lane_table[row]

    @property
    def lane_table(self) -> tuple:
        """``lanes(r)`` for every row: the form's whole row -> lanes map."""
        return self.FORM.lane_table

    @property
    def max_lane(self) -> int:
        """The largest lane offset any row reaches (replicas included)."""
        return self.FORM.max_lane

    # -- CuTe-style thread-value description ------------------------------------------------------------------
    @property
    def thr_id(self) -> Layout:
        """The CTAs taking part: one, or the pair for cta_group::2."""
        return Layout(self.cta_group)

    @property
    def src_tv(self) -> Layout:
        """(cta, (bit, row, replica)) -> bit offset in the row-major source matrix; replicas read the same bits."""
        return Layout((self.cta_group, (self.bits, self.rows, self.replicas)), (0, (1, self.bits, 0)))

    @property
    def dst_tv(self) -> Layout:
        """(cta, ((bit, column), row, replica)) -> TMEM (TBit, TCol, TLane); each CTA writes its own TMEM."""
        lane = self.lane_pattern
        rep = self.replica if self.replica is not None else Layout(1, 0)
        return Layout((self.cta_group, ((CELL_BITS, self.columns), lane.shape, rep.shape)),
                      (0, ((TBit, TCol), lane.stride, rep.stride)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cta_group={self.cta_group})  # {self.ptx}"


def _class_name(form: CpForm) -> str:
    """``Cp64x128bWarpx2_02_13`` for ``64x128b.warpx2::02_13``: CUTLASS-like names for the forms."""
    mc = form.multicast.replace("::", "_")
    return "Cp" + form.shape + mc[:1].upper() + mc[1:]


def _atom_class(form: CpForm) -> type[Tcgen05CpAtom]:
    cls = type(_class_name(form), (Tcgen05CpAtom,), {
        "__doc__": f"``tcgen05.cp.cta_group::N.{form.name}``", "__module__": __name__, "FORM": form})
    return attrs.frozen(repr=False)(cls)


#: One class per form, widest first: the planner's candidate order (fewest instructions first).
TCGEN05_CP_FORMS = tuple(_atom_class(form) for form in CP_FORMS)
# Each class's __name__ is derived from its form; a test checks that these bindings agree with it.
Cp128x256b, Cp4x256b, Cp128x128b, Cp64x128bWarpx2_02_13, Cp64x128bWarpx2_01_23, Cp32x128bWarpx4 = TCGEN05_CP_FORMS
_BY_NAME = {cls.FORM.name: cls for cls in TCGEN05_CP_FORMS}
#: All twelve concrete atoms: the six forms for cta_group 1, then for cta_group 2, each widest first.
TCGEN05_CP_ATOMS = tuple(cls(cta_group=g) for g in CTA_GROUPS for cls in TCGEN05_CP_FORMS)
_BY_GROUP = {g: tuple(a for a in TCGEN05_CP_ATOMS if a.cta_group == g) for g in CTA_GROUPS}


def find_cp_atom(shape: str, multicast: str = "", cta_group: int = 1) -> Tcgen05CpAtom:
    """The atom of a (shape, multicast, cta_group) triple, or a PlanError naming what is legal."""
    if not isinstance(shape, str) or not isinstance(multicast, (str, type(None))):
        raise TypeError(f"tcgen05.cp shape and multicast are strings, got {shape!r}, {multicast!r}")
    if shape not in LEGAL_MULTICASTS:
        raise PlanError(f"unknown tcgen05.cp shape {shape!r}; legal shapes: {', '.join(LEGAL_MULTICASTS)}")
    multicast = multicast or ""
    if multicast not in LEGAL_MULTICASTS[shape]:
        legal = " or ".join(repr(m) for m in LEGAL_MULTICASTS[shape] if m) or "none"
        raise PlanError(f"illegal multicast {multicast!r} for tcgen05.cp shape {shape!r}; legal: {legal}")
    cta_group = check_cta_group(cta_group)
    return _BY_NAME[shape + (f".{multicast}" if multicast else "")](cta_group=cta_group)


def cp_candidates(cta_group: int, shape: str | None = None, multicast: str | None = None) -> tuple:
    """The atoms a copy may use, widest first: all six forms of ``cta_group``, those with ``multicast``, or the
    one ``shape`` names (whose multicast must be given when PTX allows two)."""
    cta_group = check_cta_group(cta_group)
    for name, value in (("shape", shape), ("multicast", multicast)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"tcgen05.cp {name} must be a string or None, got {value!r}")
    if shape is not None:
        if multicast is None and len(LEGAL_MULTICASTS.get(shape, ())) > 1:
            raise PlanError(f"tcgen05.cp shape {shape!r} requires an explicit multicast: "
                            f"{' or '.join(repr(m) for m in LEGAL_MULTICASTS[shape])}")
        if multicast is None and shape in LEGAL_MULTICASTS:
            multicast = LEGAL_MULTICASTS[shape][0]
        return (find_cp_atom(shape, "" if multicast is None else multicast, cta_group),)
    atoms = _BY_GROUP[cta_group]
    if multicast is not None:
        known = {f.multicast for f in CP_FORMS}
        if multicast not in known:
            raise PlanError(f"unknown multicast {multicast!r}; legal: {', '.join(repr(m) for m in sorted(known))}")
        atoms = tuple(a for a in atoms if a.multicast == multicast)
    return atoms


def parse_cp_ptx(ptx: str) -> tuple[Tcgen05CpAtom, str | None]:
    """``(atom, decompression)`` of a ``tcgen05.cp`` opcode string; a PlanError for any illegal form."""
    parsed = parse_cp_opcode(ptx)
    if parsed is None:
        raise PlanError(f"not a tcgen05.cp opcode: {ptx!r}")
    cta_group, shape, multicast, fmt = parsed
    return find_cp_atom(shape, multicast, cta_group), fmt


def atom_tmem_tensor(dtype: DTypeLike, atom: Tcgen05CpAtom, k: int, columns: int = 64) -> TmemTensor:
    """A TMEM tensor whose rows follow ``atom``'s lane pattern (and replica) and whose ``k`` elements per row sit in
    consecutive columns."""
    if not isinstance(atom, Tcgen05CpAtom):
        raise TypeError(f"atom_tmem_tensor: expected a tcgen05.cp atom (a Tcgen05CpAtom instance), got {atom!r}")
    return make_tmem_tensor(dtype, make_layout(atom.lane_pattern, Layout(k, TCol)), replica=atom.replica,
                            columns=columns)
