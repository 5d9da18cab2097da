"""Layout values and the algebra on the worked examples of the cuTe documentation.

Every expected value below was derived by hand from cuTe's definitions (the derivation is in the comment) and
agrees with the CuTe DSL (``tests/parity`` holds the DSL's own answers for thousands of inputs).
"""
import pytest

import pycute as pc

from pycute import (Layout, LayoutError, blocked_product, coalesce, complement, composition, cosize, depth, downcast,
                    filter, flat_divide, flat_product, left_inverse, logical_divide, logical_product, make_layout,
                    make_ordered_layout, max_common_layout, max_common_vector, raked_product, rank, recast,
                    right_inverse, size, slice_and_offset, tile_to_shape, tiled_divide, tiled_product, upcast,
                    zipped_divide, zipped_product, bf16, u8, f32)

L = Layout


# -- values ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout,text", [(L((4, 8), (8, 1)), "(4,8):(8,1)"),
                                         (L((2, (2, 4)), (1, (2, 4))), "(2,(2,4)):(1,(2,4))"),
                                         (L(1, 0), "1:0"), (L(4, 2), "4:2")])
def test_repr_matches_cute(layout, text):
    assert repr(layout) == text and str(layout) == text


def test_default_strides_are_column_major():
    assert make_layout((4, 8)) == L((4, 8), (1, 4))
    assert L((2, (3, 4))).stride == (1, (2, 6))


def test_layouts_are_immutable_hashable_values():
    a, b = L((4, 8), (8, 1)), L([4, 8], [8, 1])
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    with pytest.raises(AttributeError):
        a.shape = (2, 2)


def test_queries():
    a = L((2, (3, 4)), (12, (1, 3)))
    assert size(a) == 24 and a.size() == 24
    assert rank(a) == 2 and len(a) == 2
    assert depth(a) == 2 and depth(L(4, 1)) == 0
    assert cosize(a) == 12 + 2 + 9 + 1
    assert a[1] == L((3, 4), (1, 3))
    assert a.shape == (2, (3, 4)) and a.stride == (12, (1, 3))


def test_call_maps_int_and_hierarchical_coordinates():
    a = L((4, 8), (8, 1))
    assert a(5) == 8 * 1 + 1 * 1  # 5 -> (1, 1)
    assert a(1, 3) == 8 + 3
    assert a((1, 3)) == 11


def test_slicing_with_none_gives_sublayout_and_offset():
    # As in CuTe, the kept modes stay a tuple: one kept mode is a one-mode layout (4):(8).
    a = L((4, 8), (8, 1))
    assert a(None, 3) == L((4,), (8,))
    sub, offset = slice_and_offset((None, 3), a)
    assert sub == L((4,), (8,)) and offset == 3
    sub, offset = slice_and_offset((2, None), a)
    assert sub == L((8,), (1,)) and offset == 16
    assert slice_and_offset((2, 3), a) == (L((), ()), 19) and slice_and_offset(None, a) == (a, 0)


def test_make_layout_concatenates_modes():
    assert make_layout(L(4, 1), L(8, 4)) == L((4, 8), (1, 4))


def test_bad_construction_names_the_problem():
    with pytest.raises(LayoutError, match="not congruent"):
        L((4, 8), (1,))
    with pytest.raises(LayoutError, match="positive integers"):
        L((4, 0))


# -- coalesce / filter ------------------------------------------------------------------------------------
def test_coalesce_merges_contiguous_modes():
    assert coalesce(L((2, (1, 6)), (1, (6, 2)))) == L(12, 1)
    assert coalesce(L((4, 8), (8, 1))) == L((4, 8), (8, 1))
    assert coalesce(L((2, 2), (0, 0))) == L(4, 0)
    assert coalesce(L((1, 1), (3, 5))) == L(1, 0)


def test_coalesce_by_mode_keeps_rank():
    a = L(((2, 2), (2, 2)), ((1, 2), (4, 16)))
    assert coalesce(a, (1, 1)) == L((4, (2, 2)), (1, (4, 16)))


