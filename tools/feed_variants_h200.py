"""Where the feed's gap to the minimal kernel comes from (docs/pipelines.md section 5): the feed of
tools/pipeline_h200.py at its best configurations, beside variants of its waits, each timed in turn with the minimal
kernel of the same loads, ``ROUNDS`` rounds (the fastest of 3 launches per round), checksums verified.

* ``feed``: the pipeline as generated (every consumer lane polls the full barrier with ``mbarrier.try_wait``);
* ``lane``: one elected consumer lane polls, then ``__syncwarp`` (the warp's other lanes do not poll);
* ``spin``: both roles poll with ``mbarrier.test_wait`` (no suspend) instead of ``try_wait``;
* ``lane+spin``: both.

    PYTHONPATH=. python3 tools/feed_variants_h200.py [OUT.jsonl]      (default $OUT/feed-variants-h200.jsonl)
"""
from __future__ import annotations

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONFIGS = [((128, 256, 64), 3), ((128, 128, 64), 4)]
ROUNDS = 7
SPIN = """
__device__ __forceinline__ void feed_spin_wait(unsigned mbar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\\n\\t.reg .pred p;\\n\\tmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\\n\\t"
                 "selp.u32 %0, 1, 0, p;\\n\\t}" : "=r"(done) : "r"(mbar), "r"(parity) : "memory");
  } while (!done);
}
"""


def variant_source(source: str, variant: str) -> str:
    """The feed's source with the variant's waits (textual: an experiment, not a plan)."""
    if "lane" in variant:
        source = source.replace("feed_consumer_wait(b, st);",
                                "if (pycute_elect_one_sync()) feed_consumer_wait(b, st);\n        __syncwarp();")
    if "spin" in variant:
        head = '#include "pycute/pipeline.cuh"\n'
        source = source.replace(head, head + SPIN, 1).replace("pycute_pipeline_wait(", "feed_spin_wait(")
    return source


def main(path: str) -> None:
    import numpy as np

    import pycute as pc
    from pycute.compile import runtime
    from pycute.compile.nvrtc import compile_cuda
    from pycute.harness.stream_feed import ALIGN_SLACK, FeedProblem, FeedStream, MinimalFeed, _launch_args, \
        _time, expected_checksum
    gpu = runtime.Gpu()
    rows = []
    with open(path, "w") as out:
        for tile, stages in CONFIGS:
            problem = FeedProblem(pc.bf16, 8192, 8192, 4096, tile)
            a, b = problem.arrays(seed=3)
            d_a, d_b = gpu.upload(a), gpu.upload(b)
            want, moved = expected_checksum(problem, a, b), problem.bytes_moved()
            minimal = MinimalFeed(problem, stages=stages)
            feed = FeedStream(problem, stages=stages)
            maps = _launch_args(gpu, problem.loads(None), d_a, d_b)
            grid, block = feed.grid(gpu), 32 * feed.warps
            smem = feed.pipeline.smem_bytes + ALIGN_SLACK
            kernels = {v: gpu.kernel(compile_cuda(variant_source(feed.source(), v), arch="sm_90a"), "feed_stream")
                       for v in ("feed", "lane", "spin", "lane+spin")}
            ok = {}
            for v, kernel in kernels.items():
                checksum = gpu.upload(np.zeros(1, dtype=np.uint64))
                gpu.launch(kernel, *maps, checksum, np.int32(1), grid=grid, block=block, dynamic_smem=smem)
                ok[v] = int(gpu.download(checksum, np.uint64, 1)[0]) == want
            times: dict[str, list[float]] = {"minimal": [], **{v: [] for v in kernels}}
            checksum = gpu.upload(np.zeros(1, dtype=np.uint64))
            for _ in range(ROUNDS):
                times["minimal"].append(minimal.run(gpu, d_a, d_b, repeats=3))
                for v, kernel in kernels.items():
                    times[v].append(_time(gpu, kernel, (*maps, checksum, np.int32(0)), grid, block, smem, 3))
            for v, ms in times.items():
                row = {"tile": list(tile), "stages": stages, "kernel": v, "ok": ok.get(v, True), "ms_rounds": ms,
                       "TBps_best": moved / min(ms) / 1e9, "TBps_median": moved / statistics.median(ms) / 1e9}
                rows.append(row)
                out.write(json.dumps(row) + "\n")
                print(f"{'x'.join(map(str, tile)):<12} {stages} {v:<10} best {row['TBps_best']:6.2f} median "
                      f"{row['TBps_median']:6.2f} {'ok' if row['ok'] else 'WRONG'}", flush=True)
    best_min = max(r["TBps_best"] for r in rows if r["kernel"] == "minimal")
    for v in ("feed", "lane", "spin", "lane+spin"):
        best = max(r["TBps_best"] for r in rows if r["kernel"] == v and r["ok"])
        print(f"best {v:<10} {best:6.2f} TB/s = {best / best_min:.1%} of the best minimal {best_min:.2f}")


if __name__ == "__main__":
    default = os.path.join(os.environ.get("OUT", "."), "feed-variants-h200.jsonl")
    main(sys.argv[1] if len(sys.argv) > 1 else default)
