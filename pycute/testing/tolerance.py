"""Comparing a result with its reference, with the tolerance stated: ``Tolerance(rtol, atol, why)`` checks
``|got - want| <= atol + rtol |want|`` element by element and says, when it fails, the tolerance and why it is that,
how many elements are outside, and the worst one; ``Tolerance.of(dtype)`` is one unit in the last place of a format
(the rounding of a result computed exactly, then rounded once); ``assert_exact`` compares bit for bit; ``rel_err``
is the relative Frobenius error the benchmarks gate on. NaN anywhere in ``got`` fails every check."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..dtypes import DTypeLike, dtype
from .backend import backend, is_torch
from .numbers import _WORD_PRECISION, _table

__all__ = ["Tolerance", "assert_close", "assert_exact", "rel_err"]


def _host(x: Any) -> np.ndarray:
    return np.asarray(x.detach().cpu().double().numpy() if is_torch(x) else x, dtype=np.float64)


@attrs.frozen
class Tolerance:
    """Element-wise ``|got - want| <= atol + rtol |want|``, and why the tolerance is that (said when it fails)."""

    rtol: float
    atol: float
    why: str

    def __attrs_post_init__(self) -> None:
        if not (self.rtol >= 0 and self.atol >= 0) or not (self.rtol > 0 or self.atol > 0):
            raise ValueError(f"Tolerance: rtol {self.rtol} and atol {self.atol} are >= 0, one of them > 0 "
                             f"(assert_exact compares bit for bit)")

    @classmethod
    def of(cls, fmt: DTypeLike, ulps: float = 1.0) -> "Tolerance":
        """``ulps`` units in the last place of ``fmt`` relative to each value (atol: ``ulps`` of its smallest
        subnormal): what a result computed exactly and rounded once into ``fmt`` is within."""
        name = dtype(fmt).name
        if name in _WORD_PRECISION:
            precision, tiny = _WORD_PRECISION[name], float(np.ldexp(1.0, np.finfo(np.float32).minexp
                                                                     - _WORD_PRECISION[name] + 1))
        elif name == "f16":
            precision, tiny = 11, float(np.finfo(np.float16).smallest_subnormal)
        else:
            finite = _table(name)[0]
            after_one = finite[np.searchsorted(finite, 1.0) + 1]             # 1 + 2^(1 - precision)
            precision, tiny = 1 - int(np.log2(after_one - 1.0)), float(finite[1])
        return cls(ulps * 2.0 ** (1 - precision), ulps * tiny,
                   f"{ulps:g} ulp of {name} ({precision} significant bit{'s' * (precision > 1)}): a result rounded once "
                   f"into {name}")

    def check(self, got: Any, want: Any) -> None:
        """AssertionError unless every element of ``got`` is within the tolerance of ``want`` (same shape)."""
        g, w = _host(got), _host(want)
        if g.shape != w.shape:
            raise AssertionError(f"shapes differ: got {g.shape}, want {w.shape}")
        error = np.abs(g - w)
        bound = self.atol + self.rtol * np.abs(w)
        bad = ~(error <= bound) & ~(np.isnan(g) & np.isnan(w)) & ~(g == w)
        if bad.any():
            worst = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(error / bound, nan=np.inf), -1.0))),
                                     g.shape)
            raise AssertionError(
                f"{int(bad.sum())} of {g.size} elements outside rtol {self.rtol:.3g}, atol {self.atol:.3g} "
                f"({self.why}); worst at {tuple(int(i) for i in worst)}: got {g[worst].item()!r}, want "
                f"{w[worst].item()!r} (error {error[worst]:.3g}, allowed {bound[worst]:.3g})")


def assert_close(got: Any, want: Any, tolerance: Tolerance) -> None:
    """``tolerance.check(got, want)``."""
    tolerance.check(got, want)


def assert_exact(got: Any, want: Any) -> None:
    """AssertionError unless ``got`` and ``want`` are equal element for element (bit patterns or values; NaN
    equals NaN), naming how many differ and the first."""
    g, w = np.asarray(got.detach().cpu() if is_torch(got) else got), np.asarray(want.detach().cpu() if is_torch(want)
                                                                                else want)
    if g.shape != w.shape:
        raise AssertionError(f"shapes differ: got {g.shape}, want {w.shape}")
    same = (g == w) | ((g != g) & (w != w))
    if not same.all():
        first = tuple(int(i) for i in np.argwhere(~same)[0])
        raise AssertionError(f"{int((~same).sum())} of {g.size} elements differ; the first at {first}: got "
                             f"{g[first].item()!r}, want {w[first].item()!r}")


def rel_err(got: Any, want: Any) -> float:
    """``||got - want|| / ||want||`` (Frobenius) in float64, on the tensors' device for PyTorch tensors; NaN when
    ``got`` holds a NaN (never within a bound)."""
    xp = backend(got, want)
    g, w = xp.f64(got), xp.f64(want)
    if tuple(g.shape) != tuple(w.shape):
        raise ValueError(f"rel_err: got {tuple(g.shape)} and want {tuple(w.shape)} differ in shape")
    norm = (lambda x: float((x * x).sum()) ** 0.5)
    if bool((g != g).any()):
        return float("nan")
    return norm(g - w) / norm(w)
