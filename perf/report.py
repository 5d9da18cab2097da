"""``python -m perf.report [--json PATH] [--quick]``: quick medians for every area, the targets, and the static cost table.

The timings are medians of short timed batches on this machine (CPU only). Copy times in the cost table are a
MODEL (B200 shared-memory bandwidth), not measurements; GPU rows run only on an sm_100-family device.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time

import pycute as pc
from pycute.arch.sm100 import SmemDescriptor, SwizzleMode
from pycute.sim import Sm100Emulator
from pycute.compile import CompileCache, compile_cuda, runtime
from pycute.copy.tcgen05_cp.planner import _plan
from pycute.demo import demo_copies
from pycute.harness.tcgen05_cp import RoundTrip
from pycute.codegen.probe import probe_source
from pycute.layout import clear_caches
from pycute.cost import ISSUE_FLOOR, copy_cost, issue_costs, ldst_costs, median_per_copy, stage_costs

from . import algebra_cases
from .algebra_cases import cases, median_us
from .cases import (ATOMS, CUTE_DSL_ISSUE_COST, atom_copy, compile_overhead, cute_comparison_copies, demo_copy,
                    failing_plan, issue_matrix, ldst_plans, mma_plans, mma_probe, staged_copies)
from .cutlass_reference import VERSION as CUTLASS_VERSION, load_cutlass_pycute
from .tvm_reference import time_tvm_demo_plan
from .test_bench_algebra import PYCUTE_ONLY

def table(title, header, rows, out):
    widths = [max(len(str(r[k])) for r in [header] + rows) for k in range(len(header))]
    print(f"\n{title}", file=out)
    print("  " + "  ".join(str(h).ljust(w) for h, w in zip(header, widths)), file=out)
    print("  " + "  ".join("-" * w for w in widths), file=out)
    for r in rows:
        print("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)), file=out)


def verdict(value, limit):
    return "ok" if value <= limit else "OVER"


ROUNDS = 3
COLD_LIMIT = 0.85     # pycute's cold time over CUTLASS pycute's, for every shared operation (issue 19)
CACHED_LIMIT_US = 1.0
TVM_SPEEDUP = 8       # TVM's _build_plan time over pycute's cold demo plan, at least (issue 19)


def algebra(results, out):
    """Every operation cold (all caches cleared) and repeated, beside CUTLASS pycute's time in this process. The
    two libraries run alternately, ROUNDS times per operation, each keeping its best round: a noisy moment on a
    shared machine then cannot land on one side of the comparison only."""
    theirs_lib, why = load_cutlass_pycute()
    ours, theirs = cases(pc), cases(theirs_lib) if theirs_lib else {}
    ours.update(PYCUTE_ONLY)
    rows = []
    for name, (fn, args) in ours.items():
        cold, ref = float("inf"), float("inf")
        for _ in range(ROUNDS):
            cold = min(cold, median_us(lambda: fn(*args), batch=200, repeats=7, setup=clear_caches))
            if name in theirs:
                tfn, targs = theirs[name]
                ref = min(ref, median_us(lambda: tfn(*targs), batch=200, repeats=7))
        fn(*args)
        cached = median_us(lambda: fn(*args), batch=2000, repeats=7)
        entry = {"cold_us": cold, "cached_us": cached}
        if name in theirs:
            entry["cutlass_us"] = ref
            shared = (f"{ref:.2f}", f"{cold / ref:.2f}", verdict(cold / ref, COLD_LIMIT))
        else:
            shared = ("-", "-", "-")
        rows.append((name, f"{cold:.2f}", f"{cached:.3f}", verdict(cached, CACHED_LIMIT_US)) + shared)
        results[f"algebra.{name}"] = entry
    if not theirs:
        results["algebra_vs_cutlass"] = "not measured: " + why
    table(f"Layout algebra (us; pycute cold = every cache cleared; CUTLASS pycute {CUTLASS_VERSION} in this "
          f"process, best of {ROUNDS} alternating rounds of medians, same inputs"
          + ("" if theirs else f"; CUTLASS pycute not measured: {why}") + ")",
          ("operation", "pycute cold", "pycute cached", f"cached <= {CACHED_LIMIT_US:g} us", "CUTLASS pycute",
           "cold / CUTLASS", f"<= {COLD_LIMIT}"), rows, out)


def versus_tvm(results, time_demo, demo_cold, plan) -> list:
    """TVM's planner on the demo copy, run between two of pycute's timings; the slower of those is compared."""
    tvm, why = (None, "--quick") if algebra_cases.QUICK else time_tvm_demo_plan()
    if tvm is None:
        results["plan.demo.vs_tvm"] = "not measured: " + why
        return [("TVM's planner on the demo copy", "-", "-", f"not measured: {why}")]
    ours = max(demo_cold, time_demo())
    speedup = tvm["median_us"] / ours
    same = (tvm["form"], tvm["instructions"], tvm["sbo"]) == (plan.atom.name, len(plan.instructions),
                                                             plan.descriptor.sbo)
    results["plan.demo.vs_tvm"] = {"tvm_us": tvm["median_us"], "pycute_us": ours, "speedup": speedup,
                                   "tvm_version": tvm["tvm_version"], "same_plan": same}
    return [(f"TVM {tvm['tvm_version']} _build_plan, same copy: {tvm['form']}, {tvm['instructions']} instr, "
             f"SBO {tvm['sbo']} B", f"{tvm['median_us']:.1f}", "-", "-"),
            ("TVM / pycute demo cold (slower of two pycute runs)", f"{speedup:.1f}x", f">= {TVM_SPEEDUP}x",
             ("ok" if speedup >= TVM_SPEEDUP else "UNDER") if same else "PLANS DIFFER")]


def planning(results, out):
    dst, src = demo_copy()
    cold_setup = lambda: (_plan.cache_clear(), clear_caches())  # noqa: E731
    demo_cold = median_us(lambda: pc.make_tiled_copy(dst, src), setup=cold_setup)
    pc.make_tiled_copy(dst, src)
    demo_cached = median_us(lambda: pc.make_tiled_copy(dst, src), batch=2000)
    rows = [("article demo, inferred", f"{demo_cold:.1f}", "<= 100", verdict(demo_cold, 100)),
            ("article demo, cached repeat", f"{demo_cached:.2f}", "<= 5", verdict(demo_cached, 5))]
    results["plan.demo.cold_us"], results["plan.demo.cached_us"] = demo_cold, demo_cached
    rows += versus_tvm(results, lambda: median_us(lambda: pc.make_tiled_copy(dst, src), setup=cold_setup),
                       demo_cold, pc.make_tiled_copy(dst, src))
    for middle in (1, 4, 48):          # 48 x 4 KiB (128x256b) is the most a CTA's shared memory holds
        worst = 0.0
        for name, atom in ATOMS.items():
            d, s = atom_copy(atom, middle)
            t = median_us(lambda: pc.make_tiled_copy(d, s, cta_group=atom.cta_group, shape=atom.shape,
                                                     multicast=atom.multicast or None), batch=10, repeats=7,
                          setup=cold_setup)
            results[f"plan.{name}.middle{middle}.cold_us"] = t
            worst = max(worst, t)
        limit = 200 if middle == 4 else None
        rows.append((f"12 atoms explicit, 128-row, middle {middle} (worst)", f"{worst:.1f}",
                     f"<= {limit}" if limit else "-", verdict(worst, limit) if limit else "-"))
    fail = median_us(failing_plan(), setup=cold_setup)
    results["plan.failing.cold_us"] = fail
    rows.append(("failing plan, time to PlanError", f"{fail:.1f}", "-", "-"))
    table("Planning (us, median; cold = plan and algebra caches cleared)", ("case", "median", "target", ""), rows, out)


def compiling(results, out):
    plan1 = pc.make_tiled_copy(*demo_copy())
    d, s = atom_copy(ATOMS["128x128b-g1"], 64)          # 64 x 2 KiB: fits a CTA's shared memory
    plan64 = pc.make_tiled_copy(d, s, shape="128x128b")
    emit1 = median_us(lambda: plan1.cuda("copy"), batch=200)
    emit64 = median_us(lambda: plan64.cuda("copy"), batch=50)
    source = probe_source(plan1, "cold")
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        compile_cuda(source, cache=False)
        samples.append((time.perf_counter() - t0) * 1e6)
    nvrtc = statistics.median(samples)
    over = median_us(compile_overhead(plan1, tempfile.mkdtemp()), batch=20, repeats=9)
    cache = CompileCache(tempfile.mkdtemp())
    compile_cuda(source, cache=cache)
    hit = median_us(lambda: compile_cuda(source, cache=cache), batch=50)
    results.update({"emit.middle1_us": emit1, "emit.middle64_us": emit64, "compile.nvrtc_cold_us": nvrtc,
                    "compile.pycute_overhead_us": over, "compile.cache_hit_us": hit})
    rows = [("emit device function, 1 copy", f"{emit1:.1f}", "<= 1000", verdict(emit1, 1000)),
            ("emit device function, 64 copies", f"{emit64:.1f}", "<= 1000", verdict(emit64, 1000)),
            ("NVRTC cold compile (reference)", f"{nvrtc:.0f}", "-", "-"),
            (f"pycute work around it ({100 * over / nvrtc:.1f}% of NVRTC)", f"{over:.0f}",
             f"<= {nvrtc / 10:.0f} (10%)", verdict(over, nvrtc / 10)),
            ("cache hit (cubin loaded from disk)", f"{hit:.1f}", "<= 2000", verdict(hit, 2000))]
    table("Emission and compilation (us, median)", ("case", "median", "target", ""), rows, out)


def emulator(results, out):
    emu = Sm100Emulator(smem_bytes=64 * 1024)
    base = emu.alloc(512)
    desc = SmemDescriptor(lbo=16, sbo=1024, swizzle=SwizzleMode.B128)
    stream = [("tcgen05.cp.cta_group::1.128x256b", base + 8 * i, desc.encode(16384 * (i // 16) % 65536 +
                                                                              32 * (i % 4))) for i in range(64)]
    t = median_us(lambda: emu.run(stream), batch=3, repeats=7)
    mbs = 64 * 4096 / t
    results["emulator.full_tmem_fill_us"], results["emulator.MB_per_s"] = t, mbs
    table("Emulator (CPU)", ("case", "median us", "throughput"),
          [("full 128 x 512 TMEM fill (64 x 128x256b, 256 KiB)", f"{t:.0f}", f"{mbs:.0f} MB/s")], out)


def gpu(results, out):
    reason = runtime.skip_reason()
    if reason is not None:
        table("GPU copy phase (sm_100 family only)", ("case", "result"),
              [("128x256b round trip: clock64 issue -> completion", f"not run ({reason})"),
               ("bytes per cycle per SM", "not run")], out)
        results["gpu"] = "not run: " + reason
        return
    plan = pc.make_tiled_copy(*atom_copy(ATOMS["128x256b-g1"], 4))
    got, want, timing = RoundTrip(plan, "rt").run(runtime.Gpu(), timed=True)
    ok = bool((got == want).all())
    cycles = timing.copy_cycles[0]
    results.update({"gpu.cycles": cycles, "gpu.bytes_per_cycle": plan.bytes / cycles,
                    "gpu.launch_ms": timing.launch_ms})
    table("GPU copy phase (measured)", ("case", "result"),
          [("128x256b x4 round trip correct", "yes" if ok else "NO"),
           ("clock64 issue -> mbarrier completion", f"{cycles} cycles"),
           ("bytes per cycle per SM", f"{plan.bytes / cycles:.1f}"),
           ("whole round-trip launch (CUDA events)", f"{timing.launch_ms:.3f} ms")], out)


ISSUE_MEDIAN_TARGET = 4.0


def issue(results, out):
    rows = []
    for c in issue_costs(cute_comparison_copies()):
        theirs = CUTE_DSL_ISSUE_COST[c.label]
        rows.append((c.label, c.utccp, f"{theirs:.2f}", f"{c.per_copy:.2f}", verdict(c.per_copy, theirs)))
        results[f"issue.vs_cute.{c.label}"] = {"cute_dsl": theirs, "pycute": c.per_copy}
    table("Issue code: non-UTCCP SASS per copy, one warp calls (CuTe DSL 4.8.1 figures from the code-generation "
          "issue, same method)", ("copy", "UTCCP", "CuTe DSL", "pycute", "at or below"), rows, out)
    costs = issue_costs(issue_matrix())
    by_case = {}
    for c in costs:
        case, count = c.label.rsplit(" x", 1)
        by_case.setdefault(case, {})[int(count)] = c
    rows = [(case, *(f"{by[n].per_copy:.2f}" for n in sorted(by)), f"{max(c.ratio for c in by.values()):.2f}")
            for case, by in by_case.items()]
    median = median_per_copy(costs)
    results["issue.matrix"] = {c.label: c.per_copy for c in costs}
    results["issue.matrix_median"] = median
    table("Issue code per atom x cta_group x swizzle (bf16, K-major; non-UTCCP SASS per copy for 1/2/4/8 copies; "
          "ratio = measured / argued lower bound, worst count)", ("case", "x1", "x2", "x4", "x8", "ratio"), rows, out)
    extra = sorted({(c.other - next(x for x in costs if x.label == c.label.rsplit(" x", 1)[0] + " x1").other)
                    / (c.copies - 1) for c in costs if c.copies > 1})
    print(f"  median over the {len(costs)} entries: {median:.3f} (target <= {ISSUE_MEDIAN_TARGET}: "
          f"{verdict(median, ISSUE_MEDIAN_TARGET)}); each further copy costs {', '.join(f'{e:g}' for e in extra)} "
          f"instruction(s), the bound.", file=out)
    print("  argued lower bound for one copy: " + "; ".join(f"{why}: {n}" for why, n in ISSUE_FLOOR.items()) +
          "; then one add per further copy.", file=out)


TMEM_PLAN_TARGET_US = 100


def tmem_copies(results, out):
    acc = pc.mma_accumulator(pc.f32, 128, 256)
    cold = median_us(lambda: pc.make_tmem_copy(acc), setup=clear_caches)
    results["ldst.plan_128x256_f32.cold_us"] = cold
    rows = []
    for c in ldst_costs(ldst_plans()):
        rows.append((c.label, c.instructions, c.lower_bound, f"{c.sass_ops} / {c.planned_ops}",
                     f"{c.other_per_instruction:.2f}", "ok" if c.instructions == c.lower_bound and
                     c.sass_ops == c.planned_ops else "WORSE"))
        results[f"ldst.{c.label}"] = {"instructions": c.instructions, "lower_bound": c.lower_bound,
                                      "sass_ops": c.sass_ops, "other_per_instruction": c.other_per_instruction}
    table("tcgen05.ld/st plans (sm_100a SASS): instructions per warp vs the lower bound for 32 registers per "
          "instruction (powers of two), LDTM/STTM in the SASS vs planned, other SASS per instruction",
          ("plan", "per warp", "bound", "SASS / planned", "other/instr", ""), rows, out)
    print(f"  planning a 128x256 f32 accumulator load, cold: {cold:.1f} us (target <= {TMEM_PLAN_TARGET_US}: "
          f"{verdict(cold, TMEM_PLAN_TARGET_US)})", file=out)


MMA_PLAN_TARGET_US = 10_000


def mmas(results, out):
    rows = []
    for label, build in mma_plans().items():
        cold = median_us(build, batch=1, repeats=7, setup=clear_caches)
        plan = build()
        h = compile_cuda(plan.cuda("mma") + mma_probe(plan), arch="sm_100a").histogram()
        sass = sum(v for op, v in h.items() if op.startswith("UTC") and "MMA" in op)
        other = sum(v for op, v in h.items() if not (op.startswith("UTC") and "MMA" in op) and op != "NOP")
        n = len(plan.instructions)
        rows.append((label, n, plan.lower_bound, f"{sass} / {n}", f"{other / n:.1f}", f"{cold:.0f}",
                     "ok" if sass == n and cold <= MMA_PLAN_TARGET_US else "WORSE"))
        results[f"mma.{label}"] = {"instructions": n, "sass_mma": sass, "other_per_mma": other / n, "cold_us": cold}
    table(f"MMA plans (sm_100a SASS of the generated function in a one-thread probe): MMAs planned and in the SASS, "
          f"other SASS per MMA (probe included), cold planning in us (target <= {MMA_PLAN_TARGET_US})",
          ("plan", "MMAs", "bound", "SASS / planned", "other/MMA", "cold us", ""), rows, out)


STAGE_EXTRA_TARGET = 2


def stages(results, out):
    rows = []
    for c in stage_costs(staged_copies()):
        rows.append((c.label, c.static, c.staged, c.extra, verdict(c.extra, STAGE_EXTRA_TARGET)))
        results[f"stage.{c.label}"] = {"static": c.static, "staged": c.staged}
    table("Run-time stage: non-UTCCP SASS per call, the staged plan (unsigned stage argument) vs the same copy with a "
          f"static stage 0 (target: at most {STAGE_EXTRA_TARGET} more)", ("copy", "static", "staged", "extra", ""),
          rows, out)


def costs(results, out):
    rows = []
    for label, plan in demo_copies()[:2] if algebra_cases.QUICK else demo_copies():
        c = copy_cost(plan)
        n = c.instructions
        rows.append((plan.atom.ptx.replace("tcgen05.cp.", ""), label, n, f"{c.lower_bound} ({c.widest_legal})",
                     c.utccp_in_sass, f"{c.issue.per_copy:.2f}", f"{c.issue.bound_per_copy:.2f}",
                     "ok" if c.utccp_in_sass == n and n <= max(c.lower_bound, n) else "WORSE", c.probe_registers,
                     c.roundtrip_registers, c.roundtrip_static_shared, f"{c.model_clocks} clk / {c.model_ns} ns"))
        results[f"cost.{label}.{plan.atom.ptx}"] = {"instructions": n, "lower_bound": c.lower_bound,
                                                    "issue_per_copy": c.issue.per_copy,
                                                    "model_clocks": c.model_clocks}
    table("Static cost of the generated code (sm_100a SASS; copy time is a MODEL: 128 B/clk/SM on B200)",
          ("atom", "copy", "planned", "lower bound (widest legal)", "UTCCP", "issue/copy", "bound/copy", "",
           "regs issue", "regs round trip", "static smem B", "model copy time"), rows, out)


INTERPRETER_TARGET_S = 10.0     # a whole 8-CTA x 192-thread GEMM on the CPU takes seconds, not minutes (issue 34)


def interpreter(results, out):
    from pycute.kernels.blockscaled_gemm import BlockScaledGemm
    from pycute.kernels.blockscaled_gemm.check import run_whole
    rows = []
    for kind, g, m in (("mxf8", 1, 512), ("nvfp4", 2, 512))[:1 if algebra_cases.QUICK else 2]:
        gemm = BlockScaledGemm(kind, g, m=m, n=256, k=512)
        if not algebra_cases.QUICK:
            run_whole(gemm)                                      # compiles (and caches) the kernel
        t0 = time.perf_counter()
        got, want = run_whole(gemm)
        seconds = time.perf_counter() - t0
        ctas = gemm.grid
        rows.append((f"{kind} cta_group::{g}", f"{ctas} x 192", gemm.k_blocks, f"{seconds:.2f}",
                     "ok" if seconds <= INTERPRETER_TARGET_S and (got == want).all() else "OVER"))
        results[f"interpreter.gemm.{kind}.cg{g}"] = {"ctas": ctas, "seconds": seconds}
    table(f"Whole kernels on the CPU (pycute.interp.run_kernel): the block-scaled GEMM example, every thread, seconds "
          f"(target <= {INTERPRETER_TARGET_S})", ("kernel", "CTAs x threads", "k-blocks", "seconds", ""), rows, out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.report", description=__doc__)
    parser.add_argument("--json", help="write the numbers to this file")
    parser.add_argument("--gpu", action="store_true", help="only the GPU throughput of pycute's copy kernels "
                        "(perf/gpu_report.py) against the same run's memcpy")
    parser.add_argument("--quick", action="store_true", help="one short sample per timing and one round: every "
                        "table, noisy numbers (the test suite's check of the report)")
    args = parser.parse_args(argv)
    if args.quick:
        global ROUNDS
        algebra_cases.QUICK, ROUNDS = True, 1
    out = sys.stdout
    if args.gpu:
        from .gpu_report import report, write
        numbers = report(out)
        if args.json:
            write(numbers, args.json)
        return 0
    t0 = time.perf_counter()
    print(f"pycute performance report — {platform.machine()}, Python {platform.python_version()}, "
          f"no claims about hardware that was not present", file=out)
    results: dict = {}
    for section in (algebra, planning, compiling, emulator, gpu, issue, stages, tmem_copies, mmas, costs, interpreter):
        section(results, out)
    results["report_seconds"] = time.perf_counter() - t0
    print(f"\nreport took {results['report_seconds']:.1f} s", file=out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
