"""The padded FP4 source of ``tcgen05.cp ... .b8x16.b4x16_p64`` as the 8-bit tensor the copy addresses.

A 16-byte unit ``u`` holds 16 four-bit elements (nibbles ``32 u`` to ``32 u + 15``) and 8 bytes of padding
(``arch.sm100.tcgen05_cp``). Element ``i`` of the unit becomes TMEM byte ``i``, so the planner sees nibble
``32 u + i`` as byte ``16 u + i`` of an unpadded 8-bit buffer: the same 16-byte unit addresses, one byte per element.
"""
from __future__ import annotations

from ...arch.sm100.tcgen05_cp import DECOMPRESS_ELEMENTS
from ...arch.sm100.swizzle_modes import UNIT_BITS, UNIT_BYTES
from ...dtypes import u8
from ...errors import PlanError
from ...int_tuple import flatten
from ...layout import Layout
from ...swizzle import Swizzle
from ...typing import IntTuple
from ...tensor.values import layout_values
from ...tensor.smem import SmemTensor

__all__ = ["unpadded_source"]

_NIBBLES = UNIT_BITS // 4          # nibbles of one 16-byte unit


def _byte(offset: int) -> int:
    return offset // _NIBBLES * UNIT_BYTES + offset % _NIBBLES


def unpadded_source(src: SmemTensor, where: str) -> SmemTensor:
    """The u8 tensor whose byte ``16 u + i`` is element ``i`` of ``src``'s padded unit ``u``; refused where an element
    sits in the padding or a mode cannot be re-expressed on bytes."""
    nibbles = src.offset + layout_values(src.layout)
    pad = nibbles[nibbles % _NIBBLES >= DECOMPRESS_ELEMENTS]
    if pad.size:
        raise PlanError(f"{where}: .b4x16_p64 reads 16 elements then 8 bytes of padding per 16-byte unit, but an element "
                        f"sits at nibble {int(pad[0])} of the buffer, in a unit's padding (nibbles 16-31 of each unit)")
    shape, stride = flatten(src.layout.shape), flatten(src.layout.stride)
    strides = []
    for n, s in zip(shape, stride):
        if s % _NIBBLES == 0:
            strides.append(s // _NIBBLES * UNIT_BYTES)
        elif 0 < s * (n - 1) < DECOMPRESS_ELEMENTS:
            strides.append(s)
        else:
            raise PlanError(f"{where}: a mode of {n} with nibble stride {s} neither steps whole 16-byte units nor stays "
                            f"inside one unit's 16 elements")
    layout = Layout(src.layout.shape, _nest(src.layout.shape, strides))
    view = SmemTensor(u8, layout, _byte_swizzle(src.swizzle, where), _byte(src.offset), src.base_align)
    if not (layout_values(view.layout) + view.offset == nibbles // _NIBBLES * UNIT_BYTES + nibbles % _NIBBLES).all():
        raise PlanError(f"{where}: the padded layout {src.layout!r} has no 8-bit view mode by mode")
    return view


def _nest(shape, flat: list):
    it = iter(flat)

    def go(s: IntTuple) -> IntTuple:
        return tuple(go(e) for e in s) if isinstance(s, tuple) else next(it)
    return go(shape)


def _byte_swizzle(sw: Swizzle | None, where: str) -> Swizzle | None:
    """A swizzle of 4-bit element offsets, ``Sw<b, 5, 3>``, permutes units as ``Sw<b, 4, 3>`` does bytes."""
    if sw is None or sw.bits == 0:
        return None
    if sw.base != 5:
        raise PlanError(f"{where}: the 4-bit source's swizzle {sw!r} is not Sw<b,5,3> on element offsets")
    return Swizzle(sw.bits, 4, sw.shift)
