"""Where does the GEMM feed's gap to the minimal kernel come from?

The minimal kernel (one thread, full barriers only) runs 5.6% faster at 8192 x 8192 x 4096 than at 7680 x 7680 x
4096 while the feed runs the same at both (docs/pipelines.md section 5). Each mode takes one suspect apart, every
kernel's checksum verified first, timings interleaved (``ROUNDS`` rounds of the fastest of 3 launches):

* ``--sweep``: the best configuration (128x256x64, 3 stages) under each of ``VARIANTS`` -- the output tiles' raster
  and band width, the loads' L2 promotion and L2 policy, options of ``FeedProblem`` that every kernel of the
  problem takes alike -- the minimal kernel and the feed (one consumer warp), for both problems;
* ``--ncu``: both kernels of the default variant at both problems under ``ncu --clock-control none``: duration, L2
  hit rate, DRAM bytes read, L2 and DRAM throughput, the L2 fabric's traffic (what this ncu has of them);
* ``--hand``: beside the minimal kernel and the feed, **hand-written load-only kernels with a consumer that reads
  no data** (full and empty barriers, counts and parities written by hand; the consumer warp waits on every lane
  and lane 0 releases, or lane 0 alone waits and releases); with ``--prefetch`` each kernel with an L2 prefetch
  (``cp.async.bulk.prefetch.tensor``) of the load ``P`` loads ahead of the one its next wait gates (``+pfP``), with
  ``--edits`` the feed under source edits that each take one difference from the hand-written kernel away
  (``FEED_EDITS``);
* ``--waits``: the feed's consumer waits varied at its best configurations (``WAIT_CONFIGS``, 8192): as generated
  (every lane polls with ``mbarrier.try_wait``), one elected lane polling then ``__syncwarp`` (``lane``), both roles
  spinning on ``mbarrier.test_wait`` (``spin``), and both (``lane+spin``).

    PYTHONPATH=. python -m tools feed_gap --sweep --ncu --hand --waits [OUT.jsonl]   (default $OUT/feed_gap.jsonl)
    PYTHONPATH=. python -m tools feed_gap --hand --edits --dry                        (no GPU: every kernel compiled)

One JSON line per kernel and problem (``mode`` names the mode); a table per mode.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from tools._common import JsonLines, interleaved, ncu_metrics, ncu_path, out_path, parse_ncu, rates, run_question

PROBLEMS = [(8192, 8192, 4096), (7680, 7680, 4096)]
TILE, STAGES = (128, 256, 64), 3
#: name -> FeedProblem options
VARIANTS: dict[str, dict[str, Any]] = {
    "base": {}, "band16": {"swizzle": 16}, "band4": {"swizzle": 4}, "band1": {"swizzle": 1},
    "n-band8": {"raster": "n"}, "n-band16": {"raster": "n", "swizzle": 16},
    "l2-256B": {"l2_promotion": "256B"}, "evict-last": {"cache_hint": "evict_last"},
}
ROUNDS = 9
#: Metric base names wanted from ncu (each kept only where ``ncu --query-metrics`` lists it).
NCU_METRICS = ["gpu__time_duration", "dram__bytes_read", "lts__t_sector_hit_rate", "lts__t_sectors",
               "lts__t_sectors_srcunit_ltcfabric", "lts__throughput", "dram__throughput", "sm__cycles_elapsed"]
NCU_SUFFIX = {"lts__t_sector_hit_rate": ".pct", "lts__throughput": ".avg.pct_of_peak_sustained_elapsed",
              "dram__throughput": ".avg.pct_of_peak_sustained_elapsed", "sm__cycles_elapsed": ".avg.per_second"}


def problem_of(mnk: tuple[int, int, int], variant: str) -> Any:
    import pycute as pc
    from pycute.harness.stream_feed import FeedProblem
    return FeedProblem(pc.bf16, *mnk, TILE, **VARIANTS[variant])


def kernels(problem: Any) -> tuple[Any, Any]:
    from pycute.harness.stream_feed import FeedStream, MinimalFeed
    return MinimalFeed(problem, stages=STAGES), FeedStream(problem, stages=STAGES)


def _build(job: tuple) -> None:
    for kernel in kernels(problem_of(*job)):
        kernel.compile()


def operands(gpu: Any, mnk: tuple[int, int, int]) -> tuple[Any, Any, Any, int, int]:
    """The default variant's problem, A and B on the device, the verification checksum and the bytes moved."""
    from pycute.harness.stream_feed import expected_checksum
    problem = problem_of(mnk, "base")
    a, b = problem.arrays(seed=3)
    return problem, gpu.upload(a), gpu.upload(b), expected_checksum(problem, a, b), problem.bytes_moved()


