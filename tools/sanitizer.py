"""Is every kernel pycute generates or ships clean under compute-sanitizer?

Each kernel runs as a user runs it under compute-sanitizer's memcheck, racecheck, synccheck and initcheck on the GPU
present (docs/sanitizer.md): the round-trip harnesses, the streams, the examples' and kernels' soft builds and the
benchmarks' kernels, each once on small inputs.

    PYTHONPATH=. python -m tools sanitizer [OUT.jsonl] [--only SUBSTRING ...] [--tools memcheck,racecheck]
    PYTHONPATH=. python -m tools sanitizer --build         # no GPU: compile every case for sm_90a
    PYTHONPATH=. python -m tools sanitizer --dry           # no GPU: and run each up to the launch
    PYTHONPATH=. python -m tools sanitizer --list

Each (case, tool) is its own process with a time limit (a fault or a hang loses one run): first every case plainly
(its result checked against the reference; this also fills the compile cache), then under each tool,
``compute-sanitizer --tool T python -m tools sanitizer --case NAME``. One JSON line per run (case, tool,
errors, warnings, the tool's summary line, its first findings, the command) to OUT.jsonl (default
``$OUT/sanitizer-h200.jsonl``, else ``docs/sanitizer-h200.jsonl``), written as the runs finish; a table last.

A case is a row of ``CASES``: a name, the class whose kernel it runs, ``build(arch)`` (NVRTC only) and
``launch(gpu, arch)`` (runs it, returns whether the result is right). Append a row for each new kernel.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

ROOT = Path(__file__).resolve().parents[1]

#: compute-sanitizer's tools, in the order they run. initcheck is cheap on these kernels (small inputs, all
#: uploaded), so it runs too.
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
#: The run without a tool: the case's own check, and the compile cache filled for the tools' runs.
PLAIN = "plain"
#: The arch every case builds for without a GPU (the H200's).
BUILD_ARCH = "sm_90a"


@attrs.frozen
class SanitizeCase:
    """One kernel as a user runs it: ``kernel`` names the class that generates it, ``build(arch)`` compiles it
    (no GPU), ``launch(gpu, arch)`` runs it once on small inputs and says whether the result is right.
    ``children``: the case starts processes of its own (compute-sanitizer then needs ``--target-processes all``).
    ``tool_options``: a tool's further flags for this case, each where the tool itself asks for it."""

    name: str
    kernel: str
    build: Callable[[str], Any] = attrs.field(repr=False)
    launch: Callable[[Any, str], bool] = attrs.field(repr=False)
    timeout: float = 240.0
    children: bool = False
    tool_options: dict[str, tuple[str, ...]] = attrs.field(factory=dict)


def _same(pair: tuple) -> bool:
    import numpy as np
    got, want = pair
    return bool(np.array_equal(got, want))


# ---- the round trips -------------------------------------------------------------------------------------------

def cp_async_case(name: str) -> SanitizeCase:
    def make():
        from pycute.copy.cp_async import make_cp_async_copy
        from pycute.harness.cp_async import CpAsyncRoundTrip
        from tests.copy.flat_cases import CP_ASYNC
        _, g, s, options, tiles = next(c for c in CP_ASYNC if c[0] == name)
        return CpAsyncRoundTrip(make_cp_async_copy(s, g, **options)), tiles

    def launch(gpu, arch: str) -> bool:
        rt, tiles = make()
        runs = [rt.run(gpu, tile, seed=k, arch=arch) for k, tile in enumerate(tiles)]
        return all(_same(r["smem"]) and r["spins"] < 1 << 26 for r in runs)
    return SanitizeCase(f"cp-async/{name}", "pycute.harness.cp_async.CpAsyncRoundTrip",
                        lambda arch: make()[0].compile(arch), launch)


def bulk_case(name: str) -> SanitizeCase:
    def make():
        from pycute.copy.bulk import make_bulk_copy
        from pycute.harness.bulk import BulkRoundTrip
        from tests.copy.flat_cases import BULK
        _, g, s, tiles = next(c for c in BULK if c[0] == name)
        return BulkRoundTrip(make_bulk_copy(s, g), make_bulk_copy(g, s)), tiles

    def launch(gpu, arch: str) -> bool:
        rt, tiles = make()
        runs = [rt.run(gpu, tile, seed=k, arch=arch) for k, tile in enumerate(tiles)]
        return all(_same(r["smem"]) and _same(r["array"]) and r["spins"] < 1 << 26 for r in runs)
    return SanitizeCase(f"bulk/{name}", "pycute.harness.bulk.BulkRoundTrip", lambda arch: make()[0].compile(arch),
                        launch)


def dsmem_case(name: str) -> SanitizeCase:
    def make():
        from pycute.copy.dsmem import make_dsmem_copy
        from pycute.harness.bulk import DsmemRoundTrip
        from tests.copy.flat_cases import DSMEM
        _, src, dst, clusters = next(c for c in DSMEM if c[0] == name)
        return [DsmemRoundTrip(make_dsmem_copy(dst, src), ctas) for ctas in clusters]

    def launch(gpu, arch: str) -> bool:
        runs = [rt.run(gpu, seed=k, arch=arch) for k, rt in enumerate(make())]
        return all(_same(r["smem"]) and r["spins"] < 1 << 26 for r in runs)
    return SanitizeCase(f"dsmem/{name}", "pycute.harness.bulk.DsmemRoundTrip",
                        lambda arch: [rt.compile(arch) for rt in make()], launch)


