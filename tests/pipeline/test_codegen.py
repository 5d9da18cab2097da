"""A pipeline's generated code: the counts, bytes and CTAs in its text are the plan's, no parity is computed outside
the state, every function states its calling convention, and the GEMM-shaped feed kernel built on it compiles for
sm_90a to the planned loads with no local memory -- and its producer, interpreted, issues exactly the plans' loads
for the scheduler's tiles."""
import re

import pytest

import pycute as pc
from pycute import Layout
from pycute.codegen import read_conventions
from pycute.codegen.pipeline import per_rank
from pycute.harness.stream_feed import FeedStream
from pycute.pipeline import Consumer, Producer, make_pipeline
from pycute.interp.stream import trace_entry

A = pc.make_global_tensor(pc.bf16, Layout((1024, 512), (512, 1)))


def tma(rows=128, multicast=None):
    return pc.make_tma_copy(pc.kmajor_smem_tensor(pc.bf16, rows, 64, "128B"), A, multicast=multicast)


def function(code, name):
    start = code.index(f" {name}(")
    return code[start:code.index("\n}", start)]


@pytest.mark.parametrize("pipe", [
    make_pipeline({"a": tma(), "b": tma(256)}, consumer=Consumer("warp", 4), stages=3),
    make_pipeline({"a": tma(multicast=2)}, consumer=Consumer("warpgroup", 2), stages=2),
    make_pipeline({"a": tma()}, consumer=Consumer("warp", 1, "commit", 2), stages=2, arch="sm_100a"),
    make_pipeline(consumer=Consumer("threads", 128), producer=Producer("commit", "warp", cta_group=2), stages=2,
                  arch="sm_100a"),
], ids=["tma", "multicast", "pair relay", "accumulators"])
def test_every_generated_function_states_the_convention_the_plan_records(pipe):
    conventions = read_conventions(pipe.cuda())
    assert {f.name: f.convention for f in pipe.functions}.items() <= conventions.items()


def test_the_counts_and_bytes_in_the_text_are_the_plans():
    pipe = make_pipeline({"a": tma(), "b": tma(256)}, consumer=Consumer("warp", 4), stages=3, name="ring")
    code = pipe.cuda()
    assert "pycute_mbarrier_init(bars + s * 8u, 1u);" in code and \
        "pycute_mbarrier_init(bars + (3u + s) * 8u, 4u);" in code
    assert "pycute_mbarrier_arrive_expect_tx(full, 49152u);" in function(code, "ring_producer_acquire")
    assert "typedef pycute_pipeline_state<3u> ring_state;" in code
    assert "constexpr unsigned ring_barrier_words = 6u;" in code


def test_no_parity_is_computed_outside_the_state():
    pipe = make_pipeline({"a": tma(multicast=2)}, consumer=Consumer("warpgroup", 2), stages=4)
    code = pipe.cuda()
    waits = re.findall(r"pycute_(?:mbarrier_wait_parity|pipeline_wait)\([^;]*\);", code)
    assert waits and all(w.endswith(", st.phase);") for w in waits)
    assert "main_producer_start" not in code and "return pipeline_state{0u, 1u};" in code


def test_a_release_to_a_multicast_group_arrives_on_every_ctas_barrier_from_one_lane_per_warp():
    body = function(make_pipeline({"a": tma(multicast=2)}, consumer=Consumer("warp", 2), stages=2).cuda(),
                    "pipeline_consumer_release")
    assert body.count("pycute_pipeline_release(empty, ") == 2 and "__syncwarp();" in body
    assert "if (pycute_elect_one_sync())" in body


def test_a_pairs_counts_differ_by_rank():
    code = make_pipeline({"a": tma()}, consumer=Consumer("warp", 1, "commit", 2), stages=2, arch="sm_100a").cuda()
    assert "pycute_mbarrier_init(bars + s * 8u, ((rank & 1u) ? 1u : 2u));" in code
    assert "pycute_tcgen05_commit<2>(bars + (2u + st.index) * 8u);" in function(code, "pipeline_consumer_release")
    assert "pycute_mbarrier_arrive_remote(full, pycute_cluster_ctarank() & ~1u);" in function(code, "pipeline_relay")


@pytest.mark.parametrize("values, expr", [([3, 3, 3], "3u"), ([2, 1, 2, 1], "((rank & 1u) ? 1u : 2u)"),
                                          ([1, 2, 3], "(rank == 0u ? 1u : (rank == 1u ? 2u : 3u))")])
def test_a_per_rank_value_is_a_constant_a_pairs_choice_or_a_table(values, expr):
    assert per_rank(values) == expr


@pytest.fixture(scope="module")
def feed():
    stream = FeedStream.gemm(pc.bf16, 512, 512, 256, (128, 128, 64), stages=3, multicast=2)
    return stream, stream.compile("sm_90a")


def test_the_feed_kernel_compiles_to_the_planned_loads_and_no_local_memory(feed):
    stream, compiled = feed
    h = compiled.histogram()
    assert h.get("UTMALDG.2D.MULTICAST", 0) >= 1 and h.get("UTMALDG.2D", 0) >= 1
    assert not any(op.startswith(("LDL", "STL")) for op in h)


