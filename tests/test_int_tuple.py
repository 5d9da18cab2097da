import pytest

from pycute import LayoutError
from pycute.int_tuple import (congruent, crd2crd, crd2idx, elem_scale, flatten, idx2crd, inner_product,
                              is_int, is_tuple, prefix_product, product, shape_div, weakly_congruent)


def test_predicates():
    assert is_int(3) and not is_int(True) and not is_int((3,))
    assert is_tuple((3,)) and not is_tuple(3)


def test_flatten_and_product():
    assert flatten(((1, 2), (3, (4, 5)))) == (1, 2, 3, 4, 5)
    assert flatten(7) == (7,)
    assert product((2, (3, 4))) == 24
    assert product(()) == 1


def test_inner_product():
    assert inner_product((2, (3, 4)), (5, (6, 7))) == 10 + 18 + 28


def test_prefix_product_is_exclusive_and_hierarchical():
    assert prefix_product((2, (3, 4))) == (1, (2, 6))
    assert prefix_product((4, 8)) == (1, 4)
    assert prefix_product(5) == 1


@pytest.mark.parametrize("a,b,expected", [(12, 4, 3), (4, 12, 1), ((6, 2), 3, (2, 2)), ((6, 2), 12, (1, 1)),
                                          ((2, 3, 4), 6, (1, 1, 4)), (8, (2, 2), 2)])
def test_shape_div(a, b, expected):
    assert shape_div(a, b) == expected


def test_shape_div_rejects_non_dividing():
    with pytest.raises(LayoutError, match="neither of 6 and 4 divides the other"):
        shape_div(6, 4)


def test_elem_scale():
    assert elem_scale((2, 3), ((2, 2), 5)) == (8, 15)


def test_congruence():
    assert congruent((1, (2, 3)), (4, (5, 6)))
    assert not congruent((1, (2, 3)), (4, 5))
    assert weakly_congruent((1, 2), (4, (5, 6)))
    assert not weakly_congruent((1, (2, 3)), (4, 5))


def test_crd2idx_hierarchical_and_int_coordinates():
    shape, stride = (2, (3, 4)), (1, (2, 6))
    assert crd2idx((1, (2, 3)), shape, stride) == 1 + 4 + 18
    # An int coordinate is unfolded colexicographically: 17 -> (1, 8) -> (1, (2, 2)).
    assert crd2idx(17, shape, stride) == 1 + 4 + 12
    assert crd2idx((1, 5), shape, stride) == 1 + 4 + 6
    assert crd2idx((1, 3), (4, 8)) == 13  # default column-major strides (1, 4)


def test_idx2crd_inverts_compact_crd2idx():
    shape = (2, (3, 4))
    for i in range(24):
        assert crd2idx(idx2crd(i, shape), shape) == i
    assert idx2crd(13, (4, 8)) == (1, 3)


def test_crd2crd():
    assert crd2crd(13, (4, 8)) == (1, 3)
    assert crd2crd((1, 3), 32, (4, 8)) == 13
    assert crd2crd((1, 5), (2, (2, 3)), None) == (1, (1, 2))


def test_crd2idx_rank_mismatch_is_a_layout_error():
    with pytest.raises(LayoutError, match="does not match shape"):
        crd2idx((1, 2, 3), (4, 8), (1, 4))
