"""The epilogue reference: ``D = activation(alpha * acc + beta * C + bias)`` in float64, then rounded to f32 and
to the output type as a kernel's f32 math and its ``cvt.rn`` round it (PTX #data-movement-and-conversion-
instructions-cvt)."""
from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from ..dtypes import DTypeLike, dtype
from .numbers import quantize

__all__ = ["Activation", "ACTIVATIONS", "activation", "epilogue"]

Activation = Literal["identity", "relu", "gelu", "gelu_tanh", "silu"]
#: The activations the reference applies: GELU exactly (``x * Phi(x)``, erf) and in its tanh approximation.
ACTIVATIONS = ("identity", "relu", "gelu", "gelu_tanh", "silu")
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def activation(x: np.ndarray, name: Activation) -> np.ndarray:
    """``name`` applied to float64 ``x``."""
    x = np.asarray(x, dtype=np.float64)
    if name == "identity":
        return x
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "gelu":
        return x * 0.5 * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2))) if x.size else x
    if name == "gelu_tanh":
        return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)))
    if name == "silu":
        return x / (1.0 + np.exp(-x))
    raise ValueError(f"activation: {name!r} is not one of {', '.join(ACTIVATIONS)}")


def epilogue(acc: Any, alpha: float = 1.0, beta: float = 0.0, c: Any = None, bias: Any = None,
             activation_name: Activation = "identity", out: DTypeLike = "f32") -> np.ndarray:
    """The values a kernel's epilogue writes (float64 holding ``out`` values): ``acc`` (M x N, f32 or exact),
    ``alpha`` and ``beta`` scalars, ``c`` (M x N, needed when ``beta`` is not 0), ``bias`` broadcast over ``acc``
    (N: one per column, or M x 1: one per row), then ``activation_name``; computed in float64, rounded to f32, then
    to ``out`` (``to_codes`` gives the bits)."""
    a = np.asarray(acc, dtype=np.float64)
    t = float(alpha) * a
    if beta:
        if c is None:
            raise ValueError(f"epilogue: beta = {beta} reads C; pass c (M x N)")
        t = t + float(beta) * np.asarray(c, dtype=np.float64)
    if bias is not None:
        b = np.asarray(bias, dtype=np.float64)
        try:
            fits = np.broadcast_shapes(b.shape, a.shape) == a.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"epilogue: bias {b.shape} does not broadcast over the accumulator {a.shape} (N for a "
                             f"column bias, M x 1 for a row bias)")
        t = t + b
    return quantize(quantize(activation(t, activation_name), "f32"), dtype(out).name)
