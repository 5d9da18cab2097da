"""make_tmem_copy: TMEM <-> registers with the fewest tcgen05.ld/st under a register cap, the fragment, refusals."""
import numpy as np
import pytest

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.basis import basis_get
from pycute.arch.sm100.tcgen05_ldst import register_lower_bound
from pycute.sim import verify_tmem_copy

# The PTX thread maps as docs/tcgen05-ld-st.md section 3 tabulates them (t = lane of the warp, j = register of
# one .x1; lane offset within the quadrant, column), written here independently of pycute.arch.
DOC_MAPS = {
    "32x32b": lambda t, j: (t, j),
    "16x64b": lambda t, j: (t // 4 + 8 * (t % 2), (t // 2) % 2 + 2 * j),
    "16x128b": lambda t, j: (t // 4 + 8 * (j % 2), t % 4 + 4 * (j // 2)),
    "16x256b": lambda t, j: (t // 4 + 8 * ((j // 2) % 2), j % 2 + 2 * (t % 4) + 8 * (j // 4)),
    "16x32bx2": lambda t, j: (t % 16, j),     # threads 16-31 at taddr + immHalfSplitoff
}
# CUTLASS's DstLayouts (bit-addressed: lane * (bits per lane) + bit) of one .x1, as CuTe layouts of (thread, bit).
CUTLASS_DST = {
    "32x32b": (Layout((32, 32), (32, 1)), 32),
    "16x64b": (Layout(((2, 2, 8), 32), ((512, 32, 64), 1)), 64),
    "16x128b": (Layout(((4, 8), (32, 2)), ((32, 128), (1, 1024))), 128),
}
REG_X1 = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}
COLS_X1 = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8, "16x32bx2": 1}


def one_instruction(shape, num=1):
    """A 4-warp f32 tensor that one ``shape.x<num>`` per warp moves exactly (16 lanes: lanes 0-15 of a quadrant)."""
    if shape == "32x32b":
        return pc.make_tmem_tensor(pc.f32, Layout((128, num), (TLane, TCol)), columns=32)
    width = COLS_X1[shape] * num * (2 if shape == "16x32bx2" else 1)
    return pc.make_tmem_tensor(pc.f32, Layout(((16, 4), width), ((TLane, 32 * TLane), TCol)), columns=32)


def cell_of(plan, thread, value):
    """(lane, column) of the coordinate a fragment value names, through the tensor's layout."""
    at = plan.tensor.layout(*plan.coordinate(thread, value))
    return basis_get(at, "TLane"), basis_get(at, "TCol")


@pytest.mark.parametrize("shape", list(DOC_MAPS))
@pytest.mark.parametrize("num", [1, 2, 4])
def test_the_fragment_of_one_instruction_is_the_ptx_thread_map_of_its_shape(shape, num):
    plan = pc.make_tmem_copy(one_instruction(shape, num), shape=shape, num=num)
    assert [i.atom.shape for i in plan.per_warp] == [shape]
    for w in range(4):
        for t in range(32):
            for r in range(REG_X1[shape] * num):
                block, j = divmod(r, REG_X1[shape])
                lane, col = DOC_MAPS[shape](t, j)
                col += COLS_X1[shape] * block
                if shape == "16x32bx2" and t >= 16:
                    col += COLS_X1[shape] * num           # the upper half sits beside the lower one
                assert cell_of(plan, 32 * w + t, r) == (32 * w + lane, col), (w, t, r)


@pytest.mark.parametrize("shape", list(CUTLASS_DST))
def test_the_maps_agree_with_cutlass_dst_layouts(shape):
    dst, lane_bits = CUTLASS_DST[shape]
    plan = pc.make_tmem_copy(one_instruction(shape), shape=shape, num=1)
    for t in range(32):
        for j in range(REG_X1[shape]):
            bit = dst(t, 32 * j)
            lane, col = cell_of(plan, t, j)
            assert (lane, col) == (bit // lane_bits, (bit % lane_bits) // 32)


ACCUMULATORS = [(128, 1, False), (64, 1, False), (256, 2, False), (128, 2, False), (64, 1, True)]
WIDTHS = [8, 24, 32, 96, 160, 256]


def accumulator(dtype, m, cta_group, ws, width):
    """The accumulator's first ``width`` columns (the whole accumulator where the layout folds its halves)."""
    if m == 128 and cta_group == 2 or ws:
        n = width if width % (16 if cta_group == 2 else 8) == 0 and width <= 256 else None
        return None if n is None or (cta_group == 2 and n % 16) else pc.mma_accumulator(dtype, m, n, cta_group, ws)
    return pc.mma_accumulator(dtype, m, 256, cta_group, ws)[:, 0:width]


MATRIX = [(m, g, ws, dt, w) for m, g, ws in ACCUMULATORS for dt in (pc.f32, pc.f16) for w in WIDTHS]


@pytest.mark.parametrize("m,cta_group,ws,dtype,width", MATRIX,
                         ids=[f"M{m}-g{g}{'-ws' if ws else ''}-{d.name}-w{w}" for m, g, ws, d, w in MATRIX])
def test_every_accumulator_and_width_plans_at_the_lower_bound_and_emulates_bit_exactly(m, cta_group, ws, dtype, width):
    acc = accumulator(dtype, m, cta_group, ws, width)
    if acc is None:
        pytest.skip(f"N={width} is not an MMA width for this layout")
    warps = len({int(l) // 32 for l in np.unique(pc.tensor.layout_values(acc.layout, "TLane"))})
    for op in ("ld", "st"):
        plan = pc.make_tmem_copy(acc, op=op, warps=warps)
        assert len(plan.per_warp) == plan.lower_bound == register_lower_bound(plan.registers, 32)
        assert plan.pack == (dtype.bits == 16)
        verify_tmem_copy(plan, seed=width)


@pytest.mark.parametrize("width,counts", [(24, [16, 8]), (160, [32] * 5), (96, [32, 32, 32])])
def test_widths_tvm_and_cute_refuse_plan_by_splitting(width, counts):
    plan = pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 256)[:, 0:width])
    assert [i.atom.num for i in plan.per_warp] == counts


@pytest.mark.parametrize("cap,counts", [(128, [128, 32]), (64, [64, 64, 32]), (8, [8] * 20)])
def test_the_register_cap_bounds_each_instruction(cap, counts):
    plan = pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 160), max_registers=cap)
    assert [i.atom.num for i in plan.per_warp] == counts and all(i.atom.registers <= cap for i in plan.per_warp)


