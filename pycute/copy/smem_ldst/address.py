"""Cheap address arithmetic for a plan's instructions: each thread computes a few base addresses once, and every
instruction is a base plus a compile-time offset (folded into the instruction's immediate).

An instruction's addresses are ``swizzle(p(t) + c)``: ``p`` an affine function of the thread index (a layout of
``t``, fitted from the table), ``c`` a constant. Instructions whose addresses differ from an earlier base's by one
constant in every thread share that base; a base that differs from an earlier one by a constant XOR (a swizzle
moving a column of 16-byte chunks) is that base XOR the constant, one instruction; any other is computed from the
formula."""
from __future__ import annotations

from typing import Literal

import attrs
import numpy as np

from ...errors import PlanError
from ...layout import Layout
from ...swizzle import Swizzle
from ...tensor.smem import SmemTensor
from ..tcgen05_ldst.cells import layout_of_table

__all__ = ["Base", "AddressPlan", "address_plan", "byte_swizzle"]


@attrs.frozen
class Base:
    """A per-thread base address: ``formula`` (``swizzle(thread_layout(t) + const)``) or ``xor`` of base ``of``."""

    kind: Literal["formula", "xor"]
    const: int                     # the formula's constant, or the XOR mask
    of: int = -1                   # the base it XORs


@attrs.frozen
class AddressPlan:
    """``thread_layout(t)``: the unswizzled part every formula base shares; ``bases``; per instruction
    ``(base, offset)``."""

    thread_layout: Layout
    swizzle: Swizzle | None
    bases: tuple[Base, ...]
    uses: tuple[tuple[int, int], ...]


def byte_swizzle(tile: SmemTensor) -> Swizzle | None:
    """The tile's swizzle acting on byte offsets (it is written for element offsets)."""
    sw = tile.swizzle
    return None if sw is None else type(sw)(sw.bits, sw.base + (tile.bits // 8).bit_length() - 1, sw.shift)


def _fit(values: np.ndarray, what: str) -> Layout:
    layout = layout_of_table(values - values[0])
    if layout is None:
        raise PlanError(f"{what}: the thread -> address map {values[:8].tolist()}... is not a layout of the thread "
                        f"index (no affine formula computes it)")
    return layout


def address_plan(addresses: list[np.ndarray], swizzle: Swizzle | None, base_align: int, what: str) -> AddressPlan:
    """Bases and offsets for instructions whose per-thread byte addresses are ``addresses`` (each ``(threads,)``,
    from the buffer base), ``swizzle`` acting on byte addresses."""
    unswizzled = [swizzle(a) if swizzle is not None else a for a in addresses]
    layout = _fit(unswizzled[0], what)
    part = unswizzled[0] - unswizzled[0][0]
    bases: list[Base] = []
    tables: list[np.ndarray] = []
    uses = []
    for a, u in zip(addresses, unswizzled):
        hit = next((k for k, b in enumerate(tables) if np.all(a - b == a[0] - b[0])), None)
        if hit is None:
            if not np.array_equal(u - u[0], part):
                raise PlanError(f"{what}: instructions' unswizzled addresses differ by more than a constant")
            x = next((k for k, b in enumerate(tables) if np.all(a ^ b == a[0] ^ b[0]) and (a[0] ^ b[0]) < base_align),
                     None)
            bases.append(Base("formula", int(u[0])) if x is None else Base("xor", int(a[0] ^ tables[x][0]), x))
            tables.append(a)
            hit = len(tables) - 1
        uses.append((hit, int(a[0] - tables[hit][0])))
    return AddressPlan(layout, swizzle, tuple(bases), tuple(uses))
