"""The ``tcgen05.cp`` forms (PTX #tcgen05-instructions-tcgen05-cp), as one table.

Each form is a shape ``<rows>x<bits>b`` with the multicast qualifier PTX requires of it, the map from a source
row to its TMEM lane(s), and the SASS variant ptxas assembles it to. Row -> lane maps follow the PTX multicast
definitions, CUTLASS's ``SM100_UTCCP_*`` traits and TVM's B200 round trips (docs/ptx-tcgen05.md section 4):

* ``lane_pattern`` (a layout on ``TLane``) maps a row index to its lane offset;
* ``replica`` maps a multicast copy index to an added lane offset (None for forms without multicast).

TVM writes the 01_23 pattern outer-mode-first as ``(2,32):(64,1)``; in cuTe's column-major order the same
row -> lane map is ``(32,2):(1,64)``.
"""
from __future__ import annotations

import functools
import re

import attrs

from ...basis import basis_get
from ...layout import Layout, coalesce
from .tmem import CTA_GROUPS, TLane

__all__ = ["CpForm", "CP_FORMS", "CTA_GROUPS", "LEGAL_MULTICASTS", "DECOMPRESSIONS", "PAIR_CTA_MASK",
           "parse_cp_opcode", "commit_ptx", "FP4_DECOMPRESSION", "FP6_DECOMPRESSION", "DECOMPRESS_ELEMENTS",
           "FP4_CONTAINER_SHIFT", "FP6_REFUSAL", "decompression_sass"]

PAIR_CTA_MASK = 0b11      # cta_group::2 commits signal the mbarrier of both CTAs of the pair
DECOMPRESSIONS = ("b8x16.b6x16_p32", "b8x16.b4x16_p64")   # .dst_fmt.src_fmt pairs [V-PTX]
# Decompression (PTX #tcgen05-optional-decompression; docs/tcgen05-cp-decompression.md sections 2-3): a 16-byte
# source unit holds 16 elements, then padding; each element becomes one TMEM byte. For .b4x16_p64 element i is bits
# [4i+3:4i] of bytes 0-7 (bytes 8-15 are ignored) and lands in bits [5:2] of its byte, the others zero: measured on
# GB300 for codes 0-7 and stated by CUTLASS; that the sign bit (code bit 3) lands at bit 5 is inferred.
FP4_DECOMPRESSION = "b8x16.b4x16_p64"
FP6_DECOMPRESSION = "b8x16.b6x16_p32"
DECOMPRESS_ELEMENTS = 16
FP4_CONTAINER_SHIFT = 2
FP6_REFUSAL = ("the 6-bit container placement -- bits [5:0] or [6:1] of the TMEM byte -- is not pinned by any public "
               "source (the PTX figures are images; CUTLASS's docstring and the indirect evidence disagree: "
               "docs/tcgen05-cp-decompression.md section 3.2), so pycute refuses .b8x16.b6x16_p32 rather than guess; "
               "tests/gpu/test_decompression_probe.py settles it on an sm_100 machine")
_DECOMPRESSION_SASS = {FP4_DECOMPRESSION: ".U4x16P64", FP6_DECOMPRESSION: ".U6x16P32"}


def decompression_sass(fmt: str | None) -> str:
    """The UTCCP suffix ptxas gives a decompressing copy (toolchain notes: ``.U4x16P64`` / ``.U6x16P32``)."""
    return _DECOMPRESSION_SASS[fmt] if fmt else ""


@attrs.frozen
class CpForm:
    """One ``tcgen05.cp`` (shape, multicast) form."""

    shape: str
    multicast: str
    lane_pattern: Layout         # both written coalesced: the planner reads their modes and compares a tensor's
    replica: Layout | None       # coalesced replica with ==
    sass_variant: str
    rows: int = attrs.field(init=False, repr=False)
    bits: int = attrs.field(init=False, repr=False)    # per row
    name: str = attrs.field(init=False, repr=False)    # ``shape[.multicast]``, e.g. ``64x128b.warpx2::02_13``

    def __attrs_post_init__(self):
        # The geometry is read on every planner rule, so the shape name is parsed once, here.
        rows, bits = self.shape.split("x")
        object.__setattr__(self, "rows", int(rows))
        object.__setattr__(self, "bits", int(bits.rstrip("b")))
        object.__setattr__(self, "name", self.shape + (f".{self.multicast}" if self.multicast else ""))
        for what, layout in (("lane_pattern", self.lane_pattern), ("replica", self.replica)):
            if layout is not None and coalesce(layout) != layout:
                raise ValueError(f"CpForm {self.name}: {what} {layout!r} must be written coalesced")

    def ptx(self, cta_group: int) -> str:
        """The full opcode, e.g. ``tcgen05.cp.cta_group::1.64x128b.warpx2::02_13``."""
        return f"tcgen05.cp.cta_group::{cta_group}.{self.name}"

    def sass(self, cta_group: int) -> str:
        """The SASS opcode, e.g. ``UTCCP.T.S.2CTA.4x32dp128bit`` (docs/toolchain-cpu-only.md section 3)."""
        return "UTCCP.T.S" + (".2CTA" if cta_group == 2 else "") + self.sass_variant

    @property
    def lane_table(self) -> tuple:
        """``lane_table[row]``: the lane offsets (one per replica) source row ``row`` is written to."""
        return _lane_table(self)

    @property
    def max_lane(self) -> int:
        """The largest lane offset any row reaches (replicas included)."""
        return _max_lane(self)


