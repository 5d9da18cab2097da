"""Named CTA barriers with thread counts in whole-kernel runs (PTX ISA #parallel-synchronization-and-communication-
instructions-bar): ``bar.arrive id, n`` releases what the arriving threads wrote to the ``bar.sync id, n`` waiters
without waiting itself, phase after phase (the ping-pong consumers' turns); a missing wait is a race, a count no
arrivals reach a deadlock naming the barrier, arrivals disagreeing on the count an error."""
import numpy as np
import pytest

from pycute.errors import EmulationError
from pycute.interp import BarrierConflictError, DeadlockError, RaceError, ScheduleError, run_kernel

from tests.interp.ptxkit import entry

# warp 1 writes a word per lane into `data` and arrives on barrier 1; warp 0 waits there and copies it to out,
# ROUNDS times, alternating barriers 1 and 2 for the two directions (warp 0 hands each round back on barrier 2)
ROUNDS = 3
TURNS = """\t.shared .align 4 .b8 data[128];
\tmov.u32 %r1, %tid.x;
\tand.b32 %r2, %r1, 31;
\tshl.b32 %r3, %r2, 2;
\tmov.u32 %r4, data;
\tadd.u32 %r4, %r4, %r3;
\tmov.u32 %r10, 0;
LOOP:
\tsetp.lt.u32 %p1, %r1, 32;
\t@%p1 bra CONSUMER;
\tsetp.eq.u32 %p2, %r10, 0;
\t@!%p2 {wait_turn};
\tmad.lo.u32 %r5, %r10, 100, %r2;
\tst.shared.u32 [%r4], %r5;
\t{publish};
\tbra.uni NEXT;
CONSUMER:
\t{receive};
\tld.shared.u32 %r5, [%r4];
\tmul.wide.u32 %rd3, %r10, 128;
\tmul.wide.u32 %rd5, %r2, 4;
\tadd.s64 %rd3, %rd3, %rd5;
\tadd.s64 %rd4, %out, %rd3;
\tst.global.u32 [%rd4], %r5;
\tbar.arrive 2, 64;
NEXT:
\tadd.u32 %r10, %r10, 1;
\tsetp.lt.u32 %p3, %r10, {rounds};
\t@%p3 bra LOOP;
\tsetp.ge.u32 %p4, %r1, 32;
\t@%p4 bar.sync 2, 64;"""
RIGHT = dict(wait_turn="bar.sync 2, 64", publish="bar.arrive 1, 64", receive="bar.sync 1, 64", rounds=ROUNDS)


def run_turns(**edits: object) -> np.ndarray:
    out = np.zeros(ROUNDS * 32, dtype=np.uint32)
    run_kernel(entry(TURNS.format(**{**RIGHT, **edits})), block=64, args=[out])
    return out.reshape(ROUNDS, 32)


def test_arrivals_publish_each_round_to_the_waiting_warp():
    got = run_turns()
    assert np.array_equal(got, 100 * np.arange(ROUNDS)[:, None] + np.arange(32)[None, :])


def test_a_reader_that_does_not_wait_on_the_barrier_races_with_the_writer():
    with pytest.raises(RaceError, match=r"CTA 0 thread 0 \(warp 0 lane 0\) reads shared byte 0x400 of CTA 0 \(data\), "
                                        r"(last written by CTA 0 thread 32 .* without synchronising|which nothing has "
                                        r"written yet)"):
        run_turns(receive="membar.cta")


def test_a_count_the_arrivals_never_reach_is_a_deadlock_naming_the_barrier():
    with pytest.raises(DeadlockError, match=r"barrier 1 of CTA 0: 64 of 96 threads arrived: waited by CTA 0 threads "
                                            r"0-31"):
        run_turns(publish="bar.arrive 1, 96", receive="bar.sync 1, 96")


def test_arrivals_that_disagree_on_the_count_are_refused():
    with pytest.raises(EmulationError, match=r"barrier 1 of CTA 0: this arrival expects 64 threads, earlier ones 96"):
        run_turns(receive="bar.sync 1, 96")


