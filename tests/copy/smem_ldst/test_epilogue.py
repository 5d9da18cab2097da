"""make_epilogue: registers -> (convert) -> swizzled shared -> proxy fence -> barrier -> TMA store, from plans
alone: emulated end to end against the layouts; its compiled code, interpreted for every thread (the stores with
their data, thread 0's TMA store), leaves the array the layouts say; the SASS holds the planned STSMs, the fence,
the barrier and one UTMASTG per box."""
import numpy as np
import pytest

import pycute as pc
from pycute import Layout
from pycute.compile.nvrtc import compile_cuda
from pycute.copy.smem_ldst import make_epilogue
from pycute.sim.emulator import Sm90Emulator
from pycute.interp.stream import trace_entry
from pycute.sim.verify_smem import expected_array
from pycute.tensor.values import smem_bytes_needed

from .cases import tmem32_layout, wgmma_layout
from .compiled import SEED, SMEM, fragment_value

ARRAY = pc.make_global_tensor(pc.bf16, Layout((256, 512), (512, 1)))


def hopper_epilogue(dtype=pc.bf16, swizzle="128B"):
    frag = pc.make_fragment(pc.f32, 128, wgmma_layout(128))
    return make_epilogue(frag, pc.kmajor_smem_tensor(dtype, 64, 128, swizzle),
                         pc.make_global_tensor(dtype, Layout((256, 512), (512, 1))))


@pytest.mark.parametrize("dtype,swizzle", [(pc.bf16, "128B"), (pc.f16, "64B"), (pc.f8e4m3, "128B"),
                                           (pc.f32, "32B")])
def test_the_epilogue_emulates_registers_to_global_memory_exactly(dtype, swizzle):
    hopper_epilogue(dtype, swizzle).verify()


def test_a_blackwell_tmem_fragment_epilogue_emulates_exactly():
    frag = pc.make_fragment(pc.f32, 128, tmem32_layout(32))
    make_epilogue(frag, pc.kmajor_smem_tensor(pc.bf16, 128, 32, "64B"), ARRAY).verify()


def test_a_ring_of_tiles_is_a_run_time_stage():
    ring = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, 64, 128, "128B"), 2)[:, :, pc.dynamic("stage")]
    plan = make_epilogue(pc.make_fragment(pc.f32, 128, wgmma_layout(128)), ring, ARRAY)
    plan.verify()
    assert "unsigned stage" in plan.cuda("epi")


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_the_wait_lets_the_rings_other_slots_stores_stay_in_flight(slots):
    tile = pc.kmajor_smem_tensor(pc.bf16, 64, 128, "128B")
    tile = pc.make_stages(tile, slots)[:, :, pc.dynamic("stage")] if slots > 1 else tile
    plan = make_epilogue(pc.make_fragment(pc.f32, 128, wgmma_layout(128)), tile, ARRAY)
    assert plan.in_flight == slots - 1
    assert f"pycute_bulk_wait_group_read<{slots - 1}>();" in plan.cuda("epi")


def test_the_drain_waits_for_every_store_before_the_tiles_bytes_are_given_back():
    # a tile that lives in a pipeline's stage (an attention kernel's O over its Q stage) is released only once the
    # stores have read it, whatever the ring lets stay in flight
    ring = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, 64, 128, "128B"), 2)[:, :, pc.dynamic("stage")]
    code = make_epilogue(pc.make_fragment(pc.f32, 128, wgmma_layout(128)), ring, ARRAY).cuda("epi")
    drain = code[code.index("void epi_drain(unsigned thread) {"):]
    assert "pycute_bulk_wait_group_read<0>();" in drain and "pycute_named_barrier_sync(1u, 128u);" in drain


def test_a_run_time_barrier_id_is_a_parameter_of_the_function_and_its_wait():
    # two consumer warpgroups run the same epilogue code, each on its own named barrier
    plan = make_epilogue(pc.make_fragment(pc.f32, 128, wgmma_layout(128)), pc.kmajor_smem_tensor(pc.bf16, 64, 128,
                                                                                                    "128B"),
                         ARRAY, barrier_id=pc.dynamic("bar"))
    code = plan.cuda("epi")
    assert "int c1, unsigned bar) {" in code and "void epi_wait(unsigned thread, unsigned bar)" in code
    assert code.count("pycute_named_barrier_sync(bar, 128u);") == 3
    assert "<bar, at run time>" in plan.explain()


