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


@pytest.mark.parametrize("text,layout", [
    ("(_4,_8):(_1,_4)", Layout((4, 8), (1, 4))),                               # CuTe C++ static integers
    ("Sw<3,4,3> o _0 o (_8,_64):(_64,_1)", ComposedLayout(Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1)))),
    ("S<3,4,3> o 0 o (8,64):(64,1)", ComposedLayout(Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1)))),   # CuTe DSL
    ("Sw<3,3,3> o 5 o (8,64):(64,1)", ComposedLayout(Swizzle(3, 3, 3), 5, Layout((8, 64), (64, 1)))),
    ("(_32,_16):(_1@0,_1@1)", Layout((32, 16), (E(0), E(1)))),
    ("smem_ptr[8b](unset) o (4,8):(8,1)", Layout((4, 8), (8, 1))),
])
def test_parses_what_cute_and_the_dsl_print(text, layout):
    assert parse_layout(text) == layout


@pytest.mark.parametrize("text,element_swizzle", [
    # CuTe C++ applies a pointer's swizzle to byte addresses; pycute's swizzle acts on element offsets
    ("Sw<3,4,3> o smem_ptr[16b](unset) o ((_8,_16),(_64,_1)):((_64,_512),(_1,_0))", Swizzle(3, 3, 3)),
    ("Sw<3,4,3> o smem_ptr[8b](unset) o (_8,_128):(_128,_1)", Swizzle(3, 4, 3)),
    ("Sw<2,5,2> o smem_ptr[32b](0x7f0000) o (_32,_4):(_1,_32)", Swizzle(2, 3, 2)),
])
def test_a_pointer_s_byte_address_swizzle_becomes_the_element_swizzle(text, element_swizzle):
    assert parse_layout(text).outer == element_swizzle


def test_a_byte_swizzle_finer_than_an_element_is_refused_with_the_conversion():
    with pytest.raises(LayoutError, match=r"on element offsets it would be Sw<3,1-2,3>, which is not a swizzle"):
        parse_layout("Sw<3,1,3> o smem_ptr[32b](unset) o (8,32):(32,1)")
