"""The float64 reference of attention forward and the tolerance the kernel is held to.

``O[b, i, h] = sum_j softmax_j(scale * q_i . k_j) v_j`` over the keys query ``i`` sees (all of them, or, causal,
``j <= i + seqlen_k - seqlen_q``: the diagonal aligned to the bottom right, as FlashAttention aligns it), with key
/ value head ``h // (heads / kv_heads)``; a query that sees no key has O = 0 and log-sum-exp -inf. ``lse[b, h, i]
= log sum_j exp(scale * q_i . k_j)``."""
from __future__ import annotations

import numpy as np

__all__ = ["attention_reference", "tolerance", "bf16_bits", "f16_bits", "from_bits"]


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: bool
                        ) -> tuple[np.ndarray, np.ndarray]:
    """``(O, lse)`` in float64 for ``(batch, seqlen, heads, head_dim)`` arrays (any float type): O ``(batch, seqlen_q,
    heads, head_dim)``, lse ``(batch, heads, seqlen_q)``."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    batch, sq, heads, d = q.shape
    sk, kv_heads = k.shape[1], k.shape[2]
    group = heads // kv_heads
    kk, vv = np.repeat(k, group, axis=2), np.repeat(v, group, axis=2)
    s = np.einsum("bihd,bjhd->bhij", q, kk) * scale
    if causal:
        seen = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + sk - sq
        s = np.where(seen[None, None], s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    total = p.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        o = np.einsum("bhij,bjhd->bihd", np.where(total > 0, p / total, 0.0), vv)
        lse = np.where(total[..., 0] > 0, np.log(total[..., 0]) + m[..., 0], -np.inf)
    return o, lse


def tolerance(dtype: str) -> float:
    """The largest |O - reference| allowed, relative to max |V|: O is rounded to ``dtype`` once, P to ``dtype``
    before P V (2^-8 for bf16, 2^-11 for f16 relative to each product) and exp2 is approximate (2 ulp of f32):
    a few units of ``dtype``'s rounding."""
    return {"bf16": 2.0 ** -6, "f16": 2.0 ** -9}[dtype]


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to bf16 (to nearest even), as uint16 bits."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    half = np.uint64(0x10000)                              # bf16 is an f32's upper 16 bits
    return ((bits + np.uint64(0x7FFF) + (bits // half) % np.uint64(2)) // half).astype(np.uint16)


def f16_bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float16).view(np.uint16)


def from_bits(bits: np.ndarray, dtype: str) -> np.ndarray:
    """bf16 / f16 bits as float64."""
    if dtype == "f16":
        return bits.view(np.float16).astype(np.float64)
    return (bits.astype(np.uint32) * np.uint32(0x10000)).view(np.float32).astype(np.float64)