def tma_case(name: str, grid_constant: bool = False) -> SanitizeCase:
    def make():
        from pycute.copy.tma import make_tma_copy
        from pycute.harness.tma import TmaRoundTrip
        from tests.copy.tma.cases import CASES, MULTICAST, NAN_FILL, REDUCE
        if any(c[0] == name for c in MULTICAST):
            _, g, s, ctas, tiles = next(c for c in MULTICAST if c[0] == name)
            return TmaRoundTrip(make_tma_copy(s, g, multicast=ctas), None), tiles
        if any(c[0] == name for c in NAN_FILL):
            _, g, s, tiles = next(c for c in NAN_FILL if c[0] == name)
            return TmaRoundTrip(make_tma_copy(s, g, oob_fill="nan"), None), tiles
        if any(c[0] == name for c in REDUCE):
            _, g, s, op, tiles = next(c for c in REDUCE if c[0] == name)
            return TmaRoundTrip(make_tma_copy(s, g), make_tma_copy(g, s, reduce=op)), tiles
        _, g, s, tiles = next(c for c in CASES if c[0] == name)
        return TmaRoundTrip(make_tma_copy(s, g), make_tma_copy(g, s), grid_constant), tiles

    def launch(gpu, arch: str) -> bool:
        rt, tiles = make()
        runs = [rt.run(gpu, tile, seed=k, arch=arch) for k, tile in enumerate(tiles)]
        return all(_same(r["smem"]) and (rt.store is None or _same(r["array"])) and r["spins"] < 1 << 26
                   for r in runs)
    return SanitizeCase(f"tma/{name}{'/grid-constant' if grid_constant else ''}", "pycute.harness.tma.TmaRoundTrip",
                        lambda arch: make()[0].compile(arch), launch)


def tcgen05_cp_case(name: str, timed: bool = False) -> SanitizeCase:
    def make():
        from pycute.harness.tcgen05_cp import RoundTrip
        from tests.gpu.test_gpu_roundtrip import PLANS
        return RoundTrip(next(p for n, p in PLANS if n == name), "rt")

    def launch(gpu, arch: str) -> bool:
        out = make().run(gpu, arch=arch, soft=True, seed=5, timed=timed)
        return _same(out[:2]) and (not timed or all(c > 0 for c in out[2].copy_cycles))
    # The pair's soft model arrives on both CTAs' barriers: synccheck's default count of tracked barriers overflows
    # ("Try using --num-cuda-barriers"); with 64 tracked the pair runs clean (docs/sanitizer.md).
    options = {"synccheck": ("--num-cuda-barriers", "64")} if name.endswith("g2") or "-g2-" in name else {}
    return SanitizeCase(f"tcgen05-cp-soft/{name}{'/timed' if timed else ''}", "pycute.harness.tcgen05_cp.RoundTrip",
                        lambda arch: make().compile(arch, soft=True, timed=timed), launch, tool_options=options)


def ldst_case(name: str) -> SanitizeCase:
    def make():
        from tests.gpu.ldst_cases import CASES
        return next(rt for n, rt in CASES if n == name)
    return SanitizeCase(f"tcgen05-ldst-soft/{name}", "pycute.harness.tcgen05_ldst.LdStRoundTrip",
                        lambda arch: make().compile(arch, soft=True),
                        lambda gpu, arch: _same(make().run(gpu, arch, soft=True, seed=3)))


def mma_case(name: str) -> SanitizeCase:
    """The MMA soft round trip: a dense bf16 tile, and NVFP4 with its scale factors copied by tcgen05.cp."""
    def make():
        import pycute as pc
        from pycute.harness.mma import MmaRoundTrip
        if name == "bf16":
            return MmaRoundTrip(pc.make_mma(pc.mma_accumulator(pc.f32, 128, 256),
                                            pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"),
                                            pc.kmajor_smem_tensor(pc.bf16, 256, 64, "128B")))
        return MmaRoundTrip(pc.make_mma(pc.mma_accumulator(pc.f32, 128, 256),
                                        pc.kmajor_smem_tensor("f4e2m1", 128, 256, "128B"),
                                        pc.kmajor_smem_tensor("f4e2m1", 256, 256, "128B"), kind="mxf4nvf4",
                                        scale_type="ue4m3", sfa=pc.scale_factor_tensor("mxf4nvf4", 128, 4, 4),
                                        sfb=pc.scale_factor_tensor("mxf4nvf4", 256, 4, 4)))
    return SanitizeCase(f"mma-soft/{name}", "pycute.harness.mma.MmaRoundTrip",
                        lambda arch: make().compile(arch, soft=True),
                        lambda gpu, arch: _same(make().run(gpu, arch=arch, soft=True)))


def chain_case() -> SanitizeCase:
    def make():
        import pycute as pc
        from pycute import Layout, TCol, TLane
        from pycute.harness.chain import TmaCpChain
        array = pc.make_global_tensor(pc.bf16, Layout((300, 128), (128, 1)))
        tile = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
        tmem = pc.make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=32)
        return TmaCpChain(pc.make_tma_copy(tile, array), pc.make_tiled_copy(tmem, tile))

    def launch(gpu, arch: str) -> bool:
        runs = [make().run(gpu, tile, arch=arch, soft=True) for tile in ((0, 0), (2, 1))]
        return all(_same(r["tmem"]) and r["spins"] < 1 << 26 for r in runs)
    return SanitizeCase("chain-soft/bf16-kmajor-128B", "pycute.harness.chain.TmaCpChain",
                        lambda arch: make().compile(arch, soft=True), launch)


