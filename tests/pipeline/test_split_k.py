"""Split-K and stream-K (pycute.pipeline.split_k): every k-block of every unit is computed exactly once, by pieces
that cover a unit's K in order; the partition is the plan's, so any grid computes the same pieces; the generated
walk and fixup, interpreted whole on the CPU with one cluster resident or all, give the bits of the plan's fold
in K order and leave the counters zero; the model checker proves the last-arrival fixup free of deadlock and
nondeterminism at any residency, and shows what the flag-ordered serial fixup and float atomics do instead; the
cost model splits where tiles cannot fill the GPU and leaves large problems whole."""
import collections

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute.harness.split_k import SplitKProbe
from pycute.interp import run_kernel
from pycute.pipeline.split_cost import SplitCost, choose_k_split, modelled_time
from pycute.pipeline.split_k import KSplit, make_split_k_scheduler
from pycute.sim.split_k import FixupError, check_fixup

PLAN = make_split_k_scheduler(registers=4)


@st.composite
def problems(draw):
    tm, tn, kb = draw(st.integers(1, 7)), draw(st.integers(1, 5)), draw(st.integers(1, 40))
    cm = draw(st.sampled_from([1, 2]))
    plan = make_split_k_scheduler(registers=4, cluster=(cm, 1), swizzle=draw(st.integers(1, 3)))
    units = plan.at((tm, tn), kb).units
    dp = draw(st.integers(0, units))
    workers = 0 if dp == units else draw(st.integers(1, (units - dp) * kb))
    return plan.at((tm, tn), kb, KSplit(dp, workers))


@settings(max_examples=80, deadline=None)
@given(plan=problems())
def test_every_k_block_of_every_unit_is_computed_once_by_pieces_in_k_order(plan):
    seen = collections.Counter((p.unit, kb) for i in range(plan.items) for p in plan.pieces(i)
                               for kb in range(p.kb_begin, p.kb_end))
    assert set(seen) == {(u, kb) for u in range(plan.units) for kb in range(plan.kblocks)}
    assert set(seen.values()) == {1}
    for u in range(plan.units):
        pieces = plan.unit_pieces(u)
        assert [p.index for p in pieces] == list(range(len(pieces))) and {p.count for p in pieces} == {len(pieces)}
        assert [p.kb_begin for p in pieces[1:]] == [p.kb_end for p in pieces[:-1]]
        assert pieces[0].kb_begin == 0 and pieces[-1].kb_end == plan.kblocks


@settings(max_examples=60, deadline=None)
@given(plan=problems())
def test_shared_pieces_have_distinct_slots_within_the_workspace(plan):
    slots = [p.slot for i in range(plan.items) for p in plan.pieces(i) if p.count > 1]
    assert len(slots) == len(set(slots)) and all(0 <= s < plan.slots for s in slots)
    assert all(p.slot is None for i in range(plan.items) for p in plan.pieces(i) if p.count == 1)


@settings(max_examples=40, deadline=None)
@given(plan=problems(), sms=st.integers(1, 12))
def test_any_grid_computes_the_same_pieces(plan, sms):
    grid = plan.grid(sms * plan.cluster_size)
    pieces = sorted((p for ps in plan.schedule(grid).values() for p in ps), key=repr)
    one = sorted((p for ps in plan.schedule(plan.cluster_size).values() for p in ps), key=repr)
    assert pieces == sorted(one * 1, key=repr)


def test_split_k_cuts_each_unit_in_equal_pieces_and_needs_one_slot_per_worker():
    plan = PLAN.at((2, 3), 10, KSplit.split(6, 3))
    assert [(p.kb_begin, p.kb_end) for p in plan.unit_pieces(4)] == [(0, 3), (3, 6), (6, 10)]
    assert plan.slots == 18 and plan.counters == 6 and plan.workspace_bytes == 18 * 128 * 4 * 4


