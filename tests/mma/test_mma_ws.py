"""The weight-stationary tcgen05.mma.ws (cta_group::1, the dense kinds) and the M 64 / pair M 128 data paths: D is
written where each data path puts it (Layout E folds N's halves over lanes +64, Layout F spreads 64 rows over the
four quadrants, Layout B splits the pair's 128 rows), the emulator's D equals the reference of the layouts'
elements, the generated code assembles to UTCHMMA.WS and is the plan's stream, and the forms PTX or the sources
do not give are refused naming the rule."""
import pytest

import pycute as pc
from pycute.compile.nvrtc import compile_cuda
from pycute.mma import make_mma
from pycute.interp.stream import trace_entry


def ws(dtype=pc.bf16, k=64, n=128, d=pc.f32):
    return make_mma(pc.mma_accumulator(d, 64, n, ws=True), pc.kmajor_smem_tensor(dtype, 64, k),
                    pc.kmajor_smem_tensor(dtype, n, k), ws=True)


PLANS = {"ws-bf16-n64": lambda: ws(n=64), "ws-bf16-n128": ws, "ws-bf16-n256": lambda: ws(n=256),
         "ws-f8": lambda: ws("f8e4m3", 128), "ws-tf32": lambda: ws(pc.tf32, 32), "ws-i8": lambda: ws("i8", 128, d=pc.i32),
         "m64-layout-f": lambda: make_mma(pc.mma_accumulator(pc.f32, 64, 128), pc.kmajor_smem_tensor(pc.bf16, 64, 64),
                                          pc.kmajor_smem_tensor(pc.bf16, 128, 64)),
         "pair-m128-layout-b": lambda: make_mma(pc.mma_accumulator(pc.f32, 128, 128, 2),
                                                pc.kmajor_smem_tensor(pc.bf16, 64, 64),
                                                pc.kmajor_smem_tensor(pc.bf16, 64, 64), cta_group=2)}


@pytest.mark.parametrize("name", PLANS)
def test_d_lands_where_the_data_path_puts_it(name):
    PLANS[name]().verify(seed=5)


def test_a_ws_plan_is_the_ws_instruction():
    plan = ws()
    assert plan.atom.ptx == "tcgen05.mma.ws.cta_group::1.kind::f16"
    assert plan.idesc.fields["m"] == 64 and plan.idesc.fields["n"] == 128


def test_the_ws_function_assembles_to_utchmma_ws_and_is_the_plans_stream():
    plan = ws()
    source = plan.cuda("mma") + ('extern "C" __global__ void probe(unsigned sa, unsigned sb, unsigned t, unsigned acc) '
                                 '{ if (threadIdx.x == 0) mma(sa, sb, t, acc); }')
    code = compile_cuda(source, arch="sm_100a")
    assert code.histogram()["UTCHMMA.WS"] == 4
    assert trace_entry(code.ptx, {0: 0x400, 1: 0x4400, 2: 0x20, 3: 1}, {}, "probe").mma == \
        plan.stream(0x400, 0x4400, 0x20, accumulate=True)


@pytest.mark.parametrize("build, match", [
    (lambda: make_mma(pc.mma_accumulator(pc.f32, 256, 256, 2), pc.kmajor_smem_tensor(pc.bf16, 128, 64),
                      pc.kmajor_smem_tensor(pc.bf16, 128, 64), cta_group=2, ws=True), "take cta_group::1 and a dense kind"),
    (lambda: ws(n=192), r"\.ws MMA M=64 N=192: legal M \[32, 64, 128\], N \(64, 128, 256\)"),
    (lambda: make_mma(pc.mma_accumulator(pc.f32, 128, 128), pc.kmajor_smem_tensor(pc.bf16, 128, 64),
                      pc.kmajor_smem_tensor(pc.bf16, 128, 64), ws=True), "no tcgen05.mma data-path layout for M=128"),
    (lambda: make_mma(pc.mma_accumulator(pc.f32, 128, 256), pc.kmajor_smem_tensor("f8e4m3", 128, 128),
                      pc.kmajor_smem_tensor("f8e4m3", 256, 128), ws=True,
                      sfa=pc.scale_factor_tensor("mxf8f6f4", 128, 4), sfb=pc.scale_factor_tensor("mxf8f6f4", 256, 4)),
     "take cta_group::1 and a dense kind"),
])
def test_ws_forms_pycute_cannot_place_are_refused(build, match):
    with pytest.raises(pc.PlanError, match=match):
        build()


def test_ws_must_be_a_bool():
    with pytest.raises(TypeError, match="ws must be a bool"):
        make_mma(pc.mma_accumulator(pc.f32, 128, 128), pc.kmajor_smem_tensor(pc.bf16, 128, 64),
                 pc.kmajor_smem_tensor(pc.bf16, 128, 64), ws=1)
