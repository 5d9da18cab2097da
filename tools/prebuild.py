"""Do the kernels the timed sweeps launch all compile (into the cache, in parallel, before a timed run)?

Compile, in parallel, the kernels the timed sweeps launch (the Hopper GEMM's variants, the epilogue stream's
and the pipeline feed's configurations) into pycute's compile cache, so that a timed run spends its minutes timing
and not in NVRTC (the device machine has 16 cores; the sweeps compile one kernel at a time).

    PYTHONPATH=. python -m tools prebuild [--jobs 12] [--only rate,feed,gemm,epilogue]
    PYTHONPATH=. python -m tools prebuild --dry       # the same on the CPU (NVRTC needs no GPU): --only gemm

Prints how many kernels compiled and how long it took; a kernel that fails to compile is named (the sweep that
launches it will report it again)."""
from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor



def _gemm(i: int) -> str:
    from tools.gemm_speed import variants as gemm_variants
    variants = gemm_variants()
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


def _feed_kernel(mnk: tuple, config: tuple, variant: tuple | None) -> None:
    """Compile the minimal kernel (``variant`` None) or the feed ``(caller, count, multicast)`` of a configuration."""
    import pycute as pc
    from pycute.harness.stream_feed import FeedProblem, FeedStream, MinimalFeed
    from pycute.pipeline import Consumer
    tile, stages, per_sm = config
    problem = FeedProblem(pc.bf16, *mnk, tile)
    if variant is None:
        MinimalFeed(problem, stages=stages, ctas_per_sm=per_sm).compile()
    else:
        FeedStream(problem, stages=stages, consumer=Consumer(variant[0], variant[1]), multicast=variant[2],
                   ctas_per_sm=per_sm).compile()


def _feed(i: int) -> str:
    from tools.pipelines import SWEEP, SWEEP_MNK, VARIANTS
    jobs = [(config, v) for config in SWEEP for v in (None, *VARIANTS)]
    if i >= len(jobs):
        return ""
    _feed_kernel(SWEEP_MNK, *jobs[i])
    return f"feed {jobs[i]}"


def _rate(i: int) -> str:
    from tools.pipelines import RATE, RATE_MNK
    jobs = [(config, v) for config in RATE for v in (None, ("warp", 1, None), ("warpgroup", 2, None))]
    if i >= len(jobs):
        return ""
    _feed_kernel(RATE_MNK, *jobs[i])
    return f"rate {jobs[i]}"


def _one(job: tuple[str, int]) -> str:
    kind, i = job
    try:
        return {"gemm": _gemm, "epilogue": _epilogue, "feed": _feed, "rate": _rate}[kind](i)
    except Exception as e:  # noqa: BLE001  (named in the summary; the sweep reports it again)
        return f"FAILED {kind} {i}: {type(e).__name__}: {str(e)[:200]}"


def main(argv: list[str]) -> int:
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else 12
    start = time.time()
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else ["gemm"] if "--dry" in argv else None
    work = [("rate", i) for i in range(80)] + [("gemm", i) for i in range(20)] + [("epilogue", i) for i in range(40)] \
        + [("feed", i) for i in range(80)]
    work = [w for w in work if only is None or w[0] in only]
    with ProcessPoolExecutor(jobs) as pool:
        done = [r for r in pool.map(_one, work) if r]
    failed = [r for r in done if r.startswith("FAILED")]
    print(f"prebuilt {len(done) - len(failed)} kernels in {time.time() - start:.0f} s; {len(failed)} failed")
    for f in failed:
        print(" ", f)
    return 1 if failed else 0
