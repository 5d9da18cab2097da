"""make_mma with a register accumulator plans Hopper's wgmma.mma_async: one instruction per k-step and warpgroup,
each with its operands' start advance (or an A in registers' 4 registers); the emulator's D equals the reference MMA
of the layouts' elements bit for bit for every case of the GPU matrix, overwriting and accumulating; a wrong LBO,
SBO, k-step offset, major, A register or scale-d is caught; every rule wgmma has is a refusal naming it."""
import attrs
import pytest

import pycute as pc
from pycute.arch.sm90.gmma_descriptor import GmmaSmemDescriptor
from pycute.errors import EmulationError
from pycute.harness.wgmma import WGMMA_CASES
from pycute.sim.verify_wgmma import verify_wgmma


def plan(dtype=pc.bf16, n=128, k=64, m=64, acc=pc.f32, swizzle="128B", a=None, b=None):
    a = pc.kmajor_smem_tensor(dtype, m, k, swizzle) if a is None else a
    b = pc.kmajor_smem_tensor(dtype, n, k, swizzle) if b is None else b
    return pc.make_mma(pc.wgmma_accumulator(acc, m, n), a, b)


@pytest.mark.parametrize("case", WGMMA_CASES, ids=lambda c: c.name)
def test_every_case_of_the_gpu_matrix_computes_what_the_layouts_elements_give(case):
    p = case.plan()
    p.verify()
    assert len(p.instructions) == p.lower_bound == case.k // p.atom.k


def test_the_gemm_tile_is_four_m64n256k16_per_warpgroup():
    p = plan(n=256, m=128)
    assert isinstance(p, pc.WgmmaPlan) and p.warpgroups == 2 and p.d_registers == 128
    assert p.atom.ptx == "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" and p.atom.sass == "HGMMA.64x256x16"
    assert [i.a_offset for i in p.instructions] == [0, 32, 64, 96] and p.a_rows == (0, 8192)
    assert p.fragment == pc.wgmma_accumulator(pc.f32, 128, 256).layout


def test_an_fp8_tile_reads_32_elements_per_k_step_and_f16_accumulators_pack_two_per_register():
    p = plan("f8e4m3", n=256, k=128, acc=pc.f16)
    assert p.atom.ptx == "wgmma.mma_async.sync.aligned.m64n256k32.f16.e4m3.e4m3" and len(p.instructions) == 4
    assert p.d_registers == 64 and p.atom.sass == "QGMMA.64x256x32"


def test_an_a_in_registers_reads_four_registers_per_k_step():
    p = pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 64), pc.wgmma_a_fragment(pc.bf16, 64, 48),
                    pc.kmajor_smem_tensor(pc.bf16, 64, 48, "32B"))
    assert [i.a_registers for i in p.instructions] == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11)]
    assert p.a_register_count == 12 and p.stream(None, 0x400)[0].a_desc is None


def test_the_stream_overwrites_with_the_first_k_step_only():
    issues = plan().stream(0x400, 0x4400, scale_d=False)
    assert [i.scale_d for i in issues] == [False, True, True, True]


def _mutated(p, change):
    def stream(*args, **values):
        issues = p.stream(*args, **values)
        return [change(k, issue, issues) for k, issue in enumerate(issues)]
    return stream


def _fields(desc: int, **changes) -> int:
    return attrs.evolve(GmmaSmemDescriptor.decode(desc), **changes).encode()


MN_B = pc.mnmajor_smem_tensor(pc.bf16, 128, 64, "128B")
MUTATIONS = {
    "a wrong LBO": (plan(pc.f16, swizzle="none"),
                    lambda k, i, s: attrs.evolve(i, a_desc=_fields(i.a_desc, lbo=GmmaSmemDescriptor.decode(i.a_desc).lbo + 16))),
    "a wrong SBO": (plan(), lambda k, i, s: attrs.evolve(i, b_desc=_fields(i.b_desc, sbo=512))),
    "a wrong k-step offset": (plan(), lambda k, i, s: attrs.evolve(i, a_desc=s[0].a_desc) if k == 2 else i),
    "a wrong major": (plan(b=MN_B), lambda k, i, s: attrs.evolve(i, trans_b=0)),
    "a wrong swizzle": (plan(), lambda k, i, s: attrs.evolve(i, b_desc=_fields(i.b_desc, layout="64B"))),
    "a wrong A register": (pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 64), pc.wgmma_a_fragment(pc.bf16, 64, 32),
                                       pc.kmajor_smem_tensor(pc.bf16, 64, 32, "64B")),
                           lambda k, i, s: attrs.evolve(i, a_registers=s[0].a_registers)),
    "a wrong scale-d": (plan(), lambda k, i, s: attrs.evolve(i, scale_d=True)),
}


