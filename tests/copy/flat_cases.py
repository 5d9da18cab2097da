"""cp.async, bulk and DSMEM copies by shape, shared by the CPU tests and the H200 runs (tests/gpu/flat_probe.py):
1-, 2-, 4- and 8-byte elements, plain and swizzled shared layouts on either side, partial tiles (cp.async), arrays
whose strides TMA refuses, clusters of 2 and 4. Each case: a name, the tensors, options, and what to run."""
import pycute as pc
from pycute import Layout


def g(dtype, shape, stride):
    return pc.make_global_tensor(dtype, Layout(shape, stride))


def s(dtype, shape, stride):
    return pc.make_smem_tensor(dtype, Layout(shape, stride))


def sw(dtype, rows, cols, mode):
    return pc.kmajor_smem_tensor(dtype, rows, cols, mode)


# (name, global array, shared tile, make_cp_async_copy options, tile indices: first, last (partial), past the end)
CP_ASYNC = [
    ("u8-16B", g(pc.u8, (100, 48), (48, 1)), s(pc.u8, (32, 32), (32, 1)), {}, [(0, 0), (3, 1), (4, 2)]),
    ("u8-rows-36B-4B", g(pc.u8, (40, 36), (36, 1)), s(pc.u8, (16, 32), (32, 1)), {"threads": 64},
     [(0, 0), (2, 1), (3, 2)]),
    ("f16-rows-72B-tma-refuses", g(pc.f16, (100, 36), (36, 1)), s(pc.f16, (64, 32), (32, 1)), {},
     [(0, 0), (1, 1), (2, 2)]),
    ("bf16-kmajor-128B", g(pc.bf16, (300, 100), (104, 1)), sw(pc.bf16, 64, 64, "128B"), {}, [(0, 0), (4, 1), (5, 2)]),
    ("bf16-kmajor-64B-ca-l2", g(pc.bf16, (72, 40), (48, 1)), sw(pc.bf16, 64, 32, "64B"),
     {"cache": "ca", "l2_prefetch": 128}, [(0, 0), (1, 1), (2, 2)]),
    ("bf16-kmajor-32B-32thr", g(pc.bf16, (70, 16), (16, 1)), sw(pc.bf16, 64, 16, "32B"), {"threads": 32},
     [(0, 0), (1, 0), (2, 1)]),
    ("f32-stride-37-transposed-arrive", g(pc.f32, (64, 37), (37, 1)), s(pc.f32, (32, 32), (1, 32)),
     {"threads": 96, "completion": "arrive"}, [(0, 0), (1, 1), (2, 2)]),
    ("f64-16B", g(pc.f64, (50, 20), (20, 1)), s(pc.f64, (16, 16), (16, 1)), {"threads": 64},
     [(0, 0), (3, 1), (4, 2)]),
    ("f32-3d", g(pc.f32, (3, 20, 24), (480, 24, 1)), s(pc.f32, (2, 8, 16), (128, 16, 1)), {},
     [(0, 0, 0), (1, 2, 1), (2, 3, 2)]),
    ("f32-mn-major-array", g(pc.f32, (40, 24), (1, 40)), s(pc.f32, (32, 8), (1, 32)), {"threads": 64},
     [(0, 0), (1, 2), (2, 3)]),
    # the array's end is not whole vectors: its last vector is narrower copies (CpAsyncTail), so that no source
    # window leaves the allocation (compute-sanitizer memcheck); 2 B and 1 B past the last 4-byte word
    ("bf16-1d-odd-residue", g(pc.bf16, 1001, 1), s(pc.bf16, 256, 1), {"threads": 32}, [(0,), (3,), (4,)]),
    ("u8-rows-45B-arrive-residue", g(pc.u8, (40, 45), (48, 1)), s(pc.u8, (16, 48), (48, 1)),
     {"threads": 64, "completion": "arrive"}, [(0, 0), (2, 0), (3, 1)]),
]

# (name, global array, shared tile, tile indices: first and last)
BULK = [
    ("bf16-whole-tile-1-chunk", g(pc.bf16, (256, 64), (64, 1)), s(pc.bf16, (64, 64), (64, 1)), [(0, 0), (3, 0)]),
    ("f32-128B-rows", g(pc.f32, (128, 96), (96, 1)), s(pc.f32, (32, 32), (32, 1)), [(0, 0), (3, 2)]),
    ("u8-kmajor-128B-swizzled", g(pc.u8, (128, 256), (256, 1)), sw(pc.u8, 64, 128, "128B"), [(0, 0), (1, 1)]),
    ("f32-1d", g(pc.f32, 4096, 1), s(pc.f32, 1024, 1), [(0,), (3,)]),
    ("i64-2d", g(pc.i64, (32, 16), (16, 1)), s(pc.i64, (8, 16), (16, 1)), [(0, 0), (3, 0)]),
    ("u16-padded-rows", g(pc.u16, (64, 40), (48, 1)), s(pc.u16, (16, 40), (40, 1)), [(0, 0), (3, 0)]),
]

# (name, source tile, destination tile, cluster sizes)
DSMEM = [
    ("bf16-plain", s(pc.bf16, (64, 64), (64, 1)), s(pc.bf16, (64, 64), (64, 1)), (2, 4)),
    ("bf16-128B-to-plain", sw(pc.bf16, 64, 64, "128B"), s(pc.bf16, (64, 64), (64, 1)), (2, 4)),
    ("f32-plain-to-64B", s(pc.f32, (32, 16), (16, 1)), sw(pc.f32, 32, 16, "64B"), (2,)),
    ("u8-32B-to-32B", sw(pc.u8, 64, 32, "32B"), sw(pc.u8, 64, 32, "32B"), (4,)),
    ("f64-plain", s(pc.f64, (16, 16), (16, 1)), s(pc.f64, (16, 16), (16, 1)), (4,)),
    ("u16-128B-to-128B", sw(pc.u16, 32, 64, "128B"), sw(pc.u16, 32, 64, "128B"), (2,)),
    ("u8-plain-to-128B", s(pc.u8, (32, 128), (128, 1)), sw(pc.u8, 32, 128, "128B"), (4,)),
]
