"""The block-scaled GEMM example (examples/blockscaled_gemm.py) runs whole on the CPU -- producer, MMA and epilogue
warps of every CTA, a CTA pair's relay and multicast commits -- and writes the reference D; the pipeline bugs a
hand-written GEMM can have are reported naming the barrier (what the rewritten example's mutation tests build on)."""
import numpy as np
import pytest

from examples.blockscaled_gemm import BlockScaledGemm
from examples.blockscaled_gemm_check import run_whole
from pycute.sim import BarrierError, DeadlockError, RaceError

FULL_WAIT = "pycute_mbarrier_wait_parity(pycute_smem_address(&full[s]), (unsigned(kb) / STAGES) & 1u);"
EMPTY_INIT = "pycute_mbarrier_init(pycute_smem_address(&empty[s]), 1u);"
EXPECT = "+ load_sfb_expect_tx);"


@pytest.mark.parametrize("kind,g,m,n,k", [("mxf8", 1, 200, 256, 512), ("nvfp4", 2, 256, 256, 512)])
def test_the_whole_gemm_on_the_cpu_writes_the_reference(kind, g, m, n, k):
    got, want = run_whole(BlockScaledGemm(kind, g, m=m, n=n, k=k))
    assert np.array_equal(got, want)


def mutated(old: str, new: str, k: int = 512) -> tuple[BlockScaledGemm, str]:
    gemm = BlockScaledGemm("mxf8", 1, m=128, n=256, k=k)
    assert old in gemm.source()
    return gemm, gemm.source().replace(old, new)


def test_an_mma_warp_waiting_on_the_wrong_parity_is_named():
    gemm, src = mutated(FULL_WAIT, FULL_WAIT.replace("& 1u);", "& 1u ^ 1u);"))
    with pytest.raises(RaceError, match=r"tcgen05.cp .* reads shared byte .* still writing it .* full\[0\]: parity 1 "
                                        r"while phase 0 was in progress, passed at once"):
        run_whole(gemm, source=src)


def test_a_wrong_arrival_count_is_a_deadlock_naming_the_barrier():
    gemm, src = mutated(EMPTY_INIT, EMPTY_INIT.replace("1u);", "2u);"), k=1024)
    with pytest.raises(DeadlockError, match=r"mbarrier empty\[0\] \(shared 0x\w+ of CTA 0\): phase 0 in progress, 1 of "
                                            r"2 arrivals pending"):
        run_whole(gemm, source=src)


@pytest.mark.parametrize("expect,error,message", [
    ("+ load_sfb_expect_tx + 16);", DeadlockError, r"mbarrier full\[0\] .* 0 of 1 arrivals pending, tx-count 16 B"),
    (");", BarrierError, r"mbarrier full\[0\] .* expect_tx armed \d+ B, but the copies issued for this phase bring")])
def test_a_wrong_expect_tx_is_named_with_its_barrier(expect, error, message):
    gemm, src = mutated(EXPECT, expect)
    with pytest.raises(error, match=message):
        run_whole(gemm, source=src)
