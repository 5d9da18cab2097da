"""Operand descriptors from layouts: refusals that name what is off, the k-block advance, and the MMA's view of the
tile (emulated from the descriptor alone) against the layout's, then through a reference MMA."""
import numpy as np
import pytest

import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle
from pycute.tensor.canonical import kmajor_smem_buffer, kmajor_smem_tensor
from pycute.mma import make_umma_desc
from pycute.sim.operand import decode, mma_operand, reference_mma, verify_operand


def mn_major(dtype, mn, k, swizzle_bits):
    """An MN-major tile of CuTe's MN atoms (W-byte rows of MN, 8 rows of K), atoms MN-first."""
    w = 16 << swizzle_bits
    per = w * 8 // dtype.bits
    layout = Layout(((per, mn // per), (8, k // 8)), ((1, per * 8), (per, per * 8 * (mn // per))))
    sw = Swizzle(swizzle_bits, 7 - (dtype.bits // 8).bit_length() + 1 - 3, 3) if swizzle_bits else None
    return pc.make_smem_tensor(dtype, layout if sw is None else ComposedLayout(sw, 0, layout))


def test_a_layout_no_canonical_layout_describes_is_refused_naming_the_stride():
    # 128x64 bf16 K-major rows 144 B apart: not 16 B (none) nor a swizzle row
    t = pc.make_smem_tensor(pc.bf16, Layout((128, 64), (72, 1)))
    with pytest.raises(pc.DescriptorError, match=r"element \(1, 0\) sits at byte 144 .* the layout's MN stride is off"):
        make_umma_desc(t)


def test_neither_mode_unit_stride_is_no_canonical_layout():
    with pytest.raises(pc.DescriptorError, match="has a unit stride in neither mode"):
        make_umma_desc(pc.make_smem_tensor(pc.bf16, Layout((128, 64), (64 * 2, 2))))


def test_the_requested_major_is_checked():
    with pytest.raises(pc.DescriptorError, match="is K-major, not MN-major"):
        make_umma_desc(kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), major="MN")


def test_tf32_mn_major_without_the_32b_atom_swizzle_is_refused():
    with pytest.raises(pc.DescriptorError, match="tf32 MN-major operands need the 128B-with-32B-atom swizzle"):
        make_umma_desc(mn_major(pc.tf32, 128, 16, 3))


def test_mn_major_fp4_and_mxf4_transposes_are_refused():
    t = pc.make_smem_tensor(pc.f4e2m1, Layout((128, 64), (1, 128)))
    with pytest.raises(pc.DescriptorError, match="f4e2m1 operands cannot be MN-major"):
        make_umma_desc(t)
    with pytest.raises(pc.DescriptorError, match="kind::mxf4 does not transpose"):
        make_umma_desc(mn_major(pc.bf16, 128, 16, 3), kind="mxf4")


def test_an_atom_off_its_swizzle_pattern_is_refused():
    t = kmajor_smem_tensor(pc.bf16, 256, 64, "128B")[8:136, 0:64]       # starts 1 KiB in: fine
    make_umma_desc(t)
    off = kmajor_smem_tensor(pc.bf16, 256, 64, "128B")[4:132, 0:64]     # starts 512 B in: mid-pattern
    with pytest.raises(pc.DescriptorError, match="must start on the 1024 B swizzle pattern"):
        make_umma_desc(off)


def test_a_k_slice_inside_the_swizzle_row_is_the_k_block_advance():
    d = make_umma_desc(kmajor_smem_buffer(pc.bf16, 128, 64, "128B")[0:128, 8:56])   # starts 16 B into each row
    assert d.start_offset == 16 and list(d.k_offsets) == [0, 32, 64]
    verify_operand(d, smem_base=0x8000)


def test_a_k_block_crossing_a_swizzle_row_is_refused():
    # rows 128 B apart whose K runs on (the layout aliases the next row): a k-block from byte 112 crosses the row
    t = pc.make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0, Layout((128, 128), (64, 1))))[0:128, 56:72]
    with pytest.raises(pc.DescriptorError, match="k-block 0 starts at byte 112 of the buffer, 112 B into a 128 B swizzle row"):
        make_umma_desc(t)


@pytest.mark.parametrize("swizzle,k,offsets", [("128B", 64, [0, 32, 64, 96]), ("64B", 64, [0, 32, 8192, 8224]),
                                               ("none", 32, [0, 4096])])
def test_the_k_block_advance_is_the_layouts_offset_of_each_k_block(swizzle, k, offsets):
    d = make_umma_desc(kmajor_smem_tensor(pc.bf16, 128, k, swizzle))
    assert [d.k_block_offset(j) for j in range(d.k_blocks)] == offsets
    assert d.encode(0x1000, 1) == d.descriptor.encode(0x1000 + offsets[1])


@pytest.mark.parametrize("dtype", [pc.u8, pc.bf16, pc.tf32])
@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B"])
def test_the_mma_reads_the_k_major_layouts_elements(dtype, swizzle):
    k = 2 * 256 // dtype.bits                            # two k-blocks: under 128B a slice of the swizzle row
    verify_operand(make_umma_desc(kmajor_smem_buffer(dtype, 128, k, swizzle)[0:128, 0:k]), smem_base=0x8000)


@pytest.mark.parametrize("swizzle_bits", [0, 1, 2, 3])
def test_the_mma_reads_the_mn_major_layouts_elements(swizzle_bits):
    verify_operand(make_umma_desc(mn_major(pc.bf16, 128, 32, swizzle_bits)), smem_base=0x8000)


def test_a_wrong_descriptor_reads_other_elements():
    d = make_umma_desc(kmajor_smem_tensor(pc.bf16, 128, 64, "128B"))
    image = np.random.default_rng(0).integers(0, 256, 1 << 16, dtype=np.uint8)
    good = mma_operand(d.encode(0), "K", 128, 16, 16, image)
    wrong = mma_operand(pc.SmemDescriptor(0, 16, 1024, pc.SwizzleMode.B64).encode(), "K", 128, 16, 16, image)
    assert not np.array_equal(good, wrong)


def test_decoders_know_the_narrow_formats():
    assert list(decode(np.arange(8), "f4e2m1")) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert decode([0x38, 0x7E, 0x7F], "f8e4m3")[:2].tolist() == [1.0, 448.0] and np.isnan(decode([0x7F], "f8e4m3"))[0]
    assert decode([0x3C, 0x7B], "f8e5m2").tolist() == [1.0, 57344.0]
    assert decode([127, 130], "ue8m0").tolist() == [1.0, 8.0] and decode([0x38], "ue4m3").tolist() == [1.0]
    assert decode([0x3F80], "bf16").tolist() == [1.0] and decode([0x3C00], "f16").tolist() == [1.0]


def test_a_block_scaled_reference_mma_applies_each_k_block_s_scale():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 16, (4, 64)), rng.integers(0, 16, (2, 64))
    sfa, sfb = rng.integers(120, 134, (4, 4)), rng.integers(120, 134, (2, 4))
    got = reference_mma(a, b, "f4e2m1", "f4e2m1", sfa, sfb, "ue8m0", block=16)
    x = decode(a, "f4e2m1") * np.repeat(2.0 ** (sfa - 127), 16, axis=1)
    y = decode(b, "f4e2m1") * np.repeat(2.0 ** (sfb - 127), 16, axis=1)
    assert np.allclose(got, x @ y.T) and not np.allclose(got, decode(a, "f4e2m1") @ decode(b, "f4e2m1").T)


def test_end_to_end_the_mma_of_what_the_descriptors_read_is_the_mma_of_the_tiles():
    """A bf16 128x64 x 128x64 product: the operands as the descriptors address them, multiplied, equal the product of
    the tiles read through their layouts."""
    ta, tb = kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), kmajor_smem_tensor(pc.bf16, 128, 64, "64B")
    da, db = make_umma_desc(ta), make_umma_desc(tb)
    rng = np.random.default_rng(2)
    image = np.zeros(1 << 16, np.uint8)
    vals = rng.integers(0x3F00, 0x4000, 2 * 128 * 64).astype(np.uint16)       # bf16 in [0.5, 2)
    from pycute.tensor.values import smem_element_offsets
    ea, eb = smem_element_offsets(ta), smem_element_offsets(tb) + 128 * 64
    image.view(np.uint16)[ea], image.view(np.uint16)[eb] = vals[:128 * 64], vals[128 * 64:]
    a = np.concatenate([mma_operand(da.encode(0, j), "K", 128, 16, 16, image) for j in range(4)], axis=1)
    b = np.concatenate([mma_operand(db.encode(128 * 64 * 2, j), "K", 128, 16, 16, image) for j in range(4)], axis=1)
    want_a = image.view(np.uint16)[ea].reshape(64, 128).T
    want_b = image.view(np.uint16)[eb].reshape(64, 128).T
    assert np.array_equal(reference_mma(a, b, "bf16", "bf16"), reference_mma(want_a, want_b, "bf16", "bf16"))
