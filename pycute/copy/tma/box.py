"""The box of a TMA copy, as CuTe's ``make_tma_copy`` derives it: the shared tile's layout, inverted and composed
with the tile's identity, says which array coordinate each shared-memory element holds, in shared-memory order
(``L``). TMA writes a box densely, dimension 0 fastest (PTX ISA #tensor-tiled-mode), so the box is the longest prefix
of ``L``'s modes that step one array mode by exactly the elements the earlier modes on it cover (a mode split into an
inner and an outer part becomes two tensor-map dimensions over a reshaped view of the array, as the swizzle atoms of
a K-major tile need), each at most 256 long, its first at most a swizzle's row, at most five. The modes past the box
are left to further instructions."""
from __future__ import annotations

from ...arch.sm90.tma import MAX_BOX, MAX_RANK, TmaSwizzle
from ...basis import ScaledBasis
from ...composition import composition, right_inverse
from ...errors import PlanError
from ...int_tuple import flatten
from ...layout import Layout, coalesce
from ...modes import make_identity_layout
from ...tensor.smem import SmemTensor
from ..protocol import Rejection
from .origin import place_origins
from .rules import check_smem, size1_stride
from .view import NarrowRows

__all__ = ["smem_modes", "place_box"]


def smem_modes(smem: SmemTensor, rank: int, where: str) -> tuple[list, tuple[int, ...]]:
    """``L``'s modes ``[(extent, array mode, step)]`` in shared-memory order, and the tile's extents."""
    shape = smem.layout.shape
    tile = tuple(int(Layout(m).size()) for m in (shape if isinstance(shape, tuple) else (shape,)))
    if len(tile) != rank:
        raise PlanError(f"make_tma_copy: the tile has {len(tile)} modes and the array {rank}; mode i of the tile "
                        f"is a window of mode i of the array{where}")
    layout = smem.layout if isinstance(shape, tuple) else Layout((shape,), (smem.layout.stride,))
    inverse = right_inverse(layout)
    if inverse.size() != layout.size():
        raise PlanError(f"make_tma_copy: the tile's layout {smem.layout!r} does not fill a dense run of shared memory "
                        f"(TMA writes boxes densely){where}")
    L = coalesce(composition(make_identity_layout(tile), inverse))
    shapes, strides = flatten(L.shape), flatten(L.stride)
    out = []
    for n, d in zip(shapes, strides):
        if not isinstance(d, ScaledBasis) or len(d.terms) != 1:
            raise PlanError(f"make_tma_copy: shared memory steps the tile by {d!r}, not along one mode{where}")
        (axis, step), = d.terms
        out.append((int(n), int(axis), int(step)))
    return out, tile


def _split_256(modes: list) -> list:
    """Modes longer than a box dimension split into a 256-divisor inner part and the rest, where one divides."""
    out = []
    for n, axis, step in modes:
        while n > MAX_BOX:
            inner = next((b for b in range(MAX_BOX, 1, -1) if n % b == 0), None)
            if inner is None:
                break
            out.append((inner, axis, step))
            n, step = n // inner, step * inner
        out.append((n, axis, step))
    return out


