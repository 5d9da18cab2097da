"""The attention reference in float64: ``O = softmax(scale Q K^T) V`` and the log-sum-exp of each query's row,
with causal masks, variable-length sequences and grouped-query heads, as FlashAttention lays them out.

Shapes: ``q`` (batch, seqlen_q, heads_q, d), ``k`` and ``v`` (batch, seqlen_k, heads_kv, d / d_v); or, with
``cu_seqlens_q`` / ``cu_seqlens_k`` (batch + 1 offsets), packed ``(total, heads, d)``. ``heads_q`` is a multiple of
``heads_kv``: query head h reads key / value head ``h // (heads_q / heads_kv)`` (GQA; MQA with one). The causal
mask is aligned to the bottom right, as FlashAttention 2.1 and later align it: query i sees key j when
``j <= i + seqlen_k - seqlen_q``. A query that sees no key gets an output of 0 and a log-sum-exp of -inf."""
from __future__ import annotations

from typing import Any

import attrs

from .backend import Backend, backend

__all__ = ["Attention", "attention"]


@attrs.frozen
class Attention:
    """``out``: like ``q`` with ``v``'s last dimension; ``lse``: the natural log of each softmax row's sum of
    ``exp(scale s)``, (batch, heads_q, seqlen_q), or (heads_q, total_q) for packed sequences (FlashAttention's)."""

    out: Any
    lse: Any


def _one(xp: Backend, q: Any, k: Any, v: Any, scale: float, causal: bool) -> tuple[Any, Any]:
    """One sequence: q (sq, hq, d), k (sk, hk, d), v (sk, hk, dv) -> out (sq, hq, dv), lse (hq, sq)."""
    sq, hq, sk, hk = q.shape[0], q.shape[1], k.shape[0], k.shape[1]
    out, lse = xp.zeros((sq, hq, v.shape[2])), xp.zeros((hq, sq))
    visible = None
    if causal:
        visible = xp.arange(sk)[None, :] <= (xp.arange(sq)[:, None] + (sk - sq))
    for h in range(hq):
        s = scale * (q[:, h, :] @ k[:, h // (hq // hk), :].T)
        if visible is not None:
            s = xp.where(visible, s, float("-inf"))
        top = xp.amax(s, 1)
        top = xp.where(top == float("-inf"), 0.0, top)          # a row with no key: exp(-inf) = 0 everywhere
        p = xp.exp(s - top)
        total = xp.sum(p, 1)
        seen = total > 0
        safe = xp.where(seen, total, 1.0)
        out[:, h, :] = xp.where(seen, p / safe, 0.0) @ v[:, h // (hq // hk), :]
        lse[h, :] = xp.where(seen, xp.log(safe) + top, float("-inf"))[:, 0]
    return out, lse


def _check(q: Any, k: Any, v: Any, packed: bool) -> None:
    rank = 3 if packed else 4
    if q.ndim != rank or k.ndim != rank or v.ndim != rank:
        raise ValueError(f"attention: q, k and v are {'(total, heads, d)' if packed else '(batch, seqlen, heads, d)'}"
                         f"; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if tuple(k.shape[:-1]) != tuple(v.shape[:-1]) or q.shape[-1] != k.shape[-1] or q.shape[:-3] != k.shape[:-3]:
        raise ValueError(f"attention: k {tuple(k.shape)} and v {tuple(v.shape)} share every dimension but v's last, "
                         f"and q {tuple(q.shape)} has k's head dimension and batch")
    if q.shape[-2] % k.shape[-2]:
        raise ValueError(f"attention: {q.shape[-2]} query heads do not group over {k.shape[-2]} key / value heads")


def attention(q: Any, k: Any, v: Any, scale: float | None = None, causal: bool = False,
              cu_seqlens_q: Any = None, cu_seqlens_k: Any = None) -> Attention:
    """``softmax(scale Q K^T) V`` per batch entry (or packed sequence) and query head, in float64; ``scale``
    defaults to ``1 / sqrt(d)``. numpy arrays give numpy results, PyTorch tensors torch float64 on their device."""
    xp = backend(q, k, v)
    q, k, v = xp.f64(q), xp.f64(k), xp.f64(v)
    packed = cu_seqlens_q is not None or cu_seqlens_k is not None
    if packed and (cu_seqlens_q is None or cu_seqlens_k is None):
        raise ValueError("attention: packed sequences need both cu_seqlens_q and cu_seqlens_k")
    _check(q, k, v, packed)
    scale = float(q.shape[-1]) ** -0.5 if scale is None else float(scale)
    if not packed:
        parts = [_one(xp, q[b], k[b], v[b], scale, causal) for b in range(q.shape[0])]
        out = xp.zeros((*q.shape[:-1], v.shape[-1]))
        lse = xp.zeros((q.shape[0], q.shape[2], q.shape[1]))
        for b, (o, s) in enumerate(parts):
            out[b], lse[b] = o, s
        return Attention(out, lse)
    bq, bk = (list(map(int, xp.numpy(xp.f64(c)))) for c in (cu_seqlens_q, cu_seqlens_k))
    if len(bq) != len(bk) or bq[0] or bk[0] or bq[-1] != q.shape[0] or bk[-1] != k.shape[0] or \
            any(b < a for a, b in zip(bq, bq[1:])) or any(b < a for a, b in zip(bk, bk[1:])):
        raise ValueError(f"attention: cu_seqlens_q {bq} and cu_seqlens_k {bk} are batch + 1 non-decreasing offsets "
                         f"from 0 to {q.shape[0]} and {k.shape[0]}")
    out, lse = xp.zeros((*q.shape[:-1], v.shape[-1])), xp.zeros((q.shape[1], q.shape[0]))
    for (q0, q1), (k0, k1) in zip(zip(bq, bq[1:]), zip(bk, bk[1:])):
        out[q0:q1], lse[:, q0:q1] = _one(xp, q[q0:q1], k[k0:k1], v[k0:k1], scale, causal)
    return Attention(out, lse)
