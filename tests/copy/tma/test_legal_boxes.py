"""Boxes the H200 copies that pycute used to refuse (issue 43, item 1): a multicast whose mask names one CTA, rows
packed under a swizzle (and rows under 16 B) that a map with contiguous modes merged serves, stores whose boxes
end before a row's partial 16-byte unit, arrays with two modes of one stride, nested sub-modes a few bytes apart.
Each case of cases_legal.py is emulated against the two layouts alone; each rule's refusal, where one stays, names
what it refuses."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle
from pycute.compile import compile_cuda
from pycute.copy.tma import make_tma_copy
from pycute.copy.tma.multicast import Multicast
from pycute.copy.tma.rules import check_map
from pycute.interp.stream import trace_entry
from pycute.sim.emulator import Sm90Emulator
from pycute.sim.verify import verify_tma

from .cases_legal import EQUAL_STRIDES, LEGAL, MERGED, NESTED, ONE_CTA, PARTIAL_ROW

STORES = [c for c in LEGAL if c[5] is not None]


def named(cases, name):
    return next(c for c in cases if c[0] == name)


@pytest.mark.parametrize("name,g,s,tiles,load,store", LEGAL, ids=[c[0] for c in LEGAL])
def test_every_case_loads_as_the_layouts_say(name, g, s, tiles, load, store):
    verify_tma(make_tma_copy(s, g, **load), seed=21)


@pytest.mark.parametrize("name,g,s,tiles,load,store", STORES, ids=[c[0] for c in STORES])
def test_every_case_stores_as_the_layouts_say(name, g, s, tiles, load, store):
    verify_tma(make_tma_copy(g, s, **store), seed=22)


@pytest.mark.parametrize("name,g,s,tiles,load,store", LEGAL, ids=[c[0] for c in LEGAL])
def test_every_plans_tensor_map_keeps_the_encoders_rules(name, g, s, tiles, load, store):
    """What cuTensorMapEncodeTiled checks, on the final parameters (no driver here; tools/tma_boxes.py encodes them
    on the GPU): strides 16-byte multiples, rows whole 16-byte units within the swizzle's span, boxes of 1..256."""
    m = make_tma_copy(s, g, **load).tensor_map
    check_map(m, "")
    elem = pc.dtype(m.dtype).bits // 8
    assert all(st % 16 == 0 for st in m.global_strides) and all(1 <= b <= 256 for b in m.box)
    assert (m.box[0] * elem) % 16 == 0 and m.box[0] * elem <= m.swizzle.span


# --- a multicast whose mask names one CTA -------------------------------------------------------------------------

def test_a_mask_naming_one_cta_is_a_plain_load_that_cta_issues_whole():
    _, g, s, _, load, _ = named(ONE_CTA, "bf16-2x2-mask-one-cta")
    plan = make_tma_copy(s, g, **load)
    assert ".multicast::cluster" not in plan.atom.ptx and plan.multicast.plain
    assert plan.expect_tx == plan.tensor_map.box_bytes == 128 * 64 * 2
    issues = plan.stream(0, 1, 0, cta=2)
    assert [i.mask for i in issues] == [None] and issues[0].coords == (0, 128)
    with pytest.raises(pc.PlanError, match=r"CTA 0: the multicast is issued by the CTAs \[2\]"):
        plan.stream(0, 1, 0, cta=0)
    assert ("each mask names its issuer alone, so the load is a plain one (no .multicast::cluster): CTA rank 2 loads "
            "the whole tile into its own shared memory and the others issue nothing") in plan.explain()


def test_one_cta_per_line_along_an_axis_is_every_ctas_own_plain_load():
    _, g, s, _, load, _ = named(ONE_CTA, "bf16-2x1-along-y-one-cta")
    plan = make_tma_copy(s, g, **load)
    assert plan.multicast.spec.participants() == [0, 1]
    assert all(i.mask is None for r in (0, 1) for i in plan.stream(0, 0, 0, cta=r))
    assert "every CTA loads its own tile" in plan.explain()


