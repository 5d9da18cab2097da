"""make_tma_copy: plan the TMA boxes that move one tile between a global array and a shared-memory tile.

As CuTe's ``make_tma_copy`` derives it: the shared tile's layout, inverted and composed with the tile's identity,
says which array coordinate each shared-memory element holds, in shared-memory order (``L``). TMA writes a box
densely, dimension 0 fastest (PTX ISA #tensor-tiled-mode), so the box is the longest prefix of ``L``'s modes that
step one array mode by exactly the elements the earlier modes on it cover (a mode split into an inner and an outer
part becomes two tensor-map dimensions over a reshaped view of the array, as the swizzle atoms of a K-major tile
need), each at most 256 long, at most five. The modes past the box repeat it as further instructions.
"""
from __future__ import annotations

import itertools
from typing import Any

import attrs

from ...arch.sm80.cache import CachePolicy, cache_policy
from ...arch.sm90.tma import (DATA_TYPES, INNER_BOX_ALIGN, L2_PROMOTION_128B, MAX_BOX, MAX_RANK, SMEM_ALIGN,
                              TMA_SWIZZLES, TX_LIMIT, L2Promotion, OobFill, ReduceOp, TmaDirection,
                              TmaSwizzle, l2_promotion_code, tma_swizzle_of_bytes)
from ...atoms.tma import tma_atom
from ...basis import ScaledBasis
from ...composition import composition, right_inverse
from ...errors import PlanError
from ...int_tuple import flatten
from ...layout import Layout, coalesce
from ...modes import make_identity_layout
from ...swizzle import Swizzle
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...tensor.tile import layout_modes, mode_extents
from ..protocol import Reject, Rejection, load_or_store
from ...tensor.stages import smem_stages
from .widen import WIDE_TYPES, widen
from .origin import Origin, check_static_origin, origin_spec, place_origins, widen_origin
from .params import DTYPE_BYTES, TensorMapParams, smem_capacity
from .plan import TmaInstruction, TmaPlan
from .multicast import Multicast, check_pair_multicast, split_multicast
from .rules import (capability, check_array, check_cta_group, check_fill, check_map, check_multicast, check_reduce,
                    check_smem, data_type, size1_stride, store_row_limits, window_notes)
from .origin import TmaPrecondition
from .view import ArrayView, NarrowRows, array_view, check_store_target, narrow_rows, tile_coords_of

__all__ = ["make_tma_copy", "Origin"]

def _where(gmem: GlobalTensor, smem: SmemTensor) -> str:
    return f"\n  global: {gmem!r}\n  shared: {smem!r}"


def _array_modes(gmem: GlobalTensor, where: str) -> list[tuple[Any, Any]]:
    """``[(shape, stride)]`` per mode of the whole array (a hierarchical mode keeps its sub-modes)."""
    if gmem.offset != 0 or gmem.dynamic:
        raise PlanError(f"make_tma_copy: give the whole array (offset 0, no run-time index); the tile index picks the "
                        f"tile ({gmem!r})")
    return layout_modes(gmem.layout)


def _swizzle(smem: SmemTensor, elem: int, where: str) -> TmaSwizzle:
    """The TMA mode whose byte swizzle is the tile's element swizzle (B, M and S all compared), else a PlanError
    with the conversion."""
    if smem.swizzle is None:
        return TMA_SWIZZLES[0]
    t = elem.bit_length() - 1
    sw = smem.swizzle
    mode = tma_swizzle_of_bytes(Swizzle(sw.bits, sw.base + t, sw.shift))
    if mode is None:
        wanted = ", ".join(f"{m.name} = Sw<{m.byte_swizzle.bits},{m.byte_swizzle.base - t},"
                           f"{m.byte_swizzle.shift}>" for m in TMA_SWIZZLES[1:] if m.byte_swizzle is not None)
        raise PlanError(f"make_tma_copy: the tile's swizzle {sw!r} on {elem}-byte elements is Sw<{sw.bits},"
                        f"{sw.base + t},{sw.shift}> on bytes, which no TMA mode applies; in these elements TMA "
                        f"swizzles are {wanted}{where}")
    return mode


def _smem_modes(smem: SmemTensor, rank: int, where: str) -> tuple[list, tuple[int, ...]]:
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


