import pytest

from pycute import Layout, PlanError
from pycute.arch.sm100 import TLane
from pycute.atoms import (TCGEN05_CP_ATOMS, TCGEN05_CP_FORMS, Cp4x256b, Cp32x128bWarpx4, Cp64x128bWarpx2_01_23,
                          Cp64x128bWarpx2_02_13, Cp128x128b, Cp128x256b, TmemLoadAtom, cp_candidates, find_cp_atom,
                          parse_cp_ptx)

# The PTX destination table (spec note section 4), written out as closed forms of source row r.
CLOSED_FORM_LANES = {
    "128x256b": lambda r: [r],
    "128x128b": lambda r: [r],
    "4x256b": lambda r: [32 * r],
    "64x128b.warpx2::02_13": lambda r: [r, r + 64],
    "64x128b.warpx2::01_23": lambda r: [64 * (r // 32) + r % 32, 64 * (r // 32) + r % 32 + 32],
    "32x128b.warpx4": lambda r: [r + 32 * w for w in range(4)],
}
SASS = {"128x256b": "UTCCP.T.S", "4x256b": "UTCCP.T.S.4dp256bit", "128x128b": "UTCCP.T.S.128dp128bit",
        "64x128b.warpx2::02_13": "UTCCP.T.S.2x64dp128bit_lw02_lw13",
        "64x128b.warpx2::01_23": "UTCCP.T.S.2x64dp128bit_lw01_lw23", "32x128b.warpx4": "UTCCP.T.S.4x32dp128bit"}


def test_registry_has_twelve_atoms_widest_first():
    assert len(TCGEN05_CP_ATOMS) == 12
    names = [a.name for a in cp_candidates(1)]
    assert names == ["128x256b", "4x256b", "128x128b", "64x128b.warpx2::02_13", "64x128b.warpx2::01_23",
                     "32x128b.warpx4"]
    assert [a.name for a in cp_candidates(2)] == names
    assert {a.cta_group for a in TCGEN05_CP_ATOMS} == {1, 2}


@pytest.mark.parametrize("atom", TCGEN05_CP_ATOMS, ids=lambda a: a.ptx)
def test_atom_ptx_and_sass(atom):
    assert atom.ptx == f"tcgen05.cp.cta_group::{atom.cta_group}.{atom.name}"
    expected = SASS[atom.name]
    if atom.cta_group == 2:
        expected = expected.replace("UTCCP.T.S", "UTCCP.T.S.2CTA")
    assert atom.sass == expected


@pytest.mark.parametrize("atom", TCGEN05_CP_ATOMS, ids=lambda a: a.ptx)
def test_atom_lanes_match_the_ptx_table(atom):
    form = CLOSED_FORM_LANES[atom.name]
    assert all(list(atom.lanes(r)) == form(r) for r in range(atom.rows))


@pytest.mark.parametrize("atom", [a for a in TCGEN05_CP_ATOMS if a.multicast], ids=lambda a: a.ptx)
def test_multicast_forms_write_every_lane_exactly_once(atom):
    lanes = [lane for r in range(atom.rows) for lane in atom.lanes(r)]
    assert sorted(lanes) == list(range(128))


def test_geometry():
    assert (Cp128x256b().rows, Cp128x256b().bits, Cp128x256b().bytes, Cp128x256b().columns) == (128, 256, 4096, 8)
    assert (Cp4x256b().bytes, Cp128x128b().bytes, Cp64x128bWarpx2_02_13().bytes, Cp32x128bWarpx4().bytes) == \
        (128, 2048, 1024, 512)


def test_lane_and_replica_patterns_as_layouts():
    assert Cp128x256b().lane_pattern == Layout(128, TLane) and Cp128x256b().replica is None
    assert Cp4x256b().lane_pattern == Layout(4, 32 * TLane)
    assert Cp64x128bWarpx2_02_13().lane_pattern == Layout(64, TLane)
    assert Cp64x128bWarpx2_02_13().replica == Layout(2, 64 * TLane)
    assert Cp64x128bWarpx2_01_23().lane_pattern == Layout((32, 2), (TLane, 64 * TLane))
    assert Cp64x128bWarpx2_01_23().replica == Layout(2, 32 * TLane)
    assert Cp32x128bWarpx4().replica == Layout(4, 32 * TLane)


def test_thread_value_layouts():
    atom = Cp32x128bWarpx4(cta_group=2)
    assert atom.thr_id == Layout(2)
    assert repr(atom.src_tv) == "(2,(128,32,4)):(0,(1,128,0))"          # replicas re-read the same bits
    assert repr(atom.dst_tv) == "(2,((32,4),32,4)):(0,((1@TBit,1@TCol),1@TLane,32@TLane))"


def test_atoms_are_hashable_values_with_readable_repr():
    assert Cp128x256b() == Cp128x256b(cta_group=1) and len({Cp128x256b(), Cp128x256b(1)}) == 1
    assert repr(Cp32x128bWarpx4()) == "Cp32x128bWarpx4(cta_group=1)  # tcgen05.cp.cta_group::1.32x128b.warpx4"


def test_each_form_is_its_own_class():
    assert len(set(TCGEN05_CP_FORMS)) == 6 and all(isinstance(f(), f) for f in TCGEN05_CP_FORMS)


def test_module_names_bind_the_class_of_their_form():
    import pycute.atoms.tcgen05_cp as module
    assert all(getattr(module, cls.__name__) is cls for cls in TCGEN05_CP_FORMS)


def test_find_and_parse():
    assert find_cp_atom("64x128b", "warpx2::01_23", 2) == Cp64x128bWarpx2_01_23(cta_group=2)
    assert parse_cp_ptx("tcgen05.cp.cta_group::1.32x128b.warpx4") == (Cp32x128bWarpx4(), None)
    assert parse_cp_ptx("tcgen05.cp.cta_group::2.128x256b.b8x16.b4x16_p64") == (Cp128x256b(2), "b8x16.b4x16_p64")


@pytest.mark.parametrize("args,message", [
    (("96x128b",), "unknown tcgen05.cp shape '96x128b'; legal shapes: 128x256b, 4x256b, 128x128b, 64x128b, 32x128b"),
    (("128x256b", "warpx4"), "illegal multicast 'warpx4' for tcgen05.cp shape '128x256b'; legal: none"),
    (("64x128b", ""), "illegal multicast '' for tcgen05.cp shape '64x128b'"),
])
def test_find_rejects_illegal_forms(args, message):
    with pytest.raises(PlanError, match=message.replace("(", r"\(")):
        find_cp_atom(*args)


def test_bad_cta_group():
    with pytest.raises(PlanError, match="cta_group must be 1 or 2, got 3"):
        Cp128x256b(cta_group=3)


def test_tmem_load_atoms():
    ld = TmemLoadAtom("32x32b", 8)
    assert ld.ptx == "tcgen05.ld.sync.aligned.32x32b.x8.b32" and ld.registers == 8 and ld.sass == "LDTM.x8"
    assert ld.cell(5, 3) == (5, 3)
    assert TmemLoadAtom("16x256b", 1).registers == 4 and TmemLoadAtom("16x128b", 2).registers == 4
    assert TmemLoadAtom("16x64b", 1).cell(3, 0) == (8, 1)      # (3>>2) + 8*(3&1), (3>>1)&1
    with pytest.raises(PlanError, match=r"16x256b.x64 is illegal"):
        TmemLoadAtom("16x256b", 64)
