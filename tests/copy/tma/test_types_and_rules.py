"""The emulator's value conversions per map type (TF32 rounding, FTZ flush, the NaN fill replayed from the H200's
records) and the planner's refusals of what the driver or the hardware refuses: every tensor-map stride (extent-1
modes included), box dims, the CTA's shared-memory capacity; small mends of explain and the store's code."""
import json
import re
import pathlib
import struct

import numpy as np
import pytest

import pycute as pc
from pycute import Layout
from pycute.arch.sm90.tma import INTERLEAVE_NONE, TMA_SWIZZLES
from pycute.copy.tma.params import TensorMapParams
from pycute.copy.tma.rules import check_map
from pycute.harness.tma import TmaRoundTrip
from pycute.sim.executors.tma import convert_loaded
from pycute.sim.verify import verify_tma

RUNS = pathlib.Path(__file__).resolve().parents[3] / "docs" / "runs" / "tma"


def bits(x: int, data_type: int) -> int:
    return struct.unpack("<I", convert_loaded(np.frombuffer(struct.pack("<I", x), np.uint8).reshape(1, 4),
                                              data_type).tobytes())[0]


# (input bits, what a TFLOAT32 map loads): round to nearest even at mantissa bit 13, subnormals alike; infinities
# kept; every NaN loads as 0x7FFFE000. The H200 loaded each of these in run 1 (docs/runs/tma/tma-h200-coords-run1.jsonl;
# test_the_model_reproduces_every_image_the_h200_loaded_through_a_converting_map holds the model to it).
CONVERSIONS = [
    (0x3F800FFF, 0x3F800000),      # below half an ulp: down
    (0x3F801000, 0x3F800000),      # a tie, even kept: down
    (0x3F803000, 0x3F804000),      # a tie, odd kept: up to even
    (0x3F801001, 0x3F802000),      # above half: up
    (0xBF803000, 0xBF804000),      # negative values round by magnitude
    (0x3FFFF000, 0x40000000),      # the carry reaches the exponent
    (0x7F7FFFFF, 0x7F800000),      # the largest finite rounds to infinity
    (0x7F800000, 0x7F800000),      # infinity
    (0xFF800000, 0xFF800000),      # negative infinity
    (0x7FC00FFF, 0x7FFFE000),      # a quiet NaN's payload is not kept
    (0x7F800001, 0x7FFFE000),      # a signalling NaN
    (0xFFFFFFFF, 0x7FFFE000),      # a negative NaN loads positive
    (0x007FFFFF, 0x00800000),      # the largest subnormal rounds up to the smallest normal
    (0x80000FFF, 0x80000000),      # a small negative subnormal rounds to -0
    (0x00001000, 0x00000000),      # a subnormal tie, even kept
]


@pytest.mark.parametrize("x,tf32", CONVERSIONS, ids=[f"{c[0]:08x}" for c in CONVERSIONS])
def test_a_tf32_map_rounds_each_value_and_its_ftz_form_rounds_alike(x, tf32):
    assert (bits(x, 7), bits(x, 11), bits(x, 12)) == (x, tf32, tf32)


@pytest.mark.parametrize("x", [c[0] for c in CONVERSIONS], ids=[f"{c[0]:08x}" for c in CONVERSIONS])
def test_a_float32_ftz_map_loads_every_value_unchanged_subnormals_included(x):
    assert bits(x, 10) == x


# Run 1 of the coordinate probe (python -m tools tma_coordinates): the patterns written first into array A of its
# type/* cases (the rest random bits, seed 0), and the model its emulator had then (round to nearest even keeping NaNs, FTZ flushing subnormal
# inputs to a zero of their sign): each record is the first difference between the H200's image and that model.
RUN1_SPECIALS = [0x3F800FFF, 0x3F801000, 0x3F803000, 0x3F801001, 0xBF803000, 0x3FFFF000, 0x7F7FFFFF, 0x7F800000,
                 0xFF800000, 0x7FC00FFF, 0x7F800001, 0xFFFFFFFF, 0x007FFFFF, 0x00000001, 0x80000FFF, 0x00001000,
                 0x00800000, 0x80000000, 0x00000000, 0x33800000, 0x3F7FF000]
RUN1 = [json.loads(x) for x in (RUNS / "tma-h200-coords-run1.jsonl").read_text().splitlines()]
RUN1_LOADS = [r for r in RUN1 if r["case"].startswith(("type/", "nan/")) and not r.get("fault")]
MAP_TYPES = {"f32": (pc.f32, False), "f32_ftz": (pc.f32, True), "tf32": (pc.tf32, False), "tf32_ftz": (pc.tf32, True),
             "f16": (pc.f16, False), "bf16": (pc.bf16, False), "f64": (pc.f64, False)}