def test_the_compiled_epilogue_interpreted_for_every_thread_leaves_the_array_the_layouts_say():
    plan = hopper_epilogue()
    source = plan.cuda("epi") + """
extern "C" __global__ void probe(unsigned smem, unsigned seed, const pycute_tensor_map* map, int m0, int n0) {
  float v[64];
  for (int i = 0; i < 64; ++i) v[i] = __uint_as_float(seed ^ (threadIdx.x * 2654435761u + i * 40503u));
  epi(map, smem, threadIdx.x, v, m0, n0);
  epi_wait(threadIdx.x);
}
"""
    code = compile_cuda(source, arch="sm_90a")
    origin = (64, 384)
    threads = [trace_entry(code.ptx, {0: SMEM, 1: SEED, 2: 0x1000, 3: origin[0], 4: origin[1]}, {}, "probe", tid=t)
               for t in range(plan.threads)]
    assert all([op for op, *_ in t.trace if isinstance(op, str) and op.startswith(("fence.proxy", "bar.sync"))] ==
               ["fence.proxy.async.shared::cta", "bar.sync", "bar.sync"] for t in threads)
    assert [len(t.tma) for t in threads] == [len(plan.tma.instructions)] + [0] * (plan.threads - 1)
    emu = Sm90Emulator(smem_bytes=smem_bytes_needed(plan.store.smem) + SMEM)
    for k, move in enumerate(plan.store.moves):
        for w in range(plan.store.warps):
            lanes = [threads[32 * w + lane].smem[k] for lane in range(32)]
            emu.smem_store(move.atom, np.array([i.address for i in lanes]), np.array([i.data for i in lanes]))
    gmem = np.random.default_rng(1).integers(0, 256, plan.tma.array_bytes, dtype=np.uint8)
    before = gmem.copy()
    for issue in threads[0].tma:
        emu.tma_store(plan.tma.tensor_map, gmem, issue.coords, issue.smem)
    t, v = np.meshgrid(np.arange(plan.threads), np.arange(plan.store.values), indexing="ij")
    frag = np.vectorize(fragment_value, otypes=[np.uint64])(t, v).astype(np.uint32)
    want = expected_array(plan, frag, before, origin)
    assert np.array_equal(gmem, want), f"{int((gmem != want).sum())} bytes differ"


def test_the_epilogue_sass_is_the_planned_stores_the_fence_the_barrier_and_the_boxes():
    plan = hopper_epilogue()
    source = plan.cuda("epi") + """
extern "C" __global__ void probe(const float* in, unsigned smem, const __grid_constant__ pycute_tensor_map map) {
  float v[64];
  for (int i = 0; i < 64; ++i) v[i] = in[i * 128 + threadIdx.x];
  epi(&map, smem, threadIdx.x, v, 0, 0);
}
"""
    ops = [i.split()[0] for i in compile_cuda(source, arch="sm_90a").instructions()]
    assert ops.count("STSM.16.M88.4") == len(plan.store.moves) == 8
    assert ops.count("FENCE.VIEW.ASYNC.S") == 1 and ops.count("BAR.SYNC.DEFER_BLOCKING") == 1
    assert sum(o.startswith("UTMASTG") for o in ops) == len(plan.tma.instructions)
    assert ops.index("FENCE.VIEW.ASYNC.S") > max(k for k, o in enumerate(ops) if o.startswith("STSM"))


def test_an_epilogue_whose_parts_disagree_is_refused_naming_what():
    frag = pc.make_fragment(pc.f32, 128, wgmma_layout(128))
    tile = pc.kmajor_smem_tensor(pc.bf16, 64, 128, "128B")
    with pytest.raises(pc.PlanError, match="the tile holds bf16 and the array f16"):
        make_epilogue(frag, tile, pc.make_global_tensor(pc.f16, Layout((256, 512), (512, 1))))
    with pytest.raises(pc.PlanError, match="named barriers 1-15"):
        make_epilogue(frag, tile, ARRAY, barrier_id=0)
    half = pc.make_fragment(pc.f32, 128, wgmma_layout(64))
    with pytest.raises(pc.PlanError, match="the fragment holds 4096 of the tile's 8192 elements"):
        make_epilogue(half, tile, ARRAY)
    with pytest.raises(pc.PlanError, match="origin coordinate 1 is 100: a TMA store of this tile starts at a "
                                           "multiple of its extent 128"):
        make_epilogue(frag, tile, ARRAY).tma_arguments((0, 100))
    with pytest.raises(TypeError, match="a register fragment, a shared tile and a global array"):
        make_epilogue(tile, frag, ARRAY)


def test_explain_walks_the_epilogue_step_by_step():
    text = hopper_epilogue().explain()
    for step in ("1. every thread of the 128", "2. fence.proxy.async.shared::cta", "3. bar.sync 1, 128",
                 "4. thread 0: TmaPlan(store", "cp.async.bulk.wait_group.read"):
        assert step in text
