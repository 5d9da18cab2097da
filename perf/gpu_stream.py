"""``python -m perf.gpu_stream [--json PATH]``: the TMA streaming copy (pycute plans only) against the driver's
device-to-device memcpy of the same bytes, in one run, on the GPU present. Several tile shapes, swizzles, stage
counts and CTAs per SM are planned and timed; the best is reported, every copy checked bit for bit."""
from __future__ import annotations

import argparse
import datetime
import json
import sys

import numpy as np

import pycute as pc
from pycute import Layout
from pycute.compile import runtime
from pycute.harness.stream import TmaStream

ROWS, COLS = 16384, 16384                      # f32: 1 GiB read and 1 GiB written, far beyond the 50 MB L2


def tiles():
    """(label, shared tile) of f32: plain row-major tiles and the 128B-swizzled K-major tile a GEMM operand uses."""
    plain = [(f"{r}x{c} plain", pc.make_smem_tensor(pc.f32, Layout((r, c), (c, 1)))) for r, c in ((64, 64), (128, 64),
                                                                                            (64, 128), (256, 32))]
    return plain + [("128x32 SW128", pc.kmajor_smem_tensor(pc.f32, 128, 32, "128B")),
                    ("256x32 SW128", pc.kmajor_smem_tensor(pc.f32, 256, 32, "128B"))]


def memcpy_ms(gpu, src, dst, nbytes: int, repeats: int = 5) -> float:
    from cuda.bindings import driver
    from cuda.core import EventOptions
    times = []
    for _ in range(repeats + 1):
        start, stop = (gpu.device.create_event(runtime._timing_options(EventOptions)) for _ in range(2))
        gpu.stream.record(start)
        driver.cuMemcpyDtoDAsync(int(dst.handle), int(src.handle), nbytes, int(gpu.stream.handle))
        gpu.stream.record(stop)
        gpu.stream.sync()
        times.append(stop - start)
    return min(times[1:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.gpu_stream", description=__doc__)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    info = runtime.device_info()
    if info is None or info[1][0] < 9:
        print("skipped: the TMA stream needs a CUDA GPU of compute capability 9.0 or newer")
        return 0
    gpu = runtime.Gpu()
    nbytes = ROWS * COLS * 4
    host = np.random.default_rng(0).integers(0, 1 << 32, ROWS * COLS, dtype=np.uint32)
    src, dst = gpu.upload(host), gpu.alloc(nbytes)
    base = memcpy_ms(gpu, src, dst, nbytes)
    gbps = lambda ms: 2 * nbytes / ms / 1e6                                   # noqa: E731  (read + written)
    array = pc.make_global_tensor(pc.f32, Layout((ROWS, COLS), (COLS, 1)))
    rows = []
    for label, tile in tiles():
        load, store = pc.make_tma_copy(tile, array), pc.make_tma_copy(array, tile)
        for stages in (2, 3, 4, 6):
            for per_sm in (1, 2, 3):
                if stages * per_sm * (-(-load.expect_tx // 1024) * 1024 + 1024) > 220 * 1024:
                    continue
                from cuda.bindings import driver
                driver.cuMemsetD8Async(int(dst.handle), 0, nbytes, int(gpu.stream.handle))
                ms = TmaStream(load, store, stages, per_sm).run(gpu, src, dst)
                ok = bool(np.array_equal(gpu.download(dst, np.uint32, ROWS * COLS), host))
                rows.append({"tile": label, "stages": stages, "ctas_per_sm": per_sm, "ms": ms, "GBps": gbps(ms),
                             "vs_memcpy": base / ms, "exact": ok})
                print(f"{label:14} stages {stages} x{per_sm}/SM  {gbps(ms):7.1f} GB/s  {base / ms:6.1%} of memcpy"
                      f"  {'exact' if ok else 'WRONG BYTES'}", flush=True)
    best = max(rows, key=lambda r: r["GBps"])
    best_sw = max((r for r in rows if "SW128" in r["tile"]), key=lambda r: r["GBps"])
    print(f"\nmemcpy device-to-device: {gbps(base):.1f} GB/s (read + written)")
    print(f"best TMA stream: {best['tile']}, {best['stages']} stages x{best['ctas_per_sm']}/SM: "
          f"{best['GBps']:.1f} GB/s = {best['vs_memcpy']:.1%} of memcpy")
    print(f"best 128B-swizzled: {best_sw['tile']}: {best_sw['GBps']:.1f} GB/s = "
          f"{best_sw['GBps'] / best['GBps']:.1%} of the best")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": info[0], "cc": info[1], "date": datetime.date.today().isoformat(),
                       "bytes_each_way": nbytes, "memcpy_GBps": gbps(base), "configs": rows}, f, indent=1)
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