def test_multicast_to_one_cta_moves_what_the_plain_load_moves():
    _, g, s, _, load, _ = named(ONE_CTA, "f32-multicast-1")
    one, plain = make_tma_copy(s, g, **load), make_tma_copy(s, g)
    assert (one.tensor_map, one.instructions, one.expect_tx) == (plain.tensor_map, plain.instructions, plain.expect_tx)


def test_the_one_cta_load_compiles_to_a_plain_utmaldg_the_other_ctas_skip():
    _, g, s, _, load, _ = named(ONE_CTA, "bf16-2x2-mask-one-cta")
    src = make_tma_copy(s, g, **load).cuda("ld")
    assert "if (rank != 2u) return;" in src and "pycute_tma_load_2d(map, smem, mbar, " in src
    assert "unsigned short mask" not in src and "slice" not in src
    src += 'extern "C" __global__ void k(const void* map, unsigned s, unsigned m, int a, int b) { ld(map, s, m, a, b); }'
    histogram = compile_cuda(src, arch="sm_90a").histogram()
    assert histogram.get("UTMALDG.2D") == 1 and "UTMALDG.2D.MULTICAST" not in histogram


@pytest.mark.parametrize("kwargs,match", [
    (dict(cluster=(2, 2), mask=0), "mask 0 names no CTA"),
    (dict(cluster=(2, 2), mask=0b10000), "names CTAs outside the cluster"),
])
def test_a_mask_naming_no_cta_of_the_cluster_is_refused(kwargs, match):
    with pytest.raises(pc.PlanError, match=match):
        Multicast(**kwargs)


def test_a_pair_load_needs_both_ctas_of_a_pair_in_its_mask_still():
    _, g, s, _, _, _ = named(ONE_CTA, "bf16-2x2-mask-one-cta")
    with pytest.raises(pc.PlanError, match="holds CTA 2 without its pair CTA 3"):
        make_tma_copy(s, g, multicast=Multicast((2, 2), mask=0b0100), cta_group=2)


# --- contiguous modes merged: packed narrow swizzled rows, rows under 16 B ------------------------------------------

def test_packed_16_byte_rows_under_128B_are_whole_pattern_rows_of_the_merged_map():
    """Unmerged, each 16-byte box row would take a 128-byte pattern row (measured, docs/tma.md); merged, eight rows
    are one pattern row, as the packed tile has them."""
    _, g, s, _, _, _ = named(MERGED, "bf16-16B-rows-packed-in-128B")
    plan = make_tma_copy(s, g)
    m = plan.tensor_map
    assert (m.global_dims, m.global_strides, m.box, m.swizzle.name) == ((64, 32), (128,), (64, 8), "128B")
    assert plan.coords((3, 0)) == [(0, 24)]
    text = plan.explain()
    assert "array modes of extents 8 and 256 (strides 1, 8) merged into one tensor-map dimension of 2048" in text
    assert "t1 <= 0" in text and "the tile covers array mode 1 whole, so only tile index 0 lies in the array" in text


def test_a_tile_index_past_a_merged_modes_only_tile_is_refused_and_trapped():
    _, g, s, _, _, _ = named(MERGED, "bf16-16B-rows-packed-in-128B")
    plan = make_tma_copy(s, g)
    with pytest.raises(pc.PlanError, match=r"t1 = 1 breaks t1 <= 0: array modes of extents 8 and 256"):
        plan.coords((0, 1))
    assert "if (t1 > 0) {" in plan.cuda("ld")


def test_the_checked_build_traps_on_a_tile_index_past_the_merged_bound_and_issues_the_box_within_it():
    _, g, s, _, _, _ = named(MERGED, "bf16-16B-rows-packed-in-128B")
    plan = make_tma_copy(s, g)
    src = plan.cuda("ld") + ('extern "C" __global__ void k(const void* map, unsigned smem, unsigned mbar, int a, '
                             'int b) { ld(map, smem, mbar, a, b); }')
    checked = compile_cuda(src, arch="sm_90a", checked=True)
    bad = trace_entry(checked.ptx, {0: 0x7000_0000, 1: 0x400, 2: 0x80, 3: 2, 4: 1}, {}, "k")
    assert bad.tma == [] and bad.trap.startswith("pycute: ld: t1 = 1 breaks t1 <= 0: array modes of extents 8")
    good = trace_entry(checked.ptx, {0: 0x7000_0000, 1: 0x400, 2: 0x80, 3: 2, 4: 0}, {}, "k")
    assert good.trap is None and good.tma == plan.stream(0x400, 2, 0)


