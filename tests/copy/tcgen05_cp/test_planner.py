"""make_tiled_copy behaviours: shape resolution, partition, descriptor derivation, regions, and refusals."""
import attrs
import pytest

import pycute as pc
from pycute import ComposedLayout, Layout, PlanError, Swizzle, TCol, TLane, make_smem_tensor, make_tmem_tensor
from pycute.atoms import cp_candidates

from .layouts import atom_tmem, kmajor_smem

A128x256, A4x256, A128x128, A02_13, A01_23, AWARPX4 = cp_candidates(1)


def demo():
    """The article's demo: a 32x16 uint8 tile copied into a warpx4-replicated TMEM tensor."""
    src = make_smem_tensor(pc.u8, Layout((32, 16), (16, 1)))
    dst = make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    return dst[0:32, 0:16], src[0:32, 0:16]


# -- shape resolution -----------------------------------------------------------------------------------------
def test_demo_infers_32x128b_warpx4_with_deepgemm_descriptor():
    plan = pc.make_tiled_copy(*demo(), cta_group=1)
    assert plan.atom.ptx == "tcgen05.cp.cta_group::1.32x128b.warpx4"
    assert (plan.descriptor.swizzle, plan.descriptor.lbo, plan.descriptor.sbo) == (pc.SwizzleMode.NONE, 0, 128)
    assert [(i.tmem_offset, i.smem_offset) for i in plan.instructions] == [(0, 0)]
    assert [name for name, _ in plan.rejected] == ["128x256b", "4x256b", "128x128b", "64x128b.warpx2::02_13",
                                                   "64x128b.warpx2::01_23"]


def test_32x128b_shape_implies_warpx4():
    assert pc.make_tiled_copy(*demo(), shape="32x128b").atom == AWARPX4


def test_multicast_alone_filters_candidates():
    with pytest.raises(PlanError, match="replica mismatch"):
        pc.make_tiled_copy(*demo(), multicast="warpx2::02_13")
    assert pc.make_tiled_copy(*demo(), multicast="warpx4").atom == AWARPX4


def test_layout_valid_for_128x128b_is_planned_as_128x256b():
    src = kmajor_smem(pc.bf16, 128, 32, "128B")[0:128, 0:32]
    dst = atom_tmem(pc.bf16, A128x128, 32)
    assert len(pc.make_tiled_copy(dst, src, shape="128x128b").instructions) == 4
    plan = pc.make_tiled_copy(dst, src)
    assert plan.atom == A128x256 and len(plan.instructions) == 2
    pc.verify_plan(plan)


@pytest.mark.parametrize("atom", cp_candidates(1) + cp_candidates(2), ids=lambda a: a.ptx)
@pytest.mark.parametrize("swizzle", ["none", "128B"])
def test_inferred_and_explicit_choice_of_the_same_atom_give_identical_plans(atom, swizzle):
    k = 4 * atom.bits // 16
    src = kmajor_smem(pc.bf16, atom.rows, k, swizzle)[0:atom.rows, 0:k]
    dst = atom_tmem(pc.bf16, atom, k)
    inferred = pc.make_tiled_copy(dst, src, cta_group=atom.cta_group)
    explicit = pc.make_tiled_copy(dst, src, cta_group=atom.cta_group, shape=inferred.atom.shape,
                                  multicast=inferred.atom.multicast or None)
    assert inferred == explicit
    assert inferred.instructions == explicit.instructions and inferred.descriptor == explicit.descriptor


def test_repeated_request_is_served_from_the_cache():
    args = demo()
    assert pc.make_tiled_copy(*args) is pc.make_tiled_copy(*args)


