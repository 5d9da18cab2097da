"""A convolution as the implicit GEMM reads it: activations N x (D x) (H x) W x C (channels contiguous), a filter of
(T x) (R x) S taps, padding, stride and dilation per spatial dimension. Row ``m`` of the GEMM's A matrix is output
pixel ``(n, o_0, o_1, ...)`` (the last spatial dimension fastest), column ``k`` is filter tap ``(f_0, f_1, ...)``
and channel ``c`` (``k = tap * C + c``, channels fastest); ``im2col_reference`` is that matrix in numpy, zeros where a
tap reads the padding."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ...errors import PlanError
from ...int_tuple import as_int

__all__ = ["ConvProblem", "im2col_reference"]


def _per_dim(value: Any) -> tuple[int, ...]:
    if isinstance(value, (tuple, list)):
        return tuple(as_int(v, "ConvProblem") for v in value)
    return (as_int(value, "ConvProblem"),)


@attrs.frozen
class ConvProblem:
    """``batch`` images of ``spatial`` extents (``(W,)``, ``(H, W)`` or ``(D, H, W)``) and ``channels`` channels,
    a filter of ``filter`` taps per spatial dimension; ``padding``, ``stride`` and ``dilation`` per spatial
    dimension (an int: the same for every one)."""

    batch: int
    spatial: tuple[int, ...] = attrs.field(converter=_per_dim)
    channels: int
    filter: tuple[int, ...] = attrs.field(converter=_per_dim)
    padding: tuple[int, ...] = attrs.field(default=0, converter=_per_dim)
    stride: tuple[int, ...] = attrs.field(default=1, converter=_per_dim)
    dilation: tuple[int, ...] = attrs.field(default=1, converter=_per_dim)

    def __attrs_post_init__(self) -> None:
        rank = len(self.spatial)
        if not 1 <= rank <= 3:
            raise PlanError(f"ConvProblem: {rank} spatial dimensions; TMA's im2col reads 1 to 3 (NWC, NHWC, NDHWC)")
        for name in ("filter", "padding", "stride", "dilation"):
            value = getattr(self, name)
            if len(value) == 1 and rank > 1:
                object.__setattr__(self, name, value * rank)
            elif len(getattr(self, name)) != rank:
                raise PlanError(f"ConvProblem: {name} {value} has {len(value)} entries for {rank} spatial dimensions")
        if min(self.batch, self.channels, *self.spatial, *self.filter, *self.stride, *self.dilation) < 1 or \
                min(self.padding) < 0:
            raise PlanError(f"ConvProblem: extents, filter, stride and dilation are positive and padding "
                            f"non-negative: {self}")
        if min(self.output) < 1:
            raise PlanError(f"ConvProblem: the filter {self.filter} (dilation {self.dilation}) does not fit the "
                            f"padded image {tuple(s + 2 * p for s, p in zip(self.spatial, self.padding))}")

    @property
    def output(self) -> tuple[int, ...]:
        """The output's spatial extents: ``(in + 2 pad - dilation (filter - 1) - 1) // stride + 1``."""
        return tuple((n + 2 * p - d * (f - 1) - 1) // s + 1 for n, p, d, f, s in
                     zip(self.spatial, self.padding, self.dilation, self.filter, self.stride))

    @property
    def taps(self) -> int:
        return int(np.prod(self.filter))

    @property
    def m(self) -> int:
        """Rows of the implicit GEMM's A: output pixels."""
        return self.batch * int(np.prod(self.output))

    @property
    def k(self) -> int:
        """Columns of A: taps times channels."""
        return self.taps * self.channels

    def pixel(self, m: int) -> tuple[int, tuple[int, ...]]:
        """Row ``m``'s image and output position (the last spatial dimension fastest)."""
        out, pos = self.output, []
        for extent in reversed(out):
            pos.append(m % extent)
            m //= extent
        return m, tuple(reversed(pos))

    def tap(self, index: int) -> tuple[int, ...]:
        """Tap ``index``'s filter position (the last spatial dimension fastest)."""
        pos = []
        for extent in reversed(self.filter):
            pos.append(index % extent)
            index //= extent
        return tuple(reversed(pos))


def im2col_reference(problem: ConvProblem, x: np.ndarray) -> np.ndarray:
    """The implicit GEMM's A matrix (M x K) of activations ``x`` (shape (N, *spatial, C)), zeros where a tap reads
    the padding: ``A[m, tap * C + c] = x[n, o * stride - pad + f * dilation, c]``."""
    if x.shape != (problem.batch, *problem.spatial, problem.channels):
        raise PlanError(f"im2col_reference: activations of shape {x.shape}, the problem's are "
                        f"{(problem.batch, *problem.spatial, problem.channels)}")
    rank = len(problem.spatial)
    padded = np.pad(x, [(0, 0)] + [(p, p) for p in problem.padding] + [(0, 0)])
    out = np.zeros((problem.m, problem.k), dtype=x.dtype)
    grids = np.meshgrid(*[np.arange(o) for o in problem.output], indexing="ij")
    for t in range(problem.taps):
        f = problem.tap(t)
        rows = [grids[i] * problem.stride[i] + f[i] * problem.dilation[i] for i in range(rank)]   # padded coords
        index: tuple[Any, ...] = (slice(None), *rows, slice(None))
        taken = padded[index]                                            # (N, *output, C)
        out[:, t * problem.channels:(t + 1) * problem.channels] = taken.reshape(problem.m, problem.channels)
    return out
