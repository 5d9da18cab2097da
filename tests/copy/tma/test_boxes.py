"""Every box the hardware copies (issue 32, item 3): swizzled rows narrower than the swizzle's, tiles at any
128-byte offset under a swizzle, broadcast and overlapping arrays, six and more modes, hierarchical modes, multicast
to any CTA mask of a cluster shape, L2 promotion and cache policies. Each case of cases_boxes.py is emulated against
the two layouts alone; the generated code is compiled once for all of them and read back by the PTX interpreter."""
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle
from pycute.arch.sm90.tma import TMA_SWIZZLES
from pycute.compile import compile_cuda
from pycute.copy.tma import TensorMapParams, make_tma_copy
from pycute.copy.tma.multicast import Multicast
from pycute.sim.emulator import Sm90Emulator
from pycute.interp.stream import trace_entry
from pycute.sim.verify import verify_tma

from .cases_boxes import BOXES, MULTICAST, NARROW

ids = [c[0] for c in BOXES]
STORES = [c for c in BOXES if c[4]]


def _store_options(options):
    return {k: v for k, v in options.items() if k != "multicast"}


@pytest.mark.parametrize("name,g,s,tiles,store,options", BOXES, ids=ids)
def test_every_box_loads_as_the_layouts_say(name, g, s, tiles, store, options):
    verify_tma(make_tma_copy(s, g, **options), seed=11)


@pytest.mark.parametrize("name,g,s,tiles,store,options", STORES, ids=[c[0] for c in STORES])
def test_every_box_stores_as_the_layouts_say(name, g, s, tiles, store, options):
    verify_tma(make_tma_copy(g, s, **_store_options(options)), seed=12)


# --- swizzled rows narrower than the swizzle's -------------------------------------------------------------------

def test_a_narrow_swizzled_row_keeps_a_whole_pattern_row_in_shared_memory():
    """The model the planner relies on (docs/tma.md, inferred; python -m tools tma_every_box settles it): box row r of a
    64-B-wide bf16 box under the 128B swizzle starts at byte 128 r, its 16-byte units XORed by (r % 8); the other
    half of each pattern row is not written."""
    params = TensorMapParams("bf16", 9, (32, 8), (64,), (32, 8), (1, 1), TMA_SWIZZLES[3])
    gmem = np.arange(32 * 8 * 2, dtype=np.uint8) % 251
    emu = Sm90Emulator(smem_bytes=1024)
    emu.write_smem(0, np.full(1024, 0xA5, dtype=np.uint8))
    assert emu.tma_load(params, gmem, (0, 0), 0) == 32 * 8 * 2
    image, written = emu.ctas[0].smem, np.zeros(1024, dtype=bool)
    for r in range(8):
        for unit in range(4):
            at = 128 * r + 16 * (unit ^ r)
            assert bytes(image[at:at + 16]) == bytes(gmem[64 * r + 16 * unit:64 * r + 16 * unit + 16])
            written[at:at + 16] = True
    assert int(written.sum()) == 512 and np.all(image[~written] == 0xA5)


@pytest.mark.parametrize("name,g,s,tiles,store,options", NARROW, ids=[c[0] for c in NARROW])
def test_a_narrow_box_row_is_the_tiles_row_and_explain_says_the_pitch(name, g, s, tiles, store, options):
    plan = make_tma_copy(s, g)
    m = plan.tensor_map
    row = m.box[0] * plan.elem_bytes
    assert row < m.swizzle.span and plan.expect_tx == len(plan.instructions) * m.box_bytes
    assert f"row pitch   {m.swizzle.span} B per box row of {row} B" in plan.explain()


def test_a_narrow_tile_packed_at_its_own_width_is_refused_naming_the_pitch():
    packed = pc.make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0, Layout((64, 32), (32, 1))))
    with pytest.raises(pc.PlanError, match=r"TMA puts each box row at a whole pattern row \(128 B apart"):
        make_tma_copy(packed, pc.make_global_tensor(pc.bf16, Layout((256, 128), (128, 1))))


def test_a_box_narrower_than_the_tiles_narrow_row_is_refused():
    """A 64-B tile row holding two 32-B array rows: each box row would take a pattern row of its own."""
    tile = pc.make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0, Layout((2, 64, 16), (16, 64, 1))))
    array = pc.make_global_tensor(pc.bf16, Layout((2, 256, 16), (4096, 16, 1)))
    with pytest.raises(pc.PlanError, match="the box row must be the tile's whole row"):
        make_tma_copy(tile, array)


# --- 128-byte offsets under a swizzle ------------------------------------------------------------------------------