# ---- the streams (the perf benchmarks' kernels, on a small array) --------------------------------------------------

STREAM_ROWS, STREAM_COLS = 256, 256


def _stream_arrays(gpu):
    """The array's words on the host, and on the device with a zeroed destination of the same size."""
    import numpy as np
    host = np.random.default_rng(0).integers(0, 1 << 32, STREAM_ROWS * STREAM_COLS, dtype=np.uint32)
    return host, gpu.upload(host), gpu.upload(np.zeros_like(host))


def _copied(gpu, dst, host) -> bool:
    import numpy as np
    return bool(np.array_equal(gpu.download(dst, np.uint32, host.size), host))


def _array():
    import pycute as pc
    return pc.make_global_tensor(pc.f32, pc.Layout((STREAM_ROWS, STREAM_COLS), (STREAM_COLS, 1)))


def tma_stream_case(swizzled: bool) -> SanitizeCase:
    def make():
        import pycute as pc
        from pycute.harness.stream import TmaStream
        tile = pc.kmajor_smem_tensor(pc.f32, 128, 32, "128B") if swizzled else \
            pc.make_smem_tensor(pc.f32, pc.Layout((64, 64), (64, 1)))
        return TmaStream(pc.make_tma_copy(tile, _array()), pc.make_tma_copy(_array(), tile), stages=3)

    def launch(gpu, arch: str) -> bool:
        host, src, dst = _stream_arrays(gpu)
        make().run(gpu, src, dst, repeats=1, arch=arch)
        return _copied(gpu, dst, host)
    return SanitizeCase(f"stream/tma-copy{'-sw128' if swizzled else ''}", "pycute.harness.stream.TmaStream",
                        lambda arch: make().compile(arch), launch)


def load_stream_case() -> SanitizeCase:
    def make():
        import pycute as pc
        from pycute.harness.stream_load import TmaLoadStream
        return TmaLoadStream(pc.make_tma_copy(pc.make_smem_tensor(pc.f32, pc.Layout((128, 64), (64, 1))), _array()),
                             4)

    def launch(gpu, arch: str) -> bool:
        from pycute.harness.stream_load import position_checksum
        host, src, _ = _stream_arrays(gpu)
        return make().run(gpu, src, repeats=1, arch=arch)[1] == position_checksum(host)
    return SanitizeCase("stream/tma-load-only", "pycute.harness.stream_load.TmaLoadStream",
                        lambda arch: make().compile(arch), launch)


def cp_async_stream_case() -> SanitizeCase:
    def make():
        import pycute as pc
        from pycute.harness.stream_cp_async import CpAsyncStream
        buf = pc.make_smem_tensor(pc.f32, pc.Layout((128, 64, 4), (64, 1, 8192)))[:, :, pc.dynamic("stage")]
        return CpAsyncStream(pc.make_cp_async_copy(buf, _array(), threads=256, completion="arrive"),
                             pc.make_tma_copy(_array(), buf))

    def launch(gpu, arch: str) -> bool:
        host, src, dst = _stream_arrays(gpu)
        make().run(gpu, src, dst, repeats=1, arch=arch)
        return _copied(gpu, dst, host)
    return SanitizeCase("stream/cp-async-copy", "pycute.harness.stream_cp_async.CpAsyncStream",
                        lambda arch: make().compile(arch), launch)


def dsmem_ring_case(ctas: int) -> SanitizeCase:
    def make():
        import pycute as pc
        from pycute.harness.stream_dsmem import DsmemRing
        ring = pc.make_smem_tensor(pc.f32, pc.Layout((4096, 2), (1, 4096)))
        return DsmemRing(pc.make_dsmem_copy(ring[:, pc.dynamic("recv")], ring[:, pc.dynamic("send")]), ctas)
    return SanitizeCase(f"stream/dsmem-ring-x{ctas}", "pycute.harness.stream_dsmem.DsmemRing",
                        lambda arch: make().compile(arch),
                        lambda gpu, arch: make().run(gpu, 5, repeats=1, arch=arch)[2])


# ---- the examples' soft builds ----------------------------------------------------------------------------------

def q_tile_case() -> SanitizeCase:
    def make():
        from examples.attention_q_tile import QTile
        return QTile()
    return SanitizeCase("example/attention-q-tile-soft", "examples.attention_q_tile.QTile",
                        lambda arch: make().compile(arch, soft=True),
                        lambda gpu, arch: _same(make().run(gpu, arch, soft=True)))


def sf_pipeline_case(cta_group: int) -> SanitizeCase:
    def make():
        from examples.blockscaled_sf_pipeline import SfPipeline
        return SfPipeline(cta_group)
    return SanitizeCase(f"example/blockscaled-sf-pipeline-g{cta_group}-soft",
                        "examples.blockscaled_sf_pipeline.SfPipeline", lambda arch: make().compile(arch, soft=True),
                        lambda gpu, arch: _same(make().run(gpu, arch, soft=True)))


