"""The grouped TMA example (examples/grouped_tma.py): groups at rows 0, 77, 300, 811; its sm_90a build holds the
planned TMA instructions; the PTX interpreter runs every work item's issuing thread, and the emulator, replaying the
retarget edits (the maps as fields), loads and stores, gives both tiles and C as the layouts say; a map retargeted
without the group's row count is caught reading past the array (the check is not vacuous). The H200 run is in tests/gpu/test_gpu_tma.py."""
import pytest

import pycute as pc
from examples.grouped_tma import GROUPS, GroupedTma


@pytest.fixture(scope="module")
def example():
    return GroupedTma()


def test_the_groups_start_at_rows_that_are_not_tile_multiples(example):
    assert [r for r, _ in GROUPS] == [0, 77, 300, 811] and len(example.work()) == 18


def test_the_sm_90a_build_holds_the_planned_loads_stores_and_retargets(example):
    h = example.compile("sm_90a").histogram()
    entries = 2                                   # grouped and grouped_one inline the same tile function
    assert h.get("UTMALDG.2D") == 2 * entries and h.get("UTMASTG.2D") == entries
    assert "BPT.TRAP" in example.compile("sm_90a", checked=True).histogram()


def test_every_work_item_interpreted_and_emulated_loads_and_stores_as_the_layouts_say(example):
    example.check_on_cpu(seed=3)


def test_a_map_not_bounded_to_its_group_is_caught(example):
    class Unbounded(GroupedTma):
        def __init__(self):
            super().__init__()
            self.retarget_a = self.load.retarget()            # only the address: rows past the group load too
    # the last group's map then spans 1024 rows from row 811: its tiles read past A's end
    with pytest.raises(pc.EmulationError, match="lies past the 262144-byte array"):
        Unbounded().check_on_cpu()