# -- partition and descriptor -----------------------------------------------------------------------------------
def test_partition_layouts_step_both_sides():
    src = kmajor_smem(pc.bf16, 128, 64, "128B")
    dst = make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=64)
    plan = pc.make_tiled_copy(dst, src)
    assert repr(plan.lane) == "128:(128@Smem+1@TLane)"          # rows 128 B apart, core groups 1024 B apart
    assert repr(plan.col) == "16:(2@Smem+1@TCol)"
    assert repr(plan.middle) == "4:(32@Smem+16@TCol)"
    assert (plan.descriptor.lbo, plan.descriptor.sbo, plan.descriptor.swizzle) == (16, 1024, pc.SwizzleMode.B128)
    assert [i.smem_offset for i in plan.instructions] == [0, 32, 64, 96]
    assert [i.column for i in plan.instructions] == [0, 8, 16, 24]


def test_unswizzled_256b_rows_take_lbo_from_the_unit_distance():
    src = kmajor_smem(pc.f32, 128, 16, "none")           # core matrices of column unit u at u * 128 * 16 B
    dst = atom_tmem(pc.f32, A128x256, 16)
    plan = pc.make_tiled_copy(dst, src)
    assert plan.atom == A128x256 and (plan.descriptor.lbo, plan.descriptor.sbo) == (2048, 128)
    assert plan.descriptor.encode() == 0x0000400800800000


def test_plan_stream_patches_only_the_start_address():
    src = kmajor_smem(pc.bf16, 128, 64, "128B")
    dst = make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=64)
    plan = pc.make_tiled_copy(dst, src)
    stream = plan.stream(smem_base=0x4000, tmem_base=64)
    template = plan.descriptor.encode()
    assert [d & ~0x3FFF for _, _, d in stream] == [template & ~0x3FFF] * 4
    assert [d & 0x3FFF for _, _, d in stream] == [(0x4000 + o) >> 4 for o in (0, 32, 64, 96)]
    assert [t for _, t, _ in stream] == [64, 72, 80, 88]
    assert [plan.descriptor_for(0x4000 + i.smem_offset) for i in plan.instructions] == [d for _, _, d in stream]


def test_explain_names_the_atom_the_rejections_the_count_and_the_descriptor():
    text = pc.make_tiled_copy(*demo()).explain()
    assert "tcgen05.cp.cta_group::1.32x128b.warpx4" in text
    assert "128x256b               replica mismatch" in text
    assert "1 instruction for 512 B" in text and "lower bound over all forms 1" in text
    assert "LBO 0 B, SBO 128 B" in text


def test_cta_group_2_plan_documents_the_pair_protocol():
    plan = pc.make_tiled_copy(*demo(), cta_group=2)
    assert plan.atom.ptx == "tcgen05.cp.cta_group::2.32x128b.warpx4"
    assert "even CTA" in plan.explain() and "mask 0b11" in plan.explain()
    pc.verify_plan(plan)


# -- regions ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows,cols,tcol", [(slice(128, 256), slice(0, 64), 0), (slice(0, 128), slice(64, 128), 0),
                                           (slice(128, 256), slice(8, 16), 16), (slice(0, 128), slice(16, 48), 32)])
def test_sub_regions_with_row_and_column_offsets(rows, cols, tcol):
    src = kmajor_smem(pc.bf16, 256, 128, "128B")[rows, cols]
    k = cols.stop - cols.start
    dst = make_tmem_tensor(pc.bf16, Layout((128, 128), (TLane, TCol)), columns=128)[0:128, tcol:tcol + k]
    plan = pc.make_tiled_copy(dst, src)
    pc.verify_plan(plan, seed=3)
    assert plan.instructions[0].column == tcol // 2


def lane_tiled():
    """4x256b over the first 16 rows of each warp quadrant: row (i, q) at lane i + 32 q."""
    dst = make_tmem_tensor(pc.f32, Layout((16, 4, 8), (TLane, 32 * TLane, TCol)), columns=32)
    src = make_smem_tensor(pc.f32, Layout((16, 4, (4, 2)), (32, 4, (1, 16))))   # 4 rows of 16 B, LBO 64 B
    return dst, src


