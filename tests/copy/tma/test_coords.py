"""TMA boxes at element coordinates: make_tma_copy(origin=...) places the tile's box at a signed element origin
per array mode, static or run-time, the contiguous mode's on a whole 16-byte unit (the H200 faults otherwise, for
every direction); the emulator loads exactly numpy's view of the array there (zeros or the NaN fill outside it);
what a run-time origin must keep is stated (preconditions), checked by stream/at, and trapped on by the checked
build; the tile-index form stays the short form."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import Layout
from pycute.compile import compile_cuda
from pycute.harness.tma import TmaRoundTrip
from pycute.sim.emulator import Sm90Emulator
from pycute.interp.stream import trace_entry
from pycute.tensor.values import smem_element_offsets

from .cases import ELEMENT

#: The H200's run 2 (docs/runs/tma/tma-h200-coords.jsonl) faulted on a box starting off a 16-byte unit of the contiguous
#: mode.
OFF_UNIT = (r"not on a 16-byte unit \(4 elements\): a box whose start along the contiguous mode is off a 16-byte "
            r"unit \(4 elements\) raised an illegal-instruction exception on the H200 for loads, stores, reductions "
            r"and prefetches alike \(docs/tma.md, docs/runs/tma/tma-h200-coords.jsonl\)")
F32 = pc.make_global_tensor(pc.f32, Layout((40, 24), (24, 1)))
F32_TILE = pc.make_smem_tensor(pc.f32, Layout((16, 8), (8, 1)))
BF16 = pc.make_global_tensor(pc.bf16, Layout((300, 256), (256, 1)))
KMAJOR = pc.kmajor_smem_tensor(pc.bf16, 128, 128, "128B")        # K split in two 64-element swizzle atoms
GROUP_ROWS = (0, 77, 300, 811)


def numpy_view(array: np.ndarray, origin: tuple, shape: tuple, fill: float) -> np.ndarray:
    """``array[origin : origin + shape]`` with ``fill`` where the window leaves the array."""
    out = np.full(shape, fill, dtype=array.dtype)
    src = tuple(slice(max(o, 0), min(o + n, e)) for o, n, e in zip(origin, shape, array.shape))
    dst = tuple(slice(s.start - o, s.stop - o) for s, o in zip(src, origin))
    if all(s.stop > s.start for s in src):
        out[dst] = array[src]
    return out


def loaded_tile(plan, array: np.ndarray) -> np.ndarray:
    """The tile a load plan leaves in shared memory, emulated, read back through the tile's layout."""
    tile = plan.tile_shape
    emu = Sm90Emulator(smem_bytes=-(-int(np.prod(tile)) * array.itemsize // 1024) * 1024 + 1024)
    for issue in plan.stream(0):
        emu.tma_load(plan.tensor_map, array.view(np.uint8).reshape(-1), issue.coords, issue.smem)
    offsets = smem_element_offsets(plan.smem)
    values = emu.ctas[0].smem.view(array.dtype)[offsets]
    return values.reshape(tile[::-1]).T if len(tile) == 2 else values


@settings(max_examples=40, deadline=None)
@given(row=st.integers(-60, 60), unit=st.integers(-10, 10))
def test_a_load_at_any_row_and_any_16_byte_column_equals_numpys_view_with_zeros(row, unit):
    a = np.arange(40 * 24, dtype=np.float32).reshape(40, 24) + 1
    got = loaded_tile(pc.make_tma_copy(F32_TILE, F32, origin=(row, 4 * unit)), a)
    assert np.array_equal(got, numpy_view(a, (row, 4 * unit), (16, 8), 0.0))


@settings(max_examples=25, deadline=None)
@given(row=st.integers(-60, 60), unit=st.integers(0, 10))
def test_a_nan_filling_load_at_any_row_and_a_non_negative_16_byte_column_equals_numpys_view_with_nan(row, unit):
    a = np.arange(40 * 24, dtype=np.float32).reshape(40, 24) + 1
    got = loaded_tile(pc.make_tma_copy(F32_TILE, F32, origin=(row, 4 * unit), oob_fill="nan"), a)
    assert np.array_equal(got, numpy_view(a, (row, 4 * unit), (16, 8), np.nan), equal_nan=True)


@pytest.mark.parametrize("origin", [(-1, 0), (-9, 0), (-9, 8), (-40, 4)])
def test_a_nan_filling_load_at_negative_rows_is_planned_and_fills_them_with_nan(origin):
    """The H200 loaded negative rows through NaN-filling maps as the layouts say (run 2: nan/*/neg-row,
    neg-one-row)."""
    a = np.arange(40 * 24, dtype=np.float32).reshape(40, 24) + 1
    got = loaded_tile(pc.make_tma_copy(F32_TILE, F32, origin=origin, oob_fill="nan"), a)
    assert np.array_equal(got, numpy_view(a, origin, (16, 8), np.nan), equal_nan=True)


@pytest.mark.parametrize("origin", [(0, -4), (-9, -8), (-1, -4)])
def test_a_nan_filling_load_at_a_negative_column_on_the_unit_loads_numpys_view_with_nan_before_the_array(origin):
    """Run 3 on the H200 (nan/*/neg-unit-col, neg-unit): the tile as the layouts say, NaN where it leaves the array."""
    plan = pc.make_tma_copy(F32_TILE, F32, origin=origin, oob_fill="nan")
    a = np.arange(40 * 24, dtype=np.float32).reshape(40, 24)
    emu = Sm90Emulator(smem_bytes=1024)
    emu.tma_load(plan.tensor_map, a.view(np.uint8).ravel(), plan.stream(0)[0].coords, 0)
    got = emu.ctas[0].smem[:512].view(np.float32).reshape(16, 8)
    assert np.array_equal(got, numpy_view(a, origin, (16, 8), np.nan), equal_nan=True)


@pytest.mark.parametrize("origin", [(0, -1), (-9, -5)])
def test_a_nan_filling_load_at_a_negative_column_off_the_unit_is_refused_by_the_16_byte_rule(origin):
    """Run 2's NaN-fill faults at negative columns (nan/*/negative, neg-col, neg-one-col) were all off the unit."""
    with pytest.raises(pc.PlanError, match=rf"the origin {origin[1]} on the contiguous mode 1 is {OFF_UNIT}"):
        pc.make_tma_copy(F32_TILE, F32, origin=origin, oob_fill="nan")


def test_a_run_time_column_of_a_nan_filling_load_is_a_16_byte_unit_of_either_sign():
    plan = pc.make_tma_copy(F32_TILE, F32, origin=(pc.dynamic("r"), pc.dynamic("c")), oob_fill="nan")
    assert [(p.name, p.rule) for p in plan.preconditions] == [("c", "c % 4 == 0")]
    assert "c % 4 == 0" in plan.cuda("ld") and "c >= 0" not in plan.explain()
    assert plan.stream(0, 3, -4)[0].coords == (-4, 3) and plan.stream(0, -9, 4)[0].coords == (4, -9)


def test_the_emulator_fills_a_nan_filling_loads_negative_rows():
    plan = pc.make_tma_copy(F32_TILE, F32, oob_fill="nan")
    emu = Sm90Emulator(smem_bytes=1024)
    emu.tma_load(plan.tensor_map, np.zeros(40 * 24 * 4, np.uint8), (0, -1), 0)
    assert np.isnan(emu.ctas[0].smem[:32].view(np.float32)).all() and not emu.ctas[0].smem[32:512].any()


@pytest.mark.parametrize("direction,reduce", [("load", None), ("store", None), ("reduction", "add")])
def test_the_emulator_refuses_a_box_starting_off_the_16_byte_unit(direction, reduce):
    plan = pc.make_tma_copy(F32_TILE, F32)
    emu, gmem = Sm90Emulator(smem_bytes=1024), np.zeros(40 * 24 * 4, np.uint8)
    with pytest.raises(pc.EmulationError, match=rf"TMA {direction} at coordinates \(6, 1\): the box starts 24 B "
                                                r"along dimension 0, off a 16-byte unit; the H200 raises an "
                                                r"illegal-instruction exception"):
        if direction == "load":
            emu.tma_load(plan.tensor_map, gmem, (6, 1), 0)
        else:
            emu.tma_store(plan.tensor_map, gmem, (6, 1), 0, reduce=reduce)


@pytest.mark.parametrize("reduce", [None, "add"])
@pytest.mark.parametrize("origin", [(0, 3), (77, 1), (5, 2)])
def test_a_static_store_or_reduction_origin_off_the_16_byte_unit_is_refused(origin, reduce):
    with pytest.raises(pc.PlanError, match=rf"the origin {origin[1]} on the contiguous mode 1 is {OFF_UNIT}"):
        pc.make_tma_copy(F32, F32_TILE, origin=origin, reduce=reduce)


@pytest.mark.parametrize("origin", [(0, 3), (-5, -3), (290, 90), (0, (1 << 31) - 1)])
def test_a_static_load_or_prefetch_origin_off_the_16_byte_unit_is_refused(origin):
    """A prefetch is made from its load plan, so the load's refusal is the prefetch's."""
    with pytest.raises(pc.PlanError, match=rf"the origin {origin[1]} on the contiguous mode 1 is {OFF_UNIT}"):
        pc.make_tma_copy(F32_TILE, F32, origin=origin)


@pytest.mark.parametrize("kind", ["load", "store", "reduce", "prefetch"])
def test_a_run_time_contiguous_origin_must_be_a_16_byte_unit_in_every_direction(kind):
    at = (pc.dynamic("r"), pc.dynamic("c"))
    plan = {"load": lambda: pc.make_tma_copy(F32_TILE, F32, origin=at),
            "store": lambda: pc.make_tma_copy(F32, F32_TILE, origin=at),
            "reduce": lambda: pc.make_tma_copy(F32, F32_TILE, origin=at, reduce="add"),
            "prefetch": lambda: pc.make_tma_copy(F32_TILE, F32, origin=at).prefetch()}[kind]()
    assert "c % 4 == 0" in [p.rule for p in plan.preconditions]
    with pytest.raises(pc.PlanError, match=r"c = 6 breaks c % 4 == 0: a box whose start along the contiguous mode "
                                           r"is off a 16-byte unit \(4 elements\) raised an illegal-instruction"):
        plan.stream(0, r=3, c=6)
    assert plan.stream(0, r=3, c=8)


@pytest.mark.parametrize("dtype,unit", [(pc.u8, 16), (pc.bf16, 8), (pc.f32, 4), (pc.f64, 2)])
def test_the_16_byte_unit_is_counted_in_the_arrays_elements(dtype, unit):
    g = pc.make_global_tensor(dtype, Layout((64, 256), (256, 1)))
    plan = pc.make_tma_copy(pc.make_smem_tensor(dtype, Layout((8, 128 // dtype.bits * 8), (128 // dtype.bits * 8, 1))),
                            g, origin=(0, pc.dynamic("c")))
    assert [p.rule for p in plan.preconditions] == [f"c % {unit} == 0"]


@settings(max_examples=25, deadline=None)
@given(row=st.integers(-140, 320), unit=st.integers(-17, 33))
def test_a_kmajor_swizzled_load_at_any_row_and_16_byte_column_emulates_as_the_layouts_say(row, unit):
    pc.make_tma_copy(KMAJOR, BF16, origin=(row, 8 * unit)).verify(seed=row & 7)


@pytest.mark.parametrize("origin,boxes", [((0, 0), 1), ((77, 64), 1), ((77, 8), 2), ((-5, -72), 2), ((290, 248), 2)])
def test_an_origin_between_the_swizzle_atoms_is_planned_without_splitting_the_mode(origin, boxes):
    """A static origin on a part boundary keeps the one 3-D box; between them the mode is not viewed in parts
    (two boxes), so the box never wraps inside a part."""
    plan = pc.make_tma_copy(KMAJOR, BF16, origin=origin)
    assert len(plan.instructions) == boxes and plan.expect_tx == 128 * 128 * 2
    plan.verify()


def test_element_coordinates_are_parameters_of_the_generated_function_and_tile_indices_stay_the_short_form():
    element = pc.make_tma_copy(KMAJOR, BF16, origin="element")
    assert element.coordinate_names == ("c0", "c1") and "int c0, int c1)" in element.cuda("ld")
    named = pc.make_tma_copy(KMAJOR, BF16, origin=(pc.dynamic("row"), 0))
    assert named.coordinate_names == ("row",) and "unsigned mbar, int row)" in named.cuda("ld")
    tile = pc.make_tma_copy(KMAJOR, BF16)
    assert tile.coordinates == "tile" and "int t0, int t1)" in tile.cuda("ld")
    assert tile.stream(0, 2, 1) == element.stream(0, 256, 128) == element.stream(0, c0=256, c1=128)


def test_the_issues_grouped_load_is_one_map_and_an_element_row_per_group():
    """Groups starting at rows 0, 77, 300 and 811 of one array: one plan, one map, one box per group tile."""
    a = pc.make_global_tensor(pc.bf16, Layout((1024, 128), (128, 1)))
    plan = pc.make_tma_copy(pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), a, origin=(pc.dynamic("row"), 0))
    assert [plan.stream(0, r)[0].coords for r in GROUP_ROWS] == [(0, r) for r in GROUP_ROWS]
    for r in GROUP_ROWS:
        plan.at(row=r).verify()


def test_a_run_time_origin_equals_the_static_plan_of_its_value():
    dynamic = pc.make_tma_copy(KMAJOR, BF16, origin=(pc.dynamic("row"), pc.dynamic("k")))
    for row, k in ((0, 0), (-77, 128), (299, 192)):
        static = pc.make_tma_copy(KMAJOR, BF16, origin=(row, k))
        assert dynamic.stream(0, row, k) == static.stream(0) == dynamic.at(row=row, k=k).stream(0)


@pytest.mark.parametrize("direction,origin,values,match", [
    ("load", (pc.dynamic("row"), pc.dynamic("k")), dict(row=0, k=65), r"k = 65 breaks k % 64 == 0"),
    ("store", (pc.dynamic("row"), pc.dynamic("k")), dict(row=-1, k=0), r"row = -1 breaks row >= 0"),
    ("store", (0, pc.dynamic("k")), dict(k=-64), r"k = -64 breaks k >= 0"),
])
def test_a_run_time_origin_that_breaks_a_precondition_is_refused_by_stream_and_at(direction, origin, values, match):
    plan = pc.make_tma_copy(KMAJOR, BF16, origin=origin) if direction == "load" else \
        pc.make_tma_copy(BF16, KMAJOR, origin=origin)
    with pytest.raises(pc.PlanError, match=match):
        plan.stream(0, **values)
    with pytest.raises(pc.PlanError, match=match):
        plan.at(**values)


def test_a_run_time_store_origin_is_non_negative_and_its_column_a_16_byte_unit():
    store = pc.make_tma_copy(F32, F32_TILE, origin=(pc.dynamic("r"), pc.dynamic("c")))
    assert [p.rule for p in store.preconditions] == ["r >= 0", "c % 4 == 0", "c >= 0"]
    assert "illegal-instruction exception on the H200" in store.explain()
    store.at(r=3, c=8).verify()


@pytest.mark.parametrize("origin", [(-1, 0), (0, -4)])
def test_a_static_negative_store_origin_is_refused(origin):
    """PTX forbids it; the H200 faulted on it (run 2: coord/store/*/-5,0 and 0,-4)."""
    mode, value = (0, origin[0]) if origin[0] < 0 else (1, origin[1])
    with pytest.raises(pc.PlanError, match=rf"a store's origin {value} on mode {mode} is negative; PTX requires"):
        pc.make_tma_copy(F32, F32_TILE, origin=origin)


@pytest.mark.parametrize("origin,error,match", [
    (5, TypeError, "origin must be 'tile', 'element' or a tuple"),
    ((1.5, 0), TypeError, "origin of mode 0 must be an integer"),
    ((0,), pc.PlanError, "origin has 1 entries; the array has 2 modes"),
    ("elements", pc.PlanError, "origin='elements'"),
    ((1 << 31, 0), pc.PlanError, "outside the signed 32-bit range"),
    ((pc.dynamic("map"), 0), pc.PlanError, "clash with the generated function's own"),
    ((pc.dynamic("r"), pc.dynamic("r")), pc.PlanError, "repeat"),
])
def test_a_bad_origin_is_refused_naming_the_value_and_the_rule(origin, error, match):
    with pytest.raises(error, match=match):
        pc.make_tma_copy(F32_TILE, F32, origin=origin)


def test_explain_and_the_generated_comment_state_the_origin_and_its_preconditions():
    plan = pc.make_tma_copy(KMAJOR, BF16, origin=(pc.dynamic("row"), pc.dynamic("k")))
    text = plan.explain()
    assert "mode 0 at row on dim 1, mode 1 at k / 64 on dim 2" in text and "k % 64 == 0" in text
    assert "// Preconditions (a checked build, -DPYCUTE_CHECKED, traps on them): k % 64 == 0." in plan.cuda("ld")


@pytest.mark.parametrize("kind", ["multicast", "prefetch", "stage"])
def test_element_origins_compose_with_multicast_prefetch_and_run_time_stages(kind):
    origin = (pc.dynamic("row"), pc.dynamic("k"))
    tile = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
    if kind == "multicast":
        plan = pc.make_tma_copy(tile, BF16, origin=origin, multicast=2)
    elif kind == "prefetch":
        plan = pc.make_tma_copy(tile, BF16, origin=origin).prefetch()
    else:
        ring = pc.make_smem_tensor(pc.bf16, pc.ComposedLayout(pc.Swizzle(3, 3, 3), 0, Layout((128, 64, 2),
                                                                                             (64, 1, 8192))))
        plan = pc.make_tma_copy(ring[:, :, pc.dynamic("stage")], BF16, origin=origin)
        assert plan.stream(0, -3, 64, stage=1)[0].smem == 16384
    plan.verify()


@pytest.fixture(scope="module")
def checked_load():
    plan = pc.make_tma_copy(KMAJOR, BF16, origin=(pc.dynamic("row"), pc.dynamic("k")))
    src = plan.cuda("ld") + ('extern "C" __global__ void k(const void* map, unsigned smem, unsigned mbar, int r, '
                             'int c) { ld(map, smem, mbar, r, c); }')
    return plan, compile_cuda(src, arch="sm_90a", checked=True), compile_cuda(src, arch="sm_90a")


@pytest.mark.parametrize("row,k", [(0, 0), (-77, 64), (299, 128), (-(1 << 31), -128)])
def test_the_compiled_code_issues_the_plans_boxes_at_any_origin(checked_load, row, k):
    plan, checked, plain = checked_load
    for compiled in (checked, plain):
        thread = trace_entry(compiled.ptx, {0: 0x7000_0000, 1: 0x400, 2: 0x80, 3: row, 4: k}, {}, "k")
        assert thread.trap is None and thread.tma == plan.stream(0x400, row, k)


def test_the_checked_build_traps_naming_the_broken_precondition_and_the_plain_build_has_no_check(checked_load):
    plan, checked, plain = checked_load
    thread = trace_entry(checked.ptx, {0: 0x7000_0000, 1: 0x400, 2: 0x80, 3: 5, 4: 70}, {}, "k")
    assert thread.tma == [] and thread.trap.startswith("pycute: ld: k = 70 breaks k % 64 == 0: the map views")
    assert checked.histogram().get("BPT.TRAP") == 1 and "BPT.TRAP" not in plain.histogram()


@pytest.fixture(scope="module")
def checked_f32_load():
    plan = pc.make_tma_copy(F32_TILE, F32, origin=(pc.dynamic("r"), pc.dynamic("c")))
    src = plan.cuda("ld") + ('extern "C" __global__ void k(const void* map, unsigned smem, unsigned mbar, int r, '
                             'int c) { ld(map, smem, mbar, r, c); }')
    return plan, compile_cuda(src, arch="sm_90a", checked=True)


def test_the_checked_build_traps_on_a_column_off_the_16_byte_unit(checked_f32_load):
    _, checked = checked_f32_load
    thread = trace_entry(checked.ptx, {0: 0x7000_0000, 1: 0x400, 2: 0x80, 3: -5, 4: -3}, {}, "k")
    assert thread.tma == [] and thread.trap.startswith("pycute: ld: c = -3 breaks c % 4 == 0: a box whose start "
                                                       "along the contiguous mode is off a 16-byte unit")


@pytest.mark.parametrize("row,col", [(-5, -4), (77, 4), (-(1 << 31), (1 << 31) - 16)])
def test_the_checked_build_issues_the_box_at_a_column_on_the_16_byte_unit(checked_f32_load, row, col):
    plan, checked = checked_f32_load
    thread = trace_entry(checked.ptx, {0: 0x7000_0000, 1: 0x400, 2: 0x80, 3: row, 4: col}, {}, "k")
    assert thread.trap is None and thread.tma == plan.stream(0x400, row, col)


@pytest.mark.parametrize("name,g,s,origins", ELEMENT, ids=[c[0] for c in ELEMENT])
def test_every_element_origin_the_gpu_runs_emulates_as_the_layouts_say(name, g, s, origins):
    at = (pc.dynamic("r"), pc.dynamic("c"))
    load, store = pc.make_tma_copy(s, g, origin=at), pc.make_tma_copy(g, s, origin=at)
    for r, c in origins:
        load.at(r=r, c=c).verify(seed=r & 7)
        if all(p.holds({"r": r, "c": c}[p.name]) for p in store.preconditions):
            store.at(r=r, c=c).verify(seed=c & 7)


def test_the_element_round_trip_kernel_compiles_for_sm_90a():
    _, g, s, origins = ELEMENT[0]
    at = (pc.dynamic("r"), pc.dynamic("c"))
    rt = TmaRoundTrip(pc.make_tma_copy(s, g, origin=at), pc.make_tma_copy(g, s, origin=at))
    h = rt.compile("sm_90a").histogram()
    assert h.get("UTMALDG.2D") == 1 and h.get("UTMASTG.2D") == 1
    assert "int r, int c)" in rt.source()


def test_copy_async_passes_the_origin_to_the_tma_planner():
    assert pc.copy_async(F32_TILE, F32, origin=(pc.dynamic("r"), 0)) == \
        pc.make_tma_copy(F32_TILE, F32, origin=(pc.dynamic("r"), 0))


F4 = pc.make_global_tensor("f4e2m1", Layout((300, 256), (256, 1)))
F4_TILE = pc.kmajor_smem_tensor("f4e2m1", 128, 256, "128B")


def test_a_4_bit_tiles_run_time_contiguous_origin_is_a_16_byte_unit_of_32_elements():
    """f4e2m1 travels as bytes; the unit (16 bytes, 32 elements) is a whole byte, so it is the one precondition."""
    plan = pc.make_tma_copy(F4_TILE, F4, origin=(pc.dynamic("r"), pc.dynamic("c")))
    assert plan.element == "f4e2m1" and [p.rule for p in plan.preconditions] == ["c % 32 == 0"]
    plan.at(r=-3, c=32).verify()


@pytest.mark.parametrize("col,match", [
    (7, r"as u8: the origin 7 of the contiguous mode is not a multiple of 2"),
    (8, r"as u8: the origin 8 on the contiguous mode 1 is not on a 16-byte unit \(32 elements\)"),
])
def test_a_4_bit_tiles_static_contiguous_origin_off_the_unit_is_refused_with_each_widths_reason(col, match):
    with pytest.raises(pc.PlanError, match=r"no wider element fits:\n  " + match):
        pc.make_tma_copy(F4_TILE, F4, origin=(5, col))
