"""The epilogue stream's configurations (``pycute.harness.stream_epilogue``) and their sweep: a 1 GiB bf16 output
written by persistent CTAs through shared tiles and TMA stores, against the same run's ``cuMemsetD32Async`` of the
same bytes (the write-only roofline). Shared by ``python -m perf.report --gpu``, ``perf/test_bench_gpu_stream.py``
and ``python -m tools epilogue``."""
from __future__ import annotations

import numpy as np

import pycute as pc
from pycute import Layout
from pycute.copy.smem_ldst import make_epilogue
from pycute.harness.stream_epilogue import EpilogueStream, memset_ms

ROWS, COLS = 16384, 32768                    # bf16: 1 GiB written, far beyond the 50 MB L2
SMEM_PER_SM = 227 * 1024                     # H100 / H200: dynamic shared memory per SM, less the CTA reserve
TARGET = 0.90                                # of the memset rate


def _wgmma(n: int, warpgroups: int) -> Layout:
    rows = 64 * warpgroups
    return Layout(((4, 8, 4 * warpgroups), (2, 2, n // 8)), ((2 * rows, 1, 16), (rows, 8, 8 * rows)))


def _tmem32(n: int) -> Layout:
    return pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 256)[:, 0:n]).fragment


#: label -> (threads, tile rows, tile cols, fragment layout)
FRAGMENTS = {"wgmma 64x128": (128, 64, 128, lambda: _wgmma(128, 1)),
             "wgmma 64x256": (128, 64, 256, lambda: _wgmma(256, 1)),
             "wgmma x2 128x128": (256, 128, 128, lambda: _wgmma(128, 2)),
             "tmem32 128x64": (128, 128, 64, lambda: _tmem32(64))}


def array() -> pc.GlobalTensor:
    return pc.make_global_tensor(pc.bf16, Layout((ROWS, COLS), (COLS, 1)))


def stream(label: str, stages: int, ctas_per_sm: int) -> EpilogueStream:
    threads, rows, cols, layout = FRAGMENTS[label]
    ring = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, rows, cols, "128B"), stages)[:, :, pc.dynamic("stage")]
    plan = make_epilogue(pc.make_fragment(pc.f32, threads, layout()), ring, array())
    return EpilogueStream(plan, ctas_per_sm)


def configs() -> list[tuple[str, int, int]]:
    """Every (fragment, stages, CTAs per SM) whose rings fit one SM's shared memory."""
    out = []
    for label, (_, rows, cols, _) in FRAGMENTS.items():
        tile = -(-rows * cols * 2 // 1024) * 1024
        for stages in (2, 3, 4):
            for per_sm in (1, 2, 3, 4):
                if per_sm * (stages * tile + 2048) <= SMEM_PER_SM:
                    out.append((label, stages, per_sm))
    return out


def gpu_memset(gpu, dst, nbytes: int) -> None:
    """Clear the output (so that a config that writes nothing cannot pass on the last one's bytes)."""
    from cuda.bindings import driver
    driver.cuMemsetD8Async(int(dst.handle), 0xFF, nbytes, int(gpu.stream.handle))


def sweep(gpu, configs_to_run=None, repeats: int = 5) -> dict:
    """Time every configuration (checked element by element) beside the memset; the rows and the best."""
    nbytes = ROWS * COLS * 2
    dst = gpu.alloc(nbytes)
    base = memset_ms(gpu, dst, nbytes)
    rows = []
    for label, stages, per_sm in configs_to_run or configs():
        s = stream(label, stages, per_sm)
        gpu_memset(gpu, dst, nbytes)
        ms = s.run(gpu, dst, repeats)
        got = gpu.download(dst, np.uint8, nbytes)
        rows.append({"config": f"{label}, {stages} stages, {per_sm}/SM", "fragment": label, "stages": stages,
                     "ctas_per_sm": per_sm, "ms": ms, "GBps": nbytes / ms / 1e6, "vs_memset": base / ms,
                     "exact": s.check(got), "store": repr(s.plan.store)})
    base = min(base, memset_ms(gpu, dst, nbytes))
    for r in rows:
        r["vs_memset"] = base / r["ms"]
    exact = [r for r in rows if r["exact"]]
    best = max(exact, key=lambda r: r["vs_memset"]) if exact else None
    return {"bytes": nbytes, "memset_ms": base, "memset_GBps": nbytes / base / 1e6, "runs": rows, "best": best,
            "target": TARGET}
