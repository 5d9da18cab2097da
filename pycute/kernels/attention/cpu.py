"""The compiled attention kernel run whole on the CPU (``pycute.interp.run_kernel``): every thread of a small grid,
the TMA loads and stores, the wgmma and the pipelines' barriers, with the interpreter's deadlock, race and overwrite
checks. What the tests and ``tools/attention_speed.py --dry`` run."""
from __future__ import annotations

import math

import numpy as np

from ...interp import run_kernel, tensor_map

from .config import AttentionConfig
from .kernel import ENTRY
from .maps import SLOTS
from .plans import AttentionPlans, Problem

__all__ = ["run_on_cpu", "run_varlen_on_cpu", "NAN_BITS", "DENSE", "MAP_SET_BYTES"]

#: A NaN of each type: O is filled with it before a run, so an element the kernel does not write stays NaN.
NAN_BITS = {"bf16": 0x7FC0, "f16": 0x7E00}
#: A dense batch's packed-sequence arguments (cu_seqlens_q, cu_seqlens_k, q, k, v, o, maps): none.
DENSE = (0,) * 7
#: Packed sequences: the bytes of a CTA's map sets (``maps.SLOTS`` sets of four 128-byte tensor maps).
MAP_SET_BYTES = SLOTS * 4 * 128


def run_on_cpu(config: AttentionConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, grid: int = 2
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(O bits, lse)`` of the kernel for ``(batch, seqlen, heads, head_dim)`` arrays of ``config.dtype`` bits
    (uint16), on ``grid`` persistent CTAs."""
    batch, sq, heads, d = q.shape
    sk, kv_heads = k.shape[1], k.shape[2]
    problem = Problem.dense(batch, sq, sk, heads, kv_heads, d)
    plans = AttentionPlans.of(config, problem)
    if not plans.issues_as(config.plans):
        raise AssertionError(f"the plans of {problem} issue other boxes than the compiled kernel's")
    o = np.full(q.shape, NAN_BITS[config.dtype], dtype=np.uint16)
    lse = np.full((batch, heads, sq), np.nan, dtype=np.float32)
    mq, mk, mv, mo = plans.maps()
    names = plans.q.barrier_names() + plans.k.barrier_names() + plans.v.barrier_names()
    run_kernel(config.compile(), ENTRY, grid=grid, block=config.threads, smem=config.smem_bytes,
               args=[tensor_map(mq, np.ascontiguousarray(q)), tensor_map(mk, np.ascontiguousarray(k)),
                     tensor_map(mv, np.ascontiguousarray(v)), tensor_map(mo, o), lse, *DENSE, sq, sk, heads,
                     heads // kv_heads, batch, 0, scale * math.log2(math.e)],
               barriers={"bars": names})
    return o, lse


def run_varlen_on_cpu(config: AttentionConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray, cu_q: list[int],
                      cu_k: list[int], scale: float, grid: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """``(O bits, lse)`` of the kernel for packed sequences: ``(total, heads, head_dim)`` arrays of ``config.dtype``
    bits, sequence ``b`` rows ``[cu_q[b], cu_q[b + 1])`` of q (``cu_k`` of k and v); lse ``(heads, total_q)``."""
    total_q, heads, d = q.shape
    total_k, kv_heads = k.shape[0], k.shape[1]
    lengths_q, lengths_k = np.diff(cu_q), np.diff(cu_k)
    problem = Problem(1, total_q, total_k, heads, kv_heads, (heads * d, d, total_q * heads * d),
                      (kv_heads * d, d, total_k * kv_heads * d), (kv_heads * d, d, total_k * kv_heads * d),
                      (heads * d, d, total_q * heads * d))
    maps = AttentionPlans.maps_of(config, problem)
    o = np.full(q.shape, NAN_BITS[config.dtype], dtype=np.uint16)
    lse = np.full((heads, total_q), np.nan, dtype=np.float32)
    q, k, v = (np.ascontiguousarray(x) for x in (q, k, v))
    run_kernel(config.compile(), ENTRY, grid=grid, block=config.threads, smem=config.smem_bytes,
               args=[*(tensor_map(m, x) for m, x in zip(maps, (q, k, v, o))), lse, np.asarray(cu_q, np.int32),
                     np.asarray(cu_k, np.int32), q, k, v, o, np.zeros(grid * MAP_SET_BYTES, np.uint8),
                     int(lengths_q.max()), int(lengths_k.max()), heads, heads // kv_heads, len(cu_q) - 1, total_q,
                     scale * math.log2(math.e)])
    return o, lse