def test_stream_k_ranges_cross_units_and_take_a_tail_slot():
    plan = PLAN.at((1, 3), 8, KSplit.stream(2))          # 24 k-blocks, 12 per worker: worker 0 ends mid unit 1
    assert plan.pieces(0) == [pc.pipeline.split_k.Piece(0, 0, 8, 0, 1, None),
                              pc.pipeline.split_k.Piece(1, 0, 4, 0, 2, 2)]
    assert plan.pieces(1)[0] == pc.pipeline.split_k.Piece(1, 4, 8, 1, 2, 1) and plan.slots == 4


def test_whole_units_come_first_and_take_no_fixup():
    plan = PLAN.at((4, 2), 6, KSplit.stream(3, dp=5))
    assert [plan.pieces(i) for i in range(5)] == [[pc.pipeline.split_k.Piece(u, 0, 6, 0, 1, None)] for u in range(5)]
    assert plan.counters == 3 and plan.items == 8


@pytest.mark.parametrize("build, message", [
    (lambda: PLAN.at((2, 2), 4, KSplit(5, 1)), r"5 whole units of a problem of 4"),
    (lambda: PLAN.at((2, 2), 4, KSplit(2, 0)), r"2 unit\(s\) past the 2 whole ones and no worker"),
    (lambda: PLAN.at((2, 2), 4, KSplit(0, 17)), r"17 workers for 16 k-blocks"),
    (lambda: PLAN.pieces(0), r"the problem is run-time arguments; model one with \.at"),
    (lambda: make_split_k_scheduler(registers=6), r"registers=6: a positive multiple of 4"),
    (lambda: make_split_k_scheduler(registers=4, part_threads=48), r"part_threads=48: whole warps"),
    (lambda: KSplit(-1, 2), r"both at least 0"),
])
def test_bad_split_input_is_refused(build, message):
    with pytest.raises(pc.PlanError, match=message):
        build()


# ---- the generated code, interpreted whole ---------------------------------------------------------------------

PROBE_PLAN = make_split_k_scheduler(registers=8, parts=2, part_threads=32, swizzle=2)


@pytest.fixture(scope="module")
def probe():
    p = SplitKProbe(PROBE_PLAN)
    return p, p.compile()


@pytest.mark.parametrize("split, grid, resident", [
    (KSplit.stream(5), 3, None), (KSplit.split(6, 3), 4, 1), (KSplit.stream(4, dp=2), 2, 1), (KSplit.stream(5), 5, 2)],
    ids=["stream-K, all resident", "split-K by 3, one at a time", "whole units then stream-K", "5 CTAs, 2 resident"])
def test_the_generated_fixup_gives_the_plans_fold_bit_for_bit(probe, split, grid, resident):
    p, compiled = probe
    model = PROBE_PLAN.at((3, 2), 7, split)
    args = p.args(model)
    run_kernel(compiled, "split_k_probe", grid=grid, block=64, args=args, resident=resident)
    assert np.array_equal(args["out"].view(np.uint32), p.expected(model).view(np.uint32))
    assert set(args["done"]) == {1} and not args["counters"].any()


def test_the_fixup_compiles_to_one_acq_rel_atomic_and_no_local_memory(probe):
    _, compiled = probe
    h = compiled.histogram()
    assert h.get("ATOMG.E.ADD.STRONG.GPU") == 1 and h.get("BAR.RED.OR.DEFER_BLOCKING") == 1
    assert not any(op.startswith(("LDL", "STL")) for op in h)


# ---- the fixup protocol, model-checked --------------------------------------------------------------------------

@pytest.mark.parametrize("split, grid", [(KSplit.stream(4), 4), (KSplit.split(6, 3), 3), (KSplit.stream(3, dp=2), 3)],
                         ids=["stream-K", "split-K", "hybrid"])
@pytest.mark.parametrize("resident", [None, 1], ids=["co-resident", "one at a time"])
def test_the_last_arrival_fixup_never_deadlocks_and_gives_one_answer(split, grid, resident):
    result = check_fixup(PLAN.at((3, 2), 5, split), grid, resident=resident)
    assert result.exhaustive and result.results == check_fixup(PLAN.at((3, 2), 5, split), 1).results


