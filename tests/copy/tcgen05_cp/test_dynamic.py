"""Run-time coordinates: one plan, one device function with a ``stage`` argument, every value checked."""
import pytest

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.codegen.probe import probe_source
from pycute.compile import compile_cuda
from pycute.interp.stream import probe_stream
from perf.cases import staged_copies

CASES = staged_copies()


def sf_stages(stage_bytes=512, stages=4):
    return pc.make_smem_tensor(pc.u8, Layout(((32, 4), 4, stages), ((16, 4), 1, stage_bytes)))


def sf_tmem(columns=32):
    return pc.make_tmem_tensor(pc.u8, Layout(((32, 4), 4), ((TLane, 4 * TCol), TCol)),
                               replica=Layout(4, 32 * TLane), columns=columns)


def test_a_dynamic_index_drops_the_mode_and_keeps_its_extent_and_stride():
    src = sf_stages()[:, :, pc.dynamic("stage")]
    assert src.layout == Layout(((32, 4), 4), ((16, 4), 1))
    (d,) = src.dynamic
    assert (d.name, d.extent, d.stride) == ("stage", 4, 512)
    assert src.at(stage=3).offset == 1536 and src.at(stage=3).dynamic == ()


@pytest.mark.parametrize("label,staged,static", CASES, ids=[c[0] for c in CASES])
def test_every_stage_is_the_static_plan_of_that_stage(label, staged, static):
    assert staged.at(**{d.name: 0 for d in staged.dynamic}).instructions == static.instructions
    for d in staged.dynamic:
        for v in range(d.extent):
            at = staged.at(**{d.name: v})
            assert [(i.smem_offset, i.tmem_offset) for i in at.instructions] == \
                [(i.smem_offset + v * d.smem_step, i.tmem_offset + v * d.tmem_step) for i in staged.instructions]


@pytest.mark.parametrize("label,staged,static", CASES, ids=[c[0] for c in CASES])
def test_a_stage_of_the_plan_is_the_plan_the_planner_makes_of_that_stages_tensors(label, staged, static):
    """``at`` moves value 0's plan by the coordinate's steps (no re-planning); it equals planning the static
    tensors of that value, footprint included."""
    for d in staged.dynamic:
        for v in range(d.extent):
            at = staged.at(**{d.name: v})
            src = staged.src.at(**{k.name: v for k in staged.src.dynamic})
            dst = staged.dst.at(**{k.name: v for k in staged.dst.dynamic})
            again = pc.make_tiled_copy(dst, src, staged.cta_group, shape=staged.atom.shape,
                                       multicast=staged.atom.multicast or None, decompress=staged.decompress)
            assert at == again and at.smem_range == again.smem_range and at.tmem_columns == again.tmem_columns


@pytest.mark.parametrize("label,staged,static", CASES, ids=[c[0] for c in CASES])
def test_the_staged_function_takes_the_stage_and_its_interpreted_stream_is_each_stages_plan(label, staged, static):
    code = staged.cuda("copy_staged")
    assert "void copy_staged(const void* smem_buffer, unsigned tmem_base, unsigned stage)" in code
    ptx = compile_cuda(probe_source(staged, "st")).ptx
    (d,) = staged.dynamic
    for v in range(d.extent):
        assert probe_stream(ptx, "st", 0x400, 0, stage=v) == staged.stream(0x400, 0, stage=v)
        pc.verify_plan(staged, seed=v, smem_base=0x400, stage=v,
                       stream=lambda s, t, v=v: probe_stream(ptx, "st", s, t, stage=v))


def test_a_tmem_step_moves_the_tmem_address_once_per_call():
    label, staged, _ = CASES[-1]
    code = staged.cuda("copy_both")
    assert "const unsigned taddr = tmem_base + stage * 4u;" in code and "(taddr + 0x00000000u, desc)" in code
    assert staged.tmem_columns == (0, 8)      # 16 u8 elements per stage: 4 columns


