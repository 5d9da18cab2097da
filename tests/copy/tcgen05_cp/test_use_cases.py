"""Plans for the copies users make, checked against descriptor values derived independently in the spec note
(docs/ptx-tcgen05.md section 6.4, worked examples A-C) rather than against pycute's own output."""
import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle, TCol, TLane, make_smem_tensor, make_tmem_tensor
from pycute.tensor.canonical import kmajor_smem_buffer, kmajor_smem_tensor


def test_deepgemm_scale_factor_copy_matches_worked_example_a():
    # DeepGEMM writes each of 32 rows as 4 uint32 words (16 B, rows contiguous) and copies them with
    # 32x128b.warpx4 into all four lane quadrants: no swizzle, SBO 128, LBO 0; at 0x400 the descriptor is
    # 0x0000400800000040.
    src = make_smem_tensor(pc.u32, Layout((32, 4), (4, 1)))
    dst = make_tmem_tensor(pc.u32, Layout((32, 4), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    plan = pc.make_tiled_copy(dst, src)
    assert plan.atom.ptx == "tcgen05.cp.cta_group::1.32x128b.warpx4" and len(plan.instructions) == 1
    assert plan.stream(smem_base=0x400, tmem_base=0) == [(plan.atom.ptx, 0, 0x0000400800000040)]
    pc.verify_plan(plan, smem_base=0x400)


def test_128x256b_sw32_matches_worked_example_b():
    # 128 rows of 32 B under the 32-byte swizzle: LBO field 16 B, SBO 256; at 0x800 the descriptor is
    # 0xC000401000010080.
    src = kmajor_smem_tensor(pc.f32, 128, 8, "32B")
    dst = make_tmem_tensor(pc.f32, Layout((128, 8), (TLane, TCol)), columns=32)
    plan = pc.make_tiled_copy(dst, src)
    assert plan.atom.shape == "128x256b"
    assert plan.stream(smem_base=0x800, tmem_base=0)[0][2] == 0xC000401000010080
    pc.verify_plan(plan, smem_base=0x800)


def test_128x128b_sw128_at_a_16_byte_offset_matches_worked_example_c():
    # A 128B-swizzled tile at S = 0x1000, copy of the second 16-byte chunk of each row (j = 1):
    # 0x4000404000010101, and row r reads physical chunk j ^ (r % 8).
    src = kmajor_smem_buffer(pc.bf16, 128, 64, "128B")[0:128, 8:16]
    dst = make_tmem_tensor(pc.bf16, Layout((128, 8), (TLane, TCol)), columns=32)
    plan = pc.make_tiled_copy(dst, src)
    assert plan.atom.shape == "128x128b"
    assert plan.stream(smem_base=0x1000, tmem_base=0)[0][2] == 0x4000404000010101
    pc.verify_plan(plan, smem_base=0x1000)


def test_attention_q_tile_into_tmem():
    # Q: 128 rows x head dim 128, bf16 (256 B per row = 32 KiB), K-major 128B swizzle -> 8 copies of 128x256b,
    # the lower bound (32 KiB / 4 KiB).
    q = kmajor_smem_tensor(pc.bf16, 128, 128, "128B")
    dst = make_tmem_tensor(pc.bf16, Layout((128, 128), (TLane, TCol)), columns=64)
    for group in (1, 2):
        plan = pc.make_tiled_copy(dst, q, cta_group=group)
        assert plan.atom.ptx == f"tcgen05.cp.cta_group::{group}.128x256b"
        assert len(plan.instructions) == plan.lower_bound == 8
        assert [i.column for i in plan.instructions] == [8 * k for k in range(8)]
        pc.verify_plan(plan)


def test_swizzled_buffer_with_an_explicit_composed_layout():
    # The same Q tile written directly as cuTe would: Sw<3,3,3> o (rows, K) K-major in 64-element swizzle rows.
    q = make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0,
                                                 Layout((128, (64, 2)), (64, (1, 128 * 64)))))
    dst = make_tmem_tensor(pc.bf16, Layout((128, 128), (TLane, TCol)), columns=64)
    plan = pc.make_tiled_copy(dst, q)
    assert len(plan.instructions) == 8 and plan.descriptor.sbo == 1024
    pc.verify_plan(plan)


def test_packed_fp4_rows_land_nibble_by_nibble_in_order():
    # 32 rows of 32 FP4 values (16 B); element e of row r is nibble e % 2 (low first) of byte 16 r + e // 2, and
    # in TMEM it is bits 4 (e % 8) .. +3 of column e // 8 of lane r (and of lanes r + 32, + 64, + 96).
    import numpy as np
    from pycute.sim import Sm100Emulator
    src = make_smem_tensor(pc.f4e2m1, Layout((32, 32), (32, 1)))
    dst = make_tmem_tensor(pc.f4e2m1, Layout((32, 32), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    plan = pc.make_tiled_copy(dst, src)
    assert plan.atom.shape == "32x128b" and repr(plan.col) == "32:(4@SmemBit+1@TCol)"
    smem = np.random.default_rng(4).integers(0, 256, 1024, dtype=np.uint8)
    emu = Sm100Emulator(smem_bytes=1024)
    emu.write_smem(0, smem)
    emu.run(plan.stream(0, emu.alloc(32)))
    tmem = emu.tmem_image()
    for r in (0, 7, 31):
        for e in (0, 1, 9, 31):
            nibble = (int(smem[16 * r + e // 2]) >> (4 * (e % 2))) & 0xF
            for lane in (r, r + 32, r + 64, r + 96):
                assert (int(tmem[lane, e // 8]) >> (4 * (e % 8))) & 0xF == nibble
