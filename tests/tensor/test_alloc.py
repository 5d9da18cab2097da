"""TMEM placement: several tensors in one allocation, and plans that see each tensor's real columns."""
import numpy as np
import pytest

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.sim import Sm100Emulator

ACC = Layout((128, 256), (TLane, TCol))
SF = Layout(((32, 4), 4), ((TLane, 4 * TCol), TCol))
QUADRANTS = Layout(4, 32 * TLane)


def sf_src():
    return pc.make_smem_tensor(pc.u8, Layout(((32, 4), 4), ((16, 4), 1)))


def test_tensors_go_side_by_side_and_the_allocation_is_the_alloc_operand():
    alloc = pc.TmemAllocation()
    acc = alloc.add(pc.f32, ACC, name="acc")
    sfa = alloc.add(pc.u8, SF, replica=QUADRANTS, name="sfa")
    sfb = alloc.add(pc.u8, Layout(((32, 8), 4), ((TLane, 4 * TCol), TCol)), replica=QUADRANTS, name="sfb")
    assert [(t.placement.column, t.placement.width) for t in alloc] == [(0, 256), (256, 4), (260, 8)]
    assert alloc.columns == 512 and alloc.used == 268
    assert sfa.col_offset == 256 * 4 and alloc["sfb"] is sfb and acc.columns == 256


@pytest.mark.parametrize("used,columns", [(1, 32), (32, 32), (33, 64), (200, 256), (257, 512)])
def test_the_allocation_is_the_smallest_legal_power_of_two(used, columns):
    alloc = pc.TmemAllocation()
    alloc.add(pc.f32, Layout((128, used), (TLane, TCol)))
    assert alloc.columns == columns


def test_a_plan_into_a_tensor_at_column_256_issues_and_writes_only_there():
    alloc = pc.TmemAllocation()
    sf = alloc.add(pc.u8, SF, replica=QUADRANTS, column=256, name="sf")
    plan = pc.make_tiled_copy(sf, sf_src())
    assert [i.column for i in plan.instructions] == [256] and plan.tmem_columns == (256, 260)
    assert [t for _, t, _ in plan.stream(0, 0)] == [256]
    pc.verify_plan(plan)
    emu = Sm100Emulator(smem_bytes=1024, fill_tmem=0xA5A5A5A5)
    emu.write_smem(0, np.arange(1024, dtype=np.uint8) % 251 + 1)
    emu.run(plan.stream(0, emu.alloc(alloc.columns)))
    written = np.argwhere(emu.tmem_image() != 0xA5A5A5A5)
    assert set(written[:, 1]) == {256, 257, 258, 259} and len(written) == 128 * 4


def test_overlap_is_refused_naming_both_tensors():
    alloc = pc.TmemAllocation()
    alloc.add(pc.f32, ACC, name="acc")
    with pytest.raises(pc.PlanError, match=r"'sfa' at columns \[252, 256\).*overlaps 'acc' at columns \[0, 256\)"):
        alloc.add(pc.u8, SF, replica=QUADRANTS, column=252, name="sfa")


def test_an_explicit_column_beside_a_tensor_is_kept_and_one_over_it_refused():
    alloc = pc.TmemAllocation()
    alloc.add(pc.f32, Layout((64, 32), (TLane, TCol)), name="top")
    assert alloc.add(pc.f32, Layout((64, 32), (TLane, TCol)), column=32, name="beside").placement.column == 32
    with pytest.raises(pc.PlanError, match="overlaps 'top'"):
        alloc.add(pc.f32, Layout((64, 32), (TLane, TCol)), column=0, name="again")


def test_overflow_past_512_columns_is_refused_naming_the_placed_tensors():
    alloc = pc.TmemAllocation()
    alloc.add(pc.f32, ACC, name="acc0")
    alloc.add(pc.f32, ACC, name="acc1")
    with pytest.raises(pc.PlanError, match=r"'sf' \(4 columns at column 512\) ends at column 516, past TMEM's 512 "
                                           r"columns \(placed: @acc0"):
        alloc.add(pc.u8, SF, replica=QUADRANTS, name="sf")


def test_a_misaligned_column_is_refused():
    with pytest.raises(pc.PlanError, match="'sf' at column 2 is misaligned: tensors start on a multiple of 4"):
        pc.TmemAllocation().add(pc.u8, SF, replica=QUADRANTS, column=2, name="sf")


def test_names_are_unique_and_types_checked():
    alloc = pc.TmemAllocation()
    alloc.add(pc.f32, ACC, name="acc")
    with pytest.raises(pc.PlanError, match="'acc' is already placed"):
        alloc.add(pc.f32, ACC, name="acc")
    with pytest.raises(TypeError, match="column must be an integer"):
        alloc.add(pc.f32, ACC, column=4.0)
    with pytest.raises(TypeError, match="cta_group must be an integer"):
        pc.TmemAllocation(cta_group="2")


def test_a_copy_of_another_cta_group_is_refused():
    sf = pc.TmemAllocation(cta_group=2).add(pc.u8, SF, replica=QUADRANTS, name="sf")
    with pytest.raises(pc.PlanError, match="placed in a cta_group::2 allocation, but the copy is cta_group::1"):
        pc.make_tiled_copy(sf, sf_src(), cta_group=1)
    assert pc.make_tiled_copy(sf, sf_src(), cta_group=2).cta_group == 2


def test_make_tmem_tensor_with_columns_is_still_a_one_tensor_allocation():
    t = pc.make_tmem_tensor(pc.u8, SF, replica=QUADRANTS, columns=32)
    assert t.placement is None and pc.make_tiled_copy(t, sf_src()).tmem_columns == (0, 4)
