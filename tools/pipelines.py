"""Do pycute's pipelines run right on the GPU, and how close does the GEMM feed come to the minimal kernel's rate?

Each case in its own child process with a time limit (a hang or a fault loses that case, not the run), one JSON line
per result (docs/pipelines.md section 5):

* checks: the streaming harnesses on their pipelines (TMA copy, load-only, cp.async copy: bit for bit or by the
  position checksum; the DSMEM ring of 2 and 4 CTAs), the static tile scheduler's generated code against its Python
  model (every CTA's tiles), and the GEMM feed's verification checksum for each consumer shape, with and without
  A multicast over a cluster of two;
* the sweep: the feed rate of a GEMM's producer and pipeline whose consumers only release stages (one warp, as an
  MMA warp, or two warpgroups, as Hopper's consumers), with and without multicast, beside the hand-minimal kernel of
  the same loads (one thread, full barriers only), over tile shapes, stages and CTAs per SM. The target: the best
  feed >= 97% of the best minimal rate of the same run.

    PYTHONPATH=. python -m tools pipelines [OUT.jsonl]               (default $OUT/pipelines.jsonl)
    PYTHONPATH=. python -m tools pipelines --rate [OUT.jsonl] [--mnk=M,N,K ...]
    PYTHONPATH=. python -m tools pipelines --dry [--only PREFIX]     (no GPU: every feed kernel compiled)

``--rate`` times only the feed rate, more carefully than the sweep: for each configuration of ``RATE`` the minimal
kernel and the feed (one consumer warp; two consumer warpgroups) are timed in turn, ``RATE_ROUNDS`` rounds of each
(the fastest of 3 launches per round), so that drift in the GPU's clocks or L2 falls on all three alike; the
summary gives each kernel's best and median round and the target on both, per problem (``--mnk=M,N,K``, repeatable;
default ``RATE_MNK``; the configurations whose tiles divide it). Before a run every feed kernel it launches is
compiled, ``--jobs`` at a time, so the timed children spend their minutes timing.

The summary table is printed last. ``--one NAME`` runs one case in this process (what the children and
tests/gpu/test_gpu_pipeline.py do) and prints its JSON lines.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
from concurrent.futures import ProcessPoolExecutor

from tools._common import JsonLines, interleaved, json_rows, out_path, rates, run_question

CHECKS = ("stream", "load_only", "cp_async", "dsmem2", "dsmem4", "scheduler", "feed_warp", "feed_warpgroups",
          "feed_multicast", "feed_multicast_warpgroups", "minimal")
#: The sweep's problem: bf16 A and B of 8192 x 4096 (K-major), every output tile of 8192 x 8192.
SWEEP_MNK = (8192, 8192, 4096)
#: (bm, bn, bk) x (stages, CTAs per SM) where that many CTAs' rings fit an SM: every group runs the minimal kernel
#: and the four feed variants.
CANDIDATES = [(tile, stages, per_sm) for tile in ((128, 128, 64), (128, 256, 64), (256, 128, 64))
              for stages, per_sm in ((3, 1), (4, 1), (6, 1), (2, 2), (3, 2))]


def _fits(tile: tuple, stages: int, per_sm: int) -> bool:
    from pycute.arch.sm90.mbarrier import MBARRIER_BYTES
    from pycute.harness.stream_feed import feed_reserve
    from pycute.pipeline import smem_capacity
    ring = (tile[0] + tile[1]) * tile[2] * 2 * stages
    return ring + 2 * stages * MBARRIER_BYTES + feed_reserve(per_sm) <= smem_capacity("sm_90a")


SWEEP = [c for c in CANDIDATES if _fits(*c)]
VARIANTS = (("warp", 1, None), ("warpgroup", 2, None), ("warp", 1, 2), ("warpgroup", 2, 2))
#: The rate run's problem (whole tiles of 128, 192 and 256 along M and N) and configurations (tile, stages, CTAs per
#: SM): around the sweep's best, stage sizes between 128x128 and 128x256 (192-wide tiles), BK 32 stages.
RATE_MNK = (7680, 7680, 4096)
RATE = [((128, 256, 64), s, 1) for s in (2, 3, 4)] + [((256, 128, 64), s, 1) for s in (3, 4)] \
    + [((128, 192, 64), s, 1) for s in (3, 4, 5)] + [((192, 128, 64), s, 1) for s in (3, 4, 5)] \
    + [((128, 128, 64), s, 1) for s in (3, 4, 5, 6)] + [((128, 256, 32), 6, 1)] \
    + [((128, 128, 64), s, 2) for s in (2, 3)] + [((128, 192, 64), 2, 2)]
RATE_ROUNDS = 9
TIME_LIMIT = 240


@functools.lru_cache(maxsize=1)
def _gpu():
    from pycute.compile import runtime
    return runtime.Gpu()


def _clear(buf, nbytes: int) -> None:
    from cuda.bindings import driver
    driver.cuMemsetD8Async(int(buf.handle), 0, nbytes, int(_gpu().stream.handle))


def _stream_checks(name: str) -> list[dict]:
    import numpy as np

    import pycute as pc
    from pycute import Layout
    from pycute.harness.stream import TmaStream
    from pycute.harness.stream_cp_async import CpAsyncStream
    from pycute.harness.stream_load import TmaLoadStream, position_checksum
    gpu, rows, cols = _gpu(), 2048, 2048
    host = np.random.default_rng(1).integers(0, 1 << 32, rows * cols, dtype=np.uint32)
    src, dst = gpu.upload(host), gpu.alloc(host.nbytes)
    array = pc.make_global_tensor(pc.f32, Layout((rows, cols), (cols, 1)))
    tile = pc.make_smem_tensor(pc.f32, Layout((128, 64), (64, 1)))
    out = []
    if name == "stream":
        for stages in (2, 3, 4):
            _clear(dst, host.nbytes)
            ms = TmaStream(pc.make_tma_copy(tile, array), pc.make_tma_copy(array, tile), stages).run(gpu, src, dst)
            got = gpu.download(dst, np.uint32, host.size)
            out.append({"stages": stages, "ms": ms, "ok": bool(np.array_equal(got, host))})
    elif name == "load_only":
        for stages in (2, 4):
            ms, checksum = TmaLoadStream(pc.make_tma_copy(tile, array), stages).run(gpu, src)
            out.append({"stages": stages, "ms": ms, "ok": checksum == position_checksum(host)})
    else:
        for threads, stages in ((128, 3), (256, 4)):
            buf = pc.make_smem_tensor(pc.f32, Layout((128, 64, stages), (64, 1, 8192)))[:, :, pc.dynamic("stage")]
            load = pc.make_cp_async_copy(buf, array, threads=threads, completion="arrive")
            _clear(dst, host.nbytes)
            ms = CpAsyncStream(load, pc.make_tma_copy(array, buf)).run(gpu, src, dst)
            got = gpu.download(dst, np.uint32, host.size)
            out.append({"threads": threads, "stages": stages, "ms": ms, "ok": bool(np.array_equal(got, host))})
    return out


def _dsmem(ctas: int) -> list[dict]:
    import pycute as pc
    from pycute import Layout
    from pycute.harness.stream_dsmem import DsmemRing
    ring = pc.make_smem_tensor(pc.f32, Layout((4096, 2), (1, 4096)))
    plan = pc.make_dsmem_copy(ring[:, pc.dynamic("recv")], ring[:, pc.dynamic("send")])
    out = []
    for rounds in (1, 2, 51):
        ms, grid, exact = DsmemRing(plan, ctas).run(_gpu(), rounds)
        out.append({"ctas": ctas, "rounds": rounds, "CTAs": grid, "ms": ms, "ok": exact})
    return out


def _scheduler() -> list[dict]:
    import numpy as np

    from pycute.harness.schedule import ScheduleProbe
    from pycute.pipeline import make_tile_scheduler
    gpu, out = _gpu(), []
    for tiles, cluster, swizzle, raster, per_sm in (((64, 64), (1, 1), 8, "m", 1), ((13, 9), (1, 2), 3, "m", 2),
                                                    ((9, 20), (2, 1), 4, "n", 1), ((5, 7), (2, 2), 2, "m", 1)):
        sched = make_tile_scheduler(tiles, cluster=cluster, swizzle=swizzle, raster=raster)
        got, want = ScheduleProbe(sched).run(gpu, per_sm)
        wrong = [c for c in range(len(want)) if not np.array_equal(got[c], want[c])]
        out.append({"tiles": list(tiles), "cluster": list(cluster), "swizzle": swizzle, "raster": raster,
                    "grid": len(want), "ok": not wrong, "wrong_ctas": wrong[:8]})
    return out


def _operands(problem):
    gpu = _gpu()
    a, b = problem.arrays(seed=3)
    return gpu, a, b, gpu.upload(a), gpu.upload(b)


def _feed_checks(name: str) -> list[dict]:
    import pycute as pc
    from pycute.harness.stream_feed import FeedProblem, FeedStream, MinimalFeed, expected_checksum
    from pycute.pipeline import Consumer
    problem = FeedProblem(pc.bf16, 1024, 1024, 1024, (128, 128, 64))
    gpu, a, b, d_a, d_b = _operands(problem)
    if name == "minimal":
        ms = MinimalFeed(problem, stages=4).run(gpu, d_a, d_b, repeats=2)
        return [{"ms": ms, "ok": ms > 0}]
    caller, count = ("warpgroup", 2) if name.endswith("warpgroups") else ("warp", 1)
    multicast = 2 if "multicast" in name else None
    want = expected_checksum(problem, a, b)
    out = []
    for stages in (2, 4):
        feed = FeedStream(problem, stages=stages, consumer=Consumer(caller, count), multicast=multicast)
        ms, got = feed.run(gpu, d_a, d_b, repeats=2)
        out.append({"stages": stages, "consumer": f"{caller} x {count}", "multicast": multicast, "ms": ms,
                    "ok": got == want})
    return out


def _sweep(index: int) -> list[dict]:
    import pycute as pc
    from pycute.harness.stream_feed import FeedProblem, FeedStream, MinimalFeed, expected_checksum
    from pycute.pipeline import Consumer
    tile, stages, per_sm = SWEEP[index]
    problem = FeedProblem(pc.bf16, *SWEEP_MNK, tile)
    gpu, a, b, d_a, d_b = _operands(problem)
    moved, want = problem.bytes_moved(), expected_checksum(problem, a, b)
    base = {"tile": list(tile), "stages": stages, "ctas_per_sm": per_sm, "bytes": moved}
    out = []
    ms = MinimalFeed(problem, stages=stages, ctas_per_sm=per_sm).run(gpu, d_a, d_b)
    out.append({**base, "kernel": "minimal", "ms": ms, "TBps": moved / ms / 1e9, "ok": True})
    for caller, count, multicast in VARIANTS:
        feed = FeedStream(problem, stages=stages, consumer=Consumer(caller, count), multicast=multicast,
                          ctas_per_sm=per_sm)
        ms, got = feed.run(gpu, d_a, d_b)
        out.append({**base, "kernel": "feed", "consumer": f"{caller} x {count}", "multicast": multicast, "ms": ms,
                    "TBps": moved / ms / 1e9, "ok": got == want})
    return out


def _rate(index: int, mnk: tuple[int, int, int] = RATE_MNK) -> list[dict]:
    import pycute as pc
    from pycute.harness.stream_feed import FeedProblem, FeedStream, MinimalFeed, expected_checksum
    from pycute.pipeline import Consumer
    tile, stages, per_sm = RATE[index]
    problem = FeedProblem(pc.bf16, *mnk, tile)
    gpu, a, b, d_a, d_b = _operands(problem)
    moved, want = problem.bytes_moved(), expected_checksum(problem, a, b)
    minimal = MinimalFeed(problem, stages=stages, ctas_per_sm=per_sm)
    feeds = {f"{caller} x {count}": FeedStream(problem, stages=stages, consumer=Consumer(caller, count),
                                               ctas_per_sm=per_sm)
             for caller, count in (("warp", 1), ("warpgroup", 2))}
    ok = {k: True for k in feeds}

    def timed(key: str, feed) -> float:
        ms, got = feed.run(gpu, d_a, d_b, repeats=3)
        ok[key] = ok[key] and got == want
        return ms
    times = interleaved(RATE_ROUNDS, {"minimal": lambda: minimal.run(gpu, d_a, d_b, repeats=3),
                                      **{k: functools.partial(timed, k, f) for k, f in feeds.items()}})
    base = {"mnk": list(mnk), "tile": list(tile), "stages": stages, "ctas_per_sm": per_sm, "bytes": moved,
            "rounds": RATE_ROUNDS}
    return [{**base, "kernel": "minimal" if key == "minimal" else "feed", "consumer": None if key == "minimal" else key,
             **rates(ms, moved), "ok": ok.get(key, True)} for key, ms in times.items()]


def one(name: str) -> list[dict]:
    """The JSON records of case ``name``."""
    if name in ("stream", "load_only", "cp_async"):
        rows = _stream_checks(name)
    elif name.startswith("dsmem"):
        rows = _dsmem(int(name[5:]))
    elif name == "scheduler":
        rows = _scheduler()
    elif name.startswith("sweep"):
        rows = _sweep(int(name[5:]))
    elif name.startswith("rate"):                # rate<index>[@M,N,K]
        index, _, mnk = name[4:].partition("@")
        rows = _rate(int(index), tuple(map(int, mnk.split(","))) if mnk else RATE_MNK)   # type: ignore[arg-type]
    else:
        rows = _feed_checks(name)
    return [{"case": name, **r} for r in rows]


def _child(name: str) -> list[dict]:
    run = run_question("pipelines", ["--one", name], TIME_LIMIT)
    if not run.ok:
        return [{"case": name, "ok": False, "error": run.error()}]
    rows = json_rows(run.stdout)
    for r in rows:
        r["seconds"] = round(run.seconds, 1)
    return rows


def _summary(rows: list[dict]) -> None:
    print("\n== checks")
    for name in CHECKS:
        mine = [r for r in rows if r["case"] == name]
        bad = [r for r in mine if not r.get("ok")]
        print(f"  {name:<28} {'ok' if mine and not bad else 'FAILED'}  ({len(mine)} run(s))"
              + (f"  {bad[0].get('error', bad[0])}"[:300] if bad else ""))
    sweep = [r for r in rows if r["case"].startswith("sweep") and "TBps" in r]
    if not sweep:
        print("\n== feed rate: no sweep result")
        return
    minimal = [r for r in sweep if r["kernel"] == "minimal"]
    feed = [r for r in sweep if r["kernel"] == "feed" and r["ok"]]
    best_min = max(minimal, key=lambda r: r["TBps"])
    print(f"\n== feed rate (bf16 {SWEEP_MNK[0]} x {SWEEP_MNK[1]} x {SWEEP_MNK[2]}; TB/s into shared memory; ratios "
          f"against the minimal kernel of the same tile / stages / CTAs and against the best minimal)")
    print(f"  {'tile':<14} {'st':>2} {'/SM':>3} {'kernel':<8} {'consumer':<14} {'mc':>2} {'TB/s':>7} {'vs same':>8} "
          f"{'vs best':>8} checksum")
    for r in sweep:
        same = next(m for m in minimal if (m["tile"], m["stages"], m["ctas_per_sm"]) ==
                    (r["tile"], r["stages"], r["ctas_per_sm"]))
        print(f"  {'x'.join(map(str, r['tile'])):<14} {r['stages']:>2} {r['ctas_per_sm']:>3} {r['kernel']:<8} "
              f"{r.get('consumer', '-'):<14} {r.get('multicast') or '-':>2} {r['TBps']:7.2f} "
              f"{r['TBps'] / same['TBps']:8.1%} {r['TBps'] / best_min['TBps']:8.1%} {'ok' if r['ok'] else 'WRONG'}")
    if feed:
        best = max(feed, key=lambda r: r["TBps"])
        ratio = best["TBps"] / best_min["TBps"]
        print(f"\n  best minimal: {best_min['TBps']:.2f} TB/s ({'x'.join(map(str, best_min['tile']))}, "
              f"{best_min['stages']} stages, {best_min['ctas_per_sm']}/SM)")
        print(f"  best feed:    {best['TBps']:.2f} TB/s ({'x'.join(map(str, best['tile']))}, {best['stages']} stages, "
              f"{best['ctas_per_sm']}/SM, {best['consumer']}, multicast {best['multicast']}) = {ratio:.1%} of it: "
              f"{'MEETS' if ratio >= 0.97 else 'MISSES'} the 97% target")


def _rate_summary(rows: list[dict]) -> None:
    rate = [r for r in rows if r["case"].startswith("rate") and "TBps_best" in r]
    if not rate:
        print("\n== feed rate: no rate result")
        return
    for mnk in sorted({tuple(r["mnk"]) for r in rate}):
        mine = [r for r in rate if tuple(r["mnk"]) == mnk]
        print(f"\n== feed rate, interleaved (bf16 {mnk[0]} x {mnk[1]} x {mnk[2]}; TB/s into shared memory, best and "
              f"median of {RATE_ROUNDS} rounds)")
        for r in mine:
            print(f"  {'x'.join(map(str, r['tile'])):<14} {r['stages']:>2} {r['ctas_per_sm']}/SM {r['kernel']:<8} "
                  f"{r['consumer'] or '-':<14} best {r['TBps_best']:6.2f}  median {r['TBps_median']:6.2f}  "
                  f"{'ok' if r['ok'] else 'WRONG'}")
        for stat in ("TBps_best", "TBps_median"):
            best_min = max((r for r in mine if r["kernel"] == "minimal"), key=lambda r: r[stat])
            best = max((r for r in mine if r["kernel"] == "feed" and r["ok"]), key=lambda r: r[stat])
            ratio = best[stat] / best_min[stat]
            print(f"  by {stat[5:]:<6}: best feed {best[stat]:.2f} ({'x'.join(map(str, best['tile']))}, "
                  f"{best['stages']} stages, {best['consumer']}) / best minimal {best_min[stat]:.2f} "
                  f"({'x'.join(map(str, best_min['tile']))}, {best_min['stages']} stages) = {ratio:.1%}: "
                  f"{'MEETS' if ratio >= 0.97 else 'MISSES'} the 97% target")


def rate_names(mnk: tuple[int, int, int]) -> list[str]:
    """The rate run's cases for problem ``mnk``: every configuration whose tiles divide it."""
    return [f"rate{k}@{','.join(map(str, mnk))}" for k, (tile, _, _) in enumerate(RATE)
            if mnk[0] % tile[0] == 0 and mnk[1] % tile[1] == 0 and mnk[2] % tile[2] == 0]