@pytest.mark.parametrize("offset", [128, 256, 384, 512, 640, 768, 896])
def test_a_swizzled_tile_at_any_128_byte_offset_is_planned_at_that_offset(offset):
    buf = pc.make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0, Layout((32, 64, 2), (64, 1, offset // 2))))
    plan = make_tma_copy(buf[:, :, 1], pc.make_global_tensor(pc.bf16, Layout((64, 64), (64, 1))))
    assert [i.smem_offset for i in plan.instructions] == [offset]
    verify_tma(plan)


@pytest.mark.parametrize("tile,match", [
    (pc.make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0, Layout((32, 64), (64, 1))), base_align=128),
     "a 128B-swizzled box needs 1024-byte alignment of the buffer"),
    (pc.make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0, Layout((32, 64, 2), (64, 1, 2080))))[:, :, 1],
     "the tile starts 4160 B into the buffer; TMA boxes start on 128-byte boundaries"),
])
def test_a_swizzled_tile_whose_phase_is_unknown_or_misaligned_is_refused(tile, match):
    with pytest.raises(pc.PlanError, match=match):
        make_tma_copy(tile, pc.make_global_tensor(pc.bf16, Layout((64, 64), (64, 1))))


# --- broadcast and overlapping arrays ------------------------------------------------------------------------------

@pytest.mark.parametrize("array,match", [
    (Layout((64, 96), (0, 1)), "the array has a stride-0 mode"),
    (Layout((64, 96), (16, 1)), "the array's modes overlap"),
    (Layout((4, 64, 32), (32, 32, 1)), "the array's modes overlap"),
])
def test_a_store_to_a_broadcast_or_overlapping_array_is_refused_as_a_race(array, match):
    tile = pc.make_smem_tensor(pc.f32, Layout(tuple(min(n, 32) for n in array.shape),
                                              (1024, 32, 1)[-len(array.shape):]))
    with pytest.raises(pc.PlanError, match=match):
        make_tma_copy(pc.make_global_tensor(pc.f32, array), tile)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 80), units=st.integers(1, 4), row_step=st.sampled_from([0, 4, 8, 12, 16, 40]),
       tile_rows=st.sampled_from([8, 16, 32]), t=st.integers(0, 3))
def test_a_load_of_any_broadcast_or_overlapping_view_equals_the_layouts(rows, units, row_step, tile_rows, t):
    """Arrays of f32 rows ``row_step`` elements apart (0: a broadcast; less than the row: overlapping rows)."""
    cols = 4 * units
    array = pc.make_global_tensor(pc.f32, Layout((rows, cols), (row_step, 1)))
    plan = make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((tile_rows, cols), (cols, 1))), array)
    if rows > 1:                    # an extent-1 mode gets a stride the driver takes (any reads the same bytes)
        assert plan.tensor_map.global_strides[0] == row_step * 4
    verify_tma(plan, seed=t)


# --- six and more modes, hierarchical modes ------------------------------------------------------------------------

def test_six_modes_merge_contiguous_ones_and_explain_says_which():
    _, g, s, _, _, _ = next(c for c in BOXES if c[0] == "u8-6-modes")
    plan = make_tma_copy(s, g)
    assert plan.tensor_map.rank == 5 and len(plan.instructions) == 1
    assert "merged into one tensor-map dimension of 6" in plan.explain()


def test_a_hierarchical_mode_is_one_dimension_per_sub_mode_moved_by_quotient_and_remainder():
    _, g, s, _, _, _ = next(c for c in BOXES if c[0] == "f32-hierarchical-rows-inside-a-run")
    plan = make_tma_copy(s, g)
    assert plan.tensor_map.global_dims == (64, 8, 16) and plan.tensor_map.box == (64, 4, 1)
    assert plan.coords((5, 0)) == [(0, 4, 2)] and plan.coords((31, 0)) == [(0, 4, 15)]
    assert "(t0 * 4) % 8 on dim 1, (t0 * 4) / 8 on dim 2" in plan.explain()


