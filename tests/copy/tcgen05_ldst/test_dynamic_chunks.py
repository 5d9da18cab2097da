"""A run-time column chunk of a TMEM tensor (the epilogue reading chunk c of the accumulator): one plan for every
value, each instruction moved by the chunk's columns in the stream and the generated code, emulated at the first
and last value; a lane step or a last chunk past the allocation is refused."""
import pytest

import pycute as pc
from pycute import Layout
from pycute.compile.nvrtc import compile_cuda
from pycute.interp.stream import trace_entry

ACC = pc.make_tmem_tensor(pc.f32, Layout((128, 32, 8), (pc.TLane, pc.TCol, 32 * pc.TCol)), columns=256)
CHUNK = ACC[:, :, pc.dynamic("chunk")]


@pytest.mark.parametrize("op", ["ld", "st"])
def test_one_plan_serves_every_chunk(op):
    plan = pc.make_tmem_copy(CHUNK, op=op)
    assert [(s.name, s.extent, s.columns) for s in plan.stages] == [("chunk", 8, 32)]
    assert plan.stream(0, 2, chunk=5) == [i._replace(taddr=i.taddr + 5 * 32) for i in plan.stream(0, 2, chunk=0)]
    assert plan.at(chunk=5).stream(0, 2) == plan.stream(0, 2, chunk=5)
    plan.verify()


def test_the_generated_function_takes_the_chunk_and_moves_every_address():
    plan = pc.make_tmem_copy(CHUNK)
    source = plan.cuda("epi") + ('extern "C" __global__ void probe(unsigned tmem_base, unsigned chunk, unsigned* out) '
                                 '{ unsigned r[32]; epi(tmem_base, r, chunk); out[threadIdx.x] = r[0]; }')
    ptx = compile_cuda(source, arch="sm_100a").ptx
    for warp, chunk in ((0, 0), (1, 3), (3, 7)):
        got = trace_entry(ptx, {0: 0x40, 1: chunk, 2: 0x7000_0000_0000}, {}, "probe", tid=32 * warp).ldst
        assert [(i.ptx, i.taddr) for i in got] == [(i.ptx, i.taddr) for i in plan.stream(0x40, warp, chunk=chunk)]


def test_a_run_time_lane_step_is_refused():
    t = pc.make_tmem_tensor(pc.f32, Layout((32, 32, 4), (pc.TLane, pc.TCol, 32 * pc.TLane)), columns=32)
    with pytest.raises(pc.PlanError, match="moves the tensor by 32@TLane; a tcgen05.ld/st plan takes run-time column"):
        pc.make_tmem_copy(t[:, :, pc.dynamic("q")])


def test_a_last_chunk_past_the_allocation_is_refused():
    short = pc.make_tmem_tensor(pc.f32, Layout((128, 32, 8), (pc.TLane, pc.TCol, 32 * pc.TCol)), columns=128)
    with pytest.raises(pc.PlanError, match="columns 224..255 run past its 128-column allocation"):
        pc.make_tmem_copy(short[:, :, pc.dynamic("chunk")])
