"""Attention forward on Hopper from plans, ``O = softmax(scale Q K^T) V`` (docs/attention.md): the configuration
(``config``), the plans every count and address comes from (``plans``), which keys a tile's queries see
(``tiles``), the softmax written against fragment coordinates (``softmax``), the source (``kernel``), the torch
operation (``op``) and the float64 reference (``reference``). ``sm100`` is the same attention for Blackwell (sm_100a:
tcgen05.mma with S, P and O in TMEM), from the same tiles, softmax step and reference.

``from pycute.kernels.attention import attention, attention_varlen`` are the calls (``op``; torch is imported, and
the ops registered as ``torch.ops.pycute.attention`` / ``attention_varlen``, on first use: importing this package
needs neither torch nor a GPU)."""
from typing import Any

from .config import AttentionConfig
from .plans import AttentionPlans, Problem

__all__ = ["AttentionConfig", "AttentionPlans", "Problem", "attention", "attention_varlen"]


def __getattr__(name: str) -> Any:
    if name in ("attention", "attention_varlen"):
        from . import op
        return getattr(op, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
