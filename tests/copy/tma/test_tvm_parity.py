"""pycute's TMA plans against apache-tvm 0.27's ``tma_auto`` (``tvm_tma_plans.json``, made by ``generate_tvm.py``):
the same tensor map and instruction count where TVM is right (nested modes a few bytes apart among them), fewer
instructions where it issues a box per row, a refusal with the conversion where TVM issues a swizzle the tile does
not have, and a merged map where TVM boxes 16-byte rows under a 128-byte swizzle. docs/tma.md lists the
differences."""
import json
from pathlib import Path

import pytest

import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle
from pycute.arch.sm90.tma import TMA_SWIZZLES

DATA = json.loads((Path(__file__).resolve().parent / "tvm_tma_plans.json").read_text())
CASES = DATA["cases"]
DTYPES = {"u8": pc.u8, "bf16": pc.bf16, "f32": pc.f32}


def _tuple(x):
    return tuple(_tuple(y) for y in x) if isinstance(x, list) else x


def tensors(case):
    dtype = DTYPES[case["dtype"]]
    (shape, stride), tile = case["array"], case["tile"]
    modes = tile["modes"]
    layout = Layout(tuple(tuple(e for e, _ in m) for m in modes), tuple(tuple(d for _, d in m) for m in modes))
    if tile["swizzle"] is not None:
        layout = ComposedLayout(Swizzle(*tile["swizzle"]), 0, layout)
    return pc.make_global_tensor(dtype, Layout(_tuple(shape), _tuple(stride))), pc.make_smem_tensor(dtype, layout)


PACKED = "bf16 256x8, 64x8 16-byte rows packed under 128B"
SAME = [n for n, c in CASES.items() if "error" not in c["tvm"] and c["tvm"]["instructions"] == 1
        and "not a TMA swizzle" not in n and n != PACKED]


@pytest.mark.parametrize("name", SAME)
def test_where_tvm_issues_one_box_pycute_plans_the_same_tensor_map(name):
    case = CASES[name]
    g, s = tensors(case)
    plan = pc.make_tma_copy(s, g)
    m, tvm = plan.tensor_map, case["tvm"]
    assert (list(m.global_dims), list(m.global_strides), list(m.box), m.swizzle.code, len(plan.instructions)) == \
        (tvm["global_dims"], tvm["global_strides"], tvm["box"], tvm["swizzle"], tvm["instructions"])


def test_where_tvm_issues_a_box_per_row_pycute_issues_two():
    case = CASES["f32 300x32, 512x32 plain (rows over 256)"]
    assert case["tvm"]["instructions"] == 512 and case["tvm"]["box"] == [32, 1]
    plan = pc.make_tma_copy(*reversed(tensors(case)))
    assert len(plan.instructions) == 2 and plan.tensor_map.box == (32, 256)
    plan.verify()


def test_where_tvm_issues_a_swizzle_the_tile_lacks_pycute_refuses_with_the_conversion():
    case = CASES["bf16 300x64, 64x64 K-major 128B-long Sw<3,4,3> (not a TMA swizzle)"]
    issued = next(m for m in TMA_SWIZZLES if m.code == case["tvm"]["swizzle"])
    b, m, s = case["tile"]["swizzle"]
    assert issued.byte_swizzle != Swizzle(b, m + 1, s)          # bf16: element bits + 1 = byte bits: wrong bytes
    g, sm = tensors(case)
    with pytest.raises(pc.PlanError, match=r"Sw<3,4,3> on 2-byte elements is Sw<3,5,3> on bytes.*128B = Sw<3,3,3>"):
        pc.make_tma_copy(sm, g)


def test_where_tvm_refuses_a_padded_tile_pycute_refuses_it_too():
    case = CASES["f32 300x64, 64x32 rows padded to 64"]
    assert "error" in case["tvm"]
    with pytest.raises(pc.PlanError, match="does not fill a dense run of shared memory"):
        pc.make_tma_copy(*reversed(tensors(case)))


def test_where_tvm_boxes_16_byte_rows_under_a_128_byte_swizzle_pycute_merges_them_into_pattern_rows():
    """TVM's box (8, 64) under the 128B swizzle puts each 16-byte row at a whole 128-byte pattern row (measured on
    the H200: docs/tma.md, section 6), not where the packed tile has it; the map with the rows merged into one
    dimension holds whole pattern rows, one box."""
    case = CASES[PACKED]
    assert case["tvm"]["box"] == [8, 64] and case["tvm"]["swizzle"] == 3
    g, s = tensors(case)
    plan = pc.make_tma_copy(s, g)
    m = plan.tensor_map
    assert (m.global_dims, m.global_strides, m.box, m.swizzle.code, len(plan.instructions)) == \
        ((64, 32), (128,), (64, 8), 3, 1)
    plan.verify()


def test_every_case_is_covered():
    assert len(SAME) + 4 == len(CASES)
