"""Code written against CUTLASS's pure-Python pycute runs unchanged: same names, same positional order, same
keywords; and the known defects are fixed rather than copied."""
import inspect

import pytest

import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle

# Positional parameters (required and optional) of CUTLASS pycute's functions; keywords are checked below.
ARITY = {
    "crd2idx": 3, "idx2crd": 3, "crd2crd": 3, "prefix_product": 2, "shape_div": 2, "elem_scale": 2,
    "inner_product": 2, "slice_": 2, "has_none": 1, "flatten": 1, "product": 1, "tuple_max": 1, "signum": 1,
    "coalesce": 2, "filter": 2, "composition": 2, "complement": 2, "right_inverse": 1, "left_inverse": 1,
    "logical_divide": 2, "logical_product": 2, "hier_unzip": 3, "zipped_divide": 2, "tiled_divide": 2,
    "zipped_product": 2, "tiled_product": 2, "slice_and_offset": 2, "size": 1, "cosize": 1,
}


@pytest.mark.parametrize("name", sorted(ARITY))
def test_same_positional_arity(name):
    params = [p for p in inspect.signature(getattr(pc, name)).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert len(params) == ARITY[name]


def test_keyword_arguments_are_accepted():
    L = Layout(((2, 2), (2, 2)), ((1, 4), (8, 32)))
    assert pc.coalesce(L, profile=(1, 1)) == pc.coalesce(L, (1, 1))
    assert pc.complement(Layout(4, 2), max_idx=24) == pc.complement(Layout(4, 2), 24) == Layout((2, 3), (1, 8))
    assert pc.crd2idx((1, 2), shape=(4, 8), stride=(8, 1)) == 10


def test_layout_and_make_layout_forms():
    assert Layout((4, 8)).stride == (1, 4)
    assert pc.make_layout(Layout(4, 1) for _ in range(2)) == Layout((4, 4), (1, 1))
    assert pc.make_layout([Layout(4, 1), Layout(8, 4)]) == Layout((4, 8), (1, 4))
    a = Layout((4, 8), (8, 1))
    assert len(a) == 2 and a.size() == 32 and a.cosize() == 32 and a[1] == Layout(8, 1)


def test_none_tilers_and_int_tilers():
    a = Layout((2, 5), (5, 1))
    assert pc.logical_product(a, None) is a and pc.logical_divide(a, None) is a and pc.composition(a, None) is a
    assert pc.logical_product(a, 4) == pc.logical_product(a, Layout(4)) == Layout(((2, 5), 4), ((5, 1), 10))
    assert pc.zipped_product(a, 4) == pc.zipped_product(a, Layout(4))
    assert pc.logical_product(a, (4, 2)) == pc.logical_product(a, (Layout(4), Layout(2)))
    assert pc.right_inverse(None) is None and pc.right_inverse(4) == Layout(4, 1)


def test_hier_unzip_is_public():
    a = Layout((9, (4, 8)), (59, (13, 1)))
    tiler = (Layout(3, 3), Layout((2, 4), (1, 8)))
    assert pc.hier_unzip(pc.logical_divide, a, tiler) == pc.zipped_divide(a, tiler)


def test_slice_of_none_is_a_one_tuple():
    assert pc.slice_(None, (4, 8)) == ((4, 8),) and pc.slice_((None, 3), (4, 8)) == (4,)


def bitwise_swizzle(x, bits, base, shift):
    """Swizzle by definition, bit by bit: each destination bit XORs the bit |shift| away on the source side."""
    out = x
    for k in range(bits):
        dst = base + k - min(0, shift)
        src = base + k + max(0, shift)
        out ^= ((x >> src) & 1) << dst
    return out


@pytest.mark.parametrize("args", [(2, 3, -3), (1, 0, 1), (3, 2, 3), (2, 1, -2), (0, 4, 0), (3, 4, 3)])
def test_swizzle_matches_its_bit_level_definition(args):
    sw = Swizzle(*args)
    assert all(sw(x) == bitwise_swizzle(x, *args) for x in range(4 * sw.size()))


def test_swizzle_and_composed_layout_attribute_names():
    sw = Swizzle(3, 4, 3)
    assert sw.yyy_msk == sw.yyy_mask == 0b111 << 7 and sw.zzz_msk == 0b111 << 4 and sw.cosize() == sw.size()
    assert pc.shiftr(16, 2) == 4 and pc.shiftr(4, -2) == 16 and pc.shiftl(4, 2) == 16
    cl = ComposedLayout(sw, 0, Layout((8, 64), (64, 1)))
    assert cl.layoutB is sw and cl.layoutA == Layout((8, 64), (64, 1)) and cl.cosize() == 1024 and len(cl) == 2


def test_layouts_are_hashable_and_swizzles_comparable():
    assert len({Layout(4, 1), Layout(4, 1), Layout(4, 2)}) == 2
    assert Swizzle(3, 4, 3) == Swizzle(3, 4, 3) and {Swizzle(3, 4, 3): 1}[Swizzle(3, 4, 3)] == 1


def test_composition_refuses_instead_of_truncating():
    # CUTLASS pycute would floor-divide 6 by 4 here and return a layout of the wrong size.
    with pytest.raises(pc.LayoutError, match="shape divisibility fails"):
        pc.composition(Layout((4, 3), (2, 100)), Layout(6, 1))


def test_cutlass_typing_names():
    import numpy as np
    from pycute.typing import Integer
    assert isinstance(3, Integer) and isinstance(np.int16(3), Integer)
    assert not isinstance(True, Integer) and not isinstance(3.0, Integer)
    assert isinstance(pc.Layout(4), pc.LayoutBase) and isinstance(
        pc.ComposedLayout(pc.Swizzle(1, 1, 1), 0, pc.Layout(4)), pc.LayoutBase)


def test_append_keeps_cutlass_pycute_s_pad_to_rank():
    assert pc.append(pc.Layout(4, 1), 3) == pc.Layout((4, 1, 1), (1, 0, 0))
    assert pc.append(pc.Layout(4, 1), pc.Layout(2, 8)) == pc.Layout((4, 2), (1, 8))


def test_print_latex_is_a_standalone_table_of_the_values():
    text = pc.print_latex(pc.Layout((2, 3), (3, 1)))
    assert text.startswith("\\documentclass") and "% (2,3):(3,1)" in text
    # row 1 holds 3, 4, 5: colours 3, 4, 5 of the eight (red, blue, green, yellow, orange, cyan, ...)
    assert "1 & \\cellcolor{yellow!20}3 & \\cellcolor{orange!20}4 & \\cellcolor{cyan!20}5 \\\\" in text
