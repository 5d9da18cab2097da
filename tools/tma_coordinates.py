"""What do TMA copies do at element coordinates and through converting, NaN-filling and retargeted maps?

And which maps does the driver encode? One JSON line per case, a table last (docs/tma.md section 5).

    PYTHONPATH=. python -m tools tma_coordinates [OUT.jsonl] [--jobs 8] [--only PREFIX ...]
                                                 (default $OUT/tma_coordinates.jsonl; about 1-2 minutes)
    PYTHONPATH=. python -m tools tma_coordinates --dry     (no GPU: build every case, compare the models)

Every case runs in its own child process (``--one NAME``, ``CASE_SECONDS`` each), ``--jobs`` of them at a time,
so a fault, a trap or a hang costs only its own case; the parent writes each case's line as it finishes:
the child's verdict, or ``{"fault": true, "rc": ..., "error": "CUDA_ERROR_...", "message": [the device's printf
lines], "planned": ..., "output": ...}``. ``planned`` says whether pycute promises the case (False: a case outside
its promises, run on purpose, with ``refused`` naming pycute's rule; its verdict ends "(outside pycute's promises:
refused)"). Every planned case should read ``equal`` (``completed`` for a prefetch); the last line counts those
that do not. Run 2 (docs/runs/tma/tma-h200-coords.jsonl, docs/tma.md section 5) settled the rules the planner keeps
now: a
box starting off a 16-byte unit along the contiguous mode faults for every direction, negative rows of a NaN fill
load as the layouts say. Families:

* ``coord/<instr>/<array>/<r>,<c>``: a load (shared image), store or ``add`` reduction (the array after it) or L2
  prefetch (does it complete?) at one element origin: inside, unaligned to the box, on and off the 16-byte unit
  along the contiguous dimension, negative, partly and wholly past the end, near the s32 limits along both
  dimensions, under the 128B swizzle. ``smem`` / ``array``: the bytes against the layouts alone (the fill outside;
  a store/reduce "clips": every in-bounds element written, nothing else); ``*_vs_emulator``: against the emulator,
  for what pycute plans.
* ``type/<map type>/<fill>``: loads through FLOAT32, FLOAT32_FTZ, TFLOAT32, TFLOAT32_FTZ maps of special values
  (ties, carries, subnormals, NaN payloads, then random bits) against the emulator's model, every differing element
  listed with its input; a store of raw values through each type (does a store convert?).
* ``nan/<dtype>/<where>``: the NaN fill of every float map type, for rows partly past the array (inside a 16-byte
  unit), boxes wholly outside, negative rows (planned: run 2 loaded them as the layouts say), and negative columns
  on the 16-byte unit (``neg-unit-col``, ``neg-unit``: planned since run 3 loaded them as the layouts say); the
  columns off the unit (``negative``, ``neg-col``, ``neg-one-col``) fault under the 16-byte rule.
* ``encode``: cuTensorMapEncodeTiled's verdict on boxes up to the largest (total bytes 64 KiB to 256 KiB in several
  shapes: pycute refuses over 227 KiB, which no CTA can land; run 2: the driver took 228 KiB and refused 255 KiB,
  the probes between pin its own limit), extent-1 strides, the converting types with the NaN fill, and every map
  pycute plans in these cases (each must be accepted), beside the planner's own.
* ``smem``: the largest dynamic shared memory a CTA gets (227 KiB on sm_90: the planner's limit).
* ``checked/...``: the checked build (-DPYCUTE_CHECKED) traps with its message on a broken precondition.
* ``grouped`` / ``grouped-checked``: examples/grouped_tma.py, groups at rows 0, 77, 300, 811: both loads and C exact,
  nothing written outside a group.
* ``window-view``: the issue's overlapping view (planned as given since issue 43): the tile at a start past the
  view's mode extent (rows that exist) comes back all zero.
"""
from __future__ import annotations

import argparse
import atexit
import concurrent.futures
import ctypes
import json
import re
import time
from pathlib import Path

import numpy as np

import pycute as pc
from pycute import Layout
from pycute.compile.runtime import Gpu
from pycute.harness.tma import TmaRoundTrip
from pycute.int_tuple import product
from pycute.sim.verify_tma import _expected
from pycute.tensor.values import smem_element_offsets
from tools._common import JsonLines, out_path, run_question