def test_a_16_bit_accumulator_loads_with_pack_two_values_a_register():
    plan = pc.make_tmem_copy(pc.mma_accumulator(pc.f16, 128, 64))
    assert plan.pack and plan.values_per_register == 2 and plan.registers == 32
    assert plan.per_warp[0].ptx == "tcgen05.ld.sync.aligned.32x32b.x32.pack::16b.b32"
    assert plan.coordinate(5, 1) == (5, 1) and plan.coordinate(5, 2) == (5, 2)
    st = pc.make_tmem_copy(pc.mma_accumulator(pc.f16, 128, 64), op="st")
    assert st.per_warp[0].ptx == "tcgen05.st.sync.aligned.32x32b.x32.unpack::16b.b32"


def test_dense_16_bit_data_keeps_two_values_a_register_without_pack():
    t = pc.make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=32)
    plan = pc.make_tmem_copy(t)
    assert not plan.pack and plan.registers == 32 and plan.values_per_register == 2
    verify_tmem_copy(plan)


def test_layout_b_reads_column_halves_from_the_upper_lanes():
    plan = pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64, cta_group=2))
    # coordinate index r + 64 c: warp 2 (lanes 64-95) reads rows 0-31 of columns 32-63
    assert plan.table[0, 0] == 0 and plan.table[64, 0] == 0 + 64 * 32 and plan.table[100, 3] == 36 + 64 * 35


def test_eight_warps_split_each_quadrant_s_columns():
    plan = pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64), warps=8)
    assert plan.registers == 32 and plan.coordinate(32 * 4 + 3, 0) == (3, 32)
    assert "(warp / 4u) % 2u) * 32u" in plan.cuda("ld8")
    verify_tmem_copy(plan)


