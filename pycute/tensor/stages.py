"""Run-time indices of a shared tile (``tile[:, :, dynamic("stage")]``) as byte steps every copy variant adds to
its shared addresses: each value must keep the addresses on the variant's alignment and, under a swizzle, move by
whole swizzle periods (so the swizzled pattern repeats unchanged)."""
from __future__ import annotations

import attrs

from ..errors import PlanError
from ..int_tuple import is_int
from .region import index_values
from .smem import SmemTensor, make_smem_tensor
from .tmem import TmemTensor, make_tmem_tensor
from ..arch.sm100.tmem import CELL_BITS, TCol, alloc_columns_for
from .values import layout_values
from ..int_tuple import as_int
from ..layout import Layout
from ..swizzle import ComposedLayout

__all__ = ["SmemStage", "smem_stages", "stage_offset", "make_stages"]

#: A stage step is a whole number of these bytes: every variant's shared alignment and every swizzle's period.
STAGE_ALIGN = 1024


@attrs.frozen
class SmemStage:
    """A run-time index of the shared tile: value ``v`` in ``[0, extent)`` moves every shared address by
    ``v * smem_step`` bytes; the generated function takes it as ``unsigned <name>``."""

    name: str
    extent: int
    smem_step: int


def smem_stages(smem: SmemTensor, align: int, who: str) -> tuple[SmemStage, ...]:
    """The tile's run-time indices, each step a multiple of ``align`` bytes and of the swizzle's period."""
    period = smem.swizzle.size() * smem.bits // 8 if smem.swizzle is not None else 1
    need = max(align, period)
    out = []
    for d in smem.dynamic:
        bits = d.stride * smem.bits if is_int(d.stride) else None
        step = bits // 8 if bits is not None and bits % 8 == 0 else None
        if step is None or step % need:
            raise PlanError(f"{who}: run-time index {d.name!r} moves the tile by {step} B; each value must keep the "
                            f"copies {align}-byte aligned{' and the swizzle pattern whole' if period > 1 else ''} "
                            f"(a multiple of {need} B) ({smem!r})")
        out.append(SmemStage(d.name, d.extent, step))
    return tuple(out)


def stage_offset(stages: tuple[SmemStage, ...], values: dict, who: str) -> int:
    """Bytes the run-time indices' values move every shared address (each value in range, every index given)."""
    return sum(v * s.smem_step for s, v in zip(stages, index_values(stages, values, who)))


def make_stages(tile: SmemTensor | TmemTensor, stages: int) -> SmemTensor | TmemTensor:
    """``stages`` copies of ``tile`` side by side (a pipeline's ring): its modes and a trailing stage mode. A shared
    tile's stages step by its footprint rounded up to whole KiB; a TMEM tensor's by the 32-bit columns it spans
    (the same lanes, the next columns: place the ring with ``TmemAllocation.add``). Slice it with
    ``[..., dynamic("stage")]``."""
    if not isinstance(tile, (SmemTensor, TmemTensor)):
        raise TypeError(f"make_stages: expected a shared tile or a TMEM tensor, got {type(tile).__name__}")
    stages = as_int(stages, "make_stages: stages")
    if stages < 1 or tile.dynamic or tile.offset:
        raise PlanError(f"make_stages: {stages} stage(s) of {tile!r}; a whole tile (offset 0, no run-time index) "
                        f"and at least one stage")
    if isinstance(tile, TmemTensor):
        span = (int(layout_values(tile.layout, "TCol").max()) + 1) * tile.bits
        step = -(-span // CELL_BITS) * CELL_BITS // tile.bits * TCol
        layout = Layout(tuple(tile.layout.shape) + (stages,), tuple(tile.layout.stride) + (step,))
        width = -(-span // CELL_BITS) * stages
        columns = None if tile.columns is None else max(tile.columns, alloc_columns_for(width))
        return make_tmem_tensor(tile.dtype, layout, replica=tile.replica, columns=columns)
    footprint = (int(layout_values(tile.layout).max()) + 1) * tile.bits // 8
    step = -(-footprint // STAGE_ALIGN) * STAGE_ALIGN * 8 // tile.bits
    layout = Layout(tuple(tile.layout.shape) + (stages,), tuple(tile.layout.stride) + (step,))
    body = layout if tile.swizzle is None else ComposedLayout(tile.swizzle, 0, layout)
    return make_smem_tensor(tile.dtype, body, tile.base_align)
