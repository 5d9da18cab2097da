"""The rules a TMA copy is held to before anything is encoded: what ``cuTensorMapEncodeTiled`` refuses (CUDA driver
API; docs/tma.md records which were measured on the H200), what PTX leaves undefined, and the options' own rules."""
from __future__ import annotations

from typing import Any

from ...arch.sm90.tma import (DATA_TYPES, DIM_LIMIT, FTZ_DATA_TYPES, GLOBAL_ALIGN, INNER_BOX_ALIGN, MAX_BOX,
                              MAX_BOX_BYTES, MAX_MULTICAST, MAX_RANK, NAN_FILL_TYPES, OOB_FILL_NAN, OOB_FILL_NONE,
                              REDUCE_TYPES, SMEM_ALIGN, STORE_UNIT, STRIDE_ALIGN, STRIDE_LIMIT, ReduceOp, TmaSwizzle)
from ...errors import PlanError
from ...int_tuple import as_int, is_int
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from .multicast import Multicast, multicast_spec
from .origin import TmaOrigin, TmaPrecondition
from .params import DTYPE_BYTES, TensorMapParams

__all__ = ["check_array", "window_notes", "size1_stride", "check_map", "check_smem", "check_multicast",
           "check_reduce", "check_fill", "store_row_limits", "check_cta_group", "capability", "data_type"]


def check_array(modes: list, gmem: GlobalTensor, elem: int, where: str) -> int:
    """The contiguous mode's index, after the encoder's rules on extents, strides and the base alignment."""
    unit = [k for k, (n, d) in enumerate(modes) if d == 1 and n > 1] or [k for k, (n, d) in enumerate(modes) if d == 1]
    if not unit:
        raise PlanError(f"make_tma_copy: no array mode has stride 1; a tensor map's dimension 0 is contiguous{where}")
    if gmem.base_align % GLOBAL_ALIGN:
        raise PlanError(f"make_tma_copy: the array's base is aligned to {gmem.base_align} B; a tensor map needs "
                        f"{GLOBAL_ALIGN}{where}")
    for k, (n, d) in enumerate(modes):
        if not 1 <= n <= DIM_LIMIT:
            raise PlanError(f"make_tma_copy: array mode {k} has extent {n}, outside [1, 2^32]{where}")
        if k != unit[0] and n > 1 and ((d * elem) % STRIDE_ALIGN or not 0 <= d * elem < STRIDE_LIMIT):
            raise PlanError(f"make_tma_copy: array mode {k} has a stride of {d * elem} B; a tensor map stride is a "
                            f"multiple of {STRIDE_ALIGN} B below 2^40, 0 for a broadcast (cp.async takes such arrays)"
                            f"{where}")
    return unit[0]


def window_notes(modes: list[tuple[Any, Any]], elem: int) -> list[str]:
    """What a view with two array modes of one stride (a window start and an offset over one dimension, or any
    overlapping view the driver encodes) means for the plan: TMA bounds each coordinate by its own dimension's
    extent, so an element is in bounds where every coordinate is, whatever bytes lie beyond; a box whose start
    lies past one mode's extent loads zeros although the addresses it names hold elements (the H200's
    ``window-view`` case, docs/tma.md). The view is planned as given; the note says so."""
    out = []
    flat = [(k, int(n), int(d)) for k, (n, d) in enumerate(modes) if is_int(n)]      # hierarchical modes: their own
    for a, (i, n_i, d_i) in enumerate(flat):
        for j, n_j, d_j in flat[a + 1:]:
            if n_i > 1 and n_j > 1 and d_i == d_j != 0:
                out.append(f"array modes {i} and {j} both step {d_i * elem} B (an overlapping view): TMA bounds each "
                           f"coordinate by its own mode's extent ({n_i} and {n_j}), so a box past either extent "
                           f"loads zeros (a store drops them) although the addresses hold elements; to place a box "
                           f"by the rows that exist, give the array itself and element coordinates "
                           f"(origin=(pc.dynamic('row'), ...))")
    return out


