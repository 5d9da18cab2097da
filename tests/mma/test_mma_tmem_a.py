"""A in TMEM (the [a-tmem] form): A's rows in the data path's lanes, K packed along the columns; one instruction
per k-block 8 columns further; D equals the reference of the layouts' elements for every kind and the pair; the
generated function is the plan's stream and assembles to one MMA per k-block; a misplaced A is refused naming
where it must be, and a wrong A column is caught."""
import pytest

import pycute as pc
from pycute.arch.sm100.datapath import data_path
from pycute.compile.nvrtc import compile_cuda
from pycute.errors import EmulationError
from pycute.mma import make_mma
from pycute.interp.stream import trace_entry
from pycute.sim.verify_mma import verify_mma


def operands(dtype, k, m=128, g=1, n=256):
    alloc = pc.TmemAllocation(cta_group=g)
    d = alloc.add(pc.f32, pc.mma_accumulator(pc.f32, m, n, g).layout, name="d")
    return d, alloc.add(dtype, data_path(m, g, False).layout(k, 1), name="a")


def dense(dtype, k, swizzle="128B"):
    d, a = operands(dtype, k)
    return make_mma(d, a, pc.kmajor_smem_tensor(dtype, 256, k, swizzle))


def nvfp4(g=1):
    d, a = operands("f4e2m1", 256, 128 * g, g)
    return make_mma(d, a, pc.kmajor_smem_tensor("f4e2m1", 256 // g, 256), kind="mxf4nvf4", scale_type="ue4m3",
                    cta_group=g, sfa=pc.scale_factor_tensor("mxf4nvf4", 128, 4, 4, cta_group=g),
                    sfb=pc.scale_factor_tensor("mxf4nvf4", 256, 4, 4, cta_group=g))


PLANS = {"bf16": lambda: dense(pc.bf16, 64), "f16-64B": lambda: dense(pc.f16, 32, "64B"),
         "tf32": lambda: dense(pc.tf32, 32), "f8": lambda: dense("f8e4m3", 128), "nvfp4": nvfp4,
         "nvfp4-pair": lambda: nvfp4(2)}


@pytest.mark.parametrize("name", PLANS)
def test_a_in_tmem_computes_what_the_layouts_elements_give(name):
    plan = PLANS[name]()
    assert plan.atom.a_tmem and plan.a.k_offsets == tuple(8 * j for j in range(plan.a.k_blocks))
    plan.verify(seed=4)


def test_the_generated_function_takes_no_smem_a_and_issues_the_plans_stream():
    plan = nvfp4()
    source = plan.cuda("mma") + ('extern "C" __global__ void probe(unsigned sb, unsigned t, unsigned sfa, unsigned sfb, '
                                 'unsigned acc) { if (threadIdx.x == 0) mma(sb, t, sfa, sfb, acc); }')
    code = compile_cuda(source, arch="sm_100a")
    assert code.histogram()["UTCOMMA.4X"] == 4
    got = trace_entry(code.ptx, {0: 0x8400, 1: 0x10, 2: 0x100, 3: 0x120, 4: 0}, {}, "probe").mma
    assert got == plan.stream(None, 0x8400, 0x10, 0x100, 0x120) and all(i.a_tmem for i in got)
    assert got[1].a_desc == 0x10 + plan.a.column + 8


def test_verify_catches_a_wrong_a_column():
    plan = dense(pc.bf16, 64)
    with pytest.raises(EmulationError, match=r"D\[\d+, \d+\] is .* the layouts' elements give"):
        verify_mma(plan, stream=lambda *args: [i._replace(a_desc=i.a_desc + 1) for i in plan.stream(*args)])


def test_a_stream_needs_no_smem_a():
    with pytest.raises(pc.PlanError, match="smem_a is None for A in TMEM"):
        dense(pc.bf16, 64).stream(0x400, 0x8400, 0)


@pytest.mark.parametrize("a, match", [
    (pc.make_tmem_tensor(pc.bf16, pc.Layout((128, 64), (2 * pc.TLane, pc.TCol)), columns=512), "is not where the M 128"),
    (pc.make_tmem_tensor(pc.bf16, pc.Layout((128, 40), (pc.TLane, pc.TCol)), columns=512), "K a multiple of 16"),
    (pc.make_tmem_tensor(pc.bf16, pc.Layout((64, 64), (pc.TLane, pc.TCol)), columns=512), "not M 64"),
])
def test_a_misplaced_a_is_refused(a, match):
    with pytest.raises(pc.PlanError, match=match):
        make_mma(pc.mma_accumulator(pc.f32, 128, 256, columns=512), a, pc.kmajor_smem_tensor(pc.bf16, 256, 64))


def test_an_a_overlapping_d_is_refused():
    a = pc.make_tmem_tensor(pc.bf16, data_path(128, 1, False).layout(64, 1), columns=512)
    with pytest.raises(pc.PlanError, match=r"A in TMEM \(columns 0..31\) overlaps D \(columns 0..255\)"):
        make_mma(pc.mma_accumulator(pc.f32, 128, 256, columns=512), a, pc.kmajor_smem_tensor(pc.bf16, 256, 64))


def test_a_packed_fp4_a_in_tmem_is_refused_for_a_container_kind():
    d, a = operands("f4e2m1", 256)
    with pytest.raises(pc.PlanError, match="kind::f8f6f4 reads f4e2m1 elements one to a byte"):
        make_mma(d, a, pc.kmajor_smem_tensor("f4e2m1", 256, 256), kind="f8f6f4")
