"""Kernels users call, one folder each (``hopper_gemm/``, ``blockscaled_gemm/``): a frozen configuration, its plans,
its body as real CUDA in a ``.cuh`` and its torch op, all following one protocol (``protocol.Kernel``: config ->
plans -> source -> compile -> launch; docs/kernels.md). Importing this package needs neither torch nor a GPU: the
torch operations (``gemm``, ``scaled_gemm``, ``grouped_mm``, ``blockscaled_mm``) import torch, and register themselves with ``torch.library``, when first asked for."""
from typing import Any

from .protocol import Kernel, LaunchShape, make_launch_shape
from .source import handwritten_lines, kernel_source, prologue

__all__ = ["Kernel", "LaunchShape", "make_launch_shape", "handwritten_lines", "kernel_source", "prologue", "gemm",
           "scaled_gemm", "grouped_mm"]

#: The torch operations, by the module that defines (and registers) each.
_OPS = {"gemm": "hopper_gemm.op", "scaled_gemm": "hopper_gemm.scaled", "grouped_mm": "grouped_gemm.op"}


def __getattr__(name: str) -> Any:
    if name in _OPS:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_OPS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
