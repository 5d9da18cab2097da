"""Does the GEMM op run as fast as its raw launch and cuBLAS, with microseconds of host time, in CUDA graphs?

    PYTHONPATH=. python -m tools gemm_op [--quick] [--parts check,speed,...] [OUT.jsonl]
    PYTHONPATH=. python -m tools gemm_op --dry          # on the CPU: every configuration compiled, the op run whole

Four parts, each in its own child process (a fault loses one part, never the run), every timed output first checked
against the float64 product (the output poisoned with NaN before; relative Frobenius error under 1e-2 for bf16
operands, 2e-2 for e4m3):

* ``check``: every candidate configuration (bf16 and e4m3) through the launcher on ragged problems, and the op
  (``pycute.kernels.gemm``) on ragged, padded and strided inputs, bf16 and e4m3;
* ``speed``: at 8192^3 and 4096^3 bf16 and 8192^3 e4m3, in interleaved rounds: the op (eager, ``gemm(a, b,
  out=d)``), the raw launch (the launcher with the tensor maps encoded once), the benchmarks' launch
  (perf/gpu_gemm.py: the plans of the problem, then the launcher) and cuBLAS (``torch.matmul`` /
  ``torch._scaled_mm``), each by triton's ``do_bench`` (eager launches) and ``do_bench_cudagraph``;
* ``host``: host time per call, the GPU idle before each (median of 300): ``torch.matmul``, ``gemm`` (cached),
  ``gemm(out=)``, ``torch.ops.pycute.gemm`` (the dispatcher), the raw launch, the benchmarks' prepare + launch; a
  first call on a new shape of an already loaded configuration (50 shapes); a first launch of a new configuration;
* ``graph``: ``gemm`` captured in a CUDA graph (into a static output and allocating its own), replayed on new inputs
  and checked; ``torch.compile(fullgraph=True)`` of a GEMM with a ReLU after it;
* ``fused``: bias + ReLU and bias + GELU fused into the GEMM beside ``torch.matmul`` followed by the same ops in eager
  torch and beside the plain GEMM, at 8192^3 and 4096^3, in interleaved rounds; every epilogue form and type of D
  checked on a ragged problem first;
* ``tune``: the tuner on three shapes (choose's weakest, 1000 x 1000 x 8192 and 777 x 4104 x 2056, and 4096^3): each
  candidate checked and timed, the winner against the first guess and cuBLAS, and the op then running the winner
  (the records in ``$OUT/gemm_op_tuning.json``).

JSON lines go to ``$OUT/gemm_op.jsonl``; a table last. docs/kernels.md records the runs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any, Callable

from tools._common import JsonLines, json_rows, out_path, run_question

PARTS = ("check", "speed", "host", "graph", "fused", "tune")
TIMEOUTS = {"check": 300, "speed": 400, "host": 240, "graph": 400, "fused": 400, "tune": 400}
TOLERANCE = {"bf16": 1e-2, "e4m3": 2e-2}


# ---- shared by the parts (run in the children) --------------------------------------------------------------------
def _torch() -> Any:
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


def operands(M: int, N: int, K: int, dtype: str, device: str = "cuda", seed: int = 0) -> tuple[Any, Any]:
    """Random A (M x K) and B (N x K), bf16 or e4m3."""
    torch = _torch()
    g = torch.Generator(device=device).manual_seed(seed + M * 7 + N * 3 + K)
    kind = torch.bfloat16 if dtype == "bf16" else torch.float8_e4m3fn
    return (torch.randn(M, K, device=device, generator=g).to(kind),
            torch.randn(N, K, device=device, generator=g).to(kind))


def reference(a: Any, b: Any, scale: float = 1.0) -> Any:
    """The float64 product ``scale * a @ b.T`` (``pycute.testing.gemm``, on the operands' device)."""
    from pycute.testing import gemm as exact
    return exact(a, b) * scale


def rel_err(out: Any, ref: Any) -> float:
    """Relative Frobenius error; NaN when ``out`` holds a NaN (an element the kernel did not write)."""
    from pycute.testing import rel_err as relative
    return relative(out, ref)


def poisoned(M: int, N: int) -> Any:
    """An M x N bf16 output filled with NaN (rows of whole 16-byte units: N a multiple of 8)."""
    from pycute.testing import poisoned_tensor
    return poisoned_tensor((M, N), _torch().bfloat16)


def raw(config: Any, a: Any, b: Any, d: Any, scale: float, split: Any = None) -> tuple[Callable[[], None], int]:
    """The raw launch of ``config`` on A, B, D, its tiles whole or shared as ``split`` (a ``KSplit``, with its
    workspace and counters): the launcher with the tensor maps encoded once; and its grid."""
    import torch

    from pycute.kernels.hopper_gemm.op import counters
    from pycute.kernels.hopper_gemm.runs import gemm_run
    from pycute.kernels.launcher import Launcher, current_stream
    from pycute.pipeline.split_k import KSplit
    run = gemm_run(config)
    M, K = a.shape
    N = b.shape[0]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    units = config.plans.sched.at((-(-M // config.BM), -(-N // config.BN)), -(-K // config.BK)).units
    launch = run.launch(M, N, K, split or KSplit.data_parallel(units), sms * config.ctas_per_sm)
    ws = ctr = 0
    if launch.counters:
        dev = torch.cuda.current_device()
        ws = torch.empty(launch.workspace_bytes // 4, dtype=torch.float32, device="cuda").data_ptr()
        ctr = counters(dev, current_stream(dev), launch.counters).data_ptr()
    args = (run.map_a.encode(a), run.map_b.encode(b), run.map_d.encode(d), M, N, K, float(scale), ws, ctr,
            launch.split.dp, launch.split.workers, 0, 0, b"\0")
    launcher = Launcher.of(config, torch.cuda.current_device())
    return (lambda: launcher(launch.grid, *args)), launch.grid


# ---- check --------------------------------------------------------------------------------------------------------
CHECK_SHAPES = [(1000, 1000, 528), (333, 520, 1008), (256, 512, 128), (64, 8, 16), (777, 4104, 2056)]


def part_check(quick: bool) -> list[dict]:
    torch = _torch()
    from pycute.kernels import gemm
    from pycute.kernels.hopper_gemm import candidates
    rows = []
    prebuild(candidates("bf16") + candidates("e4m3"))
    for dtype in ("bf16", "e4m3"):
        for g in candidates(dtype):                               # every configuration, through the launcher
            for M, N, K in CHECK_SHAPES[:3] if quick else CHECK_SHAPES:
                a, b = operands(M, N, K, dtype)
                d = poisoned(M, N)
                launch, grid = raw(g, a, b, d, 0.5)
                launch()
                torch.cuda.synchronize()
                err = rel_err(d, reference(a, b, 0.5))
                rows.append({"part": "check", "via": "launcher", "config": repr(g), "dtype": dtype,
                             "shape": [M, N, K], "grid": grid, "err": err, "ok": err < TOLERANCE[dtype]})
    cases = [("ragged N (D padded)", 300, 517, 264, "bf16", None), ("K not 16 bytes", 130, 24, 70, "bf16", None),
             ("strided a", 512, 256, 384, "bf16", "strided"), ("e4m3 ragged", 1000, 1000, 1000, "e4m3", None),
             ("large", 4096, 4096, 4096, "bf16", None)]
    for label, M, N, K, dtype, form in cases:                     # the op, as users call it
        a, b = operands(M, N, K, dtype, seed=1)
        if form == "strided":
            a = torch.cat([a, a], dim=1)[:, ::2]                  # a stride of 2 along K: copied by the op
        torch.cuda.empty_cache()
        poison = torch.full((M, -(-N // 8) * 8 + 64), float("nan"), dtype=torch.bfloat16, device="cuda")
        del poison                                                # the op's output likely reuses the NaN bytes
        d = gemm(a, b, 2.0)
        torch.cuda.synchronize()
        err = rel_err(d, reference(a, b, 2.0))
        rows.append({"part": "check", "via": "op", "case": label, "dtype": dtype, "shape": [M, N, K],
                     "stride": list(d.stride()), "err": err, "ok": err < TOLERANCE[dtype]})
        if N % 8 == 0:                                            # the op into a NaN-poisoned out
            d = poisoned(M, N)
            gemm(a, b, 2.0, out=d)
            torch.cuda.synchronize()
            err = rel_err(d, reference(a, b, 2.0))
            rows.append({"part": "check", "via": "op out=", "case": label, "dtype": dtype, "shape": [M, N, K],
                         "err": err, "ok": err < TOLERANCE[dtype]})
    return rows


# ---- speed --------------------------------------------------------------------------------------------------------
def part_speed(quick: bool) -> list[dict]:
    torch = _torch()
    import triton

    from perf.gpu_gemm import Launch
    from pycute.kernels import gemm
    from pycute.kernels.hopper_gemm.op import config_for
    rounds = 2 if quick else 3
    problems = [(8192, 8192, 8192, "bf16"), (4096, 4096, 4096, "bf16"), (8192, 8192, 8192, "e4m3")]
    rows = []
    for M, N, K, dtype in problems[:2] if quick else problems:
        a, b = operands(M, N, K, dtype)
        scale = 1.0 if dtype == "bf16" else 0.5
        ref = reference(a, b, scale)
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        g, split = config_for(M, N, K, dtype, sms)
        outs = {name: poisoned(M, N) for name in ("op", "raw", "benchmarks")}
        launch_raw, _ = raw(g, a, b, outs["raw"], scale, split)
        bench_launch = Launch(g)
        prepared = bench_launch.prepare(a, b, outs["benchmarks"], scale)
        if dtype == "bf16":
            vendor_name, vendor = "cublas", (lambda: torch.matmul(a, b.t()))
        else:
            one, s = torch.tensor(1.0, device="cuda"), torch.tensor(scale, device="cuda")
            vendor_name, vendor = "scaled_mm", (lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=s,
                                                                         out_dtype=torch.bfloat16))
        fns = {"op": lambda: gemm(a, b, scale, out=outs["op"]), "raw": launch_raw,
               "benchmarks": lambda: bench_launch(prepared), vendor_name: vendor}
        errors = {}
        for name, fn in fns.items():                              # every output checked before it is timed
            out = fn()
            torch.cuda.synchronize()
            errors[name] = rel_err(outs[name] if name in outs else out, ref)
        ok = all(e < TOLERANCE[dtype] for e in errors.values())
        times: dict[str, dict[str, list[float]]] = {name: {"eager": [], "graph": []} for name in fns}
        for _ in range(rounds if ok else 0):
            for name, fn in fns.items():
                times[name]["eager"].append(float(triton.testing.do_bench(fn, warmup=25, rep=100,
                                                                          return_mode="median")))
                times[name]["graph"].append(float(triton.testing.do_bench_cudagraph(fn, rep=100,
                                                                                    return_mode="median")))
        flops = 2 * M * N * K
        for name in fns:
            best = {mode: min(ms) for mode, ms in times[name].items() if ms}
            rows.append({"part": "speed", "kernel": name, "dtype": dtype, "shape": [M, N, K], "config": repr(g),
                         "err": errors[name], "ok": ok, "ms_rounds": times[name],
                         **{f"tflops_{mode}": flops / ms / 1e9 for mode, ms in best.items()}})
    return rows


# ---- host ---------------------------------------------------------------------------------------------------------
def host_us(fn: Callable[[], Any], calls: int = 300) -> dict[str, float]:
    """Host microseconds per call, the GPU idle before each: median and 10th percentile."""
    torch = _torch()
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e6)
    samples.sort()
    return {"median_us": statistics.median(samples), "p10_us": samples[len(samples) // 10]}


def part_host(quick: bool) -> list[dict]:
    torch = _torch()
    from perf.gpu_gemm import Launch
    from pycute.kernels import gemm
    from pycute.kernels.hopper_gemm import HopperGemm
    from pycute.kernels.hopper_gemm.op import config_for
    from pycute.kernels.launcher import Launcher
    rows = []
    M = N = K = 512
    a, b = operands(M, N, K, "bf16")
    d = poisoned(M, N)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    g, split = config_for(M, N, K, "bf16", sms)
    launch_raw, _ = raw(g, a, b, d, 1.0, split)
    bench_launch = Launch(g)
    bd = poisoned(M, N)
    calls = {"torch.matmul": lambda: torch.matmul(a, b.t()), "gemm": lambda: gemm(a, b),
             "gemm out=": lambda: gemm(a, b, out=d), "torch.ops.pycute.gemm": lambda: torch.ops.pycute.gemm(a, b, 1.0),
             "raw launch": launch_raw,
             "benchmarks prepare + launch": lambda: bench_launch(bench_launch.prepare(a, b, bd))}
    for name, fn in calls.items():
        rows.append({"part": "host", "call": name, "shape": [M, N, K], **host_us(fn, 100 if quick else 300)})
    # a first call on a new shape whose configuration is loaded: choose, the grid, three tensor maps
    base = (4096, 4096, 4096)
    gemm(*operands(*base, "bf16"))
    want = config_for(*base, "bf16", sms)
    spare = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    del spare                                # the allocator holds a block the new shapes' outputs are cut from
    firsts, same = [], 0
    shapes = [(base[0] + 128 * i, base[1], base[2] + 64 * i) for i in range(1, 51)]
    tensors = [operands(*s, "bf16") for s in shapes]
    for (Ms, Ns, Ks), (x, y) in zip(shapes, tensors):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        gemm(x, y)
        firsts.append((time.perf_counter() - t0) * 1e6)
        same += config_for(Ms, Ns, Ks, "bf16", sms) == want
    firsts.sort()
    rows.append({"part": "host", "call": "gemm, first call of a new shape", "shapes": len(shapes),
                 "same_config": same, "median_us": statistics.median(firsts), "max_us": firsts[-1]})
    # a first launch of a configuration not loaded yet: compile (or NVRTC's disk cache) and load
    fresh = HopperGemm(BN=192)
    t0 = time.perf_counter()
    Launcher.of(fresh, torch.cuda.current_device())
    rows.append({"part": "host", "call": "Launcher.of, a new configuration", "config": repr(fresh),
                 "ms": (time.perf_counter() - t0) * 1e3})
    return rows


# ---- graph --------------------------------------------------------------------------------------------------------
def part_graph(quick: bool) -> list[dict]:
    torch = _torch()
    from pycute.kernels import gemm
    rows = []
    M, N, K = 2048, 1536, 1024
    a, b = operands(M, N, K, "bf16")
    d = poisoned(M, N)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):                              # warm up on the side stream, as capture asks
        gemm(a, b, out=d)
        gemm(a, b)
    torch.cuda.current_stream().wait_stream(stream)
    graph, graph_alloc = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gemm(a, b, 0.5, out=d)
    with torch.cuda.graph(graph_alloc):
        d_alloc = gemm(a, b, 0.5)
    for replay in range(3):
        x, y = operands(M, N, K, "bf16", seed=100 + replay)
        a.copy_(x)
        b.copy_(y)
        d.fill_(float("nan"))
        d_alloc.fill_(float("nan"))
        graph.replay()
        graph_alloc.replay()
        torch.cuda.synchronize()
        ref = reference(x, y, 0.5)
        for name, out in (("graph out=", d), ("graph allocating", d_alloc)):
            err = rel_err(out, ref)
            rows.append({"part": "graph", "case": name, "replay": replay, "err": err, "ok": err < TOLERANCE["bf16"]})
    compiled = torch.compile(lambda a, b: torch.relu(gemm(a, b, 0.5)), fullgraph=True)
    t0 = time.perf_counter()
    out = compiled(a, b)
    torch.cuda.synchronize()
    err = rel_err(out, torch.relu(reference(a, b, 0.5)))
    rows.append({"part": "graph", "case": "torch.compile fullgraph, gemm then relu", "err": err,
                 "ok": err < TOLERANCE["bf16"], "compile_s": time.perf_counter() - t0})
    return rows


def _compile(config: Any) -> str:
    config.compile()
    return repr(config)


def prebuild(configs: list[Any]) -> None:
    """Compile ``configs`` into pycute's compile cache in parallel processes (NVRTC is single-threaded; the timed
    parts then find every kernel built)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    unique = list(dict.fromkeys(configs))
    workers = max(1, min(len(unique), (os.cpu_count() or 2) - 1))
    # spawned, not forked: the part may have started CUDA already, and a forked child must not inherit it
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_compile, unique))


# ---- fused --------------------------------------------------------------------------------------------------------
def part_fused(quick: bool) -> list[dict]:
    torch = _torch()
    import triton

    import pycute.kernels as pk
    from pycute.kernels.fused import FusedEpilogue
    rows = []
    # every epilogue form and type of D on a ragged problem, against the float64 reference
    M, N, K = 1000, 520, 264
    a, b = operands(M, N, K, "bf16", seed=5)
    acc = reference(a, b, 0.5)
    g = torch.Generator(device="cuda").manual_seed(9)
    bias = torch.randn(N, device="cuda", generator=g).to(torch.bfloat16)
    scale_m = torch.rand(M, device="cuda", generator=g) + 0.5
    res = torch.randn(M, N, device="cuda", generator=g).to(torch.float16)

    @pk.epilogue
    def gated(acc, s: pk.Row, bias: pk.Col, r: pk.Residual, alpha: float):
        return pk.where(acc > 0, pk.silu(acc * s + bias), acc * alpha) + r
    forms = [("bias relu", dict(bias=bias, activation="relu")), ("bias gelu", dict(bias=bias, activation="gelu")),
             ("bias gelu_tanh residual", dict(bias=bias, activation="gelu_tanh", residual=res)),
             ("bias silu", dict(bias=bias, activation="silu")),
             ("gated rows columns residual scalar", dict(epilogue=gated, s=scale_m, bias=bias, r=res, alpha=0.1))]
    from pycute.kernels.hopper_gemm.op import config_for
    from pycute.kernels.tensor_maps import torch_dtype_name
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tensors = {"bias": bias, "residual": res, "s": scale_m, "r": res}

    def config(kw: dict, out: str, shape: tuple) -> Any:
        ep = kw.get("epilogue") or pk.bias_activation("bias" in kw, kw.get("activation"), "residual" in kw)
        fused = FusedEpilogue(ep, tuple(torch_dtype_name(tensors[n].dtype) for n in ep.tensors))
        return config_for(*shape, "bf16", sms, out, fused)[0]
    prebuild([config(kw, out, (M, N, K)) for _, kw in forms for out in ("bf16", "f16", "f32", "f8e4m3")]
             + [config(dict(bias=bias, activation=act), "bf16", shape) for act in ("relu", "gelu")
                for shape in ((8192, 8192, 8192), (4096, 4096, 4096))])
    for label, kw in forms:
        ep = kw.get("epilogue") or pk.bias_activation("bias" in kw, kw.get("activation"), "residual" in kw)
        names = {"bias": bias, "residual": res, "s": scale_m, "r": res}
        want = FusedEpilogue(ep, tuple("f32" for _ in ep.tensors)).reference(
            acc, {n: names[n].double() for n in ep.tensors} | {n: kw[n] for n in ep.scalars})
        for out in ("bf16", "f16", "f32", "f8e4m3"):
            torch.cuda.empty_cache()
            d = pk.gemm(a, b, 0.5, out_dtype=out, **kw)
            torch.cuda.synchronize()
            err = rel_err(d, want)
            rows.append({"part": "fused", "case": f"{label} -> {out}", "shape": [M, N, K], "err": err,
                         "ok": err < (6e-2 if out == "f8e4m3" else 1e-2)})
    # speed: fused vs torch.matmul + the same ops in eager torch vs the plain GEMM
    rounds = 2 if quick else 3
    for M, N, K in [(4096, 4096, 4096)] if quick else [(8192, 8192, 8192), (4096, 4096, 4096)]:
        a, b = operands(M, N, K, "bf16")
        acc = reference(a, b)
        bias = torch.randn(N, device="cuda").to(torch.bfloat16)
        for act, torch_act in (("relu", torch.relu), ("gelu", torch.nn.functional.gelu)):
            want = torch_act(acc + bias.double())
            d_fused, d_plain = poisoned(M, N), poisoned(M, N)
            fns = {"fused": lambda: pk.gemm(a, b, bias=bias, activation=act, out=d_fused),
                   "torch eager": lambda: torch_act(torch.matmul(a, b.t()) + bias),
                   "plain gemm": lambda: pk.gemm(a, b, out=d_plain)}
            errors = {"fused": rel_err(fns["fused"](), want), "torch eager": rel_err(fns["torch eager"](), want),
                      "plain gemm": rel_err(fns["plain gemm"](), acc)}
            ok = all(e < 1e-2 for e in errors.values())
            times: dict[str, dict[str, list[float]]] = {n: {"eager": [], "graph": []} for n in fns}
            for _ in range(rounds if ok else 0):
                for name, fn in fns.items():
                    times[name]["eager"].append(float(triton.testing.do_bench(fn, warmup=25, rep=100,
                                                                              return_mode="median")))
                    times[name]["graph"].append(float(triton.testing.do_bench_cudagraph(fn, rep=100,
                                                                                        return_mode="median")))
            flops = 2 * M * N * K
            for name in fns:
                best = {mode: min(ms) for mode, ms in times[name].items() if ms}
                rows.append({"part": "fused", "kernel": f"{name} ({act})", "shape": [M, N, K], "err": errors[name],
                             "ok": ok, "ms_rounds": times[name],
                             **{f"tflops_{mode}": flops / ms / 1e9 for mode, ms in best.items()}})
    return rows


# ---- tune ---------------------------------------------------------------------------------------------------------
def part_tune(quick: bool) -> list[dict]:
    torch = _torch()
    import triton

    from pycute.kernels.hopper_gemm.config import shared
    from pycute.kernels.hopper_gemm.op import config_for
    from pycute.kernels.hopper_gemm.tune import ranked, tune
    rows = []
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = [(1000, 1000, 8192), (777, 4104, 2056), (4096, 4096, 4096)]
    prebuild([g for s in shapes for g in ranked(*s, "bf16", sms)])
    for M, N, K in shapes[:2] if quick else shapes:
        result = tune(M, N, K)
        a, b = operands(M, N, K, "bf16")
        cublas = float(triton.testing.do_bench_cudagraph(lambda: torch.matmul(a, b.t()), rep=100,
                                                         return_mode="median"))
        flops = 2 * M * N * K
        best = dict(result.times)[result.winner]
        picked, _ = config_for(M, N, K, "bf16", sms, device=torch.cuda.current_device())
        runs_winner = picked in (result.winner, shared(result.winner))     # its tiles whole, or shared (split-K)
        rows.append({"part": "tune", "case": f"tune {M}x{N}x{K}", "shape": [M, N, K], "winner": repr(result.winner),
                     "first_guess": repr(result.first_guess), "speedup_over_first_guess": result.speedup,
                     "tflops": flops / best / 1e9 if best else None, "cublas_tflops": flops / cublas / 1e9,
                     "candidates": {repr(g): t for g, t in result.times}, "op_runs_winner": runs_winner,
                     "ok": runs_winner})
    return rows


PART = {"check": part_check, "speed": part_speed, "host": part_host, "graph": part_graph, "fused": part_fused,
        "tune": part_tune}


# ---- the CPU dry run ----------------------------------------------------------------------------------------------
def dry() -> list[dict]:
    """Every configuration compiled and its launch layout read; the op run whole on the CPU (pycute.interp) against
    the float64 product; the host path's planning (choose, the grid, the map specs) timed."""
    torch = _torch()
    from pycute.kernels import gemm
    from pycute.kernels.hopper_gemm import candidates
    from pycute.kernels.hopper_gemm.op import config_for
    from pycute.kernels.hopper_gemm.runs import gemm_run
    from pycute.kernels.launcher import param_layout
    rows = []
    for dtype in ("bf16", "e4m3"):
        for g in candidates(dtype):
            t0 = time.perf_counter()
            layout = param_layout(g.compile().ptx, g.launch_shape.entry)
            rows.append({"part": "dry", "config": repr(g), "compile_s": time.perf_counter() - t0,
                         "params": layout.packer.format, "ok": layout.size == 441})
    for M, N, K, dtype in ((100, 72, 40, "bf16"), (70, 24, 48, "e4m3")):
        a, b = operands(M, N, K, dtype, device="cpu")
        err = rel_err(gemm(a, b, 0.5), reference(a, b, 0.5))
        rows.append({"part": "dry", "case": f"op on the CPU {M}x{N}x{K} {dtype}", "err": err,
                     "ok": err < TOLERANCE[dtype]})
    a, b = operands(64, 40, 32, "bf16", device="cpu")
    bias = torch.randn(40).to(torch.bfloat16)
    err = rel_err(gemm(a, b, bias=bias, activation="relu"), torch.relu(reference(a, b) + bias.double()))
    rows.append({"part": "dry", "case": "fused bias + relu on the CPU 64x40x32", "err": err, "ok": err < 1e-2})
    t0 = time.perf_counter()
    for i in range(50):
        g, split = config_for(4096 + 128 * i, 4096, 4096 + 64 * i, "bf16", 132)
        gemm_run(g).launch(4096 + 128 * i, 4096, 4096 + 64 * i, split, 132 * g.ctas_per_sm)
    rows.append({"part": "dry", "case": "choose + grid of a new shape (host, no launch)",
                 "us": (time.perf_counter() - t0) / 50 * 1e6, "ok": True})
    return rows


def table(rows: list[dict]) -> str:
    lines = [f"{'part':<6} {'what':<58} {'result':>40}  ok"]
    for r in rows:
        what = r.get("kernel") or r.get("call") or r.get("case") or r.get("config", "")
        what = f"{what} {r.get('dtype', '')} {r.get('shape', '')}".strip()
        if "speedup_over_first_guess" in r:
            result = f"{r['speedup_over_first_guess']:.2f}x choose's, {r.get('tflops') or 0:.0f} TFLOP/s"
        elif "tflops_graph" in r:
            result = f"{r.get('tflops_eager', 0):.1f} / {r['tflops_graph']:.1f} TFLOP/s (eager / graph)"
        elif "median_us" in r:
            result = f"{r['median_us']:.1f} us (median)"
        elif "ms" in r:
            result = f"{r['ms']:.1f} ms"
        elif "us" in r:
            result = f"{r['us']:.1f} us"
        elif "err" in r:
            result = f"err {r['err']:.2e}"
        else:
            result = str(r.get("error", ""))[:40]
        lines.append(f"{r.get('part', '?'):<6} {what[:58]:<58} {result:>40}  {'ok' if r.get('ok', True) else 'NO'}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools gemm_op", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/gemm_op.jsonl)")
    parser.add_argument("--dry", action="store_true", help="on the CPU: compile everything, run the op whole")
    parser.add_argument("--quick", action="store_true", help="fewer shapes and rounds")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"the parts to run, of {','.join(PARTS)}")
    parser.add_argument("--one", choices=PARTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:                                                  # a child: one part, its rows on stdout
        import json
        for row in PART[args.one](args.quick):
            print(json.dumps(row, default=str), flush=True)
        return 0
    path = out_path("gemm_op", args.out)
    os.environ.setdefault("PYCUTE_TUNING_FILE", str(path.parent / "gemm_op_tuning.json"))   # the children's records
    with JsonLines(path) as out:
        if args.dry:
            out.extend(dry())
        else:
            checked = True
            parts = [p for p in PARTS if p in args.parts.split(",")]
            for part in parts:
                if part != "check" and not checked:
                    out.write({"part": part, "error": "not run: the check part failed", "ok": False})
                    continue
                child = run_question("gemm_op", ["--one", part] + (["--quick"] if args.quick else []),
                                     TIMEOUTS[part])
                rows = json_rows(child.stdout)
                out.extend(rows)
                if not child.ok:
                    out.write({"part": part, "error": child.error(), "ok": False})
                if part == "check":
                    checked = child.ok and all(r.get("ok") for r in rows)
        print(table(out.rows))
        return 0 if all(r.get("ok", True) for r in out.rows) else 1