def test_4x256b_lane_tiled_region_issues_one_copy_per_lane():
    dst, src = lane_tiled()
    plan = pc.make_tiled_copy(dst, src)
    assert plan.atom == A4x256 and len(plan.instructions) == 16
    assert [i.lane for i in plan.instructions] == list(range(16))
    assert [i.smem_offset for i in plan.instructions] == [128 * i for i in range(16)]
    assert plan.descriptor.sbo == 0 and plan.descriptor.lbo == 64
    pc.verify_plan(plan)


def test_4x256b_partial_window_folds_the_row_offset_into_the_lane_field():
    dst, src = lane_tiled()
    plan = pc.make_tiled_copy(dst[4:12, :, :], src[4:12, :, :])
    assert [i.lane for i in plan.instructions] == list(range(4, 12))
    pc.verify_plan(plan)


def test_asymmetric_middles_are_cut_at_the_union_of_extents():
    # nvfp4 scale factors stored as uint8: TMEM columns run contiguously over 4 instructions (one middle mode),
    # shared memory holds the 4 blocks of 16 B in the order 0, 2, 1, 3 (two middle modes, strides out of order).
    dst = make_tmem_tensor(pc.u8, Layout((32, 64), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    src = make_smem_tensor(pc.f8e4m3, Layout((32, (16, 2, 2)), (16, (1, 1024, 512))))
    src = attrs.evolve(src, dtype=pc.u8)                  # same-width reinterpretation
    plan = pc.make_tiled_copy(dst, src)
    assert plan.atom == AWARPX4
    assert [(i.column, i.smem_offset) for i in plan.instructions] == [(0, 0), (4, 1024), (8, 512), (12, 1536)]
    pc.verify_plan(plan)


def test_same_width_reinterpretation_is_allowed():
    src = make_smem_tensor(pc.f8e4m3, Layout((32, 16), (16, 1)))
    dst = make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    assert pc.make_tiled_copy(dst, src).atom == AWARPX4


# -- refusals ---------------------------------------------------------------------------------------------------
def refuses(message, *args, **kwargs):
    with pytest.raises(PlanError, match=message) as info:
        pc.make_tiled_copy(*args, **kwargs)
    return str(info.value)


def test_unknown_shape_lists_the_legal_shapes():
    refuses(r"unknown tcgen05.cp shape '96x128b'; legal shapes: 128x256b, 4x256b, 128x128b, 64x128b, 32x128b",
            *demo(), shape="96x128b")


def test_64x128b_requires_an_explicit_multicast():
    refuses(r"'64x128b' requires an explicit multicast: 'warpx2::02_13' or 'warpx2::01_23'", *demo(),
            shape="64x128b")


def test_illegal_shape_multicast_pair():
    refuses(r"illegal multicast 'warpx4' for tcgen05.cp shape '128x256b'", *demo(), shape="128x256b",
            multicast="warpx4")


@pytest.mark.parametrize("declared,asked", [(A02_13, A01_23), (A01_23, A02_13)])
def test_replica_mismatch(declared, asked):
    src = kmajor_smem(pc.f32, 64, 4, "none")[0:64, 0:4]
    dst = atom_tmem(pc.f32, declared, 4)
    refuses("replica mismatch", dst, src, shape="64x128b", multicast=asked.multicast)


def test_tmem_column_offset_must_be_128b_aligned():
    src, dst = kmajor_smem(pc.bf16, 128, 8, "none"), make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)),
                                                                       columns=32)
    refuses(r"TMEM column offset 2 \(32 bits\) is not provably 128b-aligned", dst[0:128, 2:10], src[0:128, 0:8])