SWIZZLES = {None: None, 32: (1, 4, 3), 64: (2, 4, 3), 128: (3, 4, 3)}          # on bytes


@settings(max_examples=30, deadline=None)
@given(dtype=st.sampled_from([pc.u8, pc.bf16, pc.f32]), row_bytes=st.sampled_from([4, 8, 16, 32, 48, 64]),
       rows=st.integers(1, 300), tile_rows=st.sampled_from([8, 16, 32, 64]), span=st.sampled_from(list(SWIZZLES)),
       t=st.integers(0, 5))
def test_rows_packed_back_to_back_load_and_store_as_the_layouts_say_or_are_refused_naming_a_rule(
        dtype, row_bytes, rows, tile_rows, span, t):
    """Arrays of ``rows`` rows of ``row_bytes`` back to back, tiles of ``tile_rows`` rows packed the same way under
    a swizzle of ``span`` bytes (or none): planned (and emulated as the layouts say) wherever whole pattern rows of
    the merged run fill the tile and the array, else refused naming the rule."""
    elem = dtype.bits // 8
    cols = row_bytes // elem
    if cols == 0 or (span and tile_rows * row_bytes % span):
        return
    sw = SWIZZLES[span]
    layout = Layout((tile_rows, cols), (cols, 1))
    tile = pc.make_smem_tensor(dtype, layout if sw is None else ComposedLayout(Swizzle(sw[0], sw[1] - (elem.bit_length()
                                                                                                     - 1), sw[2]),
                                                                                 0, layout))
    array = pc.make_global_tensor(dtype, Layout((rows, cols), (cols, 1)))
    whole = span or 16
    must = (rows * row_bytes) % whole == 0 and row_bytes <= whole and whole % row_bytes == 0
    try:
        load, store = make_tma_copy(tile, array), make_tma_copy(array, tile)
    except pc.PlanError as e:
        assert not must, str(e)
        assert str(e).startswith("make_tma_copy: ")
        return
    verify_tma(load, seed=t)
    verify_tma(store, seed=t)


def test_rows_under_16_bytes_back_to_back_are_one_run_of_whole_units():
    _, g, s, _, _, _ = named(MERGED, "u8-8B-rows")
    plan = make_tma_copy(s, g)
    assert plan.tensor_map.box == (256, 2) and plan.tensor_map.global_dims == (256, 8) and len(plan.instructions) == 1


@pytest.mark.parametrize("array,tile,match", [
    (Layout((256, 8), (16, 1)), Layout((64, 8), (8, 1)), "the box's rows are 8 B"),
    (Layout((256, 16), (32, 1)), Layout((64, 16), (16, 1)), r"TMA puts each box row at a whole pattern row \(32 B apart"),
], ids=["8B-rows-with-gaps", "16B-rows-with-gaps-under-32B"])
def test_rows_the_array_does_not_lay_out_back_to_back_stay_refused(array, tile, match):
    swizzle = Swizzle(1, 4, 3) if "16" in match or "pattern" in match else None
    s = pc.make_smem_tensor(pc.u8, tile if swizzle is None else ComposedLayout(swizzle, 0, tile))
    with pytest.raises(pc.PlanError, match=match):
        make_tma_copy(s, pc.make_global_tensor(pc.u8, array))


def test_a_merged_map_is_taken_only_where_it_has_fewer_boxes():
    """A whole-row tile of 128-byte rows: one box either way, so the array's own modes stay the map's."""
    g = pc.make_global_tensor(pc.f32, Layout((300, 32), (32, 1)))
    plan = make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((64, 32), (32, 1))), g)
    assert plan.tensor_map.global_dims == (32, 300) and not plan.notes and not plan.limits