def test_a_stage_that_breaks_the_swizzle_alignment_is_refused_naming_it():
    q = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
    stages = pc.make_smem_tensor(pc.bf16, pc.ComposedLayout(q.swizzle, 0, pc.make_layout(
        q.layout[0], q.layout[1], Layout(2, 128 * 64 + 256))))
    dst = pc.make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=32)
    with pytest.raises(pc.PlanError, match=r"(?s)at stage=1: .*not aligned to the B128 swizzle atom"):
        pc.make_tiled_copy(dst, stages[:, :, pc.dynamic("stage")])


def test_a_stage_past_the_ctas_shared_memory_is_refused_naming_it():
    with pytest.raises(pc.PlanError, match=r"(?s)at stage=3: .*232448 B of shared memory"):
        pc.make_tiled_copy(sf_tmem(), sf_stages(stage_bytes=80 * 1024)[:, :, pc.dynamic("stage")])


def test_a_tmem_stage_past_the_allocation_is_refused_naming_it():
    dst = pc.make_tmem_tensor(pc.u8, Layout(((32, 4), 4, 8), ((TLane, 4 * TCol), TCol, 32 * TCol)),
                              replica=Layout(4, 32 * TLane), columns=32)
    src = sf_stages(stages=8)
    with pytest.raises(pc.PlanError, match=r"(?s)at stage=4: .*exceed the TMEM allocation of 32 columns"):
        pc.make_tiled_copy(dst[:, :, pc.dynamic("stage")], src[:, :, pc.dynamic("stage")])


def test_one_name_has_one_extent_on_both_sides():
    dst = pc.make_tmem_tensor(pc.u8, Layout(((32, 4), 4, 2), ((TLane, 4 * TCol), TCol, 16 * TCol)),
                              replica=Layout(4, 32 * TLane), columns=32)
    with pytest.raises(pc.PlanError, match="'stage' has extent 4 in one tensor and 2 in the other"):
        pc.make_tiled_copy(dst[:, :, pc.dynamic("stage")], sf_stages()[:, :, pc.dynamic("stage")])


def test_a_mode_without_one_stride_cannot_be_indexed_at_run_time():
    src = pc.make_smem_tensor(pc.u8, Layout((16, (2, 2)), (1, (512, 4096))))
    with pytest.raises(pc.PlanError, match="is not one stride"):
        src[:, pc.dynamic("stage")]


@pytest.mark.parametrize("name", ["smem_buffer", "tmem_base", "Stage", "2x", "pycute_k", "a-b"])
def test_a_run_time_name_must_be_a_free_c_parameter(name):
    with pytest.raises(pc.PlanError, match="becomes a C parameter"):
        pc.dynamic(name)


def test_values_are_checked():
    plan = pc.make_tiled_copy(sf_tmem(), sf_stages()[:, :, pc.dynamic("stage")])
    with pytest.raises(pc.PlanError, match=r"stage=4 is outside \[0, 4\)"):
        plan.at(stage=4)
    with pytest.raises(pc.PlanError, match="need values: stage"):
        plan.stream(0, 0)
    with pytest.raises(pc.PlanError, match="no run-time coordinate kb"):
        plan.at(stage=0, kb=1)
    with pytest.raises(TypeError, match="must be an integer"):
        plan.at(stage=1.0)


def test_the_plan_exposes_what_it_touches_over_every_stage():
    plan = pc.make_tiled_copy(sf_tmem(), sf_stages()[:, :, pc.dynamic("stage")])
    assert plan.smem_range == (0, 2048) and plan.tmem_columns == (0, 4)
    assert plan.at(stage=2).smem_range == (1024, 1536)


def test_pictures_take_the_value():
    plan = pc.make_tiled_copy(sf_tmem(), sf_stages()[:, :, pc.dynamic("stage")])
    assert str(plan.draw(stage=1)) != str(plan.draw(stage=2))
