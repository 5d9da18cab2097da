"""Compile, in parallel, the kernels the timed H200 sweeps launch (the Hopper GEMM's variants, the epilogue stream's
and the pipeline feed's configurations) into pycute's compile cache, so that a timed run spends its minutes timing
and not in NVRTC (the device machine has 16 cores; the sweeps compile one kernel at a time).

    PYTHONPATH=. python3 tools/prebuild_h200.py [--jobs 12] [--only rate,feed,gemm,epilogue]

Prints how many kernels compiled and how long it took; a kernel that fails to compile is named (the sweep that
launches it will report it again)."""
from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _gemm(i: int) -> str:
    from examples.hopper_gemm import HopperGemm, candidates
    variants = candidates() + candidates("e4m3") + [
        HopperGemm(cluster=1), HopperGemm(BN=128, m_blocks=2, mode="pingpong", stages=4),
        HopperGemm(BN=128, m_blocks=2, mode="pingpong", cluster=1),
        HopperGemm(BN=192), HopperGemm(BN=256, m_blocks=1, mode="pingpong", stages=3)]
    if i >= len(variants):
        return ""
    variants[i].compile()
    return repr(variants[i])


def _epilogue(i: int) -> str:
    from perf.gpu_epilogue import configs, stream
    c = configs()
    if i >= len(c):
        return ""
    stream(*c[i]).compile()
    return f"epilogue stream {c[i]}"


def _feed(i: int) -> str:
    import pycute as pc
    from pycute.harness.stream_feed import FeedProblem, FeedStream, MinimalFeed
    from pycute.pipeline import Consumer
    from tools.pipeline_h200 import SWEEP, SWEEP_MNK, VARIANTS
    jobs = [(s, v) for s in range(len(SWEEP)) for v in (None, *VARIANTS)]
    if i >= len(jobs):
        return ""
    s, v = jobs[i]
    tile, stages, per_sm = SWEEP[s]
    problem = FeedProblem(pc.bf16, *SWEEP_MNK, tile)
    if v is None:
        MinimalFeed(problem, stages=stages, ctas_per_sm=per_sm).compile()
    else:
        FeedStream(problem, stages=stages, consumer=Consumer(v[0], v[1]), multicast=v[2], ctas_per_sm=per_sm).compile()
    return f"feed {SWEEP[s]} {v}"


def _rate(i: int) -> str:
    import pycute as pc
    from pycute.harness.stream_feed import FeedProblem, FeedStream, MinimalFeed
    from pycute.pipeline import Consumer
    from tools.pipeline_h200 import RATE, RATE_MNK
    jobs = [(r, c) for r in range(len(RATE)) for c in (None, ("warp", 1), ("warpgroup", 2))]
    if i >= len(jobs):
        return ""
    r, c = jobs[i]
    tile, stages, per_sm = RATE[r]
    problem = FeedProblem(pc.bf16, *RATE_MNK, tile)
    if c is None:
        MinimalFeed(problem, stages=stages, ctas_per_sm=per_sm).compile()
    else:
        FeedStream(problem, stages=stages, consumer=Consumer(*c), ctas_per_sm=per_sm).compile()
    return f"rate {RATE[r]} {c}"


def _one(job: tuple[str, int]) -> str:
    kind, i = job
    try:
        return {"gemm": _gemm, "epilogue": _epilogue, "feed": _feed, "rate": _rate}[kind](i)
    except Exception as e:  # noqa: BLE001  (named in the summary; the sweep reports it again)
        return f"FAILED {kind} {i}: {type(e).__name__}: {str(e)[:200]}"


def main() -> None:
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 12
    start = time.time()
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
    work = [("rate", i) for i in range(80)] + [("gemm", i) for i in range(20)] + [("epilogue", i) for i in range(40)] \
        + [("feed", i) for i in range(80)]
    work = [w for w in work if only is None or w[0] in only]
    with ProcessPoolExecutor(jobs) as pool:
        done = [r for r in pool.map(_one, work) if r]
    failed = [r for r in done if r.startswith("FAILED")]
    print(f"prebuilt {len(done) - len(failed)} kernels in {time.time() - start:.0f} s; {len(failed)} failed")
    for f in failed:
        print(" ", f)


if __name__ == "__main__":
    main()
