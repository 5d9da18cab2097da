"""The GEMM feed harness: its checksum is the arrays' (recomputed by brute force), it refuses consumers that are not
warps releasing by arrivals, the hand-minimal kernel compiles to its two load sites and no local memory, and every
configuration ``python -m tools pipelines`` sweeps plans within an SM's shared memory, and the kernels
``python -m tools feed_gap`` times run whole on the CPU."""

import attrs
import numpy as np
import pytest

import pycute as pc
from pycute.arch.sm90.smem import SMEM_PER_SM
from pycute.compile.nvrtc import compile_cuda
from pycute.harness.stream_feed import ALIGN_SLACK, FeedProblem, FeedStream, MinimalFeed, expected_checksum
from pycute.pipeline import Consumer
from pycute.interp import run_kernel, tensor_map
from tools import feed_gap, pipelines


def test_the_checksum_is_every_tile_and_k_blocks_first_words():
    problem = FeedProblem(pc.bf16, 256, 384, 128, (128, 128, 64))
    a, b = problem.arrays(seed=5)
    a2, b2 = a.reshape(256, 256), b.reshape(384, 256)
    want = 0
    for m in range(2):
        for n in range(3):
            for kb in range(2):
                want += int(a2[m * 128, kb * 128:kb * 128 + 4].view("<u4")[0])
                want += int(b2[n * 128, kb * 128:kb * 128 + 4].view("<u4")[0])
    assert expected_checksum(problem, a, b) == want
    assert problem.bytes_moved() == 2 * 3 * 2 * (128 + 128) * 64 * 2


@pytest.mark.parametrize("config, message", [
    ({"consumer": Consumer("elected")}, "consumers are warps or warpgroups releasing by arrivals"),
    ({"consumer": Consumer("warp", 1, "sync")}, "consumers are warps or warpgroups"),
    ({"multicast": 4}, "multicast is None or 2"),
])
def test_the_feed_refuses_what_it_cannot_run(config, message):
    with pytest.raises(pc.CompileError, match=message):
        FeedStream.gemm(pc.bf16, 512, 512, 128, (128, 128, 64), **config)


def test_multicast_needs_n_tiles_in_pairs():
    with pytest.raises(pc.CompileError, match="3 N tiles do not pair up for the cluster of 2"):
        FeedStream.gemm(pc.bf16, 512, 384, 128, (128, 128, 64), multicast=2)


def test_the_problem_is_whole_tiles():
    with pytest.raises(pc.CompileError, match=r"are whole tiles \(128, 128, 64\)"):
        FeedProblem(pc.bf16, 500, 512, 128, (128, 128, 64))


def test_the_minimal_kernel_issues_both_loads_and_keeps_nothing_in_local_memory():
    h = MinimalFeed.gemm(pc.bf16, 512, 512, 256, (128, 128, 64), stages=3).compile().histogram()
    assert h["UTMALDG.2D"] >= 2 and not any(op.startswith(("LDL", "STL")) for op in h)


def test_every_swept_configuration_plans_within_its_share_of_an_sm():
    tool = pipelines
    assert len(tool.SWEEP) >= 8 and {per_sm for _, _, per_sm in tool.SWEEP} == {1, 2}
    for tile, stages, per_sm in tool.SWEEP:
        problem = FeedProblem(pc.bf16, *tool.SWEEP_MNK, tile)
        for caller, count, multicast in tool.VARIANTS:
            feed = FeedStream(problem, stages=stages, consumer=Consumer(caller, count), multicast=multicast,
                              ctas_per_sm=per_sm)
            pipe = feed.pipeline
            per_cta = pipe.smem_bytes + ALIGN_SLACK + pipe.barrier_bytes + 1024      # and the driver's reserve
            assert pipe.stages == stages and per_sm * per_cta <= SMEM_PER_SM
        assert MinimalFeed(problem, stages=stages, ctas_per_sm=per_sm).pipeline.stages == stages


def test_every_rate_configuration_plans_within_an_sm():
    tool = pipelines
    for tile, stages, per_sm in tool.RATE:
        problem = FeedProblem(pc.bf16, *tool.RATE_MNK, tile)
        for feed in (FeedStream(problem, stages=stages, consumer=Consumer("warp", 1), ctas_per_sm=per_sm),
                     MinimalFeed(problem, stages=stages, ctas_per_sm=per_sm)):
            pipe = feed.pipeline
            assert pipe.stages == stages
            assert per_sm * (pipe.smem_bytes + ALIGN_SLACK + pipe.barrier_bytes + 1024) <= SMEM_PER_SM


