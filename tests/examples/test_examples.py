"""The worked examples build in CI for sm_100a with exactly their planned SASS, and for sm_90a soft; on a GPU with
clusters the soft build runs and the readback equals what the layouts say (``tests/gpu`` style skip elsewhere)."""
import re

import numpy as np
import pytest

from examples.attention_q_tile import QTile
from examples.blockscaled_sf_pipeline import K_BLOCKS, SfPipeline
from pycute.compile import runtime
from pycute.compile.sass import utccp_instructions

SOFT_REASON = None if runtime.device_info() is not None and runtime.device_info()[1][0] >= 9 else (
    "the soft-model runs need a CUDA GPU with thread-block clusters (sm_90 or newer)")


@pytest.mark.parametrize("cta_group", [1, 2])
def test_the_sf_pipeline_holds_exactly_the_planned_utccps_and_one_commit(cta_group):
    example = SfPipeline(cta_group)
    sass = example.compile("sm_100a").instructions()
    planned = len(example.sfa_plan.instructions) + len(example.sfb_plan.instructions)
    utccp = utccp_instructions(sass)
    assert len(utccp) == planned == 3 and all(example.sfa_plan.atom.sass in i for i in utccp)
    assert [i.split()[0] for i in sass if i.startswith("UTCBAR")] == \
        ["UTCBAR" if cta_group == 1 else "UTCBAR.2CTA.MULTICAST"]


def test_the_sf_pipeline_places_accumulator_sfa_and_sfb_in_one_allocation():
    example = SfPipeline(2)
    assert [(t.placement.name, t.placement.column, t.placement.width) for t in example.alloc] == \
        [("accumulator", 0, 256), ("sfa", 256, 4), ("sfb", 260, 8)]
    assert example.alloc.columns == 512
    assert [d.name for d in example.sfa_plan.dynamic] == ["stage"]


@pytest.mark.parametrize("cta_group", [1, 2])
def test_every_stage_of_the_sf_pipeline_emulates_bit_exactly(cta_group):
    import pycute as pc
    example = SfPipeline(cta_group)
    for plan in (example.sfa_plan, example.sfb_plan):
        for stage in range(4):
            pc.verify_plan(plan, seed=stage, stage=stage)


@pytest.mark.parametrize("kind", ["mxf8f6f4", "mxf4nvf4"])
@pytest.mark.parametrize("cta_group", [1, 2])
def test_the_sf_copies_land_where_the_block_scaled_mma_reads_them(kind, cta_group):
    example = SfPipeline(cta_group, kind)            # checks every stage of SFA and SFB on construction
    assert example.sf[128].scale_vec == (1 if kind == "mxf8f6f4" else 4)
    assert [example.sf[128].sf_id(i) for i in range(example.sf[128].mmas)] == \
        ([0, 1, 2, 3] if kind == "mxf8f6f4" else [0])


def test_a_wrong_sf_placement_is_refused_naming_the_row_slot_and_byte():
    import pycute as pc
    from pycute.mma import check_scale_factor_copy, scale_factor_tensor
    # the four SF bytes of a row in four consecutive columns instead of one cell
    dst = pc.make_tmem_tensor(pc.u8, pc.Layout(((32, 4), 4), ((pc.TLane, pc.TCol), 4 * pc.TCol)),
                              replica=pc.Layout(4, 32 * pc.TLane), columns=32)
    plan = pc.make_tiled_copy(dst, pc.make_smem_tensor(pc.u8, pc.Layout(((32, 4), 4), ((16, 1), 4))))
    with pytest.raises(pc.PlanError, match="row 32, k-block slot 0: the copy writes lane 0 column 0 byte 1, but "
                                           "kind::mxf8f6f4 reads it at lane 0 column 1 byte 0"):
        check_scale_factor_copy(plan, scale_factor_tensor("mxf8f6f4", 128, mmas=4))


def test_the_q_tile_holds_four_128x256b_copies_and_one_commit():
    example = QTile()
    h = example.compile("sm_100a").histogram()
    assert h["UTCCP.T.S"] == 4 and h["UTCBAR"] == 1
    assert example.plan.tmem_columns == (128, 160)


@pytest.mark.parametrize("build", [lambda: SfPipeline(1), lambda: SfPipeline(2), QTile], ids=["sf1", "sf2", "q"])
def test_the_soft_builds_compile_for_sm_90a(build):
    compiled = build().compile("sm_90a", soft=True)
    assert not re.search(r"^\s*tcgen05\.", compiled.ptx, re.M)     # no tcgen05 instruction


@pytest.fixture(scope="module")
def gpu():
    return runtime.Gpu()


@pytest.mark.gpu
@pytest.mark.skipif(SOFT_REASON is not None, reason=SOFT_REASON or "")
@pytest.mark.parametrize("cta_group", [1, 2])
def test_the_soft_sf_pipeline_reads_back_every_stage_as_the_layouts_say(gpu, cta_group):
    major, minor = runtime.device_info()[1]
    got, want = SfPipeline(cta_group).run(gpu, arch=f"sm_{major}{minor}a", seed=3)
    assert got.shape[1] == K_BLOCKS
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"{len(bad)} words differ, first (cta, kb, lane, col) {bad[:4].tolist()}"


@pytest.mark.gpu
@pytest.mark.skipif(SOFT_REASON is not None, reason=SOFT_REASON or "")
def test_the_soft_q_tile_reads_back_q(gpu):
    major, minor = runtime.device_info()[1]
    got, want = QTile().run(gpu, arch=f"sm_{major}{minor}a", seed=4)
    assert np.array_equal(got, want)
