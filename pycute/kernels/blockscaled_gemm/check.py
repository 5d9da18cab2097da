"""Checking the block-scaled GEMM without a GPU. ``run_whole`` runs the compiled sm_100a kernel whole on the
CPU -- every CTA and thread, its pipelines and barriers checked, the copies and MMAs done by pycute's emulator
(``pycute.interp.run_kernel``) -- and returns D beside the reference. ``trace`` runs one thread through pycute's
single-thread PTX interpreter (loads read 0, waits pass at once): the instructions a role issues, to hold against
the plans' streams."""
from __future__ import annotations

import numpy as np

from ...codegen import read_conventions
from ...compile import compile_cuda
from ...interp import run_kernel, tensor_map
from ...interp.stream import trace_entry
from .config import WARPS, BlockScaledGemm

__all__ = ["run_whole", "run_arrays", "trace", "barrier_names", "PARAMS", "SYMBOLS"]

#: Where the single-thread interpreter puts the kernel's parameters (for the tensor maps, passed by value, their
#: addresses; any distinct values serve) and shared symbols.
PARAMS = {"map_a": 0x7100_0000_0000, "map_b": 0x7200_0000_0000, "sfa": 0x7300_0000_0000,
          "sfb": 0x7400_0000_0000, "map_d": 0x7500_0000_0000}
SYMBOLS = {"bars": 0x100, "acc_bars": 0x180, "tmem_slot": 0x1C0, "raw": 0x400}


def barrier_names(gemm: BlockScaledGemm) -> dict[str, tuple[str, ...]]:
    """The kernel's barrier arrays by the pipelines' names (``mainloop.full[0]``, ``accum.empty[1]``, ...)."""
    return {"bars": gemm.operands.barrier_names(), "acc_bars": gemm.accumulators.barrier_names()}


def run_whole(gemm: BlockScaledGemm, seed: int = 0, source: str | None = None,
              conventions: bool = False, soft: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(D as the whole kernel writes it on the CPU, the reference)``: every CTA and thread of the sm_100a build
    (or of ``source``, e.g. a mutated copy of ``gemm.source()``; ``soft``: the sm_90a build with the header's
    tcgen05 model, its MMAs, TMEM and tcgen05 copies plain CUDA) run by ``pycute.interp.run_kernel``, which raises on
    a deadlock, a race or a misused mbarrier, naming the barrier; ``conventions``: also every generated function's
    calls against its calling convention. The pad columns of D must hold zeros (AssertionError otherwise)."""
    x = gemm.inputs(seed)
    data = gemm.arrays(x)
    run_arrays(gemm, data, source, conventions, soft)
    got, pad = gemm.result(data["d"])
    assert not np.any(pad != 0), f"the pad columns of D hold {np.count_nonzero(pad != 0)} non-zero value(s)"
    return got, gemm.reference(x)


def run_arrays(gemm: BlockScaledGemm, data: dict[str, np.ndarray], source: str | None = None,
               conventions: bool = False, soft: bool = False) -> None:
    """Run the sm_100a build (``soft``: the sm_90a build with the tcgen05 model) whole on the CPU over the kernel's
    global arrays (``gemm.arrays``: A and B bytes, the packed SFs, D filled), writing ``data["d"]`` in place."""
    arch = "sm_90a" if soft else "sm_100a"
    compiled = gemm.compile(arch, soft=soft, lineinfo=conventions) if source is None else \
        compile_cuda(source, arch=arch)
    loads = dict(gemm.operands.loads)
    args = dict(map_a=tensor_map(loads["a"], data["a"]), map_b=tensor_map(loads["b"], data["b"]), sfa=data["sfa"],
                sfb=data["sfb"], map_d=tensor_map(gemm.epilogue.store.tma, data["d"]), tiles_m=gemm.tiles[0],
                tiles_n=gemm.tiles[1], k_blocks=gemm.k_blocks)
    run_kernel(compiled, "blockscaled_gemm", grid=gemm.grid, block=32 * WARPS, args=args, smem=gemm.smem_bytes,
               cluster=gemm.launch_shape.cluster, barriers=barrier_names(gemm),
               conventions=read_conventions(gemm.source()) if conventions else None)


def trace(gemm: BlockScaledGemm, cta: int, thread: int):
    """Thread ``thread`` of CTA ``cta`` (``blockIdx.x``) as pycute's single-thread PTX interpreter runs the sm_100a
    build (``.tma``, ``.bulk``, ``.issued`` tcgen05.cp, ``.mma``, ``.ldst``, ``.trace``): the TMEM address reads
    as 0."""
    g = gemm.cta_group
    specials = {"%ctaid.x": cta, "%nctaid.x": gemm.grid, "%ntid.x": 32 * WARPS, "%cluster_ctarank": cta % g,
                "%cluster_nctarank": g, "%cluster_ctaid.x": cta % g, "%cluster_nctaid.x": g}
    params = {**dict(enumerate(PARAMS.values())), 5: gemm.tiles[0], 6: gemm.tiles[1], 7: gemm.k_blocks}
    return trace_entry(gemm.compile("sm_100a").ptx, params, SYMBOLS, "blockscaled_gemm", tid=thread,
                       specials=specials, max_steps=2_000_000)
