"""Tile schedulers: the static persistent scheduler gives every tile to exactly one CTA, walks bands of
``swizzle`` block rows, keeps a cluster's CTAs on adjacent tiles, and its generated code computes what its model
says (run through the PTX interpreter); cluster launch control (sm_100a) compiles to UGETNEXTWORKID, is read back
by the interpreter, and its emulation gives every tile exactly once. Nothing here ran on a Blackwell GPU."""
import collections
import re

import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute.arch.sm100.clc import RESPONSE_FIELDS, TRY_CANCEL_MULTICAST_PTX, decode_response, encode_response
from pycute.codegen import read_conventions
from pycute.harness.schedule import ScheduleProbe
from pycute.pipeline import make_clc_scheduler, make_tile_scheduler
from pycute.sim.clc import run_clc_schedule
from pycute.interp.stream import trace_entry


def covered(schedule):
    return collections.Counter(t for tiles in schedule.values() for t in tiles if t is not None)


@settings(max_examples=60, deadline=None)
@given(tm=st.integers(1, 20), tn=st.integers(1, 20), cm=st.sampled_from([1, 2]), cn=st.sampled_from([1, 2]),
       swizzle=st.integers(1, 6), raster=st.sampled_from(["m", "n"]), sms=st.integers(4, 40),
       occupancy=st.integers(1, 2))
def test_every_tile_is_computed_by_exactly_one_cta(tm, tn, cm, cn, swizzle, raster, sms, occupancy):
    sched = make_tile_scheduler((tm, tn), cluster=(cm, cn), swizzle=swizzle, raster=raster)
    grid = sched.grid(sms, occupancy)
    counts = covered(sched.schedule(grid))
    assert set(counts) == {(m, n) for m in range(tm) for n in range(tn)} and set(counts.values()) == {1}
    assert grid % (cm * cn) == 0 and grid <= sms * occupancy


@settings(max_examples=40, deadline=None)
@given(tm=st.integers(1, 24), tn=st.integers(1, 24), swizzle=st.integers(1, 8), raster=st.sampled_from(["m", "n"]))
def test_consecutive_work_units_walk_a_band_of_swizzle_rows(tm, tn, swizzle, raster):
    sched = make_tile_scheduler((tm, tn), swizzle=swizzle, raster=raster)
    major = tm if raster == "m" else tn
    minor = tn if raster == "m" else tm
    for unit in range(sched.units):
        along = sched.block(unit)[0 if raster == "m" else 1]
        band = unit // (swizzle * minor)
        assert band * swizzle <= along < min((band + 1) * swizzle, major)     # the band's rows, in unit order
    assert [sched.block(u) for u in range(min(3, sched.units))][:1] == [(0, 0)]


def test_a_band_is_walked_down_its_rows_then_across():
    sched = make_tile_scheduler((4, 3), swizzle=2)
    assert [sched.block(u) for u in range(sched.units)] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
                                                            (2, 0), (3, 0), (2, 1), (3, 1), (2, 2), (3, 2)]


def test_a_clusters_ctas_take_adjacent_tiles_of_one_block():
    sched = make_tile_scheduler((4, 6), cluster=(2, 2), swizzle=1)
    assert [sched.tile(0, r) for r in range(4)] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert sched.tiles_of(5, 8) == [sched.tile(1, 1), sched.tile(3, 1), sched.tile(5, 1)]   # cluster 1, rank 1


def test_an_edge_blocks_tiles_outside_the_output_are_none():
    sched = make_tile_scheduler((3, 2), cluster=(2, 1))
    assert sched.blocks == (2, 2) and [sched.tile(u, 1) for u in range(sched.units)] == [(1, 0), (1, 1), None, None]


def test_the_grid_is_whole_clusters_and_no_more_than_the_work():
    sched = make_tile_scheduler((8, 8), cluster=(1, 2))
    assert sched.grid(132, 1) == 64 and sched.grid(13, 2) == 26 and make_tile_scheduler((64, 64)).grid(132, 2) == 264


@pytest.mark.parametrize("build, message", [
    (lambda: make_tile_scheduler((0, 4)), r"tiles \(0, 4\): at least one along each mode"),
    (lambda: make_tile_scheduler((4, 4), cluster=(4, 8)), "a cluster of at most 16 CTAs"),
    (lambda: make_tile_scheduler((4, 4), swizzle=0), "swizzle=0: a band is at least one block row"),
    (lambda: make_tile_scheduler((4, 4), raster="k"), "raster='k'"),
    (lambda: make_tile_scheduler((4, 4), name="two words"), "is not a C identifier"),
    (lambda: make_tile_scheduler((4, 4), cluster=(2, 1)).grid(1, 1), r"1 x 1 CTAs hold no whole cluster of 2"),
    (lambda: make_tile_scheduler((4, 4)).block(16), r"work unit 16 is outside \[0, 16\)"),
    (lambda: make_clc_scheduler((4, 4), arch="sm_90a"), "cluster launch control exists on sm_100a"),
])
def test_bad_scheduler_input_is_refused(build, message):
    with pytest.raises(pc.PlanError, match=message):
        build()


