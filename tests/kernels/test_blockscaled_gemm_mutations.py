"""The block-scaled GEMM (pycute/kernels/blockscaled_gemm) run whole on the CPU catches each pipeline bug a
GEMM can have, naming the barrier by its pipeline: its generated code mutated to a wrong parity (a consumer's or the
producer's start, the accumulators' consumer), a wrong arrival count (the operand ring's and the accumulators'
empty barriers) and a wrong expect_tx (too many bytes, too few). One CTA walks three tiles, so both accumulators
are filled and released, and the second fill of each waits for the first's release."""
import pytest

from pycute.kernels.blockscaled_gemm import BlockScaledGemm
from pycute.kernels.blockscaled_gemm.check import run_whole
from pycute.interp import BarrierError, DeadlockError, RaceError


@pytest.fixture(scope="module")
def gemm():
    return BlockScaledGemm("mxf8", 1, m=128, n=384, k=256, sms=1)


def mutated(gemm, old: str, new: str) -> str:
    source = gemm.source()
    assert source.count(old) == 1, old
    return source.replace(old, new)


def test_the_unmutated_kernel_runs_clean(gemm):
    got, want = run_whole(gemm)
    assert (got == want).all()


@pytest.mark.parametrize("old, new, error, message", [
    ("return mainloop_state{0u, 0u};", "return mainloop_state{0u, 1u};", RaceError,
     r"tcgen05.cp .* reads shared byte .* (still writing it|nothing has written yet) .* mainloop.full\[0\]: parity 1 "
     r"while phase 0 was in progress, passed at once"),
    ("return mainloop_state{0u, 1u};", "return mainloop_state{0u, 0u};", DeadlockError,
     r"mbarrier mainloop.empty\[0\] \(shared 0x\w+ of CTA 0\): phase 0 in progress, 1 of 1 arrivals pending"),
    ("return accum_state{0u, 0u};", "return accum_state{0u, 1u};", RaceError,
     r"tcgen05.mma .* overwrites TMEM lane 0 column 0 of CTA 0, which CTA 0 thread \d+ .* read without "
     r"synchronising .* accum.empty\[0\]: parity 1"),
], ids=["mma-warp-full", "producer-empty", "epilogue-full"])
def test_a_wrong_parity_is_named_with_its_barrier(gemm, old, new, error, message):
    with pytest.raises(error, match=message):
        run_whole(gemm, source=mutated(gemm, old, new))


@pytest.mark.parametrize("pipeline, arrivals", [("mainloop", 1), ("accum", 4)])
def test_a_wrong_arrival_count_is_a_deadlock_naming_the_barrier(gemm, pipeline, arrivals):
    plan = gemm.operands if pipeline == "mainloop" else gemm.accumulators
    init = f"pycute_mbarrier_init(bars + ({plan.stages}u + s) * 8u, {arrivals}u);"
    with pytest.raises(DeadlockError, match=rf"mbarrier {pipeline}.empty\[0\] \(shared 0x\w+ of CTA 0\): phase 0 in "
                                            rf"progress, 1 of {arrivals + 1} arrivals pending"):
        run_whole(gemm, source=mutated(gemm, init, init.replace(f"{arrivals}u);", f"{arrivals + 1}u);")))


@pytest.mark.parametrize("delta, error, message", [
    (16, DeadlockError, r"mbarrier mainloop.full\[0\] .* 0 of 1 arrivals pending, tx-count 16 B"),
    (-16, BarrierError, r"mbarrier mainloop.full\[0\] .* expect_tx armed \d+ B, but the copies issued for this phase "
                        r"bring \d+ B")], ids=["too-many", "too-few"])
def test_a_wrong_expect_tx_is_named_with_its_barrier(gemm, delta, error, message):
    arm = f"pycute_mbarrier_arrive_expect_tx(full, {gemm.operands.expect_tx}u);"
    with pytest.raises(error, match=message):
        run_whole(gemm, source=mutated(gemm, arm, arm.replace(f"{gemm.operands.expect_tx}u",
                                                              f"{gemm.operands.expect_tx + delta}u")))
