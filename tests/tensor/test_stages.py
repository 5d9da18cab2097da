"""Rings of shared tiles (make_stages): a trailing stage mode stepping by the tile's footprint in whole KiB, so every
variant's run-time stage moves whole swizzle periods; 4-bit tiles move by their bytes (not by zero); and the SF
staging tcgen05.cp moves (scale_factor_smem) for every stage lands where the MMA reads the SFs."""
import pytest

import pycute as pc
from pycute import Layout


@pytest.mark.parametrize("dtype, rows, k, step", [(pc.bf16, 128, 64, 16384), ("f8e4m3", 256, 128, 32768),
                                                  ("f4e2m1", 128, 256, 16384), (pc.tf32, 64, 32, 8192)])
def test_a_ring_steps_by_the_tiles_bytes(dtype, rows, k, step):
    ring = pc.make_stages(pc.kmajor_smem_tensor(dtype, rows, k), 4)
    staged = ring[:, :, pc.dynamic("stage")]
    assert pc.make_umma_desc(staged).stages[0].smem_step == step
    gmem = pc.make_global_tensor(dtype, Layout((1024, 1024), (1024, 1)))
    assert pc.make_tma_copy(staged, gmem).stages[0].smem_step == step


def test_a_ring_rounds_a_small_tile_up_to_whole_kib():
    ring = pc.make_stages(pc.make_smem_tensor(pc.u8, Layout((16, 8), (1, 16))), 3)
    assert ring.layout == Layout((16, 8, 3), (1, 16, 1024))


@pytest.mark.parametrize("bad, match", [(0, "0 stage"), (2.5, "stages")])
def test_a_ring_needs_whole_stages(bad, match):
    with pytest.raises((pc.PlanError, TypeError), match=match):
        pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, 128, 64), bad)


def test_a_ring_of_a_ring_slice_is_refused():
    ring = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, 128, 64), 2)
    with pytest.raises(pc.PlanError, match="a whole tile"):
        pc.make_stages(ring[:, :, pc.dynamic("stage")], 2)


@pytest.mark.parametrize("kind, rows, mmas, vec, layout", [
    ("mxf8f6f4", 128, 4, 1, Layout(((32, 4, 1), 4), ((16, 4, 512), 1))),
    ("mxf8f6f4", 256, 4, 1, Layout(((32, 4, 2), 4), ((16, 4, 512), 1))),
    ("mxf4nvf4", 256, 4, 4, Layout(((32, 4, 2), (4, 4)), ((16, 4, 512), (1, 1024)))),
])
def test_the_sf_staging_is_the_blocked_layout(kind, rows, mmas, vec, layout):
    assert pc.scale_factor_smem(pc.scale_factor_tensor(kind, rows, mmas, vec)).layout == layout


@pytest.mark.parametrize("kind, rows, vec", [("mxf8f6f4", 128, 1), ("mxf4nvf4", 256, 4), ("mxf4", 128, 2)])
def test_every_stage_of_the_sf_staging_copies_to_where_the_mma_reads(kind, rows, vec):
    sf = pc.scale_factor_tensor(kind, rows, 4, vec)
    plan = pc.make_tiled_copy(sf.tensor, pc.scale_factor_smem(sf, 3)[:, :, pc.dynamic("stage")])
    for stage in range(3):
        pc.check_scale_factor_copy(plan.at(stage=stage), sf)


def test_sfs_that_do_not_fill_a_cell_are_refused():
    with pytest.raises(pc.PlanError, match="has 1 SF slot"):
        pc.scale_factor_smem(pc.scale_factor_tensor("mxf8f6f4", 128, 1))


def test_a_tmem_ring_steps_by_the_columns_it_spans():
    sf = pc.scale_factor_tensor("mxf4nvf4", 256, 4, 4)          # 32 columns a stage
    ring = pc.make_stages(sf.tensor, 4)
    assert ring.layout[2] == Layout(4, 128 * pc.TCol) and ring.columns == 128 and ring.replica == sf.tensor.replica
    copy = pc.make_tiled_copy(ring[:, :, pc.dynamic("stage")], pc.scale_factor_smem(sf, 4)[:, :, pc.dynamic("stage")])
    for stage in range(4):
        assert copy.at(stage=stage).dst.col_offset == 128 * stage
        pc.check_scale_factor_copy(copy.at(stage=stage), sf)
