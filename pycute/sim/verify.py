"""Emulate a plan (or the instruction stream its compiled code issues) and compare TMEM, bit for bit, with what the
two tensors' layouts alone say the copy must produce (``copy.reference.expected_tmem``)."""
from __future__ import annotations

import numpy as np

from ..arch.sm100.tmem import COLUMNS, LANES
from ..copy.plan import CopyPlan
from ..errors import EmulationError
from ..copy.reference import expected_tmem, fill_pattern, smem_bytes_needed
from .emulator import Sm100Emulator

__all__ = ["verify_plan"]


def verify_plan(plan: CopyPlan, seed: int = 0, smem_base: int = 0, stream=None, **values) -> None:
    """Emulate ``plan`` (or an explicit instruction ``stream``) and compare every CTA's TMEM with
    ``expected_tmem``; raises EmulationError with the first differing cells. A plan with run-time coordinates is
    verified at the given values (``verify_plan(plan, stage=2)``)."""
    if not isinstance(plan, CopyPlan):
        raise TypeError(f"verify_plan: expected a CopyPlan (make_tiled_copy), got {type(plan).__name__}")
    plan = plan.at(**values)
    src, dst = plan.src, plan.dst
    ctas = plan.cta_group
    nbytes = smem_bytes_needed(src)
    marker = 0xA5A5A5A5
    emu = Sm100Emulator(smem_bytes=nbytes, smem_base=smem_base, ctas=ctas, fill_tmem=marker)
    images = []
    for c in range(ctas):
        img = fill_pattern(nbytes, seed * 2 + c)
        emu.write_smem(smem_base, img, cta=c)
        images.append(img)
    base_col = emu.alloc(dst.columns, cta_group=ctas)
    emu.run(plan.stream(smem_base, base_col) if stream is None else stream(smem_base, base_col))
    for c in range(ctas):
        want = expected_tmem(src, dst, images[c], np.full((LANES, COLUMNS), marker, dtype=np.uint32), base_col)
        got = emu.tmem_image(c)
        if not np.array_equal(got, want):
            diff = np.argwhere(got != want)[:5]
            cells = ", ".join(f"(lane {a}, col {b}): got {got[a, b]:#010x} want {want[a, b]:#010x}" for a, b in diff)
            raise EmulationError(f"CTA {c}: {int((got != want).sum())} TMEM cells differ from what the layouts "
                                 f"say the copy must produce: {cells}")
