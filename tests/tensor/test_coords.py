"""Fragment coordinates (pycute.tensor.coords): which (row, column) of its tile each value of each thread of a
register fragment holds -- the wgmma accumulator and A fragments, tcgen05.ld fragments, any fragment with a layout
over a tile -- as tables that invert the fragment's layout, split into a per-thread base and a per-value offset."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import PlanError


def accumulator_formula(t, v):
    """The PTX ISA's figure for wgmma's D (#asynchronous-warpgroup-level-matrix-register-fragment), written out."""
    g, w, lane = t // 128, (t // 32) % 4, t % 32
    return 64 * g + 16 * w + lane // 4 + 8 * ((v // 2) % 2), 8 * (v // 4) + 2 * (lane % 4) + v % 2


@pytest.mark.parametrize("m,n", [(64, 8), (64, 128), (128, 256), (192, 24)])
def test_the_accumulators_coordinates_are_the_ptx_figures(m, n):
    c = pc.fragment_coords(pc.wgmma_accumulator(pc.f32, m, n))
    t, v = np.meshgrid(np.arange(2 * m), np.arange(n // 2), indexing="ij")
    want_row, want_col = accumulator_formula(t, v)
    assert c.shape == (m, n) and np.array_equal(c.row, want_row) and np.array_equal(c.col, want_col)


@pytest.mark.parametrize("dtype,run", [(pc.bf16, 2), (pc.f16, 2), (pc.tf32, 1), (pc.f8e4m3, 4), (pc.i8, 4)])
def test_an_a_fragment_holds_one_registers_adjacent_k_elements(dtype, run):
    c = pc.fragment_coords(pc.wgmma_a_fragment(dtype, 64, 64))
    for t in (0, 5, 37, 127):
        for v in range(c.values):
            row = 16 * (t // 32) + (t % 32) // 4 + 8 * ((v // run) % 2)
            col = run * (t % 4) + v % run + 4 * run * (v // (2 * run))
            assert c.of(t, v) == (row, col)


def test_of_names_a_value_outside_the_fragment():
    c = pc.fragment_coords(pc.wgmma_accumulator(pc.f32, 64, 16))
    with pytest.raises(PlanError, match=r"of\(128, 0\): the fragment has threads 0\.\.127 and values 0\.\.7"):
        c.of(128, 0)


def test_the_accumulator_splits_into_a_thread_base_and_a_value_offset():
    c = pc.fragment_coords(pc.wgmma_accumulator(pc.f32, 64, 32))
    assert c.separable
    assert list(c.value_row) == [0, 0, 8, 8] * 4
    assert list(c.value_col) == [0, 1, 0, 1, 8, 9, 8, 9, 16, 17, 16, 17, 24, 25, 24, 25]
    assert list(c.thread_row[:8]) == [0, 0, 0, 0, 1, 1, 1, 1] and list(c.thread_col[:8]) == [0, 2, 4, 6] * 2


def test_a_thread_holds_two_rows_and_a_quad_shares_each():
    c = pc.fragment_coords(pc.wgmma_accumulator(pc.f32, 128, 64))
    assert c.rows_of(37) == (17, 25) and c.rows_of(165) == (81, 89)
    assert c.threads_of_row(17) == c.threads_of_row(25) == (36, 37, 38, 39)
    assert c.cols_of(1) == tuple(sorted(8 * j + 2 + i for j in range(8) for i in range(2)))
    assert c.slots("row") == (tuple(v for v in range(32) if v % 4 < 2), tuple(v for v in range(32) if v % 4 >= 2))


def test_a_tcgen05_load_plans_fragment_is_lane_row_and_register_column():
    plan = pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64), "ld", warps=4)
    c = pc.fragment_coords(plan)
    assert c.shape == (128, 64) and c.rows_of(77) == (77,) and c.threads_of_row(77) == (77,)
    assert np.array_equal(c.col, np.broadcast_to(np.arange(64), (128, 64)))
    for t, v in [(0, 0), (77, 13), (127, 63)]:
        assert pc.idx2crd(int(plan.table[t, v]), plan.tensor.shape) == c.of(t, v)


def test_eight_warps_split_a_lanes_columns_between_warpgroups():
    c = pc.fragment_coords(pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64), "ld", warps=8))
    assert c.threads_of_row(3) == (3, 131) and c.cols_of(131) == tuple(range(32, 64))


def test_a_wgmma_plan_gives_its_accumulator():
    plan = pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 64), pc.kmajor_smem_tensor(pc.bf16, 64, 16, "32B"),
                       pc.kmajor_smem_tensor(pc.bf16, 64, 16, "32B"))
    assert pc.fragment_coords(plan) == pc.fragment_coords(plan.d)


def test_a_fragment_without_a_tile_shape_is_refused():
    layout = pc.wgmma_accumulator(pc.f32, 64, 16).layout
    with pytest.raises(PlanError, match=r"does not say its tile's shape; give it \(make_fragment\(\.\.\., "
                                        r"shape=\(rows, cols\)\)\)"):
        pc.fragment_coords(pc.make_fragment(pc.f32, 128, layout))


