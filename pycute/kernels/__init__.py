"""Kernels users call, one folder each (``hopper_gemm/``, ``blockscaled_gemm/``, ``grouped_gemm/``): a frozen
configuration, its plans, its body as real CUDA in a ``.cuh`` and its torch op, all following one protocol
(``protocol.Kernel``: config -> plans -> source -> compile -> launch; docs/kernels.md). Importing this package needs
neither torch nor a GPU: the torch operations (``gemm``, ``scaled_gemm``, ``grouped_mm``, ``blockscaled_mm``) import
torch, and register themselves with ``torch.library``, when first asked for."""
from typing import Any

from .protocol import Kernel, LaunchShape, make_launch_shape
from .source import handwritten_lines, kernel_source, prologue
from .expr import (Col, Residual, Row, clamp, exp, gelu, gelu_tanh, log, maximum, minimum, relu, rsqrt, sigmoid,
                   silu, sqrt, tanh, where)
from .fused import Epilogue, FusedEpilogue, bias_activation, epilogue

__all__ = ["Kernel", "LaunchShape", "make_launch_shape", "handwritten_lines", "kernel_source", "prologue", "gemm",
           "scaled_gemm", "grouped_mm", "blockscaled_mm",
           # fused epilogues: the decorator, the inputs' kinds, the functions an epilogue may apply
           "Epilogue", "FusedEpilogue", "epilogue", "bias_activation", "Row", "Col", "Residual", "relu", "gelu",
           "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "where", "minimum", "maximum",
           "clamp"]

#: The torch operations, by the module that defines (and registers) each.
_OPS = {"gemm": "hopper_gemm.op", "scaled_gemm": "hopper_gemm.scaled", "grouped_mm": "grouped_gemm.op",
        "blockscaled_mm": "blockscaled_gemm.op"}


def __getattr__(name: str) -> Any:
    if name in _OPS:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_OPS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
