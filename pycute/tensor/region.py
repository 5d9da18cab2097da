"""What every tensor shares, whatever memory holds it: a dtype, a layout, a region of it (Python slices into regions
that keep their offset: ``t[0:32, 8:24]``), and the memory space (``Region.SPACE``) that picks the copy variant.

An index may also be a run-time coordinate, ``t[:, :, dynamic("stage")]``, CuTe's dynamic integer: the mode is
dropped as by an integer index, and the tensor keeps a ``DynamicIndex`` (name, extent, stride) whose value the
generated code takes as an argument. ``t.at(stage=2)`` is the static tensor of one value.
"""
from __future__ import annotations

import re
from typing import Any, ClassVar, Literal, cast

import attrs

from ..dtypes import DType
from ..errors import LayoutError, PlanError
from ..int_tuple import as_int, flatten, is_int
from ..composition import composition
from ..layout import Layout, coalesce, make_layout
from ..views import svg_of

__all__ = ["MemorySpace", "Region", "Dynamic", "DynamicIndex", "dynamic", "index_values", "check_int_strides"]

#: Where a tensor lives: global memory, a CTA's shared memory, tensor memory, or a thread's registers.
MemorySpace = Literal["global", "shared", "tmem", "register"]

_C_NAME = re.compile(r"^[a-z_][A-Za-z0-9_]*$")
_TAKEN_NAMES = frozenset({"smem_buffer", "tmem_base", "desc", "taddr"})   # the generated function's own names


@attrs.frozen
class Dynamic:
    """A run-time index named ``name`` (a C identifier: the generated function's parameter)."""

    name: str


def dynamic(name: str) -> Dynamic:
    """A run-time coordinate to slice a tensor mode with, as CuTe's dynamic integers: ``src[:, :, dynamic("stage")]``
    gives a plan whose device function takes ``unsigned stage``; plain ints stay compile-time constants."""
    if not isinstance(name, str):
        raise TypeError(f"dynamic: the name must be a string, got {name!r}")
    if not _C_NAME.match(name) or name in _TAKEN_NAMES or name.startswith("pycute"):
        raise PlanError(f"dynamic({name!r}): the name becomes a C parameter; use a lower-case C identifier other than "
                        f"{', '.join(sorted(_TAKEN_NAMES))} and not starting with 'pycute'")
    return Dynamic(name)


@attrs.frozen
class DynamicIndex:
    """A dropped mode indexed at run time: value ``v`` in ``[0, extent)`` adds ``v * stride`` to the offset (elements
    for shared memory, a TLane/TCol basis value for TMEM)."""

    name: str
    extent: int
    stride: Any                 # an int (elements) or a TLane/TCol ScaledBasis

    def __repr__(self) -> str:
        return f"{self.name}<{self.extent}>:{self.stride!r}"


def _window(mode: Layout, start: int, extent: int, where: str) -> tuple[Layout, object]:
    """``(sub, off)`` with ``mode(start + j) == off + sub(j)`` for ``j < extent``, or a PlanError.

    A shifted window of a hierarchical mode is linear only if adding ``start`` never carries between the mode's
    (coalesced) digits for any ``j < extent``.
    """
    try:
        sub = composition(mode, Layout(extent, 1))
    except LayoutError as e:
        raise PlanError(f"{where}: window [{start}:{start + extent}] of mode {mode!r} is not a layout ({e})") from None
    if start == 0:
        return sub, 0
    c = coalesce(mode)
    shapes = flatten(c.shape)
    prefix = 1
    rest = start
    for k, n in enumerate(shapes[:-1]):
        digit = rest % n
        rest //= n
        reach = n - 1 if extent - 1 >= prefix * n else (extent - 1) // prefix
        if digit + reach >= n:
            raise PlanError(f"{where}: window [{start}:{start + extent}] of mode {mode!r} is not a shifted copy of "
                            f"its first {extent} elements (it crosses a boundary of the mode's sub-mode {k})")
        prefix *= n
    return sub, mode(start)


def _index(k, mode: int, where: str):
    """An index or slice with integer bounds (numpy's integers become ints; floats and bools are TypeErrors)."""
    if isinstance(k, slice):
        bounds = [None if b is None else as_int(b, f"{where}: a slice bound of mode {mode}") for b in (k.start, k.stop)]
        step = None if k.step is None else as_int(k.step, f"{where}: a slice step of mode {mode}")
        return slice(bounds[0], bounds[1], step)
    return as_int(k, f"{where}: the index of mode {mode}")


def _dynamic_index(k: Dynamic, mode: Layout, i: int, where: str) -> DynamicIndex:
    c = coalesce(mode)
    if not is_int(c.shape):
        raise PlanError(f"{where}: mode {i} {mode!r} is indexed at run time by {k.name!r} but is not one stride; a "
                        f"run-time index needs a mode whose offsets are value x stride")
    return DynamicIndex(k.name, c.shape, c.stride if c.shape > 1 else 0)