def test_a_retarget_of_a_merged_map_is_refused_naming_the_merge():
    _, g, s, _, _, _ = named(MERGED, "bf16-16B-rows-packed-in-128B")
    with pytest.raises(pc.PlanError, match="a dimension over several array modes merged"):
        make_tma_copy(s, g).retarget(extents=(128, None))


# --- a store before a row's partial 16-byte unit --------------------------------------------------------------------

def test_a_store_at_an_element_origin_before_the_partial_unit_is_planned_with_the_bound_that_keeps_it_there():
    _, g, s, _, _, store = named(PARTIAL_ROW, "bf16-store-before-the-partial-unit")
    plan = make_tma_copy(g, s, **store)
    bound = next(p for p in plan.preconditions if p.kind == "at_most")
    assert bound.rule == "c <= 32"
    assert ("the array's rows are 200 B; a TMA store writes every 16-byte unit it touches whole (measured on the "
            "H200, docs/tma.md), so a box reaching a row's last unit (row bytes 192..207: 8 B of the row, 8 B past it) "
            "overwrites those 8 B") in bound.why
    with pytest.raises(pc.PlanError, match=r"c = 40 breaks c <= 32: the array's rows are 200 B"):
        plan.stream(0, 0, 40)


def test_a_tile_index_store_covers_the_arrays_last_tile_so_it_is_refused_pointing_to_element_coordinates():
    _, g, s, _, _, _ = named(PARTIAL_ROW, "bf16-store-before-the-partial-unit")
    with pytest.raises(pc.PlanError, match=r"\(t1 = 1, the array's last along its rows\) reaches past element 96: "
                                           r"store the tiles before it with element coordinates"):
        make_tma_copy(g, s)


def test_only_a_box_touching_the_partial_unit_overwrites_past_the_row():
    """The emulator's model (the H200's, docs/tma.md): rows of 200 B (100 bf16) 224 B apart; a box over elements
    0..63 leaves the bytes past each row alone, one over 64..127 writes the row's last unit whole."""
    _, g, s, _, _, store = named(PARTIAL_ROW, "bf16-store-before-the-partial-unit")
    params = make_tma_copy(g, s, **store).tensor_map
    for col, overwritten in ((0, False), (64, True)):
        emu = Sm90Emulator(smem_bytes=8192)
        emu.write_smem(0, np.full(8192, 0x5A, dtype=np.uint8))
        array = np.zeros(64 * 224, dtype=np.uint8)
        emu.tma_store(params, array, (col, 0), 0)
        past = array.reshape(64, 224)[:, 200:208]
        assert bool(past.any()) == overwritten


@pytest.mark.parametrize("origin,planned", [((0, 0), True), ((8, 32), True), ((0, 48), False), ((3, 64), False)])
def test_a_static_store_origin_is_planned_where_its_box_ends_before_the_partial_unit(origin, planned):
    _, g, s, _, _, _ = named(PARTIAL_ROW, "u8-store-run-time-origin")
    if planned:
        verify_tma(make_tma_copy(g, s, origin=origin))
        return
    with pytest.raises(pc.PlanError, match=rf"the store's boxes at element {origin[1]} reach element "
                                           rf"{origin[1] + 16} of a row: the array's rows are 50 B.*\(row bytes "
                                           r"48..63: 2 B of the row, 14 B past it\).*must end at or before element 48"):
        make_tma_copy(g, s, origin=origin)


def test_a_run_time_store_origin_keeps_its_box_before_the_partial_unit_and_the_checked_build_traps_past_it():
    _, g, s, _, _, store = named(PARTIAL_ROW, "u8-store-run-time-origin")
    plan = make_tma_copy(g, s, **store)
    assert [p.rule for p in plan.preconditions if p.name == "c"] == ["c % 16 == 0", "c >= 0", "c <= 32"]
    with pytest.raises(pc.PlanError, match=r"c = 48 breaks c <= 32: the array's rows are 50 B"):
        plan.at(c=48)
    assert "if (c > 32) {" in plan.cuda("st")