def _feed_jobs(name: str) -> list[tuple]:
    """The feed kernels case ``name`` launches, as (M, N, K, tile, stages, CTAs per SM, consumer or None for the
    minimal kernel, multicast): what the prebuild compiles."""
    if name.startswith("sweep"):
        tile, stages, per_sm = SWEEP[int(name[5:])]
        return [(*SWEEP_MNK, tile, stages, per_sm, None, None)] + \
            [(*SWEEP_MNK, tile, stages, per_sm, (caller, count), mc) for caller, count, mc in VARIANTS]
    if name.startswith("rate"):
        index, _, mnk = name[4:].partition("@")
        tile, stages, per_sm = RATE[int(index)]
        m, n, k = (int(x) for x in mnk.split(",")) if mnk else RATE_MNK
        consumers = (("warp", 1), ("warpgroup", 2))
        return [(m, n, k, tile, stages, per_sm, None, None)] + \
            [(m, n, k, tile, stages, per_sm, consumer, None) for consumer in consumers]
    if name.startswith(("feed", "minimal")):
        caller, count = ("warpgroup", 2) if name.endswith("warpgroups") else ("warp", 1)
        if name == "minimal":
            return [(1024, 1024, 1024, (128, 128, 64), 4, 1, None, None)]
        mc = 2 if "multicast" in name else None
        return [(1024, 1024, 1024, (128, 128, 64), s, 1, (caller, count), mc) for s in (2, 4)]
    return []


