"""The soft build's MMA (the header's software model, for Hopper GPUs): the MMA round-trip kernel builds for
sm_100a (one MMA per k-block) and, with PYCUTE_SOFT_TCGEN05, for sm_90a (a form the soft model lacks traps rather
than guess); a block-scaled round trip copies its SFs with tcgen05.cp plans; the round trip's expected D is the emulator's (tests/gpu/test_gpu_mma.py runs it on a GPU)."""
import numpy as np
import pytest

import pycute as pc
from pycute.errors import CompileError
from pycute.harness.mma import MmaRoundTrip


def plan(dtype=pc.bf16, k=64):
    return pc.make_mma(pc.mma_accumulator(pc.f32, 128, 256), pc.kmajor_smem_tensor(dtype, 128, k, "128B"),
                       pc.kmajor_smem_tensor(dtype, 256, k, "128B"))


def test_the_round_trip_builds_for_sm_100a_and_the_soft_sm_90a():
    rt = MmaRoundTrip(plan())
    assert rt.compile("sm_100a").histogram()["UTCHMMA"] == 4
    soft = rt.compile("sm_90a", soft=True)
    assert not any("UTCHMMA" in i for i in soft.instructions())


def test_the_soft_model_names_what_it_does_not_model():
    from pycute.codegen.header import headers
    text = headers()["pycute/tcgen05_mma.cuh"]
    assert "is not modelled (a data path pycute places, issued by the even CTA of a pair; f16/bf16/tf32/fp8 " \
           "operands, packed e2m1 for mxf4*; an f32 D)" in text


def test_the_expected_d_is_the_emulators_and_not_zero():
    d = MmaRoundTrip(plan()).emulate()
    assert d.shape == (128, 256) and np.any(d != 0)


def test_a_block_scaled_round_trip_copies_its_sfs_with_tcgen05_cp_plans():
    sfa = pc.scale_factor_tensor("mxf8f6f4", rows=128, mmas=4)
    sfb = pc.scale_factor_tensor("mxf8f6f4", rows=256, mmas=4)
    scaled = pc.make_mma(pc.mma_accumulator(pc.f32, 128, 256), pc.kmajor_smem_tensor("f8e4m3", 128, 128, "128B"),
                         pc.kmajor_smem_tensor("f8e4m3", 256, 128, "128B"), sfa=sfa, sfb=sfb)
    rt = MmaRoundTrip(scaled)
    for copy, sf in zip(rt.sf_copies, (sfa, sfb)):
        pc.check_scale_factor_copy(copy, sf)
    h = rt.compile("sm_100a").histogram()
    assert h["UTCQMMA"] == 4 and sum(v for k, v in h.items() if k.startswith("UTCCP")) == 3
    assert np.any(rt.emulate() != 0)
    rt.compile("sm_90a", soft=True)


def test_a_round_trip_takes_an_mma_plan():
    with pytest.raises(CompileError, match="an MmaPlan"):
        MmaRoundTrip("plan")
