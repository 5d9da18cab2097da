"""Run-time indices of a shared tile (``tile[:, :, dynamic("stage")]``) as byte steps every copy variant adds to
its shared addresses: each value must keep the addresses on the variant's alignment and, under a swizzle, move by
whole swizzle periods (so the swizzled pattern repeats unchanged)."""
from __future__ import annotations

import attrs

from ..errors import PlanError
from ..int_tuple import is_int
from .region import index_values
from .smem import SmemTensor

__all__ = ["SmemStage", "smem_stages", "stage_offset"]


@attrs.frozen
class SmemStage:
    """A run-time index of the shared tile: value ``v`` in ``[0, extent)`` moves every shared address by
    ``v * smem_step`` bytes; the generated function takes it as ``unsigned <name>``."""

    name: str
    extent: int
    smem_step: int


def smem_stages(smem: SmemTensor, align: int, who: str) -> tuple[SmemStage, ...]:
    """The tile's run-time indices, each step a multiple of ``align`` bytes and of the swizzle's period."""
    elem = smem.bits // 8
    period = smem.swizzle.size() * elem if smem.swizzle is not None else 1
    need = max(align, period)
    out = []
    for d in smem.dynamic:
        step = d.stride * elem if is_int(d.stride) else None
        if step is None or step % need:
            raise PlanError(f"{who}: run-time index {d.name!r} moves the tile by {step} B; each value must keep the "
                            f"copies {align}-byte aligned{' and the swizzle pattern whole' if period > 1 else ''} "
                            f"(a multiple of {need} B) ({smem!r})")
        out.append(SmemStage(d.name, d.extent, step))
    return tuple(out)


def stage_offset(stages: tuple[SmemStage, ...], values: dict, who: str) -> int:
    """Bytes the run-time indices' values move every shared address (each value in range, every index given)."""
    return sum(v * s.smem_step for s, v in zip(stages, index_values(stages, values, who)))