def test_the_serial_fixup_deadlocks_when_the_cta_it_waits_for_is_not_resident():
    plan = PLAN.at((3, 2), 5, KSplit.split(6, 2))
    check_fixup(plan, 3, protocol="serial")                   # co-resident: finishes
    with pytest.raises(FixupError, match=r"deadlock with 1 cluster\(s\) resident: cluster 0 waits for unit 1's flag "
                                         r"to read 1 \(it reads 0\); cluster 1 is not launched"):
        check_fixup(plan, 3, protocol="serial", resident=1)


def test_float_atomics_give_different_bits_in_different_orders():
    with pytest.raises(FixupError, match=r"nondeterministic: unit \d+ ends as 0x\w+ in one order and 0x\w+ in another"):
        check_fixup(PLAN.at((3, 2), 5, KSplit.split(6, 3)), 3, protocol="atomic")


@pytest.mark.parametrize("mutation, message", [
    ("arrive_before_store", r"early read: cluster \d's reduction of unit \d reads piece \d's partial \(slot \d+\), not "
                            r"stored yet"),
    ("no_reset", r"unit \d's counter ends at 2, not 0: the next launch would count from there")])
def test_a_broken_fixup_is_reported(mutation, message):
    with pytest.raises(FixupError, match=message):
        check_fixup(PLAN.at((3, 2), 5, KSplit.stream(4)), 4, mutation=mutation)


# ---- choosing the partition ------------------------------------------------------------------------------------

def cost(clusters=132):
    return SplitCost.from_rate(690.0, (128, 256, 64), clusters)


def test_the_cost_model_splits_few_long_tiles():
    s = choose_k_split(PLAN, (8, 4), 128, 132, cost())             # 1000 x 1000 x 8192: 32 tiles of 128 x 256
    assert s.workers > 0 and s.dp == 0
    dp = modelled_time(PLAN.at((8, 4), 128), 132, cost())
    assert modelled_time(PLAN.at((8, 4), 128, s), 132, cost()) < dp / 2


def test_whole_waves_stay_whole_and_a_large_problem_streams_at_most_its_last_two_waves():
    assert choose_k_split(PLAN, (66, 16), 128, 132, cost()) == KSplit.data_parallel(1056)     # 8 whole waves
    s = choose_k_split(PLAN, (64, 32), 128, 132, cost())                                       # 8192^3: 15.5 waves
    assert s.dp >= 2048 - 2 * 132


def test_a_wave_and_a_bit_is_streamed():
    # 777 x 4104 x 2056 in 128 x 256 tiles and clusters of 2 along M: 4 x 17 = 68 cluster blocks for 66 clusters
    plan = make_split_k_scheduler(registers=4, cluster=(2, 1))
    c = SplitCost.from_rate(690.0, (128, 256, 64), 66, 2)
    s = choose_k_split(plan, (7, 17), 33, 66, c)
    assert s.workers > 0
    assert modelled_time(plan.at((7, 17), 33, s), 66, c) < 0.8 * modelled_time(plan.at((7, 17), 33), 66, c)


@settings(max_examples=60, deadline=None)
@given(tm=st.integers(1, 80), tn=st.integers(1, 40), kblocks=st.integers(1, 200), clusters=st.integers(1, 132))
def test_whole_units_take_as_long_as_the_busiest_cluster(tm, tn, kblocks, clusters):
    # persistent clusters take whole units in turn (a unit: its k-blocks and one piece); the makespan is the
    # busiest cluster's sum
    c = cost(clusters)
    busy = [0.0] * clusters
    for u in range(PLAN.at((tm, tn), kblocks).units):
        busy[u % clusters] += kblocks * c.kblock + c.piece
    want = max(busy)
    assert modelled_time(PLAN.at((tm, tn), kblocks), clusters, c) == pytest.approx(want, rel=1e-12)


def test_problems_of_one_tile_grid_get_one_partition():
    # a decode step's M = 1 .. 128 all fill one row of 128-row tiles: the partition depends on the grid alone
    from pycute.kernels.hopper_gemm.config import candidates, plan_split
    g = candidates("bf16")[0]
    assert len({plan_split(g, m, 4096, 4096) for m in range(1, g.BM + 1)}) == 1
