"""make_pipeline: every barrier count, byte total and stage count follows from the copy plans and the roles, and an
inconsistent pipeline is refused naming the values."""
import attrs
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import Layout
from pycute.arch.sm90.mbarrier import MBARRIER_BYTES
from pycute.pipeline import BarrierInit, Consumer, Producer, make_pipeline, smem_capacity

A = pc.make_global_tensor(pc.bf16, Layout((1024, 512), (512, 1)))
B = pc.make_global_tensor(pc.bf16, Layout((2048, 512), (512, 1)))
F32 = pc.make_global_tensor(pc.f32, Layout((1024, 512), (512, 1)))


def tile(rows, k=64):
    return pc.kmajor_smem_tensor(pc.bf16, rows, k, "128B")


def loads(multicast=None, cta_group=1):
    return {"a": pc.make_tma_copy(tile(128), A, multicast=multicast, cta_group=cta_group),
            "b": pc.make_tma_copy(tile(256), B, cta_group=cta_group)}


STAGE = (128 + 256) * 64 * 2          # bytes of one stage of A and B


@pytest.mark.parametrize("consumer, arrivals", [(Consumer("elected"), 1), (Consumer("warp", 4), 4),
                                                (Consumer("warpgroup", 2), 8), (Consumer("threads", 96), 96)])
def test_a_tma_pipeline_arms_with_the_stages_bytes_and_counts_one_arrival_per_release(consumer, arrivals):
    pipe = make_pipeline(loads(), consumer=consumer, stages=3)
    assert pipe.full == (BarrierInit(1, STAGE),) and pipe.empty == (BarrierInit(arrivals),)
    assert pipe.expect_tx == sum(p.expect_tx for _, p in pipe.loads) == STAGE
    assert (pipe.producer_start, pipe.consumer_start) == (1, 0) and not pipe.relay


def test_a_multicast_load_makes_every_release_reach_both_ctas():
    pipe = make_pipeline(loads(multicast=2), consumer=Consumer("warpgroup", 2), stages=3)
    assert pipe.ctas == 2 and pipe.full == (BarrierInit(1, STAGE),) * 2
    assert pipe.empty == (BarrierInit(16),) * 2                    # 8 warps x 2 CTAs
    assert [pipe.release_targets(c) for c in (0, 1)] == [(0, 1), (0, 1)]


def test_a_pairs_mma_reads_both_ctas_stages_so_the_odd_cta_relays():
    pipe = make_pipeline(loads(), consumer=Consumer("warp", 1, "commit", cta_group=2), stages=3, arch="sm_100a")
    assert pipe.relay and pipe.consumer_ctas() == (0,)
    assert pipe.full == (BarrierInit(2, STAGE), BarrierInit(1, STAGE))   # own arm + the relay; own arm
    assert pipe.empty == (BarrierInit(1),) * 2                           # the commit reaches both


def test_pair_loads_complete_on_the_even_ctas_barrier_without_a_relay():
    pipe = make_pipeline(loads(cta_group=2), consumer=Consumer("warp", 1, "commit", cta_group=2), stages=3,
                         arch="sm_100a")
    assert not pipe.relay
    assert pipe.full == (BarrierInit(1, 2 * STAGE), BarrierInit(0, 0))


def test_cp_async_loads_arrive_once_per_copying_thread():
    staged = pc.make_smem_tensor(pc.f32, Layout((64, 64, 3), (64, 1, 4096)))[:, :, pc.dynamic("stage")]
    pipe = make_pipeline(pc.make_cp_async_copy(staged, F32, threads=128, completion="arrive"),
                         consumer=Consumer("elected"))
    assert pipe.producer == Producer("cp_async", "threads", 128)
    assert pipe.full == (BarrierInit(128, 0),) and pipe.stages == 3 and pipe.chosen == "the loads' rings"


def test_an_mma_filling_accumulators_for_a_pair_is_released_to_the_even_cta():
    pipe = make_pipeline(consumer=Consumer("warp", 4), producer=Producer("commit", "warp", cta_group=2), stages=2,
                         arch="sm_100a")
    assert pipe.producer_ctas() == (0,) and pipe.full == (BarrierInit(1),) * 2
    assert pipe.empty == (BarrierInit(8), BarrierInit(0))            # 4 warps x 2 CTAs, on the even CTA


