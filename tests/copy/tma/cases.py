"""TMA copies by shape: element sizes, ranks 1-5, every swizzle, boxes from 16 B to 256 elements, tiles that are
partial and wholly out of bounds, several boxes, a tile at an offset inside a larger buffer. Each case: a name, the
array, the shared tile, and the tile indices to run (the last ones partly or wholly out of bounds)."""
import pycute as pc
from pycute import Layout


def case(name, dtype, array, tile, tiles):
    g = pc.make_global_tensor(dtype, array)
    return name, g, tile, tiles


def smem(dtype, layout, base_align=1024):
    return pc.make_smem_tensor(dtype, layout, base_align=base_align)


CASES = [
    case("f32-2d-plain", pc.f32, Layout((300, 96), (96, 1)), smem(pc.f32, Layout((64, 32), (32, 1))),
         [(0, 0), (4, 2), (5, 3)]),
    case("u8-2d-16B-rows", pc.u8, Layout((100, 48), (48, 1)), smem(pc.u8, Layout((64, 16), (16, 1))),
         [(0, 0), (1, 2), (2, 3)]),
    case("bf16-kmajor-128B", pc.bf16, Layout((300, 256), (256, 1)), pc.kmajor_smem_tensor(pc.bf16, 128, 128, "128B"),
         [(0, 0), (2, 1), (3, 2)]),
    case("bf16-kmajor-64B", pc.bf16, Layout((200, 64), (64, 1)), pc.kmajor_smem_tensor(pc.bf16, 64, 64, "64B"),
         [(0, 0), (3, 0), (4, 1)]),
    case("bf16-kmajor-32B", pc.bf16, Layout((72, 48), (48, 1)), pc.kmajor_smem_tensor(pc.bf16, 64, 32, "32B"),
         [(0, 0), (1, 1), (2, 2)]),
    case("u8-kmajor-128B", pc.u8, Layout((130, 256), (256, 1)), pc.kmajor_smem_tensor(pc.u8, 128, 256, "128B"),
         [(0, 0), (1, 0), (2, 1)]),
    case("f32-kmajor-128B", pc.f32, Layout((128, 64), (64, 1)), pc.kmajor_smem_tensor(pc.f32, 64, 64, "128B"),
         [(0, 0), (1, 1), (2, 2)]),
    case("bf16-kmajor-128B-K-not-atom", pc.bf16, Layout((128, 100), (112, 1)),
         pc.kmajor_smem_tensor(pc.bf16, 128, 128, "128B"), [(0, 0), (1, 1)]),
    case("f32-1d-256", pc.f32, Layout(1000, 1), smem(pc.f32, Layout(256, 1)), [(0,), (3,), (4,)]),
    case("f32-1d-512-widened-to-u64", pc.f32, Layout(1000, 1), smem(pc.f32, Layout(512, 1)), [(0,), (1,), (2,)]),
    case("f32-3d", pc.f32, Layout((4, 64, 96), (6144, 96, 1)), smem(pc.f32, Layout((2, 16, 32), (512, 32, 1))),
         [(0, 0, 0), (1, 3, 2), (2, 4, 3)]),
    case("u8-5d", pc.u8, Layout((2, 3, 4, 8, 32), (3072, 1024, 256, 32, 1)),
         smem(pc.u8, Layout((1, 1, 2, 8, 32), (512, 512, 256, 32, 1))), [(0, 0, 0, 0, 0), (1, 2, 1, 0, 0)]),
    case("f32-512-rows-two-boxes", pc.f32, Layout((300, 32), (32, 1)), smem(pc.f32, Layout((512, 32), (32, 1))),
         [(0, 0), (1, 0)]),
    case("f32-tile-at-8KiB", pc.f32, Layout((128, 64), (64, 1)),
         smem(pc.f32, Layout((64, 32, 2), (32, 1, 2048)))[:, :, 1], [(0, 0), (1, 1), (2, 2)]),
    case("f32-rows-not-16B", pc.f32, Layout((70, 30), (32, 1)), smem(pc.f32, Layout((64, 32), (32, 1))),
         [(0, 0), (1, 0)]),
    case("bf16-rows-not-16B", pc.bf16, Layout((64, 100), (112, 1)), smem(pc.bf16, Layout((64, 64), (64, 1))),
         [(0, 0), (0, 1)]),
    case("u8-rows-not-16B", pc.u8, Layout((40, 50), (64, 1)), smem(pc.u8, Layout((32, 64), (64, 1))),
         [(0, 0), (1, 0)]),
    case("f64-2d-plain", pc.f64, Layout((100, 40), (40, 1)), smem(pc.f64, Layout((32, 16), (16, 1))),
         [(0, 0), (3, 2), (4, 3)]),
    case("u64-kmajor-128B", pc.u64, Layout((70, 32), (32, 1)), smem(pc.u64, pc.ComposedLayout(
        pc.Swizzle(3, 1, 3), 0, Layout(((8, 8), (16, 2)), ((16, 128), (1, 1024))))), [(0, 0), (1, 1)]),
    case("bf16-5d-kmajor-128B-rank-budget", pc.bf16, Layout((2, 3, 4, 130, 128), (199680, 66560, 16640, 128, 1)),
         smem(pc.bf16, pc.ComposedLayout(pc.Swizzle(3, 3, 3), 0, Layout((1, 1, 1, (8, 16), (64, 2)),
                                                                        (0, 0, 0, (64, 512), (1, 8192))))),
         [(0, 0, 0, 0, 0), (1, 2, 3, 1, 0), (1, 2, 3, 2, 0)]),
    case("f4-kmajor-128B-widened-to-u8", "f4e2m1", Layout((300, 256), (256, 1)),
         pc.kmajor_smem_tensor("f4e2m1", 128, 256, "128B"), [(0, 0), (2, 0), (3, 1)]),
    case("f32-box-larger-than-array", pc.f32, Layout((20, 24), (24, 1)), smem(pc.f32, Layout((64, 32), (32, 1))),
         [(0, 0), (1, 1)]),
]