def size1_stride(before: list, elem: int) -> int:
    """A stride the driver takes for a dimension of extent 1: its only coordinate in bounds is 0, so any legal
    stride reads the same bytes, but the array's own stride of an extent-1 mode (any value: it never moves) may
    break the encoder's rule (a multiple of 16 B below 2^40): the bytes the earlier dimensions span, rounded up."""
    span = max([before[0][0] * elem] + [g * st for g, st, *_ in before[1:]])
    stride = -(-span // STRIDE_ALIGN) * STRIDE_ALIGN
    return stride if stride < STRIDE_LIMIT else STRIDE_ALIGN


def check_map(params: TensorMapParams, where: str) -> None:
    """Every rule ``cuTensorMapEncodeTiled`` holds a tiled map to (CUDA driver API; docs/tma.md), on the final
    parameters: what the driver would refuse is refused here first, naming the rule."""
    elem = DTYPE_BYTES[params.dtype]
    if not 1 <= params.rank <= MAX_RANK:
        raise PlanError(f"make_tma_copy: the tensor map has {params.rank} dimensions; the driver takes 1 to "
                        f"{MAX_RANK}{where}")
    for k, g in enumerate(params.global_dims):
        if not 1 <= g <= DIM_LIMIT:
            raise PlanError(f"make_tma_copy: tensor-map dimension {k} has extent {g}, outside [1, 2^32]{where}")
    for k, st in enumerate(params.global_strides, 1):
        if st % STRIDE_ALIGN or not 0 <= st < STRIDE_LIMIT:
            raise PlanError(f"make_tma_copy: tensor-map dimension {k} has a stride of {st} B; the driver takes a "
                            f"multiple of {STRIDE_ALIGN} B below 2^40{where}")
    for k, b in enumerate(params.box):
        if not 1 <= b <= MAX_BOX:
            raise PlanError(f"make_tma_copy: box dimension {k} is {b}; the driver takes 1 to {MAX_BOX}{where}")
    if params.box_bytes > MAX_BOX_BYTES:
        raise PlanError(f"make_tma_copy: the box {params.box} of {params.dtype} is {params.box_bytes} B; a box lands in "
                        f"one CTA's shared memory, at most {MAX_BOX_BYTES} B ({MAX_BOX_BYTES // 1024} KiB), and the "
                        f"driver refuses larger ones (256 KiB refused on the H200, docs/tma.md){where}")
    if (params.box[0] * elem) % INNER_BOX_ALIGN:
        raise PlanError(f"make_tma_copy: the box's rows are {params.box[0] * elem} B; the driver takes a multiple of "
                        f"{INNER_BOX_ALIGN} B{where}")
    if params.swizzle.byte_swizzle is not None and params.box[0] * elem > params.swizzle.span:
        raise PlanError(f"make_tma_copy: the box's rows are {params.box[0] * elem} B under the {params.swizzle.name} "
                        f"swizzle; the driver takes at most {params.swizzle.span} B{where}")


def store_row_limits(params: TensorMapParams, insts: tuple, tile: tuple, origins: tuple[TmaOrigin, ...], elem: int,
                     tiles: tuple[int, ...], where: str) -> list[TmaPrecondition]:
    """A store into rows that end inside a 16-byte unit: the H200 wrote every 16-byte unit a store touched whole, so
    a box reaching into a row's last, partial unit overwrote the bytes past the row up to the unit's end
    (docs/tma.md); a box ending before that unit writes only its own bytes. An element origin along the rows gets
    the bound that keeps the boxes before the unit (checked, or a precondition); a tile-index store covers every
    tile of the array (``tiles``: their count per array mode), the last of which along the rows reaches the unit,
    so it is refused, pointing to element coordinates."""
    row = params.global_dims[0] * elem
    if row % STORE_UNIT == 0:
        return []
    unit = row // STORE_UNIT * STORE_UNIT // elem        # the partial unit's first element along dimension 0
    reach = max(i.coords[0] for i in insts) + params.box[0]
    past = STORE_UNIT - row % STORE_UNIT
    why = (f"the array's rows are {row} B; a TMA store writes every 16-byte unit it touches whole (measured on the "
           f"H200, docs/tma.md), so a box reaching a row's last unit (row bytes {unit * elem}..{unit * elem + 15}: "
           f"{row % STORE_UNIT} B of the row, {past} B past it) overwrites those {past} B; its boxes must end at or "
           f"before element {unit} of a row (a reduction is held to the same rule)")
    on = [o for o in origins if o.dim == 0]
    if on:
        o = on[0]
        if reach > unit or (o.value is not None and reach + o.value // o.step > unit):
            at = "" if o.value is None else f" at element {o.value}"
            raise PlanError(f"make_tma_copy: the store's boxes{at} reach element {reach + (o.value or 0) // o.step} "
                            f"of a row: {why}{where}")
        return [] if o.value is not None else [TmaPrecondition(str(o.name), "at_most", (unit - reach) * o.step, why)]
    last = [(t, tiles[t.mode] - 1) for t in tile if t.dim == 0]
    if any(t.value(n) + reach > unit for t, n in last) or (not last and reach > unit):
        t, n = last[0] if last else (None, 0)
        which = "" if t is None else f" (t{t.mode} = {n}, the array's last along its rows)"
        raise PlanError(f"make_tma_copy: {why}. A tile-index store covers every tile of the array, and the last"
                        f"{which} reaches past element {unit}: store the tiles before it with element coordinates "
                        f"(origin=(..., pc.dynamic('col')): planned up to that element, a checked precondition){where}")
    return []


def check_smem(smem: SmemTensor, mode: TmaSwizzle, box0_bytes: int, row_bytes: int | None, where: str) -> None:
    """The box's rows against TMA's units and the tile's rows (``row_bytes``: the tile's row when it is narrower
    than the swizzle's), and the tile's alignment: every box 128-byte aligned, and a swizzled buffer aligned to the
    pattern's repeat so that the phase the hardware takes from the absolute address is the layout's."""
    if box0_bytes % INNER_BOX_ALIGN:
        raise PlanError(f"make_tma_copy: the box's rows are {box0_bytes} B; TMA moves whole {INNER_BOX_ALIGN}-byte "
                        f"units (boxDim[0] x element bytes a multiple of {INNER_BOX_ALIGN}){where}")
    pitch = mode.row_pitch(box0_bytes)
    if row_bytes is not None and box0_bytes != row_bytes:
        raise PlanError(f"make_tma_copy: the box's rows are {box0_bytes} B and the tile's rows {row_bytes} B at a "
                        f"{pitch}-byte pitch; each box row takes a whole {mode.name} pattern row, so the box row must "
                        f"be the tile's whole row{where}")
    if row_bytes is None and pitch != box0_bytes:
        raise PlanError(f"make_tma_copy: the box's rows are {box0_bytes} B under the {mode.name} swizzle, whose rows "
                        f"are {mode.span} B: TMA puts each box row at a whole pattern row ({pitch} B apart, "
                        f"docs/tma.md), and the tile packs them {box0_bytes} B apart; lay the tile's rows out "
                        f"{pitch} B apart (kmajor_smem_buffer(...)[:, 0:k] is such a tile){where}")
    if smem.base_align % max(SMEM_ALIGN, mode.repeat):
        raise PlanError(f"make_tma_copy: the buffer is aligned to {smem.base_align} B; a {mode.name}-swizzled box "
                        f"needs {max(SMEM_ALIGN, mode.repeat)}-byte alignment of the buffer (the hardware swizzles "
                        f"absolute addresses, the layout offsets from the buffer){where}")
    if (smem.offset * smem.bits // 8) % SMEM_ALIGN:
        raise PlanError(f"make_tma_copy: the tile starts {smem.offset * smem.bits // 8} B into the buffer; TMA boxes "
                        f"start on {SMEM_ALIGN}-byte boundaries{where}")


def check_multicast(multicast: object, direction: str, where: str) -> Multicast:
    """The CTAs that share a load (``n``: CTAs 0..n-1, or a ``Multicast``); only loads multicast."""
    spec = multicast_spec(multicast)
    if direction != "load":
        raise PlanError(f"make_tma_copy: only loads multicast (PTX ISA: .multicast::cluster){where}")
    return spec


def check_reduce(reduce: object, direction: str, dtype: str, where: str) -> ReduceOp:
    if not isinstance(reduce, str):
        raise TypeError(f"make_tma_copy: reduce must be one of {', '.join(REDUCE_TYPES)} or None, got {reduce!r}")
    if reduce not in REDUCE_TYPES:
        raise PlanError(f"make_tma_copy: reduce={reduce!r}: TMA reduces with {', '.join(REDUCE_TYPES)}{where}")
    if direction != "store":
        raise PlanError(f"make_tma_copy: a reduction goes from shared to global memory (dst the array){where}")
    if dtype not in REDUCE_TYPES[reduce]:
        raise PlanError(f"make_tma_copy: .{reduce} reduces {', '.join(REDUCE_TYPES[reduce])} elements, not {dtype} "
                        f"(PTX ISA, cp.reduce.async.bulk.tensor){where}")
    return reduce


def check_fill(fill: object, direction: str, dtype: str, where: str) -> int:
    if fill not in ("zero", "nan"):
        raise PlanError(f"make_tma_copy: oob_fill={fill!r}: out-of-bounds elements load as 'zero' or 'nan'{where}")
    if fill == "nan" and (direction != "load" or dtype not in NAN_FILL_TYPES):
        raise PlanError(f"make_tma_copy: the NaN fill is for loads of {', '.join(NAN_FILL_TYPES)} elements, not a "
                        f"{direction} of {dtype} (the driver refuses it for integers){where}")
    return OOB_FILL_NAN if fill == "nan" else OOB_FILL_NONE


def check_cta_group(cta_group: object, direction: str) -> bool:
    """Whether the copy is a pair load (``cta_group=2``), after its rules."""
    group = as_int(cta_group, "make_tma_copy: cta_group")
    if group not in (1, 2):
        raise PlanError(f"make_tma_copy: cta_group={group}: a TMA load is issued for one CTA (1) or a pair (2)")
    if group == 2 and direction != "load":
        raise PlanError("make_tma_copy: cta_group=2 is the pair form of a plain load or a multicast (PTX: .cta_group "
                        "is a load qualifier)")
    return group == 2


def capability(target: str) -> str:
    digits = "".join(ch for ch in target.split("_")[1] if ch.isdigit())
    return f"{digits[:-1]}.{digits[-1]}"


def data_type(name: str, ftz: object, where: str) -> int:
    """The map's CUtensorMapDataType: the type's own, or with ``ftz`` its flush-to-zero form (f32, tf32 only)."""
    if not isinstance(ftz, bool):
        raise TypeError(f"make_tma_copy: ftz must be a bool, got {ftz!r}")
    if not ftz:
        return DATA_TYPES[name]
    if name not in FTZ_DATA_TYPES:
        raise PlanError(f"make_tma_copy: ftz=True names FLOAT32_FTZ / TFLOAT32_FTZ maps, for f32 and tf32 elements, "
                        f"not {name} (CUDA driver API, CUtensorMapDataType){where}")
    return FTZ_DATA_TYPES[name]