def test_a_sync_release_has_no_empty_barrier():
    pipe = make_pipeline(consumer=Consumer("threads", 128, "sync"), producer=Producer("commit", "warp"), stages=1,
                         arch="sm_100a")
    assert pipe.empty == () and pipe.barrier_words == 1 and pipe.full == (BarrierInit(1),)


def test_a_dsmem_ring_arms_each_receiver_with_what_its_sender_delivers():
    ring = pc.make_smem_tensor(pc.f32, Layout((4096, 2), (1, 4096)))
    plan = pc.make_dsmem_copy(ring[:, pc.dynamic("recv")], ring[:, pc.dynamic("send")])
    pipe = make_pipeline(plan, consumer=Consumer("threads", 128, "sync"), producer=Producer("dsmem", peer=1), ctas=4)
    assert pipe.full == (BarrierInit(1, 16384),) * 4 and [pipe.writers(c) for c in range(4)] == [(3,), (0,), (1,), (2,)]


@pytest.mark.parametrize("reserve", [0, 40_000, 120_000])
def test_the_stage_count_is_as_many_as_the_budget_holds(reserve):
    pipe = make_pipeline(loads(), consumer=Consumer("warp"), reserve=reserve)
    per_stage = STAGE + 2 * MBARRIER_BYTES
    assert pipe.stages == (smem_capacity("sm_90a") - reserve) // per_stage
    assert pipe.smem_bytes == pipe.stages * STAGE and pipe.chosen.startswith("as many as fit")


def test_the_rings_are_laid_out_one_after_the_other_and_the_loads_take_the_stage():
    pipe = make_pipeline(loads(), consumer=Consumer("warp"), stages=3)
    assert pipe.stage_bytes == (("a", 0, 16384), ("b", 3 * 16384, 32768))
    a, b = pipe.load("a"), pipe.load("b")
    assert [(s.name, s.extent, s.smem_step) for s in a.stages] == [("stage", 3, 16384)]
    assert b.stream(0, 1, 2, stage=2)[0].smem == 3 * 16384 + 2 * 32768
    store = pc.make_tma_copy(B, pipe.ring("b"))          # a consumer's plan over the same ring
    assert store.stages == b.stages and store.instructions[0].smem_offset == b.instructions[0].smem_offset


@pytest.mark.parametrize("stated, message", [
    ({"expect_tx": STAGE - 16}, rf"expect_tx={STAGE - 16} B, but the stage's copies deliver {STAGE} B to CTA 0's full "
                                r"barrier per phase \(a 16384 B \+ b 32768 B\)"),
    ({"full_arrivals": 2}, r"full_arrivals=2, but the roles arrive 1 time\(s\) per phase on CTA 0's full barrier "
                           r"\(1 arm with expect_tx\)"),
    ({"empty_arrivals": 4}, r"empty_arrivals=4, but the consumers arrive 8 time\(s\) per phase on CTA 0's empty "
                            r"barrier \(8 per CTA x 1 releasing CTA\(s\)\)"),
])
def test_stated_values_that_differ_from_the_derived_ones_are_refused_naming_both(stated, message):
    with pytest.raises(pc.PlanError, match=message):
        make_pipeline(loads(), consumer=Consumer("warpgroup", 2), stages=2, **stated)


def test_stated_values_that_agree_are_accepted():
    pipe = make_pipeline(loads(), consumer=Consumer("warpgroup", 2), stages=2, expect_tx=STAGE, full_arrivals=1,
                         empty_arrivals=8)
    assert pipe.full[0].tx == STAGE


def test_stages_over_the_targets_shared_memory_are_refused_naming_the_sum():
    with pytest.raises(pc.PlanError, match=r"5 stages x 49152 B \+ 80 B of barriers \+ 0 B reserved = 245840 B, over "
                                           r"sm_90a's 232448 B of shared memory"):
        make_pipeline(loads(), consumer=Consumer("warp"), stages=5)