def test_a_reduction_is_held_to_the_same_bound():
    _, g, s, _, _, store = named(PARTIAL_ROW, "u32-add-before-the-partial-unit")
    assert [p.rule for p in make_tma_copy(g, s, **store).preconditions if p.kind == "at_most"] == ["c <= 12"]


# --- two modes of one stride ----------------------------------------------------------------------------------------

def test_two_modes_of_one_stride_are_planned_and_explain_says_each_is_bounded_by_its_own_extent():
    _, g, s, _, _, _ = named(EQUAL_STRIDES, "f32-two-modes-one-stride")
    plan = make_tma_copy(s, g)
    assert plan.tensor_map.global_dims == (64, 64, 8) and plan.tensor_map.global_strides == (256, 256)
    assert "array modes 1 and 2 both step 256 B (an overlapping view): TMA bounds each coordinate by its own mode's " \
           "extent (64 and 8)" in plan.explain()


@pytest.mark.parametrize("array,tile,match", [
    (Layout((64, 64, 8), (1, 64, 64)), Layout((64, 16, 2), (1, 64, 1024)),
     r"the array's modes overlap: the tile's elements \(0, 1, 0\) and \(0, 0, 1\) both address element 64"),
    (Layout((64, 96), (0, 1)), Layout((2, 32), (32, 1)),
     r"the array has a stride-0 mode \(a broadcast view\): the tile's elements \(0, 0\) and \(1, 0\) both address "
     r"element 0"),
], ids=["equal-strides", "broadcast"])
def test_a_store_whose_tile_addresses_an_element_twice_is_refused_naming_both(array, tile, match):
    with pytest.raises(pc.PlanError, match=match + r".*TMA orders no two elements of a box"):
        make_tma_copy(pc.make_global_tensor(pc.f32, array), pc.make_smem_tensor(pc.f32, tile))


def test_a_store_of_one_row_into_a_broadcast_view_addresses_each_element_once_and_is_planned():
    g = pc.make_global_tensor(pc.f32, Layout((64, 96), (0, 1)))
    verify_tma(make_tma_copy(g, pc.make_smem_tensor(pc.f32, Layout((1, 32), (32, 1)))))


# --- nested sub-modes a few bytes apart ------------------------------------------------------------------------------

def test_a_nested_mode_whose_sub_modes_coalesce_is_one_dimension_as_tvm_plans_it():
    _, g, s, _, _, _ = named(NESTED, "u8-nested-columns-8B-apart")
    plan = make_tma_copy(s, g)
    m = plan.tensor_map
    assert (m.global_dims, m.global_strides, m.box) == ((32, 128), (32,), (32, 64))      # tvm_tma_plans.json's
    assert "hierarchical array mode 0 (8, 4) : (1, 8) is one run of 32 elements 1 apart" in plan.explain()


def test_element_origins_are_planned_on_a_nested_mode_that_coalesces():
    _, g, s, _, _, _ = named(NESTED, "bf16-nested-columns-8B-apart-half")
    verify_tma(make_tma_copy(s, g, origin=(pc.dynamic("r"), pc.dynamic("c"))))


def test_a_nested_sub_mode_a_few_bytes_apart_that_does_not_coalesce_stays_refused_by_the_stride_rule():
    g = pc.make_global_tensor(pc.u8, Layout(((8, 4), 128), ((1, 12), 64)))
    with pytest.raises(pc.PlanError, match="has a stride of 12 B; a tensor map stride is a multiple of 16 B"):
        make_tma_copy(pc.make_smem_tensor(pc.u8, Layout((32, 64), (1, 32))), g)


def test_a_one_element_contiguous_mode_keeps_its_stride():
    """CuTe's coalesce gives a one-element mode stride 0; the contiguous mode of a 1 x 1 array must keep its 1."""
    tile = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
    assert make_tma_copy(tile, pc.make_global_tensor(pc.bf16, Layout((1, 1), (16, 1)))).tensor_map.global_dims[0] == 1
