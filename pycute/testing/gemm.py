"""GEMM references in float64: ``D = A B^T`` with A (M x K) and B (N x K), both K-major as pycute's GEMMs take them
(pass ``b.T`` for a K x N B), plain, with per-tensor or per-row scales, and block-scaled (MX FP8 / FP6 / FP4,
NVFP4) from values or from the kernel's element and scale codes. numpy arrays give numpy float64; PyTorch tensors
give torch float64 on their device."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import DTypeLike, dtype
from .backend import backend
from .numbers import decode

__all__ = ["gemm", "scaled_gemm", "blockscaled_gemm", "blockscaled_gemm_codes"]


def _operands(a: Any, b: Any, where: str) -> tuple[Any, Any, Any]:
    xp = backend(a, b)
    x, y = xp.f64(a), xp.f64(b)
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"{where}: A is M x K and B is N x K (K-major, as the kernels take them); got A "
                         f"{tuple(x.shape)} and B {tuple(y.shape)}")
    return xp, x, y


def gemm(a: Any, b: Any) -> Any:
    """``A B^T`` in float64: every product and sum exact up to float64's rounding (exact for integers and for
    bf16 / fp8 inputs with K below about 2^20 / 2^30)."""
    _, x, y = _operands(a, b, "gemm")
    return x @ y.T


def _scale(xp: Any, s: Any, rows: int, which: str) -> Any:
    v = xp.f64(s)
    if v.ndim == 0 or tuple(v.shape) in ((1,), (rows,)):
        return v.reshape(-1, 1)
    raise ValueError(f"scaled_gemm: {which} is one scale (per tensor) or {rows} (per row); got shape {tuple(v.shape)}")


def scaled_gemm(a: Any, b: Any, scale_a: Any, scale_b: Any) -> Any:
    """``(scale_a A) (scale_b B)^T`` in float64: each scale one number (per tensor, as ``torch._scaled_mm``'s) or
    one per row of its operand (M for A, N for B: per-token / per-channel FP8)."""
    xp, x, y = _operands(a, b, "scaled_gemm")
    return (x * _scale(xp, scale_a, x.shape[0], "scale_a")) @ (y * _scale(xp, scale_b, y.shape[0], "scale_b")).T


def blockscaled_gemm(a: Any, b: Any, sfa: Any, sfb: Any, block: int) -> Any:
    """``(A * SFA) (B * SFB)^T`` in float64, ``sfa`` (M x K / block) and ``sfb`` (N x K / block) the scale of each
    ``block`` consecutive elements along K (32 for MX, 16 for NVFP4)."""
    xp, x, y = _operands(a, b, "blockscaled_gemm")
    sa, sb = xp.f64(sfa), xp.f64(sfb)
    k = x.shape[1]
    if k % block or tuple(sa.shape) != (x.shape[0], k // block) or tuple(sb.shape) != (y.shape[0], k // block):
        raise ValueError(f"blockscaled_gemm: K = {k} in blocks of {block} needs SFA {x.shape[0]} x {k // block} and "
                         f"SFB {y.shape[0]} x {k // block} (K a whole number of blocks); got {tuple(sa.shape)} and "
                         f"{tuple(sb.shape)}")
    return (x * xp.repeat(sa, block, 1)) @ (y * xp.repeat(sb, block, 1)).T


def blockscaled_gemm_codes(a: np.ndarray, b: np.ndarray, element: DTypeLike, sfa: np.ndarray, sfb: np.ndarray,
                           scale: DTypeLike, block: int, element_b: DTypeLike | None = None) -> np.ndarray:
    """``blockscaled_gemm`` of the kernel's inputs: element codes of ``element`` (``element_b`` for B when it
    differs: mixed MX formats) and scale codes of ``scale`` (ue8m0 or ue4m3), one code per array entry."""
    return np.asarray(blockscaled_gemm(decode(a, element), decode(b, dtype(element_b or element)),
                                       decode(sfa, scale), decode(sfb, scale), block))