def test_a_reserve_that_leaves_no_stage_is_refused():
    with pytest.raises(pc.PlanError, match=r"not one stage fits: a stage takes 49152 B of rings and 16 B of "
                                           r"barriers, and 40000 B are left \(232448 B less the reserve 192448 B\)"):
        make_pipeline(loads(), consumer=Consumer("warp"), reserve=192448)


@pytest.mark.parametrize("build, message", [
    (lambda: make_pipeline(pc.make_cp_async_copy(tile(128), A), consumer=Consumer("warp")),
     "completion='arrive'"),
    (lambda: make_pipeline({"a": pc.make_tma_copy(tile(128), A),
                            "c": pc.make_cp_async_copy(tile(64), A, completion="arrive")}, consumer=Consumer("warp")),
     r"complete in different ways \(cp_async, tma\)"),
    (lambda: make_pipeline(loads(), consumer=Consumer("warp", 1, "commit"), stages=2),
     "tcgen05.commit exists on sm_100a"),
    (lambda: make_pipeline(loads(cta_group=2), consumer=Consumer("warp"), stages=2, arch="sm_100a"),
     r"CTA 1's consumers wait on its full barriers, which nothing signals"),
    (lambda: make_pipeline(loads(), consumer=Consumer("warp"), name="2x"), "is not a C identifier"),
    (lambda: make_pipeline(consumer=Consumer("warp")), "without loads the producer is given"),
    (lambda: make_pipeline(consumer=Consumer("warp"), producer=Producer("arrive", "warp")),
     r"without loads the stage count is given \(stages=\)"),
    (lambda: make_pipeline(loads(multicast=2), consumer=Consumer("warp"), stages=2, ctas=4),
     "ctas=4: a cluster of 1 to 16 CTAs, the 2 the loads multicast to"),
    (lambda: make_pipeline(loads(multicast=2), consumer=Consumer("warp", 1, "commit"), stages=2, arch="sm_100a"),
     r"CTA 0's commit signals CTAs \[0\], but the stages it read are written by CTAs \[0, 1\]"),
    (lambda: make_pipeline(loads(), consumer=Consumer("warps", 2), stages=2), "consumer caller 'warps'"),
])
def test_an_inconsistent_pipeline_is_refused(build, message):
    with pytest.raises(pc.PlanError, match=message):
        build()


def test_loads_over_overlapping_rings_are_refused():
    ring = pc.make_smem_tensor(pc.f32, Layout((64, 64, 3), (64, 1, 4096)))[:, :, pc.dynamic("stage")]
    load = pc.make_tma_copy(ring, F32)
    with pytest.raises(pc.PlanError, match=r"load 'a''s ring \[0, 49152\) overlaps load 'b''s \[0, 49152\)"):
        make_pipeline({"a": load, "b": load}, consumer=Consumer("warp"))


def test_loads_over_rings_of_different_lengths_are_refused():
    ring3 = pc.make_smem_tensor(pc.f32, Layout((64, 64, 3), (64, 1, 4096)))[:, :, pc.dynamic("stage")]
    ring2 = pc.make_smem_tensor(pc.f32, Layout((64, 64, 2), (64, 1, 4096)))
    ring2 = attrs.evolve(ring2, offset=16384)[:, :, pc.dynamic("stage")]
    with pytest.raises(pc.PlanError, match=r"rings hold different numbers of stages \{'a': 3, 'b': 2\}"):
        make_pipeline({"a": pc.make_tma_copy(ring3, F32), "b": pc.make_tma_copy(ring2, F32)}, consumer=Consumer("warp"))


def test_a_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="a load is a TMA, bulk, cp.async or DSMEM plan"):
        make_pipeline([tile(128)], consumer=Consumer("warp"))
    with pytest.raises(TypeError, match="consumer is a pc.Consumer"):
        make_pipeline(loads(), consumer="warp")


def test_explain_names_the_barriers_the_roles_and_the_functions():
    text = make_pipeline(loads(multicast=2), consumer=Consumer("warpgroup", 2), stages=3, name="mainloop").explain()
    for line in ("pipeline 'mainloop': 3 stages (given), sm_90a, a cluster of 2 CTAs",
                 "full  [3] every CTA: 1 arrival(s) + 49152 B per phase",
                 "empty [3] every CTA: 16 arrival(s) per phase",
                 "CTA 0's consumers arrive on the empty barriers of CTAs [0, 1]",
                 "mainloop_consumer_release    consumer  all 128 threads of a warpgroup"):
        assert line in text


