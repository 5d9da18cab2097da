"""Is the Hopper GEMM faster with its load warp waiting converged than with one elected lane issuing alone?

The Hopper GEMM's load warp in its two forms, timed in turn beside cuBLAS (``torch.matmul``) or
``torch._scaled_mm`` at 8192^3 (docs/hopper-gemm.md): ``warp`` (the example as it is: every lane of the load warp
waits for the stage, one elected lane arms and issues; ``Producer("tma", "warp")``) and ``elected`` (the form before
2026-12-02: one elected lane runs the whole loop while the warp's other lanes wait at the kernel's closing
``__syncwarp``), which the feed's measurements (docs/pipelines.md section 5) found 5% slower at the same loads.

Each variant in its own process (a fault loses one): both forms checked against the f32 reference on small shapes
first, then ``ROUNDS`` rounds of (warp, elected, the vendor's) at 8192^3, each the median of triton's
``do_bench_cudagraph``.

    PYTHONPATH=. python -m tools gemm_load_warp [OUT.jsonl]
    PYTHONPATH=. python -m tools gemm_load_warp --dry      # on the CPU: both forms of every variant compiled
"""
from __future__ import annotations

import json
import statistics
from typing import Any

from tools._common import out_path, run_question

ROUNDS = 5
SHAPES = [(1000, 1000, 528), (333, 520, 1001), (256, 512, 128)]


def variants() -> list[Any]:
    from pycute.kernels.hopper_gemm import HopperGemm, candidates
    return [HopperGemm(), candidates("e4m3")[0], HopperGemm(BN=128, m_blocks=2, mode="pingpong")]


def elected_source(source: str) -> str:
    """The GEMM's source with its load warp in the elected form (textual: an experiment, not a plan)."""
    head = "__device__ __forceinline__ unsigned mainloop_producer_acquire(unsigned bars, mainloop_state st) {"
    body = source.split(head, 1)[1].split("\n}\n", 1)[0]
    assert source.count(head) == 1 and body.count("if (pycute_elect_one_sync()) ") == 1
    source = source.replace(head + body, head + body.replace("if (pycute_elect_one_sync()) ", ""))
    warp = """    if (pycute_warp_index() == 0) {           // the load warp: every lane waits, one issues
      mainloop_state st = mainloop_producer_start();"""
    issue = """          const unsigned full = mainloop_producer_acquire(b, st);
          if (pycute_elect_one_sync()) {
            mainloop_a(&map_a, smem, full, t.m, kb, st.index);
            mainloop_b(&map_b, smem, full, t.n, kb, st.index);
          }"""
    assert source.count(warp) == 1 and source.count(issue) == 1
    elected = """    if (pycute_warp_index() == 0 && pycute_elect_one_sync()) {
      mainloop_state st = mainloop_producer_start();"""
    alone = """          const unsigned full = mainloop_producer_acquire(b, st);
          mainloop_a(&map_a, smem, full, t.m, kb, st.index);
          mainloop_b(&map_b, smem, full, t.n, kb, st.index);"""
    return source.replace(warp, elected).replace(issue, alone)


class Elected:
    """A HopperGemm whose compile() builds the elected form; everything else is the variant's."""

    def __init__(self, gemm: Any):
        self.gemm = gemm

    def __getattr__(self, name: str) -> Any:
        return getattr(self.gemm, name)

    def compile(self) -> Any:
        from pycute.compile.nvrtc import compile_cuda
        return compile_cuda(elected_source(self.gemm.source()), arch="sm_90a", options=("-std=c++17",))


def one(index: int) -> list[dict]:
    import torch

    from perf.gpu_gemm import Launch, bench, inputs, reference, rel_err, run_ours
    g = variants()[index]
    forms = {"warp": g, "elected": Elected(g)}
    launches = {name: Launch(form) for name, form in forms.items()}
    scale, tol = (0.5, 2e-2) if g.dtype == "e4m3" else (1.0, 1e-2)
    errors = {}
    for name, form in forms.items():
        worst = 0.0
        for M, N, K in SHAPES:
            a, b = inputs(M, N, K, g.dtype)
            d, _ = run_ours(form, launches[name], a, b, scale)
            worst = max(worst, rel_err(d, reference(a, b, scale)))
        errors[name] = worst
    M = N = K = 8192
    a, b = inputs(M, N, K, g.dtype)
    ref = reference(a, b, scale)
    preps = {}
    for name, form in forms.items():
        d, preps[name] = run_ours(form, launches[name], a, b, scale)
        errors[name + "@8192"] = rel_err(d, ref)
    if g.dtype == "e4m3":
        one_, half = torch.tensor(1.0, device="cuda"), torch.tensor(0.5, device="cuda")
        vendor_name, vendor = "scaled_mm", (lambda: torch._scaled_mm(a, b.t(), scale_a=one_, scale_b=half,
                                                                      out_dtype=torch.bfloat16))
    else:
        vendor_name, vendor = "cublas", (lambda: torch.matmul(a, b.t()))
    ok = all(e < tol for e in errors.values())
    times: dict[str, list[float]] = {"warp": [], "elected": [], vendor_name: []}
    for _ in range(ROUNDS if ok else 0):
        for name in forms:
            times[name].append(bench(lambda name=name: launches[name](preps[name])))
        times[vendor_name].append(bench(vendor))
    flops = 2 * M * N * K
    return [{"variant": repr(g), "form": name, "shape": [M, N, K], "ok": ok, "errors": errors, "ms_rounds": ms,
             "tflops_best": flops / min(ms) / 1e9 if ms else None,
             "tflops_median": flops / statistics.median(ms) / 1e9 if ms else None} for name, ms in times.items()]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        for row in one(int(argv[1])):
            print(json.dumps(row), flush=True)
        return 0
    if argv[:1] == ["--dry"]:
        for g in variants():
            for name, form in (("warp", g), ("elected", Elected(g))):
                h = form.compile().histogram()
                print(f"{name:<8} {g!r}: {h.get('UTMALDG.2D', 0) + h.get('UTMALDG.2D.MULTICAST', 0)} TMA loads")
        return 0
    path = out_path("gemm_load_warp", argv[0] if argv else None)
    rows = []
    for i in range(len(variants())):
        child = run_question("gemm_load_warp", ["--one", str(i)], timeout=400)
        got = [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]
        rows += got or [{"variant": i, "error": child.error()}]
    with open(path, "w") as out:
        for r in rows:
            out.write(json.dumps(r) + "\n")
    for r in rows:
        if "error" in r:
            print(f"variant {r['variant']}: {r['error']}")
        elif r["tflops_best"] is not None:
            print(f"{r['variant'][:60]:<60} {r['form']:<9} {r['tflops_best']:7.1f} / {r['tflops_median']:7.1f} TFLOP/s"
                  f" {'ok' if r['ok'] else 'WRONG ' + str(r['errors'])}")
        else:
            print(f"{r['variant'][:60]:<60} {r['form']:<9} not timed: {r['errors']}")
    return 0 if all("error" not in r and r.get("ok") for r in rows) else 1