def _run1_model(data: np.ndarray, data_type: int) -> np.ndarray:
    if data_type not in (10, 11, 12):
        return data
    out = []
    for x in np.ascontiguousarray(data).view("<u4").reshape(-1).tolist():
        if data_type in (10, 12) and x & 0x7F800000 == 0:
            x &= 0x80000000
        if data_type in (11, 12) and x & 0x7F800000 != 0x7F800000:
            x = (x + 0xFFF + (x >> 13 & 1)) & 0xFFFFE000
        out.append(x)
    return np.array(out, "<u4").view(np.uint8).reshape(data.shape)


class _Run1Arrays(TmaRoundTrip):
    def arrays(self, seed: int = 0):
        a, b = super().arrays(seed)
        a.view("<u4")[:len(RUN1_SPECIALS)] = RUN1_SPECIALS
        return a, b


def _first_difference(got: np.ndarray, want: np.ndarray):
    bad = np.flatnonzero(got != want)
    return None if not bad.size else {"count": int(bad.size), "first": int(bad[0]), "got": int(got[bad[0]]),
                                      "want": int(want[bad[0]])}


def _run1_images(record: dict) -> dict:
    """Each image the record compares, as a function of nothing: (tile or origin, round trip)."""
    kind, name, where = record["case"].split("/")
    d, ftz = MAP_TYPES[name]
    if kind == "type":
        g = pc.make_global_tensor(d, Layout((40, 64), (64, 1)))
        load = pc.make_tma_copy(pc.make_smem_tensor(d, Layout((64, 32), (32, 1))), g, oob_fill=where, ftz=ftz)
        return {f"smem_0{j}": (_Run1Arrays(load, None), (0, j)) for j in (0, 1)}
    cols, origin = {"rows-inside-unit": (30 - (d.bits == 64), (0, 0)), "outside": (32, (100, 64))}[where]
    g = pc.make_global_tensor(d, Layout((40, cols), (32, 1)))
    load = pc.make_tma_copy(pc.make_smem_tensor(d, Layout((64, 32), (32, 1))), g,
                            origin=(pc.dynamic("r"), pc.dynamic("c")), oob_fill="nan", ftz=ftz)
    return {"smem": (TmaRoundTrip(load, None), origin)}


@pytest.mark.parametrize("record", RUN1_LOADS, ids=lambda r: r["case"])
def test_the_model_reproduces_every_image_the_h200_loaded_through_a_converting_map(record, monkeypatch):
    """The emulator's model stands in for the H200: against run 1's model it differs exactly where, by as many
    bytes and with the same first bytes as the H200's images did (docs/runs/tma/tma-h200-coords-run1.jsonl)."""
    import pycute.sim.executors.tma as executor
    for key, (rt, at) in _run1_images(record).items():
        hardware, _ = rt.emulate(at)
        with monkeypatch.context() as m:
            m.setattr(executor, "convert_loaded", _run1_model)
            before, _ = rt.emulate(at)
        assert _first_difference(hardware, before) == record[key], key


@pytest.mark.parametrize("dtype,ftz,code", [(pc.f32, False, 7), (pc.tf32, False, 11), (pc.f32, True, 10),
                                            (pc.tf32, True, 12)])
@pytest.mark.parametrize("fill", ["zero", "nan"])
def test_every_f32_map_type_loads_as_the_scalar_reference_says(dtype, ftz, code, fill):
    g = pc.make_global_tensor(dtype, Layout((40, 64), (64, 1)))
    plan = pc.make_tma_copy(pc.make_smem_tensor(dtype, Layout((64, 32), (32, 1))), g, oob_fill=fill, ftz=ftz)
    assert plan.tensor_map.data_type == code
    plan.verify(seed=code)


def test_a_tf32_map_is_never_widened_so_its_rounding_is_kept():
    g = pc.make_global_tensor(pc.tf32, Layout(1000, 1))
    plan = pc.make_tma_copy(pc.make_smem_tensor(pc.tf32, Layout(512, 1)), g)
    assert plan.element is None and plan.tensor_map.data_type == 11 and len(plan.instructions) == 2


@pytest.mark.parametrize("dtype,ftz,error,match", [(pc.bf16, True, pc.PlanError, "FLOAT32_FTZ / TFLOAT32_FTZ"),
                                                   (pc.f32, "yes", TypeError, "ftz must be a bool")])
