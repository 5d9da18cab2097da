"""Attention forward on Blackwell (sm_100a) from plans, ``O = softmax(scale Q K^T) V`` (docs/attention.md,
"Blackwell (sm_100a)"): the configuration (``config``), the plans (``plans``: TMA rings, tcgen05.mma with S, P and O
in TMEM, tcgen05.ld / st fragments, the O store), the softmax warps' functions (``softmax``), the source
(``kernel``) and the whole-kernel CPU run of its soft sm_90a build (``cpu``). It shares the Hopper kernel's key-block
arithmetic (``tiles``), online-softmax step (``softmax``), arrays and tiles (``plans``) and reference. No Blackwell
GPU has run it."""
from .config import Sm100Config
from .plans import Sm100Plans

__all__ = ["Sm100Config", "Sm100Plans"]
