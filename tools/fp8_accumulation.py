"""How many bits does Hopper's wgmma keep when it sums fp8 products, and how does it drop the rest?

Which bits survive, truncated or rounded, per block or per instruction, and what becomes of C; bf16 and f16
kernels run beside as controls.

Twelve kernels (``KERNELS``: e4m3 / e5m2 in all four pairings into f32, two into f16, K 32 and chained K 64 / 128;
bf16 and f16 into f32 and f16) each run ``pycute.harness.wgmma_accumulation.accumulation_tiles``: 22 CTAs of 64 x 64
independent dot products -- crafted probes (one product beside a C 2^-34..2^34 times its size; one large product
with small ones at chosen k positions and block boundaries; terms of one binade with a small last one) and random
cases (uniform codes, Gaussian data with a grown C, C cancelling the products, NaN / infinity / subnormal / signed
zero operands, scale-d 0). The GPU's D is compared bit for bit with the exact sum rounded once (pycute's model
before this run) and with a grid of ``WgmmaAccumulation`` candidates (bits kept below the largest exponent, block
size, how C enters, term and final rounding, which exponent a product aligns by, and whether chained instructions
carry an unrounded sum), and the probes are read out directly (how much of the smaller term survives at each
exponent gap).

    PYTHONPATH=. python -m tools fp8_accumulation            # the GPU run: $OUT/fp8_accumulation.{npz,jsonl}
    PYTHONPATH=. python -m tools fp8_accumulation --dry      # the CPU: every kernel compiled, 3 CTAs each run
                                                             # through run_kernel, the analysis on that
    PYTHONPATH=. python -m tools fp8_accumulation --from RAW.npz [--fit full]   # re-analyse a run on the CPU

The GPU part runs in a child process (a fault loses nothing but that run). ``--fit quick`` (the default) tries
the candidates most likely by the readouts; ``--fit full`` the whole grid (minutes on a CPU).
"""
from __future__ import annotations

import argparse
import functools
import itertools
import os
import time

import attrs
import numpy as np

from pycute.arch.sm90.wgmma import EXACT_ACCUMULATION, WGMMA_ACCUMULATION, WGMMA_TYPES, WgmmaAccumulation
from pycute.harness.wgmma_accumulation import AccumulationKernel, Tiles, accumulation_tiles, kernels_source
from pycute.sim.executors.wgmma import d_values
from pycute.sim.operand import decode
from tools._common import JsonLines, out_path, run_question

QUESTION = "fp8_accumulation"
K = AccumulationKernel
KERNELS: tuple[AccumulationKernel, ...] = (
    K("f8e4m3", "f8e4m3", "f32", 32), K("f8e5m2", "f8e5m2", "f32", 32), K("f8e4m3", "f8e5m2", "f32", 32),
    K("f8e5m2", "f8e4m3", "f32", 32), K("f8e4m3", "f8e4m3", "f32", 128), K("f8e5m2", "f8e5m2", "f32", 64),
    K("f8e4m3", "f8e4m3", "f16", 32), K("f8e5m2", "f8e5m2", "f16", 64),
    K("bf16", "bf16", "f32", 16), K("bf16", "bf16", "f32", 64), K("f16", "f16", "f32", 16), K("f16", "f16", "f16", 32))
SEED = 2026
#: CTAs the dry run takes of each kernel (one probe of each crafted kind and the special values).
DRY_CTAS = (0, 2, 20)


def group(k: AccumulationKernel) -> str:
    """Kernels fitted together: one operand family and D type."""
    return f"{WGMMA_TYPES[k.a].family}->{k.d}"


def measured(k: AccumulationKernel) -> WgmmaAccumulation:
    """The record pycute holds as the hardware's for the kernel's family and D type (``WGMMA_ACCUMULATION``)."""
    return WGMMA_ACCUMULATION[WGMMA_TYPES[k.a].family, k.d]


