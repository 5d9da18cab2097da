"""``tcgen05.cp`` atoms: one class per PTX (shape, multicast) form, each for cta_group 1 and 2.

Row -> TMEM lane mapping per form (PTX #tcgen05-instructions-tcgen05-cp, CUTLASS ``SM100_UTCCP_*`` traits, TVM's
B200 round trips; see ptx-tcgen05.md section 4). ``lane_pattern`` is the cuTe layout that maps a source row
index to its TMEM lane; ``replica`` maps a multicast copy index to its lane offset. TVM writes the 01_23 pattern
outer-mode-first as ``(2,32):(64,1)``; in cuTe's column-major order the same row -> lane map is ``(32,2):(1,64)``.
"""
from __future__ import annotations

import functools
import re

import attrs

from ..arch.sm100.tmem import TCol, TLane
from ..basis import E, basis_get
from ..errors import PlanError
from ..layout import Layout
from .base import CopyAtom

__all__ = ["Tcgen05CpAtom", "Cp128x256b", "Cp4x256b", "Cp128x128b", "Cp64x128bWarpx2_02_13",
           "Cp64x128bWarpx2_01_23", "Cp32x128bWarpx4", "TCGEN05_CP_FORMS", "TCGEN05_CP_ATOMS", "cp_candidates",
           "find_cp_atom", "parse_cp_ptx", "LEGAL_MULTICASTS", "TBit"]

TBit = E("TBit")   # the bit within a 32-bit TMEM cell (only for describing atoms bit-exactly)

# Shape -> the multicast qualifiers PTX allows with it ('' = none) [V-PTX].
LEGAL_MULTICASTS = {
    "128x256b": ("",),
    "4x256b": ("",),
    "128x128b": ("",),
    "64x128b": ("warpx2::02_13", "warpx2::01_23"),
    "32x128b": ("warpx4",),
}