def gemm_case(kind: str, cta_group: int) -> SanitizeCase:
    def make():
        from pycute.kernels.blockscaled_gemm import BlockScaledGemm
        return BlockScaledGemm(kind, cta_group, 128, 256, 256, sms=cta_group)   # one CTA (pair) walks both tiles
    return SanitizeCase(f"example/blockscaled-gemm-{kind}-g{cta_group}-soft",
                        "pycute.kernels.blockscaled_gemm.config.BlockScaledGemm", lambda arch: make().compile(arch, soft=True),
                        lambda gpu, arch: _same(make().run(gpu, arch=arch, soft=True, seed=7)), timeout=420.0)


def wgmma_case(index: int) -> SanitizeCase:
    """A wgmma round trip (real on Hopper): D written back equals the emulator's."""
    def make():
        from pycute.harness.wgmma import WGMMA_CASES
        return WGMMA_CASES[index].roundtrip()

    def launch(gpu, arch: str) -> bool:
        got, want = make().run(gpu, seed=7, arch=arch)
        return bool((got == want).all())
    return SanitizeCase(f"wgmma/{index}", "pycute.harness.wgmma.WgmmaRoundTrip",
                        lambda arch: make().compile(arch), launch)


def fragments_case(kind: str) -> SanitizeCase:
    """A register-fragment round trip (real on Hopper): the coordinate helpers, a row reduction's functions, or the
    S = Q K^T -> P -> O = P V chain with e4m3's shuffles (docs/fragments.md)."""
    def make():
        import pycute as pc
        from pycute.harness.fragment_chain import ChainCase
        from pycute.harness.fragments import CoordsRoundTrip, ReduceRoundTrip
        if kind == "coords":
            return CoordsRoundTrip(pc.fragment_coords(pc.wgmma_accumulator(pc.f32, 128, 64)))
        if kind == "reduce":
            return ReduceRoundTrip(pc.make_reduction(pc.wgmma_accumulator(pc.f32, 64, 64)))
        return ChainCase("f8e4m3", d=32).roundtrip()

    def launch(gpu, arch: str) -> bool:
        import numpy as np
        from pycute.harness.fragments import same_floats
        rt = make()
        if kind == "coords":
            return bool(np.array_equal(rt.run(gpu, arch=arch), rt.expected()))
        if kind == "reduce":
            return bool(same_floats(rt.run(gpu, 7, arch), rt.expected(7)).all())
        check = rt.check(rt.run(gpu, 7, arch), 7)
        return all(v == 0 for k, v in check.items() if k not in ("s_rounded", "elements"))
    kernel = {"coords": "pycute.harness.fragments.CoordsRoundTrip",
              "reduce": "pycute.harness.fragments.ReduceRoundTrip",
              "chain": "pycute.harness.fragment_chain.ChainRoundTrip"}[kind]
    return SanitizeCase(f"fragments/{kind}", kernel, lambda arch: make().compile(arch), launch)


def epilogue_case(name: str) -> SanitizeCase:
    """A fragment through stmatrix / st.shared and a TMA store to global memory, and back (real on Hopper)."""
    def make():
        from tests.gpu.epilogue_probe import roundtrip
        return roundtrip(name)

    def launch(gpu, arch: str) -> bool:
        return _differences_none(make().run(gpu, arch=arch))
    return SanitizeCase(f"epilogue/{name}", "pycute.harness.epilogue.EpilogueRoundTrip",
                        lambda arch: make().compile(arch), launch)


def _differences_none(result: dict) -> bool:
    """An epilogue round trip's result ({part: (got, want)}) is right when every part is equal."""
    import numpy as np
    return all(np.array_equal(got, want) for got, want in result.values())


def conversion_case() -> SanitizeCase:
    def make():
        from pycute.harness.epilogue import ConversionProbe
        return ConversionProbe(count=1 << 12)
    return SanitizeCase("epilogue/conversions", "pycute.harness.epilogue.ConversionProbe",
                        lambda arch: __import__("pycute").compile.compile_cuda(make().source(), arch=arch),
                        lambda gpu, arch: all(f["differ"] == 0 for f in make().run(gpu, arch=arch)))


def epilogue_stream_case() -> SanitizeCase:
    """The epilogue stream (wgmma fragments -> bf16 -> 128B-swizzled ring -> TMA stores) over a small array."""
    def make():
        import pycute as pc
        from perf.gpu_epilogue import _wgmma
        from pycute.copy.smem_ldst import make_epilogue
        from pycute.harness.stream_epilogue import EpilogueStream
        ring = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, 64, 128, "128B"), 2)[:, :, pc.dynamic("stage")]
        array = pc.make_global_tensor(pc.bf16, pc.Layout((512, 1024), (1024, 1)))
        return EpilogueStream(make_epilogue(pc.make_fragment(pc.f32, 128, _wgmma(128, 1)), ring, array))

    def launch(gpu, arch: str) -> bool:
        import numpy as np
        stream = make()
        dst = gpu.upload(np.zeros(512 * 1024 * 2, dtype=np.uint8))
        stream.run(gpu, dst, repeats=1, arch=arch)
        return stream.check(gpu.download(dst, np.uint8, 512 * 1024 * 2))
    return SanitizeCase("stream/epilogue-wgmma-64x128", "pycute.harness.stream_epilogue.EpilogueStream",
                        lambda arch: make().compile(arch), launch)