def sweep() -> list[dict]:
    """Every variant's minimal kernel and feed, timed in turn, at both problems."""
    from pycute.compile import runtime
    gpu = runtime.Gpu()
    rows = []
    for mnk in PROBLEMS:
        _, d_a, d_b, want, moved = operands(gpu, mnk)
        pairs = {v: kernels(problem_of(mnk, v)) for v in VARIANTS}
        ok: dict[str, bool] = {v: True for v in VARIANTS}

        def feed(v: str, run: Any) -> float:
            ms, got = run.run(gpu, d_a, d_b, repeats=3)
            ok[v] = ok[v] and got == want
            return ms
        timed = {f"{v}/{kind}": (functools.partial(feed, v, k) if kind == "feed" else
                                 functools.partial(k.run, gpu, d_a, d_b, repeats=3))
                 for v, pair in pairs.items() for kind, k in zip(("minimal", "feed"), pair)}
        for key, ms in interleaved(ROUNDS, timed).items():
            v, kind = key.split("/")
            rows.append({"mode": "sweep", "mnk": list(mnk), "tile": list(TILE), "stages": STAGES, "variant": v,
                         "options": VARIANTS[v], "kernel": kind, "ok": ok[v] if kind == "feed" else True,
                         **rates(ms, moved)})
    return rows


def sweep_table(rows: list[dict]) -> str:
    lines = []
    for mnk in PROBLEMS:
        mine = [r for r in rows if r["mnk"] == list(mnk)]
        best_min = max(r["TBps_best"] for r in mine if r["kernel"] == "minimal")
        med_min = max(r["TBps_median"] for r in mine if r["kernel"] == "minimal")
        lines.append(f"== {'x'.join(map(str, mnk))}: best minimal {best_min:.2f} TB/s, by median {med_min:.2f}")
        for v in VARIANTS:
            m, f = (next(r for r in mine if r["variant"] == v and r["kernel"] == k) for k in ("minimal", "feed"))
            lines.append(f"{v:<11} minimal {m['TBps_best']:6.2f} / {m['TBps_median']:6.2f}  feed {f['TBps_best']:6.2f}"
                         f" / {f['TBps_median']:6.2f} {'ok' if f['ok'] else 'WRONG'}  feed/own "
                         f"{f['TBps_best'] / m['TBps_best']:.1%}  feed/best {f['TBps_best'] / best_min:.1%}  by median "
                         f"{f['TBps_median'] / med_min:.1%}")
    return "\n".join(lines)


def one_launch(mnk: tuple[int, int, int]) -> None:
    """The ncu child: each kernel of the default variant launched (the minimal twice, the feed three times)."""
    from pycute.compile import runtime
    gpu = runtime.Gpu()
    problem, d_a, d_b, _, _ = operands(gpu, mnk)
    minimal, feed = kernels(problem)
    minimal.run(gpu, d_a, d_b, repeats=1)
    feed.run(gpu, d_a, d_b, repeats=1)


def ncu() -> list[dict]:
    """Both kernels of the default variant under ncu at both problems, each problem's launches in a child."""
    tool = ncu_path()
    if tool is None:
        return [{"mode": "ncu", "error": "ncu not found (PATH, /usr/local/cuda/bin)"}]
    known = ncu_metrics(tool)
    wanted = [m + NCU_SUFFIX.get(m, ".sum") for m in NCU_METRICS if m in known]
    flags = ("--clock-control", "none", "--csv", "--print-units", "base", "--metrics", ",".join(wanted), "-k",
             "regex:^(minimal_feed|feed_stream)$")
    rows: list[dict] = []
    for mnk in PROBLEMS:
        run = run_question("feed_gap", ["--one", ",".join(map(str, mnk))], 240, prefix=(tool, *flags))
        got = parse_ncu(run.stdout)     # the last launch of each kernel (the timed one)
        rows += [{"mode": "ncu", "mnk": list(mnk), "kernel": name, "metrics": values} for name, values in got.items()]
        if not got:
            rows.append({"mode": "ncu", "mnk": list(mnk), "error": run.error()})
    return rows


