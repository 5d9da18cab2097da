"""Output buffers filled with NaN before a kernel runs, so that an element it never writes cannot pass as a result:
numpy arrays of values (NaN) or of a narrow format's codes (its NaN code; integers every bit set), and PyTorch
tensors (torch imported only when asked)."""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from ..dtypes import DTypeLike, dtype
from .numbers import _NARROW, _table

__all__ = ["poisoned", "poisoned_tensor", "unwritten"]

_VALUES = {"f64": np.float64, "f32": np.float32, "f16": np.float16}
_CODES = {"bf16": (np.uint16, 0x7FFF), "u8": (np.uint8, 0xFF), "i8": (np.int8, -1), "u16": (np.uint16, 0xFFFF),
          "i16": (np.int16, -1), "u32": (np.uint32, 0xFFFFFFFF), "i32": (np.int32, -1)}


def _poison(fmt: DTypeLike) -> tuple[Any, Any]:
    """(numpy dtype, the value every element starts as)."""
    name = dtype(fmt).name
    if name in _VALUES:
        return _VALUES[name], np.nan
    if name in _CODES:
        return _CODES[name]
    if name in _NARROW and _table(name)[3] is not None:
        return np.uint8, _table(name)[3]
    raise ValueError(f"poisoned: {name} has no NaN to fill with (f64, f32, f16, bf16, fp8 formats, or integers)")


def poisoned(shape: int | tuple[int, ...], fmt: DTypeLike = "f32") -> np.ndarray:
    """A numpy array of ``shape`` every element of which is NaN: float values for f64 / f32 / f16, the format's NaN
    code for bf16 (uint16) and the fp8 formats (uint8), every bit set for integers."""
    kind, fill = _poison(fmt)
    return np.full(shape, fill, dtype=kind)


def unwritten(out: np.ndarray, fmt: DTypeLike = "f32") -> int:
    """How many elements of a ``poisoned`` buffer still hold the poison (for float values: any NaN)."""
    kind, fill = _poison(fmt)
    a = np.asarray(out)
    return int(np.isnan(a).sum()) if fill is np.nan else int((a.astype(kind) == kind(fill)).sum())


def poisoned_tensor(shape: int | tuple[int, ...], torch_dtype: Any, device: Any = "cuda") -> Any:
    """A PyTorch tensor of ``shape`` and ``torch_dtype`` on ``device`` filled with NaN (float types, fp8
    included)."""
    torch = importlib.import_module("torch")
    return torch.full(shape if isinstance(shape, tuple) else (shape,), float("nan"), dtype=torch_dtype,
                      device=device)