@pytest.mark.parametrize("tile, stages", [((128, 192, 64), 4), ((128, 256, 32), 6)])
def test_the_rate_runs_new_tile_shapes_compile_without_local_memory(tile, stages):
    """192-row B boxes and BK 32 under the 64B swizzle: the tile shapes the sweep had not built."""
    problem = FeedProblem(pc.bf16, 7680, 7680, 4096, tile)
    for feed in (FeedStream(problem, stages=stages), MinimalFeed(problem, stages=stages)):
        assert not any(op.startswith(("LDL", "STL")) for op in feed.compile().histogram())


@pytest.mark.parametrize("bk, swizzle", [(64, "128B"), (32, "64B"), (16, "32B"), (8, "none")])
def test_the_feed_tiles_take_the_widest_swizzle_their_k_rows_fill(bk, swizzle):
    problem = FeedProblem(pc.bf16, 256, 256, 256, (128, 128, bk))
    assert problem.smem_swizzle == swizzle
    assert all(plan.smem.swizzle == pc.kmajor_smem_tensor(pc.bf16, 128, bk, swizzle).swizzle
               for plan in problem.loads(None).values())


def test_the_gap_tools_kernels_run_whole_on_the_cpu_and_the_feeds_deliver_every_stage():
    """feed_gap's hand-written baselines (consumers reading nothing, parities by hand), its L2
    prefetch variants and its edited feeds: no deadlock, no stage overwritten before its release, the feeds'
    checksums right (none without the verification branch)."""
    tool = feed_gap
    problem = FeedProblem(pc.bf16, 256, 256, 256, (128, 64, 64))
    a, b = problem.arrays(0)
    loads = problem.loads(None)
    smem = FeedStream(problem, stages=tool.STAGES).pipeline.smem_bytes + ALIGN_SLACK
    kernels = tool.hand_kernels(problem, prefetch=True, edits=True)
    assert {"minimal", "feed", "hand-warp", "hand-lane", "feed+pf1", "minimal+pf1", "hand-warp+pf1", "feed-elected",
            "feed-elected-exit", "feed-electloop", "feed-elected-exit-noverify-lane0"} <= set(kernels)
    for name, (source, symbol, threads) in kernels.items():
        checksum = np.zeros(1, np.uint64)
        args = [tensor_map(loads["a"], a), tensor_map(loads["b"], b)]
        args += [checksum, 1] if symbol == "feed_stream" else []
        run_kernel(compile_cuda(source, arch="sm_90a"), symbol, grid=3, block=threads, smem=smem, args=args)
        if symbol == "feed_stream":
            assert int(checksum[0]) == (0 if "noverify" in name else expected_checksum(problem, a, b)), name


def test_the_gap_tools_variants_are_options_every_kernel_of_a_problem_takes():
    tool = feed_gap
    for name, options in tool.VARIANTS.items():
        problem = tool.problem_of(tool.PROBLEMS[0], name)
        minimal, feed = tool.kernels(problem)
        assert minimal.scheduler == feed.scheduler == problem.scheduler()
        assert all(attrs.asdict(problem)[k] == v for k, v in options.items())
        assert feed.pipeline.load("a").tensor_map == problem.loads(None)["a"].tensor_map


@pytest.mark.parametrize("variant", feed_gap.WAITS)
def test_the_feed_with_each_wait_variant_runs_whole_on_the_cpu_and_delivers_every_stage(variant):
    """feed_gap --waits: one elected lane polling then __syncwarp, test_wait spinning: still every stage, in order."""
    problem = FeedProblem(pc.bf16, 256, 256, 128, (128, 64, 64))
    a, b = problem.arrays(0)
    loads = problem.loads(None)
    feed = FeedStream(problem, stages=2)
    checksum = np.zeros(1, np.uint64)
    run_kernel(compile_cuda(feed_gap.wait_kernels(problem, 2)[variant], arch="sm_90a"), "feed_stream", grid=2,
               block=32 * feed.warps, smem=feed.pipeline.smem_bytes + ALIGN_SLACK,
               args=[tensor_map(loads["a"], a), tensor_map(loads["b"], b), checksum, 1])
    assert int(checksum[0]) == expected_checksum(problem, a, b)
