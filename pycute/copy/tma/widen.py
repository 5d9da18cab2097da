"""A wider tensor-map element (CuTe's TMA internal type): ``n`` consecutive elements of the contiguous mode, in the
array and in the tile alike, travel as one unsigned integer of ``n`` times their width. The bytes moved are the
same; the box counts fewer, wider elements, so it may grow further, and a type the driver has no tensor-map type
for (4-bit floats, packed two to a byte) can travel at all. Legal when the array's contiguous extent and every
other stride, and the tile's contiguous run, its offset, stages and swizzle all divide by ``n``."""
from __future__ import annotations

from ...dtypes import dtype
from ...int_tuple import flatten, is_int
from ...layout import Layout
from ...swizzle import Swizzle
from ...tensor.gmem import GlobalTensor
from ...tensor.region import DynamicIndex
from ...tensor.smem import SmemTensor
from ...tensor.tile import contiguous_mode, layout_modes, whole_array_modes
from ..protocol import Reject

__all__ = ["WIDE_TYPES", "widen"]

#: The unsigned type a wider element travels as, by its bytes.
WIDE_TYPES = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}


def _widen_tile(smem: SmemTensor, u: int, n: int) -> tuple[Layout, Swizzle | None]:
    """The tile's layout and swizzle in units of ``n`` elements: mode ``u`` starts with a stride-1 run of a
    multiple of ``n`` elements, every other stride divides by ``n``."""
    modes = layout_modes(smem.layout)
    if len(modes) <= u:
        raise Reject("the tile has no mode {u}", u=u)
    out = []
    for k, (shape, stride) in enumerate(modes):
        leaves = list(zip(flatten(shape), flatten(stride)))
        if k == u:
            if leaves[0][1] != 1 or leaves[0][0] % n:
                raise Reject("the tile's contiguous mode does not start with a stride-1 run of a multiple of {n} "
                             "elements", n=n)
            leaves[0] = (leaves[0][0] // n, 1)
        if any(d % n for i, (_, d) in enumerate(leaves) if not (k == u and i == 0)):
            raise Reject("a shared stride of the tile is not a multiple of {n} elements", n=n)
        leaves = [(e, d if (k == u and i == 0) else d // n) for i, (e, d) in enumerate(leaves)]
        out.append((tuple(e for e, _ in leaves), tuple(d for _, d in leaves)))
    layout = Layout(tuple(s for s, _ in out), tuple(d for _, d in out))
    sw = smem.swizzle
    shift = n.bit_length() - 1
    if sw is not None and sw.base < shift:
        raise Reject("the swizzle {sw!r} permutes units narrower than {n} elements", sw=sw, n=n)
    return layout, (None if sw is None else Swizzle(sw.bits, sw.base - shift, sw.shift))


def widen(gmem: GlobalTensor, smem: SmemTensor, nbytes: int) -> tuple[GlobalTensor, SmemTensor]:
    """The array and tile as ``nbytes``-byte unsigned elements, or Reject with the first rule that stops it."""
    bits, wide = gmem.dtype.bits, 8 * nbytes
    if wide <= bits or wide % bits:
        raise Reject("{b}-bit elements do not pack into {w} bits", b=bits, w=wide)
    n = wide // bits
    modes = whole_array_modes(gmem, "make_tma_copy")
    u = contiguous_mode(modes)
    if u is None:
        raise Reject("no array mode has stride 1")
    if modes[u][0] % n:
        raise Reject("the array's contiguous extent {e} is not a multiple of {n}", e=modes[u][0], n=n)
    if any(d % n for k, (e, d) in enumerate(modes) if k != u and e > 1):
        raise Reject("an array stride is not a multiple of {n} elements", n=n)
    if smem.offset % n or any(not is_int(d.stride) or d.stride % n for d in smem.dynamic):
        raise Reject("the tile's offset or a run-time step is not a multiple of {n} elements", n=n)
    layout, swizzle = _widen_tile(smem, u, n)
    t = dtype(WIDE_TYPES[nbytes])
    array = Layout(tuple(e // n if k == u else e for k, (e, _) in enumerate(modes)),
                   tuple(d if k == u else d // n for k, (_, d) in enumerate(modes)))
    dynamic = tuple(DynamicIndex(d.name, d.extent, d.stride // n) for d in smem.dynamic)
    if not isinstance(gmem.layout.shape, tuple):
        array = Layout(modes[0][0] // n, 1)
    return (GlobalTensor(t, array, 0, gmem.base_align, address=gmem.address),
            SmemTensor(t, layout, swizzle, smem.offset // n, smem.base_align, dynamic))
