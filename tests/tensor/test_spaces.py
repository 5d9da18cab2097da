"""Memory space is a property of every tensor: global, shared, TMEM and register fragments."""
import pytest

import pycute as pc
from pycute import Layout, TCol, TLane


def test_every_tensor_kind_names_its_memory_space():
    g = pc.make_global_tensor(pc.f16, Layout((64, 32), (32, 1)))
    s = pc.make_smem_tensor(pc.f16, Layout((64, 32), (32, 1)))
    t = pc.make_tmem_tensor(pc.f16, Layout((64, 32), (TLane, TCol)), columns=32)
    r = pc.make_fragment(pc.f16, 64)
    assert [x.space for x in (g, s, t, r)] == ["global", "shared", "tmem", "register"]


def test_a_global_tensor_slices_into_regions_that_keep_their_offset():
    g = pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1)), base_align=128)
    sub = g[8:16, 4:12]
    assert sub.offset == 8 * 32 + 4 and sub.layout == Layout((8, 8), (32, 1)) and sub.base_align == 128
    assert repr(sub) == "gmem<f32>[260 o (8,8):(32,1)]"
    staged = pc.make_global_tensor(pc.f32, Layout((4, 8, 3), (8, 1, 32)))[:, :, pc.dynamic("k")]
    assert staged.at(k=2).offset == 64


@pytest.mark.parametrize("args,error,match", [
    ((pc.f32, Layout(4, 1), 24), pc.PlanError, "base_align 24 is not a power of two"),
    ((pc.f32, Layout(4, pc.TLane)), pc.PlanError, "has a non-integer stride"),
    ((pc.f32, "4:1"), TypeError, "the layout must be a Layout, got str"),
])
def test_bad_global_tensors_are_refused_naming_the_value(args, error, match):
    with pytest.raises(error, match=match):
        pc.make_global_tensor(*args)


def test_a_fragment_is_whole_warps_of_threads():
    assert pc.make_fragment(pc.f32, 256).warps == 8
    assert repr(pc.make_fragment(pc.f32, 32)) == "rmem<f32>[32 threads]"
    with pytest.raises(pc.PlanError, match="make_fragment: 48 threads are not whole warps"):
        pc.make_fragment(pc.f32, 48)
    with pytest.raises(TypeError, match="make_fragment: the layout must be a"):
        pc.make_fragment(pc.f32, 32, "x")
