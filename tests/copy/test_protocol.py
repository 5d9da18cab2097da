"""One plan protocol for every variant: what a plan answers, typed issue records, one rejection record, and the
old names kept as aliases."""
import pytest

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.atoms import Tcgen05CpIssue, Tcgen05LdStIssue
from pycute.copy import Reject, Rejection


def cp_plan():
    src = pc.kmajor_smem_buffer(pc.bf16, 128, 64, "128B")[0:128, 0:64]
    return pc.make_tiled_copy(pc.make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=32), src)


def ldst_plan():
    return pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64), "ld")


@pytest.mark.parametrize("make", [cp_plan, ldst_plan], ids=["tcgen05_cp", "tcgen05_ldst"])
def test_every_variant_plan_follows_the_protocol(make):
    plan = make()
    assert isinstance(plan, pc.Plan) and plan.VARIANT in ("tcgen05_cp", "tcgen05_ldst")
    assert plan.instructions and all(isinstance(i.ptx, str) for i in plan.instructions)
    assert plan.lower_bound <= len(plan.instructions) or plan.VARIANT == "tcgen05_ldst"
    assert plan.explain().startswith(f"tcgen05.{'cp' if plan.VARIANT == 'tcgen05_cp' else 'ld'} plan")
    assert "__device__" in plan.cuda()
    assert all(isinstance(r, Rejection) for r in plan.rejected)


def test_streams_are_typed_issue_records_that_still_unpack_as_tuples():
    (cp, *_), (ld, *_) = cp_plan().stream(0, 0), ldst_plan().stream(0, 0)
    assert isinstance(cp, Tcgen05CpIssue) and isinstance(ld, Tcgen05LdStIssue)
    ptx, taddr, desc = cp
    assert (ptx, taddr, desc) == (cp.ptx, cp.taddr, cp.desc) and ptx.startswith("tcgen05.cp.")
    assert ld.ptx.startswith("tcgen05.ld.") and ld.registers == 32 and ld.half_offset is None


def test_a_rejected_form_is_a_record_of_the_candidate_and_its_rule():
    plan = pc.make_tiled_copy(*reversed(_replicated()))
    first = plan.rejected[0]
    assert first.candidate == "128x256b" and str(first.reason).startswith("replica mismatch")
    assert str(first) == f"128x256b: {first.reason}"


def _replicated():
    src = pc.make_smem_tensor(pc.u8, Layout((32, 16), (16, 1)))
    dst = pc.make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    return src, dst


def test_a_reject_formats_its_rule_only_when_read():
    why = Reject("{a} is not {b}", a=1, b=2)
    assert why.template == "{a} is not {b}" and str(why) == "1 is not 2"


def test_the_old_plan_names_are_aliases_of_the_instruction_names():
    assert pc.CopyPlan is pc.Tcgen05CpPlan and pc.TmemCopyPlan is pc.Tcgen05LdStPlan
    assert repr(cp_plan()).startswith("Tcgen05CpPlan(tcgen05.cp.cta_group::1.128x256b")
    assert repr(ldst_plan()).startswith("Tcgen05LdStPlan(ld, 4 warps")


def test_ldst_plans_name_their_register_side():
    ld, st = ldst_plan(), pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64), "st")
    assert ld.src.space == "tmem" and ld.dst.space == "register" and ld.dst.threads == 128
    assert st.src.space == "register" and st.dst.space == "tmem"
