"""Regions: a window of a tensor is exactly the tensor's layout shifted to the window's origin, or it is refused."""
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import Layout, PlanError

from ..test_layout_properties import layouts


@st.composite
def windows(draw):
    layout = draw(layouts(max_rank=2, strides=st.integers(0, 40)))
    shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
    key = []
    for mode in shape:
        n = pc.size(mode)
        start = draw(st.integers(0, n - 1))
        stop = draw(st.integers(start + 1, n))
        key.append(slice(start, stop))
    return layout, tuple(key)


@settings(max_examples=300, deadline=None)
@given(windows())
def test_window_is_the_shifted_layout_or_refused(case):
    layout, key = case
    t = pc.make_smem_tensor(pc.u8, layout)
    try:
        region = t[key]
    except PlanError:
        return
    starts = [k.start for k in key]
    extents = [k.stop - k.start for k in key]
    modes = [layout[i] for i in range(layout.rank())] if layout.rank() > 1 else [layout]
    for idx in range(pc.size(region.layout)):
        crd, rest = [], idx
        for e in extents:
            crd.append(rest % e)
            rest //= e
        full = sum(m(s + c) for m, s, c in zip(modes, starts, crd))
        assert region.offset + region.layout(idx) == full


def test_refused_windows_really_are_not_shifted_copies():
    mode = Layout((8, 4), (64, 1024))                     # one hierarchical mode: rows 0-7, then blocks of 8
    t = pc.make_smem_tensor(pc.u8, Layout(((8, 4),), ((64, 1024),)))
    with pytest.raises(PlanError, match="is not a shifted copy"):
        t[4:12]
    assert [mode(4 + j) - mode(4) for j in range(8)] != [mode(j) for j in range(8)]


def test_windows_are_never_clipped():
    t = pc.make_smem_tensor(pc.u8, Layout((8, 16), (16, 1)))
    with pytest.raises(PlanError, match=r"slice \[4:12\] of mode 0 is outside its extent 8"):
        t[4:12, :]
    assert t[-4:, :].offset == 4 * 16
