"""make_bulk_copy: the fewest 16-byte-aligned runs that follow the bytes, the refusals naming their rule, every
case emulated against the layouts, and the generated code issuing the plan's chunks (PTX interpreted, SASS
counted)."""
import pytest

import pycute as pc
from pycute import Layout
from pycute.compile.nvrtc import compile_cuda
from pycute.copy.bulk import make_bulk_copy
from pycute.interp.stream import trace_entry

from tests.copy.flat_cases import BULK


@pytest.mark.parametrize("name, g, s, tiles", BULK, ids=[c[0] for c in BULK])
def test_loads_and_stores_move_what_the_layouts_say(name, g, s, tiles):
    pc.verify(make_bulk_copy(s, g))
    pc.verify(make_bulk_copy(g, s))


def test_a_contiguous_tile_is_one_chunk_and_rows_are_one_chunk_each():
    g = pc.make_global_tensor(pc.f32, Layout((128, 96), (96, 1)))
    assert len(make_bulk_copy(pc.make_smem_tensor(pc.f32, Layout((32, 96), (96, 1))), g).instructions) == 1
    rows = make_bulk_copy(pc.make_smem_tensor(pc.f32, Layout((32, 32), (32, 1))), g)
    assert [(c.dst, c.src, c.size) for c in rows.instructions[:2]] == [(0, 0, 128), (128, 384, 128)]
    assert rows.expect_tx == 4096


def test_swizzled_chunks_follow_the_swizzled_bytes():
    g = pc.make_global_tensor(pc.bf16, Layout((64, 64), (64, 1)))
    plan = make_bulk_copy(pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), g)
    row1 = [c for c in plan.instructions if 128 <= c.src < 256]
    assert sorted((c.src, c.dst) for c in row1)[:2] == [(128, 144), (144, 128)]   # row 1: 16-byte units swapped


@pytest.mark.parametrize("array, tile, message", [
    (Layout((100, 64), (64, 1)), Layout((64, 64), (64, 1)), r"array mode 0 \(100\) is not a whole number of tiles"),
    (Layout((64, 6), (6, 1)), Layout((16, 3), (3, 1)), r"the tiles of array mode 1 start 12 B apart"),
    (Layout((64, 37), (37, 1)), Layout((16, 37), (40, 1)), r"run of 148 B from global \+0 to shared \+0 is not a 16-b"),
    (Layout((64, 6), (6, 1)), Layout((16, 6), (8, 1)), r"run of 24 B from global \+0 to shared \+0 is not a 16-byte"),
])
def test_runs_that_break_the_16_byte_rule_are_refused(array, tile, message):
    with pytest.raises(pc.PlanError, match=message):
        make_bulk_copy(pc.make_smem_tensor(pc.u32, tile), pc.make_global_tensor(pc.u32, array))


def test_a_tile_index_out_of_range_is_refused_by_the_stream():
    plan = make_bulk_copy(pc.make_smem_tensor(pc.f32, Layout((32, 32), (32, 1))),
                          pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1))))
    with pytest.raises(pc.PlanError, match=r"tile index 2 of mode 0 is outside \[0, 2\): a bulk copy checks no bounds"):
        plan.stream(0, 2, 0)


@pytest.mark.parametrize("direction", ["load", "store"])
def test_the_generated_code_issues_the_chunks(direction):
    g = pc.make_global_tensor(pc.f32, Layout((128, 96), (96, 1)))
    s = pc.make_smem_tensor(pc.f32, Layout((32, 32), (32, 1)))
    plan = make_bulk_copy(s, g) if direction == "load" else make_bulk_copy(g, s)
    call = "copy(g, smem, 8u, t0, t1)" if direction == "load" else "copy(g, smem, t0, t1)"
    cst = "const " if direction == "load" else ""
    source = plan.cuda("copy") + (f'extern "C" __global__ void probe({cst}void* g, unsigned smem, int t0, int t1) '
                                  f'{{ if (threadIdx.x == 0) {call}; }}')
    code = compile_cuda(source, arch="sm_90a")
    base = 0x7000_0000_0000
    got = trace_entry(code.ptx, {0: base, 1: 0x400, 2: 3, 3: 2}, {}, "probe").bulk
    want = plan.stream(0x400, 3, 2)
    rel = [(i.dst - (base if direction == "store" else 0), i.src - (base if direction == "load" else 0), i.size)
           for i in got]
    assert rel == [(i.dst, i.src, i.size) for i in want]
    opcode = {"load": "UBLKCP.S.G", "store": "UBLKCP.G.S"}[direction]
    for arch in ("sm_90a", "sm_100a"):
        assert sum(opcode in i for i in compile_cuda(source, arch=arch).instructions()) == len(plan.instructions)