# ---- hand-written baselines and L2 prefetch (experiments: source text, not plans) --------------------------------
PREFETCH_AHEAD = (0, 1, 2)


def _prefetch_functions(problem: Any) -> str:
    """``pf_a`` / ``pf_b``: the loads' boxes as L2 prefetches, and ``pf_load(j)``: load ``j`` of this CTA's walk."""
    loads = problem.loads(None)
    kb = problem.k_blocks
    return (loads["a"].prefetch().cuda(name="pf_a") + loads["b"].prefetch().cuda(name="pf_b") + f"""
__device__ __forceinline__ void pf_load(const void* map_a, const void* map_b, unsigned j, unsigned loads) {{
  if (j >= loads) return;
  pycute_tile t;
  sched_tile(sched_first() + j / {kb}u * gridDim.x, t);
  pf_a(map_a, t.m, int(j % {kb}u));
  pf_b(map_b, t.n, int(j % {kb}u));
}}
""")


def minimal_prefetch_source(problem: Any, ahead: int) -> str:
    """The minimal kernel prefetching load ``i + stages + ahead`` before the wait that gates load ``i + stages``."""
    from pycute.harness.stream_feed import MinimalFeed
    src = MinimalFeed(problem, stages=STAGES).source()
    head = 'extern "C" __global__'
    wait = "    pycute_mbarrier_wait_parity(b + 8u * st.index, st.phase);\n"
    assert src.count(wait) == 1 and src.count(head) == 1
    src = src.replace(head, _prefetch_functions(problem) + head, 1)
    return src.replace(wait, f"    pf_load(map_a, map_b, i + mini_stages + {ahead}u, loads);\n" + wait)


def feed_prefetch_source(problem: Any, ahead: int) -> str:
    """The feed whose producer prefetches the load ``ahead`` loads after the one it is about to acquire a stage
    for, before the acquire (``ahead`` < the k-blocks of a tile)."""
    from pycute.harness.stream_feed import FeedStream
    src = FeedStream(problem, stages=STAGES).source()
    kb = problem.k_blocks
    head = 'extern "C" __global__'
    acquire = "        const unsigned full = feed_producer_acquire(b, st);\n"
    assert src.count(acquire) == 1 and src.count(head) == 1 and ahead < kb
    pf = problem.loads(None)
    src = src.replace(head, pf["a"].prefetch().cuda(name="pf_a") + pf["b"].prefetch().cuda(name="pf_b") + head, 1)
    return src.replace(acquire, f"""        if (pycute_elect_one_sync()) {{
          const int pk = kb + {ahead};
          const unsigned pw = pk < {kb} ? w : sched_next(w);
          if (pw < sched_units) {{
            pycute_tile pt;
            sched_tile(pw, pt);
            pf_a(map_a, pt.m, pk % {kb});
            pf_b(map_b, pt.n, pk % {kb});
          }}
        }}
""" + acquire)


def hand_source(problem: Any, consumer: str, ahead: int | None = None) -> str:
    """A hand-written load-only kernel with a consumer warp that reads no data: thread 0 produces (waits on the
    stage's empty barrier, arms its full barrier, issues the two loads), the second warp consumes (``"warp"``:
    every lane waits, ``__syncwarp``, lane 0 arrives on the empty barrier; ``"lane"``: lane 0 alone waits and
    arrives). Parities by hand: fill ``i`` of stage ``i % S`` completes the full barrier's phase ``i / S``."""
    from pycute.harness.stream_feed import MinimalFeed
    minimal = MinimalFeed(problem, stages=STAGES)
    kb, s = problem.k_blocks, STAGES
    src = minimal.source()
    prefetch = _prefetch_functions(problem) if ahead is not None else ""
    pf = f"      pf_load(map_a, map_b, i + {ahead}u, loads);\n" if ahead is not None else ""
    waiter = "threadIdx.x >= 32" if consumer == "warp" else "threadIdx.x == 32"
    return src + prefetch + f"""
extern "C" __global__ void __launch_bounds__(64) hand_feed(const pycute_tensor_map* map_a,
                                                          const pycute_tensor_map* map_b) {{
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[2 * {s}];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u, full = pycute_smem_address(bars);
  const unsigned empty = full + {8 * s}u;
  if (threadIdx.x == 0) {{
    for (unsigned k = 0; k < {s}u; ++k) {{
      pycute_mbarrier_init(full + 8u * k, 1u);
      pycute_mbarrier_init(empty + 8u * k, 1u);
    }}
  }}
  __syncthreads();
  const unsigned tiles = sched_first() < sched_units ? (sched_units - sched_first() + gridDim.x - 1u) / gridDim.x : 0u;
  const unsigned loads = tiles * {kb}u;
  if (threadIdx.x == 0) {{
    pycute_tensormap_acquire(map_a);
    pycute_tensormap_acquire(map_b);
    for (unsigned i = 0; i < loads; ++i) {{
      const unsigned k = i % {s}u;
{pf}      if (i >= {s}u) pycute_pipeline_wait(empty + 8u * k, (i / {s}u - 1u) & 1u);
      mini_issue(map_a, map_b, base, full + 8u * k, i, k);
    }}
  }} else if ({waiter}) {{
    for (unsigned i = 0; i < loads; ++i) {{
      const unsigned k = i % {s}u;
      pycute_pipeline_wait(full + 8u * k, (i / {s}u) & 1u);
      {"__syncwarp();" if consumer == "warp" else ""}
      if (threadIdx.x == 32) pycute_pipeline_release_local(empty + 8u * k);
    }}
  }}
}}
"""


