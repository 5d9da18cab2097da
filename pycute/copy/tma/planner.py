"""make_tma_copy: plan the TMA boxes that move one tile between a global array and a shared-memory tile.

The array is read through a view (``view.py``: hierarchical modes, merged contiguous modes), the box chosen from the
tile's shared-memory order as CuTe's ``make_tma_copy`` derives it (``box.py``), the modes past the box repeated as
further instructions, and every rule of ``rules.py`` held; of the views and element widths tried, the plan with
the fewest boxes is kept.
"""
from __future__ import annotations

import itertools
from typing import Any

import attrs

from ...arch.sm80.cache import CachePolicy, cache_policy
from ...arch.sm90.tma import (DATA_TYPES, L2_PROMOTION_128B, SMEM_ALIGN, TMA_SWIZZLES, TX_LIMIT, L2Promotion,
                              OobFill, ReduceOp, TmaDirection, TmaSwizzle, l2_promotion_code, tma_swizzle_of_bytes)
from ...atoms.tma import tma_atom
from ...errors import PlanError
from ...swizzle import Swizzle
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...tensor.tile import layout_modes, mode_extents
from ..protocol import Reject, Rejection, load_or_store
from ...tensor.stages import smem_stages
from .box import place_box, smem_modes
from .widen import WIDE_TYPES, widen
from .origin import Origin, check_static_origin, origin_spec, widen_origin
from .params import DTYPE_BYTES, TensorMapParams, smem_capacity
from .plan import TmaInstruction, TmaPlan
from .multicast import Multicast, check_pair_multicast, split_multicast
from .rules import (capability, check_array, check_cta_group, check_fill, check_map, check_multicast, check_reduce,
                    data_type, store_row_limits, window_notes)
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
    modes, tile = smem_modes(rows.smem, len(arrays), where)
    box, rest, why, dims, origins = place_box(modes, first, arrays, tile, smem, mode, elem, rows, origin, unit, where)
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
        tiles = tuple(-(-n // t) for n, t in zip(mode_extents(gmem.layout), mode_extents(smem.layout)))
        limits += store_row_limits(params, tuple(insts), tuple(tile_coords), origins, elem, tiles, where)
    notes = view.notes + tuple(window_notes(layout_modes(gmem.layout), elem))
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
    (a signed element coordinate per mode, ``int c0, c1, ...``), or per mode an ``int`` (static) or
    ``pc.dynamic(name)`` (run-time ``int name``); a load at any origin reads the array there and fills what lies
    outside; ``plan.preconditions`` lists what run-time coordinates must keep (along the contiguous mode a whole
    16-byte unit; a store's non-negative, its boxes before a row's partial 16-byte unit). ``multicast=n`` splits a
    load over CTAs 0..n-1 of a cluster, ``Multicast(cluster, mask=...)`` over any CTAs of a 1-3-D cluster,
    ``Multicast(cluster, along="y")`` over every line of CTAs along an axis (``.multicast::cluster``); a mask
    naming one CTA is a plain load by it. ``reduce`` makes a store a reduction (``"add"``, ``"min"``, ... for the
    types PTX allows); ``oob_fill="nan"`` loads out-of-bounds float elements as NaN; ``ftz=True`` names the FTZ
    map type (on the H200 it flushes nothing a load writes); tf32 travels through a TFLOAT32 map (rounded to
    nearest even, any NaN loaded as 0x7FFFE000). The fewest boxes: the largest legal box, with the map's element
    widened (4-bit floats travel as bytes) and contiguous modes merged into one dimension (rows packed under a
    swizzle, rows under 16 B) where that gives fewer. ``cta_group=2``: the sm_100a pair form; ``l2_promotion``:
    the map's L2 fill size; ``cache_hint``: every box with that L2 policy (``.L2::cache_hint``). The array may be
    hierarchical, have more than five modes, two modes of one stride, stride-0 or overlapping modes (a store only
    where its tile addresses each element once); a swizzled tile may start at any 128-byte offset and have rows
    narrower than the swizzle's. docs/tma.md has each rule and its evidence; PlanError names the broken one."""
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