def test_lane_offset_that_overflows_the_lane_space():
    dst, src = demo()
    big = make_tmem_tensor(pc.u8, Layout((64, 16), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    msg = refuses("overflows the 128-lane space", big[32:64, 0:16], src, shape="32x128b")
    assert "lane offset 32" in msg and "src: smem<u8>" in msg and "dst: tmem<u8>" in msg


def test_fp4_decompression_needs_4_bit_elements_into_bytes_and_fp6_is_refused_with_the_reason():
    refuses(r"\.b8x16\.b4x16_p64 expands 4-bit elements into 8-bit TMEM bytes; the copy is u8 -> u8", *demo(),
            decompress="b8x16.b4x16_p64")
    src = make_smem_tensor(pc.f4e2m1, Layout((32, 32), (32, 1)))
    dst = make_tmem_tensor(pc.u8, Layout((32, 32), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    refuses("pass decompress='b4x16_p64'", dst, src)
    refuses(r"6-bit container placement -- bits \[5:0\] or \[6:1\]", dst, src, decompress="b6x16_p32")
    six = make_smem_tensor(pc.f6e2m3, Layout((32, 16), (16, 1)))
    refuses("6-bit sources need .b8x16.b6x16_p32", make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)),
                                                                     replica=Layout(4, 32 * TLane), columns=32), six)


def test_core_group_stride_must_be_16b_aligned():
    src = make_smem_tensor(pc.u8, Layout(((8, 4), 16), ((16, 136), 1)))
    dst = make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    refuses(r"SBO\) 136 B is not 16B-aligned", dst, src, shape="32x128b")


@pytest.mark.parametrize("rows, message", [
    (((2, 16), (16, 64)), r"row spacing inside an 8-row core group is \(2,4\):\(16,64\) .* not a single stride"),
    (((8, 2, 2), (16, 128, 512)), r"spacing of 8-row core groups is \(2,2\):\(128,512\) .* not a single stride"),
])
def test_rows_must_form_evenly_spaced_core_groups(rows, message):
    src = make_smem_tensor(pc.u8, Layout((rows[0], 16), (rows[1], 1)))
    dst = make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    refuses(message, dst, src, shape="32x128b")


def test_swizzle_outside_the_canonical_family():
    src = make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 4, 3), 0, Layout((128, 64), (64, 1))))
    dst = make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=64)
    refuses(r"swizzle family mismatch: Sw<3,4,3> on bf16 element offsets; .* Sw<b,3,3>", dst, src)


def test_mirrored_swizzle_is_refused_explicitly():
    src = make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, -3), 0, Layout((128, 64), (64, 1))))
    dst = make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=64)
    refuses("mirrored swizzle Sw<3,3,-3>", dst, src)


def test_row_pitch_must_agree_with_the_buffer_swizzle():
    src = make_smem_tensor(pc.u8, Layout((128, 32), (32, 1)))       # rows 32 B apart, not swizzled
    dst = make_tmem_tensor(pc.u8, Layout((128, 32), (TLane, TCol)), columns=32)
    refuses("rows 32 B apart select B32, but the buffer is not swizzled", dst, src, shape="128x256b")


def test_swizzled_rows_must_not_cross_the_swizzle_period():
    src = kmajor_smem(pc.f32, 128, 8, "32B")[0:128, 4:8]               # 16 B into a 32 B swizzle row: fine
    dst = make_tmem_tensor(pc.f32, Layout((128, 8), (TLane, TCol)), columns=32)[0:128, 0:4]
    assert pc.make_tiled_copy(dst, src).atom == A128x128
    # Rows 128 B apart but 144 B long (they overlap): a 256-bit row starting 112 B in spills past its swizzle row.
    over = make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0, Layout((128, 72), (64, 1))))
    dst16 = make_tmem_tensor(pc.bf16, Layout((128, 16), (TLane, TCol)), columns=32)
    refuses("not aligned to the B128 swizzle atom", dst16, over[0:128, 56:72], shape="128x256b")


