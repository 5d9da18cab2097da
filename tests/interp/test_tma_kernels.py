"""TMA beyond tile-mode copies in whole-kernel runs: maps retargeted on the device (tensormap.replace, cp_fenceproxy,
fence.proxy.tensormap: the grouped-GEMM example), multicast to any CTA mask, L2 cache policies (createpolicy and
``.L2::cache_hint``), im2col (sm_90) and gather4 / scatter4 (sm_100a); cluster launch control with clusters held
back from launching; and the GEMM feed stream (pycute/harness/stream_feed.py). Each leaves what the emulator or the
plans' model says."""
import numpy as np
import pytest

import pycute as pc
from examples.grouped_tma import SMEM, TILE_BYTES, GroupedTma, Work
from pycute import ComposedLayout, Layout, Swizzle
from pycute.compile import compile_cuda
from pycute.errors import EmulationError
from pycute.harness.common import BUFFER_AND_BARRIER
from pycute.harness.im2col import Im2colRoundTrip
from pycute.harness.stream_feed import ALIGN_SLACK, FeedProblem, FeedStream, expected_checksum
from pycute.harness.tma import TmaRoundTrip
from pycute.pipeline import Consumer, make_clc_scheduler
from pycute.interp import RaceError, run_kernel, tensor_map
from pycute.sim.emulator import Sm100Emulator
from pycute.sim.verify_tma_modes import activations

from tests.copy.tma.cases_boxes import HINTS, MULTICAST
from tests.copy.tma.cases_im2col import IM2COL, activations as activations_of


# --- tensor maps retargeted on the device -------------------------------------------------------------------------
def run_grouped(example: GroupedTma, kernel, work) -> tuple:
    a, c = example.arrays(0)
    items = np.array([[w.row0, w.rows, w.i, w.j] for w in work], np.int32).reshape(-1)
    one, group = (np.zeros(len(work) * TILE_BYTES, np.uint8) for _ in range(2))
    run_kernel(kernel, "grouped", grid=len(work), block=128, smem=SMEM + 1024,
               args=[tensor_map(example.load, a), tensor_map(example.store, c), np.zeros(len(work) * 256, np.uint8),
                     a, c, items, one, group])
    return a, c, one.reshape(len(work), -1), group.reshape(len(work), -1)


def test_the_grouped_example_retargets_its_maps_per_group_on_the_device():
    example = GroupedTma()
    work = example.work()
    a, c, one, group = run_grouped(example, example.compile(), work)
    for k, w in enumerate(work):
        assert np.array_equal(one[k], example.expected(a, w, False)) and \
            np.array_equal(group[k], example.expected(a, w, True)), w
    assert np.array_equal(c, example.expected_c(a))


def test_a_copy_through_a_republished_map_without_the_acquire_fence_is_refused():
    example = GroupedTma()
    source = example.source()
    assert "pycute_tensormap_acquire_gpu(&ws[0]);" in source
    kernel = compile_cuda(source.replace("pycute_tensormap_acquire_gpu(&ws[0]);", ""), arch="sm_90a")
    with pytest.raises(EmulationError, match=r"copies through the tensor map at 0x\w+ \(workspace\+0x0\), which "
                                             r"CTA 0 thread 0 \(warp 0 lane 0\) published with "
                                             r"tensormap\.cp_fenceproxy \(PTX line \d+\), without a "
                                             r"fence\.proxy\.tensormap::generic\.acquire of it since"):
        run_grouped(example, kernel, example.work()[:1])


def _cross_warp(barrier: str) -> str:
    """The grouped example with warp 0 retargeting the maps and warp 1 acquiring them and copying through them,
    ``barrier`` between the two."""
    source = GroupedTma().source()
    issue = "    if (pycute_elect_one_sync()) {\n      pycute_tensormap_acquire(a_map);"
    assert issue in source and "  if (warp == 0 && pycute_elect_one_sync()) {\n    store_c(" in source
    source = source.replace(issue, f"  }}\n  {barrier}\n  if (warp == 1) {{\n" + issue)
    return source.replace("  if (warp == 0 && pycute_elect_one_sync()) {\n    store_c(",
                          "  if (warp == 1 && pycute_elect_one_sync()) {\n    store_c(")


def test_a_map_retargeted_by_one_warp_is_used_by_another_after_a_cta_barrier():
    example = GroupedTma()
    work = example.work()[:2]
    a, c, one, group = run_grouped(example, compile_cuda(_cross_warp("__syncthreads();"), arch="sm_90a"), work)
    for k, w in enumerate(work):
        assert np.array_equal(group[k], example.expected(a, w, True)), w