@pytest.mark.parametrize("cta", [0, 1, 2, 3])
def test_the_feed_producer_interpreted_issues_the_plans_loads_for_the_schedulers_tiles(feed, cta):
    stream, compiled = feed
    pipe, grid = stream.pipeline, 4
    thread = trace_entry(compiled.ptx, {0: 0, 1: 0, 2: 0, 3: 0}, {"bars": 0x40, "raw": 0x400}, "feed_stream", tid=0,
                         specials={"%ctaid.x": cta, "%nctaid.x": grid, "%cluster_ctarank": cta % 2, "%ntid.x": 64},
                         max_steps=400_000)
    want, fill = [], 0
    for m, n in stream.scheduler.tiles_of(cta, grid):
        for kb in range(stream.problem.k_blocks):
            stage = fill % pipe.stages
            want += pipe.load("a").stream(0x400, m, kb, cta=cta % 2, stage=stage)
            want += pipe.load("b").stream(0x400, n, kb, stage=stage)
            fill += 1
    assert thread.tma == want


PAIR_KERNEL = r"""
extern "C" __global__ void __launch_bounds__(192, 1) __cluster_dims__(2, 1, 1) k(const pycute_tensor_map* map, int kbs) {
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[ring_barrier_words], abars[acc_barrier_words];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(bars);
  const unsigned a = pycute_smem_address(abars), warp = pycute_warp_index(), rank = pycute_cluster_ctarank();
  if (threadIdx.x == 0) { ring_init(b); acc_init(a); }
  pycute_cluster_sync();
  if (warp == 0) {                                   // the producer
    if (pycute_elect_one_sync()) {
      ring_state st = ring_producer_start();
      for (int kb = 0; kb < kbs; ++kb, st.advance()) ring_a(map, base, ring_producer_acquire(b, st), blockIdx.x, kb, st.index);
    }
    __syncwarp();
  } else if (warp == 1 && (rank & 1u) == 0u) {       // the pair's MMA warp: releases stages, fills an accumulator
    ring_state st = ring_consumer_start();
    acc_state out = acc_producer_start();
    acc_producer_acquire(a, out);
    for (int kb = 0; kb < kbs; ++kb, st.advance()) { ring_consumer_wait(b, st); ring_consumer_release(b, st); }
    acc_producer_commit(a, out);
  } else if (warp == 1) {                            // the odd CTA relays its stages
    ring_state st = ring_consumer_start();
    for (int kb = 0; kb < kbs; ++kb, st.advance()) ring_relay(b, st);
  } else {                                           // the epilogue
    acc_state in = acc_consumer_start();
    acc_consumer_wait(a, in);
    acc_consumer_release(a, in);
  }
  pycute_cluster_sync();
}
"""


@pytest.mark.parametrize("arch, options, commits", [("sm_100a", (), 2), ("sm_90a", ("-DPYCUTE_SOFT_TCGEN05",), 0)])
def test_a_blackwell_pairs_mainloop_and_accumulator_pipelines_compile(arch, options, commits):
    ring = make_pipeline({"a": tma()}, consumer=Consumer("warp", 1, "commit", 2), stages=3, arch="sm_100a",
                         name="ring")
    acc = make_pipeline(consumer=Consumer("warp", 4), producer=Producer("commit", "warp", cta_group=2), stages=2,
                        arch="sm_100a", name="acc")
    h = pc.compile.compile_cuda(ring.cuda() + acc.cuda() + PAIR_KERNEL, arch=arch, options=options).histogram()
    assert h.get("UTCBAR.2CTA.MULTICAST", 0) == commits          # the stage release and the accumulator commit
    assert not any(op.startswith(("LDL", "STL")) for op in h)


@pytest.mark.parametrize("caller", ["warp", "elected"])
def test_a_tma_fill_acquires_issues_every_load_from_one_lane_and_advances(caller):
    pipe = make_pipeline({"a": tma(), "b": tma(256)}, consumer=Consumer("warp", 4),
                         producer=Producer("tma", caller), stages=3, name="ring")
    fill = function(pipe.cuda(), "ring_fill")
    assert fill.startswith(" ring_fill(unsigned bars, ring_state& st, unsigned smem, const void* map_a, int a_t0, "
                           "int a_t1, const void* map_b, int b_t0, int b_t1) {")
    issue = ("ring_a(map_a, smem, full, a_t0, a_t1, st.index);", "ring_b(map_b, smem, full, b_t0, b_t1, st.index);")
    lines = [line.strip() for line in fill.splitlines()[1:]]
    inner = ["if (pycute_elect_one_sync()) {", *issue, "}"] if caller == "warp" else list(issue)
    assert lines == ["const unsigned full = ring_producer_acquire(bars, st);", *inner, "st.advance();"]


def test_only_tma_pipelines_have_a_fill():
    staged = pc.make_smem_tensor(pc.f32, Layout((64, 64, 3), (64, 1, 4096)))[:, :, pc.dynamic("stage")]
    load = pc.make_cp_async_copy(staged, pc.make_global_tensor(pc.f32, Layout((1024, 512), (512, 1))),
                                 threads=128, completion="arrive")
    pipe = make_pipeline({"a": load}, consumer=Consumer("warp", 4))
    assert not pipe.fills and "_fill(" not in pipe.cuda()


def test_a_consumer_advance_releases_the_stage_and_moves_the_state_on():
    pipe = make_pipeline({"a": tma()}, consumer=Consumer("warpgroup", 2), stages=3, name="ring")
    advance = function(pipe.cuda(), "ring_consumer_advance")
    assert advance.startswith(" ring_consumer_advance(unsigned bars, ring_state& st) {")
    assert [line.strip() for line in advance.splitlines()[1:]] == ["ring_consumer_release(bars, st);", "st.advance();"]
