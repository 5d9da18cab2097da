import pytest

from pycute import PlanError
from pycute.arch.sm100 import (TCol, TLane, alloc_columns_for, check_alloc_columns, lane_quadrant, split_address,
                                tmem_address)


def test_tmem_axes_print_as_named_bases():
    assert repr(TLane) == "1@TLane" and repr(16 * TCol) == "16@TCol"


def test_address_packs_lane_high_column_low():
    assert tmem_address(32, 8) == 32 << 16 | 8
    assert split_address(tmem_address(127, 511)) == (127, 511)


def test_address_outside_tmem_is_refused():
    with pytest.raises(PlanError, match="lane 128, column 0"):
        tmem_address(128, 0)


@pytest.mark.parametrize("n", [32, 64, 128, 256, 512])
def test_legal_allocations(n):
    assert check_alloc_columns(n) == n


@pytest.mark.parametrize("n", [16, 33, 48, 1024])
def test_illegal_allocations(n):
    with pytest.raises(PlanError, match=f"allocation of {n} columns is illegal"):
        check_alloc_columns(n)


def test_smallest_allocation_holding_some_columns():
    assert [alloc_columns_for(n) for n in (1, 32, 33, 64, 100, 512)] == [32, 32, 64, 64, 128, 512]
    with pytest.raises(PlanError, match="513 TMEM columns cannot be allocated"):
        alloc_columns_for(513)


def test_warp_lane_quadrants():
    assert [lane_quadrant(w) for w in (0, 1, 2, 3, 5)] == [range(0, 32), range(32, 64), range(64, 96),
                                                             range(96, 128), range(32, 64)]
