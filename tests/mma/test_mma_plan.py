"""make_mma: one tcgen05.mma per k-block from the three tensors, each with its descriptors' k-advance, its
instruction descriptor (SF ids) and SF columns; the emulator's D equals the reference MMA of the layouts' elements
bit for bit, and a wrong SF id, k-block offset, major or SF column is caught; the generated code is the plan's
stream (PTX interpreted) and assembles to one MMA per k-block."""
import pytest

import pycute as pc
from pycute.compile.nvrtc import compile_cuda
from pycute.errors import EmulationError
from pycute.mma import make_mma
from pycute.interp.stream import trace_entry
from pycute.sim.verify_mma import verify_mma

D = pc.mma_accumulator(pc.f32, 128, 256)


def dense(dtype, k, swizzle="128B", b_rows=256):
    return make_mma(pc.mma_accumulator(pc.f32, 128, b_rows), pc.kmajor_smem_tensor(dtype, 128, k, swizzle),
                    pc.kmajor_smem_tensor(dtype, b_rows, k, swizzle))


def mxf8(mmas=4):
    sfa = pc.scale_factor_tensor("mxf8f6f4", rows=128, mmas=mmas)
    sfb = pc.scale_factor_tensor("mxf8f6f4", rows=256, mmas=mmas)
    return make_mma(D, pc.kmajor_smem_tensor("f8e4m3", 128, 32 * mmas, "128B" if mmas == 4 else "32B"),
                    pc.kmajor_smem_tensor("f8e4m3", 256, 32 * mmas, "128B" if mmas == 4 else "32B"), sfa=sfa, sfb=sfb)


@pytest.mark.parametrize("plan", [dense(pc.bf16, 64), dense(pc.f16, 32, "64B"), dense(pc.tf32, 32),
                                  dense("f8e4m3", 128, b_rows=128), mxf8(), mxf8(1)],
                         ids=["bf16", "f16-64B", "tf32", "f8-f8f6f4", "mxf8-4-kblocks", "mxf8-1-kblock"])
def test_the_mma_computes_what_the_layouts_elements_give(plan):
    plan.verify()
    assert len(plan.instructions) == plan.a.k_blocks


def test_the_kind_and_the_sf_ids_follow_the_k_blocks():
    plan = mxf8()
    assert plan.atom.kind == "mxf8f6f4" and plan.atom.scale_vec == 1
    ids = [pc.InstrDescriptor.decode("mxf8f6f4", i.idesc).fields for i in plan.instructions]
    assert [(f["sfa_id"], f["sfb_id"]) for f in ids] == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert dense(pc.bf16, 64).atom.ptx == "tcgen05.mma.cta_group::1.kind::f16"


def _mutated(plan, change):
    def stream(*args):
        return [change(k, issue, plan.stream(*args)) for k, issue in enumerate(plan.stream(*args))]
    return stream


@pytest.mark.parametrize("what, change", [
    ("a wrong SF id", lambda k, i, s: i._replace(idesc=s[0].idesc) if k == 1 else i),
    ("a wrong k-block offset", lambda k, i, s: i._replace(a_desc=s[0].a_desc) if k == 2 else i),
    ("a wrong major", lambda k, i, s: i._replace(idesc=i.idesc ^ (1 << 15))),
    ("a swapped SF column", lambda k, i, s: i._replace(sfa=i.sfa + 1)),
])
def test_verify_catches(what, change):
    plan = mxf8()
    with pytest.raises(EmulationError, match=r"D\[\d+, \d+\] is .* the layouts' elements give"):
        verify_mma(plan, stream=_mutated(plan, change))


def test_the_generated_function_issues_the_plans_stream_and_one_mma_per_k_block():
    plan = mxf8()
    source = plan.cuda("mma") + ('extern "C" __global__ void probe(unsigned sa, unsigned sb, unsigned t, unsigned sfa, '
                                 'unsigned sfb, unsigned acc) { if (threadIdx.x == 0) mma(sa, sb, t, sfa, sfb, acc); }')
    code = compile_cuda(source, arch="sm_100a")
    assert code.histogram()["UTCQMMA"] == 4
    got = trace_entry(code.ptx, {0: 0x400, 1: 0x8400, 2: 0x10, 3: 0x100, 4: 0x120, 5: 0}, {}, "probe").mma
    assert got == plan.stream(0x400, 0x8400, 0x10, 0x100, 0x120, accumulate=False)


@pytest.mark.parametrize("args, error, match", [
    ((pc.mma_accumulator(pc.f32, 128, 128),), pc.PlanError, "is not the 128x256 accumulator"),
])
def test_a_d_that_is_not_the_accumulator_is_refused(args, error, match):
    with pytest.raises(error, match=match):
        make_mma(args[0], pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"),
                 pc.kmajor_smem_tensor(pc.bf16, 256, 64, "128B"))


def test_block_scaled_kinds_need_their_scale_factors():
    with pytest.raises(pc.PlanError, match="kind::mxf8f6f4 takes scale factors"):
        make_mma(D, pc.kmajor_smem_tensor("f8e4m3", 128, 128, "128B"), pc.kmajor_smem_tensor("f8e4m3", 256, 128, "128B"),
                 kind="mxf8f6f4")



def test_a_pair_mma_takes_each_ctas_half_of_b():
    with pytest.raises(pc.PlanError, match=r"A's 128 and B's 256 rows make an M 256 x N 512 MMA \(each CTA of the "
                                           r"pair holds M/2 rows of A and N/2 rows of B\): kind::f16 with "
                                           r"cta_group::2 takes N from 16 to 256 in steps of 16, not 512"):
        make_mma(pc.mma_accumulator(pc.f32, 256, 256, 2), pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"),
                 pc.kmajor_smem_tensor(pc.bf16, 256, 64, "128B"), cta_group=2)


@pytest.mark.parametrize("kind, sf", [("f8f6f4", False), ("mxf8f6f4", True), (None, False)])
def test_a_packed_fp4_tile_is_refused_for_the_kinds_that_read_8_bit_containers(kind, sf):
    extra = dict(sfa=pc.scale_factor_tensor("mxf8f6f4", 128, 4), sfb=pc.scale_factor_tensor("mxf8f6f4", 256, 4)) \
        if sf else {}
    with pytest.raises(pc.DescriptorError, match=r"kind::(mx)?f8f6f4 reads f4e2m1 elements one to a byte \(8-bit "
                                                 r"containers, K = 32 per MMA"):
        make_mma(D, pc.kmajor_smem_tensor("f4e2m1", 128, 256), pc.kmajor_smem_tensor("f4e2m1", 256, 256), kind=kind,
                 **extra)