@attrs.frozen(repr=False)
class Tcgen05CpAtom(CopyAtom):
    """A ``tcgen05.cp`` form: ``ROWS`` rows of ``BITS`` bits from a shared-memory matrix descriptor into TMEM."""

    cta_group: int = 1

    SHAPE = ""
    MULTICAST = ""
    ROWS = 0
    BITS = 0
    LANE_PATTERN = None   # Layout: row index -> lane offset
    REPLICA = None        # Layout: multicast copy -> lane offset, or None
    SASS_VARIANT = ""

    def __attrs_post_init__(self):
        if self.cta_group not in (1, 2):
            raise PlanError(f"cta_group must be 1 or 2, got {self.cta_group!r}")

    # -- identity -------------------------------------------------------------------------------------------
    @property
    def shape(self) -> str:
        return self.SHAPE

    @property
    def multicast(self) -> str:
        return self.MULTICAST

    @property
    def name(self) -> str:
        """``shape[.multicast]``, e.g. ``64x128b.warpx2::02_13``."""
        return self.SHAPE + (f".{self.MULTICAST}" if self.MULTICAST else "")

    @property
    def ptx(self) -> str:
        """The full opcode, e.g. ``tcgen05.cp.cta_group::1.64x128b.warpx2::02_13``."""
        return f"tcgen05.cp.cta_group::{self.cta_group}.{self.name}"

    @property
    def sass(self) -> str:
        """The SASS opcode ptxas assembles it to, e.g. ``UTCCP.T.S.2CTA.4x32dp128bit``."""
        return "UTCCP.T.S" + (".2CTA" if self.cta_group == 2 else "") + self.SASS_VARIANT

    # -- geometry -------------------------------------------------------------------------------------------
    @property
    def rows(self) -> int:
        return self.ROWS

    @property
    def bits(self) -> int:
        """Bits per row."""
        return self.BITS

    @property
    def columns(self) -> int:
        """32-bit TMEM columns one row occupies."""
        return self.BITS // 32

    @property
    def units(self) -> int:
        """16-byte shared-memory units per row."""
        return self.BITS // 128

    @property
    def bytes(self) -> int:
        """Shared-memory bytes one instruction reads."""
        return self.ROWS * self.BITS // 8

    @property
    def lane_pattern(self) -> Layout:
        """Row index -> TMEM lane offset (on the ``TLane`` axis)."""
        return self.LANE_PATTERN

    @property
    def replica(self) -> Layout | None:
        """Multicast copy index -> TMEM lane offset; ``None`` for forms without multicast."""
        return self.REPLICA

    @property
    def replicas(self) -> int:
        return self.REPLICA.size() if self.REPLICA is not None else 1

    def lanes(self, row: int) -> tuple[int, ...]:
        """TMEM lane offsets (relative to the address's lane field) that source row ``row`` is written to."""
        return _lane_table(type(self))[row]

    @property
    def lane_table(self) -> tuple:
        """``lanes(r)`` for every row: the form's whole row -> lanes map."""
        return _lane_table(type(self))

    @property
    def max_lane(self) -> int:
        """The largest lane offset any row reaches (replicas included)."""
        return _max_lane(type(self))

    # -- CuTe-style thread-value description ------------------------------------------------------------------
    @property
    def thr_id(self) -> Layout:
        """The CTAs taking part: one, or the pair for cta_group::2."""
        return Layout(self.cta_group)

    @property
    def src_tv(self) -> Layout:
        """(cta, (bit, row, replica)) -> bit offset in the row-major source matrix; replicas read the same bits."""
        return Layout((self.cta_group, (self.BITS, self.ROWS, self.replicas)), (0, (1, self.BITS, 0)))

    @property
    def dst_tv(self) -> Layout:
        """(cta, ((bit, column), row, replica)) -> TMEM (TBit, TCol, TLane); each CTA writes its own TMEM."""
        lane = self.LANE_PATTERN
        rep = self.REPLICA if self.REPLICA is not None else Layout(1, 0)
        return Layout((self.cta_group, ((32, self.columns), lane.shape, rep.shape)),
                      (0, ((TBit, TCol), lane.stride, rep.stride)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cta_group={self.cta_group})  # {self.ptx}"


@functools.lru_cache(maxsize=None)
def _lane_table(form) -> tuple:
    reps = [0] if form.REPLICA is None else [basis_get(form.REPLICA(k), "TLane") for k in range(form.REPLICA.size())]
    return tuple(tuple(basis_get(form.LANE_PATTERN(r), "TLane") + rep for rep in reps) for r in range(form.ROWS))


@functools.lru_cache(maxsize=None)
def _max_lane(form) -> int:
    return max(max(lanes) for lanes in _lane_table(form))


def _form(name, shape, multicast, rows, bits, lane_pattern, replica, sass):
    return type(name, (Tcgen05CpAtom,), {
        "__doc__": f"``tcgen05.cp.cta_group::N.{shape}{'.' + multicast if multicast else ''}``",
        "__module__": __name__,
        "SHAPE": shape, "MULTICAST": multicast, "ROWS": rows, "BITS": bits,
        "LANE_PATTERN": lane_pattern, "REPLICA": replica, "SASS_VARIANT": sass,
    })


# 128 rows -> lanes 0-127, 8 columns each.
Cp128x256b = attrs.frozen(repr=False)(_form("Cp128x256b", "128x256b", "", 128, 256, Layout(128, TLane), None, ""))
# 4 rows -> one lane in each warp quadrant (lanes L, L+32, L+64, L+96).
Cp4x256b = attrs.frozen(repr=False)(_form("Cp4x256b", "4x256b", "", 4, 256, Layout(4, 32 * TLane), None,
                                          ".4dp256bit"))
# 128 rows -> lanes 0-127, 4 columns each.
Cp128x128b = attrs.frozen(repr=False)(_form("Cp128x128b", "128x128b", "", 128, 128, Layout(128, TLane), None,
                                            ".128dp128bit"))
# Warp pairs {0,2} and {1,3}: rows 0-31 -> quadrants 0 and 2, rows 32-63 -> quadrants 1 and 3.
Cp64x128bWarpx2_02_13 = attrs.frozen(repr=False)(_form(
    "Cp64x128bWarpx2_02_13", "64x128b", "warpx2::02_13", 64, 128, Layout(64, TLane), Layout(2, 64 * TLane),
    ".2x64dp128bit_lw02_lw13"))
# Warp pairs {0,1} and {2,3}: rows 0-31 -> quadrants 0 and 1, rows 32-63 -> quadrants 2 and 3.
Cp64x128bWarpx2_01_23 = attrs.frozen(repr=False)(_form(
    "Cp64x128bWarpx2_01_23", "64x128b", "warpx2::01_23", 64, 128, Layout((32, 2), (TLane, 64 * TLane)),
    Layout(2, 32 * TLane), ".2x64dp128bit_lw01_lw23"))
# 32 rows -> the same lanes of all four quadrants.
Cp32x128bWarpx4 = attrs.frozen(repr=False)(_form(
    "Cp32x128bWarpx4", "32x128b", "warpx4", 32, 128, Layout(32, TLane), Layout(4, 32 * TLane), ".4x32dp128bit"))

#: The six forms, widest first: the planner's candidate order (fewest instructions first).
TCGEN05_CP_FORMS = (Cp128x256b, Cp4x256b, Cp128x128b, Cp64x128bWarpx2_02_13, Cp64x128bWarpx2_01_23,
                    Cp32x128bWarpx4)
#: All twelve concrete atoms: the six forms for cta_group 1, then for cta_group 2, each widest first.
TCGEN05_CP_ATOMS = tuple(form(cta_group=g) for g in (1, 2) for form in TCGEN05_CP_FORMS)


def cp_candidates(cta_group: int) -> tuple:
    """The six atoms of ``cta_group`` in candidate (widest-first) order."""
    return tuple(a for a in TCGEN05_CP_ATOMS if a.cta_group == cta_group)


def find_cp_atom(shape: str, multicast: str = "", cta_group: int = 1) -> Tcgen05CpAtom:
    """The atom of a (shape, multicast, cta_group) triple, or a PlanError naming what is legal."""
    if shape not in LEGAL_MULTICASTS:
        raise PlanError(f"unknown tcgen05.cp shape {shape!r}; legal shapes: {', '.join(LEGAL_MULTICASTS)}")
    multicast = multicast or ""
    if multicast not in LEGAL_MULTICASTS[shape]:
        legal = " or ".join(repr(m) for m in LEGAL_MULTICASTS[shape] if m) or "none"
        raise PlanError(f"illegal multicast {multicast!r} for tcgen05.cp shape {shape!r}; legal: {legal}")
    for atom in cp_candidates(cta_group):
        if atom.SHAPE == shape and atom.MULTICAST == multicast:
            return atom
    raise PlanError(f"cta_group must be 1 or 2, got {cta_group!r}")  # pragma: no cover - validated above


_CP_RE = re.compile(r"^tcgen05\.cp\.cta_group::(?P<group>[12])\.(?P<shape>\d+x\d+b)"
                    r"(?:\.(?P<mc>warpx2::02_13|warpx2::01_23|warpx4))?"
                    r"(?:\.(?P<dst>b8x16)\.(?P<src>b6x16_p32|b4x16_p64))?$")


def parse_cp_ptx(ptx: str) -> tuple[Tcgen05CpAtom, str | None]:
    """``(atom, decompression)`` of a ``tcgen05.cp`` opcode string; a PlanError for any illegal form."""
    m = _CP_RE.match(ptx.strip())
    if not m:
        raise PlanError(f"not a tcgen05.cp opcode: {ptx!r}")
    atom = find_cp_atom(m["shape"], m["mc"] or "", int(m["group"]))
    fmt = f"{m['dst']}.{m['src']}" if m["dst"] else None
    return atom, fmt
