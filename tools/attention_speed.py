"""How fast is pycute's attention forward beside cuDNN's and FlashAttention-2's SDPA, and is every output right?

FlashAttention-3's protocol: batch x seqlen = 16k tokens and a hidden size of 2048 (heads = 2048 / head_dim), seqlen
512 .. 16k, causal and not, head dims 64, 128 and 256 in bf16 (and an f16 spot check), pycute's configurations (the
first guess and its variants) beside ``torch.nn.functional.scaled_dot_product_attention`` with the cuDNN backend and
with the FLASH backend (``torch.nn.attention.sdpa_kernel``), all in one process per head dim on the same inputs.
TFLOP/s as FlashAttention-3 counts them: 4 b s^2 h d, halved for causal. Docs: docs/attention.md.

1. ``check``: every configuration timed, first run on small problems that take every path (ragged lengths, grouped
   query heads, causal with more queries than keys) against the float64 reference, O and the log-sum-exp, O
   poisoned with NaN before; and the packed-sequence kernels on sequences of different lengths whose tensors hold
   NaN past the last one: all in one child process, then any configuration it did not report alone.
2. ``time``: per (head dim, causal) one child: per seqlen the inputs, then each contender run once and checked
   against the float64 reference on 64 sampled query rows of every (batch, head) (pycute's O poisoned with NaN
   before), then timed (``triton.testing.do_bench_cudagraph``, median) in interleaved rounds.

    PYTHONPATH=. python -m tools attention_speed --quick [OUT.jsonl]   (head dim 128 at 2k and 8k, 64 and 256 at 4k)
    PYTHONPATH=. python -m tools attention_speed [OUT.jsonl]           (the whole sweep)
    PYTHONPATH=. python -m tools attention_speed --profile             (ncu: pycute and cuDNN at head dim 128, 8k)
    PYTHONPATH=. python -m tools attention_speed --dry [--only d64]    (CPU: every configuration compiled, SASS
                                                                        checked, small problems run whole)
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from concurrent.futures import ProcessPoolExecutor

from perf.gpu_attention import HIDDEN, TOKENS, bench, contenders, errors, inputs, reference_rows
from tools._common import JsonLines, json_rows, last_json, ncu_path, out_path, parse_ncu, run_child, run_question

QUESTION = "attention_speed"
SEQLENS = (512, 1024, 2048, 4096, 8192, 16384)
ROUNDS = 3
SAMPLED_ROWS = 64
LSE_TOLERANCE = 1e-3        # the log-sum-exp through ex2.approx and f32 sums
#: The small problems every configuration is checked on: (batch, seqlen_q, seqlen_k, heads, kv_heads, causal).
CHECKS = ((2, 1000, 777, 8, 2, False), (2, 1000, 777, 8, 2, True), (1, 700, 300, 4, 1, True),
          (1, 1536, 1536, 4, 4, False))


#: Packed sequences every varlen configuration is checked on: (cu_seqlens_q, cu_seqlens_k, heads, kv_heads).
VARLEN_CHECKS = (([0, 1000, 1017, 1777, 3000], [0, 777, 1800, 1900, 2600], 8, 2),)


def varlen_configs() -> list:
    """The packed-sequence kernels checked (each head dim's first guess, causal and not)."""
    from pycute.kernels.attention.config import AttentionConfig
    return [AttentionConfig.choose(d, causal, varlen=True) for d in (64, 128, 256) for causal in (False, True)]


def variants(head_dim: int, causal: bool, dtype: str = "bf16") -> list:
    """The configurations timed: ``choose``'s first, then the tile / stage variants that fit (shared memory, and
    registers: S, P and O of a warpgroup in its consumer budget)."""
    from pycute.kernels.attention.config import AttentionConfig as C
    first = C.choose(head_dim, causal, dtype)
    more = {64: [C(dtype, 64, causal, block_n=192, consumers=2), C(dtype, 64, causal, block_n=128, consumers=2,
                                                                    kv_stages=3)],
            128: [C(dtype, 128, causal, block_n=176, q_stages=1), C(dtype, 128, causal, block_n=128, q_stages=1,
                                                                       kv_stages=3),
                  C(dtype, 128, causal, block_n=128, turns=False)],
            256: [C(dtype, 256, causal, block_n=64, q_stages=1)]}[head_dim]
    return [first] + [c for c in more if c != first]


def plan(quick: bool) -> list[tuple[int, bool, tuple[int, ...], str]]:
    """(head dim, causal, seqlens, dtype) groups, one child each."""
    if quick:
        return [(128, False, (2048, 8192), "bf16"), (128, True, (2048, 8192), "bf16"), (64, False, (4096,), "bf16"),
                (256, False, (4096,), "bf16"), (128, False, (4096,), "f16")]
    return [(d, c, SEQLENS, "bf16") for d in (64, 128, 256) for c in (False, True)] + [(128, False, (4096,), "f16")]


def config_of(text: str):
    from pycute.kernels.attention.config import AttentionConfig
    return AttentionConfig(**json.loads(text))


def config_text(c) -> str:
    import attrs
    return json.dumps(attrs.asdict(c))


# ---- on the GPU (child processes) -----------------------------------------------------------------------------
def _check_varlen(config) -> list[dict]:
    """``config`` (packed sequences) on ``VARLEN_CHECKS``, each sequence against its float64 reference; the
    packed tensors hold NaN past the last sequence, which reaches O only if a load reads past a sequence."""
    import torch
    from pycute.kernels.attention.op import launch_varlen
    from pycute.kernels.attention.reference import tolerance
    rows = []
    for cu_q, cu_k, heads, kv_heads in VARLEN_CHECKS:
        q, k, v = inputs(1, cu_q[-1] + 64, cu_k[-1] + 64, heads, kv_heads, config.head_dim, config.dtype, seed=7)
        for x, n in ((q, cu_q[-1]), (k, cu_k[-1]), (v, cu_k[-1])):
            x[0, n:] = math.nan
        q, k, v = q[0], k[0], v[0]
        o, lse = torch.full_like(q, math.nan), torch.full((heads, q.shape[0]), math.nan, device="cuda")
        scale = 1 / math.sqrt(config.head_dim)
        offsets = [torch.tensor(c, dtype=torch.int32, device="cuda") for c in (cu_q, cu_k)]
        lengths = [max(b - a for a, b in zip(c, c[1:])) for c in (cu_q, cu_k)]
        launch_varlen(config, q, k, v, *offsets, *lengths, o, lse, scale)
        torch.cuda.synchronize()
        worst = {"err": 0.0, "nan": 0, "lse_err": 0.0, "lse_unseen_ok": True}
        for b in range(len(cu_q) - 1):
            rows_b, keys = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
            want_o, want_lse = reference_rows(q[None, rows_b], k[None, keys], v[None, keys], scale, config.causal,
                                               torch.arange(cu_q[b + 1] - cu_q[b], device="cuda"))
            e = errors(o[None, rows_b], lse[None, :, rows_b], want_o, want_lse, v[None, :cu_k[-1]])
            worst = {"err": max(worst["err"], e["err"]), "nan": worst["nan"] + e["nan"],
                     "lse_err": max(worst["lse_err"], e["lse_err"]),
                     "lse_unseen_ok": worst["lse_unseen_ok"] and e["lse_unseen_ok"]}
        ok = worst["nan"] == 0 and worst["err"] <= tolerance(config.dtype) and worst["lse_err"] <= LSE_TOLERANCE \
            and worst["lse_unseen_ok"]
        rows.append({"case": ["varlen", cu_q, cu_k, heads, kv_heads], **worst, "ok": ok})
    return rows


def one_check(config) -> dict:
    """``config`` on the small problems, against the float64 reference."""
    import torch
    from pycute.kernels.attention.op import launch
    from pycute.kernels.attention.reference import tolerance
    if config.varlen:
        rows = _check_varlen(config)
        return {"kind": "check", "config": config.name, "settings": json.loads(config_text(config)), "cases": rows,
                "ok": all(r["ok"] for r in rows), "device": torch.cuda.get_device_name()}
    rows = []
    for case in CHECKS:
        batch, sq, sk, heads, kv_heads, causal = case
        if causal != config.causal:
            continue
        q, k, v = inputs(batch, sq, sk, heads, kv_heads, config.head_dim, config.dtype, seed=sq + sk)
        o, lse = torch.full_like(q, math.nan), torch.full((batch, heads, sq), math.nan, device="cuda")
        scale = 1 / math.sqrt(config.head_dim)
        launch(config, q, k, v, o, lse, scale)
        torch.cuda.synchronize()
        want_o, want_lse = reference_rows(q, k, v, scale, causal, torch.arange(sq, device="cuda"))
        e = errors(o, lse, want_o, want_lse, v)
        ok = e["nan"] == 0 and e["err"] <= tolerance(config.dtype) and e["lse_err"] <= LSE_TOLERANCE \
            and e["lse_unseen_ok"]
        rows.append({"case": list(case), **e, "ok": ok})
    return {"kind": "check", "config": config.name, "settings": json.loads(config_text(config)), "cases": rows,
            "ok": all(r["ok"] for r in rows), "device": torch.cuda.get_device_name()}


def one_time(head_dim: int, causal: bool, seqlens: tuple[int, ...], dtype: str, configs: list) -> list[dict]:
    """Every contender at every seqlen of FlashAttention-3's protocol: checked, then timed."""
    import torch
    from pycute.kernels.attention.reference import tolerance
    rows = []
    for s in seqlens:
        batch, heads = TOKENS // s, HIDDEN // head_dim
        q, k, v = inputs(batch, s, s, heads, heads, head_dim, dtype, seed=s)
        scale = 1 / math.sqrt(head_dim)
        flops = 4 * batch * s * s * heads * head_dim / (2 if causal else 1)
        sample = torch.randperm(s, device="cuda")[:SAMPLED_ROWS].sort().values
        want_o, want_lse = reference_rows(q, k, v, scale, causal, sample)
        shape = {"head_dim": head_dim, "causal": causal, "dtype": dtype, "seqlen": s, "batch": batch, "heads": heads}
        timed = {}
        for name, (run, out, lse) in contenders(configs, q, k, v, causal, scale).items():
            row = {"kind": "time", **shape, "contender": name}
            try:
                if isinstance(out, torch.Tensor):
                    out.fill_(math.nan)
                    lse.fill_(math.nan)
                run()
                torch.cuda.synchronize()
                o = out if isinstance(out, torch.Tensor) else out["o"].transpose(1, 2)
                row.update(errors(o[:, sample], None if lse is None else lse[:, :, sample], want_o, want_lse, v))
                row["ok"] = row["nan"] == 0 and row["err"] <= tolerance(dtype) and row.get("lse_err", 0) <= \
                    LSE_TOLERANCE
                if row["ok"]:
                    timed[name] = run
            except Exception as e:                                  # a backend SDPA cannot run here
                row.update({"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"})
            rows.append(row)
        ms = {name: [] for name in timed}
        for _ in range(ROUNDS):
            for name, run in timed.items():
                ms[name].append(bench(run))
        for row in rows:
            if row.get("seqlen") == s and row["contender"] in ms:
                best, median = min(ms[row["contender"]]), statistics.median(ms[row["contender"]])
                row.update({"ms_rounds": ms[row["contender"]], "ms": median, "tflops": flops / median / 1e9,
                            "tflops_best": flops / best / 1e9})
        del q, k, v
        torch.cuda.empty_cache()
    return rows


def one_profile(head_dim: int, causal: bool, seqlen: int) -> dict:
    """pycute's first guess and cuDNN, each run twice (the second is what ncu keeps), for ncu."""
    import torch
    from pycute.kernels.attention.config import AttentionConfig
    batch, heads = TOKENS // seqlen, HIDDEN // head_dim
    q, k, v = inputs(batch, seqlen, seqlen, heads, heads, head_dim, "bf16", seed=1)
    runs = contenders([AttentionConfig.choose(head_dim, causal)], q, k, v, causal, 1 / math.sqrt(head_dim))
    for name in list(runs)[:2]:
        for _ in range(2):
            runs[name][0]()
    torch.cuda.synchronize()
    return {"kind": "profiled", "head_dim": head_dim, "causal": causal, "seqlen": seqlen}


# ---- on the CPU: the build and small problems run whole ------------------------------------------------------
def build(text: str) -> dict:
    """One configuration compiled for sm_90a: its SASS summary (HGMMA, TMA, local memory, serialised wgmma)."""
    config = config_of(text)
    start = time.time()
    k = config.compile()
    h = k.histogram()
    return {"kind": "build", "config": config.name, "seconds": round(time.time() - start, 1),
            "hgmma": {op: n for op, n in h.items() if op.startswith("HGMMA")},
            "local": sum(n for op, n in h.items() if op.startswith(("LDL", "STL"))),
            "serialised": any("C7515" in line or "C7512" in line for line in k.log.splitlines())}


def dry_run(head_dims: tuple[int, ...], first: bool, cpu: bool = True) -> list[dict]:
    """What the CPU can do of a GPU run: every configuration built, and each head dim's kernel built for one consumer
    warpgroup (the torch op's CPU path) run whole on a small causal grouped-query problem against the reference."""
    import numpy as np
    from pycute.kernels.attention.cpu import run_on_cpu
    from pycute.kernels.attention.op import cpu_config
    from pycute.kernels.attention.reference import attention_reference, bf16_bits, from_bits, tolerance
    texts = sorted({config_text(c) for d, causal, _, dtype in plan(False) if d in head_dims
                    for c in variants(d, causal, dtype)[:1 if first else None]}
                   | {config_text(c) for c in varlen_configs() if c.head_dim in head_dims and not first})
    with ProcessPoolExecutor(4) as pool:
        rows = list(pool.map(build, texts))
    for d in head_dims if cpu else ():
        config = cpu_config(d, True, "bf16")
        rng = np.random.default_rng(d)
        q, k, v = (bf16_bits(rng.standard_normal((1, n, h, d))) for n, h in ((80, 2), (70, 1), (70, 1)))
        start = time.time()
        o, lse = run_on_cpu(config, q, k, v, 1 / math.sqrt(d), grid=2)
        want, _ = attention_reference(*(from_bits(x, "bf16") for x in (q, k, v)), 1 / math.sqrt(d), True)
        err = float(np.abs(from_bits(o, "bf16") - want).max() / np.abs(from_bits(v, "bf16")).max())
        rows.append({"kind": "cpu", "config": config.name, "err": err, "ok": bool(err <= tolerance("bf16")),
                     "seconds": round(time.time() - start, 1)})
    return rows


# ---- the parent --------------------------------------------------------------------------------------------------
def checks(configs: list) -> list[dict]:
    """Every configuration checked: all in one child, then any it did not report (a fault, a hang) alone -- until
    two in a row hang (a kernel that hangs everywhere is not worth the GPU's minutes)."""
    texts = [config_text(c) for c in configs]
    run = run_question(QUESTION, ["--one", "check", *texts], 240)
    done = {r["config"]: r for r in json_rows(run.stdout) if r.get("kind") == "check"}
    out, hangs = [], 0
    for c, text in zip(configs, texts):
        if c.name not in done:
            alone = run_question(QUESTION, ["--one", "check", text], 60) if hangs < 2 else None
            hangs = hangs + 1 if alone is not None and alone.rc is None else 0 if alone is not None else hangs
            verdict = last_json(alone.stdout) if alone is not None and alone.ok else None
            done[c.name] = verdict or {"kind": "check", "config": c.name, "ok": False,
                                       "error": alone.error() if alone is not None else "not run: two hangs before"}
        out.append(done[c.name])
    return out


def timings(groups: list, passed: set[str]) -> list[dict]:
    rows = []
    for head_dim, causal, seqlens, dtype in groups:
        configs = [c for c in variants(head_dim, causal, dtype) if c.name in passed]
        args = ["--one", "time", str(head_dim), str(int(causal)), ",".join(map(str, seqlens)), dtype,
                *[config_text(c) for c in configs]]
        run = run_question(QUESTION, args, 420)
        got = [r for r in json_rows(run.stdout) if r.get("kind") == "time"]
        rows += got or [{"kind": "time", "head_dim": head_dim, "causal": causal, "dtype": dtype, "ok": False,
                         "error": run.error()}]
    return rows


def profile(out_dir) -> list[dict]:
    ncu = ncu_path()
    if ncu is None:
        return [{"kind": "ncu", "error": "ncu not found"}]
    sections = [f"--section={s}" for s in ("SpeedOfLight", "ComputeWorkloadAnalysis", "WarpStateStats", "Occupancy",
                                           "LaunchStats")]
    args = ["-m", "tools", QUESTION, "--one", "profile", "128", "0", "8192"]
    run = run_child(args, 900, prefix=(ncu, "--csv", "--page", "details", *sections, "--kernel-name",
                                       "regex:attention|cudnn|fmha|flash", "--launch-skip", "0", "--launch-count",
                                       "4"))
    (out_dir / f"{QUESTION}_ncu.csv").write_text(run.stdout)
    metrics = parse_ncu(run.stdout)
    return [{"kind": "ncu", "kernel": name, "metrics": values} for name, values in metrics.items()] or \
        [{"kind": "ncu", "error": run.error()}]


def table(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        if r["kind"] == "check":
            bad = [c for c in r.get("cases", []) if not c["ok"]]
            lines.append(f"check {r['config']:<42} {'ok' if r['ok'] else 'FAIL ' + str(bad or r.get('error'))[:200]}")
        elif r["kind"] == "build" or r["kind"] == "cpu":
            rest = {k: v for k, v in r.items() if k not in ("kind", "config")}
            lines.append(f"{r['kind']:<5} {r['config']:<42} {json.dumps(rest)[:160]}")
    cudnn = {(r["head_dim"], r["causal"], r["dtype"], r["seqlen"]): r.get("tflops") for r in rows
             if r["kind"] == "time" and r.get("contender") == "cudnn"}
    for r in rows:
        if r["kind"] == "time" and "seqlen" in r:
            base = cudnn.get((r["head_dim"], r["causal"], r["dtype"], r["seqlen"]))
            rel = f"{100 * r['tflops'] / base:6.1f}% of cuDNN" if r.get("tflops") and base else ""
            speed = f"{r['tflops']:7.1f} TFLOP/s" if r.get("tflops") else f"{'':>14}"
            lines.append(f"d{r['head_dim']:<4}{'causal' if r['causal'] else 'full':<7}{r['dtype']:<5}{r['seqlen']:>6} "
                         f"{r['contender']:<48} {speed} {rel:>16}  err {r.get('err', float('nan')):.1e} "
                         f"{'ok' if r['ok'] else 'FAIL ' + r.get('error', '')[:80]}")
        elif r["kind"] == "time":
            lines.append(f"time d{r['head_dim']} {'causal' if r['causal'] else 'full'} {r['dtype']}: FAIL "
                         f"{r.get('error', '')[-300:]}")
        elif r["kind"] == "ncu":
            lines.append(f"ncu {r.get('kernel', '')} {json.dumps(r.get('metrics', r.get('error')))[:600]}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m tools {QUESTION}", description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", help=f"JSON lines (default $OUT/{QUESTION}.jsonl)")
    ap.add_argument("--quick", action="store_true", help="a few shapes and every variant, for iteration")
    ap.add_argument("--profile", action="store_true", help="ncu on head dim 128, seqlen 8k: pycute and cuDNN")
    ap.add_argument("--dry", action="store_true", help="no GPU: build every configuration, run small problems whole")
    ap.add_argument("--only", default="d64,d128,d256", help="head dims of the dry run (d64,d128,d256)")
    ap.add_argument("--first", action="store_true", help="the dry run builds only the first guesses")
    ap.add_argument("--no-cpu", action="store_true", help="the dry run only builds (no problem run on the CPU)")
    ap.add_argument("--one", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        kind, rest = a.one[0], a.one[1:]
        if kind == "check":
            for text in rest:
                print(json.dumps(one_check(config_of(text))), flush=True)
        elif kind == "time":
            head_dim, causal, seqlens, dtype = int(rest[0]), rest[1] == "1", rest[2], rest[3]
            for row in one_time(head_dim, causal, tuple(map(int, seqlens.split(","))), dtype,
                                [config_of(t) for t in rest[4:]]):
                print(json.dumps(row), flush=True)
        else:
            print(json.dumps(one_profile(int(rest[0]), rest[1] == "1", int(rest[2]))), flush=True)
        return 0
    path = out_path(QUESTION, a.out)
    with JsonLines(path) as out:
        if a.dry:
            out.extend(dry_run(tuple(int(d.strip().lstrip("d")) for d in a.only.split(",")), a.first, not a.no_cpu))
        elif a.profile:
            out.extend(profile(path.parent))
        else:
            groups = plan(a.quick)
            configs = list({config_text(c): c for d, causal, _, dtype in groups
                            for c in variants(d, causal, dtype)}.values()) + varlen_configs()
            with ProcessPoolExecutor(8) as pool:
                out.extend(pool.map(build, [config_text(c) for c in configs]))
            out.extend(checks(configs))
            passed = {r["config"] for r in out.rows if r["kind"] == "check" and r["ok"]}
            out.extend(timings(groups, passed))
    print(table(out.rows))
    bad = [r for r in out.rows if r["kind"] in ("check", "cpu") and not r["ok"]] + \
        [r for r in out.rows if r["kind"] == "build" and (r["local"] or r["serialised"])]
    return 1 if bad else 0
