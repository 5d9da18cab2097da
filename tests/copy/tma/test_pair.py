"""The sm_100a pair load (``cta_group=2``, PTX ``.cta_group::2``): each CTA of the pair loads its own tile, both
CTAs' bytes complete on the even CTA's barrier (the emulator counts them), the code maps the barrier with mapa and
assembles to UTMALDG.2CTA on sm_100a only; refused where PTX has no such form."""
import pytest

import pycute as pc
from pycute import Layout
from pycute.compile.nvrtc import compile_cuda
from pycute.errors import CompileError

ARRAY = pc.make_global_tensor(pc.bf16, Layout((300, 128), (128, 1)))
TILE = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")


def kernel(plan) -> str:
    return plan.cuda("ld") + ('extern "C" __global__ void k(const void* map, int t0, int t1) { __shared__ '
                              '__align__(1024) unsigned char b[16384]; __shared__ unsigned long long m; '
                              'if (threadIdx.x == 0) ld(map, pycute_smem_address(b), pycute_smem_address(&m), t0, t1); }')


def test_the_even_ctas_barrier_expects_both_ctas_bytes():
    plan = pc.make_tma_copy(TILE, ARRAY, cta_group=2)
    single = pc.make_tma_copy(TILE, ARRAY)
    assert plan.expect_tx == 2 * single.expect_tx and plan.instructions[0].coords == single.instructions[0].coords
    assert plan.atom.ptx.endswith(".cta_group::2") and plan.targets[0] == "sm_100a"
    plan.verify()                        # two CTAs, each its own boxes; CTA 0's barrier counts both


def test_the_pair_load_assembles_to_utmaldg_2cta_on_sm_100a_and_not_below():
    plan = pc.make_tma_copy(TILE, ARRAY, cta_group=2)
    assert compile_cuda(kernel(plan), arch="sm_100a").histogram()["UTMALDG.2D.2CTA"] == len(plan.instructions)
    with pytest.raises(CompileError, match="cta_group"):
        compile_cuda(kernel(plan), arch="sm_90a")


def test_the_generated_code_signals_the_even_ctas_barrier():
    assert "pycute_mapa(mbar, pycute_cluster_ctarank() & ~1u)" in pc.make_tma_copy(TILE, ARRAY, cta_group=2).cuda()


def test_a_cta_group_other_than_one_or_two_is_refused():
    with pytest.raises(pc.PlanError, match="one CTA .1. or a pair .2."):
        pc.make_tma_copy(TILE, ARRAY, cta_group=3)


def test_a_pair_store_is_refused():
    with pytest.raises(pc.PlanError, match="pair form of a plain load or a multicast"):
        pc.make_tma_copy(ARRAY, TILE, cta_group=2)


def test_copy_async_refuses_the_pair_below_sm_100a_naming_the_targets():
    assert pc.copy_async(TILE, ARRAY, cta_group=2, arch="sm_100a").atom.pair
    with pytest.raises(pc.PlanError, match=r"tma_load .*needs one of sm_100a.*not sm_90a"):
        pc.copy_async(TILE, ARRAY, cta_group=2, arch="sm_90a")