def test_ftz_is_for_f32_and_tf32_maps(dtype, ftz, error, match):
    g = pc.make_global_tensor(dtype, Layout((64, 64), (64, 1)))
    with pytest.raises(error, match=match):
        pc.make_tma_copy(pc.make_smem_tensor(dtype, Layout((32, 64), (64, 1))), g, ftz=ftz)


@pytest.mark.parametrize("record", [json.loads(x) for x in (RUNS / "tma-h200-nan-fill.jsonl").read_text().splitlines()],
                         ids=lambda r: r["dtype"])
def test_the_emulator_replays_the_nan_fill_the_h200_wrote(record):
    """The NaN-fill probe's load (the map's fill forced to NaN) emulated: the out-of-bounds rows hold exactly
    the byte patterns the H200 wrote (docs/runs/tma/tma-h200-nan-fill.jsonl)."""
    import attrs
    dtype = pc.dtype(record["dtype"])
    g = pc.make_global_tensor(dtype, Layout((40, 64), (64, 1)))
    load = pc.make_tma_copy(pc.make_smem_tensor(dtype, Layout((64, 32), (32, 1))), g)
    load = attrs.evolve(load, tensor_map=attrs.evolve(load.tensor_map, oob_fill=1))
    got, _ = TmaRoundTrip(load, None).emulate((0, 1))
    elem = dtype.bits // 8
    oob = got[: 64 * 32 * elem].reshape(64, 32 * elem)[40:]
    assert sorted({bytes(oob[r, c:c + elem]).hex() for r in range(24) for c in range(0, 32 * elem, elem)}) == \
        record["oob_patterns"]


@pytest.mark.parametrize("array,tile", [
    (Layout((64, 1), (1, 1)), Layout((64, 1), (1, 64))),
    (Layout((1, 64), (1, 1)), Layout((1, 64), (64, 1))),
    (Layout((64, 1, 32), (1, 3, 64)), Layout((64, 1, 8), (1, 0, 64))),
    (Layout((64, 32, 1), (1, 64, 5)), Layout((64, 8, 1), (1, 64, 0))),
    (Layout((64, 1, 32), (1, 0, 64)), Layout((64, 1, 8), (1, 0, 64))),
], ids=["stride-1", "leading-extent-1", "stride-3", "stride-5", "stride-0"])
def test_an_extent_1_modes_stride_is_one_the_driver_takes(array, tile):
    """The array's own stride of an extent-1 mode never moves an element, but the driver refuses any that is not
    a multiple of 16 B: the map's size-1 dimension gets the span of the dimensions before it instead."""
    plan = pc.make_tma_copy(pc.make_smem_tensor(pc.f32, tile), pc.make_global_tensor(pc.f32, array))
    assert all(s % 16 == 0 and 0 < s < 1 << 40 for s in plan.tensor_map.global_strides)
    plan.verify()


@pytest.mark.parametrize("change,match", [
    (dict(box=(257, 1)), "box dimension 0 is 257; the driver takes 1 to 256"),
    (dict(box=(4, 1)), "box's rows are 8 B; the driver takes a multiple of 16"),
    (dict(global_strides=(24,)), "a stride of 24 B; the driver takes a multiple of 16 B below 2\\^40"),
    (dict(global_strides=(1 << 40,)), "below 2\\^40"),
    (dict(global_dims=(0, 4)), "extent 0, outside \\[1, 2\\^32\\]"),
    (dict(swizzle=TMA_SWIZZLES[2], box=(64, 1)), "the box's rows are 128 B under the 64B swizzle"),
])
def test_the_final_map_is_held_to_every_encoder_rule(change, match):
    import attrs
    ok = TensorMapParams("u16", 1, (1000, 4), (2048,), (64, 1), (1, 1), TMA_SWIZZLES[0], INTERLEAVE_NONE)
    check_map(ok, "")
    with pytest.raises(pc.PlanError, match=match):
        check_map(attrs.evolve(ok, **change), "")


def test_a_tile_within_the_ctas_shared_memory_is_planned():
    g = pc.make_global_tensor(pc.f32, Layout((1024, 1024), (1024, 1)))
    assert pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((224, 256), (256, 1))), g).smem_reach == 224 * 1024


