"""The sm_100a attention kernel run whole on the CPU (``pycute.interp.run_kernel``): every thread of a small grid, the
TMA loads and stores and the pipelines' barriers, with the interpreter's deadlock, race and overwrite checks. Either
the sm_100a build itself (its tcgen05.mma, TMEM, tcgen05.ld / st and commits done by pycute's emulator) or the soft
sm_90a build (pycute's tcgen05 model in plain CUDA, interpreted instruction by instruction: much slower)."""
from __future__ import annotations

import math

import numpy as np

from ....interp import run_kernel, tensor_map
from ..cpu import NAN_BITS
from ..plans import Problem
from .config import Sm100Config
from .kernel import ENTRY, PIPELINES
from .plans import Sm100Plans

__all__ = ["run_on_cpu"]


def barrier_names(plans: Sm100Plans) -> tuple[str, ...]:
    """The barrier array's words by the pipelines' names (``q.full[0]``, ``tmem_s.empty[1]``, ...)."""
    return tuple(n for _, full in PIPELINES for n in getattr(plans, full).barrier_names())


def run_on_cpu(config: Sm100Config, q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, grid: int = 1,
               soft: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(O bits, lse)`` of the sm_100a build (``soft``: the soft sm_90a build) for ``(batch, seqlen, heads, head_dim)`` arrays of ``config.dtype`` bits
    (uint16) on ``grid`` persistent CTAs; O starts as NaN (an element the kernel does not write stays NaN), lse
    ``(batch, heads, seqlen_q)``."""
    batch, sq, heads, d = q.shape
    sk, kv_heads = k.shape[1], k.shape[2]
    if d != config.head_dim or heads % kv_heads:
        raise ValueError(f"attention (sm_100a): head dim {d} for a kernel of {config.head_dim}, {heads} heads on "
                         f"{kv_heads} key / value heads (heads is a multiple of kv_heads)")
    plans = Sm100Plans.of(config, Problem.dense(batch, sq, sk, heads, kv_heads, d))
    if not plans.issues_as(config.plans):
        raise AssertionError("the plans of this problem issue other boxes than the compiled kernel's")
    o = np.full(q.shape, NAN_BITS[config.dtype], dtype=np.uint16)
    lse = np.full((batch, heads, sq), np.nan, dtype=np.float32)
    mq, mk, mv, mo = plans.maps()
    compiled = config.compile("sm_90a", soft=True, ctas=grid) if soft else config.compile("sm_100a")
    run_kernel(compiled, ENTRY, grid=grid, block=config.threads,
               smem=config.smem_bytes,
               args=[tensor_map(mq, np.ascontiguousarray(q)), tensor_map(mk, np.ascontiguousarray(k)),
                     tensor_map(mv, np.ascontiguousarray(v)), tensor_map(mo, o), lse, sq, sk, heads,
                     heads // kv_heads, batch, scale * math.log2(math.e)],
               barriers={"bars": barrier_names(plans)})
    return o, lse
