"""Reductions of a register fragment along its rows (pycute.mma.reduce): the values of each line in a thread and the
lanes that share it, derived from the fragment's coordinates; a bit-exact order; refusals naming the rule."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import PlanError
from pycute.codegen import read_conventions
from pycute.compile import compile_cuda
from pycute.compile.sass import function_instructions, opcode_histogram
from pycute.harness.fragments import ReduceRoundTrip
from pycute.mma.reduce import f32_max, make_reduction


def test_the_accumulators_rows_are_a_quad_and_two_slots():
    plan = make_reduction(pc.wgmma_accumulator(pc.f32, 128, 64))
    assert plan.masks == (1, 2) and plan.threads_per_line == 4
    assert plan.slots == (tuple(v for v in range(32) if v % 4 < 2), tuple(v for v in range(32) if v % 4 >= 2))


def test_a_tcgen05_load_fragment_holds_each_row_in_one_thread():
    plan = make_reduction(pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64), "ld", warps=4))
    assert plan.masks == () and plan.slots == (tuple(range(64)),)


def test_columns_held_by_one_warp_reduce_across_its_lanes():
    frag = pc.make_fragment(pc.f32, 64, pc.Layout(((32, 2), 4), ((1, 128), 32)), shape=(32, 8))
    plan = make_reduction(frag, "col")
    assert plan.masks == (1, 2, 4, 8, 16) and plan.slots == ((0,), (1,), (2,), (3,))


@pytest.mark.parametrize("frag,axis,match", [
    (pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64), "ld", warps=8), "row",
     r"row 0 is held by threads 0 and 128, in different warps: a row reduction across warps needs shared memory, "
     r"which is not planned \(each row must lie within one warp"),
    (pc.wgmma_accumulator(pc.f32, 64, 64), "col", r"column 0 is held by threads 0 and 96, in different warps"),
    (pc.wgmma_accumulator(pc.f16, 64, 64), "row", r"reductions are of f32 fragments .* not f16"),
    (pc.make_fragment(pc.f32, 96, pc.Layout(((3, 32), 1), ((32, 1), 0)), shape=(32, 3)), "row",
     r"the threads sharing a row are 3 threads 1 apart, not a power of two"),
    (pc.make_fragment(pc.f32, 32, pc.Layout((32, 2), (1, 0)), shape=(32, 1)), "row",
     r"a thread holds one element in 2 values \(a value mode of stride 0\)"),
    (pc.make_fragment(pc.f32, 64, pc.Layout(((32, 2), 2), ((1, 0), 32)), shape=(32, 2)), "row",
     r"threads 32 apart hold the same elements"),
], ids=["rows over warpgroups", "accumulator columns", "f16", "three threads", "duplicate values",
        "duplicate threads"])
def test_what_is_refused_names_the_rule(frag, axis, match):
    with pytest.raises(PlanError, match=match):
        make_reduction(frag, axis)


def test_the_axis_is_row_or_col():
    with pytest.raises(PlanError, match=r"axis is 'row' or 'col', not 'k'"):
        make_reduction(pc.wgmma_accumulator(pc.f32, 64, 8), "k")


# --- the order ---------------------------------------------------------------------------------------------------
def test_max_orders_minus_zero_below_plus_zero_and_drops_a_nan():
    a = np.array([-0.0, 0.0, np.nan, 1.0, np.nan], dtype=np.float32)
    b = np.array([0.0, -0.0, 2.0, np.nan, np.nan], dtype=np.float32)
    got = f32_max(a, b)
    assert list(got[:4].view(np.uint32)) == [0, 0, np.float32(2).view(np.uint32), np.float32(1).view(np.uint32)]
    assert np.isnan(got[4])


def test_the_sum_is_the_stated_tree_then_the_lanes_then_the_state():
    plan = make_reduction(pc.wgmma_accumulator(pc.f32, 64, 16))        # 2 slots of 4 values, quads
    x = np.zeros((128, 8), dtype=np.float32)
    x[0] = [2.0**24, 1.0, 0, 0, 1.0, 1.0, 0, 0]                         # slot 0 of thread 0: values 0, 1, 4, 5
    got = plan.reference("sum", x, np.zeros((128, 2), np.float32), lanes=False)[0, 0]
    assert got == np.float32(2.0**24) + np.float32(2.0)               # (2^24 + 1) + (1 + 1): the 1 is lost first
    assert plan.reference("sum", x)[1, 0] == got                        # thread 1 of the quad ends equal


@st.composite
def integer_fragments(draw):
    n = draw(st.sampled_from([8, 16, 24, 64]))
    m = draw(st.sampled_from([64, 128]))
    seed = draw(st.integers(0, 2**16))
    return m, n, np.random.default_rng(seed)


@settings(max_examples=25, deadline=None)
@given(integer_fragments())
def test_on_exact_values_the_reductions_are_the_rows_max_and_sum(case):
    m, n, rng = case
    frag = pc.wgmma_accumulator(pc.f32, m, n)
    plan, coords = make_reduction(frag), pc.fragment_coords(frag)
    tile = rng.integers(-1000, 1000, (m, n)).astype(np.float32)
    x = tile[coords.row, coords.col]
    row_of_slot = coords.row[:, [vs[0] for vs in plan.slots]]
    assert np.array_equal(plan.reference("max", x), tile.max(axis=1)[row_of_slot])
    assert np.array_equal(plan.reference("sum", x), tile.sum(axis=1)[row_of_slot])


# --- the generated code ------------------------------------------------------------------------------------------
def test_each_function_states_its_convention():
    plan = make_reduction(pc.wgmma_accumulator(pc.f32, 128, 32))
    conv = read_conventions(plan.cuda("acc"))
    lanes, alone = plan.convention, plan.partial_convention
    assert conv == {"acc_row_max": lanes, "acc_row_sum": lanes, "acc_row_allreduce_max": lanes,
                    "acc_row_allreduce_sum": lanes, "acc_row_max_partial": alone, "acc_row_sum_partial": alone}
    assert lanes.caller == "warps" and lanes.threads == 256 and alone.caller == "any"


@pytest.mark.parametrize("n", [64, 256])
def test_the_functions_shuffle_once_per_mask_and_slot_with_no_local_memory(n):
    rt = ReduceRoundTrip(make_reduction(pc.wgmma_accumulator(pc.f32, 64, n)))
    h = opcode_histogram(function_instructions(compile_cuda(rt.source(), arch="sm_90a").sass())["reduce_roundtrip"])
    assert sum(v for k, v in h.items() if k.startswith("SHFL.BFLY")) == 4 * 2 * 2       # 4 functions, 2 masks, 2 rows
    # the two rows' trees (n / 4 - 1 adds each, shared by _sum and _sum_partial), 2 x 2 lane adds, 2 + 2 state adds,
    # 2 x 2 adds of the allreduce: the fewest
    assert sum(v for k, v in h.items() if k.startswith("FADD")) == 2 * (n // 4 - 1) + 4 + 4 + 4
    assert not any(k.startswith(("LDL", "STL")) for k in h)
