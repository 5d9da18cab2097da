"""The tensor map's element widened where that is legal (4-bit floats travel as bytes; fewer, wider elements when
that saves boxes) and a map kept within five dimensions by issuing several boxes rather than refusing."""
import pytest

import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle
from pycute.copy.tma import make_tma_copy

FP4 = "f4e2m1"


def test_a_4_bit_k_major_tile_travels_as_bytes_in_one_box():
    g = pc.make_global_tensor(FP4, Layout((256, 256), (256, 1)))
    plan = make_tma_copy(pc.kmajor_smem_tensor(FP4, 128, 256, "128B"), g)
    assert plan.element == FP4 and plan.tensor_map.dtype == "u8" and plan.tensor_map.box == (128, 128)
    assert len(plan.instructions) == 1 and plan.expect_tx == 128 * 256 // 2
    assert "f4e2m1 widened to u8: 2 per tensor-map element" in plan.explain()
    plan.verify()


def test_a_4_bit_array_with_an_odd_row_cannot_widen_and_is_refused_with_the_reasons():
    g = pc.make_global_tensor(FP4, Layout((64, 33), (64, 1)))
    with pytest.raises(pc.PlanError, match=r"no type for f4e2m1[\s\S]*as u8: the array's contiguous extent 33 is not a "
                                           r"multiple of 2"):
        make_tma_copy(pc.make_smem_tensor(FP4, Layout((64, 64), (64, 1))), g)


def test_wider_elements_halve_the_boxes_of_a_long_run():
    g = pc.make_global_tensor(pc.f32, Layout(1000, 1))
    plan = make_tma_copy(pc.make_smem_tensor(pc.f32, Layout(512, 1)), g)
    assert (plan.element, plan.tensor_map.dtype, len(plan.instructions)) == ("f32", "u64", 1)
    plan.verify()


@pytest.mark.parametrize("options", [{"reduce": "add"}, {"oob_fill": "nan"}])
def test_a_reduction_or_a_nan_fill_keeps_the_element_type(options):
    g = pc.make_global_tensor(pc.f32, Layout(1000, 1))
    s = pc.make_smem_tensor(pc.f32, Layout(512, 1))
    plan = make_tma_copy(g, s, **options) if "reduce" in options else make_tma_copy(s, g, **options)
    assert plan.element is None and plan.tensor_map.dtype == "f32" and len(plan.instructions) == 2


def test_an_odd_array_extent_keeps_the_element_type():
    plan = make_tma_copy(pc.make_smem_tensor(pc.f32, Layout(512, 1)), pc.make_global_tensor(pc.f32, Layout(999, 1)))
    assert plan.element is None and len(plan.instructions) == 2


def test_a_map_that_would_need_six_dimensions_issues_two_boxes_instead():
    tile = pc.make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0, Layout(
        (1, 1, 1, (8, 16), (64, 2)), (0, 0, 0, (64, 512), (1, 8192)))))
    g = pc.make_global_tensor(pc.bf16, Layout((2, 3, 4, 130, 128), (199680, 66560, 16640, 128, 1)))
    plan = make_tma_copy(tile, g)
    assert plan.tensor_map.rank == 5 and plan.tensor_map.box == (64, 128, 1, 1, 1) and len(plan.instructions) == 2
    assert "would need 6 dimensions (at most 5): this part of the tile is issued as further boxes" in plan.explain()
    plan.verify()