def _instructions(rest: list, box_elems: int, dims: list, ptx: str, elem: int, start: int, rows: NarrowRows,
                  where: str) -> list:
    """One box per point of the modes left over: its coordinates (on the dimension of its array mode with the
    largest step dividing its own) and its shared-memory offset (``rows`` maps the tile's squeezed element
    offsets to its own)."""
    stride, steps = box_elems, []
    for n, axis, step in rest:
        j = max((k for k, d in enumerate(dims) if d[3] == axis and step % d[4] == 0), key=lambda k: dims[k][4])
        steps.append((n, j, step // dims[j][4], stride))
        stride *= n
    out = []
    for point in itertools.product(*(range(n) for n, _, _, _ in steps)):
        coords, offset = [0] * len(dims), 0
        for v, (_, j, unit, smem_step) in zip(point, steps):
            coords[j] += v * unit
            offset += v * smem_step
        offset = rows.padded(offset)
        if (offset * elem) % SMEM_ALIGN:
            raise PlanError(f"make_tma_copy: a box would start {offset * elem} B into the tile; TMA boxes start on "
                            f"{SMEM_ALIGN}-byte boundaries{where}")
        out.append(TmaInstruction(ptx, tuple(coords), start + offset * elem))
    return out


def _operands(dst: object, src: object) -> tuple[TmaDirection, GlobalTensor, SmemTensor]:
    """``(direction, array, tile)`` of a copy, after the checks that need neither the layouts nor the options."""
    direction, gmem, smem = load_or_store(dst, src, "make_tma_copy")
    where = _where(gmem, smem)
    if gmem.dtype != smem.dtype:
        raise PlanError(f"make_tma_copy: TMA copies values unchanged: {gmem.dtype.name} and {smem.dtype.name}{where}")
    return direction, gmem, smem


def _place(modes: list, first: int, arrays: list, tile: tuple, smem: SmemTensor, mode: TmaSwizzle, elem: int,
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


def _check_capacity(plan: TmaPlan, where: str) -> None:
    """A load's tile within one mbarrier phase's count, and every plan's boxes within a CTA's shared memory."""
    if plan.direction == "load" and plan.expect_tx > TX_LIMIT:
        raise PlanError(f"make_tma_copy: one tile is {plan.expect_tx} B; an mbarrier phase counts at most {TX_LIMIT} "
                        f"transaction bytes (split the tile){where}")
    if plan.direction != "prefetch":
        capacity, target = smem_capacity(plan.targets)
        if plan.smem_reach > capacity:
            raise PlanError(f"make_tma_copy: the tile's boxes reach {plan.smem_reach} B of shared memory from the "
                            f"buffer base; a CTA has at most {capacity} B ({capacity // 1024} KiB) of dynamic shared "
                            f"memory on {target} (CUDA C++ Programming Guide, compute capability "
                            f"{capability(target)}): split the tile or use fewer stages{where}")


def _plan(direction: TmaDirection, gmem: GlobalTensor, smem: SmemTensor, multicast: Multicast | None,
          reduce: ReduceOp | None, oob_fill: OobFill, pair: bool = False, origin: tuple | None = None,
          unit: int = 1, ftz: bool = False, l2: int = L2_PROMOTION_128B, hint: CachePolicy | None = None) -> TmaPlan:
    """The plan of one element type (the tensors' own, or ``unit`` of them widened to one): over the array's own
    modes, and over a view with every pair of contiguous modes the tile covers the inner one of merged (fewer,
    longer dimensions: a box may then take rows the modes split, a narrow swizzled row among them), whichever has
    fewer boxes (the array's own modes on a tie)."""
    where = _where(gmem, smem)
    if gmem.dtype.name not in DATA_TYPES:
        raise PlanError(f"make_tma_copy: a tensor map has no type for {gmem.dtype.name} (it names "
                        f"{', '.join(sorted(DATA_TYPES))}){where}")
    elem = DTYPE_BYTES[gmem.dtype.name]
    op = None if reduce is None else check_reduce(reduce, direction, gmem.dtype.name, where)
    fill = check_fill(oob_fill, direction, gmem.dtype.name, where)
    map_type = data_type(gmem.dtype.name, ftz, where)
    mode = _swizzle(smem, elem, where)
    stages = smem_stages(smem, SMEM_ALIGN, "make_tma_copy")
    smem = smem.at(**{d.name: 0 for d in smem.dynamic}) if smem.dynamic else smem
    if direction == "store":
        check_store_target(gmem, mode_extents(smem.layout), where)
    modes = _array_modes(gmem, where)
    view = array_view(modes, smem, where)
    if origin is not None and any(owner < 0 for owner in view.owners):
        raise PlanError(f"make_tma_copy: element origins are planned on arrays whose modes are each one tensor-map "
                        f"dimension; this one's are not ({'; '.join(view.notes)}): place its tiles by tile index"
                        f"{where}")
    args = (direction, gmem, smem, multicast, op, fill, map_type, mode, stages, pair, origin, unit, l2, hint)
    best, error = None, None
    try:
        best = _plan_view(view, *args)
    except (PlanError, Reject) as e:
        error = e
    merged_error = None
    if origin is None and (best is None or len(best.instructions) > 1):
        try:
            merged = array_view(modes, smem, where, merge=True)
            if merged.arrays != view.arrays:
                plan = _plan_view(merged, *args)
                if best is None or len(plan.instructions) < len(best.instructions):
                    best = plan
        except (PlanError, Reject) as e:
            merged_error = str(e).split("\n")[0].removeprefix("make_tma_copy: ")
    if best is None:
        assert error is not None
        if merged_error is None or not isinstance(error, PlanError):
            raise error
        head, _, rest = str(error).partition("\n")
        raise PlanError(f"{head}; with the contiguous modes merged into one dimension: {merged_error}\n{rest}")
    return best


def _plan_view(view: ArrayView, direction: TmaDirection, gmem: GlobalTensor, smem: SmemTensor,
               multicast: Multicast | None, op: ReduceOp | None, fill: int, map_type: int, mode: TmaSwizzle,
               stages: tuple, pair: bool, origin: tuple | None, unit: int, l2: int,
               hint: CachePolicy | None) -> TmaPlan:
    """The plan over one view of the array."""
    where = _where(gmem, smem)
    elem = DTYPE_BYTES[gmem.dtype.name]
    arrays = list(view.arrays)
    first = check_array(arrays, gmem, elem, where)
    rows = narrow_rows(view.smem, mode, elem)
    modes, tile = _smem_modes(rows.smem, len(arrays), where)
    box, rest, why, dims, origins = _place(modes, first, arrays, tile, smem, mode, elem, rows, origin, unit, where)
    tile_coords = tile_coords_of(view, dims, where)
    if any(o.value is not None and o.value % o.unit for o in origins):
        raise Reject("a static origin is not a whole widened element")
    check_static_origin(origins, direction, elem, first, where)
    box_elems = 1
    for n, _, _ in box:
        box_elems *= n
    mc = None
    if multicast is not None:
        if pair:
            check_pair_multicast(multicast, where)
        dims, mc = split_multicast(dims, box_elems, multicast, elem, rows.padded, where)
        box_elems //= mc.ctas
    params = TensorMapParams(gmem.dtype.name, map_type, tuple(d[0] for d in dims),
                             tuple(d[1] for d in dims[1:]), tuple(d[2] for d in dims), (1,) * len(dims), mode,
                             l2_promotion=l2, oob_fill=fill)
    check_map(params, where)
    atom = tma_atom(direction, len(dims), mc is not None and not mc.plain, op, pair, hint is not None)
    insts = _instructions(rest, box_elems * (mc.ctas if mc else 1), dims, atom.ptx, elem, smem.offset * elem, rows,
                          where)
    limits = [TmaPrecondition(f"t{m}", "at_most", bound, why) for m, bound, why in view.limits]
    if direction == "store":
        limits += store_row_limits(params, tuple(insts), tuple(tile_coords), origins, elem, where)
    notes = view.notes + tuple(window_notes(arrays, elem))
    views = tuple((view.owners[d[3]] if d[3] >= 0 else -1, d[4]) for d in dims)
    plan = TmaPlan(direction, atom, gmem, smem, params, tuple(tile_coords), tuple(insts), tuple(why), mc, stages,
                   origin=origins, views=views, cache_hint=hint, notes=notes, limits=tuple(dict.fromkeys(limits)))
    _check_capacity(plan, where)
    return plan


#: Map types that change values on the way (TF32 rounding, FTZ): their elements must not be widened.
_CONVERTING = ("tf32",)


def make_tma_copy(dst: GlobalTensor | SmemTensor, src: GlobalTensor | SmemTensor,
                  multicast: int | Multicast | None = None, reduce: ReduceOp | None = None,
                  oob_fill: OobFill = "zero", cta_group: int = 1, *, origin: Origin = "tile",
                  ftz: bool = False, l2_promotion: L2Promotion = "128B",
                  cache_hint: str | CachePolicy | None = None) -> TmaPlan:
    """Plan a TMA load (``src`` a whole global array, ``dst`` the shared tile) or store (the reverse) of one tile:
    mode ``i`` of the tile is a window of mode ``i`` of the array. ``origin`` says where the window starts:
    ``"tile"`` (the generated code takes a tile index per mode: the origin is index x tile extent), ``"element"``
    (it takes a signed element coordinate per mode, ``int c0, c1, ...``), or per mode an ``int`` (static) or
    ``pc.dynamic(name)`` (run-time ``int name``); a load at any signed origin reads the array there and fills
    what lies outside, and ``plan.preconditions`` lists what a run-time origin must keep (along the contiguous
    mode a whole 16-byte unit, as the H200 faults otherwise; a store's non-negative; a store's boxes ending before
    a row's partial 16-byte unit). ``multicast=n`` splits a load over CTAs 0..n-1 of a cluster,
    ``multicast=Multicast(cluster, mask=...)`` over any CTAs of a 1-3-D cluster shape, ``Multicast(cluster,
    along="y")`` over every line of CTAs along an axis, each CTA writing its slice into all of them
    (``.multicast::cluster``); a mask naming one CTA (``multicast=1``, one CTA along the axis) is a plain load by
    that CTA. ``reduce`` makes a store a reduction into the array (``"add"``, ``"min"``, ..., each for the element
    types PTX allows); ``oob_fill="nan"`` loads out-of-bounds float elements as NaN (negative rows and columns on
    the 16-byte unit too: docs/tma.md); ``ftz=True`` names the FTZ map type (on the H200 a load through it
    flushes nothing); tf32 tensors travel through a TFLOAT32 map, which rounds each value to nearest even tf32 and
    loads any NaN as 0x7FFFE000. The fewest boxes (largest legal box; the tensor map's element widened where that
    gives fewer, or where the type has no tensor-map type: 4-bit floats; contiguous modes merged into one
    dimension where that gives fewer, as rows packed under a swizzle or rows under 16 B need), the tensor map's
    parameters and ``expect_tx``; ``cta_group=2`` makes a load the sm_100a pair form (``.cta_group::2``: both
    CTAs' bytes on the even CTA's barrier). ``l2_promotion`` is the map's L2 fill size (``"none"``, ``"64B"``,
    ``"128B"``, ``"256B"``) and ``cache_hint`` (``"evict_first"``, ... or a ``CachePolicy``) issues every box with
    that L2 policy (createpolicy, ``.L2::cache_hint``). The array may be hierarchical (a nested mode whose
    sub-modes coalesce is one dimension, else a sub-mode a dimension), have more than five modes (contiguous ones
    merged), two modes of one stride, stride-0 or overlapping modes (a store only where its tile addresses each
    element once); a swizzled tile may start at any 128-byte offset and have rows narrower than the swizzle's.
    PlanError names the broken rule."""
    direction, gmem, smem = _operands(dst, src)
    pair = check_cta_group(cta_group, direction)
    where = _where(gmem, smem)
    cast = None if multicast is None else check_multicast(multicast, direction, where)
    l2 = l2_promotion_code(l2_promotion, "make_tma_copy")
    hint = cache_policy(cache_hint, "make_tma_copy")
    spec = origin_spec(origin, len(layout_modes(gmem.layout)), smem.dynamic, where)
    best, error, why = None, None, []
    try:
        best = _plan(direction, gmem, smem, cast, reduce, oob_fill, pair, spec, 1, ftz, l2, hint)
    except (PlanError, Reject) as e:
        error = e
    own = gmem.dtype.name in DATA_TYPES
    if (best is None or len(best.instructions) > 1) and reduce is None and oob_fill == "zero" and not ftz \
            and gmem.dtype.name not in _CONVERTING:
        for nbytes in WIDE_TYPES:
            try:
                wide_g, wide_s = widen(gmem, smem, nbytes)
                n = wide_g.dtype.bits // gmem.dtype.bits
                widen_origin(spec, gmem, n, own)
                plan = _plan(direction, wide_g, wide_s, cast, reduce, oob_fill, pair, spec, n, False, l2, hint)
            except (Reject, PlanError) as e:
                reason = str(e).split("\n")[0].removeprefix("make_tma_copy: ")
                why.append(Rejection(f"as {WIDE_TYPES[nbytes]}", reason))
                continue
            if best is None or len(plan.instructions) < len(best.instructions):
                best = attrs.evolve(plan, element=gmem.dtype.name)
    if best is None:
        if own:
            raise PlanError(str(error))
        raise PlanError(f"make_tma_copy: a tensor map has no type for {gmem.dtype.name} and no wider element fits:"
                        + "".join(f"\n  {r}" for r in why) + _where(gmem, smem))
    return best


