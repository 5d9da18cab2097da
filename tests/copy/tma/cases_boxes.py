"""Every box the hardware copies that pycute plans beyond tests/copy/tma/cases.py (issue 32, item 3): swizzled rows
narrower than the swizzle's, tiles at 128-B offsets under a swizzle, stride-0 and overlapping arrays (loads),
arrays of more than five modes and hierarchical modes, multicast to any CTA mask of a cluster shape, L2 promotion
and cache hints. Each case: a name, the array, the shared tile, the tile indices to run (the last ones partly or
wholly out of bounds where that is the point), and make_tma_copy's options. The CPU tests emulate every one against
the layouts; python -m tools tma_every_box runs every one on the H200."""
import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle
from pycute.copy.tma.multicast import Multicast


def case(name, dtype, array, tile, tiles, store=True, **options):
    return name, pc.make_global_tensor(dtype, array), tile, tiles, store, options


def smem(dtype, layout, swizzle=None, base_align=1024):
    return pc.make_smem_tensor(dtype, layout if swizzle is None else ComposedLayout(swizzle, 0, layout),
                               base_align=base_align)


def _at(tile_layout, swizzle, dtype, offset_bytes, elem):
    """A tile ``offset_bytes`` into a 1 KiB-aligned buffer (a slice of a two-slot buffer)."""
    step = offset_bytes // elem
    shape, stride = tile_layout.shape, tile_layout.stride
    return smem(dtype, Layout((*shape, 2), (*stride, step)), swizzle)[(slice(None),) * len(shape) + (1,)]


SW128_BF16, SW64_BF16, SW32_BF16 = Swizzle(3, 3, 3), Swizzle(2, 3, 3), Swizzle(1, 3, 3)
SW128_F32, SW64_F32 = Swizzle(3, 2, 3), Swizzle(2, 2, 3)
SW32_U8, SW128_U8 = Swizzle(1, 4, 3), Swizzle(3, 4, 3)

#: Swizzled boxes whose rows are narrower than the swizzle's: each box row keeps a whole pattern row.
NARROW = [
    case("bf16-64B-rows-in-128B", pc.bf16, Layout((200, 96), (96, 1)),
         pc.kmajor_smem_buffer(pc.bf16, 64, 64, "128B")[:, 0:32], [(0, 0), (2, 2), (3, 3)]),
    case("bf16-32B-rows-in-128B", pc.bf16, Layout((200, 96), (96, 1)),
         pc.kmajor_smem_buffer(pc.bf16, 64, 64, "128B")[:, 0:16], [(0, 0), (1, 5), (3, 6)]),
    case("bf16-16B-rows-in-128B", pc.bf16, Layout((100, 40), (40, 1)),
         pc.kmajor_smem_buffer(pc.bf16, 32, 64, "128B")[:, 0:8], [(0, 0), (3, 4), (4, 5)]),
    case("bf16-32B-rows-in-64B", pc.bf16, Layout((150, 64), (64, 1)),
         pc.kmajor_smem_buffer(pc.bf16, 64, 32, "64B")[:, 0:16], [(0, 0), (2, 3), (3, 4)]),
    case("u8-16B-rows-in-32B", pc.u8, Layout((90, 64), (64, 1)),
         pc.kmajor_smem_buffer(pc.u8, 64, 32, "32B")[:, 0:16], [(0, 0), (1, 3), (2, 4)]),
    case("f32-48B-rows-in-64B", pc.f32, Layout((70, 48), (48, 1)), smem(pc.f32, Layout((32, 12), (16, 1)), SW64_F32),
         [(0, 0), (2, 3), (3, 4)]),
    case("f32-64B-rows-in-128B-two-boxes", pc.f32, Layout((600, 32), (32, 1)),
         smem(pc.f32, Layout((512, 16), (32, 1)), SW128_F32), [(0, 0), (1, 1)]),
    case("bf16-64B-rows-in-128B-3d", pc.bf16, Layout((3, 40, 64), (2560, 64, 1)),
         smem(pc.bf16, Layout((2, 16, 32), (1024, 64, 1)), SW128_BF16), [(0, 0, 0), (1, 2, 1), (2, 3, 2)]),
]

