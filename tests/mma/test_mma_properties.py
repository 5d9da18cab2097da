"""Properties of make_mma over random legal problems: whatever the kind, operand type, swizzle, N, cta_group or
operand placement, the plan has one instruction per 32 bytes of K and the emulator's D equals the reference MMA
of the layouts' elements bit for bit (the data path and the pair included)."""
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute.arch.sm100.datapath import data_path

# (dtype, kind, swizzles whose K-major row holds whole k-blocks)
DENSE = [(pc.bf16, "f16"), (pc.f16, "f16"), (pc.tf32, "tf32"), ("f8e4m3", "f8f6f4"), ("f8e5m2", "f8f6f4"),
         ("i8", "i8")]
SWIZZLES = ["none", "32B", "64B", "128B"]


@st.composite
def dense_problems(draw):
    dtype, kind = draw(st.sampled_from(DENSE))
    bits = pc.dtype(dtype).bits
    swizzle = draw(st.sampled_from(SWIZZLES))
    row = {"none": 16, "32B": 32, "64B": 64, "128B": 128}[swizzle] * 8 // bits   # elements per swizzle row
    k = row * draw(st.integers(1, 2)) if row >= 256 // bits else 256 // bits * draw(st.integers(1, 3))
    group = draw(st.sampled_from([1, 2]))
    m = draw(st.sampled_from([128, 256] if group == 2 else [64, 128]))
    step = 16 if group == 2 else 8
    n = draw(st.sampled_from([n for n in range(step * 2, 257, step * 2) if kind != "i8" or n % 16 == 0]))
    a_in_tmem = draw(st.booleans()) and data_path(m, group, False).letter in ("A", "D") and kind != "i8"
    return dtype, kind, swizzle, k, group, m, n, a_in_tmem


@settings(max_examples=25)
@given(dense_problems(), st.integers(0, 2**16))
def test_every_legal_dense_mma_computes_the_reference(problem, seed):
    dtype, kind, swizzle, k, group, m, n, a_in_tmem = problem
    d_type = pc.i32 if kind == "i8" else pc.f32
    alloc = pc.TmemAllocation(cta_group=group)
    d = alloc.add(d_type, pc.mma_accumulator(d_type, m, n, group).layout, name="d")
    a = alloc.add(dtype, data_path(m, group, False).layout(k, 1), name="a") if a_in_tmem else \
        pc.kmajor_smem_tensor(dtype, m // group, k, swizzle)
    b = pc.kmajor_smem_tensor(dtype, n // group, k, swizzle)
    plan = pc.make_mma(d, a, b, cta_group=group)
    assert plan.atom.kind == kind and len(plan.instructions) == k * pc.dtype(dtype).bits // 256
    plan.verify(seed=seed)


@settings(max_examples=12)
@given(st.sampled_from([("mxf8f6f4", "f8e4m3", 1, None), ("mxf4", "f4e2m1", 2, None),
                        ("mxf4nvf4", "f4e2m1", 4, "ue4m3"), ("mxf4nvf4", "f4e2m1", 2, "ue8m0")]),
       st.sampled_from([1, 2]), st.sampled_from([1, 2, 4]), st.integers(0, 2**16))
def test_every_block_scaled_mma_computes_the_scaled_reference(form, group, k_blocks, seed):
    kind, dtype, vec, scale_type = form
    per_mma = 256 // pc.dtype(dtype).bits
    mmas = max(k_blocks, -(-4 // vec))                 # the SF cell takes whole 4-slot groups
    n = 256
    sf = dict(sfa=pc.scale_factor_tensor(kind, 128, mmas, vec, cta_group=group),
              sfb=pc.scale_factor_tensor(kind, n, mmas, vec, cta_group=group))
    plan = pc.make_mma(pc.mma_accumulator(pc.f32, 128 * group, n, group),
                       pc.kmajor_smem_tensor(dtype, 128, per_mma * k_blocks, "32B" if k_blocks == 1 else "128B"
                                             if k_blocks == 4 else "64B"),
                       pc.kmajor_smem_tensor(dtype, n // group, per_mma * k_blocks, "32B" if k_blocks == 1 else
                                             "128B" if k_blocks == 4 else "64B"),
                       kind=kind, scale_type=scale_type, cta_group=group, **sf)
    assert [i.k for i in plan.instructions] == list(range(k_blocks))
    plan.verify(seed=seed)