def test_a_map_used_by_another_warp_without_the_cta_barrier_names_the_missing_barrier():
    # a delay instead of the barrier: in this run warp 0 publishes first, but nothing orders warp 1 after it
    kernel = compile_cuda(_cross_warp("for (int s = 0; s < 64; ++s) __nanosleep(100);"), arch="sm_90a")
    with pytest.raises(EmulationError, match=r"CTA 0 thread 32 \(warp 1 lane 0\) copies through the tensor map at "
                                             r"0x\w+ \(workspace\+0x0\), which CTA 0 thread 0 \(warp 0 lane 0\) "
                                             r"published with tensormap\.cp_fenceproxy \(PTX line \d+\), but no "
                                             r"synchronisation orders this thread after that publish: the CTA barrier "
                                             r"\(bar\.sync / __syncthreads\(\)\) between the publishing warp's "
                                             r"cp_fenceproxy and this thread's acquire is missing; its "
                                             r"fence\.proxy\.tensormap::generic\.acquire \(PTX line \d+\) is not "
                                             r"ordered after it"):
        run_grouped(GroupedTma(), kernel, GroupedTma().work()[:1])


def test_the_checked_retarget_says_which_precondition_a_warp_broke():
    # every lane of warp 0 finds rows = 0: a warp vote, the lowest lane prints, the warp meets, then it traps -- the
    # message comes out on the CPU (and on the GPU: no lane traps before it is printed)
    example = GroupedTma()
    bad = [Work(0, 0, 0, 0)]
    with pytest.raises(EmulationError, match=r"executed 'trap' .* the kernel traps; it printed before: pycute: "
                                             r"retarget_a: rows = 0 breaks rows >= 1: a tensor-map dimension has at "
                                             r"least one element"):
        run_grouped(example, example.compile(checked=True), bad)


def test_a_trap_reports_what_an_elected_lane_printed_even_when_a_sibling_traps_first():
    source = r"""
extern "C" __global__ void guarded(const int* v) {
  unsigned elected;
  asm volatile("{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(elected));
  if (v[0] < 0) {
    if (!elected) __trap();                  // a sibling lane reaches its trap first
    printf("reason: v = %d\n", v[0]);
    __trap();
  }
}
"""
    with pytest.raises(EmulationError, match=r"the kernel traps; it printed before: reason: v = -5"):
        run_kernel(compile_cuda(source, arch="sm_90a"), "guarded", block=32, args=[np.array([-5], np.int32)])


# --- multicast masks and cache policies -----------------------------------------------------------------------------
def box_case(name):
    name, g, s, tiles, store, options = next(c for c in MULTICAST + HINTS if c[0] == name)
    load = pc.make_tma_copy(s, g, **options)
    back = pc.make_tma_copy(g, s, **{k: v for k, v in options.items() if k != "multicast"}) if store else None
    return TmaRoundTrip(load, back), load, back, tiles[-1]


@pytest.mark.parametrize("name", ["bf16-2x2-mask-0b0110", "bf16-4x1-mask-0b1101", "bf16-cache-hint-fractional",
                                  "bf16-multicast-with-cache-hint"])
def test_multicast_masks_and_cache_policies_move_the_emulators_bytes(name):
    rt, load, back, tile = box_case(name)
    a, b = rt.arrays(0)
    dump, status = np.zeros(rt.ctas * rt.smem_bytes, np.uint8), np.zeros(rt.ctas, np.uint32)
    run_kernel(rt.compile(), grid=rt.cluster, block=128, cluster=rt.cluster, smem=rt.smem_bytes + 1024,
               args=[tensor_map(load, a), tensor_map(back or load, b), dump, status, *tile])
    image, array = rt.emulate(tile, 0)
    assert np.array_equal(dump, image) and (back is None or np.array_equal(b, array))


# --- im2col (sm_90) and gather4 / scatter4 (sm_100a) ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bf16-3x3-pad1-128B", "f32-3d-conv"])
def test_an_im2col_load_leaves_the_emulators_tile(name):
    _, act, tile, conv, tiles = next(c for c in IM2COL if c[0] == name)
    plan = pc.make_im2col_copy(tile, act, conv)
    rt = Im2colRoundTrip(plan)
    gmem, _ = activations(plan, np.random.default_rng(0))
    m, k = tiles[-1]
    dump = np.zeros(rt.smem_bytes, np.uint8)
    run_kernel(rt.compile(), block=128, smem=rt.smem_bytes + 1024,
               args=[tensor_map(plan, gmem), dump, np.zeros(1, np.uint32), m, k])
    assert np.array_equal(dump, rt.emulate(gmem, m, k))


