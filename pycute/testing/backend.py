"""The arrays the references compute on: numpy float64, or, for PyTorch tensors, torch float64 on the tensors' own
device (a GPU-sized reference stays on the GPU). torch is imported only when a torch tensor is passed."""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np

__all__ = ["is_torch", "Backend", "backend"]


def is_torch(x: object) -> bool:
    """Whether ``x`` is a PyTorch tensor (recognised without importing torch)."""
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


class Backend:
    """float64 array operations over numpy (``device`` None) or torch (``device`` the tensors')."""

    def __init__(self, torch: Any = None, device: Any = None) -> None:
        self.torch, self.device = torch, device

    def f64(self, x: Any) -> Any:
        """``x`` (an array, a tensor, a number or a sequence) as float64 on this backend."""
        if self.torch is None:
            return np.asarray(x.detach().cpu().double().numpy() if is_torch(x) else x, dtype=np.float64)
        t = self.torch
        return x.detach().to(device=self.device, dtype=t.float64) if is_torch(x) else \
            t.as_tensor(np.asarray(x, dtype=np.float64), device=self.device)

    def repeat(self, x: Any, n: int, axis: int) -> Any:
        return np.repeat(x, n, axis=axis) if self.torch is None else x.repeat_interleave(n, dim=axis)

    def amax(self, x: Any, axis: int) -> Any:
        return x.max(axis=axis, keepdims=True) if self.torch is None else x.amax(dim=axis, keepdim=True)

    def sum(self, x: Any, axis: int) -> Any:
        return x.sum(axis=axis, keepdims=True) if self.torch is None else x.sum(dim=axis, keepdim=True)

    def exp(self, x: Any) -> Any:
        return np.exp(x) if self.torch is None else x.exp()

    def log(self, x: Any) -> Any:
        return np.log(x) if self.torch is None else x.log()

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        if self.torch is None:
            return np.where(cond, a, b)
        as_t = (lambda v: v if is_torch(v) else self.torch.tensor(v, dtype=self.torch.float64, device=self.device))
        return self.torch.where(cond, as_t(a), as_t(b))

    def arange(self, n: int) -> Any:
        return np.arange(n) if self.torch is None else self.torch.arange(n, device=self.device)

    def zeros(self, shape: tuple[int, ...]) -> Any:
        return np.zeros(shape) if self.torch is None else \
            self.torch.zeros(shape, dtype=self.torch.float64, device=self.device)

    def full(self, shape: tuple[int, ...], value: float) -> Any:
        return np.full(shape, value) if self.torch is None else \
            self.torch.full(shape, value, dtype=self.torch.float64, device=self.device)

    def numpy(self, x: Any) -> np.ndarray:
        return x if self.torch is None else x.detach().cpu().numpy()


def backend(*xs: object) -> Backend:
    """torch's float64 on the first tensor's device when any of ``xs`` is a torch tensor, else numpy's."""
    tensors = [x for x in xs if is_torch(x)]
    if not tensors:
        return Backend()
    return Backend(importlib.import_module("torch"), getattr(tensors[0], "device"))