def epilogue_example_case() -> SanitizeCase:
    def make():
        from examples.epilogue import Epilogue
        return Epilogue()

    def launch(gpu, arch: str) -> bool:
        import numpy as np
        got, want = make().run(gpu, arch, soft=True)
        return bool(np.array_equal(got, want))
    return SanitizeCase("example/epilogue-soft", "examples.epilogue.Epilogue",
                        lambda arch: make().compile(arch, soft=True), launch)


def feed_case(kind: str) -> SanitizeCase:
    """The GEMM feed (a pipeline whose consumers only release stages) and the minimal kernel of the same loads."""
    def parts():
        import pycute as pc
        from pycute.harness.stream_feed import FeedProblem, FeedStream, MinimalFeed, expected_checksum
        problem = FeedProblem(pc.bf16, 512, 512, 512, (128, 128, 64))
        kernel = MinimalFeed(problem, stages=3) if kind == "minimal" else \
            FeedStream(problem, stages=3, consumer=pc.Consumer("warpgroup", 2), multicast=2)
        return problem, kernel, expected_checksum

    def launch(gpu, arch: str) -> bool:
        problem, kernel, expected_checksum = parts()
        a, b = problem.arrays(seed=3)
        if kind == "minimal":
            return kernel.run(gpu, gpu.upload(a), gpu.upload(b), repeats=1) > 0
        _, got = kernel.run(gpu, gpu.upload(a), gpu.upload(b), repeats=1)
        return got == expected_checksum(problem, a, b)
    name = "pycute.harness.stream_feed." + ("MinimalFeed" if kind == "minimal" else "FeedStream")
    return SanitizeCase(f"stream/feed-{kind}", name, lambda arch: parts()[1].compile(arch), launch)


def schedule_case() -> SanitizeCase:
    def make():
        from pycute.harness.schedule import ScheduleProbe
        from pycute.pipeline import make_tile_scheduler
        return ScheduleProbe(make_tile_scheduler(None, cluster=(2, 1), swizzle=3), (13, 9))

    def launch(gpu, arch: str) -> bool:
        import numpy as np
        got, want = make().run(gpu, arch=arch)
        return bool(np.array_equal(got, want))
    return SanitizeCase("stream/scheduler-probe", "pycute.harness.schedule.ScheduleProbe",
                        lambda arch: make().compile(arch), launch)


def grouped_case() -> SanitizeCase:
    def make():
        from examples.grouped_tma import GroupedTma
        return GroupedTma()

    def launch(gpu, arch: str) -> bool:
        import numpy as np
        result = make().run(gpu)
        pairs = [result["c"], *result["one"], *result["group"]]
        return all(np.array_equal(got, want) for got, want in pairs)
    return SanitizeCase("example/grouped-tma", "examples.grouped_tma.GroupedTma", lambda arch: make().compile(arch),
                        launch)


def hopper_gemm_case(dtype: str) -> SanitizeCase:
    """The Hopper GEMM (real wgmma, TMA multicast, the epilogue's TMA stores) on a problem of partial tiles."""
    def make():
        from pycute.kernels.hopper_gemm import HopperGemm
        return HopperGemm(dtype=dtype)  # type: ignore[arg-type]

    def launch(gpu, arch: str) -> bool:
        from perf.gpu_gemm import Launch, inputs, reference, rel_err, run_ours
        g = make()
        a, b = inputs(300, 520, 1040, dtype)
        d, _ = run_ours(g, Launch(g), a, b, 0.5)
        return rel_err(d, reference(a, b, 0.5)) < 1e-2
    return SanitizeCase(f"example/hopper-gemm-{dtype}", "pycute.kernels.hopper_gemm.HopperGemm",
                        lambda arch: make().compile(), launch)


def im2col_case(name: str) -> SanitizeCase:
    """A TMA im2col load of one implicit-GEMM tile (a convolution's activations) against numpy's im2col."""
    def make():
        import pycute as pc
        from pycute.harness.im2col import Im2colRoundTrip
        from tests.copy.tma.cases_im2col import IM2COL
        _, g, s, conv, tiles = next(c for c in IM2COL if c[0] == name)
        return Im2colRoundTrip(pc.make_im2col_copy(s, g, conv)), tiles[0]

    def launch(gpu, arch: str) -> bool:
        import numpy as np
        rt, (mt, kt) = make()
        r = rt.run(gpu, mt, kt, arch=arch)
        return all(np.array_equal(got, want) for got, want in (r["smem"], r["tile"]))
    return SanitizeCase(f"tma/im2col-{name}", "pycute.harness.im2col.Im2colRoundTrip",
                        lambda arch: make()[0].compile(arch), launch)


# ---- the registry -------------------------------------------------------------------------------------------------

def _flat_names(table: str) -> list[str]:
    from tests.copy import flat_cases
    return [c[0] for c in getattr(flat_cases, table)]


def fragments_case(kind: str, name: str, kernel: str) -> SanitizeCase:
    """A fragments round trip (coordinates, a row reduction, the S -> P -> O chain; tools/fragments_roundtrip.py):
    what the GPU's threads write equals the tables / the emulator."""
    def launch(gpu, arch: str) -> bool:
        from pycute.compile import runtime  # noqa: F401  (the Gpu the round trip runs on)
        from tools import fragments_roundtrip as fr
        rt = fr.roundtrip(kind, name)
        out = fr._run_gpu(kind, rt)
        return fr.passed({"kind": kind, "case": name, **fr.verdict(kind, rt, out)})

    def build(arch: str) -> Any:
        from tools import fragments_roundtrip as fr
        return fr.roundtrip(kind, name).compile(arch)
    return SanitizeCase(f"fragments/{kind}-{name.replace(' ', '-')}", kernel, build, launch)