#: Multicast loads: (name, array, tile, CTAs of the cluster, tile indices).
MULTICAST = [
    ("bf16-kmajor-128B-x2", pc.make_global_tensor(pc.bf16, Layout((300, 128), (128, 1))),
     pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), 2, [(0, 0), (2, 1)]),
    ("bf16-kmajor-128B-x4", pc.make_global_tensor(pc.bf16, Layout((300, 128), (128, 1))),
     pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), 4, [(0, 0), (2, 1)]),
    ("f32-2d-x4", pc.make_global_tensor(pc.f32, Layout((300, 96), (96, 1))), smem(pc.f32, Layout((64, 32), (32, 1))),
     4, [(0, 0), (4, 2)]),
]

#: Reductions: (name, array, tile, operation, tile indices); each loads a tile of A and reduces it into B.
REDUCE = [(f"{d.name}-{op}", pc.make_global_tensor(d, Layout((100, 64), (64, 1))), smem(d, Layout((32, 64), (64, 1))), op,
           [(0, 0), (3, 0)])
          for d, ops in ((pc.u32, ("add", "min", "max", "inc", "dec", "and", "or", "xor")), (pc.i32, ("add", "min", "max")),
                         (pc.f32, ("add",)), (pc.f16, ("add", "min", "max")), (pc.bf16, ("add", "min", "max")),
                         (pc.u64, ("add", "min", "max", "xor")), (pc.i64, ("min", "max")))
          for op in ops]
REDUCE.append(("bf16-kmajor-128B-add", pc.make_global_tensor(pc.bf16, Layout((300, 128), (128, 1))),
               pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), "add", [(0, 0), (2, 1)]))

#: Loads with the NaN out-of-bounds fill: (name, array, tile, tile indices past the array's edge).
NAN_FILL = [(f"{d.name}-nan-fill", pc.make_global_tensor(d, Layout((40, 64), (64, 1))),
             smem(d, Layout((64, 128 // (d.bits // 8)), (128 // (d.bits // 8), 1))), [(0, 0), (1, 0)])
            for d in (pc.f16, pc.bf16, pc.f32, pc.f64)]

#: Element-coordinate copies: (name, array, tile, origins). Each origin is loaded, and stored back where the
#: store's preconditions allow it (non-negative). Every column is a whole 16-byte unit (the H200 faults otherwise,
#: docs/tma.md); rows and columns otherwise anywhere: off the box, negative, partly and wholly past the end.
ELEMENT = [
    ("f32-element", pc.make_global_tensor(pc.f32, Layout((300, 96), (96, 1))), smem(pc.f32, Layout((64, 32), (32, 1))),
     [(0, 0), (77, 4), (77, 8), (-5, -4), (290, 88), (-64, -32), (1 << 20, 0)]),
    ("bf16-kmajor-128B-element", pc.make_global_tensor(pc.bf16, Layout((300, 256), (256, 1))),
     pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), [(0, 0), (77, 8), (77, 24), (-7, -8), (250, 248)]),
    ("bf16-kmajor-128B-split-element", pc.make_global_tensor(pc.bf16, Layout((300, 256), (256, 1))),
     pc.kmajor_smem_tensor(pc.bf16, 128, 128, "128B"), [(77, 64), (-3, 128), (299, 192)]),
    ("u8-element", pc.make_global_tensor(pc.u8, Layout((100, 48), (48, 1))), smem(pc.u8, Layout((64, 16), (16, 1))),
     [(3, 16), (-1, -16), (99, 32), (16, 32), (-70, 48)]),
]

#: Loads through converting maps: (name, dtype, ftz, fill); the arrays hold random bits (subnormals, NaNs, ties).
CONVERTING = [(f"{d.name}{'-ftz' if ftz else ''}-{fill}", d, ftz, fill)
              for d in (pc.f32, pc.tf32) for ftz in (False, True) for fill in ("zero", "nan")]