@functools.lru_cache(maxsize=None)
def _max_lane(form: CpForm) -> int:
    return max(max(lanes) for lanes in _lane_table(form))


@functools.lru_cache(maxsize=None)
def _lane_table(form: CpForm) -> tuple:
    reps = [0] if form.replica is None else [basis_get(form.replica(k), "TLane") for k in range(form.replica.size())]
    return tuple(tuple(basis_get(form.lane_pattern(r), "TLane") + rep for rep in reps) for r in range(form.rows))


#: The six forms, widest first: the planner's candidate order (fewest instructions first).
CP_FORMS = (
    # 128 rows -> lanes 0-127, 8 columns each.
    CpForm("128x256b", "", Layout(128, TLane), None, ""),
    # 4 rows -> one lane in each warp quadrant (lanes L, L+32, L+64, L+96).
    CpForm("4x256b", "", Layout(4, 32 * TLane), None, ".4dp256bit"),
    # 128 rows -> lanes 0-127, 4 columns each.
    CpForm("128x128b", "", Layout(128, TLane), None, ".128dp128bit"),
    # Warp pairs {0,2} and {1,3}: rows 0-31 -> quadrants 0 and 2, rows 32-63 -> quadrants 1 and 3.
    CpForm("64x128b", "warpx2::02_13", Layout(64, TLane), Layout(2, 64 * TLane), ".2x64dp128bit_lw02_lw13"),
    # Warp pairs {0,1} and {2,3}: rows 0-31 -> quadrants 0 and 1, rows 32-63 -> quadrants 2 and 3.
    CpForm("64x128b", "warpx2::01_23", Layout((32, 2), (TLane, 64 * TLane)), Layout(2, 32 * TLane),
           ".2x64dp128bit_lw01_lw23"),
    # 32 rows -> the same lanes of all four quadrants.
    CpForm("32x128b", "warpx4", Layout(32, TLane), Layout(4, 32 * TLane), ".4x32dp128bit"),
)

#: Shape -> the multicast qualifiers PTX allows with it ('' = none) [V-PTX].
LEGAL_MULTICASTS: dict[str, tuple[str, ...]] = {}
for _form in CP_FORMS:
    LEGAL_MULTICASTS.setdefault(_form.shape, ())
    LEGAL_MULTICASTS[_form.shape] += (_form.multicast,)

_OPCODE = re.compile(
    r"^tcgen05\.cp\.cta_group::(?P<group>\d+)\.(?P<shape>\d+x\d+b)"
    r"(?:\.(?P<mc>" + "|".join(re.escape(f.multicast) for f in CP_FORMS if f.multicast) + r"))?"
    r"(?:\.(?P<fmt>" + "|".join(re.escape(d) for d in DECOMPRESSIONS) + r"))?$")


def parse_cp_opcode(ptx: str) -> tuple[int, str, str, str | None] | None:
    """``(cta_group, shape, multicast, decompression)`` spelled by a ``tcgen05.cp`` opcode, or None."""
    m = _OPCODE.match(ptx.strip())
    if not m:
        return None
    return int(m["group"]), m["shape"], m["mc"] or "", m["fmt"]


def commit_ptx(cta_group: int) -> str:
    """The opcode that commits the issuing thread's copies to an mbarrier (#tcgen-async-sync-operations-commit);
    for cta_group::2 it multicasts to the mbarriers of the CTAs in a 16-bit mask (``PAIR_CTA_MASK``)."""
    if cta_group == 1:
        return "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"
    return "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64"
