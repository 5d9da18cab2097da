"""Attention forward on Hopper from plans, ``O = softmax(scale Q K^T) V`` (docs/attention.md): the configuration
(``config``), the plans every count and address comes from (``plans``), which keys a tile's queries see
(``tiles``) and the float64 reference the kernel is checked against (``reference``)."""
from .config import AttentionConfig
from .plans import AttentionPlans, Problem

__all__ = ["AttentionConfig", "AttentionPlans", "Problem"]