#: The feed's source edits (``--edits``). Producer forms of its warp, each replacing the feed's (every lane waits
#: for the stage, one elected lane arms and issues): ``elected`` (one elected lane runs the whole loop, waiting,
#: arming and issuing, while the warp's other lanes wait at a ``__syncwarp``: the feed's form before 2026-12-02's
#: run 4), ``elected-exit`` (the same, the other lanes leaving at once), ``electloop`` (the whole warp loops; each
#: stage one elected lane waits, arms and issues while the others wait at ``__syncwarp``: the tcgen05 mainloop's form
#: before run 4); and consumer edits: ``noverify`` drops the verification branch from the consumers' loop, ``lane0``
#: releases from lane 0 instead of an elected lane.
FEED_EDITS = ("elected", "elected-exit", "electloop", "noverify", "lane0")


def _edit(src: str, old: str, new: str, edit: str) -> str:
    assert src.count(old) == 1, edit
    return src.replace(old, new)


def feed_edited_source(problem: Any, edits: tuple[str, ...]) -> str:
    from pycute.harness.stream_feed import FeedStream
    feed = FeedStream(problem, stages=STAGES)
    pipe = feed.pipeline
    (_, a, sa), (_, b, sb) = pipe.stage_bytes
    kb, s = problem.k_blocks, pipe.stages
    src = feed.source()
    def walk(stage_lines: str, indent: str = "") -> str:
        """The producer's walk over its tiles and k-blocks with ``stage_lines`` per stage, indented by ``indent``."""
        text = f"""    pycute_tensormap_acquire(map_a);
    pycute_tensormap_acquire(map_b);
    feed_state st = feed_producer_start();
    for (unsigned w = sched_first(); w < sched_units; w = sched_next(w)) {{
      pycute_tile t;
      sched_tile(w, t);
      for (int kb = 0; kb < {kb}; ++kb, st.advance()) {{
{stage_lines}      }}
    }}
"""
        return "".join(indent + line if line.strip() else line for line in text.splitlines(True))

    loads = """          feed_a(map_a, base, full, t.m, kb, st.index);
          feed_b(map_b, base, full, t.n, kb, st.index);
"""
    producer = walk("        const unsigned full = feed_producer_acquire(b, st);\n"
                    "        if (pycute_elect_one_sync()) {\n" + loads + "        }\n")
    stage = f"""          pycute_pipeline_wait(b + ({s}u + st.index) * 8u, st.phase);
          const unsigned full = b + st.index * 8u;
          pycute_mbarrier_arrive_expect_tx(full, {pipe.expect_tx}u);
""" + loads
    elected = "    if (pycute_elect_one_sync()) {\n" + walk(stage, "  ") + "    }\n"
    forms = {"elected": elected + "    __syncwarp();\n", "elected-exit": elected,
             "electloop": walk("        if (pycute_elect_one_sync()) {\n" + stage + "        }\n"
                               "        __syncwarp();\n")}
    for edit in edits:
        if edit in forms:
            src = _edit(src, producer, forms[edit], edit)
        elif edit == "noverify":
            src = _edit(src, f"""        if (verify && threadIdx.x == 32) {{
          sum += *reinterpret_cast<const unsigned*>(buf + {a}u + st.index * {sa}u);
          sum += *reinterpret_cast<const unsigned*>(buf + {b}u + st.index * {sb}u);
        }}
""", "", edit)
        else:
            src = _edit(src, "  __syncwarp();\n  if (pycute_elect_one_sync()) {\n    const unsigned empty",
                        "  __syncwarp();\n  if (threadIdx.x % 32u == 0u) {\n    const unsigned empty", edit)
    return src