CASE_SECONDS = 120            # each child's own limit (a hang costs this, never the run)
JOBS = 8                      # children at a time (16 cores; each compiles its own kernels)
CAP = 64                      # differing elements listed per image
S32_MAX = (1 << 31) - 1
ARRAYS = {   # name: (dtype, array layout, tile)
    "f32": (pc.f32, Layout((300, 96), (96, 1)), pc.make_smem_tensor(pc.f32, Layout((64, 32), (32, 1)))),
    "bf16sw128": (pc.bf16, Layout((300, 256), (256, 1)), pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")),
    "u8": (pc.u8, Layout((100, 48), (48, 1)), pc.make_smem_tensor(pc.u8, Layout((64, 16), (16, 1)))),
    "u32": (pc.u32, Layout((100, 64), (64, 1)), pc.make_smem_tensor(pc.u32, Layout((32, 64), (64, 1)))),
}
#: Per instruction, the element origins (row, column) run; the column is on the 16-byte unit for some arrays and
#: off it for others (16 B: 4 f32, 8 bf16, 16 u8 or 4 u32 elements), so each case is planned or refused by it.
ORIGINS = {
    "load": [(0, 0), (77, 3), (77, 8), (-5, -3), (-64, -32), (-1000, 5), (290, 90), (1 << 20, 0), (S32_MAX - 40, 0),
             (-(1 << 31), 0), (5, 1), (0, S32_MAX - 20),
             (77, 4), (-5, -8), (290, 88), (-1000, 16), (0, S32_MAX - 15), (0, -(1 << 31))],
    "store": [(0, 0), (77, 8), (290, 88), (1 << 20, 0), (S32_MAX - 40, 0), (77, 3), (77, 1), (-5, 0), (0, -4),
              (5, 16)],
    "reduce": [(0, 0), (77, 8), (77, 3), (-5, 0), (90, 56), (3, 4)],
    "prefetch": [(0, 0), (-5, -3), (1 << 20, 0), (S32_MAX - 40, 0), (-(1 << 31), 0), (-5, -8), (77, 4)],
}
#: Array A's first words in the type/* cases (the rest random bits, seed 0): run 1's 21 (docs/tma-h200-coords-
#: run1.jsonl), then NaNs of each sign and kind, payloads in the kept and the dropped bits, subnormal ties and the
#: largest finite values near a tie.
SPECIALS = [0x3F800FFF, 0x3F801000, 0x3F803000, 0x3F801001, 0xBF803000, 0x3FFFF000, 0x7F7FFFFF, 0x7F800000,
            0xFF800000, 0x7FC00FFF, 0x7F800001, 0xFFFFFFFF, 0x007FFFFF, 0x00000001, 0x80000FFF, 0x00001000,
            0x00800000, 0x80000000, 0x00000000, 0x33800000, 0x3F7FF000,
            0xFF800001, 0xFFC00000, 0x7FC00000, 0x7FC02000, 0x7F801000, 0x7FFFE000, 0x7FFFFFFF, 0x00003000,
            0x00001001, 0x807FFFFF, 0x807FF000, 0x7F7FF000, 0x7F7FEFFF, 0x00800FFF, 0x80801000]
MAP_TYPES = {"f32": (pc.f32, False), "f32_ftz": (pc.f32, True), "tf32": (pc.tf32, False), "tf32_ftz": (pc.tf32, True)}
NAN_CASES = {   # where: (columns of the 40-row array (its rows 32 elements apart), origin)
    "rows-inside-unit": (30, (0, 0)),          # each row ends inside a 16-byte unit (29 for 8-byte elements)
    "outside": (32, (100, 64)),
    "neg-row": (32, (-9, 0)),
    "neg-unit-col": (32, (0, -8)),             # -8 elements: a whole number of 16-byte units for every type
    "negative": (32, (-9, -5)),
    "neg-col": (32, (0, -5)),
    "neg-one-row": (32, (-1, 0)),
    "neg-one-col": (32, (0, -1)),
    "neg-unit": (32, (-9, -8)),
}
NAN_TYPES = {"f16": (pc.f16, False), "bf16": (pc.bf16, False), "f32": (pc.f32, False), "f64": (pc.f64, False),
             "tf32": (pc.tf32, False), "f32_ftz": (pc.f32, True), "tf32_ftz": (pc.tf32, True)}
#: The NaN cases every type runs; the rest (the columns off the unit, which fault by the 16-byte rule, and the
#: brackets around them) run for ``NAN_BRACKETS`` only.
NAN_EVERY_TYPE = ("rows-inside-unit", "outside", "neg-row", "neg-unit-col")
NAN_BRACKETS = ("f32", "bf16")


def _dynamic(kind: str, name: str):
    dtype, layout, tile = ARRAYS[name]
    g = pc.make_global_tensor(dtype, layout)
    at = (pc.dynamic("r"), pc.dynamic("c"))
    if kind == "load" or kind == "prefetch":
        return pc.make_tma_copy(tile, g, origin=at), None
    return pc.make_tma_copy(tile, g, origin=at), pc.make_tma_copy(g, tile, origin=at,
                                                                    reduce="add" if kind == "reduce" else None)


def _nan_load(kind: str, where: str):
    dtype, ftz = NAN_TYPES[kind]
    cols, origin = NAN_CASES[where]
    cols -= cols == 30 and dtype.bits == 64
    g = pc.make_global_tensor(dtype, Layout((40, cols), (32, 1)))
    load = pc.make_tma_copy(pc.make_smem_tensor(dtype, Layout((64, 32), (32, 1))), g,
                            origin=(pc.dynamic("r"), pc.dynamic("c")), oob_fill="nan", ftz=ftz)
    return load, origin


def _origin(text: str) -> tuple[int, int]:
    r, c = (int(v) for v in text.split(","))
    return r, c


def promise(name: str) -> tuple[bool | None, str | None]:
    """``(planned, refused)``: whether pycute promises the case's copy (None: not a copy at coordinates), and the
    rule it breaks; from the plans alone (the parent records it beside a fault)."""
    part = name.split("/")
    if part[0] == "coord":
        load, store = _dynamic(part[1], part[2])
        plan, at = (store or (load.prefetch() if part[1] == "prefetch" else load)), _origin(part[3])
    elif part[0] == "nan":
        plan, at = _nan_load(part[1], part[2])
    else:
        return None, None
    try:
        for p in plan.preconditions:
            p.check(dict(zip(plan.coordinate_names, at))[p.name], "")
    except pc.PlanError as e:
        return False, str(e)
    return True, None


def _tile_elements(load, at: tuple, a: np.ndarray) -> tuple[np.ndarray, dict, dict]:
    """The tile's shared byte offsets (tile order), and the input each element loads, keyed by its shared offset
    and by its offset in the tile image (the element's bits as hex, or "outside the array")."""
    elem = load.elem_bytes
    origin = load.origin_elements(*at)
    modes = [Layout(s, d) for s, d in load.array_modes]
    coords, offsets = _tile_offsets(load)
    by_smem, by_image = {}, {}
    for i, (c, s) in enumerate(zip(coords, offsets.tolist())):
        g = [o + x for o, x in zip(origin, c)]
        inside = all(0 <= x < n for x, n in zip(g, load.array_extents))
        goff = sum(int(m(x)) for m, x in zip(modes, g)) * elem if inside else 0
        value = bytes(a[goff:goff + elem][::-1]).hex() if inside else "outside the array"
        by_smem[s], by_image[i * elem] = value, value
    return offsets, by_smem, by_image


def _tile_offsets(load) -> tuple[list, np.ndarray]:
    """The tile's element coordinates in colex order and each one's shared byte offset, computed at once: the tile's
    extents are its layout's top-level modes, so the k-th coordinate is the layout's 1-D index k (element by element
    through ``element_offset`` this took seconds a case)."""
    tile = load.tile_shape
    coords = list(zip(*(x.tolist() for x in np.unravel_index(np.arange(product(tile)), tile, order="F"))))
    return coords, smem_element_offsets(load.smem).astype(np.int64) * load.elem_bytes


def differences(got: np.ndarray, want: np.ndarray, elem: int, inputs: dict | None = None) -> dict | None:
    """None where equal; else the differing bytes' count, the first one, and each differing element (the first
    ``CAP``) as big-endian hex with the input it loaded."""
    got, want = (np.ascontiguousarray(x).view(np.uint8).reshape(-1) for x in (got, want))
    bad = np.flatnonzero(got != want)
    if not bad.size:
        return None
    starts = sorted({int(b) // elem * elem for b in bad})
    each = [{"at": s, "got": bytes(got[s:s + elem][::-1]).hex(), "want": bytes(want[s:s + elem][::-1]).hex(),
             **({"input": inputs.get(s, "not a tile element")} if inputs is not None else {})} for s in starts[:CAP]]
    return {"count": int(bad.size), "first": int(bad[0]), "got": int(got[bad[0]]), "want": int(want[bad[0]]),
            "elements": len(starts), "each": each}


def _reference(load, store, got: dict, origin) -> tuple[np.ndarray, np.ndarray]:
    """(the shared image's tile bytes, the array after the store) by the layouts alone: the load's fill outside
    the array; every in-bounds element of the hardware's shared tile stored (added) into B, nothing else."""
    coords, offsets = _tile_offsets(load)
    loaded, _ = _expected(load, coords, offsets, got["a"], got["smem"], list(load.origin_elements(*origin)),
                          load.elem_bytes)
    image = np.frombuffer(b"".join(loaded[int(o)] for o in offsets), np.uint8)
    if store is None:
        return image, got["b"]
    _, stored = _expected(store, coords, offsets, got["b"].copy(), got["smem"], list(store.origin_elements(*origin)),
                          load.elem_bytes)
    return image, stored


def round_trip_case(gpu, load, store, origin: tuple, name: str) -> dict:
    """Load (and store) at ``origin`` on the device: the tile against the layouts alone, and against the emulator
    where pycute plans the case."""
    planned, refused = promise(name)
    out: dict = {"origin": list(origin), "planned": planned, **({"refused": refused} if refused else {})}
    rt = TmaRoundTrip(load, store)
    got = rt.launch(gpu, origin)
    elem = load.elem_bytes
    offsets, by_smem, by_image = _tile_elements(load, origin, got["a"])
    image = np.concatenate([got["smem"][o:o + elem] for o in offsets])
    want_image, want_array = _reference(load, store, got, origin)
    out["smem"] = differences(image, want_image, elem, by_image)
    out["spins"] = got["spins"]
    if store is not None:
        out["array_vs_clip"] = differences(got["array"], want_array, elem)
    if planned:
        emu_image, emu_array = rt.emulate(origin)
        out["smem_vs_emulator"] = differences(got["smem"], emu_image, elem, by_smem)
        if store is not None:
            out["array_vs_emulator"] = differences(got["array"], emu_array, elem)
    return out


def coord_case(gpu, name: str) -> dict:
    _, kind, array, at = name.split("/")
    origin = _origin(at)
    load, store = _dynamic(kind, array)
    if kind == "prefetch":
        planned, refused = promise(name)
        return {"kind": kind, "array": array, "origin": list(origin), "planned": planned,
                **({"refused": refused} if refused else {}), **prefetch_run(gpu, load.prefetch(), origin)}
    return {"kind": kind, "array": array, **round_trip_case(gpu, load, store, origin, name)}


def prefetch_run(gpu, plan, origin) -> dict:
    src = plan.cuda("pf") + 'extern "C" __global__ void k(const void* map, int r, int c) { if (threadIdx.x == 0) ' \
                            '{ pycute_tensormap_acquire(map); pf(map, r, c); } }'
    from pycute.compile import compile_cuda
    from pycute.compile.runtime import tensor_map_bytes
    kernel = gpu.kernel(compile_cuda(src, arch="sm_90a"), "k")
    d = gpu.upload(np.zeros(plan.array_bytes, np.uint8))
    m = gpu.upload(np.frombuffer(tensor_map_bytes(plan.tensor_map.encode(int(d.handle))), np.uint8))
    gpu.launch(kernel, m, np.int32(origin[0]), np.int32(origin[1]), grid=1, block=32)
    return {"completed": True}


class _Arrays(TmaRoundTrip):
    """A round trip whose array A holds the special f32 patterns (then random bits) and B a marker."""

    def arrays(self, seed: int = 0):
        a, b = super().arrays(seed)
        words = a.view("<u4")
        words[:len(SPECIALS)] = SPECIALS
        return a, np.full_like(b, 0x5A)


def _type_load(kind: str, fill: str):
    dtype, ftz = MAP_TYPES[kind]
    g = pc.make_global_tensor(dtype, Layout((40, 64), (64, 1)))
    tile = pc.make_smem_tensor(dtype, Layout((64, 32), (32, 1)))
    return pc.make_tma_copy(tile, g, oob_fill=fill, ftz=ftz), pc.make_tma_copy(g, tile, ftz=ftz)


def type_case(gpu, kind: str, fill: str) -> dict:
    load, store = _type_load(kind, fill)
    rt = _Arrays(load, None)
    out: dict = {"map": kind, "data_type": load.tensor_map.data_type, "fill": fill}
    for tile_index in ((0, 0), (0, 1)):
        r = rt.run(gpu, tile_index)
        _, by_smem, _ = _tile_elements(load, tile_index, rt.arrays(0)[0])
        out[f"smem_{tile_index[0]}{tile_index[1]}"] = differences(*r["smem"], 4, by_smem)
    out["store"] = store_converts(gpu, store, rt.arrays(0)[0])
    return out


def store_converts(gpu, store, raw: np.ndarray) -> str:
    """``raw`` written to shared memory by threads, TMA-stored through the map: ``"unchanged"``, ``"converted"``
    (as the load's model converts) or ``"other"``."""
    from pycute.compile import compile_cuda
    from pycute.compile.runtime import tensor_map_bytes
    from pycute.sim.executors.tma import convert_loaded
    n = 40 * 64 * 4
    src = store.cuda("st") + f"""
extern "C" __global__ void k(const void* map, const unsigned char* raw) {{
  extern __shared__ unsigned char buf_raw[];
  const unsigned base = (pycute_smem_address(buf_raw) + 1023u) & ~1023u;
  unsigned char* buf = buf_raw + (base - pycute_smem_address(buf_raw));
  for (unsigned i = threadIdx.x; i < {64 * 32 * 4}u; i += blockDim.x)
    buf[i] = i < {40 * 128}u ? raw[(i / 128u) * 256u + i % 128u] : 0;
  pycute_fence_proxy_async_shared();
  __syncthreads();
  if (threadIdx.x == 0) {{ pycute_tensormap_acquire(map); st(map, base, 0, 0); pycute_bulk_wait_group<0>(); }}
}}"""
    kernel = gpu.kernel(compile_cuda(src, arch="sm_90a"), "k")
    d_raw, d_b = gpu.upload(raw[:n]), gpu.upload(np.zeros(n, np.uint8))
    m = gpu.upload(np.frombuffer(tensor_map_bytes(store.tensor_map.encode(int(d_b.handle))), np.uint8))
    gpu.launch(kernel, m, d_raw, grid=1, block=128, dynamic_smem=64 * 32 * 4 + 1024)
    got = gpu.download(d_b, np.uint8, n).reshape(40, 256)[:, :128]
    want = raw[:n].reshape(40, 256)[:, :128]
    if np.array_equal(got, want):
        return "unchanged"
    converted = convert_loaded(want.reshape(-1, 4), store.tensor_map.data_type).reshape(got.shape)
    return "converted" if np.array_equal(got, converted) else "other"


def nan_case(gpu, name: str) -> dict:
    _, kind, where = name.split("/")
    load, origin = _nan_load(kind, where)
    return {"dtype": kind, "where": where, "data_type": load.tensor_map.data_type,
            **round_trip_case(gpu, load, None, origin, name)}


def _box_probes() -> dict:
    """Boxes that bracket the driver's largest (run 1: 256 KiB refused in three shapes; run 2: 228 KiB taken, 255
    KiB refused; pycute refuses over 227 KiB, a CTA's shared memory): total bytes from 64 KiB to 256 KiB, 2-D f32
    (every 4 KiB from 228 to 252 KiB), 3-D u8, 128B-swizzled bf16, f64."""
    from pycute.arch.sm90.tma import TMA_SWIZZLES
    from pycute.copy.tma.params import TensorMapParams
    none, sw128 = TMA_SWIZZLES[0], TMA_SWIZZLES[3]
    probes = {f"box 256x{n} f32 ({n} KiB)": TensorMapParams("f32", 7, (1024, 1024), (4096,), (256, n), (1, 1), none)
              for n in (64, 128, 129, 192, 227, 228, 232, 236, 240, 244, 248, 252, 255)}
    probes.update({f"box 256x256x{k} u8 ({64 * k} KiB)": TensorMapParams("u8", 0, (256, 256, 4), (256, 65536),
                                                                        (256, 256, k), (1, 1, 1), none)
                   for k in (1, 2, 3)})
    probes.update({f"box 64x256x{k} bf16 128B ({32 * k} KiB)": TensorMapParams("bf16", 9, (64, 256, 8), (128, 32768),
                                                                               (64, 256, k), (1, 1, 1), sw128)
                   for k in (4, 7, 8)})
    probes.update({f"box 32x256x{k} f64 ({64 * k} KiB)": TensorMapParams("f64", 8, (32, 256, 4), (256, 65536),
                                                                        (32, 256, k), (1, 1, 1), none)
                   for k in (3, 4)})
    return probes


def encode_case(gpu) -> dict:
    """The driver's verdict on maps at the edges, beside the planner's (check_map), and on every planned map."""
    from pycute.arch.sm90.tma import TMA_SWIZZLES
    from pycute.copy.tma.params import TensorMapParams
    from pycute.copy.tma.rules import check_map
    buf = gpu.upload(np.zeros(1 << 22, np.uint8))
    none, sw128 = TMA_SWIZZLES[0], TMA_SWIZZLES[3]
    probes = {
        "box 256x256 f32 (256 KiB)": TensorMapParams("f32", 7, (1024, 1024), (4096,), (256, 256), (1, 1), none),
        "box 256x256x4 u8": TensorMapParams("u8", 0, (256, 256, 4), (256, 65536), (256, 256, 4), (1, 1, 1), none),
        "box 256^5 u8": TensorMapParams("u8", 0, (256,) * 5, (256, 1 << 16, 1 << 24, 1 << 32), (256,) * 5, (1,) * 5,
                                        none),
        **_box_probes(),
        "box0 256 f64 (2 KiB rows)": TensorMapParams("f64", 8, (1024, 4), (8192,), (256, 2), (1, 1), none),
        "box0 257 u8": TensorMapParams("u8", 0, (1024, 4), (1024,), (257, 2), (1, 1), none),
        "extent-1 dim stride 4 B": TensorMapParams("f32", 7, (64, 1), (4,), (64, 1), (1, 1), none),
        "extent-1 dim stride 12 B": TensorMapParams("f32", 7, (64, 32, 1), (256, 12), (64, 8, 1), (1, 1, 1), none),
        "extent-1 dim stride 0": TensorMapParams("f32", 7, (64, 1), (0,), (64, 1), (1, 1), none),
        "extent-1 dim stride 256 (pycute's)": TensorMapParams("f32", 7, (64, 1), (256,), (64, 1), (1, 1), none),
        "stride 0 on a 32-long dim": TensorMapParams("f32", 7, (64, 32), (0,), (64, 8), (1, 1), none),
        "stride 2^40 - 16": TensorMapParams("u8", 0, (16, 2), ((1 << 40) - 16,), (16, 2), (1, 1), none),
        "dims 2^32": TensorMapParams("u8", 0, (1 << 32, 1), (1 << 32,), (16, 1), (1, 1), none),
    }
    for code, name in ((10, "f32_ftz"), (11, "tf32"), (12, "tf32_ftz")):
        for fill in (0, 1):
            probes[f"type {name} fill {fill}"] = TensorMapParams("f32", code, (1024, 64), (4096,), (32, 64), (1, 1),
                                                                  sw128, oob_fill=fill)
    out: dict = {}
    for name, params in probes.items():
        try:
            check_map(params, "")
            planner = True
        except pc.PlanError as e:
            planner = str(e).split(";")[0]
        out[name] = {"driver": _encodes(params, buf), "planner": planner, "box_bytes": params.box_bytes}
    planned = [p.tensor_map for kind in ("load", "store") for a in ARRAYS for p in _dynamic(kind, a) if p is not None]
    planned += [p.tensor_map for t in MAP_TYPES for f in ("zero", "nan") for p in _type_load(t, f)]
    planned += [_nan_load(t, "outside")[0].tensor_map for t in NAN_TYPES]
    out["every planned map"] = {"driver": all(_encodes(p, buf) is True for p in planned), "maps": len(planned)}
    return out


def _encodes(params, buf) -> bool | str:
    try:
        params.encode(int(buf.handle))
        return True
    except pc.CompileError as e:
        code = re.search(r"CUDA_ERROR_[A-Z_]+", str(e))
        return f"refused ({code.group(0) if code else str(e)[:80]})"


def smem_case(gpu) -> dict:
    from cuda.bindings import driver
    from pycute.arch.sm90.smem import SMEM_MAX_BYTES
    from pycute.compile import compile_cuda
    attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    _, dev = driver.cuDeviceGet(0)
    _, optin = driver.cuDeviceGetAttribute(attr, dev)
    k = gpu.kernel(compile_cuda('extern "C" __global__ void k(unsigned char* o) { extern __shared__ unsigned char s[];'
                                ' s[threadIdx.x] = 1; __syncthreads(); o[threadIdx.x] = s[threadIdx.x]; }',
                                arch="sm_90a"), "k")
    o = gpu.upload(np.zeros(32, np.uint8))
    verdicts = {}
    for n in (SMEM_MAX_BYTES, SMEM_MAX_BYTES + 1):
        try:
            gpu.launch(k, o, grid=1, block=32, dynamic_smem=n)
            verdicts[n] = True
        except Exception as e:                       # noqa: BLE001 - the driver's refusal is the evidence
            verdicts[n] = str(e)[:80]
    return {"optin_bytes": int(optin), "pycute_limit": SMEM_MAX_BYTES, "launch": verdicts}


def checked_case(gpu, which: str) -> dict:
    """A checked build run with a coordinate that breaks its precondition: the kernel should print the rule and
    trap (the child records the device's error; the parent adds the printed lines)."""
    print("pycute-probe: launching", flush=True)
    try:
        if which == "split-k":
            g = pc.make_global_tensor(pc.bf16, Layout((300, 256), (256, 1)))
            load = pc.make_tma_copy(pc.kmajor_smem_tensor(pc.bf16, 128, 128, "128B"), g,
                                    origin=(pc.dynamic("r"), pc.dynamic("c")))
            TmaRoundTrip(load, None).launch(gpu, (0, 65), checked=True)
        else:                                   # a group of no rows: the retarget's "rows >= 1"
            from examples.grouped_tma import GroupedTma, Work
            GroupedTma().run(gpu, checked=True, work=[Work(811, 0, 0, 0)])
    except _CpuGpu.Stop:
        raise
    except Exception as e:                      # noqa: BLE001 - the device's error is the verdict
        code = re.search(r"CUDA_ERROR_[A-Z_]+", str(e))
        if code is None:
            raise
        return {"trapped": True, "error": code.group(0)}
    return {"trapped": False}


def grouped_case(gpu, checked: bool) -> dict:
    from examples.grouped_tma import GroupedTma
    r = GroupedTma().run(gpu, checked=checked)
    return {"c": differences(*r["c"], 1), "one": [d for d in (differences(*x, 1) for x in r["one"]) if d],
            "group": [d for d in (differences(*x, 1) for x in r["group"]) if d], "items": len(r["one"])}


def window_case(gpu) -> dict:
    """The overlapping view (start row, row, k), planned as given (issue 43): the tile at a start past the start
    mode's 897 rows, whose rows 939..1023 exist."""
    view = pc.make_global_tensor(pc.bf16, Layout((897, 128, 128), (128, 128, 1)))
    load = pc.make_tma_copy(pc.make_smem_tensor(pc.bf16, Layout((1, 128, 64), (0, 64, 1))), view,
                            origin=(pc.dynamic("s"), 0, 0))
    got = TmaRoundTrip(load, None).launch(gpu, (939,))
    rows = got["a"].reshape(-1, 256)
    tile = got["smem"][:128 * 128].reshape(128, 128)
    return {"all_zero": bool(not tile.any()), "rows_exist": bool(rows[939:1024].any()),
            "first_row_equals_array_row_939": bool(np.array_equal(tile[0], rows[939, :128]))}


def cases() -> list[str]:
    out = [f"coord/{k}/{a}/{o[0]},{o[1]}" for k, arrays in (("load", ("f32", "bf16sw128", "u8")),
                                                           ("store", ("f32", "bf16sw128")), ("reduce", ("u32",)),
                                                           ("prefetch", ("f32",)))
           for a in arrays for o in ORIGINS[k]]
    out += [f"type/{t}/{f}" for t in MAP_TYPES for f in ("zero", "nan")]
    out += [f"nan/{t}/{w}" for t in NAN_TYPES for w in NAN_CASES if w in NAN_EVERY_TYPE or t in NAN_BRACKETS]
    return out + ["encode", "smem", "checked/split-k", "checked/grouped-bad", "grouped", "grouped-checked",
                  "window-view"]


def run_case(name: str, gpu) -> dict:
    part = name.split("/")
    if part[0] == "coord":
        return coord_case(gpu, name)
    if part[0] == "type":
        return type_case(gpu, part[1], part[2])
    if part[0] == "nan":
        return nan_case(gpu, name)
    return {"encode": lambda: encode_case(gpu), "smem": lambda: smem_case(gpu),
            "checked": lambda: checked_case(gpu, part[-1]), "grouped": lambda: grouped_case(gpu, False),
            "grouped-checked": lambda: grouped_case(gpu, True), "window-view": lambda: window_case(gpu)}[part[0]]()


def _child(name: str, cpu: bool) -> None:
    """One case in this process, its JSON line on stdout (with ``cpu``: built up to its launch, no device)."""
    libc = ctypes.CDLL(None)
    atexit.register(lambda: libc.fflush(None))      # the device's printf lines reach the pipe even on a fault
    if cpu and name == "smem":
        row = {"case": name, "cpu": "a device attribute: nothing to build"}
    elif cpu:
        try:
            run_case(name, _CpuGpu())
            row = {"case": name, "cpu": "completed without a launch"}
        except _CpuGpu.Stop:
            row = {"case": name, "cpu": "built up to its launch"}
        except pc.CompileError as e:
            if "needs the CUDA driver" not in str(e):
                raise
            row = {"case": name, "cpu": "built up to its tensor map's encoding"}
    else:
        from pycute.compile import runtime
        row = {"case": name, **run_case(name, runtime.Gpu())}
    print(json.dumps(row), flush=True)


def run_one(name: str, cpu: bool = False, seconds: int = CASE_SECONDS) -> dict:
    """``name`` in its own child process: its line, or a fault record (rc, the CUDA error, the device's printed
    lines, whether pycute promises the case, the output's tail)."""
    run = run_question("tma_coordinates", ["--one", name] + (["--cpu"] if cpu else []), seconds)
    output, rc = run.stdout + run.stderr, ("timeout" if run.rc is None else run.rc)
    row = next((json.loads(x) for x in output.splitlines() if x.startswith('{"case"')), None)
    message = [x for x in output.splitlines() if x.startswith("pycute:") and "breaks" in x][:4]
    if row is None or rc != 0:
        planned, refused = promise(name)
        code = re.search(r"CUDA_ERROR_[A-Z_]+", output)
        row = {**(row or {}), "case": name, "fault": True, "rc": rc, "error": code.group(0) if code else None,
               "launched": "pycute-probe: launching" in output, "planned": planned,
               **({"refused": refused} if refused else {}), "output": output[-1500:]}
    if message:
        row["message"] = message
    row["seconds"] = round(run.seconds, 1)
    return row


def run_all(path: Path, names: list[str], jobs: int = JOBS, cpu: bool = False) -> list[dict]:
    """Every case in its own child, ``jobs`` at a time; each line written to ``path`` as its case ends."""
    with JsonLines(path) as out, concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in concurrent.futures.as_completed([pool.submit(run_one, n, cpu) for n in names]):
            out.write(future.result())
    order = {n: k for k, n in enumerate(names)}
    return sorted(out.rows, key=lambda r: order[r["case"]])


def _diff_word(d: dict | None) -> str:
    return "" if d is None else f" ({d['elements']} elements, {d['count']} B)"


def verdict(row: dict) -> str:
    """One line per case for the table."""
    name = row["case"]
    if "cpu" in row:
        return row["cpu"]
    if row.get("fault"):
        if name.startswith("checked/"):
            return "trapped, message seen" if row.get("message") else f"FAULT rc={row['rc']} {row.get('error')}"
        how = f"FAULT rc={row['rc']} {row.get('error') or ''}".rstrip()
        if row.get("planned") is False:
            return f"{how} (outside pycute's promises: refused)"
        return f"{how} (within pycute's promises)" if row.get("planned") else how
    if name.startswith("checked/"):
        if row.get("trapped"):
            return f"trapped ({row.get('error')}), message {'seen' if row.get('message') else 'NOT seen'}"
        return "NO TRAP"
    if name.startswith(("coord/", "nan/")):
        if row.get("completed"):
            return "completed" + ("" if row.get("planned") else " (outside pycute's promises)")
        keys = [k for k in ("smem_vs_emulator", "array_vs_emulator") if k in row]
        if keys:
            bad = [k for k in keys if row[k] is not None]
            return "equal" if not bad else "DIFFERS from the emulator" + _diff_word(row[bad[0]])
        parts = ["tile as the layouts say" if row.get("smem") is None else "tile DIFFERS" + _diff_word(row["smem"])]
        if "array_vs_clip" in row:
            parts.append("clip" if row["array_vs_clip"] is None else "not clip" + _diff_word(row["array_vs_clip"]))
        return ", ".join(parts) + " (outside pycute's promises)"
    if name.startswith("type/"):
        bad = [k for k in ("smem_00", "smem_01") if row.get(k)]
        word = "equal" if not bad else "DIFFERS from the emulator" + _diff_word(row[bad[0]])
        return f"{word}, store {row['store']}"
    if name in ("grouped", "grouped-checked"):
        return "exact" if row["c"] is None and not row["one"] and not row["group"] else "DIFFERS"
    if name == "window-view":
        return f"all-zero tile: {row['all_zero']} (rows exist: {row['rows_exist']})"
    if name == "smem":
        return f"opt-in {row['optin_bytes']} B, pycute {row['pycute_limit']} B, launches {row['launch']}"
    if name == "encode":
        return encode_verdict(row)
    return "?"


def encode_verdict(row: dict) -> str:
    """Agreement of the driver and the planner on every probed map, where the planner refusing a box over a CTA's
    shared memory that the driver still encodes is agreement by design (such a box cannot land)."""
    from pycute.arch.sm90.tma import MAX_BOX_BYTES
    probes = {k: v for k, v in row.items() if isinstance(v, dict) and "planner" in v}
    stricter = [k for k, v in probes.items() if v["driver"] is True and v["planner"] is not True
                and v.get("box_bytes", 0) > MAX_BOX_BYTES]
    bad = [k for k, v in probes.items() if (v["driver"] is True) != (v["planner"] is True) and k not in stricter]
    if not row.get("every planned map", {}).get("driver", True):
        bad.append("every planned map")
    if bad:
        return f"DISAGREE on {bad}"
    boxes = f"{len(stricter)} box{'es' if len(stricter) > 1 else ''}"
    return "driver and planner agree" + (f" (pycute alone refuses {boxes} over a CTA's shared memory)"
                                         if stricter else "")


def within_promises(rows: list[dict]) -> list[str]:
    """The cases pycute plans whose verdict is not what it promises (equal, completed, exact, agree, trapped)."""
    good = ("equal", "completed", "exact", "driver and planner agree", "trapped", "opt-in", "all-zero tile: True",
            "built up to", "completed without")
    return [r["case"] for r in rows if r.get("planned") is not False and not verdict(r).startswith(good)]


def table(rows: list[dict]) -> None:
    width = max(len(r["case"]) for r in rows)
    print(f"{'case':<{width}}  verdict")
    for r in rows:
        print(f"{r['case']:<{width}}  {verdict(r)}")
    broken = within_promises(rows)
    refused = sum(r.get("planned") is False for r in rows)
    print(f"\nwithin pycute's promises: {len(rows) - refused} cases, "
          + ("every one as promised" if not broken else f"{len(broken)} NOT as promised: {broken}")
          + f"; outside them (refused, run on purpose): {refused}")
    enc = next((r for r in rows if r["case"] == "encode" and not r.get("fault")), None)
    if enc:
        print("\nencodes (driver / planner):")
        for k, v in enc.items():
            if isinstance(v, dict):
                print(f"  {k:<38} {v.get('driver')!s:<40} {v.get('planner', v.get('maps'))!s:.70}")


class _CpuGpu(Gpu):
    """The --check stand-in: kernels are fetched by entry name; a launch stops the case (no device here)."""

    class Stop(Exception):
        pass

    def __init__(self) -> None:              # no driver is touched
        pass

    def upload(self, array):
        return type("Buffer", (), {"handle": 0x1000_0000, "array": array})()

    def kernel(self, compiled, entry):
        assert f".entry {entry}" in compiled.ptx, entry
        return entry

    def launch(self, *args, **kwargs):
        raise self.Stop()


def check_on_cpu() -> None:
    """Every case built up to its launch (plans, kernels compiled for sm_90a), and the probe's own reference model
    held to the emulator on every coordinate case pycute plans."""
    gpu = _CpuGpu()
    for name in cases():
        if name == "smem":                        # a device attribute: nothing to build
            continue
        try:
            run_case(name, gpu)
        except (_CpuGpu.Stop, pc.CompileError) as e:
            if isinstance(e, pc.CompileError) and "needs the CUDA driver" not in str(e):
                raise
        if name.startswith("type/"):              # the store half stops at its own launch
            _, store = _type_load(*name.split("/")[1:])
            try:
                store_converts(gpu, store, np.zeros(40 * 64 * 4, np.uint8))
            except (_CpuGpu.Stop, pc.CompileError) as e:
                assert isinstance(e, _CpuGpu.Stop) or "needs the CUDA driver" in str(e), e
        if name.startswith(("coord/", "nan/")) and name.split("/")[1] != "prefetch" and promise(name)[0]:
            if name.startswith("coord/"):
                load, store = _dynamic(*name.split("/")[1:3])
                origin = _origin(name.split("/")[3])
            else:
                (load, origin), store = _nan_load(*name.split("/")[1:]), None
            rt = TmaRoundTrip(load, store)
            a, b = rt.arrays(0)
            image, array_after = rt.emulate(origin)
            got = {"smem": image, "array": array_after, "a": a, "b": b}
            want_image, want_array = _reference(load, store, got, origin)
            _, offsets = _tile_offsets(load)
            got_image = np.concatenate([image[o:o + load.elem_bytes] for o in offsets])
            assert np.array_equal(got_image, want_image), name
            assert np.array_equal(array_after, want_array), name
    print(f"{len(cases())} cases built; the reference model equals the emulator on the planned ones")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools tma_coordinates", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/tma_coordinates.jsonl)")
    parser.add_argument("--dry", action="store_true", help="no GPU: build every case up to its launch")
    parser.add_argument("--one", metavar="NAME", help="run one case in this process (what each child does)")
    parser.add_argument("--cpu", action="store_true", help="with --one or a run: stop each case at its launch")
    parser.add_argument("--jobs", type=int, default=JOBS, help="children at a time")
    parser.add_argument("--only", action="append", default=[], help="cases whose name starts so (repeatable)")
    args = parser.parse_args(argv)
    if args.one:
        _child(args.one, args.cpu)
        return 0
    if args.dry:
        check_on_cpu()
        return 0
    names = [n for n in cases() if not args.only or n.startswith(tuple(args.only))]
    path = out_path("tma_coordinates", args.out)
    start = time.monotonic()
    rows = run_all(path, names, args.jobs, args.cpu)
    table(rows)
    print(f"\n{len(names)} cases in {time.monotonic() - start:.0f} s; wrote {path}")
    return 1 if within_promises(rows) else 0