def test_the_fragment_round_trips_and_a_reordered_fragment_is_realised():
    acc = pc.mma_accumulator(pc.f32, 128, 32)
    plan = pc.make_tmem_copy(acc)
    assert plan.fragment == Layout((128, 32), (1, 128))
    again = pc.make_tmem_copy(acc, fragment=plan.fragment)
    assert again.per_warp == plan.per_warp
    # register j holds column 4 * (j % 8) + j // 8: no shape's columns, but one column per .x1 instruction
    odd = pc.make_tmem_copy(acc, fragment=Layout((128, (8, 4)), (1, (4 * 128, 128))))
    assert [i.atom.num for i in odd.per_warp] == [1] * 32
    assert [i.column for i in odd.per_warp[:9]] == [0, 4, 8, 12, 16, 20, 24, 28, 1]
    verify_tmem_copy(odd)


def test_a_fragment_no_instruction_realises_is_refused_naming_the_register():
    acc = pc.mma_accumulator(pc.f32, 128, 32)
    with pytest.raises(pc.PlanError, match="register 1 of thread 0 must move lane 1, column 0"):
        pc.make_tmem_copy(acc, fragment=Layout((128, 32), (32, 1)))


@pytest.mark.parametrize("kwargs,match", [
    ({"warps": 2}, r"lanes 64-95 \(quadrant 2\) hold the tensor but no warp reaches them"),
    ({"max_registers": 2, "shape": "16x256b"}, "one .x1 moves 4 registers per thread, above the register cap of 2"),
    ({"max_registers": 0}, r"max_registers=0 is outside \[1, 128\]"),
    ({"pack": True}, r"\.pack::16b moves 16-bit values; the tensor holds f32"),
    ({"shape": "16x32bx2", "num": 3}, r"num=3 is not a legal \.num: a power of two"),
    ({"op": "mov"}, "op is 'ld'"),
    ({"warps": 6}, "1 to 4 warps, or a multiple of 4"),
])
def test_illegal_requests_are_typed_refusals(kwargs, match):
    with pytest.raises(pc.PlanError, match=match):
        pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32), **kwargs)


def test_a_warp_without_data_is_refused():
    with pytest.raises(pc.PlanError, match="warp\\(s\\) of quadrant 2 would move nothing"):
        pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64, cta_group=2)[:, 0:16], warps=4)


def test_a_lane_base_other_than_0_or_16_is_refused_as_undefined():
    t = pc.make_tmem_tensor(pc.f32, Layout((16, 8), (TLane, TCol)), columns=32)[0:16, :]
    shifted = pc.make_tmem_tensor(pc.f32, Layout((32, 8), (TLane, TCol)), columns=32)[8:24, :]
    pc.make_tmem_copy(t, warps=1)
    with pytest.raises(pc.PlanError, match="other lane bases are undefined"):
        pc.make_tmem_copy(shifted, warps=1)


def test_pack_on_dense_16_bit_data_is_refused():
    t = pc.make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=32)
    with pytest.raises(pc.PlanError, match="keeps two 16-bit values per cell"):
        pc.make_tmem_copy(t, pack=True)


def test_odd_widths_cannot_split_into_half_offsets_of_16_lane_data():
    t = pc.make_tmem_tensor(pc.f32, Layout(((16, 4), 7), ((TLane, 32 * TLane), TCol)), columns=32)
    with pytest.raises(pc.PlanError, match="do not split into the two halves"):
        pc.make_tmem_copy(t, shape="16x32bx2")


def test_layouts_the_sources_do_not_pin_down_are_refused():
    with pytest.raises(pc.PlanError, match="Layout G, whose lane/column map the sources do not pin down"):
        pc.mma_accumulator(pc.f32, 32, 64, ws=True)
    with pytest.raises(pc.PlanError, match="no tcgen05.mma data-path layout for M=128, cta_group::1, .ws"):
        pc.mma_accumulator(pc.f32, 128, 64, ws=True)


def test_explain_and_the_device_function():
    plan = pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 24))
    text = plan.explain()
    assert "chosen      32x32b: 2 instructions per warp, 24 registers per thread (cap 32); lower bound 2" in text
    code = plan.cuda("ld_acc")
    assert "void ld_acc(unsigned tmem_base, unsigned (&regs)[24])" in code and "pycute_tcgen05_wait_ld();" in code
    assert "pycute_tcgen05_wait" not in plan.cuda("ld_acc", wait=False)
    st = pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 24), op="st").cuda("st_acc")
    assert "void st_acc(unsigned tmem_base, const unsigned (&regs)[24])" in st and "wait_st" in st
