"""wgmma in whole-kernel runs (PTX ISA #asynchronous-warpgroup-level-matrix-instructions): an operation of the 4
warps of a warpgroup that completes at the ``wgmma.wait_group`` covering its group. Its D (and A) registers belong
to it until then: reading or writing them is reported naming the operation, as is a missing ``wgmma.fence``, a warp
that does not issue it, or a thread that exits without waiting; later wgmma chain through the accumulators. The
wgmma round trip (pycute/harness/wgmma.py) leaves what the emulator and the reference MMA say, and ``setmaxnreg``
takes registers from the CTA's pool the launch made (what ptxas allocated)."""
import numpy as np
import pytest

import pycute as pc
from pycute.compile import compile_cuda
from pycute.harness.wgmma import WGMMA_CASES
from pycute.mma.wgmma_fragment import wgmma_accumulator
from pycute.mma.wgmma_planner import make_wgmma
from pycute.interp import DeadlockError, WgmmaError, run_kernel

from tests.interp.ptxkit import entry

# m64n8k16 bf16 -> f32, both operands K-major without a swizzle, at the entry's shared tile (0x400: its first
# variable) and 2 KiB further: D is 4 f32 registers per thread
PLAN = make_wgmma(wgmma_accumulator(pc.f32, 64, 8), pc.kmajor_smem_tensor(pc.bf16, 64, 16, "none"),
                  pc.kmajor_smem_tensor(pc.bf16, 8, 16, "none"))
ISSUE = PLAN.stream(0x400, 0x400 + 2048)[0]
ONES = 0x3F803F80                                             # two bf16 1.0: every product is 1, every D element 16
FILL = f"""\t.shared .align 1024 .b8 tile[4096];
\tmov.u32 %r1, %tid.x;
\tshl.b32 %r2, %r1, 5;
\tmov.u32 %r3, tile;
\tadd.u32 %r2, %r2, %r3;
\tst.shared.v4.u32 [%r2], {{{ONES}, {ONES}, {ONES}, {ONES}}};
\tst.shared.v4.u32 [%r2+16], {{{ONES}, {ONES}, {ONES}, {ONES}}};
\tfence.proxy.async.shared::cta;
\tbar.sync 0;
\tmov.b64 %rd1, {ISSUE.a_desc};
\tmov.b64 %rd2, {ISSUE.b_desc};
\tsetp.ne.b32 %p1, %r1, %r1;
\tsetp.eq.b32 %p2, %r1, %r1;"""
MMA = f"\t{ISSUE.ptx} {{%f0, %f1, %f2, %f3}}, %rd1, %rd2, %p1, 1, 1, 0, 0;"
STORE = """\tmul.wide.u32 %rd3, %r1, 16;
\tadd.s64 %rd4, %out, %rd3;
\tst.global.v4.f32 [%rd4], {%f0, %f1, %f2, %f3};"""
FENCE, COMMIT = "\twgmma.fence.sync.aligned;", "\twgmma.commit_group.sync.aligned;"
WAIT = "\twgmma.wait_group.sync.aligned 0;"


def run(*lines: str, block: int = 128) -> np.ndarray:
    """Run the shared tile's fill and then ``lines``; each thread's 4 stored f32 words."""
    out = np.zeros(4 * block, dtype=np.uint32)
    run_kernel(entry("\n".join((FILL,) + lines)), block=block, args=[out])
    return out.view(np.float32).reshape(block, 4)


def test_an_operation_writes_d_when_the_wait_covers_its_group():
    assert np.all(run(FENCE, MMA, COMMIT, WAIT, STORE) == 16.0)


def test_a_second_operation_accumulates_through_the_first_ones_registers_in_flight():
    chained = MMA.replace("%p1", "%p2")
    assert np.all(run(FENCE, MMA, chained, COMMIT, WAIT, STORE) == 32.0)


