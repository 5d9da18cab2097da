"""One calling convention: every generated function states, in one uniform line, who calls it and that shared
operands are 32-bit shared addresses -- the convention its plan records -- and ``read_conventions`` reads them back
from the text (what an interpreter checks call sites against)."""
import pytest

import pycute as pc
from pycute import Layout
from pycute.codegen import read_conventions
from pycute.codegen.tcgen05_cp import emit_device_function

A = pc.make_global_tensor(pc.f32, Layout((512, 256), (256, 1)))
TILE = pc.make_smem_tensor(pc.f32, Layout((64, 64), (64, 1)))
RING = pc.make_smem_tensor(pc.f32, Layout((4096, 2), (1, 4096)))
SFA = pc.scale_factor_tensor("mxf8f6f4", 128, 4)


def mma():
    return pc.make_mma(pc.mma_accumulator(pc.f32, 128, 256), pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"),
                       pc.kmajor_smem_tensor(pc.bf16, 256, 64, "128B"))


PLANS = {
    "tma load": lambda: pc.make_tma_copy(TILE, A),
    "tma store": lambda: pc.make_tma_copy(A, TILE),
    "bulk": lambda: pc.make_bulk_copy(pc.make_smem_tensor(pc.f32, Layout((4, 256), (256, 1))), A),
    "dsmem": lambda: pc.make_dsmem_copy(RING[:, pc.dynamic("recv")], RING[:, pc.dynamic("send")]),
    "cp.async": lambda: pc.make_cp_async_copy(TILE, A, threads=96),
    "tcgen05.cp": lambda: pc.make_tiled_copy(pc.make_tmem_tensor(pc.bf16, Layout((128, 64), (pc.TLane, pc.TCol)),
                                                                 columns=32),
                                             pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")),
    "tcgen05.ld": lambda: pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32)),
    "mma": mma,
    "umma descriptor": lambda: pc.make_umma_desc(pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")),
}


@pytest.mark.parametrize("name", PLANS)
def test_the_generated_function_states_the_convention_its_plan_records(name):
    plan = PLANS[name]()
    code = plan.cuda("f")
    assert read_conventions(code) == {"f": plan.convention}
    assert code.count("// pycute: called by ") == 1


@pytest.mark.parametrize("issue, caller", [("warp", "warp"), ("elected", "elected")])
def test_a_tcgen05_cp_function_states_who_issues_and_takes_a_shared_address(issue, caller):
    code = emit_device_function(PLANS["tcgen05.cp"](), "cp", issue=issue)
    assert read_conventions(code)["cp"].caller == caller
    assert "void cp(unsigned smem_buffer, unsigned tmem_base)" in code
    assert "void cp(const void* smem_buffer, unsigned tmem_base)" in code          # the C ABI 1 form, kept


def test_every_shared_operand_is_an_address_or_there_is_none():
    for name, build in PLANS.items():
        want = "none" if name == "tcgen05.ld" else "address"
        assert build().convention.shared == want, name


def test_a_convention_line_with_no_function_after_it_is_refused():
    with pytest.raises(pc.CompileError, match="is followed by no __device__ function"):
        read_conventions("// pycute: called by one elected thread; shared operands are 32-bit shared addresses\n")
