"""The MMA of a CTA pair (cta_group::2, M 256): each CTA holds 128 rows of A, N/2 rows of B, its SFA rows and all of
SFB; the plan's instructions are the pair's (M 256 in the idesc, .cta_group::2), the emulator's two CTAs give the
reference D bit for bit, a wrong operand half or SF is caught, and shapes the pair cannot take are refused naming
the rule; NVFP4 (UE4M3 SFs, 4X) and staged operands plan the same way."""
import numpy as np
import pytest

import pycute as pc
from pycute.errors import EmulationError
from pycute.mma import make_mma
from pycute.sim.operand import decode
from pycute.sim.verify_mma import verify_mma


def pair(kind="mxf8f6f4", dtype="f8e4m3", k=128, n=256, vec=1, scale_type=None, a_rows=128):
    sf = dict(sfa=pc.scale_factor_tensor(kind, a_rows, 4, vec, cta_group=2),
              sfb=pc.scale_factor_tensor(kind, n, 4, vec, cta_group=2)) if vec else {}
    return make_mma(pc.mma_accumulator(pc.f32, 2 * a_rows, n, 2), pc.kmajor_smem_tensor(dtype, a_rows, k),
                    pc.kmajor_smem_tensor(dtype, n // 2, k), kind=kind, cta_group=2, scale_type=scale_type, **sf)


PLANS = {"bf16-n128": lambda: pair("f16", pc.bf16, 64, 128, None), "f8-n256": lambda: pair("f8f6f4", k=128, vec=None),
         "mxf8": pair, "nvfp4": lambda: pair("mxf4nvf4", "f4e2m1", 256, vec=4, scale_type="ue4m3"),
         "mxf4": lambda: pair("mxf4", "f4e2m1", 256, vec=2)}


@pytest.mark.parametrize("name", PLANS)
def test_the_pair_computes_what_the_layouts_elements_give(name):
    plan = PLANS[name]()
    assert plan.atom.cta_group == 2 and ".cta_group::2." in plan.atom.ptx
    assert plan.shape[0] == 256
    plan.verify(seed=1)


def test_the_pairs_idesc_names_m_256_and_explain_names_the_split():
    plan = pair()
    assert plan.idesc.fields["m"] == 256 and plan.shape == (256, 256, 128)
    assert "each CTA holds 128 of A's 256 rows, 128 of B's 256 (the even CTA's first)" in plan.explain()


@pytest.mark.parametrize("what, change", [
    ("B read from A's buffer", lambda i: i._replace(b_desc=i.a_desc)),
    ("a wrong SFB id", lambda i: i._replace(idesc=i.idesc ^ (1 << 4))),
])
def test_verify_catches_in_the_pair(what, change):
    plan = pair()
    with pytest.raises(EmulationError, match=r"D\[\d+, \d+\] is .* the layouts' elements give"):
        verify_mma(plan, stream=lambda *args: [change(i) for i in plan.stream(*args)])


def test_a_block_scaled_pair_of_m_128_is_refused_naming_the_open_sf_placement():
    with pytest.raises(pc.PlanError, match="cta_group::2 MMA of M 128 reads SFB through the 2x2 data path"):
        pair("mxf4nvf4", "f4e2m1", 256, vec=4, scale_type="ue4m3", a_rows=64)


def test_sfs_planned_for_the_other_cta_group_are_refused():
    with pytest.raises(pc.PlanError, match="is not the SFs of 4 kind::mxf8f6f4 cta_group::2 MMA"):
        make_mma(pc.mma_accumulator(pc.f32, 256, 256, 2), pc.kmajor_smem_tensor("f8e4m3", 128, 128),
                 pc.kmajor_smem_tensor("f8e4m3", 128, 128), cta_group=2,
                 sfa=pc.scale_factor_tensor("mxf8f6f4", 128, 4), sfb=pc.scale_factor_tensor("mxf8f6f4", 256, 4))


def test_staged_pair_operands_plan_every_stage():
    a = pc.make_stages(pc.kmajor_smem_tensor("f4e2m1", 128, 256), 3)[:, :, pc.dynamic("stage")]
    b = pc.make_stages(pc.kmajor_smem_tensor("f4e2m1", 128, 256), 3)[:, :, pc.dynamic("stage")]
    plan = make_mma(pc.mma_accumulator(pc.f32, 256, 256, 2), a, b, kind="mxf4nvf4", scale_type="ue4m3", cta_group=2,
                    sfa=pc.scale_factor_tensor("mxf4nvf4", 128, 4, 4, cta_group=2),
                    sfb=pc.scale_factor_tensor("mxf4nvf4", 256, 4, 4, cta_group=2))
    assert [s.smem_step for s in plan.a.stages] == [16384]
    moved = plan.stream(0, 0x10000, 0, 256, 288, stage=2)
    assert [i.a_desc - j.a_desc for i, j in zip(moved, plan.stream(0, 0x10000, 0, 256, 288, stage=0))] == [2 * 16384 >> 4] * 4


@pytest.mark.parametrize("code, value", [(0x38, 1.0), (0x30, 0.5), (0x7E, 448.0), (0xB8, 1.0), (0x01, 2.0 ** -9)])
def test_ue4m3_scale_factors_decode_as_unsigned_e4m3(code, value):
    assert decode(np.array([code]), "ue4m3")[0] == value


def test_the_ue4m3_nan_code_is_nan():
    assert np.isnan(decode(np.array([0x7F, 0xFF]), "ue4m3")).all()