def test_reading_d_before_the_wait_names_the_register_and_the_operation():
    with pytest.raises(WgmmaError, match=r"reads register %f2 while wgmma\.mma_async #1 of warpgroup 0 of CTA 0 \(PTX "
                                         r"line \d+[^)]*\) owns it: no wgmma\.wait_group has covered"):
        run(FENCE, MMA, COMMIT, "\tadd.f32 %f5, %f2, %f2;", WAIT, STORE)


def test_writing_d_before_the_wait_is_reported_at_the_wait():
    with pytest.raises(WgmmaError, match=r"PTX line \d+: 'wgmma\.wait_group\.sync\.aligned 0': CTA 0 thread \d+ "
                                         r"\(warp \d lane \d+\) wrote register %f1 while wgmma\.mma_async #1 of "
                                         r"warpgroup 0 of CTA 0 \(PTX line \d+\) owned it"):
        run(FENCE, MMA, COMMIT, "\tmov.f32 %f1, 0f3F800000;", WAIT, STORE)


def test_a_wait_leaves_the_most_recent_groups_pending():
    second = MMA.replace("{%f0, %f1, %f2, %f3}", "{%f4, %f5, %f6, %f7}")
    with pytest.raises(WgmmaError, match=r"reads register %f4 while wgmma\.mma_async #2 of warpgroup 0"):
        run(FENCE, MMA, COMMIT, second, COMMIT, "\twgmma.wait_group.sync.aligned 1;", "\tadd.f32 %f5, %f0, %f1;",
            "\tadd.f32 %f5, %f4, %f4;", WAIT, STORE)


@pytest.mark.parametrize("before,match", [
    ((), r"issues wgmma\.mma_async #1 .* on register %f0 with no wgmma\.fence before it"),
    ((FENCE, "\tmov.f32 %f3, 0f40000000;"), r"issues wgmma\.mma_async #1 .* on register %f3, which it changed after "
                                             r"its last wgmma\.fence")], ids=["no fence", "changed after the fence"])
def test_registers_a_thread_touched_without_a_fence_are_refused(before, match):
    with pytest.raises(WgmmaError, match=match):
        run(*before, MMA, COMMIT, WAIT, STORE)


def test_a_warp_that_does_not_issue_the_operation_leaves_the_others_waiting():
    skip = "\tsetp.ge.u32 %p3, %r1, 96;\n\t@%p3 bra SKIP;"
    with pytest.raises(DeadlockError, match=r"wgmma\.mma_async #1 of warpgroup 0 of CTA 0 \(PTX line \d+; warps 3 "
                                            r"have not issued it\): waited for \(wgmma\.wait_group\) by CTA 0 threads "
                                            r"0-95"):
        run(FENCE, skip, MMA, "SKIP:", COMMIT, WAIT, STORE)


def test_a_thread_that_exits_without_waiting_is_reported():
    with pytest.raises(WgmmaError, match=r"exits with wgmma\.mma_async #1 of warpgroup 0 of CTA 0 .* not waited for"):
        run(FENCE, MMA)


def test_lanes_giving_different_descriptors_are_refused():
    per_lane = ("\tcvt.u64.u32 %rd5, %r1;\n\tshl.b64 %rd5, %rd5, 4;\n\tand.b64 %rd5, %rd5, 16;\n"
                "\tadd.s64 %rd1, %rd1, %rd5;")
    with pytest.raises(WgmmaError, match=r"the lanes of warp 0 give different descriptors or scale-d"):
        run(per_lane, FENCE, MMA, COMMIT, WAIT, STORE)


# --- the wgmma round trip: one compile of a spread of the GPU matrix ---------------------------------------------
ROUND_TRIPS = [c for c in WGMMA_CASES if c.name in {
    "bf16xbf16->f32 m64n256k64 128B", "f16xf16->f16 m64n256k32 64B [acc]", "bf16xbf16->f32 m64n256k32 128B MN/MN [acc]",
    "tf32xtf32->f32 m64n24k16 32B", "f8e4m3xf8e4m3->f32 m64n128k128 128B [A regs, acc]",
    "bf16xbf16->f32 m128n128k64 128B", "bf16xbf16->f32 m64n256k64 128B [acc, staged]",
    "u8xi8->i32 m64n224k32 32B [acc]"}]