@settings(max_examples=20, deadline=None)
@given(a=st.sampled_from([2, 4, 8, 16]), b=st.integers(1, 9), gap=st.sampled_from([0, 4, 8]),
       tile=st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
def test_a_tile_over_any_hierarchical_row_mode_equals_the_layouts(a, b, gap, tile):
    """Rows in ``b`` groups of ``a``, the groups ``gap`` rows apart; the tile's rows inside one group or whole
    groups (else refused, naming the rule)."""
    array = pc.make_global_tensor(pc.f32, Layout(((a, b), 16), ((16, (a + gap) * 16), 1)))
    tile_l = pc.make_smem_tensor(pc.f32, Layout((tile, 16), (16, 1)))
    if a % tile and tile % a:
        with pytest.raises(pc.PlanError, match="neither lie inside one run of its inner sub-modes"):
            make_tma_copy(tile_l, array)
        return
    verify_tma(make_tma_copy(tile_l, array), seed=a + b)
    verify_tma(make_tma_copy(array, tile_l), seed=a * b)


def test_element_origins_on_a_hierarchical_array_are_refused_naming_the_view():
    _, g, s, _, _, _ = next(c for c in BOXES if c[0] == "f32-hierarchical-rows-whole-runs")
    with pytest.raises(pc.PlanError, match="element origins are planned on arrays whose modes are each one tensor-map "
                                           "dimension.*hierarchical array mode 0"):
        make_tma_copy(s, g, origin="element")


def test_six_modes_that_do_not_merge_are_refused_naming_the_rule():
    array = pc.make_global_tensor(pc.u8, Layout((2, 3, 4, 5, 6, 32), (23040, 7680, 1920, 384, 64, 1)))
    tile = pc.make_smem_tensor(pc.u8, Layout((1, 2, 2, 2, 2, 16), (0, 128, 64, 32, 16, 1)))
    with pytest.raises(pc.PlanError, match="no two of them merge"):
        make_tma_copy(tile, array)


# --- multicast to any mask of a cluster shape ----------------------------------------------------------------------

def test_a_cluster_rank_is_x_fastest_then_y_then_z():
    assert Multicast.of((2, 2, 2), [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)]).mask == 0b10010110


@pytest.mark.parametrize("kwargs,match", [
    (dict(cluster=(2, 2), mask=0b10000), "names CTAs outside the cluster"),
    (dict(cluster=(2, 2), mask=0), "mask 0 names no CTA"),
    (dict(cluster=(2, 2), mask=3, along="x"), "give a mask or an axis to multicast along, not both"),
    (dict(cluster=(2, 1), along="w"), "the cluster's axes are x, y and z"),
    (dict(cluster=(4, 4, 2), along="x"), "holds 32 CTAs; a multicast mask reaches at most 16"),
])
def test_a_multicast_outside_the_cluster_rules_is_refused(kwargs, match):
    with pytest.raises(pc.PlanError, match=match):
        Multicast(**kwargs)


def test_a_cta_outside_the_mask_issues_nothing_and_its_shared_memory_is_untouched():
    _, g, s, _, _, options = next(c for c in MULTICAST if c[0] == "bf16-2x2-mask-0b0110")
    plan = make_tma_copy(s, g, **options)
    with pytest.raises(pc.PlanError, match=r"CTA 0: the multicast is issued by the CTAs \[1, 2\]"):
        plan.stream(0, 0, 0, cta=0)
    verify_tma(plan)       # checks CTAs 0 and 3 stay as they were


def test_a_pair_multicast_counts_both_ctas_tiles_on_each_even_barrier():
    _, g, s, _, _, _ = MULTICAST[0]
    plain = make_tma_copy(s, g, multicast=Multicast((2, 2), mask=0b1111))
    pair = make_tma_copy(s, g, multicast=Multicast((2, 2), mask=0b1111), cta_group=2)
    assert pair.expect_tx == 2 * plain.expect_tx and pair.atom.ptx.endswith(".multicast::cluster.cta_group::2")
    verify_tma(pair)
    with pytest.raises(pc.PlanError, match="mask 0x000a holds CTA 1 without its pair CTA 0"):
        make_tma_copy(s, g, multicast=Multicast((2, 2), mask=0b1010), cta_group=2)


# --- L2 promotion and cache policies -------------------------------------------------------------------------------

@pytest.mark.parametrize("promotion,code", [("none", 0), ("64B", 1), ("128B", 2), ("256B", 3)])
def test_the_l2_promotion_is_the_maps_field(promotion, code):
    _, g, s, _, _, _ = BOXES[0]
    plan = make_tma_copy(s, g, l2_promotion=promotion)
    assert plan.tensor_map.l2_promotion == code and f"L2 promotion {promotion}" in plan.explain()


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(l2_promotion="512B"), pc.PlanError, "promotes L2 fills by 'none', '64B', '128B', '256B'"),
    (dict(cache_hint="evict_sometimes"), pc.PlanError, "a hint is one of evict_normal, evict_first"),
    (dict(cache_hint=0.5), TypeError, "cache_hint is a priority name or a CachePolicy"),
])
def test_an_unknown_l2_option_is_refused(kwargs, error, match):
    _, g, s, _, _, _ = BOXES[0]
    with pytest.raises(error, match=match):
        make_tma_copy(s, g, **kwargs)