# --- two groups of warps on one barrier id ---------------------------------------------------------------------------
# warps 0-1 and warps 2-3 each exchange a word through shared memory around `bar.sync 1, 64`: on the GPU the first
# 64 threads to arrive complete a phase, so warps of both pairs can meet there
PAIRS = """\t.shared .align 4 .b8 data[512];
\tmov.u32 %r1, %tid.x;
\tshl.b32 %r3, %r1, 2;
\tmov.u32 %r4, data;
\tadd.u32 %r5, %r4, %r3;
\tst.shared.u32 [%r5], %r1;
\tsetp.lt.u32 %p1, %r1, 64;
{between}
\txor.b32 %r6, %r3, 128;
\tadd.u32 %r7, %r4, %r6;
\tld.shared.u32 %r8, [%r7];
\tmul.wide.u32 %rd3, %r1, 4;
\tadd.s64 %rd4, %out, %rd3;
\tst.global.u32 [%rd4], %r8;"""
SHARED_ID = "\tbar.sync 1, 64;"
ORDERED = ("\t@!%p1 bra SKIP1;\n\tbar.sync 1, 64;\nSKIP1:\n\tbar.sync 0;\n\t@%p1 bra SKIP2;\n\tbar.sync 1, 64;\n"
           "SKIP2:")


def test_two_groups_sharing_a_barrier_id_unordered_are_a_conflict():
    out = np.zeros(128, np.uint32)
    with pytest.raises(BarrierConflictError, match=r"barrier 1 of CTA 0 with a count of 64 threads: warps 0, 1 and "
                                                   r"warps 2, 3 use it as two groups, and nothing orders the second "
                                                   r"group's arrivals after the first group's phase: their warps can "
                                                   r"mix \(.* PTX lines \d+\)"):
        run_kernel(entry(PAIRS.format(between=SHARED_ID)), block=128, args=[out])


def test_two_groups_ordered_by_a_cta_barrier_may_share_an_id():
    out = np.zeros(128, np.uint32)
    run_kernel(entry(PAIRS.format(between=ORDERED)), block=128, args=[out])
    assert np.array_equal(out, np.arange(128) ^ 32)


def test_a_phase_completed_by_warps_of_two_groups_is_a_conflict():
    # warps 0 and 1 meet on barrier 1, then warps 1 and 2: warp 2 arriving early would complete warp 1's first phase
    body = ("\tmov.u32 %r1, %tid.x;\n\tshr.u32 %r2, %r1, 5;\n\tsetp.eq.u32 %p1, %r2, 3;\n\t@%p1 bra DONE;\n"
            "\tsetp.eq.u32 %p2, %r2, 2;\n\t@%p2 bra SECOND;\n\tbar.sync 1, 64;\n\tsetp.eq.u32 %p3, %r2, 0;\n"
            "\t@%p3 bra DONE;\nSECOND:\n\tbar.sync 1, 64;\nDONE:")
    with pytest.raises(BarrierConflictError, match=r"barrier 1 of CTA 0 with a count of 64 threads: a phase completed "
                                                   r"by warps 1, 2 after one by warps 0, 1: the warps of two groups "
                                                   r"mix in one phase"):
        run_kernel(entry(body), block=128, args=[np.zeros(4, np.uint32)])


def test_schedules_find_an_outcome_the_thread_order_decides():
    # every thread exchanges its id into one word: the last one to run wins
    body = "\tmov.u32 %r1, %tid.x;\n\tatom.global.exch.b32 %r2, [%out], %r1;"
    out = np.zeros(1, np.uint32)
    run_kernel(entry(body), block=64, args=[out])
    assert out[0] == 63
    with pytest.raises(ScheduleError, match=r"the output depends on the order the threads run in: argument 0 differs "
                                            r"at byte 0x0 \(0x3f in thread order, 0x\w\w in schedule \d of 8, seed 5"):
        run_kernel(entry(body), block=64, args=[out], schedules=8, seed=5)
    assert out[0] == 63                                 # the arrays keep the thread order's result


def test_schedules_agree_on_a_kernel_whose_barriers_order_it():
    out = np.zeros(ROUNDS * 32, dtype=np.uint32)
    run_kernel(entry(TURNS.format(**RIGHT)), block=64, args=[out], schedules=6, seed=1)
    assert np.array_equal(out.reshape(ROUNDS, 32), 100 * np.arange(ROUNDS)[:, None] + np.arange(32)[None, :])