@pytest.fixture(scope="module")
def probe():
    sched = make_tile_scheduler((13, 9), cluster=(1, 2), swizzle=3)
    return sched, ScheduleProbe(sched).compile("sm_90a")


@pytest.mark.parametrize("cta", range(6))
def test_the_generated_walk_interpreted_is_the_models(probe, cta):
    sched, compiled = probe
    grid = 6
    thread = trace_entry(compiled.ptx, {0: 0}, {}, "schedule_probe", tid=0, max_steps=200_000,
                         specials={"%ctaid.x": cta, "%nctaid.x": grid, "%cluster_ctarank": cta % 2})
    stores = [s for s in thread.trace if str(s[0]).startswith("st.")]
    assert [thread.regs[s[1][1]] for s in stores] == [int(v) for v in ScheduleProbe(sched).expected(grid)[cta]]


@pytest.fixture(scope="module")
def runtime_probe():
    sched = make_tile_scheduler(None, cluster=(2, 1), swizzle=3)
    return sched, ScheduleProbe(sched).compile("sm_90a")


@pytest.mark.parametrize("tiles", [(13, 9), (5, 2), (1, 7)])
@pytest.mark.parametrize("cta", [0, 3])
def test_one_kernel_of_a_run_time_scheduler_walks_any_problem_as_its_model(runtime_probe, tiles, cta):
    sched, compiled = runtime_probe
    grid = 4
    thread = trace_entry(compiled.ptx, {0: 0, 1: tiles[0], 2: tiles[1]}, {}, "schedule_probe", tid=0, max_steps=200_000,
                         specials={"%ctaid.x": cta, "%nctaid.x": grid, "%cluster_ctarank": cta % 2})
    stores = [s for s in thread.trace if str(s[0]).startswith("st.")]
    want = ScheduleProbe(sched, tiles).expected(grid)[cta]
    assert [thread.regs[s[1][1]] for s in stores] == [int(v) for v in want]


def test_a_run_time_scheduler_is_modelled_at_a_problem_and_refuses_without_one():
    sched = make_tile_scheduler(None, cluster=(2, 1), swizzle=2)
    assert sched.at((4, 3)).schedule(4) == make_tile_scheduler((4, 3), cluster=(2, 1), swizzle=2).schedule(4)
    with pytest.raises(pc.PlanError, match=r"run-time arguments; model a problem with \.at\(tiles="):
        sched.grid(132)
    assert "tiles_m x tiles_n (run-time arguments)" in sched.explain()
    with pytest.raises(pc.PlanError, match="cluster per work unit"):
        make_clc_scheduler(None)


def test_the_generated_walk_divides_only_by_constants(probe):
    _, compiled = probe
    assert not any(op.startswith(("LDL", "STL")) for op in compiled.histogram())


# ---- cluster launch control (sm_100a) ------------------------------------------------------------------------

CLC_KERNEL = r"""
extern "C" __global__ void __launch_bounds__(64)CLUSTER clc_probe(long long* out) {
  __shared__ __align__(16) unsigned char response[clc_response_bytes];
  __shared__ __align__(8) unsigned long long bar;
  const unsigned r = pycute_smem_address(response), b = pycute_smem_address(&bar);
  if (threadIdx.x == 0) clc_init(b);
  pycute_cluster_sync();
  clc_state st = clc_start();
  unsigned work = clc_first();
  long long hash = 0;
  for (;;) {
    pycute_tile t;
    if (clc_tile(work, t)) hash = hash * 1000003 + t.m * 65536 + t.n + 1;
    if (threadIdx.x == 0) clc_request(r, b);
    const bool more = clc_answer(r, b, st, work);
    __syncthreads();
    if (!more) break;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = hash;
}
"""


@pytest.fixture(scope="module", params=[(1, 1), (2, 1)], ids=["one CTA", "cluster of 2"])
def clc(request):
    sched = make_clc_scheduler((6, 5), cluster=request.param, swizzle=2)
    cs = sched.cluster_size
    src = sched.cuda() + CLC_KERNEL.replace("CLUSTER", f" __cluster_dims__({cs}, 1, 1)" if cs > 1 else "")
    return sched, pc.compile.compile_cuda(src, arch="sm_100a")