def _chain_name() -> str:
    from pycute.harness.fragment_chain import CHAIN_CASES
    return CHAIN_CASES[0].name


def _wgmma_cases() -> list:
    from pycute.harness.wgmma import WGMMA_CASES
    return list(WGMMA_CASES)


def registry() -> list[SanitizeCase]:
    """Every case, in the order they run. Append a row (or a family) for each new kernel pycute generates or ships."""
    return ([cp_async_case(n) for n in _flat_names("CP_ASYNC")] +
            [bulk_case(n) for n in _flat_names("BULK")] +
            [dsmem_case(n) for n in _flat_names("DSMEM")] +
            [tma_case(n) for n in ("f32-2d-plain", "bf16-kmajor-128B", "u8-kmajor-128B", "f32-1d-256", "u8-5d",
                                   "f32-tile-at-8KiB", "f32-box-larger-than-array", "f4-kmajor-128B-widened-to-u8",
                                   "bf16-kmajor-128B-x4", "f32-nan-fill", "bf16-kmajor-128B-add", "u32-xor")] +
            [tma_case("f32-2d-plain", grid_constant=True), im2col_case("bf16-3x3-pad1-128B")] +
            [tcgen05_cp_case("demo-g1"), tcgen05_cp_case("demo-g2"), tcgen05_cp_case("128x256b-g2-128B-bf16"),
             tcgen05_cp_case("demo-g1", timed=True)] +
            [ldst_case("cp-g1-bf16-128B-ld-16x256b"), ldst_case("st-M256-g2-f16-16x64b-ld-16x32bx2")] +
            [mma_case("bf16"), mma_case("nvfp4"), chain_case()] +
            [tma_stream_case(False), tma_stream_case(True), load_stream_case(), cp_async_stream_case(),
             dsmem_ring_case(2), dsmem_ring_case(4)] +
            [wgmma_case(i) for i in (0, 1, len(_wgmma_cases()) - 1)] +
            [epilogue_case(n) for n in ("wgmma-bf16-row-128B", "tmem32-e4m3-row-32B", "user-f32-row-128B")] +
            [fragments_case(k) for k in ("coords", "reduce", "chain")] +
            [conversion_case(), epilogue_stream_case(), epilogue_example_case()] +
            [feed_case("warpgroups-multicast"), feed_case("minimal"), schedule_case(), grouped_case()] +
            [hopper_gemm_case("bf16"), hopper_gemm_case("e4m3")] +
            [fragments_case("coords", "wgmma D f32 64x256", "pycute.harness.fragments.CoordsRoundTrip"),
             fragments_case("reduce", "wgmma D 64x256 rows", "pycute.harness.fragments.ReduceRoundTrip"),
             fragments_case("chain", _chain_name(), "pycute.harness.fragment_chain.ChainRoundTrip")] +
            [q_tile_case(), sf_pipeline_case(1), sf_pipeline_case(2), gemm_case("mxf8", 1), gemm_case("nvfp4", 2)])


# ---- compute-sanitizer's report -------------------------------------------------------------------------------------

_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_BANNER = re.compile(r"^========= ?(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|$)")


def parse_report(text: str) -> dict:
    """``{"errors", "warnings", "summary", "findings"}`` from compute-sanitizer's output: the counts its summary
    line gives (None without one: the tool did not finish), that line, and the report's first lines."""
    race = _RACE_SUMMARY.findall(text)
    errors = _ERROR_SUMMARY.findall(text)
    summary = next((line.strip() for line in reversed(text.splitlines())
                    if "RACECHECK SUMMARY" in line or "ERROR SUMMARY" in line), None)
    if race:
        n_errors, n_warnings = int(race[-1][1]), int(race[-1][2])
    elif errors:
        n_errors, n_warnings = int(errors[-1]), 0
    else:
        n_errors = n_warnings = None
    findings = [line.rstrip() for line in text.splitlines()
                if line.startswith("=========") and not _BANNER.match(line)][:12]
    return {"errors": n_errors, "warnings": n_warnings, "summary": summary, "findings": findings}


def verdict(text: str) -> bool | None:
    """The case's own check (the last JSON line its process printed), or None when it printed none."""
    for line in reversed(text.splitlines()):
        if line.startswith('{"sanitize_case"'):
            return bool(json.loads(line)["ok"])
    return None


# ---- running ---------------------------------------------------------------------------------------------------

def find_sanitizer() -> str | None:
    """compute-sanitizer on PATH, else the newest CUDA toolkit's under /usr/local."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    candidates = sorted(Path("/usr/local").glob("cuda*/bin/compute-sanitizer"))
    return str(candidates[-1]) if candidates else None


def command(case: SanitizeCase, tool: str, sanitizer: str) -> list[str]:
    """The process one (case, tool) runs in: the case's own entry, wrapped in the tool unless ``tool`` is PLAIN."""
    inner = [sys.executable, "-m", "tools", "sanitizer", "--case", case.name]
    if tool == PLAIN:
        return inner
    return [sanitizer, "--tool", tool, *(["--target-processes", "all"] if case.children else []),
            *case.tool_options.get(tool, ()), *inner]


