"""Checking examples/blockscaled_gemm.py without a GPU: pycute's PTX interpreter runs a thread of the compiled
sm_100a kernel (``trace``: the TMA, bulk, tcgen05.cp, MMA and tcgen05.ld instructions it issues), and pycute's
emulator runs the producers' and the MMA thread's traced instructions, k-block by k-block, on a problem's inputs
(``emulate``): one cluster's tile of D, to hold against the reference. ``run_whole`` runs the whole kernel on the
CPU instead -- every CTA and thread, its pipelines and barriers checked (``pycute.sim.run_kernel``)."""
from __future__ import annotations

import numpy as np

import pycute as pc
from examples.blockscaled_gemm import TILE_M, TILE_N, WARPS, BlockScaledGemm
from pycute.atoms.mma import MmaIssue
from pycute.atoms.tcgen05_cp import Tcgen05CpIssue
from pycute.sim.emulator import Sm100Emulator
from pycute.sim import run_kernel, tensor_map as run_kernel_map
from pycute.sim.ptx import trace_entry

__all__ = ["trace", "emulate", "run_whole", "PARAMS", "SYMBOLS"]

#: Where the PTX interpreter puts the kernel's pointer parameters and shared symbols (any distinct values serve).
PARAMS = {"map_a": 0x7100_0000_0000, "map_b": 0x7200_0000_0000, "sfa": 0x7300_0000_0000, "sfb": 0x7400_0000_0000,
          "d": 0x7500_0000_0000}
SYMBOLS = {"full": 0x100, "empty": 0x140, "done": 0x180, "tmem_slot": 0x1C0, "raw": 0x400}


def trace(gemm: BlockScaledGemm, cluster: tuple[int, int], rank: int, thread: int):
    """Thread ``thread`` of CTA ``rank`` of cluster ``cluster`` (its x and y) as pycute's PTX interpreter runs
    the sm_100a build (``.tma``, ``.bulk``, ``.issued`` tcgen05.cp, ``.mma``, ``.ldst``, ``.trace``)."""
    g = gemm.cta_group
    specials = {"%ctaid.x": cluster[0] * g + rank, "%ctaid.y": cluster[1], "%nctaid.x": gemm.grid[0],
                "%nctaid.y": gemm.grid[1], "%ntid.x": 32 * WARPS, "%cluster_ctarank": rank,
                "%cluster_nctarank": g, "%cluster_ctaid.x": rank, "%cluster_nctaid.x": g}
    params = {**dict(enumerate(PARAMS.values())), 5: gemm.m, 6: gemm.n, 7: gemm.k_blocks}
    return trace_entry(gemm.compile("sm_100a").ptx, params, SYMBOLS, "blockscaled_gemm", tid=thread,
                       specials=specials, max_steps=1_000_000)


def emulate(gemm: BlockScaledGemm, cluster: tuple[int, int], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(got, want)`` for one cluster's tile of D: pycute's emulator runs, k-block by k-block, the loads each
    CTA's producer thread issues and the copies and MMAs the MMA thread issues, as the PTX interpreter traced
    them from the compiled kernel, on the inputs of ``seed``; ``want`` is the reference's tile."""
    g, x = gemm.cta_group, gemm.inputs(seed)
    data = gemm.arrays(x)
    emu = Sm100Emulator(smem_bytes=SYMBOLS["raw"] + gemm.smem_bytes, ctas=g, fill_tmem=0)
    if emu.alloc(gemm.alloc.columns, cta_group=g) != 0:         # the interpreter reads the TMEM address as 0
        raise pc.EmulationError("the emulator's allocation is not at TMEM address 0")
    producers = [trace(gemm, cluster, r, 0) for r in range(g)]
    issuer = [i for i in trace(gemm, cluster, 0, 32).trace if isinstance(i, (MmaIssue, Tcgen05CpIssue))]
    boxes = len(gemm.load_a.instructions) + len(gemm.load_b.instructions)
    chunks = sum(len(p.instructions) for p in gemm.sf_loads)
    b_at = SYMBOLS["raw"] + gemm.offsets[1]
    per_kb = len(issuer) // gemm.k_blocks
    for kb in range(gemm.k_blocks):
        for r, p in enumerate(producers):
            for issue in p.tma[kb * boxes:(kb + 1) * boxes]:
                plan, src = (gemm.load_a, data["a"]) if issue.smem < b_at else (gemm.load_b, data["b"])
                emu.tma_load(plan.tensor_map, src, issue.coords, issue.smem, cta=r)
            for issue in p.bulk[kb * chunks:(kb + 1) * chunks]:
                name = "sfa" if issue.src < PARAMS["sfb"] else "sfb"
                emu.bulk_load(data[name], issue._replace(src=issue.src - PARAMS[name]), cta=r)
        for issue in issuer[kb * per_kb:(kb + 1) * per_kb]:
            if isinstance(issue, MmaIssue):
                emu.commit()                  # tcgen05.cp -> tcgen05.mma execute in issue order
                emu.mma(issue)
            else:
                emu.cp(issue.ptx, issue.taddr, issue.desc)
    column = gemm.acc.placement.column
    got = np.concatenate([emu.ctas[r].tmem[:TILE_M, column:column + TILE_N] for r in range(g)]).view(np.float32)
    rows = slice(cluster[0] * g * TILE_M, (cluster[0] + 1) * g * TILE_M)
    cols = slice(cluster[1] * TILE_N, (cluster[1] + 1) * TILE_N)
    want = gemm.reference(x)[rows, cols].astype(np.float32)
    return got[:want.shape[0], :want.shape[1]], want


def run_whole(gemm: BlockScaledGemm, seed: int = 0, source: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(D as the whole kernel writes it on the CPU, the reference)``: every CTA and thread of the sm_100a build
    (or of ``source``, e.g. a mutated copy of ``gemm.source()``) run by ``pycute.sim.run_kernel``, which raises on
    a deadlock, a race or a misused mbarrier, naming the barrier."""
    x = gemm.inputs(seed)
    data = gemm.arrays(x)
    compiled = gemm.compile("sm_100a") if source is None else pc.compile.compile_cuda(source, arch="sm_100a")
    d = np.full(gemm.m * gemm.n, np.nan, dtype=np.float32)
    args = dict(map_a=run_kernel_map(gemm.load_a, data["a"]), map_b=run_kernel_map(gemm.load_b, data["b"]),
                sfa=data["sfa"], sfb=data["sfb"], d=d, m=gemm.m, n=gemm.n, k_blocks=gemm.k_blocks)
    run_kernel(compiled, "blockscaled_gemm", grid=gemm.grid, block=32 * WARPS, args=args, smem=gemm.smem_bytes + 1024)
    return d.reshape(gemm.m, gemm.n), gemm.reference(x).astype(np.float32)