@settings(max_examples=25, deadline=None)
@given(rows=st.sampled_from([64, 128, 256]), stages=st.integers(1, 4), multicast=st.sampled_from([None, 2]),
       consumer=st.sampled_from([Consumer("warp", 1), Consumer("warp", 4), Consumer("warpgroup", 2),
                                 Consumer("threads", 64), Consumer("elected")]))
def test_the_barriers_count_what_the_roles_do(rows, stages, multicast, consumer):
    load = pc.make_tma_copy(tile(rows), A, multicast=multicast)
    pipe = make_pipeline({"a": load}, consumer=consumer, stages=stages)
    n = multicast or 1
    assert pipe.full == (BarrierInit(1, rows * 64 * 2),) * n
    assert pipe.empty == (BarrierInit(consumer.arrivals * n),) * n
    assert pipe.smem_bytes == stages * -(-rows * 128 // 1024) * 1024


@pytest.mark.parametrize("origin, params", [("tile", "int t0, int t1"), ("element", "int c0, int c1"),
                                            ((pc.dynamic("row"), 64), "int row")])
def test_a_load_re_planned_over_the_ring_takes_what_the_tiles_plan_took(origin, params):
    array = pc.make_global_tensor(pc.bf16, Layout((4096, 4096), (4096, 1)))
    load = pc.make_tma_copy(pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), array, origin=origin)
    pipe = make_pipeline({"a": load}, consumer=Consumer("warpgroup", 2), stages=3)
    assert f"void pipeline_a(const void* map, unsigned smem, unsigned mbar, {params}, unsigned stage)" in pipe.cuda()


@pytest.mark.parametrize("options", [{"cache_hint": "evict_last"}, {"l2_promotion": "256B"},
                                     {"l2_promotion": "none", "cache_hint": "evict_first"},
                                     {"multicast": pc.Multicast((4, 1), mask=0b1010)}])
def test_a_load_re_planned_over_the_ring_keeps_its_map_and_l2_policy(options):
    load = pc.make_tma_copy(tile(128), A, **options)
    staged = make_pipeline({"a": load}, consumer=Consumer("warp"), stages=3).load("a")
    assert staged.tensor_map == load.tensor_map and staged.cache_hint == load.cache_hint
    assert (staged.multicast and staged.multicast.spec) == (load.multicast and load.multicast.spec)
    if load.cache_hint is not None:
        assert f"L2::{options['cache_hint']}" in make_pipeline({"a": load}, consumer=Consumer("warp"), stages=3).cuda()


def test_a_bulk_load_re_planned_over_the_ring_keeps_its_l2_policy():
    smem = pc.make_smem_tensor(pc.f32, Layout((64, 64), (64, 1)))
    load = pc.make_bulk_copy(smem, F32, cache_hint="evict_first")
    staged = make_pipeline({"a": load}, consumer=Consumer("warp"), stages=2).load("a")
    assert staged.cache_hint == load.cache_hint


def test_a_warp_may_produce_tma_loads_every_lane_waiting_and_one_arming():
    pipe = make_pipeline(loads(), consumer=Consumer("warp"), producer=Producer("tma", "warp"), stages=3)
    acquire = next(f for f in pipe.functions if f.name.endswith("producer_acquire"))
    assert acquire.convention.caller == "warp" and pipe.full == (BarrierInit(1, STAGE),)
    body = pipe.cuda().split("pipeline_producer_acquire(unsigned bars, pipeline_state st) {")[1].split("}")[0]
    assert body.index("pycute_pipeline_wait(") < body.index(
        f"if (pycute_elect_one_sync()) pycute_mbarrier_arrive_expect_tx(full, {STAGE}u);")


