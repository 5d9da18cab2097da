"""Kernels users call, one folder each (``hopper_gemm/``, ``blockscaled_gemm/``): a frozen configuration, its plans,
its body as real CUDA in a ``.cuh`` and its torch op, all following one protocol (``protocol.Kernel``: config ->
plans -> source -> compile -> launch; docs/kernels.md). Importing this package needs neither torch nor a GPU."""
from .protocol import Kernel, LaunchShape, make_launch_shape
from .source import handwritten_lines, kernel_source, prologue

__all__ = ["Kernel", "LaunchShape", "make_launch_shape", "handwritten_lines", "kernel_source", "prologue"]
