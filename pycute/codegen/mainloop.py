"""CUDA C++ for a tcgen05 GEMM's mainloop (``pycute.pipeline.mainloop``): both pipelines' code, the MMA's and the
scale-factor copies' functions, and the roles' per-tile functions ``<name>_load_tile`` / ``<name>_mma_tile`` with
``<name>_start`` / ``<name>_finish``, each under its calling-convention line. Every column, count and coordinate
is the plan's; the phase bits are the pipelines' states'."""
from __future__ import annotations

from ..pipeline.mainloop import MmaMainloop
from ..pipeline.plan import PipelineFunction
from ..views import provides
from .common import ABI_VERSION, check_function_name

__all__ = ["emit_mma_mainloop"]


def _function(f: PipelineFunction, signature: str, body: list[str], notes: tuple[str, ...] = ()) -> list[str]:
    return ["", f.convention.comment(), f"// {f.does[0].upper()}{f.does[1:]}.", *(f"// {n}" for n in notes),
            f"__device__ __forceinline__ {signature} {{", *body, "}"]


def _sync(plan: MmaMainloop) -> str:
    return "pycute_cluster_sync();" if plan.operands.ctas > 1 else "__syncthreads();"


def _start_finish(plan: MmaMainloop, fn: dict[str, PipelineFunction]) -> list[str]:
    n, g, cols = plan.name, plan.cta_group, plan.tmem_columns
    ops, acc = plan.operands.name, plan.accumulators.name
    start = ["  if (threadIdx.x == 0u) {", f"    {ops}_init(bars);", f"    {acc}_init(acc_bars);", "  }",
             "  if (allocates) {", f"    pycute_tmem_alloc<{g}>(slot, {cols}u);",
             f"    pycute_tmem_relinquish_alloc_permit<{g}>();", "  }",
             "  pycute_tcgen05_fence_before_thread_sync();",
             f"  {_sync(plan)}   // the barriers and the TMEM address, before any role" +
             (" (peers arrive on these barriers)" if plan.operands.ctas > 1 else ""),
             "  pycute_tcgen05_fence_after_thread_sync();", "  unsigned tmem;",
             '  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(tmem) : "r"(slot) : "memory");', "  return tmem;"]
    finish = ["  pycute_tcgen05_fence_before_thread_sync();",
              f"  {_sync(plan)}   // every MMA, read and relay done" + (" in both CTAs of the pair" if g == 2 else ""),
              f"  if (allocates) pycute_tmem_dealloc<{g}>(tmem, {cols}u);"]
    return (_function(fn["start"], f"unsigned {n}_start(unsigned bars, unsigned acc_bars, unsigned slot, "
                      "bool allocates)", start,
                      (f"`bars`, `acc_bars`: the shared addresses of {ops}_barrier_words and {acc}_barrier_words "
                       "8-byte words; `slot`: a shared 32-bit word for the TMEM address; `allocates`: true in every "
                       "lane of one warp.",))
            + _function(fn["finish"], f"void {n}_finish(unsigned tmem, bool allocates)", finish,
                        ("`allocates`: as the warp passed it to the start.",)))


def _load_tile(plan: MmaMainloop, f: PipelineFunction) -> list[str]:
    ops = plan.operands.name
    loads = [n for n, _ in plan.operands.loads]
    params = "".join(f", const void* src_{n}" for n in loads)
    body = []
    if any(plan.splits(n) for n in loads):
        body.append("  const int half = int(pycute_cluster_ctarank() & 1u);   // the CTA's half of the pair's B rows")
    body += ["#pragma unroll 1", "  for (unsigned kb = 0; kb < k_blocks; ++kb, st.advance()) {",
             f"    const unsigned full = {ops}_producer_acquire(bars, st);   // every lane waits, one arms",
             "    if (pycute_elect_one_sync()) {"]
    for load, letters in plan.modes:
        coords = []
        for c in letters:
            coords.append({"m": "tile.m", "k": "int(kb)", "-": "0"}.get(c) or
                          ("tile.n * 2 + half" if plan.splits(load) else "tile.n"))
        body.append(f"      {ops}_{load}(src_{load}, smem, full, {', '.join(coords)}, st.index);")
    body += ["    }", "  }"]
    return _function(f, f"void {plan.name}_load_tile(unsigned bars, {ops}_state& st, unsigned k_blocks, unsigned smem"
                     f"{params}, const pycute_tile& tile)", body,
                     ("`src_<load>`: the load's tensor map (TMA) or array (bulk); `smem`: the 1024-byte aligned "
                      "buffer base; `tile`: the scheduler's tile of this CTA.",))


