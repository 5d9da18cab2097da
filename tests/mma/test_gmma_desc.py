"""make_gmma_desc: the sm_90 descriptor of a wgmma operand tile, derived from its layout. The PTX ISA's worked
examples (#asynchronous-warpgroup-level-canonical-layouts) give their LBO and SBO; every canonical tile (K- or
MN-major, each swizzle, each type) is read back, through the descriptor's fields alone, as its own elements; a
layout no descriptor describes, and a rule wgmma does not allow, is refused naming it."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import ComposedLayout, Layout
from pycute.arch.sm100.swizzle_modes import SwizzleMode
from pycute.compile.nvrtc import compile_cuda
from pycute.sim.operand import gmma_operand
from pycute.interp.stream import trace_entry
from pycute.sim.verify_mma import write_tile


def tile(dtype, layout, mode: SwizzleMode):
    sw = mode.element_swizzle(pc.dtype(dtype).bits)
    return pc.make_smem_tensor(dtype, layout if sw is None else ComposedLayout(sw, 0, layout))


# The PTX ISA's examples: (exact layout in elements, swizzle) -> (LBO, SBO) in bytes (LBO of a swizzled K-major
# tile is "assumed 1": 16 bytes).
PTX_EXAMPLES = {
    "K-major none tf32": (pc.tf32, Layout(((8, 2), (4, 4)), ((4, 32), (1, 64))), SwizzleMode.NONE, 64 * 4, 32 * 4),
    "K-major 32B tf32": (pc.tf32, Layout(((8, 2), (4, 4)), ((8, 64), (1, 4))), SwizzleMode.B32, 16, 64 * 4),
    "MN-major none bf16": (pc.bf16, Layout(((8, 1, 2), (8, 2)), ((1, 8, 64), (8, 128))), SwizzleMode.NONE, 128 * 2,
                           64 * 2),
    "MN-major 32B bf16": (pc.bf16, Layout(((8, 2, 2), (8, 2)), ((1, 8, 128), (16, 256))), SwizzleMode.B32, 128 * 2,
                          256 * 2),
    "MN-major 64B bf16": (pc.bf16, Layout(((8, 4, 2), (8, 2)), ((1, 8, 256), (32, 512))), SwizzleMode.B64, 256 * 2,
                          512 * 2),
}


@pytest.mark.parametrize("name", PTX_EXAMPLES)
def test_the_ptx_examples_get_their_lbo_and_sbo(name):
    dtype, layout, mode, lbo, sbo = PTX_EXAMPLES[name]
    d = pc.make_gmma_desc(tile(dtype, layout, mode))
    assert (d.descriptor.lbo, d.descriptor.sbo, d.descriptor.layout) == (lbo, sbo, mode.label)
    assert d.major == name.split("-")[0]


def test_a_k_step_inside_a_swizzle_row_advances_the_start_by_32_bytes():
    d = pc.make_gmma_desc(pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"))
    assert d.k_offsets == (0, 32, 64, 96) and d.k_per_mma == 16
    assert d.encode(0x8000, 2) == d.encode(0x8000) + 64 // 16


def test_an_mn_major_k_step_advances_by_two_groups_of_8_k_rows():
    d = pc.make_gmma_desc(pc.mnmajor_smem_tensor(pc.bf16, 128, 64, "128B"))
    assert d.major == "MN" and d.k_offsets == tuple(j * 2 * d.descriptor.sbo for j in range(4))


CANONICAL = st.tuples(st.sampled_from(["K", "MN"]), st.sampled_from(["none", "32B", "64B", "128B"]),
                      st.sampled_from(["bf16", "f16", "tf32", "f8e4m3", "i8"]), st.integers(1, 4), st.integers(1, 3))


@settings(max_examples=60, deadline=None)
@given(CANONICAL)
def test_the_descriptor_fields_alone_read_every_element_of_a_canonical_tile(case):
    major, swizzle, name, mn_atoms, k_steps = case
    dt = pc.dtype(name)
    if major == "MN" and dt.bits != 16:
        return                                        # wgmma transposes f16 / bf16 only (refused below)
    row = SwizzleMode.from_label(swizzle).row_pitch * 8 // dt.bits
    k = 256 // dt.bits * k_steps
    t = pc.kmajor_smem_tensor(dt, 8 * mn_atoms, -(-k // row) * row, swizzle) if major == "K" else \
        pc.mnmajor_smem_tensor(dt, row * mn_atoms, k, swizzle)
    d = pc.make_gmma_desc(t)
    mn, kk = d.mn, d.k
    codes = np.random.default_rng(1).integers(0, 1 << dt.bits, (mn, kk)).astype(np.uint64)
    image = np.zeros(-(-(mn * kk * dt.bits // 8 + 2048) // 1024) * 1024, dtype=np.uint8)
    write_tile(image, 0, t, codes)
    for j in range(d.k_blocks):
        got = gmma_operand(d.encode(0, j), d.major, mn, d.k_per_mma, dt.bits, image)
        assert np.array_equal(got, codes[:, j * d.k_per_mma:(j + 1) * d.k_per_mma]), (major, swizzle, name, j)


@pytest.mark.parametrize("tensor, match", [
    (pc.mnmajor_smem_tensor("f8e4m3", 128, 64, "128B"), "a f8e4m3 operand must be K-major: wgmma transposes"),
    (pc.mnmajor_smem_tensor(pc.tf32, 64, 16, "128B"), "a tf32 operand must be K-major"),
    (pc.make_smem_tensor(pc.bf16, Layout((64, 32), (32, 1))), r"element \(1, 0\) sits at byte 64 of the tile, but the canonical K-major none layout"),
    (pc.make_smem_tensor(pc.f32, Layout((64, 8), (8, 1))), "wgmma reads f16, bf16, tf32, f8e4m3, f8e5m2, i8, u8"),
    (pc.make_smem_tensor(pc.bf16, Layout((64, 16), (1, 1))), "has a unit stride in both modes"),
    (pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")[4:68, :], "must start on the 1024 B swizzle pattern"),
], ids=["fp8 MN-major", "tf32 MN-major", "not canonical", "f32", "no major", "off the swizzle pattern"])
def test_a_tile_no_wgmma_descriptor_reads_is_refused(tensor, match):
    with pytest.raises(pc.DescriptorError, match=match):
        pc.make_gmma_desc(tensor)


def test_the_128b_with_32b_atom_swizzle_is_tcgen05s():
    buf = pc.kmajor_smem_tensor(pc.tf32, 64, 32, "128B")
    odd = pc.make_smem_tensor(pc.tf32, ComposedLayout(pc.Swizzle(2, 3, 2), 0, buf.layout))
    with pytest.raises(pc.DescriptorError, match="the 128B-with-32B-atom swizzle is tcgen05's"):
        pc.make_gmma_desc(odd)


def test_a_staged_operand_describes_every_stage():
    ring = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), 3)
    d = pc.make_gmma_desc(ring[:, :, pc.dynamic("stage")])
    for stage in range(3):
        assert d.encode(0x400, 1, stage=stage) == pc.make_gmma_desc(ring[:, :, stage]).encode(0x400, 1)


def test_the_generated_descriptor_function_computes_what_encode_says():
    ring = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, 64, 64, "64B"), 2)
    d = pc.make_gmma_desc(ring[:, :, pc.dynamic("stage")])
    source = d.cuda("desc_a") + ('extern "C" __global__ void probe(unsigned long long* out, unsigned smem, '
                                 'unsigned k, unsigned stage) { out[0] = desc_a(smem, k, stage); }')
    ptx = compile_cuda(source, arch="sm_90a").ptx
    for smem, k, stage in ((0x8000, 0, 0), (0x10000, 3, 1), (0x400, 1, 1)):
        thread = trace_entry(ptx, {0: 0x7000_0000_0000, 1: smem, 2: k, 3: stage}, {}, "probe")
        stores = [args for op, args in thread.trace if op.startswith("st.global")]
        assert thread.regs[stores[0][1]] == d.encode(smem, k, stage=stage)
