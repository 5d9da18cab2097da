"""make_cp_async_copy: the widest width both layouts allow, the thread-value partition, the refusals naming their
rule, and every case emulated against the layouts alone."""
import pytest

import pycute as pc
from pycute import Layout
from pycute.copy.cp_async import CpAsyncPlan, make_cp_async_copy

from tests.copy.flat_cases import CP_ASYNC


@pytest.mark.parametrize("name, g, s, options, tiles", CP_ASYNC, ids=[c[0] for c in CP_ASYNC])
def test_every_case_moves_what_the_layouts_say(name, g, s, options, tiles):
    pc.verify(make_cp_async_copy(s, g, **options))


@pytest.mark.parametrize("dtype, row, width", [(pc.u8, 48, 16), (pc.u8, 40, 8), (pc.u8, 36, 4), (pc.f16, 36, 8),
                                               (pc.f16, 34, 4), (pc.f32, 33, 4), (pc.f64, 18, 16), (pc.f64, 17, 8)])
def test_the_width_is_the_widest_the_row_stride_aligns(dtype, row, width):
    g = pc.make_global_tensor(dtype, Layout((64, row), (row, 1)))
    s = pc.make_smem_tensor(dtype, Layout((16, 16), (16, 1)))
    plan = make_cp_async_copy(s, g, threads=16)
    assert plan.atom.size == width
    assert [r.candidate for r in plan.rejected] == [f"{w} B" for w in (16, 8) if w > width and w % (dtype.bits // 8) == 0]


def test_consecutive_threads_take_consecutive_global_vectors():
    g = pc.make_global_tensor(pc.bf16, Layout((64, 64), (64, 1)))
    plan = make_cp_async_copy(pc.make_smem_tensor(pc.bf16, Layout((64, 64), (64, 1))), g, threads=128)
    first = [plan.stream(0, 0, 0, thread=t)[0].gmem for t in range(8)]
    assert first == [16 * t for t in range(8)]
    assert plan.tv_layout == Layout((128, (8, 4)), (8, (1, 1024)))
    # thread 3, value 9 = element 1 of its iteration 1: index 3 * 8 + 1 + 128 * 8 = 1049 -> row 16, column 25
    assert plan.element(plan.tv_layout(3, 9)) == (16, 25)


def test_a_partial_last_iteration_is_guarded():
    g = pc.make_global_tensor(pc.f32, Layout((64, 40), (40, 1)))
    plan = make_cp_async_copy(pc.make_smem_tensor(pc.f32, Layout((8, 40), (40, 1))), g, threads=64)
    assert [i.active for i in plan.instructions] == [64, 16]      # 80 vectors of 16 B
    assert len(plan.stream(0, 0, 0, thread=16)) == 1 and len(plan.stream(0, 0, 0, thread=15)) == 2


def test_elements_outside_the_array_are_zero_filled_without_a_read():
    g = pc.make_global_tensor(pc.f32, Layout((10, 40), (40, 1)))
    plan = make_cp_async_copy(pc.make_smem_tensor(pc.f32, Layout((8, 8), (8, 1))), g, threads=16)
    # tile (1, 4): rows 8..15 (10 exist), columns 32..39; one vector per thread, two per row
    inside, outside = plan.stream(0, 1, 4, thread=1)[0], plan.stream(0, 1, 4, thread=4)[0]
    assert (inside.src_size, inside.gmem) == (16, (8 * 40 + 36) * 4)       # row 8, columns 36..39
    assert (outside.src_size, outside.gmem) == (0, 0)                         # row 10: zeros, nothing read


def test_two_byte_elements_with_an_odd_row_have_no_cp_async():
    g = pc.make_global_tensor(pc.f16, Layout((64, 37), (37, 1)))
    with pytest.raises(pc.PlanError, match=r"no cp.async width fits[\s\S]*4 B: array mode 0 has a stride of 74 B"):
        make_cp_async_copy(pc.make_smem_tensor(pc.f16, Layout((32, 32), (32, 1))), g)


def test_a_transposing_shared_layout_narrows_the_vector_to_one_element():
    g = pc.make_global_tensor(pc.f32, Layout((64, 64), (64, 1)))
    plan = make_cp_async_copy(pc.make_smem_tensor(pc.f32, Layout((32, 32), (1, 32))), g)
    assert plan.vector == 1 and "not adjacent in shared memory" in str(plan.rejected[0].reason)


@pytest.mark.parametrize("kwargs, message", [
    ({"threads": 0}, "a CTA has 1 to 1024 threads"),
    ({"completion": "expect_tx"}, "cp.async completes in a 'group'"),
    ({"cache": "cg"}, r"cp.async.cg moves 16 bytes only"),
    ({"l2_prefetch": 32}, "L2 prefetch size is one of 64, 128, 256"),
])
def test_bad_options_name_the_rule(kwargs, message):
    g = pc.make_global_tensor(pc.f32, Layout((64, 33), (33, 1)))
    with pytest.raises(pc.PlanError, match=message):
        make_cp_async_copy(pc.make_smem_tensor(pc.f32, Layout((16, 16), (16, 1))), g, **kwargs)


def test_a_store_is_not_a_cp_async():
    g = pc.make_global_tensor(pc.f32, Layout((64, 64), (64, 1)))
    with pytest.raises(TypeError, match="copies a global array .* into a shared tile"):
        make_cp_async_copy(g, pc.make_smem_tensor(pc.f32, Layout((16, 16), (16, 1))))


def test_a_staged_tile_moves_every_copy_by_the_stage():
    g = pc.make_global_tensor(pc.bf16, Layout((128, 64), (64, 1)))
    buf = pc.make_smem_tensor(pc.bf16, Layout((64, 64, 3), (64, 1, 4096)))
    plan = make_cp_async_copy(buf[:, :, pc.dynamic("stage")], g)
    assert plan.stages[0].smem_step == 8192
    assert [i.smem - 2 * 8192 for i in plan.stream(0, 0, 0, thread=5, stage=2)] == \
        [i.smem for i in plan.stream(0, 0, 0, thread=5, stage=0)]
    pc.verify(plan)
    assert "unsigned stage" in plan.cuda("f")


def test_the_plan_reads_as_a_cp_async_plan():
    g = pc.make_global_tensor(pc.f16, Layout((100, 36), (36, 1)))
    plan = make_cp_async_copy(pc.make_smem_tensor(pc.f16, Layout((64, 32), (32, 1))), g)
    assert isinstance(plan, CpAsyncPlan) and isinstance(plan, pc.Plan)
    text = plan.explain()
    assert "8 B = 4 x f16" in text and "16 B   array mode 0 has a stride of 72 B" in text
    assert repr(plan) == "CpAsyncPlan(128 threads x 4 x cp.async.ca.shared.global 8 B, group)"