def test_filter_drops_broadcast_modes():
    assert filter(L((4, 2, 8), (1, 0, 4))) == L(32, 1)


# -- composition ------------------------------------------------------------------------------------------
def test_composition_documentation_example():
    # Mode 4:3 of B: stride 3 divides A's first extent 6 -> 2 left at stride 24, then 2 more from mode 2:2.
    # Mode 3:1 of B: 3 <= 6 elements of mode 6:8 -> 3:8.
    assert composition(L((6, 2), (8, 2)), L((4, 3), (3, 1))) == L(((2, 2), 3), ((24, 2), 8))


def test_composition_with_int_and_tuple_tilers():
    a = L((12, (4, 8)), (59, (13, 1)))
    assert composition(a, 3) == L(3, 59)
    # By-mode: mode 0 takes 3:4 of 12:59 -> 3:236; mode 1 takes 8:1 of (4,8):(13,1) -> (4,2):(13,1).
    assert composition(a, (L(3, 4), L(8, 1))) == L((3, (4, 2)), (236, (13, 1)))
    assert composition(a, (None, 4)) == L((12, 4), (59, 13))


def test_composition_stride_zero_right_operand_broadcasts():
    assert composition(L((4, 8), (8, 1)), L(5, 0)) == L(5, 0)


def test_composition_rejects_shape_divisibility_failure_instead_of_truncating():
    # 6 elements from (4,3):(2,100): 4 from the first mode, then 6/4 is not whole.
    with pytest.raises(LayoutError, match=r"composition\(\(4,3\):\(2,100\), 6:1\): shape divisibility"):
        composition(L((4, 3), (2, 100)), L(6, 1))


def test_composition_rejects_modes_that_carry_into_each_other():
    # Both modes of B land in A's first mode (extent 3): digits 1 + 2 carry, and A(3) = 1 != A(1) + A(2) = 0.
    with pytest.raises(LayoutError, match="overlap in mode 0"):
        composition(L((3, 2), (0, 1)), L((2, 3), (1, 1)))


def test_composition_takes_a_non_dividing_stride_whose_elements_stay_in_the_mode():
    # Stride 4 does not divide the extent 6, but both elements (offsets 0 and 4) lie inside mode 0: CuTe answers.
    assert composition(L((6, 2), (1, 7)), L(2, 4)) == L(2, 4)


def test_composition_refuses_a_non_dividing_stride_whose_elements_run_past_the_mode():
    # CuTe answers (2,2):(21,100), but offset 6 of (4,16):(7,100) is 2*7 + 100, not 100.
    with pytest.raises(LayoutError, match="CuTe's answer would be wrong: stride 3 does not divide"):
        composition(L((4, 16), (7, 100)), L(4, 3))


def test_composition_rejects_stride_divisibility_failure():
    # Stride 3 skips past a mode of extent 2 without landing on a whole number of its elements.
    with pytest.raises(LayoutError, match="stride divisibility fails"):
        composition(L((2, 3, 4), (12, 4, 1)), L(1, 3))


# -- complement and inverses ------------------------------------------------------------------------------
@pytest.mark.parametrize("layout,cotarget,expected", [
    (L(4, 2), 24, L((2, 3), (1, 8))),          # gaps of 2 -> 2:1; then 24/8 = 3 copies at 8
    (L(4, 1), 24, L(6, 4)),
    (L((2, 2), (1, 6)), 24, L((3, 2), (2, 12))),  # sorted 2:1, 2:6 -> 3:2 between them, 24/12 = 2 at 12
    (L(4, 2), None, L(2, 1)),                  # default cotarget cosize = 7 -> ceil(7/8) = 1 dropped
])
def test_complement(layout, cotarget, expected):
    assert complement(layout, cotarget) == expected


def test_complement_rejects_overlapping_layout():
    with pytest.raises(LayoutError, match=r"complement: \(2,2\):\(1,1\) is not injective"):
        complement(L((2, 2), (1, 1)), 8)


