"""``SmemCopyPlan.explain()``: the chosen form and why, every other form with its cost or the rule it broke, the
conversion, the bank conflicts as numbers (and, when the plan cannot reach the ideal, which rows collide), and the
address arithmetic the generated code does."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...arch.sm90.shared import BANK_BYTES, BANKS
from ...atoms.smem_ldst import SmemMatrixAtom
from ...errors import PlanError

# The plan is typed Any here: plan.py imports this module (explain() lives beside the record it reads).
SmemCopyPlan = Any

__all__ = ["explain_plan", "conflict_note"]


def _counts(plan: SmemCopyPlan) -> str:
    counts: dict[str, int] = {}
    for m in plan.moves:
        counts[m.atom.ptx] = counts.get(m.atom.ptx, 0) + 1
    return " + ".join(f"{n} x {p}" for p, n in counts.items())


def conflict_note(plan: SmemCopyPlan) -> str | None:
    """Why the plan takes more wavefronts than its bytes need: the first instruction over its ideal, the bank and
    the distinct words (rows) that collide there; None when it is conflict-free."""
    for k, m in enumerate(plan.moves):
        addresses = m.addresses[:32]
        if isinstance(m.atom, SmemMatrixAtom):
            rows = addresses[np.argsort(m.atom.row_of_lane())][:8]
            touched = rows[:, None] + np.arange(16)[None, :]
            group = "its first 8x8 matrix's rows"
        else:
            lanes = 32 if m.atom.width <= BANK_BYTES else 32 * BANK_BYTES // m.atom.width
            touched = addresses[:lanes, None] + np.arange(m.atom.width)[None, :]
            group = f"lanes 0-{lanes - 1}"
        words = np.unique(touched.ravel() // BANK_BYTES)
        count = np.bincount(words % BANKS, minlength=BANKS)
        if count.max() > 1:
            bank = int(count.argmax())
            hit = sorted(int(w) * BANK_BYTES for w in words if w % BANKS == bank)
            avoid = (f"the pinned form {plan.pinned!r} does not avoid (other forms were not weighed)" if plan.pinned
                     else "no form of these layouts avoids")
            return (f"instruction {k} ({m.atom.ptx}): {group} put {int(count.max())} distinct words in bank {bank} "
                    f"(bytes {', '.join(map(str, hit[:8]))}{'...' if len(hit) > 8 else ''}): a {int(count.max())}-way "
                    f"conflict that {avoid}; a swizzled tile (e.g. 128B) spreads them")
    return None


def _addresses(plan: SmemCopyPlan) -> list[str]:
    try:
        ap = plan.address_plan()
    except PlanError as e:
        return [f"  addresses   per instruction from the formula ({e})"]
    bases = [f"b{k} = " + (f"smem + swizzle(p + {b.const})" if b.kind == "formula" else f"b{b.of} ^ {b.const:#x}")
             for k, b in enumerate(ap.bases)]
    return [f"  addresses   p = {ap.thread_layout!r} of the thread index, once; " + "; ".join(bases),
            "              then per instruction a base + a compile-time offset: " +
            ", ".join(f"b{b}+{o}" for b, o in ap.uses[:16]) + (" ..." if len(ap.uses) > 16 else "")]


def explain_plan(plan: SmemCopyPlan) -> str:
    first = plan.moves[0]
    lines = [f"register <-> shared plan ({plan.op}): {plan.src!r} -> {plan.dst!r}",
             f"  chosen      {_counts(plan)} per thread ({len(plan.moves)} instruction(s); lower bound "
             f"{plan.lower_bound}: {plan.values * plan.elem_bytes} B per thread in 16-byte moves)"]
    if plan.source is not None:
        lines.append(f"  unpack      {plan.source.dtype.name} in .b4x16_p64 units: element i of a unit lands in the "
                     f"low bits of byte i of its row [I]; addresses are the units' own")
    if plan.conversion is not None:
        lines.append(f"  convert     {plan.conversion.ptx} d, a, b: a -> upper half, b -> lower; registers are "
                     f"packed from the values each instruction's words name")
    if plan.pinned:
        lines.append(f"  pinned      form={plan.pinned!r}: only its forms weighed")
    lines.append(f"  wavefronts  {plan.wavefronts} over {plan.warps} warp(s) ({plan.wavefronts / plan.warps:g} per "
                 f"warp); ideal {plan.ideal_wavefronts}; no plan of the forms weighed takes fewer than "
                 f"{plan.min_wavefronts}" + ("" if plan.min_wavefronts == plan.wavefronts else
                                             " (the pairing search's bound: it stopped, or the pairing that reaches "
                                             "it needs addresses the generated code cannot compute)"))
    note = conflict_note(plan)
    if note:
        lines.append(f"  conflicts   {note}")
    lines.append("  forms weighed (instructions per thread, wavefronts):")
    for c in plan.candidates:
        lines.append(f"    {c.name:<46} " + (f"{c.instructions} x, {c.wavefronts} wavefronts" if c.reason == ""
                                              else f"refused: {c.reason}")
                     + (f" (bound {c.bound})" if c.bound is not None and c.bound < (c.wavefronts or 0) else ""))
    lines += _addresses(plan)
    if not plan.covers:
        lines.append("  coverage    the fragment holds part of the tile; the rest of it is not written")
    for s in plan.stages:
        lines.append(f"  run-time    {s.name} in [0, {s.extent}): +{s.smem_step} B per unit")
    lines.append(f"  first       {first.atom.ptx} registers {first.words}")
    return "\n".join(lines)