def hand_kernels(problem: Any, prefetch: bool = False, edits: bool = False) -> dict[str, tuple[str, str, int]]:
    """name -> (source, kernel symbol, threads) of every kernel ``--hand`` times (``--prefetch``: and the L2
    prefetch variants; ``--edits``: and the feed under each of ``FEED_EDITS`` and all of them)."""
    from pycute.harness.stream_feed import FeedStream, MinimalFeed
    out = {"minimal": (MinimalFeed(problem, stages=STAGES).source(), "minimal_feed", 32),
           "feed": (FeedStream(problem, stages=STAGES).source(), "feed_stream", 64),
           "hand-warp": (hand_source(problem, "warp"), "hand_feed", 64),
           "hand-lane": (hand_source(problem, "lane"), "hand_feed", 64)}
    for p in PREFETCH_AHEAD if prefetch else ():
        out[f"minimal+pf{p}"] = (minimal_prefetch_source(problem, p), "minimal_feed", 32)
        out[f"feed+pf{p}"] = (feed_prefetch_source(problem, p), "feed_stream", 64)
        out[f"hand-warp+pf{p}"] = (hand_source(problem, "warp", p), "hand_feed", 64)
    for group in ([(e,) for e in FEED_EDITS] + [("elected-exit", "noverify", "lane0")]) if edits else ():
        out["feed-" + "-".join(group)] = (feed_edited_source(problem, group), "feed_stream", 64)
    return out


def _build_hand(job: tuple) -> None:
    from pycute.compile.nvrtc import compile_cuda
    mnk, name, options = job
    compile_cuda(hand_kernels(problem_of(mnk, "base"), **options)[name][0], arch="sm_90a")


def hand(**options: bool) -> list[dict]:
    """Every kernel of ``hand_kernels`` timed in turn at both problems, the feeds' checksums verified first."""
    import numpy as np

    from pycute.compile import runtime
    from pycute.compile.nvrtc import compile_cuda
    from pycute.harness.stream_feed import ALIGN_SLACK, FeedStream, _launch_args, _time
    gpu = runtime.Gpu()
    rows = []
    for mnk in PROBLEMS:
        problem, d_a, d_b, want, moved = operands(gpu, mnk)
        maps = _launch_args(gpu, problem.loads(None), d_a, d_b)
        feed = FeedStream(problem, stages=STAGES)
        grid, smem = feed.grid(gpu), feed.pipeline.smem_bytes + ALIGN_SLACK
        checksum = gpu.upload(np.zeros(1, dtype=np.uint64))
        timed, ok = {}, {}
        for name, (src, symbol, threads) in hand_kernels(problem, **options).items():
            kernel = gpu.kernel(compile_cuda(src, arch="sm_90a"), symbol)
            args: tuple = (*maps, checksum, np.int32(0)) if symbol == "feed_stream" else tuple(maps)
            timed[name] = functools.partial(_time, gpu, kernel, args, grid, threads, smem, 3)
            if symbol == "feed_stream" and "noverify" not in name:   # every stage of every tile arrived
                verify = gpu.upload(np.zeros(1, dtype=np.uint64))
                gpu.launch(kernel, *maps, verify, np.int32(1), grid=grid, block=threads, dynamic_smem=smem)
                ok[name] = int(gpu.download(verify, np.uint64, 1)[0]) == want
        for name, ms in interleaved(ROUNDS, timed).items():
            rows.append({"mode": "hand", "mnk": list(mnk), "tile": list(TILE), "stages": STAGES, "kernel": name,
                         "ok": ok.get(name, True), **rates(ms, moved)})
    return rows