@pytest.mark.parametrize("kwargs,match", [(dict(fraction=0.0), "outside \\(0, 1\\]"),
                                          (dict(primary="evict_often"), "primary priority is one of"),
                                          (dict(secondary="evict_last"), "secondary priority is one of")])
def test_a_cache_policy_outside_createpolicy_is_refused(kwargs, match):
    with pytest.raises(pc.PlanError, match=match):
        pc.CachePolicy(**kwargs)


# --- the generated code: one module for the multicast and hint cases, compiled once ---------------------------------

CODEGEN = [c for c in BOXES if "multicast" in c[5] or "cache_hint" in c[5]]


def _entry(k: int, plan) -> str:
    n = len(plan.tile_shape)
    tiles = ", ".join(f"int t{i}" for i in range(n))
    args = ", ".join(f"t{i}" for i in range(n))
    smem = "" if plan.direction == "prefetch" else "smem, "
    mbar = "mbar, " if plan.direction == "load" else ""
    return (plan.cuda(f"f{k}").replace('#include "pycute/tma.cuh"\n', "") +
            f'extern "C" __global__ void k{k}(const void* map, unsigned smem, unsigned mbar, {tiles}) '
            f'{{ f{k}(map, {smem}{mbar}{args}); }}\n')


@pytest.fixture(scope="module")
def codegen():
    plans = []
    for name, g, s, tiles, store, options in CODEGEN:
        plans.append(("load", name, make_tma_copy(s, g, **options), tiles))
        if store:
            plans.append(("store", name, make_tma_copy(g, s, **_store_options(options)), tiles))
    source = '#include "pycute/tma.cuh"\n' + "".join(_entry(k, p) for k, (_, _, p, _) in enumerate(plans))
    return plans, compile_cuda(source, arch="sm_90a")


def test_every_multicast_and_hinted_box_assembles_to_its_utma_instruction(codegen):
    plans, compiled = codegen
    sass = compiled.sass()
    for k, (_, name, plan, _) in enumerate(plans):
        body = sass[sass.index(f".text.k{k}:"):]
        body = body[:body.find(".section", 1)]
        lines = [line for line in body.splitlines() if re.search(r"UTMA(LDG|STG|REDG|PF)", line)]
        assert len(lines) == len(plan.instructions), name
        for line in lines:
            assert ("MULTICAST" in line) == (plan.multicast is not None), (name, line)
            assert ("desc[" in line) == (plan.cache_hint is not None), (name, line)


def test_the_compiled_code_issues_the_plans_stream_with_its_mask_and_policy_on_every_cta(codegen):
    plans, compiled = codegen
    for k, (_, name, plan, tiles) in enumerate(plans):
        ranks = plan.multicast.spec.participants() if plan.multicast else [0]
        cluster = plan.multicast.spec.cluster if plan.multicast else (1, 1, 1)
        for rank in ranks:
            x, y, z = rank % cluster[0], rank // cluster[0] % cluster[1], rank // (cluster[0] * cluster[1])
            specials = {"%cluster_ctarank": rank, "%cluster_nctarank": cluster[0] * cluster[1] * cluster[2],
                        "%cluster_ctaid.x": x, "%cluster_ctaid.y": y, "%cluster_ctaid.z": z}
            tile = tiles[-1]
            params = {0: 0x7000_0000_0000, 1: 0x400, 2: 8, **{3 + i: t for i, t in enumerate(tile)}}
            thread = trace_entry(compiled.ptx, params, {}, f"k{k}", specials=specials)
            assert thread.tma == plan.stream(0x400, *tile, cta=rank), (name, rank)


@pytest.mark.parametrize("arch", ["sm_100a"])
def test_a_pair_multicast_assembles_to_one_2cta_multicast_utmaldg_per_box(arch):
    _, g, s, _, _, _ = MULTICAST[0]
    plan = make_tma_copy(s, g, multicast=Multicast((2, 2), mask=0b1111), cta_group=2, cache_hint="evict_first")
    src = plan.cuda("ld") + 'extern "C" __global__ void k(const void* m, unsigned s, unsigned b, int x, int y) ' \
                            '{ ld(m, s, b, x, y); }'
    sass = compile_cuda(src, arch=arch).sass()
    lines = [line for line in sass.splitlines() if "UTMALDG" in line]
    assert len(lines) == len(plan.instructions)
    assert all(re.search(r"UTMALDG\.2D\.MULTICAST\.2CTA", line) and "desc[" in line for line in lines), lines
