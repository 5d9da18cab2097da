"""Attention forward on Hopper from plans, ``O = softmax(scale Q K^T) V`` (docs/attention.md): the configuration
(``config``), the plans every count and address comes from (``plans``), which keys a tile's queries see
(``tiles``), the softmax written against fragment coordinates (``softmax``), the source (``kernel``), the torch
operation (``op``) and the float64 reference (``reference``).

``from pycute.kernels.attention import attention`` is the call (``op.attention``; torch is imported, and the op
registered as ``torch.ops.pycute.attention``, on first use: importing this package needs neither torch nor a
GPU)."""
from typing import Any

from .config import AttentionConfig
from .plans import AttentionPlans, Problem

__all__ = ["AttentionConfig", "AttentionPlans", "Problem", "attention"]


def __getattr__(name: str) -> Any:
    if name == "attention":
        from .op import attention
        return attention
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
