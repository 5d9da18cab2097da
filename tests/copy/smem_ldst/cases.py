"""Fragments and tiles the register <-> shared tests, the GPU round trips and python -m tools epilogue share.

Fragment kinds (thread-value layouts ``(thread, value) -> coordinate index`` of the tile, colexicographic):
* ``wgmma``: Hopper's f32 wgmma accumulator of a 64 x N tile per warpgroup (PTX ISA "wgmma register fragments"):
  thread t of warp w holds, for value i, row 16 w + t / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (t % 4) + i % 2;
* ``tmem32``: a ``tcgen05.ld .32x32b`` plan's fragment of a 128 x N accumulator (thread t holds row t);
* ``user``: a user's TV layout: a warp's ``mma.sync.m16n8`` accumulator fragment repeated over a 32 x 32 tile by
  two warps, values grouped column block first (any layout the planner must take);
* ``tmem16x128b``, ``tmem16x64b``: ``tcgen05.ld .16x128b.x8`` / ``.16x64b.x16`` plans' fragments of a 128 x 32
  accumulator (a thread holds rows 8 apart): stored column-major they need ``stmatrix .trans``, whose pairing of
  values decides the wavefronts (``TRANSPOSED``; not in the default matrix of ``cases()``).

Swizzles are TMA's labels, or ``"Sw<b,m,s>"``: that swizzle of the element offsets of the dense tile.
"""
from __future__ import annotations

import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle, make_layout


def wgmma_layout(n: int, warpgroups: int = 1) -> Layout:
    """The f32 wgmma accumulator's TV layout of a ``64 * warpgroups`` x ``n`` tile."""
    rows = 64 * warpgroups
    return Layout(((4, 8, 4 * warpgroups), (2, 2, n // 8)), ((2 * rows, 1, 16), (rows, 8, 8 * rows)))


def tmem32_layout(n: int) -> Layout:
    """``make_tmem_copy(mma_accumulator(f32, 128, 256)[:, 0:n]).fragment``."""
    return pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 256)[:, 0:n]).fragment


def user_layout() -> Layout:
    """Two warps, each an m16n8 accumulator fragment (row t/4 and t/4+8, columns 2(t%4), +1) over 16 x 8 blocks of
    a 32 x 32 tile: warp w takes rows 16 w..; values step column blocks of 8."""
    return Layout(((4, 8, 2), (2, 2, 4)), ((64, 1, 16), (32, 8, 256)))


def tcgen05_layout(shape: str, num: int) -> Layout:
    """``make_tmem_copy(mma_accumulator(f32, 128, 256)[:, 0:32], shape=shape, num=num).fragment``."""
    return pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 256)[:, 0:32], shape=shape, num=num).fragment


FRAGMENTS = {"wgmma": (128, (64, 64), lambda: wgmma_layout(64)),
             "tmem32": (128, (128, 32), lambda: tmem32_layout(32)),
             "user": (64, (32, 32), user_layout),
             "tmem16x128b": (128, (128, 32), lambda: tcgen05_layout("16x128b", 8)),
             "tmem16x64b": (128, (128, 32), lambda: tcgen05_layout("16x64b", 16))}
#: The kinds of the default matrix (every round trip the GPU has run).
KINDS = ("wgmma", "tmem32", "user")


def fragment(kind: str, dtype=pc.f32) -> pc.RegisterFragment:
    threads, shape, layout = FRAGMENTS[kind]
    return pc.make_fragment(dtype, threads, layout(), shape=shape)


def _element_swizzled(dtype, layout: Layout, swizzle: str) -> pc.SmemTensor:
    """The dense ``layout`` under the element swizzle ``"Sw<b,m,s>"``, the buffer aligned to its period."""
    b, m, s = (int(x) for x in swizzle[3:-1].split(","))
    period = (1 << (b + m + s)) * dtype.bits // 8
    return pc.make_smem_tensor(dtype, ComposedLayout(Swizzle(b, m, s), 0, layout), base_align=max(1024, period))


def row_major(dtype, rows: int, cols: int, swizzle: str) -> pc.SmemTensor:
    """The row-major (columns contiguous) output tile: a swizzled one is the canonical K-major tile; "plain" is
    dense rows."""
    if swizzle.startswith("Sw<"):
        return _element_swizzled(dtype, Layout((rows, cols), (cols, 1)), swizzle)
    if swizzle == "plain":
        return pc.make_smem_tensor(dtype, Layout((rows, cols), (cols, 1)))
    return pc.kmajor_smem_tensor(dtype, rows, cols, swizzle)


def col_major(dtype, rows: int, cols: int, swizzle: str) -> pc.SmemTensor:
    """The column-major (rows contiguous) tile: the row-major tile of the transpose, modes swapped."""
    if swizzle.startswith("Sw<"):
        return _element_swizzled(dtype, Layout((rows, cols), (1, rows)), swizzle)
    if swizzle == "plain":
        return pc.make_smem_tensor(dtype, Layout((rows, cols), (1, rows)))
    t = pc.kmajor_smem_tensor(dtype, cols, rows, swizzle)
    inner = make_layout(t.layout[1], t.layout[0])
    return pc.make_smem_tensor(dtype, ComposedLayout(t.swizzle, 0, inner) if t.swizzle else inner)


SWIZZLES = ("plain", "32B", "64B", "128B")
DTYPES = {"bf16": pc.bf16, "f16": pc.f16, "e4m3": pc.f8e4m3, "e5m2": pc.f8e5m2, "f32": pc.f32}
ORDERS = {"row": row_major, "col": col_major}


def tile(kind: str, dtype: str, order: str, swizzle: str) -> pc.SmemTensor:
    rows, cols = FRAGMENTS[kind][1]
    return ORDERS[order](DTYPES[dtype], rows, cols, swizzle)


def cases(kinds=KINDS, dtypes=tuple(DTYPES), orders=tuple(ORDERS), swizzles=SWIZZLES):
    """``(name, kind, dtype, order, swizzle)`` for every combination whose tile exists (a swizzle row holds whole
    elements and the tile spans whole swizzle rows)."""
    out = []
    for kind in kinds:
        for dt in dtypes:
            for order in orders:
                for sw in swizzles:
                    try:
                        tile(kind, dt, order, sw)
                    except pc.PlanError:
                        continue
                    out.append((f"{kind}-{dt}-{order}-{sw}", kind, dt, order, sw))
    return out


#: (name, kind, dtype, order, swizzle, arch): the stores of tcgen05 fragments into column-major tiles that pairing
#: each value with its nearest partner put at twice the fewest wavefronts (issue 43); the fewest is the ideal.
TRANSPOSED = [("tmem16x128b-bf16-col-128B", "tmem16x128b", "bf16", "col", "128B", None),
              ("tmem16x128b-e4m3-col-128B", "tmem16x128b", "e4m3", "col", "128B", "sm_100a"),
              ("tmem16x128b-e4m3-col-64B", "tmem16x128b", "e4m3", "col", "64B", "sm_100a"),
              ("tmem16x64b-bf16-col-Sw<3,4,3>", "tmem16x64b", "bf16", "col", "Sw<3,4,3>", None)]