GATHER_ARRAY = pc.make_global_tensor(pc.f32, Layout((100, 64), (64, 1)))
GATHER_TILE = pc.make_smem_tensor(pc.f32, ComposedLayout(Swizzle(3, 2, 3), 0, Layout((4, 32), (32, 1))))


def test_gather4_and_scatter4_move_the_four_named_rows():
    gather, scatter = pc.make_tma_gather4(GATHER_TILE, GATHER_ARRAY), pc.make_tma_gather4(GATHER_ARRAY, GATHER_TILE)
    source = gather.cuda("fg") + scatter.cuda("fs").replace('#include "pycute/tma.cuh"\n', "") + """
extern "C" __global__ void rows(const pycute_tensor_map* in, const pycute_tensor_map* out, unsigned char* dump) {
""" + BUFFER_AND_BARRIER + """
  if (threadIdx.x == 0) {
    pycute_mbarrier_init(m, 1);
    pycute_mbarrier_arrive_expect_tx(m, fg_expect_tx);
    fg(in, base, m, 32, 7, 99, 0, 42);
  }
  pycute_mbarrier_wait_parity(m, 0);
  for (unsigned i = threadIdx.x; i < 512u; i += blockDim.x) dump[i] = buf[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    fs(out, base, 0, 3, 50, 1, 98);
    pycute_bulk_wait_group<0>();
  }
}
"""
    x = np.random.default_rng(0).integers(0, 1 << 32, 100 * 64, dtype=np.uint64).astype(np.uint32)
    y, dump = np.zeros_like(x), np.zeros(512, np.uint8)
    run_kernel(compile_cuda(source, arch="sm_100a"), block=64, smem=2048,
               args=[tensor_map(gather, x), tensor_map(scatter, y), dump])
    emu, want = Sm100Emulator(smem_bytes=1024), np.zeros_like(x)
    emu.tma_gather4(gather.tensor_map, x.view(np.uint8), (32, 7, 99, 0, 42), 0)
    emu.tma_scatter4(scatter.tensor_map, want.view(np.uint8), (0, 3, 50, 1, 98), 0)
    assert np.array_equal(dump, emu.ctas[0].smem[:512]) and np.array_equal(y, want)


W_CONV = pc.ConvProblem(2, (5, 150), 64, (3, 3), padding=1)


@pytest.mark.parametrize("mode,rows,halo,offset", [("w", 136, 8, 0), ("w128", 160, 8, 1)])
def test_an_im2col_w_load_leaves_the_emulators_rows(mode, rows, halo, offset):
    act = activations_of(pc.bf16, W_CONV)
    plan = pc.make_im2col_w_copy(pc.kmajor_smem_tensor(pc.bf16, rows, 64, "128B"), act, W_CONV, mode, halo, offset)
    source = plan.cuda("fw") + """
extern "C" __global__ void wide(const pycute_tensor_map* map, unsigned char* dump, int w, int h, int n) {
""" + BUFFER_AND_BARRIER + """
  if (threadIdx.x == 0) {
    pycute_mbarrier_init(m, 1);
    pycute_mbarrier_arrive_expect_tx(m, fw_expect_tx);
    fw(map, base, m, 0, w, h, n);
  }
  pycute_mbarrier_wait_parity(m, 0);
  for (unsigned i = threadIdx.x; i < fw_expect_tx; i += blockDim.x) dump[i] = buf[i];
}
"""
    x = np.random.default_rng(0).integers(0, 256, 2 * 5 * 150 * 64 * 2, dtype=np.uint8)
    dump = np.zeros(plan.expect_tx, np.uint8)
    run_kernel(compile_cuda(source, arch="sm_100a"), block=64, smem=plan.expect_tx + 2048,
               args=[tensor_map(plan, x), dump, -1, 2, 1])
    emu = Sm100Emulator(smem_bytes=plan.expect_tx + 1024)
    (issue,) = plan.stream(0, 0, -1, 2, 1)
    emu.tma_load_im2col_w(plan.tensor_map, x, issue.coords, issue.im2col, issue.smem)
    assert np.array_equal(dump, emu.ctas[0].smem[:plan.expect_tx])