def _mma_tile(plan: MmaMainloop, f: PipelineFunction) -> list[str]:
    ops, acc, n = plan.operands.name, plan.accumulators.name, plan.name
    body = []
    if plan.cta_group == 2:
        body += ["  if (pycute_cluster_ctarank() & 1u) {   // the odd CTA: its loads land on its own barriers",
                 "#pragma unroll 1",
                 f"    for (unsigned kb = 0; kb < k_blocks; ++kb, st.advance()) {ops}_relay(bars, st);",
                 "    return;", "  }"]
    body += [f"  {acc}_producer_acquire(acc_bars, acc);   // the epilogue has read this accumulator",
             "  pycute_tcgen05_fence_after_thread_sync();",
             f"  const unsigned d = tmem + acc.index * {plan.accumulator_columns}u;",
             "#pragma unroll 1", "  for (unsigned kb = 0; kb < k_blocks; ++kb, st.advance()) {",
             f"    {ops}_consumer_wait(bars, st);", "    pycute_tcgen05_fence_after_thread_sync();"]
    sf = []
    for which, _ in plan.sf_copies:
        column, step = plan.sf_column(which)
        body.append(f"    {n}_copy_{which}(smem, tmem, st.index);")
        sf.append(f"tmem + {column}u + st.index * {step}u")
    args = ", ".join(["smem", "smem", "d", *sf, "kb > 0u ? 1u : 0u", "st.index"])
    body += ["    // tcgen05.cp then tcgen05.mma from one thread execute in issue order (PTX ISA",
             "    // #tcgen05-memory-consistency-model-pipelined-instructions): the copies' lane issues the MMAs",
             f"    if (pycute_elect_one_sync()) {n}_mma({args});", "    __syncwarp();",
             f"    {ops}_consumer_release(bars, st);   // tcgen05.commit: the stage is free once the MMAs read it",
             "  }", f"  {acc}_producer_commit(acc_bars, acc);   // the accumulator is full once the MMAs complete",
             "  acc.advance();"]
    return _function(f, f"void {n}_mma_tile(unsigned bars, unsigned acc_bars, {ops}_state& st, {acc}_state& acc, "
                     f"unsigned k_blocks, unsigned smem, unsigned tmem)", body,
                     ("`tmem`: the allocation's address; the accumulator, the SF regions and the MMAs' columns are "
                      "the plans'.",))


@provides("cuda", MmaMainloop)
def emit_mma_mainloop(plan: MmaMainloop) -> str:
    n = plan.name
    check_function_name(n)
    fn = {f.name[len(n) + 1:]: f for f in plan.functions}
    out = ['#include "pycute/sm100.cuh"', '#include "pycute/scheduler.cuh"', "",
           plan.operands.cuda(), plan.accumulators.cuda(), plan.mma.cuda(f"{n}_mma")]
    out += [cp.cuda(f"{n}_copy_{which}") for which, cp in plan.sf_copies]
    out += [f"// mainloop {n}: generated by pycute (C ABI {ABI_VERSION}); plan.explain():",
            *("//   " + line for line in plan.explain().splitlines() if not line.startswith(f"  {n}_"))]
    out += _start_finish(plan, fn) + _load_tile(plan, fn["load_tile"]) + _mma_tile(plan, fn["mma_tile"])
    return "\n".join(out) + "\n"