@pytest.mark.parametrize("tile", [Layout((256, 256), (256, 1)), Layout((512, 128), (128, 1))], ids=["2d", "3d-box"])
def test_a_tile_past_the_ctas_shared_memory_is_refused_by_the_box_rule_with_the_number(tile):
    """Its box alone is 256 KiB (the planner takes the whole tile as one box): the map rule names it."""
    g = pc.make_global_tensor(pc.f32, Layout((1024, 1024), (1024, 1)))
    with pytest.raises(pc.PlanError, match=r"the box \(.*\) of f32 is 262144 B; a box lands in one CTA's shared "
                                           r"memory, at most 232448 B \(227 KiB\)"):
        pc.make_tma_copy(pc.make_smem_tensor(pc.f32, tile), g)


def test_a_staged_ring_past_the_ctas_shared_memory_is_refused():
    g = pc.make_global_tensor(pc.bf16, Layout((1024, 64), (64, 1)))
    ring = lambda stages: pc.make_smem_tensor(pc.bf16, Layout((128, 64, stages), (64, 1, 8192)))   # noqa: E731
    assert pc.make_tma_copy(ring(8)[:, :, pc.dynamic("stage")], g).smem_reach == 8 * 16384
    with pytest.raises(pc.PlanError, match=r"reach 262144 B"):
        pc.make_tma_copy(ring(16)[:, :, pc.dynamic("stage")], g)


def test_a_window_view_of_one_dimension_is_planned_as_given_and_explain_names_its_bounds():
    """The overlapping-view workaround of issue 32: (start row, row in tile, k) with start and row both one row
    apart. The driver encodes such a view and TMA bounds each coordinate by its own mode, so a tile starting past
    the start mode's extent loads zeros although its rows exist (the H200's window-view case): that is what the
    view says, so it is planned, and explain() says where element coordinates would place the box instead."""
    view = pc.make_global_tensor(pc.bf16, Layout((897, 128, 128), (128, 128, 1)))
    plan = pc.make_tma_copy(pc.make_smem_tensor(pc.bf16, Layout((1, 128, 64), (0, 64, 1))), view)
    assert plan.tensor_map.global_strides == (256, 256)
    assert re.search(r"array modes 0 and 1 both step 256 B \(an overlapping view\).*origin=\(pc.dynamic\('row'\)",
                     plan.explain())
    verify_tma(plan)


def test_only_a_load_explains_an_expect_tx_and_a_store_commits_its_group_once():
    g = pc.make_global_tensor(pc.f32, Layout((64, 64), (64, 1)))
    s = pc.make_smem_tensor(pc.f32, Layout((32, 64), (64, 1)))
    load, store = pc.make_tma_copy(s, g), pc.make_tma_copy(g, s)
    assert "expect_tx" in load.explain() and "expect_tx" not in store.explain()
    assert "expect_tx" not in load.prefetch().explain()
    assert store.cuda("st").count("pycute_bulk_commit_group();") == 1 and "committed here" in store.cuda("st")
    assert "commits its boxes as one bulk group itself" in type(store).cuda.__doc__


NONE = TMA_SWIZZLES[0]
#: The boxes the H200's driver refused in run 1 although each dimension is at most 256 (docs/tma.md).
REFUSED_BOXES = {
    "256x256 f32 (256 KiB)": TensorMapParams("f32", 7, (1024, 1024), (4096,), (256, 256), (1, 1), NONE),
    "256x256x4 u8 (256 KiB)": TensorMapParams("u8", 0, (256, 256, 4), (256, 65536), (256, 256, 4), (1, 1, 1), NONE),
    "256^5 u8": TensorMapParams("u8", 0, (256,) * 5, (256, 1 << 16, 1 << 24, 1 << 32), (256,) * 5, (1,) * 5, NONE),
}


@pytest.mark.parametrize("params", REFUSED_BOXES.values(), ids=REFUSED_BOXES.keys())
def test_a_box_the_driver_refused_is_refused_naming_its_bytes_and_the_limit(params):
    with pytest.raises(pc.PlanError, match=rf"is {params.box_bytes} B; a box lands in one CTA's shared memory, at most "
                                           r"232448 B \(227 KiB\)"):
        check_map(params, "")


def test_a_box_of_a_ctas_whole_shared_memory_is_kept():
    check_map(TensorMapParams("f32", 7, (1024, 1024), (4096,), (256, 227), (1, 1), NONE), "")


def test_a_device_side_box_edit_past_the_limit_is_an_emulation_error():
    from pycute.sim.executors.tma import TensorMap, replace_field
    tmap = TensorMap(TensorMapParams("f32", 7, (1024, 1024), (4096,), (256, 128), (1, 1), NONE))
    assert replace_field(tmap, "box_dim", 1, 227).params.box == (256, 227)
    with pytest.raises(pc.EmulationError, match="over the 232448 B a box may have"):
        replace_field(tmap, "box_dim", 1, 228)