# ---- runs ----------------------------------------------------------------------------------------------------------

def _tiles(k: AccumulationKernel, ctas: tuple[int, ...] | None) -> Tiles:
    t = accumulation_tiles(k, SEED)
    if ctas is None:
        return t
    idx = list(ctas)
    return Tiles(t.a[idx], t.b[idx], t.c[idx], t.scale_d[idx], tuple(t.kind[i] for i in idx))


def run_gpu(path: str, kernels: tuple[AccumulationKernel, ...] = KERNELS) -> None:
    """The child: the kernels on the GPU, D codes saved to ``path`` (.npz, one array per kernel)."""
    from pycute.compile import runtime
    from pycute.compile.nvrtc import compile_cuda
    gpu = runtime.Gpu()
    compiled = compile_cuda(kernels_source(kernels), arch="sm_90a")
    out: dict = {}
    for k in kernels:
        out[k.entry] = k.run_gpu(gpu, _tiles(k, None), compiled)
    out["device"] = np.array(repr(gpu))
    np.savez_compressed(path, **out)


def run_dry(kernels: tuple[AccumulationKernel, ...] = KERNELS) -> dict:
    """The kernels compiled; ``DRY_CTAS`` of each run whole through run_kernel."""
    from pycute.compile.nvrtc import compile_cuda
    compiled = compile_cuda(kernels_source(kernels), arch="sm_90a")
    out: dict = {"device": np.array("CPU: pycute.interp.run_kernel (the emulator's model)")}
    for k in kernels:
        out[k.entry] = k.run_cpu(_tiles(k, DRY_CTAS), compiled)
    return out


# ---- the candidates -----------------------------------------------------------------------------------------------

@attrs.frozen
class Candidate:
    """A ``WgmmaAccumulation`` and whether chained instructions carry the unrounded sum (``wide``)."""

    model: WgmmaAccumulation
    wide: bool = False

    def describe(self) -> str:
        return self.model.describe() + ("; chained instructions carry the unrounded sum" if self.wide else "")

    def record(self) -> dict:
        return {**attrs.asdict(self.model, filter=lambda a, v: a.name != "source"), "wide": self.wide}


def grid(bits: range, blocks=(4, 8, 16, 32), c_terms=("aligned", "after"), terms=("rz", "rd", "rn"),
         roundings=("rz", "rn"), grids=("exponents", "values"), wide=(False,)) -> list[Candidate]:
    out = [Candidate(EXACT_ACCUMULATION), Candidate(attrs.evolve(EXACT_ACCUMULATION, rounding="rz"))]
    for f, blk, c, t, r, g, w in itertools.product(bits, blocks, c_terms, terms, roundings, grids, wide):
        out.append(Candidate(WgmmaAccumulation(f, blk, c, t, r, g), w))
    return out