def test_right_inverse():
    assert right_inverse(L((4, 8), (8, 1))) == L((8, 4), (4, 1))
    # (2,4):(0,1): only the unit-stride mode is invertible; its domain stride is 2.
    assert right_inverse(L((2, 4), (0, 1))) == L(4, 2)


def test_left_inverse():
    assert left_inverse(L((4, 8), (8, 1))) == L((8, 4), (4, 1))
    # Offsets below the smallest stride map to 0 (CuTe's quasi-inverse): R(2i + k) = i for k in {0, 1}.
    assert left_inverse(L(4, 2)) == L((2, 4), (0, 1))
    # Injective with strides that do not nest: mode 1 (stride 1) spans up to the next stride, 7.
    assert left_inverse(L((2, 3), (7, 1))) == L((7, 2), (2, 1))


def test_left_inverse_of_a_non_injective_layout_is_a_quasi_inverse():
    a = L((4, 2), (0, 1))
    r = left_inverse(a)
    assert r == L(2, 4) and all(a(r(a(i))) == a(i) for i in range(a.size()))


def test_left_inverse_rejects_strides_that_do_not_nest():
    with pytest.raises(LayoutError, match="strides 13 and 59 that do not nest"):
        left_inverse(L((12, (4, 8)), (59, (13, 1))))


# -- divides ----------------------------------------------------------------------------------------------
def test_logical_divide_documentation_example():
    # complement(4:2, 24) = (2,3):(1,8); A o (4:2, (2,3):(1,8)) = ((2,2),(2,3)):((4,1),(2,8)).
    assert logical_divide(L((4, 2, 3), (2, 1, 8)), L(4, 2)) == L(((2, 2), (2, 3)), ((4, 1), (2, 8)))


def test_divides_by_tuple_tiler():
    a = L((9, (4, 8)), (59, (13, 1)))
    tiler = (L(3, 3), L((2, 4), (1, 8)))
    # mode 0: 9:59 / 3:3 -> (3:177, 3:59); mode 1: (4,8):(13,1) / (2,4):(1,8) -> ((2,4):(13,2), (2,2):(26,1)).
    expected = L(((3, 3), ((2, 4), (2, 2))), ((177, 59), ((13, 2), (26, 1))))
    assert logical_divide(a, tiler) == expected
    assert zipped_divide(a, tiler) == L(((3, (2, 4)), (3, (2, 2))), ((177, (13, 2)), (59, (26, 1))))
    assert tiled_divide(a, tiler) == L(((3, (2, 4)), 3, (2, 2)), ((177, (13, 2)), 59, (26, 1)))
    assert flat_divide(a, tiler) == L((3, (2, 4), 3, (2, 2)), (177, (13, 2), 59, (26, 1)))


# -- products ---------------------------------------------------------------------------------------------
def test_logical_product():
    # complement((2,2):(1,2), 4*6) = 6:4; 6:4 o (2,3):(3,1) = (2,3):(12,4).
    assert logical_product(L((2, 2), (1, 2)), L((2, 3), (3, 1))) == L(((2, 2), (2, 3)), ((1, 2), (12, 4)))


def test_logical_product_by_int_is_a_product_not_a_divide():
    assert logical_product(L(2, 1), 3) == L((2, 3), (1, 2))


def test_blocked_and_raked_products_documentation_example():
    block, tiler = L((2, 2), (1, 2)), L((2, 3), (3, 1))
    assert blocked_product(block, tiler) == L(((2, 2), (2, 3)), ((1, 12), (2, 4)))
    assert raked_product(block, tiler) == L(((2, 2), (3, 2)), ((12, 1), (4, 2)))


