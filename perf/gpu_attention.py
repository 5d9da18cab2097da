"""Attention forward on the GPU beside SDPA's backends: FlashAttention-3's protocol (batch x seqlen = 16k tokens, a
hidden size of 2048), the inputs, the float64 reference of sampled query rows, the contenders (pycute's
configurations launched through the torch op's path, ``torch.nn.functional.scaled_dot_product_attention`` with the
cuDNN and the FLASH backends) and CUDA-graph timing. ``tools/attention_speed.py`` and ``python -m perf.report --gpu``
use them. Needs torch and triton (the GPU machine has them); nothing here runs in CI."""
from __future__ import annotations

import math

__all__ = ["TOKENS", "HIDDEN", "inputs", "reference_rows", "errors", "bench", "contenders", "tflops"]

TOKENS, HIDDEN = 16384, 2048


def tflops(batch: int, seqlen: int, heads: int, head_dim: int, causal: bool, ms: float) -> float:
    """FlashAttention-3's count: 4 b s^2 h d floating-point operations, halved for causal."""
    return 4 * batch * seqlen * seqlen * heads * head_dim / (2 if causal else 1) / ms / 1e9


def reference_rows(q, k, v, scale: float, causal: bool, rows):
    """(O, lse) of query ``rows`` of every (batch, head) in float64 on the GPU."""
    import torch
    group = q.shape[2] // k.shape[2]
    qs = q[:, rows].double()                                           # (b, r, h, d)
    kk = k.double().repeat_interleave(group, dim=2)
    vv = v.double().repeat_interleave(group, dim=2)
    s = torch.einsum("brhd,bjhd->bhrj", qs, kk) * scale
    if causal:
        seen = torch.arange(k.shape[1], device=q.device)[None, :] <= rows[:, None] + k.shape[1] - q.shape[1]
        s = s.masked_fill(~seen[None, None], -math.inf)
    m = s.amax(-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    p = torch.exp(s - m)
    total = p.sum(-1, keepdim=True)
    o = torch.einsum("bhrj,bjhd->brhd", torch.where(total > 0, p / total, torch.zeros_like(p)), vv)
    lse = torch.where(total[..., 0] > 0, torch.log(total[..., 0]) + m[..., 0], torch.full_like(m[..., 0], -math.inf))
    return o, lse


def errors(o, lse, want_o, want_lse, v) -> dict:
    import torch
    err = float((o.double() - want_o).abs().max() / v.double().abs().max())
    row = {"err": err, "nan": int(torch.isnan(o).sum())}
    if lse is not None:
        seen = torch.isfinite(want_lse)
        row["lse_err"] = float((lse.double()[seen] - want_lse[seen]).abs().max()) if seen.any() else 0.0
        row["lse_unseen_ok"] = bool((lse[~seen] == -math.inf).all())
    return row


def inputs(batch: int, sq: int, sk: int, heads: int, kv_heads: int, d: int, dtype: str, seed: int):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    t = getattr(torch, {"bf16": "bfloat16", "f16": "float16"}[dtype])
    return tuple(torch.randn((batch, s, h, d), generator=g, device="cuda").to(t)
                 for s, h in ((sq, heads), (sk, kv_heads), (sk, kv_heads)))


def bench(fn) -> float:
    import triton
    try:
        return float(triton.testing.do_bench_cudagraph(fn, rep=40, return_mode="median"))
    except Exception:
        return float(triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"))


def contenders(configs, q, k, v, causal: bool, scale: float) -> dict:
    """name -> (run, outputs) for pycute's configurations and SDPA's backends."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from pycute.kernels.attention.op import launch
    out = {}
    for c in configs:
        o, lse = torch.empty_like(q), torch.empty((q.shape[0], q.shape[2], q.shape[1]), device="cuda")
        out[f"pycute {c.name}"] = ((lambda c=c, o=o, lse=lse: launch(c, q, k, v, o, lse, scale)), o, lse)
    qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))      # SDPA's own (b, h, s, d) layout
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        holder: dict = {}

        def run(backend=backend, holder=holder):
            with sdpa_kernel(backend):
                holder["o"] = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal,
                                                                               scale=scale)
        out[name] = (run, holder, None)
    return out