def neighbours(model: WgmmaAccumulation) -> list[Candidate]:
    """``model`` with one field changed at a time, to the values a fit would confuse it with: one bit more or fewer
    (alignment and sum cut), half the block, the other term and final roundings, the other grid, no sum cut or one
    as wide as the alignment, IEEE's sign of zero and overflow. If the data tell each field, every one of these
    differs from the GPU somewhere."""
    assert model.fraction_bits is not None
    ev = functools.partial(attrs.evolve, model, source="")
    out = [ev(fraction_bits=model.fraction_bits + d) for d in (-1, 1)] + [ev(block=model.block // 2)]
    out += [ev(term_rounding=t) for t in ("rz", "rd", "rn") if t != model.term_rounding]
    out += [ev(rounding="rn" if model.rounding == "rz" else "rz"),
            ev(grid="values" if model.grid == "exponents" else "exponents")]
    if model.sum_bits is None:
        out.append(ev(sum_bits=model.fraction_bits))
    else:
        out += [ev(sum_bits=None)] + [ev(sum_bits=model.sum_bits + d) for d in (-1, 1)]
    out += [ev(zero="ieee")] if model.zero != "ieee" else []
    out += [ev(overflow="ieee")] if model.overflow != "ieee" else []
    return [Candidate(m) for m in out]


def predict(k: AccumulationKernel, tiles: Tiles, cand: Candidate) -> np.ndarray:
    block = min(cand.model.block, k.step)
    model = attrs.evolve(cand.model, block=block)
    return k.model(tiles, model, step=k.k if cand.wide else None)


def _rows(t: Tiles, rows: slice) -> Tiles:
    return Tiles(t.a[:, rows], t.b, t.c[:, rows], t.scale_d, t.kind)


def fit(runs: dict, kernels: list[AccumulationKernel], cands: list[Candidate], rows: slice = slice(None),
        ctas: tuple[int, ...] | None = None) -> list[tuple[int, Candidate, dict]]:
    """Each candidate's differing elements (NaN against NaN counts as equal) over ``kernels``, best first."""
    data = []
    for k in kernels:
        t = _rows(_tiles(k, ctas), rows)
        got = runs[k.entry][:, rows]
        data.append((k, t, got))
    scored = []
    for cand in cands:
        per = {}
        for k, t, got in data:
            want = predict(k, t, cand)
            per[k.name] = int((~_same(got, want, k.d)).sum())
        scored.append((sum(per.values()), cand, per))
    scored.sort(key=lambda s: s[0])
    return scored


def _same(got: np.ndarray, want: np.ndarray, d: str) -> np.ndarray:
    g, w = d_values(got, d), d_values(want, d)
    return (got == want) | (np.isnan(g) & np.isnan(w))


# ---- direct readouts ----------------------------------------------------------------------------------------------

def readout(k: AccumulationKernel, tiles: Tiles, got: np.ndarray) -> dict:
    """The "single" CTAs (D = one product + C), with C the larger term (the product is cut) and with the product
    the larger (C is cut): ``bits``, the fewest bits below the larger term's binade that every D keeps (the largest
    error |D - exact sum| is below 2^-bits of that binade), how the errors lean (toward zero, down, up), and per
    exponent gap between the terms the counts of exact D and of errors toward / away from zero."""
    out: dict = {}
    for which in ("c_larger", "product_larger"):
        errs, sums, bigs, gaps = [], [], [], []
        for i, kind in enumerate(tiles.kind):
            if kind != "single":
                continue
            cols = np.arange(k.n) % k.k
            p = decode(tiles.a[i], k.a)[:, cols] * decode(tiles.b[i], k.b)[np.arange(k.n), cols][None, :]
            c = d_values(tiles.c[i], k.d)
            dv = d_values(got[i], k.d)
            big, small = (c, p) if which == "c_larger" else (p, c)
            gap = np.floor(np.log2(np.abs(big), where=big != 0, out=np.zeros_like(big))) - \
                np.floor(np.log2(np.abs(small), where=small != 0, out=np.zeros_like(small)))
            sel = np.isfinite(dv) & (small != 0) & (np.abs(big) > np.abs(small)) & (gap <= 28)
            exact = big[sel] + small[sel]                           # exact: at most 24 + 28 bits
            errs.append(dv[sel] - exact)
            sums.append(exact)
            bigs.append(np.floor(np.log2(np.abs(big[sel]))))
            gaps.append(gap[sel])
        err, exact, ebig, gap = (np.concatenate(x) if x else np.zeros(0) for x in (errs, sums, bigs, gaps))
        nz = err != 0
        rel = np.abs(err[nz]) * np.exp2(-ebig[nz])
        per_gap = {}
        for g in np.unique(gap):
            at = gap == g
            per_gap[int(g)] = [int(at.sum()), int((at & ~nz).sum()),
                               int((at & nz & (np.abs(exact + err) < np.abs(exact))).sum())]
        out[which] = {"observations": int(err.size), "exact": int((~nz).sum()),
                      "bits": int(np.floor(-np.log2(rel.max()))) if rel.size else None,
                      "toward_zero": int((np.abs(exact[nz] + err[nz]) < np.abs(exact[nz])).sum()),
                      "down": int((err[nz] < 0).sum()), "up": int((err[nz] > 0).sum()),
                      "per_gap [n, exact, toward zero]": per_gap}
    alone = [(d_values(got[i][-4:], k.d), d_values(tiles.c[i][-4:], k.d)) for i, kind in enumerate(tiles.kind)
             if kind == "single"]
    if alone:
        dv, c = (np.concatenate([x[j].reshape(-1) for x in alone]) for j in (0, 1))
        out["c_alone"] = {"observations": int(dv.size), "d_equals_c": int((dv == c).sum())}
    return out


def _summary(r: dict) -> str:
    n = r["observations"] - r["exact"]
    lean = "toward zero" if n and r["toward_zero"] == n else "down" if n and r["down"] == n else \
        "mixed" if n else "-"
    return f"{r['bits']} bits, {r['exact']}/{r['observations']} exact, errors {lean}"


# ---- the report ---------------------------------------------------------------------------------------------------

def analyse(runs: dict, how: str, out_dir: str | None, raw: str | None = None) -> list[dict]:
    """Fit and read out ``runs``; the rows written to ``out_dir`` (None: printed only). ``raw``: the saved run they
    were read from (a re-analysis on the CPU), named in the first row."""
    rows: list[dict] = [{"question": QUESTION, "device": str(runs["device"]), "seed": SEED,
                         "date": time.strftime("%Y-%m-%d")}]
    if raw is not None:
        rows[0]["reanalysed_from"] = raw
    kernels = [k for k in KERNELS if k.entry in runs]
    dry = str(runs["device"]).startswith("CPU")
    ctas = DRY_CTAS if dry else None
    for k in kernels:
        t = _tiles(k, ctas)
        got = runs[k.entry]
        exact = predict(k, t, Candidate(EXACT_ACCUMULATION))
        same = _same(got, exact, k.d)
        per_kind = {kind: int((~same[[i for i, x in enumerate(t.kind) if x == kind]]).sum())
                    for kind in dict.fromkeys(t.kind)}
        nan_codes = sorted({int(x) for x in got[np.isnan(d_values(got, k.d))]})
        rd = readout(k, t, got)
        rows.append({"kernel": k.name, "group": group(k), "ctas": t.ctas, "elements": int(got.size),
                     "differ_exact_model": int((~same).sum()), "differ_by_kind": per_kind,
                     "nan_codes": [hex(x) for x in nan_codes], "readout": rd})
    for g in dict.fromkeys(group(k) for k in kernels):
        members = [k for k in kernels if group(k) == g]
        single = [k for k in members if k.k == k.step] or members
        if how == "full":
            cands = grid(range(8, 31), wide=(False, True))
            coarse = fit(runs, single, cands, rows=slice(0, 64, 16), ctas=ctas)
        else:
            cands = grid(range(10, 28), blocks=(32, 16), grids=("exponents",), c_terms=("aligned",))
            coarse = fit(runs, single, cands, rows=slice(0, 64, 16), ctas=ctas)
        best = [c for _, c, _ in coarse[:6]]
        best += [Candidate(c.model, wide=True) for c in best[:2] if any(k.k > k.step for k in members)]
        held = Candidate(attrs.evolve(measured(members[0]), source=""))
        near = neighbours(held.model) if not held.model.exact else []
        final = fit(runs, members, list(dict.fromkeys(best + [held, Candidate(EXACT_ACCUMULATION)] + near)),
                    ctas=ctas)
        rows.append({"group": g, "fit": how, "candidates_tried": len(set(cands) | {held, *near}),
                     "best": [{"differ": n, "model": c.record(), "describe": c.describe(), "per_kernel": per}
                              for n, c, per in final[:5]],
                     "exact_model": next({"differ": n, "per_kernel": per} for n, c, per in final
                                         if c == Candidate(EXACT_ACCUMULATION)),
                     "pycute_model": next({"differ": n, "describe": c.describe(), "per_kernel": per}
                                          for n, c, per in final if c == held),
                     "neighbours": [{"differ": n, "changed": _changed(held.model, c.model), "per_kernel": per}
                                    for n, c, per in final if c in near]})
    path = out_path(QUESTION, os.path.join(out_dir, f"{QUESTION}.jsonl")) if out_dir is not None else None
    if path is not None:
        with JsonLines(path) as out:
            out.extend(rows)
    _print(rows, str(path or "not written"))
    return rows


def _changed(base: WgmmaAccumulation, other: WgmmaAccumulation) -> dict:
    """The fields in which ``other`` differs from ``base``, with ``other``'s values."""
    a, b = attrs.asdict(base), attrs.asdict(other)
    return {f: b[f] for f in a if a[f] != b[f]}


def _print(rows: list[dict], path: str) -> None:
    print(f"{rows[0]['device']}  ({path})")
    print(f"{'kernel':28} {'elements':>8} {'!=exact':>8} {'D=C alone':>10}  one product + C: C larger | product "
          f"larger")
    for r in rows:
        if "kernel" in r:
            rd = r["readout"]
            alone = rd.get("c_alone", {})
            print(f"{r['kernel']:28} {r['elements']:8} {r['differ_exact_model']:8} "
                  f"{alone.get('d_equals_c', 0):>5}/{alone.get('observations', 0):<4}  "
                  f"{_summary(rd['c_larger'])} / {_summary(rd['product_larger'])}")
    for r in rows:
        if "fit" in r:
            b = r["best"][0]
            print(f"{r['group']}: best of {r['candidates_tried']}: {b['differ']} differ -- {b['describe']}; "
                  f"exact model: {r['exact_model']['differ']} differ")
            held = r["pycute_model"]
            print(f"  pycute's record ({held['describe']}): {held['differ']} differ {held['per_kernel']}")
            print("  one field changed: " + ", ".join(f"{n['changed']} {n['differ']}" for n in r["neighbours"]))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m tools {QUESTION}", description=__doc__.splitlines()[0])
    ap.add_argument("--dry", action="store_true", help="the CPU run: compile, interpret 3 CTAs of each kernel")
    ap.add_argument("--from", dest="raw", help="re-analyse a saved run (.npz)")
    ap.add_argument("--fit", choices=("quick", "full"), default="quick")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="where the .npz and .jsonl go ($OUT, else the "
                    "current folder; a dry run writes only where one is given)")
    ap.add_argument("--only", help="the kernels to run, by entry (acc_f8e4m3_f8e4m3_f32_k32,...)")
    ap.add_argument("--gpu-child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    kernels = KERNELS if not args.only else tuple(k for k in KERNELS if k.entry in args.only.split(","))
    if not kernels:
        print(f"error: --only names none of {', '.join(k.entry for k in KERNELS)}")
        return 2
    if args.gpu_child:
        run_gpu(args.gpu_child, kernels)
        return 0
    out_dir = args.out or (None if args.dry else ".")
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
    if args.raw:
        runs = dict(np.load(args.raw))
    elif args.dry:
        runs = run_dry(kernels)
        if out_dir is not None:
            np.savez_compressed(os.path.join(out_dir, f"{QUESTION}-dry.npz"), **runs)
    else:
        raw = os.path.abspath(os.path.join(str(out_dir), f"{QUESTION}.npz"))
        child = run_question(QUESTION, ["--gpu-child", raw] + (["--only", args.only] if args.only else []),
                             timeout=600)
        if not child.ok:
            print(f"error: the GPU run failed: {child.error()}")
            return 1
        runs = dict(np.load(raw))
    analyse(runs, args.fit, out_dir, args.raw)
    return 0