def test_middle_stride_must_be_16b_aligned():
    src = make_smem_tensor(pc.u8, Layout((32, (16, 2)), (16, (1, 520))))
    dst = make_tmem_tensor(pc.u8, Layout((32, 32), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    refuses("a middle step of 520 B in shared memory is not 16B-aligned", dst, src, shape="32x128b")


def test_copy_must_fit_the_allocation():
    src = kmajor_smem(pc.f32, 128, 64, "none")
    dst = make_tmem_tensor(pc.f32, Layout((128, 64), (TLane, TCol)), columns=32)
    refuses("exceed the TMEM allocation of 32 columns", dst, src, shape="128x256b")


def test_rows_must_be_in_consecutive_tmem_columns():
    src = make_smem_tensor(pc.u8, Layout((32, 16), (16, 1)))
    dst = make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, 2 * TCol)), replica=Layout(4, 32 * TLane), columns=32)
    refuses("not in consecutive TMEM columns", dst, src, shape="32x128b")


@pytest.mark.parametrize("src,dst,message", [
    (make_smem_tensor(pc.bf16, Layout((32, 16), (16, 1))),
     make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), columns=32), r"element widths differ: src bf16 \(16 bits\)"),
    (make_smem_tensor(pc.u8, Layout((32, 16), (16, 1))),
     make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol))), "no allocation: pass columns="),
    (make_smem_tensor(pc.u8, Layout((32, 8), (16, 1))),
     make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), columns=32), "region shapes differ"),
    (make_smem_tensor(pc.u8, Layout(((4, 3), 2), ((1, 100), 1000))),
     make_tmem_tensor(pc.u8, Layout(((3, 4), 2), ((TLane, 4 * TLane), 16 * TCol)), columns=32), "do not nest"),
    (make_smem_tensor(pc.u8, Layout((32, 16), (0, 1))),
     make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), columns=32), "declare the copies as"),
    (make_smem_tensor(pc.u8, Layout((32, 16), (16, 1))),
     make_tmem_tensor(pc.u8, Layout((32, 16), (0, TCol)), columns=32), "land in one TMEM cell"),
    (make_smem_tensor(pc.u8, Layout((32, 16), (16, 1))),
     make_tmem_tensor(pc.u8, Layout((32, 16), (TLane + TCol, TCol)), columns=32), "both TMEM lanes and columns"),
])
def test_envelope_and_structure_refusals(src, dst, message):
    refuses(message, dst, src)


def test_tensor_kinds_are_checked():
    dst, src = demo()
    with pytest.raises(TypeError, match="src must be a shared-memory tensor"):
        pc.make_tiled_copy(dst, dst)
    with pytest.raises(TypeError, match="dst must be a TMEM tensor"):
        pc.make_tiled_copy(src, src)


def test_bad_cta_group_and_multicast():
    refuses("cta_group must be 1 or 2, got 3", *demo(), cta_group=3)
    refuses("unknown multicast 'warpx8'", *demo(), multicast="warpx8")


def test_inference_failure_lists_every_candidate():
    src = make_smem_tensor(pc.u8, Layout((32, 16), (16, 1)))
    dst = make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, 2 * TCol)), replica=Layout(4, 32 * TLane), columns=32)
    msg = refuses("no tcgen05.cp form fits this copy", dst, src)
    assert all(name in msg for name in ("128x256b", "4x256b", "128x128b", "02_13", "01_23", "32x128b.warpx4"))


# -- tensors ----------------------------------------------------------------------------------------------------
def test_tensor_slicing_keeps_offsets_and_refuses_bad_windows():
    t = make_smem_tensor(pc.bf16, Layout(((8, 4), 64), ((64, 1024), 1)))
    r = t[8:24, 16:32]
    assert r.offset == 1024 + 16 and r.layout == Layout(((8, 2), 16), ((64, 1024), 1))
    with pytest.raises(PlanError, match="is not a shifted copy"):
        t[4:12, :]
    with pytest.raises(PlanError, match="has a step"):
        t[0:32:2, :]
    with pytest.raises(PlanError, match="out of range"):
        t[40, :]


