"""Blackwell's TMA load modes (PTX ISA #tensor-im2col-w-w128-modes, #tensor-tiled-scatter4-gather4-modes, PTX 8.6,
sm_100a and later; ptxas refuses them on sm_90a): ``.im2col::w`` and ``.im2col::w::128`` read pixels along W only
(D and H fixed by the coordinates), with ``wHalo`` extra pixels after the row (after every 32 pixels for ``::128``)
and ``wOffset`` moving the window; ``.tile::gather4`` loads four rows of a 2-D tensor at one column and
``.tile::scatter4`` stores them. The map of the W modes comes from ``cuTensorMapEncodeIm2colWide`` (compute
capability 10.0 and later). Planned, compiled and emulated here; no Blackwell GPU has run them (docs/im2col.md)."""
from __future__ import annotations

from typing import Literal

from .targets import TCGEN05_TARGETS

__all__ = ["WideMode", "W128_PIXELS", "W128_GROUP", "WHALO_LIMIT", "WOFFSET_LIMIT", "im2col_w_ptx", "GATHER_ROWS",
           "gather4_ptx", "scatter4_ptx", "TMA_MODE_TARGETS", "TMA_MODE_SASS"]

WideMode = Literal["w", "w128"]
W128_PIXELS = 128              # ::w::128 always loads 128 pixels (Pixels-per-Column ignored)
W128_GROUP = 32                # ::w::128 loads wHalo pixels after every 32
#: wHalo's range per mode ([0, 512) for ::w, [0, 32) for ::w::128); wOffset is in [0, 32) for both.
WHALO_LIMIT = {"w": 512, "w128": 32}
WOFFSET_LIMIT = 32
GATHER_ROWS = 4                # gather4 / scatter4 move four rows

#: ptxas accepts these forms from sm_100a on (the TMA pair's targets).
TMA_MODE_TARGETS = TCGEN05_TARGETS


def im2col_w_ptx(rank: int, mode: WideMode) -> str:
    """``[dst], [map, {c, w, h[, d], n}], [mbar], {wHalo, wOffset}`` (16-bit each)."""
    suffix = "im2col::w" if mode == "w" else "im2col::w::128"
    return f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.{suffix}.mbarrier::complete_tx::bytes"


def gather4_ptx() -> str:
    """``[dst], [map, {col, row0, row1, row2, row3}], [mbar]`` (a 2-D map whose box is one row)."""
    return "cp.async.bulk.tensor.2d.shared::cluster.global.tile::gather4.mbarrier::complete_tx::bytes"


def scatter4_ptx() -> str:
    """``[map, {col, row0, row1, row2, row3}], [src]``, completing in the bulk group."""
    return "cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group"


#: ptxas 13 on sm_100a.
TMA_MODE_SASS = {"w": "UTMALDG.{rank}D.W", "w128": "UTMALDG.{rank}D.W128", "gather4": "UTMALDG.2D.GATHER4",
                 "scatter4": "UTMASTG.2D.SCATTER4"}