def hand_table(rows: list[dict]) -> str:
    lines = []
    for mnk in PROBLEMS:
        mine = {r["kernel"]: r for r in rows if r["mnk"] == list(mnk)}
        hand_best = max(mine[n]["TBps_best"] for n in mine if n.startswith("hand"))
        lines.append(f"== {'x'.join(map(str, mnk))}: best hand-written (consumers reading nothing) "
                     f"{hand_best:.2f} TB/s")
        lines += [f"{n:<16} {r['TBps_best']:6.2f} / {r['TBps_median']:6.2f} {'ok' if r['ok'] else 'WRONG'}  of minimal "
                  f"{r['TBps_best'] / mine['minimal']['TBps_best']:.1%}  of best hand {r['TBps_best'] / hand_best:.1%}"
                  for n, r in mine.items()]
    return "\n".join(lines)


# ---- the consumers' waits (experiments: source text, not plans) ---------------------------------------------------
#: (tile, stages) of the feed whose waits ``--waits`` varies, at PROBLEMS[0].
WAIT_CONFIGS = [((128, 256, 64), 3), ((128, 128, 64), 4)]
WAITS = ("feed", "lane", "spin", "lane+spin")
SPIN = """
__device__ __forceinline__ void feed_spin_wait(unsigned mbar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\\n\\t.reg .pred p;\\n\\tmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\\n\\t"
                 "selp.u32 %0, 1, 0, p;\\n\\t}" : "=r"(done) : "r"(mbar), "r"(parity) : "memory");
  } while (!done);
}
"""


def wait_source(source: str, variant: str) -> str:
    """The feed's source with the variant's waits (``WAITS``)."""
    if "lane" in variant:
        source = _edit(source, "feed_consumer_wait(b, st);",
                       "if (pycute_elect_one_sync()) feed_consumer_wait(b, st);\n        __syncwarp();", variant)
    if "spin" in variant:
        head = '#include "pycute/pipeline.cuh"\n'
        source = source.replace(head, head + SPIN, 1).replace("pycute_pipeline_wait(", "feed_spin_wait(")
    return source


def wait_kernels(problem: Any, stages: int) -> dict[str, str]:
    """variant -> the feed's source with those waits."""
    from pycute.harness.stream_feed import FeedStream
    source = FeedStream(problem, stages=stages).source()
    return {v: wait_source(source, v) for v in WAITS}


def waits() -> list[dict]:
    """Each wait variant of the feed beside the minimal kernel, timed in turn, checksums verified first."""
    import numpy as np

    import pycute as pc
    from pycute.compile import runtime
    from pycute.compile.nvrtc import compile_cuda
    from pycute.harness.stream_feed import ALIGN_SLACK, FeedProblem, FeedStream, MinimalFeed, _launch_args, \
        _time, expected_checksum
    gpu, rows = runtime.Gpu(), []
    for tile, stages in WAIT_CONFIGS:
        problem = FeedProblem(pc.bf16, *PROBLEMS[0], tile)
        a, b = problem.arrays(seed=3)
        d_a, d_b = gpu.upload(a), gpu.upload(b)
        want, moved = expected_checksum(problem, a, b), problem.bytes_moved()
        minimal, feed = MinimalFeed(problem, stages=stages), FeedStream(problem, stages=stages)
        maps = _launch_args(gpu, problem.loads(None), d_a, d_b)
        grid, block, smem = feed.grid(gpu), 32 * feed.warps, feed.pipeline.smem_bytes + ALIGN_SLACK
        checksum = gpu.upload(np.zeros(1, dtype=np.uint64))
        timed = {"minimal": functools.partial(minimal.run, gpu, d_a, d_b, repeats=3)}
        ok = {}
        for v, source in wait_kernels(problem, stages).items():
            kernel = gpu.kernel(compile_cuda(source, arch="sm_90a"), "feed_stream")
            verify = gpu.upload(np.zeros(1, dtype=np.uint64))
            gpu.launch(kernel, *maps, verify, np.int32(1), grid=grid, block=block, dynamic_smem=smem)
            ok[v] = int(gpu.download(verify, np.uint64, 1)[0]) == want
            timed[v] = functools.partial(_time, gpu, kernel, (*maps, checksum, np.int32(0)), grid, block, smem, 3)
        for v, ms in interleaved(ROUNDS, timed).items():
            rows.append({"mode": "waits", "mnk": list(PROBLEMS[0]), "tile": list(tile), "stages": stages,
                         "kernel": v, "ok": ok.get(v, True), **rates(ms, moved)})
    return rows