def test_tensor_constructors_validate():
    with pytest.raises(PlanError, match="allocation of 48 columns is illegal"):
        make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), columns=48)
    with pytest.raises(PlanError, match="not on the TLane/TCol axes"):
        make_tmem_tensor(pc.u8, Layout((32, 16), (16, 1)), columns=32)
    with pytest.raises(PlanError, match="base_align 100"):
        make_smem_tensor(pc.u8, Layout((32, 16), (16, 1)), base_align=100)
    with pytest.raises(PlanError, match="unknown dtype 'fp7'"):
        make_smem_tensor("fp7", Layout(4, 1))


def test_verify_catches_a_corrupted_plan():
    src = kmajor_smem(pc.bf16, 128, 64, "128B")
    dst = make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=64)
    plan = pc.make_tiled_copy(dst, src)
    swapped = (attrs.evolve(plan.instructions[0], smem_offset=32), attrs.evolve(plan.instructions[1], smem_offset=0))
    with pytest.raises(pc.EmulationError, match=r"TMEM cells differ .* \(lane \d+, col \d+\): got 0x"):
        pc.verify_plan(attrs.evolve(plan, instructions=swapped + plan.instructions[2:]))


def test_smem_element_offset_applies_the_swizzle_to_the_region_offset():
    t = make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (64, 1))))
    region = t[2:6, 8:16]
    assert region.element_offset(1, 3) == Swizzle(3, 3, 3)(3 * 64 + 8 + 3)
    assert region.shape == (4, 8) and region.bits == 16


def test_tensors_and_emulator_print_readably():
    from pycute.sim import Sm100Emulator
    dst, src = demo()
    assert repr(src) == "smem<u8>[0 o (32,16):(16,1)]"
    assert repr(dst[4:8, :]) == "tmem<u8>[4@TLane o (4,16):(1@TLane,1@TCol), replica 4:32@TLane, 32 columns]"
    assert repr(Sm100Emulator(smem_bytes=1024)) == \
        "Sm100Emulator(1 CTA: [CtaState(smem 1024 B at 0x0, TMEM 0 of 512 columns allocated, 0 uncommitted cp)])"


@pytest.mark.parametrize("k_step, accepted", [(136, False), (128, True)])
def test_swizzled_256b_rows_must_not_straddle_a_swizzle_row(k_step, accepted):
    # 8-element (16 B) rows of bf16 in Sw<1,3,3> (32 B swizzle rows); K blocks k_step elements apart. At 136 the
    # second block starts 16 B into a swizzle row, so each 32 B row of a 4x256b copy would cross a row line.
    src = make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(1, 3, 3), 0, Layout((8, (16, 4)), (16, (1, k_step)))))
    dst = make_tmem_tensor(pc.bf16, Layout((4, 64), (32 * TLane, TCol)), columns=32)
    if accepted:
        plan = pc.make_tiled_copy(dst, src[0:4, :])
        assert plan.atom.name == "4x256b"
        pc.verify_plan(plan)
    else:
        refuses("puts each 32 B row across a 32 B row of the B32 swizzle", dst, src[0:4, :])


def test_plan_bases_are_checked():
    plan = pc.make_tiled_copy(*demo())
    with pytest.raises(pc.DescriptorError, match="not 16-byte aligned"):
        plan.descriptor_for(8)
    with pytest.raises(pc.DescriptorError, match=r"outside \[0, 0x40000\)"):
        plan.descriptor_for(1 << 20)
    assert plan.descriptor_for(0) != plan.descriptor_for(1 << 4)
    with pytest.raises(pc.PlanError, match="not the base of a 32-column tcgen05.alloc"):
        plan.stream(0, 3)
    with pytest.raises(pc.PlanError, match="not the base of a 32-column tcgen05.alloc"):
        plan.stream(0, 1 << 16)                                  # lane 1
    with pytest.raises(pc.PlanError, match="not aligned to the 1024 B"):
        plan.stream(0x200, 0)
    with pytest.raises(pc.PlanError, match="beyond the 232448 B"):
        plan.stream(232448, 0)
    with pytest.raises(TypeError, match="must be an integer"):
        plan.stream(0.0, 0)
    assert plan.stream(0x400, 32)[0][1] == 32