def run_one(case: SanitizeCase, tool: str, sanitizer: str, timeout: float | None = None) -> dict:
    """Run one (case, tool) in its own process group, killed after its time limit; its JSON record."""
    cmd = command(case, tool, sanitizer)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env,
                            start_new_session=True)
    try:
        text, timed_out = proc.communicate(timeout=timeout or case.timeout)[0], False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        text, timed_out = proc.communicate()[0], True
    report = parse_report(text) if tool != PLAIN else {"errors": None, "warnings": None, "summary": None,
                                                          "findings": []}
    return {"case": case.name, "kernel": case.kernel, "tool": tool, **report, "ok": verdict(text),
            "returncode": proc.returncode, "timed_out": timed_out, "seconds": round(time.time() - start, 1),
            "command": shlex.join(c if not c.startswith(str(ROOT)) else os.path.relpath(c, ROOT) for c in cmd),
            "tail": text[-1500:] if verdict(text) is not True or timed_out else ""}


def run_all(cases: list[SanitizeCase], tools: Iterable[str], sanitizer: str, out_path: Path, jobs: int,
            timeout: float | None = None) -> list[dict]:
    """PLAIN first for every case (if asked), then each tool; records written to ``out_path`` as they finish."""
    records: list[dict] = []
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with open(out_path, "w") as out, ThreadPoolExecutor(max_workers=jobs) as pool:
        phases = [[t] for t in tools if t == PLAIN] + [[t for t in tools if t != PLAIN]]
        for phase in phases:
            for record in pool.map(lambda ct: run_one(ct[0], ct[1], sanitizer, timeout),
                                   [(c, t) for c in cases for t in phase]):
                records.append(record)
                out.write(json.dumps(record) + "\n")
                out.flush()
                print(f"{record['case']:<58} {record['tool']:<10} {cell(record)}", flush=True)
    return records


def cell(record: dict) -> str:
    """A run's table cell: clean / N err / N warn / wrong / T/O / no summary."""
    if record["timed_out"]:
        return "T/O"
    if record["tool"] == PLAIN:
        return {True: "ok", False: "WRONG"}.get(record["ok"], "failed")
    if record["errors"] is None:
        return "no summary"
    parts = ([f"{record['errors']} err"] if record["errors"] else []) + \
        ([f"{record['warnings']} warn"] if record["warnings"] else [])
    return (", ".join(parts) or "clean") + ("" if record["ok"] is not False else " WRONG")


def table(records: list[dict], tools: list[str]) -> str:
    by_case: dict[str, dict[str, str]] = {}
    for r in records:
        by_case.setdefault(r["case"], {})[r["tool"]] = cell(r)
    lines = [f"{'case':<58}" + "".join(f"{t:>12}" for t in tools)]
    for name, cells in by_case.items():
        lines.append(f"{name:<58}" + "".join(f"{cells.get(t, '-'):>12}" for t in tools))
    bad = [r for r in records if cell(r) not in ("ok", "clean")]
    lines.append(f"{len(by_case)} cases, {len(records)} runs: " +
                 ("every run clean" if not bad else f"{len(bad)} not clean"))
    return "\n".join(lines)


def entry_parameters(ptx: str, entry: str) -> int:
    """How many parameters the PTX entry ``entry`` takes (CompileError when the module has no such entry)."""
    from pycute.errors import CompileError
    m = re.search(rf"\.entry\s+{re.escape(entry)}\s*\((.*?)\)", ptx, re.S)
    if m is None:
        raise CompileError(f"the module has no kernel {entry!r}")
    return len(re.findall(r"\.param\b", m.group(1)))