def _compile(job: tuple) -> str:
    import pycute as pc
    from pycute.harness.stream_feed import FeedProblem, FeedStream, MinimalFeed
    from pycute.pipeline import Consumer
    m, n, k, tile, stages, per_sm, consumer, multicast = job
    problem = FeedProblem(pc.bf16, m, n, k, tile)
    kernel = MinimalFeed(problem, stages=stages, ctas_per_sm=per_sm) if consumer is None else \
        FeedStream(problem, stages=stages, consumer=Consumer(*consumer), multicast=multicast, ctas_per_sm=per_sm)
    kernel.compile()
    return repr(job)


def prebuild(names: list[str], jobs: int) -> int:
    """Compile every feed kernel of ``names`` into the compile cache, ``jobs`` at a time; the count compiled."""
    work = sorted({job for name in names for job in _feed_jobs(name)}, key=repr)
    with ProcessPoolExecutor(max(1, min(jobs, len(work)))) as pool:
        return len(list(pool.map(_compile, work)))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools pipelines", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/pipelines.jsonl)")
    parser.add_argument("--rate", action="store_true", help="time the feed rate, interleaved (RATE)")
    parser.add_argument("--mnk", action="append", default=[], help="a rate problem M,N,K (repeatable)")
    parser.add_argument("--only", default="", help="the cases whose name starts with this")
    parser.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 1), help="compilations at a time")
    parser.add_argument("--dry", action="store_true", help="no GPU: compile every feed kernel the run launches")
    parser.add_argument("--one", metavar="NAME", help="run one case in this process (what each child does)")
    args = parser.parse_args(argv)
    if args.one:
        for record in one(args.one):
            print(json.dumps(record))
        return 0
    rate = tuple(tuple(int(x) for x in m.split(",")) for m in args.mnk) or ((RATE_MNK,) if args.rate else ())
    names = [n for mnk in rate for n in rate_names(mnk)] if rate else \
        list(CHECKS) + [f"sweep{k}" for k in range(len(SWEEP))]
    names = [n for n in names if n.startswith(args.only)]
    built = prebuild(names, args.jobs)
    print(f"{built} feed kernels compiled for {len(names)} cases", flush=True)
    if args.dry:
        return 0
    path = out_path("pipelines", args.out)
    with JsonLines(path, echo=True) as out:
        for name in names:
            out.extend(_child(name))
    if rate:
        _rate_summary(out.rows)
    else:
        _summary(out.rows)
    print(f"\nwrote {path}")
    return 0 if all(r.get("ok") for r in out.rows) else 1
