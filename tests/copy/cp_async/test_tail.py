"""The vector that ends the array: cp.async's source window is its whole cp-size at a cp-size-aligned address, so a
vector holding fewer bytes of the array than its width must not be one wide copy at the array's end (memcheck
reports the read past the allocation). Every copy's window stays inside the array, the widest width everywhere
else, and the bytes that land are still what the layouts say."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import Layout
from pycute.atoms.cp_async import CpAsyncIssue, CpAsyncResidue
from pycute.copy.cp_async import make_cp_async_copy
from pycute.copy.cp_async.plan import TailCopy
from pycute.copy.cp_async.planner import tail_copies
from pycute.sim.emulator import Sm90Emulator


def bf16_rows(rows: int = 300, cols: int = 100, stride: int = 104):
    """The array of issue 34: bf16 rows of 200 B (not whole 16-byte vectors) at a 208-byte stride."""
    g = pc.make_global_tensor(pc.bf16, Layout((rows, cols), (stride, 1)))
    return g, pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B")


@pytest.mark.parametrize("nbytes, size, copies, residue", [
    (8, 16, [(0, 8, 8), (8, 8, 0)], 0),                    # issue 34's vector: 4 bf16 of 8
    (12, 16, [(0, 8, 8), (8, 4, 4), (12, 4, 0)], 0),
    (4, 16, [(0, 4, 4), (4, 4, 0), (8, 8, 0)], 0),
    (2, 16, [(4, 4, 0), (8, 8, 0)], 2),                     # all of it past the last whole word
    (13, 16, [(0, 8, 8), (8, 4, 4)], 1),                    # the residue's word ends the vector
    (6, 8, [(0, 4, 4)], 2),
    (4, 8, [(0, 4, 4), (4, 4, 0)], 0),
    (3, 4, [], 3),
])
def test_a_tail_is_its_words_its_residue_and_zeros(nbytes, size, copies, residue):
    assert tail_copies(nbytes, size) == (tuple(TailCopy(*c) for c in copies), residue)


@pytest.mark.parametrize("nbytes", [0, 16])
def test_a_tail_holds_part_of_its_vector(nbytes):
    with pytest.raises(pc.PlanError, match="a tail holds 1 to 15 of its 16 bytes, not"):
        tail_copies(nbytes, 16)


def test_issue_34s_vector_is_an_8_byte_copy_and_8_zero_bytes():
    g, s = bf16_rows()
    plan = make_cp_async_copy(s, g)
    # tile (4, 1): rows 256..319 (300 exist), columns 64..127 (100 exist); row 299's columns 96..99 end the array
    tail = [i for t in range(plan.threads) for i in plan.stream(0, 4, 1, thread=t) if i.size != 16]
    assert [(i.gmem, i.size, i.src_size) for i in tail] == [((299 * 104 + 96) * 2, 8, 8), (0, 8, 0)]
    assert (299 * 104 + 96) * 2 + 8 == plan.alloc_bytes == (299 * 104 + 100) * 2
    assert plan.atom.size == 16 and plan.copy_sites == len(plan.instructions) + 2


def test_explain_says_which_vector_is_narrower_and_why():
    g, s = bf16_rows()
    text = make_cp_async_copy(s, g).explain()
    assert ("tail        the vector that ends the array holds 8 of its 16 B; one 16-B cp.async would read past the "
            "array's last byte (62392), so it is cp.async 8 B of data; zero-filling cp.async 8 B") in text
    assert "every other copy is 16 B" in text


def test_explain_says_whole_vectors_need_no_tail():
    g = pc.make_global_tensor(pc.bf16, Layout((64, 64), (64, 1)))
    text = make_cp_async_copy(pc.make_smem_tensor(pc.bf16, Layout((64, 64), (64, 1))), g).explain()
    assert "bounds      every 16-B source window lies inside the array's 8192 B" in text


def test_a_width_wider_than_the_whole_array_is_refused():
    g = pc.make_global_tensor(pc.f32, Layout(3, 1))                      # 12 bytes
    plan = make_cp_async_copy(pc.make_smem_tensor(pc.f32, Layout(4, 1)), g, threads=4)
    assert plan.atom.size == 8
    assert str(plan.rejected[0].reason) == "the array is 12 B, less than one copy (its source window would leave the array)"


def test_the_emulator_refuses_a_window_past_the_array():
    emu = Sm90Emulator(smem_bytes=64)
    wide = CpAsyncIssue("cp.async.cg.shared.global", 0, 16, 16, 8)             # 8 bytes read, 16 addressed
    with pytest.raises(pc.EmulationError, match=r"source window \+0x10..\+0x20 .* leaves the 24-byte array"):
        emu.cp_async(np.zeros(24, dtype=np.uint8), wide)


def test_a_residue_lands_at_once_zero_extended():
    emu = Sm90Emulator(smem_bytes=64)
    emu.write_smem(0, np.full(64, 0xA5, dtype=np.uint8))
    emu.cp_async(np.arange(7, dtype=np.uint8), CpAsyncResidue(8, 4, 3))
    assert emu.ctas[0].smem[8:12].tolist() == [4, 5, 6, 0] and emu.ctas[0].smem[12] == 0xA5


# ---- every plan, every tile, every thread: windows inside the array, the widest width elsewhere ------------------

DTYPES = [pc.u8, pc.bf16, pc.f32, pc.f64]


@st.composite
def arrays_and_tiles(draw):
    dtype = draw(st.sampled_from(DTYPES))
    elem = dtype.bits // 8
    cols = draw(st.integers(1, 70))
    per = max(draw(st.sampled_from([1, 2, 4, 8, 16])) // elem, 1)    # the row stride: a multiple of 1..16 bytes
    stride = -(-cols // per) * per
    rows = draw(st.integers(1, 5))
    tile_cols = draw(st.sampled_from([c for c in (4, 8, 16, 32) if c * elem <= 128]))
    tile_rows = draw(st.integers(1, 4))
    layout = Layout((rows, cols), (stride, 1)) if draw(st.booleans()) else Layout((cols, rows), (1, stride))
    tile = Layout((tile_rows, tile_cols), (tile_cols, 1)) if layout.stride[1] == 1 else \
        Layout((tile_cols, tile_rows), (1, tile_cols))
    threads = draw(st.sampled_from([4, 8, 32]))
    completion = draw(st.sampled_from(["group", "arrive"]))
    return pc.make_global_tensor(dtype, layout), pc.make_smem_tensor(dtype, tile), threads, completion


def _iteration_of(plan, thread: int, smem: int) -> int:
    return next(i.iteration for i in plan.instructions
                if plan.smem_byte((thread + i.iteration * plan.threads) * plan.vector) == smem)


@settings(max_examples=60, deadline=None)
@given(arrays_and_tiles())
def test_no_source_window_leaves_the_array(case):
    g, s, threads, completion = case
    try:
        plan = make_cp_async_copy(s, g, threads=threads, completion=completion)
    except pc.PlanError:
        return                                            # no width fits (an odd row of 2-byte elements): refused
    end, size = plan.alloc_bytes, plan.atom.size
    tiles = [range(-(-n // t) + 1) for (n, _), t in zip(plan.array_modes, plan.tile_shape)]
    for tile in np.ndindex(*(len(r) for r in tiles)):
        for t in range(plan.threads):
            issues = plan.stream(0, *tile, thread=t)
            for i in issues:
                if isinstance(i, CpAsyncResidue):
                    assert 0 <= i.gmem and i.gmem + i.src_size == end, (tile, t, i)
                else:
                    assert 0 <= i.gmem and i.gmem + i.size <= end and i.gmem % i.size == 0, (tile, t, i)
            narrow = [i for i in issues if isinstance(i, CpAsyncResidue) or i.size != size]
            if narrow:                                    # only the vector that ends the array, and where planned
                assert plan.tail is not None and any(isinstance(i, CpAsyncResidue) or i.src_size for i in narrow)
                data_end = max(i.gmem + (i.src_size if isinstance(i, CpAsyncResidue) else i.size)
                               for i in narrow if isinstance(i, CpAsyncResidue) or i.src_size)
                assert data_end == end, (tile, t, narrow)
                assert _iteration_of(plan, t, min(i.smem for i in narrow)) in plan.tail.iterations
    pc.verify(plan)
