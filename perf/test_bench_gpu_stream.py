"""GPU throughput of pycute's copy kernels (pytest-benchmark): the TMA copy, the load-only TMA stream, the cp.async
copy and the DSMEM ring, each in a configuration ``python -m perf.report --gpu`` found good on the H200, over 1 GiB
(far beyond L2). Each benchmark times launches with the benchmark clock, records the CUDA-event rate and its ratio
to the driver's memcpy measured beside it, and checks the copy. Skipped without a GPU of compute capability 9.0+."""
import numpy as np
import pytest

import pycute as pc
from pycute import Layout
from pycute.compile import runtime

from .gpu_stream import COLS, ROWS, memcpy_ms

INFO = runtime.device_info()
REASON = None if INFO is not None and INFO[1][0] >= 9 else "needs a CUDA GPU of compute capability 9.0 or newer"
pytestmark = [pytest.mark.skipif(REASON is not None, reason=REASON or ""), pytest.mark.gpu]


@pytest.fixture(scope="module")
def arrays():
    gpu = runtime.Gpu()
    host = np.random.default_rng(0).integers(0, 1 << 32, ROWS * COLS, dtype=np.uint32)
    src, dst = gpu.upload(host), gpu.alloc(host.nbytes)
    array = pc.make_global_tensor(pc.f32, Layout((ROWS, COLS), (COLS, 1)))
    return gpu, host, src, dst, array, memcpy_ms(gpu, src, dst, host.nbytes)


def _record(benchmark, nbytes: int, ms: float, memcpy: float, read_only: bool = False) -> None:
    benchmark.group = "gpu throughput"
    benchmark.extra_info["GBps"] = round((1 if read_only else 2) * nbytes / ms / 1e6, 1)
    benchmark.extra_info["vs_memcpy"] = round(memcpy / ms, 4)


def test_tma_copy(benchmark, arrays):
    from pycute.harness.stream import TmaStream
    gpu, host, src, dst, array, memcpy = arrays
    tile = pc.make_smem_tensor(pc.f32, Layout((128, 64), (64, 1)))
    stream = TmaStream(pc.make_tma_copy(tile, array), pc.make_tma_copy(array, tile), stages=3)
    ms = benchmark.pedantic(stream.run, args=(gpu, src, dst), kwargs={"repeats": 1}, rounds=5)
    assert np.array_equal(gpu.download(dst, np.uint32, host.size), host)
    _record(benchmark, host.nbytes, stream.run(gpu, src, dst), memcpy)
    assert ms > 0


def test_tma_load_only_stream(benchmark, arrays):
    from pycute.harness.stream_load import TmaLoadStream, position_checksum
    gpu, host, src, _, array, memcpy = arrays
    stream = TmaLoadStream(pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((128, 64), (64, 1))), array), 4)
    ms, checksum = benchmark.pedantic(stream.run, args=(gpu, src), kwargs={"repeats": 1}, rounds=5)
    assert checksum == position_checksum(host)
    _record(benchmark, host.nbytes, stream.run(gpu, src)[0], memcpy, read_only=True)


def test_cp_async_copy(benchmark, arrays):
    from pycute.harness.stream_cp_async import CpAsyncStream
    gpu, host, src, dst, array, memcpy = arrays
    buf = pc.make_smem_tensor(pc.f32, Layout((128, 64, 4), (64, 1, 8192)))[:, :, pc.dynamic("stage")]
    stream = CpAsyncStream(pc.make_cp_async_copy(buf, array, threads=256, completion="arrive"),
                           pc.make_tma_copy(array, buf))
    benchmark.pedantic(stream.run, args=(gpu, src, dst), kwargs={"repeats": 1}, rounds=5)
    assert np.array_equal(gpu.download(dst, np.uint32, host.size), host)
    _record(benchmark, host.nbytes, stream.run(gpu, src, dst), memcpy)


def test_pipeline_feed(benchmark):
    """The GEMM feed (a producer's TMA loads of A and B per k-block through a pipeline, one consumer warp releasing
    each stage unread) beside the hand-minimal kernel of the same loads: its rate and the ratio (target 97%)."""
    from pycute.harness.stream_feed import FeedProblem, FeedStream, MinimalFeed, expected_checksum
    from pycute.pipeline import Consumer
    gpu = runtime.Gpu()
    problem = FeedProblem(pc.bf16, 8192, 8192, 4096, (128, 256, 64))
    a, b = problem.arrays(seed=3)
    d_a, d_b = gpu.upload(a), gpu.upload(b)
    feed = FeedStream(problem, stages=4, consumer=Consumer("warp", 1))
    ms, checksum = benchmark.pedantic(feed.run, args=(gpu, d_a, d_b), kwargs={"repeats": 1}, rounds=5)
    assert checksum == expected_checksum(problem, a, b)
    minimal = MinimalFeed(problem, stages=4).run(gpu, d_a, d_b)
    best = feed.run(gpu, d_a, d_b)[0]
    benchmark.group = "gpu throughput"
    benchmark.extra_info["TBps"] = round(problem.bytes_moved() / best / 1e9, 3)
    benchmark.extra_info["vs_minimal"] = round(minimal / best, 4)


def test_dsmem_ring(benchmark, arrays):
    from pycute.harness.stream_dsmem import DsmemRing
    gpu = arrays[0]
    ring = pc.make_smem_tensor(pc.f32, Layout((16384, 2), (1, 16384)))
    plan = pc.make_dsmem_copy(ring[:, pc.dynamic("recv")], ring[:, pc.dynamic("send")])
    ms, ctas, exact = benchmark.pedantic(DsmemRing(plan, 2).run, args=(gpu, 200), rounds=3)
    assert exact
    benchmark.group = "gpu throughput"
    benchmark.extra_info["GBps_per_sm"] = round(200 * 64 * 1024 / ms / 1e6, 1)


def test_epilogue_stream(benchmark):
    """Fragments through 128B-swizzled shared tiles and TMA stores over 1 GiB, against the memset rate."""
    from .gpu_epilogue import ROWS, COLS, stream
    from pycute.harness.stream_epilogue import memset_ms
    gpu = runtime.Gpu()
    nbytes = ROWS * COLS * 2
    dst = gpu.alloc(nbytes)
    s = stream("wgmma 64x256", 2, 2)
    benchmark.pedantic(s.run, args=(gpu, dst), kwargs={"repeats": 1}, rounds=5)
    assert s.check(gpu.download(dst, np.uint8, nbytes))
    ms, base = s.run(gpu, dst), memset_ms(gpu, dst, nbytes)
    benchmark.group = "gpu throughput"
    benchmark.extra_info["GBps"] = round(nbytes / ms / 1e6, 1)
    benchmark.extra_info["vs_memset"] = round(base / ms, 4)