def _region(layout: Layout, offset, key, where: str):
    """Slice ``layout`` (rank r) by ``key`` (slices, ints or run-time ``Dynamic`` indices, at most r): returns
    (layout, offset, the new run-time indices)."""
    if not isinstance(key, tuple):
        key = (key,)
    r = layout.rank()
    if len(key) > r:
        raise PlanError(f"{where}: {len(key)} indices for a rank-{r} tensor of shape {layout.shape!r}")
    key = key + (slice(None),) * (r - len(key))
    modes, dynamic_indices = [], []
    for i, k in enumerate(key):
        mode = layout[i] if r > 1 else layout
        n = mode.size()
        if isinstance(k, Dynamic):
            dynamic_indices.append(_dynamic_index(k, mode, i, where))
            continue
        k = _index(k, i, where)
        if is_int(k):
            if not -n <= k < n:
                raise PlanError(f"{where}: index {k} is out of range for mode {i} of extent {n}")
            offset = offset + mode(k % n)
            continue
        if not isinstance(k, slice):
            raise PlanError(f"{where}: index {k!r} of mode {i} is neither an int nor a slice")
        if k.step not in (None, 1):
            raise PlanError(f"{where}: slice {k} of mode {i} has a step; only contiguous windows are supported")
        for bound in (k.start, k.stop):
            if bound is not None and not -n <= bound <= n:
                raise PlanError(f"{where}: slice [{k.start}:{k.stop}] of mode {i} is outside its extent {n} "
                                f"(a window is never clipped)")
        start, stop, _ = k.indices(n)
        if stop <= start:
            raise PlanError(f"{where}: slice {k} of mode {i} (extent {n}) is empty")
        sub, off = _window(mode, start, stop - start, where)
        modes.append(sub)
        offset = offset + off
    if not modes:
        return Layout(1, 0), offset, tuple(dynamic_indices)
    return (modes[0] if len(modes) == 1 else make_layout(*modes)), offset, tuple(dynamic_indices)


def check_int_strides(layout: Layout, what: str) -> None:
    """A PlanError naming ``what`` (``"shared-memory layout"``) unless every stride of ``layout`` is an integer."""
    for d in flatten(layout.stride):
        if not is_int(d):
            raise PlanError(f"{what} {layout!r} has a non-integer stride {d!r}")


def index_values(indices: tuple, values: dict, where: str) -> list[int]:
    """The value of each run-time index (anything with a ``name`` and an ``extent``), in their order; a PlanError,
    prefixed by ``where``, for an unknown name, a missing value or one outside ``[0, extent)``."""
    names = {d.name for d in indices}
    unknown = sorted(set(values) - names)
    if unknown:
        raise PlanError(f"{where}no run-time index named {', '.join(unknown)} (it has "
                        f"{', '.join(sorted(names)) or 'none'})")
    out = []
    for d in indices:
        if d.name not in values:
            raise PlanError(f"{where}the run-time index {d.name!r} needs a value ({d.name}=0..{d.extent - 1})")
        v = as_int(values[d.name], f"{where}the value of {d.name}")
        if not 0 <= v < d.extent:
            raise PlanError(f"{where}{d.name}={v} is outside [0, {d.extent})")
        out.append(v)
    return out


class Region:
    """What the tensor kinds share: a dtype, a region layout with its offset, and slicing into sub-regions."""

    KIND: ClassVar[str] = ""
    SPACE: ClassVar[MemorySpace]
    # The fields both attrs subclasses declare.
    dtype: DType
    layout: Layout
    offset: Any
    dynamic: tuple[DynamicIndex, ...]

    @property
    def space(self) -> MemorySpace:
        """The memory that holds the tensor (``copy_async`` picks the variant by the source's and destination's)."""
        return self.SPACE

    @property
    def shape(self) -> Any:
        return self.layout.shape

    @property
    def bits(self) -> int:
        return self.dtype.bits

    def _repr_svg_(self) -> str | None:
        """The tensor as a picture, in Jupyter (``pycute.draw_smem`` / ``draw_layout``)."""
        return svg_of(self)

    def __getitem__(self, key):
        """The sub-region selected by slices (and ints or ``Dynamic`` indices, which drop a mode); its offset is
        kept."""
        layout, offset, indices = _region(self.layout, self.offset, key, self.KIND)
        names = [d.name for d in self.dynamic + indices]
        if len(set(names)) != len(names):
            raise PlanError(f"{self.KIND}: run-time index names {names} repeat; each names one mode")
        return attrs.evolve(cast(Any, self), layout=layout, offset=offset, dynamic=self.dynamic + indices)

    def at(self, **values: int) -> Any:
        """The static tensor at the given values of its run-time indices (every index needs a value in range)."""
        offset = self.offset
        for d, v in zip(self.dynamic, index_values(self.dynamic, values, f"{self.KIND}: ")):
            offset = offset + d.stride * v if v else offset
        return attrs.evolve(cast(Any, self), offset=offset, dynamic=())

    def _dynamic_repr(self) -> str:
        return "".join(f"[{d!r}]" for d in self.dynamic)
