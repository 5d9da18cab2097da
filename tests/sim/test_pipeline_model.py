"""The pipeline model checker: every pipeline pycute derives (and every harness's) finishes in every interleaving
with no early read and no overwrite, and a deliberately broken plan -- a wrong parity, arrival count or expect_tx,
a missing relay -- is reported naming the barrier, the CTA and the stage."""
import attrs
import pytest

import pycute as pc
from pycute import Layout
from pycute.pipeline import BarrierInit, Consumer, Producer, make_pipeline
from pycute.sim import PipelineError, check_pipeline

A = pc.make_global_tensor(pc.bf16, Layout((1024, 512), (512, 1)))
F32 = pc.make_global_tensor(pc.f32, Layout((1024, 512), (512, 1)))


def tma(rows=128, multicast=None, cta_group=1):
    return pc.make_tma_copy(pc.kmajor_smem_tensor(pc.bf16, rows, 64, "128B"), A, multicast=multicast,
                            cta_group=cta_group)


def cp_async():
    ring = pc.make_smem_tensor(pc.f32, Layout((64, 64, 2), (64, 1, 4096)))[:, :, pc.dynamic("stage")]
    return pc.make_cp_async_copy(ring, F32, threads=64, completion="arrive")


def dsmem():
    ring = pc.make_smem_tensor(pc.f32, Layout((1024, 2), (1, 1024)))
    return pc.make_dsmem_copy(ring[:, pc.dynamic("recv")], ring[:, pc.dynamic("send")])


PIPELINES = {
    "tma, a warp": lambda: make_pipeline({"a": tma(), "b": tma(256)}, consumer=Consumer("warp"), stages=3),
    "tma, threads": lambda: make_pipeline(tma(), consumer=Consumer("threads", 128), stages=2),
    "multicast, warpgroups": lambda: make_pipeline({"a": tma(multicast=2), "b": tma(256)},
                                                   consumer=Consumer("warpgroup", 2), stages=2),
    "pair relay": lambda: make_pipeline({"a": tma()}, consumer=Consumer("warp", 1, "commit", 2), stages=2,
                                        arch="sm_100a"),
    "pair loads": lambda: make_pipeline({"a": tma(cta_group=2)}, consumer=Consumer("warp", 1, "commit", 2),
                                        stages=3, arch="sm_100a"),
    "cp.async": lambda: make_pipeline(cp_async(), consumer=Consumer("elected")),
    "accumulators of a pair": lambda: make_pipeline(consumer=Consumer("warp", 4),
                                                    producer=Producer("commit", "warp", cta_group=2), stages=2,
                                                    arch="sm_100a"),
    "stores then arrivals": lambda: make_pipeline(consumer=Consumer("warp", 1, "commit"),
                                                  producer=Producer("arrive", "warpgroup"), stages=2, arch="sm_100a"),
    "one stage, a sync release": lambda: make_pipeline(consumer=Consumer("threads", 128, "sync"),
                                                       producer=Producer("commit", "warp", cta_group=2), stages=1,
                                                       arch="sm_100a"),
    "DSMEM ring of 3": lambda: make_pipeline(dsmem(), consumer=Consumer("threads", 128, "sync"),
                                             producer=Producer("dsmem", peer=1), ctas=3),
}


@pytest.mark.parametrize("name", PIPELINES)
def test_every_interleaving_of_a_derived_pipeline_finishes_with_no_early_read_and_no_overwrite(name):
    pipe = PIPELINES[name]()
    report = check_pipeline(pipe)
    assert report.exhaustive and report.fills == 2 * pipe.stages + 1 and report.states > report.fills
    assert pipe.verify().states == report.states              # plan.verify() is the same check


def test_the_report_says_what_was_explored():
    report = check_pipeline(PIPELINES["tma, a warp"](), fills=4)
    assert str(report).startswith("pipeline 'pipeline': 4 fills, 2 processes, every interleaving (")
    assert report.processes == ("producer of CTA 0", "consumer of CTA 0")


