import pytest

from pycute import ComposedLayout, Layout, LayoutError, Swizzle, composition, logical_divide, tile_to_shape


def test_swizzle_xors_high_bits_into_low_bits():
    sw = Swizzle(3, 4, 3)                     # bits 7..9 -> bits 4..6
    assert sw(0x80) == 0x80 | 0x10
    assert sw(0x380) == 0x380 | 0x70
    assert sw(0x7F) == 0x7F                   # no source bits set


def test_negative_shift_xors_low_bits_into_high_bits():
    sw = Swizzle(2, 4, -3)                    # bits 4..5 -> bits 7..8
    assert sw(0x10) == 0x10 | 0x80
    assert sw(0x80) == 0x80


def test_swizzle_masks_and_repr():
    sw = Swizzle(3, 4, 3)
    assert sw.yyy_mask == 0b111 << 7 and sw.zzz_mask == 0b111 << 4
    assert repr(sw) == "Sw<3,4,3>"


def test_swizzle_equality_and_hash():
    assert Swizzle(3, 4, 3) == Swizzle(3, 4, 3) and hash(Swizzle(3, 4, 3)) == hash(Swizzle(3, 4, 3))
    assert Swizzle(3, 4, 3) != Swizzle(3, 4, -3)


def test_overlapping_swizzle_is_rejected():
    with pytest.raises(LayoutError, match=r"\|S\| must be at least B"):
        Swizzle(3, 4, 2)


def test_composed_layout_prints_and_evaluates_like_cute():
    inner = Layout((8, 64), (64, 1))
    cl = composition(Swizzle(3, 4, 3), inner)
    assert isinstance(cl, ComposedLayout)
    assert repr(cl) == "Sw<3,4,3> o 0 o (8,64):(64,1)"
    assert cl(1, 0) == Swizzle(3, 4, 3)(64)
    assert cl(2, 16) == Swizzle(3, 4, 3)(2 * 64 + 16)
    assert cl == ComposedLayout(Swizzle(3, 4, 3), 0, inner) and len({cl, ComposedLayout(Swizzle(3, 4, 3), 0,
                                                                                          inner)}) == 1


def test_composed_layout_composes_and_divides_through_its_inner_layout():
    cl = ComposedLayout(Swizzle(2, 4, 3), 0, Layout((8, 32), (32, 1)))
    sub = composition(cl, (Layout(4, 1), Layout(16, 1)))
    assert sub == ComposedLayout(Swizzle(2, 4, 3), 0, Layout((4, 16), (32, 1)))
    assert all(sub(i, j) == cl(i, j) for i in range(4) for j in range(16))
    div = logical_divide(cl, (4, 16))
    assert div.inner == logical_divide(cl.inner, (4, 16))


def test_composed_layout_slice_keeps_offset():
    cl = ComposedLayout(Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1)))
    row = cl(3, None)
    assert repr(row) == "Sw<3,4,3> o 192 o (64):(1)"
    assert all(row(j) == cl(3, j) for j in range(64))


def test_tile_to_shape_of_a_swizzle_atom():
    atom = ComposedLayout(Swizzle(3, 4, 3), 0, Layout((8, 64), (64, 1)))
    tiled = tile_to_shape(atom, (16, 128))
    assert tiled.outer == Swizzle(3, 4, 3)
    assert tiled.inner == tile_to_shape(atom.inner, (16, 128))
