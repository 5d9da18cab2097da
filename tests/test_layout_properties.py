"""Hypothesis properties of the algebra: every result satisfies its post-condition, or the call is refused."""
from hypothesis import given, settings, strategies as st

from pycute import (Layout, LayoutError, Swizzle, coalesce, complement, composition, flat_divide, left_inverse,
                    logical_divide, logical_product, make_layout, make_ordered_layout, right_inverse, size,
                    zipped_divide)
from pycute.int_tuple import flatten

small = st.sampled_from([1, 2, 3, 4, 6, 8])
pow2 = st.sampled_from([1, 2, 4, 8])


@st.composite
def layouts(draw, max_rank=3, strides=st.integers(0, 24)):
    r = draw(st.integers(1, max_rank))
    shape = tuple(draw(small) for _ in range(r))
    stride = tuple(draw(strides) for _ in range(r))
    if draw(st.booleans()) and r >= 2:          # nest the first two modes
        shape, stride = ((shape[0], shape[1]),) + shape[2:], ((stride[0], stride[1]),) + stride[2:]
    return Layout(shape, stride)


@st.composite
def injective_layouts(draw):
    """Compact layouts in a random mode order, dilated by a random factor: always injective."""
    r = draw(st.integers(1, 3))
    shape = tuple(draw(pow2) for _ in range(r))
    order = tuple(draw(st.permutations(range(r))))
    base = make_ordered_layout(shape, order)
    k = draw(st.sampled_from([1, 2, 3]))
    return Layout(base.shape, tuple(d * k for d in base.stride))


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_coalesce_preserves_the_map_and_is_flat(a):
    c = coalesce(a)
    assert size(c) == size(a)
    assert all(c(i) == a(i) for i in range(size(a)))
    s, d = flatten(c.shape), flatten(c.stride)
    assert all(s[i] * d[i] != d[i + 1] for i in range(len(s) - 1))


@settings(max_examples=300, deadline=None)
@given(layouts(), layouts(max_rank=2, strides=st.integers(0, 6)))
def test_composition_is_exact_or_refused(a, b):
    if b.cosize() > size(a):
        return  # the contract covers B's image inside A's domain (beyond it cuTe extends A's last mode)
    try:
        r = composition(a, b)
    except LayoutError:
        return
    assert size(r) == size(b)
    assert all(r(i) == a(b(i)) for i in range(size(b)))


@settings(max_examples=200, deadline=None)
@given(injective_layouts(), st.sampled_from([1, 2, 3]))
def test_complement_is_disjoint_and_covers_the_cotarget(a, k):
    cot = k * (a.cosize() + 3)
    c = complement(a, cot)
    joined = make_layout(a, c)
    offsets = [joined(i) for i in range(size(joined))]
    assert len(set(offsets)) == len(offsets)          # disjoint from L, and injective itself
    assert set(range(cot)) <= set(offsets)            # covers [0, cotarget)
    cs = flatten(c.stride)
    assert list(cs) == sorted(cs)                     # ordered


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_right_inverse(a):
    r = right_inverse(a)
    assert all(a(r(i)) == i for i in range(size(r)))


@settings(max_examples=200, deadline=None)
@given(injective_layouts())
def test_left_inverse(a):
    r = left_inverse(a)
    assert all(r(a(i)) == i for i in range(size(a)))


@settings(max_examples=200, deadline=None)
@given(injective_layouts(), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2]))
def test_logical_divide_identities(a, n, d):
    tiler = Layout(n, d)
    if tiler.cosize() > size(a):
        return
    try:
        q = logical_divide(a, tiler)
    except LayoutError:
        return
    full = make_layout(tiler, complement(tiler, size(a)))
    assert all(q(i) == a(full(i)) for i in range(min(size(q), size(full))))
    assert q[0] == composition(a, tiler)
    z = zipped_divide(a, tiler)
    assert all(z(i) == q(i) for i in range(size(q)))      # a layout tiler: zipped == logical
    f = flat_divide(a, tiler)
    assert size(f) == size(q)


@settings(max_examples=200, deadline=None)
@given(injective_layouts(), layouts(max_rank=2, strides=st.integers(1, 4)))
def test_logical_product_identities(a, b):
    try:
        p = logical_product(a, b)
    except LayoutError:
        return
    assert p[0] == a
    assert size(p) == size(a) * size(b)
    # Each distinct repeat offset places a whole copy of the block that overlaps no other copy.
    rep = p[1]
    assert len({p(i) for i in range(size(p))}) == size(a) * len({rep(j) for j in range(size(rep))})


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 3), st.integers(0, 4), st.integers(-5, 5))
def test_swizzle_is_an_involution(b, m, s):
    if abs(s) < b:
        return
    sw = Swizzle(b, m, s)
    n = sw.size()
    images = [sw(x) for x in range(n)]
    assert sorted(images) == list(range(n))
    assert all(sw(sw(x)) == x for x in range(n))
