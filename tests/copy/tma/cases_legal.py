"""Boxes the H200 copies that pycute used to refuse (issue 43, item 1), by the refusal each lifts: a multicast whose
mask names one CTA (a plain load), rows packed narrower than a swizzle's and rows under 16 B served by merging
contiguous modes, stores whose boxes end before a row's partial 16-byte unit, arrays with two modes of one stride,
and nested sub-modes a few bytes apart. Each case: a name, the array, the shared tile, the tile indices (or
run-time origins) to run, the load's options and the store's (None: no store). The CPU tests emulate every one
against the layouts; tools/tma_boxes.py runs every one on the GPU."""
import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle
from pycute.copy.tma.multicast import Multicast


def case(name, dtype, array, tile, tiles, load=None, store=None):
    return name, pc.make_global_tensor(dtype, array), tile, tiles, load or {}, store


def smem(dtype, layout, swizzle=None):
    return pc.make_smem_tensor(dtype, layout if swizzle is None else ComposedLayout(swizzle, 0, layout), base_align=1024)


_A = Layout((300, 128), (128, 1))
_KT = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
_AT = (pc.dynamic("r"), pc.dynamic("c"))

#: A multicast whose masks each name their issuer alone: a plain load (the other CTAs of a fixed mask issue nothing).
ONE_CTA = [
    case("bf16-2x2-mask-one-cta", pc.bf16, _A, _KT, [(0, 0), (2, 1)], dict(multicast=Multicast((2, 2), mask=0b0100))),
    case("f32-multicast-1", pc.f32, Layout((300, 96), (96, 1)), smem(pc.f32, Layout((64, 32), (32, 1))),
         [(0, 0), (4, 2)], dict(multicast=1)),
    case("bf16-2x1-along-y-one-cta", pc.bf16, _A, _KT, [(0, 0), (2, 1)], dict(multicast=Multicast((2, 1), along="y"))),
]

#: Rows the array lays out back to back, packed in shared memory narrower than the swizzle's row or under 16 B: the
#: map with the contiguous modes merged holds whole pattern rows (whole 16-byte units).
MERGED = [
    case("bf16-16B-rows-packed-in-128B", pc.bf16, Layout((256, 8), (8, 1)),
         smem(pc.bf16, Layout((64, 8), (8, 1)), Swizzle(3, 3, 3)), [(0, 0), (3, 0), (4, 0)], store={}),
    case("u8-16B-rows-packed-in-32B", pc.u8, Layout((100, 16), (16, 1)),
         smem(pc.u8, Layout((64, 16), (16, 1)), Swizzle(1, 4, 3)), [(0, 0), (1, 0)], store={}),
    case("f32-16B-rows-packed-in-64B", pc.f32, Layout((200, 4), (4, 1)),
         smem(pc.f32, Layout((32, 4), (4, 1)), Swizzle(2, 2, 3)), [(0, 0), (6, 0)], store={}),
    case("u8-8B-rows", pc.u8, Layout((256, 8), (8, 1)), smem(pc.u8, Layout((64, 8), (8, 1))), [(0, 0), (3, 0)],
         store={}),
    case("bf16-16B-rows-packed-in-128B-batched", pc.bf16, Layout((3, 64, 8), (512, 8, 1)),
         smem(pc.bf16, Layout((1, 64, 8), (0, 8, 1)), Swizzle(3, 3, 3)), [(0, 0, 0), (2, 0, 0), (3, 0, 0)],
         store={}),
]

#: Stores into rows that end inside a 16-byte unit, at element origins whose boxes end at or before that unit (a
#: tile-index store covers the array's last tile, which reaches the unit: refused).
PARTIAL_ROW = [
    case("bf16-store-before-the-partial-unit", pc.bf16, Layout((64, 100), (112, 1)),
         smem(pc.bf16, Layout((64, 64), (64, 1))), [(0, 0), (17, 32)], dict(origin=_AT), store=dict(origin=_AT)),
    case("f32-store-ends-at-the-partial-unit", pc.f32, Layout((70, 30), (32, 1)),
         smem(pc.f32, Layout((32, 28), (28, 1))), [(0, 0), (40, 0)], dict(origin=_AT), store=dict(origin=_AT)),
    case("u8-store-run-time-origin", pc.u8, Layout((40, 50), (64, 1)), smem(pc.u8, Layout((32, 16), (16, 1))),
         [(0, 0), (8, 16), (20, 32)], dict(origin=_AT), store=dict(origin=_AT)),
    case("u32-add-before-the-partial-unit", pc.u32, Layout((50, 30), (32, 1)), smem(pc.u32, Layout((32, 16), (16, 1))),
         [(0, 0), (20, 12)], dict(origin=_AT), store=dict(origin=_AT, reduce="add")),
]

#: Arrays with two modes of one stride (overlapping views the driver encodes): loads, and stores whose tile
#: addresses each element once.
EQUAL_STRIDES = [
    case("f32-two-modes-one-stride", pc.f32, Layout((64, 64, 8), (1, 64, 64)),
         smem(pc.f32, Layout((64, 16, 1), (1, 64, 0))), [(0, 0, 0), (0, 3, 7), (0, 4, 8)], store={}),
    case("bf16-window-view", pc.bf16, Layout((97, 32, 64), (64, 64, 1)), smem(pc.bf16, Layout((1, 32, 64), (0, 64, 1))),
         [(0, 0, 0), (60, 0, 0), (96, 0, 0), (97, 0, 0)], store={}),
    case("f32-overlapping-rows-one-row-tiles", pc.f32, Layout((200, 64), (16, 1)), smem(pc.f32, Layout((1, 64), (64, 1))),
         [(0, 0), (5, 0), (199, 0), (200, 0)], store={}),
]

#: Hierarchical modes with a sub-mode a few bytes apart (not a tensor-map stride): merged with the sub-mode inside
#: it, one dimension, as TVM's planner does (tvm_tma_plans.json).
NESTED = [
    case("u8-nested-columns-8B-apart", pc.u8, Layout(((8, 4), 128), ((1, 8), 32)),
         smem(pc.u8, Layout((32, 64), (1, 32))), [(0, 0), (0, 1), (0, 2)], store={}),
    case("bf16-nested-columns-8B-apart-half", pc.bf16, Layout((96, (4, 16)), (64, (1, 4))),
         smem(pc.bf16, Layout((32, 32), (32, 1))), [(0, 0), (2, 1), (3, 1)], store={}),
    case("u8-nested-rows-8B-apart", pc.u8, Layout(((2, 64), 8), ((8, 16), 1)), smem(pc.u8, Layout((64, 8), (8, 1))),
         [(0, 0), (1, 0), (2, 0)], store={}),
]

LEGAL = ONE_CTA + MERGED + PARTIAL_ROW + EQUAL_STRIDES + NESTED