def _split_span(modes: list, mode: TmaSwizzle, elem: int) -> list:
    """Under a swizzle, a first run longer than the pattern's row split at it: TMA's box row is at most a pattern
    row (``CU_TENSOR_MAP_SWIZZLE_*``: boxDim[0] x element bytes <= the span), and rows of exactly the span, one
    after another, are the dense run a swizzled tile's layout describes (PTX ISA #tensor-swizzling-modes)."""
    if mode.byte_swizzle is None or not modes:
        return modes
    n, axis, step = modes[0]
    row = mode.span // elem
    if n <= row or n % row:
        return modes
    return [(row, axis, step), (n // row, axis, step * row)] + modes[1:]


def _box(modes: list, first_axis: int, arrays: list, whole: frozenset[int] = frozenset()
         ) -> tuple[list, list, list]:
    """``(box dims [(extent, axis, step)], the modes left to instructions, the reasons the box stopped)``; the box
    views no axis of ``whole`` in parts (its origin there is not on a part boundary)."""
    covered = [1] * len(arrays)
    box: list = []
    why: list = []
    for k, (n, axis, step) in enumerate(modes):
        reason = None
        if k == 0 and (axis != first_axis or step != 1):
            reason = f"the tile's first run in shared memory is along mode {axis}, not the contiguous mode {first_axis}"
        elif step != covered[axis]:
            reason = (f"mode {k} steps array mode {axis} by {step} elements; a box dimension continues it at "
                      f"{covered[axis]}")
        elif step > 1 and axis in whole:
            reason = (f"mode {k} would view array mode {axis} in {step}-element parts, and the box's origin on it is "
                      f"not a multiple of {step}")
        elif step > 1 and arrays[axis][0] % step:
            reason = (f"mode {k} would view array mode {axis} ({arrays[axis][0]} elements) in {step}-element steps, "
                      f"which do not divide it (the view would read past the mode)")
        elif n > MAX_BOX:
            reason = f"mode {k} is {n} long (a box dimension is at most {MAX_BOX}, and no divisor splits it)"
        elif len(box) == MAX_RANK:
            reason = f"a box has at most {MAX_RANK} dimensions"
        if reason is not None:
            why.append(Rejection(f"box with mode {k}", reason))
            return box, modes[k:], why
        box.append((n, axis, step))
        covered[axis] *= n
    return box, [], why


def _map_rank(box: list, arrays: int) -> int:
    """Tensor-map dimensions a box needs: its own and one per array mode it does not cover (at least two)."""
    return max(2, len(box) + sum(1 for a in range(arrays) if not any(b[1] == a for b in box)))


def _within_rank(box: list, rest: list, arrays: int, why: list) -> tuple[list, list]:
    """The box with its outermost dimensions moved to further instructions until the map has at most five
    dimensions (several boxes rather than a refusal)."""
    while _map_rank(box, arrays) > MAX_RANK and len(box) > 1:
        why.append(Rejection(f"box with mode {len(box) - 1}", f"the tensor map would need {_map_rank(box, arrays)} "
                             f"dimensions (at most {MAX_RANK}): this part of the tile is issued as further boxes"))
        box, rest = box[:-1], [box[-1]] + rest
    return box, rest


def _dims(box: list, arrays: list, elem: int, where: str) -> list:
    """The tensor map's dimensions ``[(global dim, byte stride, box, axis, step)]``: box dims first, then a
    size-1 dimension per array mode no box dimension covers."""
    dims = []
    for n, axis, step in box:
        extent, stride = arrays[axis]
        parts = [s for _, a, s in box if a == axis]
        last = step == max(parts)
        if not last:
            g = n
        else:
            if len(parts) > 1 and extent % step:
                raise PlanError(f"make_tma_copy: array mode {axis} ({extent} elements) is viewed as dimensions of "
                                f"{step}-element steps; it must be a multiple of {step} or the view reads past "
                                f"the mode{where}")
            g = -(-extent // step)
        dims.append((g, step * stride * elem, n, axis, step))
    for axis, (extent, stride) in enumerate(arrays):
        if not any(a == axis for _, a, _ in box):
            dims.append((extent, stride * elem, 1, axis, 1))
    if len(dims) == 1:              # the driver refuses rank-1 maps (docs/tma.md): a size-1 second dimension
        dims.append((1, 0, 1, -1, 1))
    for k in range(1, len(dims)):
        if dims[k][0] == 1:
            dims[k] = (1, size1_stride(dims[:k], elem)) + dims[k][2:]
    if len(dims) > MAX_RANK:
        raise PlanError(f"make_tma_copy: the tile needs {len(dims)} tensor-map dimensions (its box and every array "
                        f"mode it spans once); a tensor map has at most {MAX_RANK}{where}")
    return dims


def place_box(modes: list, first: int, arrays: list, tile: tuple, smem: SmemTensor, mode: TmaSwizzle, elem: int,
              rows: NarrowRows, origin: tuple | None, unit: int, where: str) -> tuple:
    """The box, the modes left to instructions, the reasons the box stopped, the map's dimensions and the
    origins: a box that views no mode in parts where a static origin falls between them."""
    whole: frozenset[int] = frozenset()
    while True:
        box, rest, why = _box(_split_256(_split_span(rows.split(modes, where), mode, elem)), first, arrays, whole)
        if not box:
            raise PlanError(f"make_tma_copy: no box fits: {why[0].reason}{where}")
        box, rest = _within_rank(box, rest, len(arrays), why)
        check_smem(smem, mode, box[0][0] * elem, None if rows.row is None else rows.row * elem, where)
        dims = _dims(box, arrays, elem, where)
        origins = () if origin is None else place_origins(origin, dims, tile, unit, first)
        unaligned = {o.mode for o in origins if o.value is not None and o.value % o.step and o.mode not in whole}
        if not unaligned:
            return box, rest, why, dims, origins
        whole |= unaligned