def waits_table(rows: list[dict]) -> str:
    best_min = max(r["TBps_best"] for r in rows if r["kernel"] == "minimal")
    lines = [f"{'x'.join(map(str, r['tile'])):<12} {r['stages']} {r['kernel']:<10} best {r['TBps_best']:6.2f} median "
             f"{r['TBps_median']:6.2f} {'ok' if r['ok'] else 'WRONG'}" for r in rows]
    for v in WAITS:
        best = max(r["TBps_best"] for r in rows if r["kernel"] == v and r["ok"])
        lines.append(f"best {v:<10} {best:6.2f} TB/s = {best / best_min:.1%} of the best minimal {best_min:.2f}")
    return "\n".join(lines)


def one_launch(mnk: tuple[int, int, int]) -> None:
    """The ncu child: each kernel of the default variant launched (the minimal twice, the feed three times)."""
    from pycute.compile import runtime
    gpu = runtime.Gpu()
    problem, d_a, d_b, _, _ = operands(gpu, mnk)
    minimal, feed = kernels(problem)
    minimal.run(gpu, d_a, d_b, repeats=1)
    feed.run(gpu, d_a, d_b, repeats=1)


def _build_waits(job: tuple) -> None:
    import pycute as pc
    from pycute.compile.nvrtc import compile_cuda
    from pycute.harness.stream_feed import FeedProblem
    tile, stages, variant = job
    compile_cuda(wait_kernels(FeedProblem(pc.bf16, *PROBLEMS[0], tile), stages)[variant], arch="sm_90a")


def prebuild(modes: set[str], jobs: int, **options: bool) -> int:
    """Compile every kernel the modes launch, ``jobs`` at a time (the timed runs then find them in the cache)."""
    work: list[tuple[Any, tuple]] = []
    if modes & {"sweep", "ncu"}:
        work += [(_build, (mnk, v)) for mnk in PROBLEMS for v in (VARIANTS if "sweep" in modes else ("base",))]
    if "hand" in modes:
        names = list(hand_kernels(problem_of(PROBLEMS[0], "base"), **options))
        work += [(_build_hand, (mnk, n, options)) for mnk in PROBLEMS for n in names]
    if "waits" in modes:
        work += [(_build_waits, (tile, s, v)) for tile, s in WAIT_CONFIGS for v in WAITS]
    with ProcessPoolExecutor(max(1, min(jobs, len(work)))) as pool:
        list(pool.map(_call, work))
    return len(work)


def _call(item: tuple[Any, tuple]) -> None:
    fn, job = item
    fn(job)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools feed_gap", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/feed_gap.jsonl)")
    for mode in ("sweep", "ncu", "hand", "waits"):
        parser.add_argument(f"--{mode}", action="store_true", help=f"the {mode} mode (see above)")
    parser.add_argument("--prefetch", action="store_true", help="--hand: and the L2 prefetch variants")
    parser.add_argument("--edits", action="store_true", help="--hand: and the feed's source edits")
    parser.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 1), help="compilations at a time")
    parser.add_argument("--dry", action="store_true", help="no GPU: compile every kernel the modes launch")
    parser.add_argument("--one", metavar="M,N,K", help="launch the default variant's kernels once (ncu's child)")
    args = parser.parse_args(argv)
    if args.one:
        one_launch(tuple(int(x) for x in args.one.split(",")))   # type: ignore[arg-type]
        return 0
    modes = {m for m in ("sweep", "ncu", "hand", "waits") if getattr(args, m)}
    if not modes:
        parser.error("name a mode: --sweep, --ncu, --hand or --waits")
    options = {"prefetch": args.prefetch, "edits": args.edits}
    print(f"{prebuild(modes, args.jobs, **options)} kernels compiled", flush=True)
    if args.dry:
        return 0
    path = out_path("feed_gap", args.out)
    runs = {"sweep": (sweep, sweep_table), "ncu": (ncu, lambda rows: "\n".join(json.dumps(r) for r in rows)),
            "hand": (functools.partial(hand, **options), hand_table), "waits": (waits, waits_table)}
    with JsonLines(path) as out:
        for mode in ("sweep", "ncu", "hand", "waits"):
            if mode in modes:
                run, table = runs[mode]
                rows = run()
                out.extend(rows)
                print(table(rows), flush=True)
    print(f"wrote {path}")
    return 0 if all(r.get("ok", "error" not in r) for r in out.rows) else 1