def test_a_fragment_without_a_layout_is_refused():
    with pytest.raises(PlanError, match=r"has no \(thread, value\) layout"):
        pc.fragment_coords(pc.make_fragment(pc.f32, 32, shape=(32, 4)))


def test_a_value_outside_the_tile_is_refused():
    with pytest.raises(PlanError, match=r"thread 0's value 1 is element 64 of a 8 x 8 tile of 64 elements"):
        pc.fragment_coords(pc.make_fragment(pc.f32, 32, pc.Layout((32, 2), (1, 64)), shape=(8, 8)))


def test_a_rank_3_tile_is_refused():
    with pytest.raises(PlanError, match=r"the tile \(4, 8, 2\) is not rank 2"):
        pc.fragment_coords(pc.make_fragment(pc.f32, 32, pc.Layout((32, 2), (1, 32)), shape=(4, 8, 2)))


def test_fragment_coords_takes_fragments():
    with pytest.raises(TypeError, match=r"fragment_coords: a register fragment .* got Layout"):
        pc.fragment_coords(pc.Layout(4, 1))


def test_a_map_that_is_no_coordinate_layout_keeps_its_tables():
    # stride 3 over a 16-row tile: mode 0 wraps into the next column unevenly, no (row, col) layout exists
    frag = pc.make_fragment(pc.f32, 32, pc.Layout((32, 2), (3, 1)), shape=(16, 8))
    c = pc.fragment_coords(frag)
    assert c.layout is None and c.of(6, 1) == (3, 1) and not c.separable
    with pytest.raises(PlanError, match=r"not a per-thread base plus a per-value offset"):
        c.value_row


# --- properties: the tables invert the layout ----------------------------------------------------------------------
@st.composite
def bijective_fragments(draw):
    """A random (thread, value) layout that holds every element of a rows x cols tile once: the tile's elements cut
    into power-of-two modes, dealt between thread and value in a random order with compact strides."""
    threads_log, values_log = draw(st.integers(5, 7)), draw(st.integers(0, 4))
    rows_log = draw(st.integers(0, threads_log + values_log))
    sizes = []
    left = threads_log + values_log
    while left:
        k = draw(st.integers(1, left))
        sizes.append(k)
        left -= k
    order = draw(st.permutations(range(len(sizes))))
    strides, acc = [0] * len(sizes), 1
    for i in order:
        strides[i] = acc
        acc <<= sizes[i]
    # split the modes into a thread part of 2^threads_log and a value part
    modes, t_modes, v_modes, t_left = list(zip(sizes, strides)), [], [], threads_log
    for k, d in modes:
        take = min(k, t_left)
        if take:
            t_modes.append((1 << take, d))
        if k - take:
            v_modes.append((1 << (k - take), d << take))
        t_left -= take
    v_modes = v_modes or [(1, 0)]
    layout = pc.Layout((tuple(s for s, _ in t_modes), tuple(s for s, _ in v_modes)),
                       (tuple(d for _, d in t_modes), tuple(d for _, d in v_modes)))
    shape = (1 << rows_log, 1 << (threads_log + values_log - rows_log))
    return pc.make_fragment(pc.f32, 1 << threads_log, layout, shape=shape)


def hardware_fragments():
    frags = [pc.wgmma_accumulator(d, m, n) for d in (pc.f32, pc.f16) for m in (64, 128) for n in (8, 40, 256)]
    frags += [pc.wgmma_a_fragment(d, 64, k) for d in (pc.bf16, pc.tf32, pc.f8e5m2) for k in (32, 64)]
    frags += [pc.make_tmem_copy(pc.mma_accumulator(pc.f32, m, 64), "ld", warps=w).fragment_tensor
              for m in (64, 128) for w in (4, 8)]
    return frags


def check_inverts(frag):
    c = pc.fragment_coords(frag)
    rows, cols = c.shape
    index = pc.tensor.layout_values(frag.layout).reshape(-1, frag.threads).T
    assert np.array_equal(c.row + rows * c.col, index)
    held = np.zeros(rows * cols, dtype=int)
    np.add.at(held, index.ravel(), 1)
    assert (held == 1).all(), "every element once"
    assert np.array_equal(c.row, c.thread_row[:, None] + c.value_row[None, :])
    assert np.array_equal(c.col, c.thread_col[:, None] + c.value_col[None, :])
    for axis in ("row", "col"):
        slots = c.slots(axis)
        assert sorted(v for s in slots for v in s) == list(range(c.values))
        offsets = c.value_row if axis == "row" else c.value_col
        assert all(len({int(offsets[v]) for v in s}) == 1 for s in slots)
    t = frag.threads // 3
    assert set(c.rows_of(t)) == set(c.row[t].tolist())
    assert all(t in c.threads_of_row(r) for r in c.rows_of(t))


@pytest.mark.parametrize("frag", hardware_fragments(), ids=repr)
def test_the_hardware_fragments_tables_invert_their_layouts(frag):
    check_inverts(frag)


@settings(max_examples=150, deadline=None)
@given(bijective_fragments())
def test_any_fragment_tables_invert_its_layout(frag):
    check_inverts(frag)
    c = pc.fragment_coords(frag)
    assert c.layout is not None and c.layout[0].size() == frag.threads