def test_zipped_tiled_flat_products():
    # By mode: 2:1 x 3:1 -> (2,3):(1,2) (complement within 6); 2:2 x 2:1 -> (2,2):(2,1) (complement within 4).
    a = L((2, 2), (1, 2))
    assert zipped_product(a, (L(3, 1), L(2, 1))) == L(((2, 2), (3, 2)), ((1, 2), (2, 1)))
    assert tiled_product(a, (L(3, 1), L(2, 1))) == L(((2, 2), 3, 2), ((1, 2), 2, 1))
    assert flat_product(a, (L(3, 1), L(2, 1))) == L((2, 2, 3, 2), (1, 2, 2, 1))


# -- common vectors, width changes, ordered layouts ---------------------------------------------------------
def test_max_common_vector_and_layout():
    a = L((8, 4), (1, 8))
    b = L((8, 4), (1, 16))
    assert max_common_vector(a, b) == 8
    assert max_common_layout(a, b) == L(8, 1)
    assert max_common_vector(L((4, 8), (8, 1)), L((4, 8), (1, 4))) == 1


def test_upcast_downcast_recast():
    bytes_view = L((16, 8), (1, 16))       # 16 uint8 per row, 8 rows
    assert upcast(bytes_view, 4) == L((4, 8), (1, 4))
    assert downcast(L((4, 8), (1, 4)), 4) == L((16, 8), (1, 16))
    assert recast(L((8, 4), (1, 8)), bf16, f32) == L((4, 4), (1, 4))
    assert recast(L((4, 4), (1, 4)), f32, u8) == L((16, 4), (1, 16))


def test_upcast_rounds_a_partial_group_up():
    # 3 unit-stride bytes touch one 4-byte unit: CuTe's upcast takes ceil(3 / 4).
    assert upcast(L(3, 1), 4) == L(1, 1)
    assert upcast(L((6, 2), (1, 8)), 4) == L((2, 2), (1, 2))


def test_upcast_rejects_a_stride_that_does_not_divide_the_factor():
    with pytest.raises(LayoutError, match="stride 3 and 2 do not divide one another"):
        upcast(L((8, 1), (3, 3)), 2)


def test_downcast_rejects_layout_without_unit_stride():
    with pytest.raises(LayoutError, match="no stride-1 mode"):
        downcast(L(4, 2), 2)
    with pytest.raises(LayoutError, match="no stride-1 mode"):
        downcast(L(6, -1), 2)


def test_make_ordered_layout():
    assert make_ordered_layout((4, 8), (1, 0)) == L((4, 8), (8, 1))
    assert make_ordered_layout((2, 3, 4), (2, 0, 1)) == L((2, 3, 4), (12, 1, 3))


def test_tile_to_shape():
    # (2,2):(1,2) tiled column-major to (4,6): reps (2,3) -> ((2,2),(2,3)):((1,4),(2,8)).
    assert tile_to_shape(L((2, 2), (1, 2)), (4, 6)) == L(((2, 2), (2, 3)), ((1, 4), (2, 8)))


def test_tile_to_shape_rejects_non_dividing_block():
    with pytest.raises(LayoutError, match="does not divide target extent 5"):
        tile_to_shape(L((2, 2), (1, 2)), (5, 4))


def test_repeated_operations_are_served_from_cache():
    a, b = L((6, 2), (8, 2)), L((4, 3), (3, 1))
    first = composition(a, b)
    assert composition(L((6, 2), (8, 2)), L((4, 3), (3, 1))) is first
    assert composition.cache_info().entries >= 1




@pytest.mark.parametrize("shape,i,coordinate", [((4, 8), 5, (1, 1)), ((4, 8), 0, (0, 0)), ((4, 8), 31, (3, 7)),
                                                 ((3, 4, 2), 13, (1, 0, 1)), (8, 3, (3,))])
def test_an_identity_layout_maps_an_index_to_its_coordinate_tuple_as_cute_does(shape, i, coordinate):
    identity = pc.make_identity_layout(shape)
    assert identity(i) == coordinate
    assert pc.Layout(shape)(*identity(i)) == i          # usable as a coordinate


def test_a_layout_on_named_axes_still_returns_its_scaled_basis_value():
    assert pc.Layout((4, 8), (pc.TLane, pc.TCol))(5) == pc.TLane + pc.TCol
