"""The Hopper GEMM (pycute/kernels/hopper_gemm) runs whole on the CPU -- the producer warpgroup's TMA loads (B
multicast over the cluster of 2), the consumer warpgroups' wgmma, the stmatrix / TMA-store epilogue and the run-time
tile scheduler, every thread of every CTA -- and writes D exactly: the inputs are small integers, so D is the bf16
rounding of an exact float64 product. Both modes run on problems with several tiles per CTA and partial tiles;
the ping-pong consumers take turns over the ring (without the turns a warpgroup waits two phases ahead, what
faulted on the H200), and the pipeline bugs a hand-written mainloop can have are reported naming the barrier."""
import numpy as np
import pytest

from pycute.kernels.hopper_gemm import GemmPlans, HopperGemm
from pycute.compile import compile_cuda
from pycute.interp import DeadlockError, RaceError, run_kernel, tensor_map
from pycute.pipeline.split_k import KSplit

COOPERATIVE = HopperGemm(BN=64, cluster=2, stages=4)
PINGPONG = HopperGemm(BN=128, m_blocks=2, mode="pingpong")
TURN_WAIT, TURN_PASS = "if (n > 0u) mainloop_turn_wait(cw);", "if (next.more) mainloop_turn_pass(cw);"


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bf16 (to nearest even), as bits."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def run_gemm(gemm: HopperGemm, m: int, n: int, k: int, grid: int, kernel=None,
             split: KSplit | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(D as the kernel wrote it, the reference)``: bf16 bits of ``A B^T`` for integer A (m x k) and B (n x k), the
    tiles whole or shared as ``split``."""
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    a, b = rng.integers(-2, 3, (m, k)).astype(np.float32), rng.integers(-2, 3, (n, k)).astype(np.float32)
    d = np.full((m, n), 0x7FC0, dtype=np.uint16)                   # NaN: every element must be written
    plans = GemmPlans.of(gemm, m, n, k)
    assert plans.issues_as(gemm.plans)
    map_a, map_b, map_d = plans.maps()
    model = gemm.plans.sched.at((-(-m // gemm.BM), -(-n // gemm.BN)), -(-k // gemm.BK), split)
    ws = np.full(max(1, model.workspace_bytes // 4), np.nan, np.float32)
    counters = np.zeros(max(1, model.counters), np.uint32)
    run_kernel(kernel or gemm.compile(), "gemm", grid=grid, block=gemm.threads, smem=gemm.smem_bytes,
               cluster=gemm.launch_shape.cluster,
               args=[tensor_map(map_a, bf16_bits(a)), tensor_map(map_b, bf16_bits(b)), tensor_map(map_d, d), m, n, k,
                     1.0, ws, counters, model.split.dp, model.split.workers, np.zeros(1, np.float32),
                     np.zeros(1, np.float32), b"\0"])                  # the plain epilogue's empty struct
    assert not counters.any(), "the fixup left a counter set"
    return d, bf16_bits(a.astype(np.float64) @ b.astype(np.float64).T)


def mutated(gemm: HopperGemm, *edits: tuple[str, str]):
    """The kernel compiled with each ``(old, new)`` of ``edits`` applied to its source."""
    source = gemm.source()
    for old, new in edits:
        assert old in source
        source = source.replace(old, new)
    return compile_cuda(source, arch="sm_90a", options=("-std=c++17",))


@pytest.mark.parametrize("m,n,k,grid", [(232, 200, 184, 2), (256, 128, 128, 4)],
                         ids=["partial tiles, 4 per CTA", "2 clusters"])
def test_the_cooperative_gemm_writes_the_exact_product(m, n, k, grid):
    got, want = run_gemm(COOPERATIVE, m, n, k, grid)
    assert np.array_equal(got, want)


def test_the_pingpong_gemm_writes_the_exact_product_with_its_consumers_taking_turns():
    # 4 M tiles x 2 N tiles (the last ones partial): each warpgroup computes 2 tiles; 8 k-blocks wrap the 6 stages
    got, want = run_gemm(PINGPONG, 392, 136, 456, 2)
    assert np.array_equal(got, want)


def test_pingpong_consumers_that_do_not_take_turns_wait_two_phases_ahead():
    kernel = mutated(PINGPONG, (TURN_WAIT, ""), (TURN_PASS, ""))
    with pytest.raises(RaceError, match=r"wgmma\.mma_async #1 of warpgroup 2 of CTA 0 .* reads shared byte .* "
                                        r"bars\[1\]: parity 1 while phase 0 was in progress, passed at once"):
        run_gemm(PINGPONG, 256, 256, 448, 2, kernel)


def test_a_consumer_waiting_on_the_wrong_parity_is_named_with_its_barrier():
    wait = "pycute_pipeline_wait(bars + st.index * 8u, st.phase);"
    with pytest.raises(RaceError, match=r"wgmma\.mma_async #1 of warpgroup 1 of CTA 0 .* reads shared byte .* "
                                        r"bars\[0\]: parity 1 while phase 0 was in progress, passed at once"):
        run_gemm(COOPERATIVE, 128, 128, 192, 2, mutated(COOPERATIVE, (wait, wait.replace("st.phase", "st.phase ^ 1u"))))


def test_a_wrong_arrival_count_on_the_empty_barriers_is_a_deadlock_naming_the_barrier():
    init = "pycute_mbarrier_init(bars + (4u + s) * 8u, 16u);"
    with pytest.raises(DeadlockError, match=r"mbarrier bars\[4\] \(shared 0x\w+ of CTA [01]\): phase 0 in progress, 1 "
                                            r"of 17 arrivals pending"):
        run_gemm(COOPERATIVE, 128, 128, 384, 2, mutated(COOPERATIVE, (init, init.replace("16u", "17u"))))


def test_a_stage_released_before_its_wgmma_completed_is_overwritten_before_its_release():
    with pytest.raises(RaceError, match=r"TMA load .* overwrites shared byte .* which the wgmma of warpgroup [12] of "
                                        r"CTA [01] read and has not released to the writer"):
        run_gemm(COOPERATIVE, 128, 128, 384, 2, mutated(COOPERATIVE, ("pycute_wgmma_wait_group<1>();",
                                                         "pycute_wgmma_wait_group<2>();")))


# ---- split-K and stream-K: tiles shared by pieces of their k-blocks, reduced by the fixup ---------------------------

@pytest.mark.parametrize("gemm, mnk, grid, split", [
    (HopperGemm(BN=64, consumers=1, stages=3, cluster=1, split_k=True), (128, 120, 512), 3, KSplit.stream(3)),
    (HopperGemm(BN=64, cluster=2, stages=4, split_k=True), (232, 72, 192), 2, KSplit.stream(1, dp=1))],
    ids=["stream-K: 4 tiles of 8 k-blocks over 3 workers", "a whole cluster block, then stream-K, cluster 2"])
def test_shared_tiles_sum_to_the_exact_product(gemm, mnk, grid, split):
    got, want = run_gemm(gemm, *mnk, grid, split=split)
    assert np.array_equal(got, want)