def test_try_cancel_compiles_to_one_ugetnextworkid_and_no_local_memory(clc):
    sched, compiled = clc
    h = compiled.histogram()
    assert h == {**h, ("UGETNEXTWORKID.BROADCAST" if sched.multicast else "UGETNEXTWORKID.SELFCAST"): 1}
    assert not any(op.startswith(("LDL", "STL")) for op in h)


def test_the_interpreter_reads_the_request_back_and_a_failed_answer_ends_the_walk(clc):
    sched, compiled = clc
    thread = trace_entry(compiled.ptx, {0: 0}, {"response": 0x100, "bar": 0x200}, "clc_probe", tid=0,
                         specials={"%ctaid.x": 2 * sched.cluster_size, "%cluster_ctarank": 0})
    assert [(i.response, i.mbar) for i in thread.clc] == [(0x100, 0x200)]
    assert thread.clc[0].ptx.endswith(".multicast::cluster::all.b128") == sched.multicast
    armed = [t for t in thread.trace if str(t[0]).startswith("mbarrier.arrive.expect_tx")]
    assert armed and armed[0][1][2] == 16                     # the response's 16 bytes
    stores = [s for s in thread.trace if str(s[0]).startswith("st.")]
    m, n = sched.tile(2, 0)                                   # its own unit only: the response said no cluster left
    assert thread.regs[stores[-1][1][1]] == m * 65536 + n + 1


@pytest.mark.parametrize("resident, seed", [(1, 0), (3, 1), (7, 2), (40, 3)])
def test_the_emulated_launch_queue_gives_every_tile_exactly_once(clc, resident, seed):
    sched, _ = clc
    counts = covered(run_clc_schedule(sched, resident, seed))
    assert set(counts) == {(m, n) for m in range(6) for n in range(5)} and set(counts.values()) == {1}


def test_a_response_round_trips_through_the_encoding():
    assert decode_response(encode_response(True, (12, 3, 1))) == (True, (12, 3, 1))
    assert decode_response(encode_response(False))[0] is False
    with pytest.raises(pc.EmulationError, match="y = 70000 does not fit 16 bits"):
        encode_response(True, (0, 70000, 0))


def test_ptxas_decodes_the_response_with_the_fields_pycute_encodes():
    # the queries on a response assembled from two 64-bit halves: ptxas's SASS is the decode (no Blackwell GPU ran it)
    src = r"""
extern "C" __global__ void q(unsigned long long lo, unsigned long long hi, unsigned* out) {
  unsigned ok, x, y, z;
  asm volatile("{\n\t.reg .b128 r;\n\t.reg .pred p;\n\tmov.b128 r, {%4, %5};\n\t"
               "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, r;\n\tselp.u32 %0, 1, 0, p;\n\t"
               "clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {%1, %2, %3, _}, r;\n\t}"
               : "=r"(ok), "=r"(x), "=r"(y), "=r"(z) : "l"(lo), "l"(hi));
  out[0] = ok; out[1] = x; out[2] = y; out[3] = z;
}
"""
    sass = "\n".join(pc.compile.compile_cuda(src, arch="sm_100a").instructions())
    fields = {f.name: f for f in RESPONSE_FIELDS}
    assert fields["is_canceled"].lo == 64 and re.search(r"LOP3\.LUT P\d, RZ, R\d+, 0x1, RZ", sass)   # bit 0 of word 2
    assert fields["y"].width == 16 and re.search(r"LOP3\.LUT R\d+, R\d+, 0xffff, RZ", sass)          # word 1 low half
    assert fields["z"].lo == 48 and re.search(r"SHF\.R\.U32\.HI R\d+, RZ, 0x10, R\d+", sass)         # word 1 high half


def test_the_clc_scheduler_explains_its_protocol():
    text = make_clc_scheduler((8, 8), cluster=(2, 1)).explain()
    assert "a 2-CTA cluster launched per unit (64 CTAs)" in text and TRY_CANCEL_MULTICAST_PTX.split(".")[1] in text


@pytest.mark.parametrize("tiles, args", [((13, 9), ""), (None, ", tiles_m, tiles_n")], ids=["static", "run-time"])
def test_the_tile_as_a_value_is_the_tile_functions(tiles, args):
    code = make_tile_scheduler(tiles, cluster=(2, 1)).cuda()
    start = code.index("sched_at(")
    body = code[start:code.index("\n}", start)]
    assert f"sched_tile(work, tile{args});" in body and "return tile;" in body
    assert read_conventions(code)["sched_at"] == read_conventions(code)["sched_tile"]