# --- cluster launch control (sm_100a) ------------------------------------------------------------------------------
CLC_WALK = r"""
extern "C" __global__ void __launch_bounds__(64)CLUSTER clc_walk(int* out) {
  __shared__ __align__(16) unsigned char response[clc_response_bytes];
  __shared__ __align__(8) unsigned long long bar;
  const unsigned r = pycute_smem_address(response), b = pycute_smem_address(&bar);
  if (threadIdx.x == 0) clc_init(b);
  pycute_cluster_sync();
  clc_state st = clc_start();
  unsigned work = clc_first();
  int count = 0;
  for (;;) {
    pycute_tile t;
    if (clc_tile(work, t) && threadIdx.x == 0) out[blockIdx.x * 32 + 1 + count] = t.m * 65536 + t.n;
    ++count;
    if (threadIdx.x == 0) clc_request(r, b);
    const bool more = clc_answer(r, b, st, work);
    SYNC;
    if (!more) break;
  }
  if (threadIdx.x == 0) out[blockIdx.x * 32] = count;
}
"""


def clc_kernel(cluster: tuple[int, int], sync: str):
    sched = make_clc_scheduler((6, 5), cluster=cluster, swizzle=2)
    dims = f" __cluster_dims__({sched.cluster_size}, 1, 1)" if sched.cluster_size > 1 else ""
    return sched, compile_cuda(sched.cuda() + CLC_WALK.replace("CLUSTER", dims).replace("SYNC", sync), arch="sm_100a")


@pytest.fixture(scope="module", params=[(1, 1), (2, 1)], ids=["one CTA", "cluster of 2"])
def clc(request):
    return clc_kernel(request.param, "pycute_cluster_sync()")


@pytest.mark.parametrize("resident", [1, 3, None])
def test_cancelled_clusters_are_computed_by_the_running_ones_each_tile_once(clc, resident):
    sched, kernel = clc
    out = np.full(sched.grid * 32, -1, np.int32)
    run_kernel(kernel, "clc_walk", grid=sched.grid, block=64, args=[out], resident=resident)
    walks = out.reshape(sched.grid, 32)
    tiles = sorted(int(v) for row in walks for v in row[1:] if v >= 0)
    assert tiles == sorted(m * 65536 + n for m in range(6) for n in range(5))
    launched = sched.grid if resident is None else resident * sched.cluster_size
    assert list(walks[:, 0] >= 0) == [True] * launched + [False] * (sched.grid - launched)


def test_a_cluster_request_before_every_ctas_readers_are_done_overwrites_their_response():
    sched, kernel = clc_kernel((2, 1), "__syncthreads()")
    with pytest.raises(RaceError, match=r"clusterlaunchcontrol\.try_cancel response issued by CTA 0 thread 0 .* "
                                        r"overwrites shared byte 0x\w+ of CTA 1 \(response\)"):
        run_kernel(kernel, "clc_walk", grid=sched.grid, block=64, args=[np.zeros(sched.grid * 32, np.int32)],
                   resident=1)


# --- the GEMM feed stream -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("config", [dict(), dict(multicast=2, consumer=Consumer("warpgroup", 2)),
                                    dict(stages=2, consumer=Consumer("warp", 2))],
                         ids=["one warp", "multicast, two warpgroups", "two stages, two warps"])
def test_the_feed_stream_delivers_every_stage_of_every_tile(config):
    feed = FeedStream.gemm(pc.bf16, 256, 256, 256, (128, 64, 64), **config)
    a, b = feed.problem.arrays(0)
    loads = feed.problem.loads(feed.multicast)
    checksum = np.zeros(1, np.uint64)
    run_kernel(feed.compile(), "feed_stream", grid=2 * feed.cluster, block=32 * feed.warps,
               smem=feed.pipeline.smem_bytes + ALIGN_SLACK,
               args=[tensor_map(loads["a"], a), tensor_map(loads["b"], b), checksum, 1])
    assert int(checksum[0]) == expected_checksum(feed.problem, a, b)


def test_the_feed_stream_walks_its_raster_with_its_l2_options():
    """A raster along N in bands of two, every box under an evict_last policy and 256-byte L2 promotion: still every
    stage of every tile, checked by the emulator running the createpolicy and .L2::cache_hint forms."""
    problem = FeedProblem(pc.bf16, 256, 384, 128, (128, 64, 64), swizzle=2, raster="n", cache_hint="evict_last",
                          l2_promotion="256B")
    feed = FeedStream(problem, stages=2)
    a, b = problem.arrays(1)
    loads = problem.loads(None)
    checksum = np.zeros(1, np.uint64)
    run_kernel(feed.compile(), "feed_stream", grid=3, block=32 * feed.warps,
               smem=feed.pipeline.smem_bytes + ALIGN_SLACK,
               args=[tensor_map(loads["a"], a), tensor_map(loads["b"], b), checksum, 1])
    assert int(checksum[0]) == expected_checksum(problem, a, b)