#: Swizzled tiles at 128-byte offsets that are not the pattern's repeat: the phase is the absolute address's.
OFFSET = [
    case(f"bf16-128B-at-{k * 128}B", pc.bf16, Layout((200, 128), (128, 1)),
         _at(Layout((64, 64), (64, 1)), SW128_BF16, pc.bf16, 8192 + k * 128, 2), [(0, 0), (2, 1), (3, 2)])
    for k in (1, 3, 5, 7)
] + [
    case("bf16-64B-at-384B", pc.bf16, Layout((100, 64), (64, 1)),
         _at(Layout((32, 32), (32, 1)), SW64_BF16, pc.bf16, 2048 + 384, 2), [(0, 0), (3, 1)]),
    case("bf16-32B-at-128B", pc.bf16, Layout((100, 32), (32, 1)),
         _at(Layout((32, 16), (16, 1)), SW32_BF16, pc.bf16, 1024 + 128, 2), [(0, 0), (3, 1)]),
    case("bf16-64B-rows-in-128B-at-640B", pc.bf16, Layout((100, 64), (64, 1)),
         _at(Layout((32, 32), (64, 1)), SW128_BF16, pc.bf16, 4096 + 640, 2), [(0, 0), (3, 1)]),
]

#: Broadcast (stride-0) and overlapping arrays: loads only (a store would race).
BROADCAST = [
    case("f32-stride0-rows", pc.f32, Layout((64, 96), (0, 1)), smem(pc.f32, Layout((32, 32), (32, 1))),
         [(0, 0), (1, 2), (2, 3)], store=False),
    case("bf16-stride0-batch-3d", pc.bf16, Layout((4, 64, 64), (0, 64, 1)),
         smem(pc.bf16, Layout((2, 16, 64), (1024, 64, 1)), SW128_BF16), [(0, 0, 0), (1, 3, 0), (2, 4, 1)],
         store=False),
    case("f32-overlapping-rows-sliding-window", pc.f32, Layout((200, 64), (16, 1)),
         smem(pc.f32, Layout((32, 64), (64, 1))), [(0, 0), (3, 0), (6, 1)], store=False),
    case("u8-overlapping-rows-16B-apart", pc.u8, Layout((100, 128), (16, 1)),
         smem(pc.u8, Layout((64, 128), (128, 1)), SW128_U8), [(0, 0), (1, 0), (2, 1)], store=False),
]

#: Arrays of six modes (contiguous ones merged) and hierarchical modes (each sub-mode a tensor-map dimension).
MODES = [
    case("u8-6-modes", pc.u8, Layout((2, 3, 4, 5, 6, 32), (11520, 3840, 960, 192, 32, 1)),
         smem(pc.u8, Layout((1, 1, 2, 5, 6, 32), (0, 0, 960, 192, 32, 1))), [(0, 0, 0, 0, 0, 0), (1, 2, 1, 0, 0, 0)]),
    case("f32-6-modes-whole-inner", pc.f32, Layout((3, 2, 2, 4, 8, 16), (2048, 1024, 512, 128, 16, 1)),
         smem(pc.f32, Layout((1, 2, 2, 4, 2, 16), (0, 256, 128, 32, 16, 1))),
         [(0, 0, 0, 0, 0, 0), (2, 0, 0, 0, 3, 0), (3, 0, 0, 0, 4, 0)]),
    case("bf16-7-modes", pc.bf16, Layout((2, 2, 2, 2, 3, 4, 64), (6144, 3072, 1536, 768, 256, 64, 1)),
         smem(pc.bf16, Layout((1, 1, 1, 2, 3, 4, 64), (0, 0, 0, 768, 256, 64, 1)), SW128_BF16),
         [(0, 0, 0, 0, 0, 0, 0), (1, 1, 1, 0, 0, 0, 0)]),
    case("f32-hierarchical-rows-whole-runs", pc.f32, Layout(((8, 16), 64), ((128, 2048), 1)),
         smem(pc.f32, Layout((32, 64), (64, 1))), [(0, 0), (3, 0), (4, 1)]),
    case("f32-hierarchical-rows-inside-a-run", pc.f32, Layout(((8, 16), 64), ((128, 2048), 1)),
         smem(pc.f32, Layout((4, 64), (64, 1))), [(0, 0), (5, 0), (31, 0), (32, 0)]),
    case("bf16-hierarchical-columns", pc.bf16, Layout((100, (64, 3)), (256, (1, 80))),
         smem(pc.bf16, Layout((32, 64), (64, 1)), SW128_BF16), [(0, 0), (1, 2), (3, 3)]),
]