@pytest.fixture(scope="module")
def round_trips():
    source = "".join(c.roundtrip().source(f"case{i}", f"mma{i}") for i, c in enumerate(ROUND_TRIPS))
    return compile_cuda(source, arch="sm_90a")


@pytest.mark.parametrize("index", range(len(ROUND_TRIPS)), ids=[c.name for c in ROUND_TRIPS])
def test_the_wgmma_round_trip_leaves_the_emulators_registers(round_trips, index):
    rt = ROUND_TRIPS[index].roundtrip()
    out = np.zeros(rt.threads * rt.plan.d_registers, dtype=np.uint32)
    run_kernel(round_trips, f"case{index}", block=rt.threads, smem=rt.smem_bytes + 1024, args=[rt.input(0), out])
    got = out.reshape(rt.threads, -1)
    assert np.array_equal(got, rt.emulate(0)) and np.array_equal(rt.d_codes(got), rt.reference(0))


# --- setmaxnreg: the CTA's register pool ------------------------------------------------------------------------
def regs_kernel(producer: str, consumer: str) -> str:
    return f"""#include "pycute/wgmma.cuh"
extern "C" __global__ void __launch_bounds__(384, 1) regs(unsigned* out) {{
  if (threadIdx.x < 128) {producer}; else {consumer};
  out[threadIdx.x] = threadIdx.x;
}}"""


def run_regs(producer: str, consumer: str) -> np.ndarray:
    out = np.zeros(384, dtype=np.uint32)
    run_kernel(compile_cuda(regs_kernel(producer, consumer), arch="sm_90a"), block=384, args=[out])
    return out


def test_increases_the_decreases_pay_for_run():
    assert list(run_regs("pycute_setmaxnreg_dec<40>()", "pycute_setmaxnreg_inc<232>()")) == list(range(384))


def test_increases_past_the_pool_wait_forever_naming_it():
    # ptxas launches 168 registers per thread (384 threads, one CTA per SM); the producer frees 128 x 128
    with pytest.raises(DeadlockError, match=r"setmaxnreg\.inc 240 of warp \d+ of CTA 0 \(PTX line \d+\): the warp "
                                            r"holds 168 registers per thread and needs 2304 more, the CTA's pool has "
                                            r"\d+ free \(launched with 168 per thread\)"):
        run_regs("pycute_setmaxnreg_dec<40>()", "pycute_setmaxnreg_inc<240>()")


def test_an_increase_that_lowers_the_count_is_refused():
    with pytest.raises(pc.EmulationError, match=r"setmaxnreg\.inc 200 by warp 4 of CTA 0, which holds 232 registers "
                                                r"per thread: \.inc raises the count and \.dec lowers it"):
        run_regs("pycute_setmaxnreg_dec<40>()", "{ pycute_setmaxnreg_inc<232>(); pycute_setmaxnreg_inc<200>(); }")


def test_the_warps_of_a_warpgroup_execute_the_same_setmaxnreg():
    with pytest.raises(pc.EmulationError, match=r"the warps of warpgroup 1 of CTA 0 execute different setmaxnreg "
                                                r"sequences"):
        run_regs("pycute_setmaxnreg_dec<40>()", "if (threadIdx.x < 160) pycute_setmaxnreg_inc<232>()")


def test_a_count_outside_the_ptx_range_is_refused_before_the_run():
    with pytest.raises(pc.CompileError, match=r"setmaxnreg count 20: 24 to 256, a multiple of 8"):
        run_kernel(entry("\tsetmaxnreg.inc.sync.aligned.u32 20;"), block=128, args=[np.zeros(1, np.uint32)])


def test_the_sparse_form_is_refused_before_the_run():
    sparse = MMA.replace("wgmma.mma_async.sync", "wgmma.mma_async.sp.sync")
    with pytest.raises(pc.CompileError, match=r"the sparse wgmma\.mma_async\.sp is outside the interpreted subset"):
        run(FENCE, sparse, COMMIT, WAIT, STORE)