@pytest.mark.parametrize("what", MUTATIONS)
def test_verify_catches(what):
    p, change = MUTATIONS[what]
    caught = r"D\[\d+, \d+\] is 0x[0-9a-f]+ after the wgmma .* the layouts' elements|outside the \d+-byte shared-memory"
    with pytest.raises(EmulationError, match=caught):
        verify_wgmma(p, stream=_mutated(p, change))


@pytest.mark.parametrize("make, error, match", [
    (lambda: plan(acc=pc.f16), pc.PlanError, "wgmma of bf16 accumulates into f32, not f16"),
    (lambda: plan(pc.tf32, k=32, acc=pc.f16), pc.PlanError, "wgmma of tf32 accumulates into f32, not f16"),
    (lambda: plan(b=pc.kmajor_smem_tensor(pc.f16, 128, 64, "128B")), pc.PlanError,
     "A bf16 and B f16: wgmma's A and B are one type, except the fp8 forms"),
    (lambda: plan("i8", n=40, k=128, acc=pc.i32), pc.PlanError,
     r"B has 40 rows, not a wgmma N for i8: 8..224 \(8, 16, 24, 32, 48"),
    (lambda: plan(n=264), pc.PlanError, "N=264 is not a wgmma width"),
    (lambda: pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 128), pc.kmajor_smem_tensor(pc.bf16, 96, 64, "128B"),
                         pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")), pc.PlanError,
     "A has 96 rows; wgmma computes 64-row slices"),
    (lambda: pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 64), pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"),
                         pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")), pc.PlanError,
     "D rmem<f32>.* is not the 64x128 accumulator wgmma writes"),
    (lambda: pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 64), pc.kmajor_smem_tensor(pc.bf16, 64, 128, "128B"),
                         pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B")), pc.PlanError, "A has K 128 and B K 64"),
    (lambda: pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 64), pc.make_fragment(pc.bf16, 128, pc.Layout((128, 16))),
                         pc.kmajor_smem_tensor(pc.bf16, 64, 32, "64B")), pc.PlanError,
     "is not the 64x32 bf16 fragment wgmma reads from registers"),
    (lambda: plan("f8e4m3", k=128, b=pc.mnmajor_smem_tensor("f8e4m3", 128, 128, "128B")), pc.DescriptorError,
     "a f8e4m3 operand must be K-major"),
    (lambda: pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 128), pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"),
                         pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), cta_group=2), pc.PlanError,
     "a register accumulator plans wgmma, which takes no tcgen05 options"),
    (lambda: pc.wgmma_accumulator(pc.bf16, 64, 64), pc.PlanError, "wgmma accumulates into f32, f16, i32, not bf16"),
    (lambda: pc.wgmma_accumulator(pc.f32, 80, 64), pc.PlanError, "M=80 is not a multiple of 64"),
    (lambda: pc.wgmma_a_fragment(pc.tf32, 64, 12), pc.PlanError, "K=12 is not whole tf32 k-steps of 8"),
], ids=["bf16 f16-accumulator", "tf32 f16-accumulator", "bf16 x f16", "s8 N 40", "N 264", "M 96", "D of another N",
        "K mismatch", "A fragment not wgmma's", "fp8 MN-major", "tcgen05 options", "bf16 accumulator", "M 80",
        "tf32 K 12"])
def test_what_wgmma_does_not_do_is_refused_naming_the_rule(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_an_a_in_tmem_is_for_tcgen05():
    alloc = pc.TmemAllocation()
    a = alloc.add(pc.bf16, pc.mma_accumulator(pc.f32, 128, 64).layout, name="a")
    with pytest.raises(TypeError, match="wgmma reads A from shared memory or registers, not TMEM"):
        pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 64), a, pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"))


def test_explain_names_the_instruction_the_sass_and_each_k_step():
    text = plan(m=128).explain()
    assert "HGMMA.64x128x16" in text and "2 warpgroup(s) of 64 rows" in text and "k-step 3: A +96 B, B +96 B" in text