@pytest.mark.parametrize("build, message", [
    (lambda: make_pipeline(loads(), consumer=Consumer("warp"), producer=Producer("tma", "warpgroup"), stages=3),
     r"producer Producer\(kind='tma', caller='warpgroup'.* does not issue these loads: they make it .*"
     r"\(or its caller 'warp'\)"),
    (lambda: make_pipeline(loads(), consumer=Consumer("warp"), producer=Producer("cp_async", "warp"), stages=3),
     r"producer Producer\(kind='cp_async'.* does not issue these loads"),
])
def test_a_producer_that_does_not_issue_the_loads_is_refused(build, message):
    with pytest.raises(pc.PlanError, match=message):
        build()


# -- pipelines placed one after another in one buffer (an attention kernel's Q ring, then its K and V rings) --------

def test_a_pipeline_placed_after_another_lays_its_rings_where_the_others_end():
    q = make_pipeline({"q": pc.make_tma_copy(tile(128), A)}, consumer=Consumer("warpgroup", 2), stages=2, name="q")
    kv = make_pipeline({"k": pc.make_tma_copy(tile(128), B), "v": pc.make_tma_copy(tile(128), B)},
                       consumer=Consumer("warpgroup", 2), stages=2, name="kv", after=q)
    assert q.smem_bytes == 2 * 16384 and kv.start == q.smem_bytes
    assert kv.stage_bytes == (("k", 32768, 16384), ("v", 65536, 16384)) and kv.smem_bytes == 98304
    assert kv.ring("k").offset * 2 == 32768 and kv.before == q.barrier_bytes
    assert "rings [32768, 98304) B after earlier rings" in kv.explain()


def test_a_pipeline_placed_after_others_fits_its_stages_in_what_they_leave():
    q = make_pipeline({"q": pc.make_tma_copy(tile(256), A)}, consumer=Consumer("warpgroup", 2), stages=2, name="q")
    kv = make_pipeline({"k": pc.make_tma_copy(tile(256), B)}, consumer=Consumer("warpgroup", 2), after=q, name="kv",
                       reserve=1024)
    per_stage = 32768 + 2 * MBARRIER_BYTES
    assert kv.stages == (smem_capacity("sm_90a") - 1024 - q.smem_bytes - q.barrier_bytes) // per_stage
    # the reserve counts the earlier pipeline's 32 B of barriers too
    with pytest.raises(pc.PlanError, match=r"65536 B of earlier rings \+ 5 stages x 32768 B \+ 80 B of barriers \+ "
                                           r"3032 B reserved = 232488 B, over sm_90a's 232448 B"):
        make_pipeline({"k": pc.make_tma_copy(tile(256), B)}, consumer=Consumer("warpgroup", 2), after=q, stages=5,
                      reserve=3000, name="kv")


def test_pipelines_of_different_targets_are_not_placed_together():
    q = make_pipeline({"q": pc.make_tma_copy(tile(128), A)}, consumer=Consumer("warp"), stages=2, arch="sm_100a")
    with pytest.raises(pc.PlanError, match=r"pipeline 'pipeline' is planned for sm_100a, this one for sm_90a"):
        make_pipeline({"k": pc.make_tma_copy(tile(128), B)}, consumer=Consumer("warp"), stages=2, after=q)
    with pytest.raises(TypeError, match=r"after= takes pipeline plans, got TmaPlan"):
        make_pipeline({"k": pc.make_tma_copy(tile(128), B)}, consumer=Consumer("warp"), stages=2,
                      after=[pc.make_tma_copy(tile(128), B)])


def test_an_mma_reading_two_pipelines_rings_takes_each_stage_by_its_own_name():
    q = make_pipeline({"q": pc.make_tma_copy(tile(128), A)}, consumer=Consumer("warpgroup", 2), stages=2, name="q")
    kv = make_pipeline({"k": pc.make_tma_copy(tile(128), B)}, consumer=Consumer("warpgroup", 2), stages=3,
                       name="kv", after=q)
    mma = pc.make_mma(pc.wgmma_accumulator(pc.f32, 128, 128), q.ring("q", index="q_stage"),
                      kv.ring("k", index="kv_stage"))
    assert mma.stage_names == ("kv_stage", "q_stage")
    assert "unsigned kv_stage, unsigned q_stage)" in mma.cuda("qk")
    with pytest.raises(pc.PlanError, match=r"dynamic\('pycute_x'\): the name becomes a C parameter"):
        q.ring("q", index="pycute_x")