def mutated(name, **changes):
    return attrs.evolve(PIPELINES[name](), **changes)


@pytest.mark.parametrize("name, changes, what, barrier, cta, message", [
    ("tma, a warp", {"producer_start": 0}, "deadlock", "empty", 0,
     r"deadlock: the producer of CTA 0 waits on empty\[0\] of CTA 0 for parity 0 \(fill 0\)"),
    ("tma, a warp", {"consumer_start": 1}, "early read", "full", 0,
     r"early read: the consumer of CTA 0 passed full\[0\] of CTA 0 for fill 0 before 2 of 2 contribution\(s\) to "
     r"CTA 0's stage 0 landed: its phase 0 had not completed: the wait's parity is wrong"),
    ("tma, a warp", {"full": (BarrierInit(2, 49152),)}, "deadlock", "full", 0,
     r"the consumer of CTA 0 waits on full\[0\] of CTA 0 for parity 0 \(fill 0\); the barrier has completed 0 "
     r"phase\(s\), with 1 of its 2 arrivals and 0 B outstanding"),
    ("tma, a warp", {"full": (BarrierInit(1, 49152 - 16384),)}, "deadlock", "full", 0,
     r"with 1 of its 1 arrivals and -16384 B outstanding"),
    ("tma, a warp", {"full": (BarrierInit(1, 49152 + 16),)}, "deadlock", "full", 0, r"with 1 of its 1 arrivals and 16 B "
                                                                                    r"outstanding"),
    ("tma, threads", {"empty": (BarrierInit(127),)}, "barrier", "empty", 0,
     r"after 5 fills empty\[0\] of CTA 0 has completed .* the roles signal it 128 arrival\(s\) per fill"),
    ("tma, threads", {"empty": (BarrierInit(129),)}, "deadlock", "empty", 0, r"empty\[0\] of CTA 0"),
    ("tma, threads", {"empty": (BarrierInit(64),)}, "overwrite", "empty", 0,
     r"overwrite: the producer of CTA 0 passed empty\[0\] of CTA 0 and refills CTA 0's stage 0 with fill 2 before the "
     r"consumer 1 of CTA 0 released fill 0: its count let the phase complete before every release"),
    ("multicast, warpgroups", {"empty": (BarrierInit(8),) * 2}, "overwrite", "empty", 0,
     r"passed empty\[0\] of CTA . and refills CTA .'s stage 0 with fill 2 before the consumer . of CTA . released fill 0"),
    ("pair relay", {"relay": False}, "deadlock", "full", 0, r"waits on full\[0\] of CTA 0 .* with 1 of its 2 arrivals"),
    ("cp.async", {"full": (BarrierInit(63),)}, "barrier", "full", 0, r"full\[0\] of CTA 0"),
])
def test_a_broken_pipeline_is_reported_naming_the_barrier_and_the_stage(name, changes, what, barrier, cta, message):
    with pytest.raises(PipelineError, match=message) as e:
        check_pipeline(mutated(name, **changes), group=2)      # two processes per role: partial releases too
    assert (e.value.what, e.value.barrier, e.value.stage) == (what, barrier, 0)
    assert e.value.cta is not None and e.value.trace is not None


def test_a_barrier_the_plan_never_initialises_is_reported():
    with pytest.raises(PipelineError, match=r"full\[0\] of CTA 1 \(fill 0\), a barrier the plan never initialises"):
        check_pipeline(mutated("pair relay", full=(BarrierInit(2, 16384), BarrierInit(0, 0))))


def test_a_check_past_its_state_budget_says_it_sampled():
    report = check_pipeline(PIPELINES["multicast, warpgroups"](), max_states=50, schedules=20)
    assert not report.exhaustive and report.schedules == 20 and "random runs" in str(report)


def test_the_checker_takes_a_pipeline_plan():
    with pytest.raises(TypeError, match="expected a PipelinePlan"):
        check_pipeline(tma())
