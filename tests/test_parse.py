import pytest
from hypothesis import given

from pycute import ComposedLayout, E, Layout, LayoutError, Swizzle
from pycute.parse import parse_layout

from .test_layout_properties import layouts


@pytest.mark.parametrize("text,layout", [
    ("(4,8):(8,1)", Layout((4, 8), (8, 1))),
    ("(2,(2,4)):(1,(2,4))", Layout((2, (2, 4)), (1, (2, 4)))),
    ("1:0", Layout(1, 0)),
    ("(4,8)", Layout((4, 8))),
    ("(32,16):(1@TLane,1@TCol)", Layout((32, 16), (E("TLane"), E("TCol")))),
    ("4:32@TLane", Layout(4, 32 * E("TLane"))),
    ("Sw<3,3,3> o (128,64):(64,1)", ComposedLayout(Swizzle(3, 3, 3), 0, Layout((128, 64), (64, 1)))),
    ("Sw<3,4,3> o 0 o (8,64):(64,1)", ComposedLayout(Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1)))),
])
def test_parses_cute_notation(text, layout):
    assert parse_layout(text) == layout


@given(layouts())
def test_round_trips_what_pycute_prints(layout):
    assert parse_layout(repr(layout)) == layout


@pytest.mark.parametrize("text", ["(4,8):(8,1", "(4,8):(8;1)", "(4,8):(1,2,3)", "4:2 junk"])
def test_malformed_layouts_are_layout_errors(text):
    with pytest.raises(LayoutError):
        parse_layout(text)