def host_only_gpu() -> Any:
    """A ``Gpu`` that does everything a case asks of the device on the host alone: the kernel looked up in its
    module, each launch's arguments counted against the kernel's parameters, device buffers that read back as
    zeros. A case's launch then runs every line of its own up to the GPU."""
    import numpy as np
    from pycute.compile.runtime import Gpu
    from pycute.errors import CompileError

    class Buffer:
        def __init__(self, handle: int, nbytes: int):
            self.handle, self.nbytes = handle, nbytes

    class HostOnlyGpu(Gpu):
        def __init__(self) -> None:
            self.launches: list[tuple[str, int]] = []
            self._next = 0x7000_0000_0000

        def multiprocessors(self) -> int:
            return 132

        def kernel(self, compiled: Any, entry: str) -> Any:
            return entry, entry_parameters(compiled.ptx, entry)

        def alloc(self, nbytes: int) -> Any:
            buf, self._next = Buffer(self._next, int(nbytes)), self._next + (-(-int(nbytes) // 256) + 1) * 256
            return buf

        def upload(self, array: Any) -> Any:
            return self.alloc(np.ascontiguousarray(array).nbytes)

        def download(self, buf: Any, dtype: Any, count: int) -> Any:
            return np.zeros(count, dtype=dtype)

        def launch(self, kernel: Any, *args: Any, grid: Any = 1, block: Any = 128, cluster: Any = None,
                   dynamic_smem: int = 0, events: bool = False) -> float | None:
            entry, params = kernel
            if len(args) != params:
                raise CompileError(f"launch of {entry}: {len(args)} arguments for {params} parameters")
            self.launches.append((entry, len(args)))
            return 1.0 if events else None

        def run(self, cubin: bytes, entry: str, grid: int, block: int, dynamic_smem: int, inputs: Any,
                out_words: int, events: bool = False) -> Any:
            if entry.encode() not in cubin:
                raise CompileError(f"the cubin has no kernel {entry!r}")
            self.launches.append((entry, 2))
            out = np.zeros(out_words, dtype=np.uint32)
            return (out, 1.0) if events else out

    return HostOnlyGpu()


def dry_run(case: SanitizeCase, arch: str = BUILD_ARCH) -> list[tuple[str, int]]:
    """Run ``case`` on ``host_only_gpu()`` (tensor maps encoded as 128 zero bytes, as no driver can encode them):
    the kernels it launched, as (entry, arguments)."""
    import ctypes
    from unittest import mock

    blank = ctypes.create_string_buffer(128)
    tensor_map = type("HostTensorMap", (), {"getPtr": lambda self: ctypes.addressof(blank)})()
    gpu = host_only_gpu()
    with mock.patch("pycute.compile.runtime.encode_tensor_map", lambda params, address: tensor_map), \
            mock.patch("pycute.harness.tma.tensor_map_arg", lambda params, address: bytes(128)), \
            mock.patch("pycute.compile.runtime.tensor_map_arg", lambda params, address: bytes(128)):
        case.launch(gpu, arch)
    return gpu.launches


def build_all(cases: list[SanitizeCase], arch: str = BUILD_ARCH, dry: bool = False) -> list[tuple[str, str | None]]:
    """Compile every case for ``arch`` (no GPU), and with ``dry`` run it up to the GPU (``dry_run``):
    ``(name, None or the error)``."""
    out: list[tuple[str, str | None]] = []
    for case in cases:
        try:
            case.build(arch)
            if dry and not dry_run(case, arch):
                raise RuntimeError("the case launched no kernel")
            out.append((case.name, None))
        except Exception as e:                     # a case that does not build: its reason is the result
            out.append((case.name, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"))
    return out


def run_case(name: str) -> int:
    """The child: build and launch case ``name`` on device 0; print its verdict as one JSON line."""
    from pycute.compile import runtime
    case = next(c for c in registry() if c.name == name)
    info = runtime.device_info()
    if info is None:
        raise SystemExit(f"{name}: no CUDA device")
    ok = bool(case.launch(runtime.Gpu(), f"sm_{info[1][0]}{info[1][1]}a"))
    print(json.dumps({"sanitize_case": name, "ok": ok}), flush=True)
    return 0 if ok else 1


def default_out() -> Path:
    return Path(os.environ["OUT"]) / "sanitizer-h200.jsonl" if os.environ.get("OUT") else \
        ROOT / "docs" / "sanitizer-h200.jsonl"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools sanitizer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, help="the JSON lines file (default: $OUT/sanitizer-h200.jsonl)")
    parser.add_argument("--case", help="(the child) run this one case on the GPU and print its verdict")
    parser.add_argument("--only", action="append", default=[], help="cases whose name contains this (repeatable)")
    parser.add_argument("--tools", default=",".join((PLAIN,) + TOOLS),
                        help=f"comma-separated, from {PLAIN},{','.join(TOOLS)} (default: all)")
    parser.add_argument("--jobs", type=int, default=min(12, os.cpu_count() or 1), help="runs at once")
    parser.add_argument("--timeout", type=float, help="seconds per run (default: each case's own)")
    parser.add_argument("--sanitizer", help="the compute-sanitizer binary (default: found on PATH or /usr/local)")
    parser.add_argument("--build", action="store_true", help=f"only compile every case for {BUILD_ARCH} (no GPU)")
    parser.add_argument("--dry", "--dry-run", dest="dry_run", action="store_true",
                        help=f"compile every case for {BUILD_ARCH} and run it up to the GPU on the host (no GPU)")
    parser.add_argument("--list", action="store_true", help="list the cases")
    args = parser.parse_args(argv)
    if args.case:
        return run_case(args.case)
    cases = [c for c in registry() if not args.only or any(s in c.name for s in args.only)]
    if args.list:
        print("\n".join(f"{c.name:<58} {c.kernel}" for c in cases))
        return 0
    if args.build or args.dry_run:
        built = build_all(cases, dry=args.dry_run)
        done = "ran up to the GPU" if args.dry_run else "built"
        for name, error in built:
            print(f"{name:<58} {done if error is None else error}")
        print(f"{sum(e is None for _, e in built)} of {len(built)} cases {done} for {BUILD_ARCH}")
        return 0 if all(e is None for _, e in built) else 1
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = sorted(set(tools) - {PLAIN, *TOOLS})
    if unknown:
        parser.error(f"unknown tools {unknown}: choose from {PLAIN}, {', '.join(TOOLS)}")
    sanitizer = args.sanitizer or find_sanitizer()
    if sanitizer is None and set(tools) - {PLAIN}:
        parser.error("compute-sanitizer not found: give --sanitizer PATH")
    out = args.out or default_out()
    records = run_all(cases, tools, sanitizer or "", out, max(1, args.jobs), args.timeout)
    print(f"\nJSON lines: {out}")
    print(table(records, tools))
    return 0 if all(cell(r) in ("ok", "clean") for r in records) else 1