#: Multicast to masks of 2-D and 3-D cluster shapes, lines along an axis, and (CPU only) a CTA pair.
_A = Layout((300, 128), (128, 1))
_KT = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
MULTICAST = [
    case("bf16-2x2-mask-0b1010", pc.bf16, _A, _KT, [(0, 0), (2, 1)], store=False,
         multicast=Multicast((2, 2), mask=0b1010)),
    case("bf16-2x2-mask-0b0110", pc.bf16, _A, _KT, [(0, 0), (2, 1)], store=False,
         multicast=Multicast((2, 2), mask=0b0110)),
    case("bf16-4x1-mask-0b1101", pc.bf16, _A, pc.kmajor_smem_tensor(pc.bf16, 96, 64, "128B"), [(0, 0), (3, 1)],
         store=False, multicast=Multicast((4,), mask=0b1101)),
    case("bf16-2x2-along-x", pc.bf16, _A, _KT, [(0, 0), (2, 1)], store=False, multicast=Multicast((2, 2), along="x")),
    case("bf16-2x2-along-y", pc.bf16, _A, _KT, [(0, 0), (2, 1)], store=False, multicast=Multicast((2, 2), along="y")),
    case("bf16-2x2x2-along-z", pc.bf16, _A, _KT, [(0, 0), (2, 1)], store=False,
         multicast=Multicast((2, 2, 2), along="z")),
    case("bf16-2x2x2-corners", pc.bf16, _A, _KT, [(0, 0), (2, 1)], store=False,
         multicast=Multicast.of((2, 2, 2), [(0, 0, 0), (1, 1, 1)])),
    case("f32-4x2-along-y", pc.f32, Layout((300, 96), (96, 1)), smem(pc.f32, Layout((64, 32), (32, 1))),
         [(0, 0), (4, 2)], store=False, multicast=Multicast((4, 2), along="y")),
]

#: L2 promotion and cache policies: the same bytes whatever the hint.
_F32 = Layout((300, 96), (96, 1))
_F32_TILE = smem(pc.f32, Layout((64, 32), (32, 1)))
HINTS = [
    case(f"f32-l2-promotion-{p}", pc.f32, _F32, _F32_TILE, [(0, 0), (4, 2)], l2_promotion=p)
    for p in ("none", "64B", "128B", "256B")
] + [
    case(f"bf16-cache-hint-{h}", pc.bf16, _A, _KT, [(0, 0), (2, 1)], cache_hint=h)
    for h in ("evict_first", "evict_last", "evict_normal", "evict_unchanged")
] + [
    case("bf16-cache-hint-fractional", pc.bf16, _A, _KT, [(0, 0), (2, 1)],
         cache_hint=pc.CachePolicy("evict_last", 0.5, "evict_first")),
    case("bf16-multicast-with-cache-hint", pc.bf16, _A, _KT, [(0, 0), (2, 1)], store=False,
         multicast=Multicast((2, 2), along="y"), cache_hint="evict_last"),
]

BOXES = NARROW + OFFSET + BROADCAST + MODES + MULTICAST + HINTS
