import pytest

from pycute import E, Layout, LayoutError, coalesce, composition, logical_divide, slice_and_offset
from pycute.basis import basis_get

TLane, TCol = E("TLane"), E("TCol")


def test_scaled_basis_prints_like_cute():
    assert repr(1 * E(0)) == "1@0"
    assert repr(3 * TLane) == "3@TLane"
    assert repr(Layout((32, 16), (1 * TLane, 1 * TCol))) == "(32,16):(1@TLane,1@TCol)"


def test_basis_arithmetic():
    v = 3 * TLane + 2 * TCol
    assert basis_get(v, "TLane") == 3 and basis_get(v, "TCol") == 2
    assert v - 3 * TLane == 2 * TCol
    assert 0 * TLane == 0
    assert 2 * v == 6 * TLane + 4 * TCol


def test_basis_layout_evaluates_to_a_point_of_the_codomain():
    tmem = Layout((32, 16), (TLane, TCol))
    assert tmem(5, 7) == 5 * TLane + 7 * TCol
    assert tmem(37) == 5 * TLane + 1 * TCol


def test_negation_absolute_value_and_exact_division():
    v = 6 * TLane - 4 * TCol
    assert -v == -6 * TLane + 4 * TCol and abs(v) == 6 * TLane + 4 * TCol
    assert v // 2 == 3 * TLane - 2 * TCol
    with pytest.raises(LayoutError, match="is not divisible by 4"):
        v // 4


def test_adding_an_integer_offset_to_a_basis_value_is_refused():
    with pytest.raises(LayoutError, match="cannot add the integer 3"):
        TLane + 3


def test_coalesce_merges_along_one_axis_only():
    assert coalesce(Layout((4, 8), (TCol, 4 * TCol))) == Layout(32, TCol)
    assert coalesce(Layout((4, 8), (TLane, 4 * TCol))) == Layout((4, 8), (TLane, 4 * TCol))


def test_composition_with_integer_layout_on_the_right():
    tmem = Layout((32, 16), (TLane, TCol))
    assert composition(tmem, Layout((4, 8), (1, 32))) == Layout((4, 8), (TLane, 1 * TCol))
    assert composition(tmem, (Layout(8, 4), None)) == Layout((8, 16), (4 * TLane, TCol))


def test_divide_and_slice_basis_layouts():
    tmem = Layout((32, 16), (TLane, TCol))
    assert logical_divide(tmem, (8, 4)) == Layout(((8, 4), (4, 4)), ((TLane, 8 * TLane), (TCol, 4 * TCol)))
    sub, off = slice_and_offset((3, None), tmem)
    # CuTe keeps the sliced result a tuple of the kept modes: rank 1, not a bare mode.
    assert sub == Layout((16,), (TCol,)) and off == 3 * TLane


def test_complement_of_a_basis_layout_is_refused():
    from pycute import complement
    with pytest.raises(LayoutError, match="scaled-basis stride"):
        complement(Layout(4, TLane), 8)
