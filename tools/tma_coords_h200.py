"""Settle on the H200 what TMA does at element coordinates, through converting and NaN-filling maps, through maps
retargeted on the device, and what the driver encodes; one JSON line per case, a table last.

    PYTHONPATH=. python3 tools/tma_coords_h200.py [OUT.jsonl]      (default $OUT/tma_coords_h200.jsonl)
    PYTHONPATH=. python3 tools/tma_coords_h200.py --check          (CPU: build every case, compare the models)

Cases run in child processes (``--cases A,B,...``, 300 s each): the ones pycute plans together, each one outside
its promises (forced stores, extreme coordinates, traps) alone, so a fault or a trap kills only its own case; the
parent records each verdict, or ``{"fault": true, "rc": ..., "output": ...}`` for the case a child died in (the
rest of a batch then reruns). Families:

* ``coord/<instr>/<array>/<origin>``: a load (shared image), store or ``add`` reduction (the array after it) or L2
  prefetch (does it fault?) at one element origin: inside, unaligned to the box and to 16 B along the contiguous
  dimension, negative, partly and wholly past the end, near the s32 limits, under the 128B swizzle. Verdicts:
  ``equal`` (the bytes the emulator says, for what pycute plans), ``clip`` (a store/reduce outside pycute's
  promises: the bytes equal "every in-bounds element written, nothing else"), or the differing bytes.
* ``type/<map type>/<fill>``: loads through FLOAT32, FLOAT32_FTZ, TFLOAT32, TFLOAT32_FTZ maps of special values
  (ties, carries, subnormals, NaN payloads), the image against the emulator's rounding/flush model; a store of raw
  values through each type (does a store convert?).
* ``nan/<dtype>/<where>``: the NaN fill of every float map type, for rows partly past the array (inside a 16-byte
  unit), negative origins and wholly outside boxes.
* ``encode``: cuTensorMapEncodeTiled's verdict on boxes up to the largest, extent-1 strides, the converting types
  with the NaN fill, and every map pycute plans in these cases (each must be accepted), beside the planner's own.
* ``smem``: the largest dynamic shared memory a CTA gets (227 KiB on sm_90: the planner's limit).
* ``checked/...``: the checked build (-DPYCUTE_CHECKED) traps with its message on a broken precondition.
* ``grouped`` / ``grouped-checked``: examples/grouped_tma.py, groups at rows 0, 77, 300, 811: both loads and C exact,
  nothing written outside a group.
* ``window-view``: the issue's overlapping view forced past pycute's refusal: the tile at a start past the view's
  mode extent (rows that exist) comes back all zero.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pycute as pc  # noqa: E402
from pycute import Layout  # noqa: E402
from pycute.compile.runtime import Gpu  # noqa: E402
from pycute.harness.tma import TmaRoundTrip  # noqa: E402
from pycute.int_tuple import idx2crd, product  # noqa: E402
from pycute.sim.verify_tma import _expected  # noqa: E402

S32_MAX = (1 << 31) - 1
ARRAYS = {   # name: (dtype, array layout, tile)
    "f32": (pc.f32, Layout((300, 96), (96, 1)), pc.make_smem_tensor(pc.f32, Layout((64, 32), (32, 1)))),
    "bf16sw128": (pc.bf16, Layout((300, 256), (256, 1)), pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")),
    "u8": (pc.u8, Layout((100, 48), (48, 1)), pc.make_smem_tensor(pc.u8, Layout((64, 16), (16, 1)))),
    "u32": (pc.u32, Layout((100, 64), (64, 1)), pc.make_smem_tensor(pc.u32, Layout((32, 64), (64, 1)))),
}
ORIGINS = {
    "load": [(0, 0), (77, 3), (77, 8), (-5, -3), (-64, -32), (-1000, 5), (290, 90), (1 << 20, 0), (S32_MAX - 40, 0),
             (-(1 << 31), 0), (5, 1), (0, S32_MAX - 20)],
    "store": [(0, 0), (77, 8), (290, 88), (1 << 20, 0), (S32_MAX - 40, 0), (77, 3), (77, 1), (-5, 0), (0, -4)],
    "reduce": [(0, 0), (77, 8), (77, 3), (-5, 0), (90, 56)],
    "prefetch": [(0, 0), (-5, -3), (1 << 20, 0), (S32_MAX - 40, 0), (-(1 << 31), 0)],
}
SPECIALS = [0x3F800FFF, 0x3F801000, 0x3F803000, 0x3F801001, 0xBF803000, 0x3FFFF000, 0x7F7FFFFF, 0x7F800000,
            0xFF800000, 0x7FC00FFF, 0x7F800001, 0xFFFFFFFF, 0x007FFFFF, 0x00000001, 0x80000FFF, 0x00001000,
            0x00800000, 0x80000000, 0x00000000, 0x33800000, 0x3F7FF000]
MAP_TYPES = {"f32": (pc.f32, False), "f32_ftz": (pc.f32, True), "tf32": (pc.tf32, False), "tf32_ftz": (pc.tf32, True)}


def _dynamic(kind: str, name: str):
    dtype, layout, tile = ARRAYS[name]
    g = pc.make_global_tensor(dtype, layout)
    at = (pc.dynamic("r"), pc.dynamic("c"))
    if kind == "load" or kind == "prefetch":
        return pc.make_tma_copy(tile, g, origin=at), None
    return pc.make_tma_copy(tile, g, origin=at), pc.make_tma_copy(g, tile, origin=at,
                                                                    reduce="add" if kind == "reduce" else None)


def _first_difference(got: np.ndarray, want: np.ndarray) -> dict | None:
    bad = np.flatnonzero(got != want)
    return None if not bad.size else {"count": int(bad.size), "first": int(bad[0]), "got": int(got[bad[0]]),
                                      "want": int(want[bad[0]])}


def _reference(load, store, got: dict, origin) -> tuple[np.ndarray, np.ndarray]:
    """(the shared image's tile bytes, the array after the store) by the layouts alone: the load's fill outside
    the array; every in-bounds element of the hardware's shared tile stored (added) into B, nothing else."""
    tile = load.tile_shape
    coords = [tuple(idx2crd(i, tile)) for i in range(product(tile))]
    offsets = np.array([load.smem.element_offset(*c) for c in coords], np.int64) * load.elem_bytes
    loaded, _ = _expected(load, coords, offsets, got["a"], got["smem"], list(origin), load.elem_bytes)
    image = np.frombuffer(b"".join(loaded[int(o)] for o in offsets), np.uint8)
    if store is None:
        return image, got["b"]
    _, stored = _expected(store, coords, offsets, got["b"].copy(), got["smem"], list(origin), load.elem_bytes)
    return image, stored


def coord_case(gpu, kind: str, name: str, origin: tuple) -> dict:
    load, store = _dynamic(kind, name)
    out: dict = {"kind": kind, "array": name, "origin": list(origin), "planned": True}
    try:
        for p in (store or load).preconditions:
            p.check({"r": origin[0], "c": origin[1]}[p.name], "")
    except pc.PlanError as e:
        out.update(planned=False, refused=str(e))
    if kind == "prefetch":
        return {**out, **prefetch_run(gpu, load.prefetch(), origin)}
    rt = TmaRoundTrip(load, store)
    got = rt.launch(gpu, origin)
    tile = load.tile_shape
    offsets = np.array([load.smem.element_offset(*tuple(idx2crd(i, tile))) for i in range(product(tile))]) * \
        load.elem_bytes
    image = np.concatenate([got["smem"][o:o + load.elem_bytes] for o in offsets])
    want_image, want_array = _reference(load, store, got, origin)
    out["smem"] = _first_difference(image, want_image)
    out["spins"] = got["spins"]
    if store is not None:
        out["array_vs_clip"] = _first_difference(got["array"], want_array)
    if out["planned"]:
        emu_image, emu_array = rt.emulate(origin)
        out["smem_vs_emulator"] = _first_difference(got["smem"], emu_image)
        if store is not None:
            out["array_vs_emulator"] = _first_difference(got["array"], emu_array)
    return out


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


def type_case(gpu, kind: str, fill: str) -> dict:
    dtype, ftz = MAP_TYPES[kind]
    g = pc.make_global_tensor(dtype, Layout((40, 64), (64, 1)))
    tile = pc.make_smem_tensor(dtype, Layout((64, 32), (32, 1)))
    load = pc.make_tma_copy(tile, g, oob_fill=fill, ftz=ftz)
    rt = _Arrays(load, None)
    out: dict = {"map": kind, "data_type": load.tensor_map.data_type, "fill": fill}
    for tile_index in ((0, 0), (0, 1)):
        r = rt.run(gpu, tile_index)
        out[f"smem_{tile_index[0]}{tile_index[1]}"] = _first_difference(*r["smem"])
    out["store"] = store_converts(gpu, pc.make_tma_copy(g, tile, ftz=ftz), rt.arrays(0)[0])
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


NAN_CASES = {   # where: (columns of the 40-row array (its rows 32 elements apart), origin)
    "rows-inside-unit": (30, (0, 0)),          # each row ends inside a 16-byte unit (29 for 8-byte elements)
    "negative": (32, (-9, -5)),
    "outside": (32, (100, 64)),
}
NAN_TYPES = {"f16": (pc.f16, False), "bf16": (pc.bf16, False), "f32": (pc.f32, False), "f64": (pc.f64, False),
             "tf32": (pc.tf32, False), "f32_ftz": (pc.f32, True), "tf32_ftz": (pc.tf32, True)}


def nan_case(gpu, kind: str, where: str) -> dict:
    dtype, ftz = NAN_TYPES[kind]
    cols, origin = NAN_CASES[where]
    cols -= cols == 30 and dtype.bits == 64
    g = pc.make_global_tensor(dtype, Layout((40, cols), (32, 1)))
    load = pc.make_tma_copy(pc.make_smem_tensor(dtype, Layout((64, 32), (32, 1))), g,
                            origin=(pc.dynamic("r"), pc.dynamic("c")), oob_fill="nan", ftz=ftz)
    r = TmaRoundTrip(load, None).run(gpu, origin)
    return {"dtype": kind, "where": where, "data_type": load.tensor_map.data_type, "smem": _first_difference(*r["smem"])}


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
        out[name] = {"driver": _encodes(params, buf), "planner": planner}
    planned = [p.tensor_map for kind in ("load", "store") for a in ARRAYS for p in _dynamic(kind, a) if p is not None]
    out["every planned map"] = {"driver": all(_encodes(p, buf) is True for p in planned), "maps": len(planned)}
    return out


def _encodes(params, buf) -> bool | str:
    try:
        params.encode(int(buf.handle))
        return True
    except pc.CompileError as e:
        return str(e).split(":")[0][-60:]


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
    """A checked build run with a coordinate that breaks its precondition (the child should trap and print)."""
    if which == "split-k":
        g = pc.make_global_tensor(pc.bf16, Layout((300, 256), (256, 1)))
        load = pc.make_tma_copy(pc.kmajor_smem_tensor(pc.bf16, 128, 128, "128B"), g,
                                origin=(pc.dynamic("r"), pc.dynamic("c")))
        print("pycute-probe: launching", flush=True)
        TmaRoundTrip(load, None).launch(gpu, (0, 65), checked=True)
    else:                                   # a group of no rows: the retarget's "rows >= 1"
        from examples.grouped_tma import GroupedTma, Work
        print("pycute-probe: launching", flush=True)
        GroupedTma().run(gpu, checked=True, work=[Work(811, 0, 0, 0)])
    return {"trapped": False}


def grouped_case(gpu, checked: bool) -> dict:
    from examples.grouped_tma import GroupedTma
    r = GroupedTma().run(gpu, checked=checked)
    return {"c": _first_difference(*r["c"]), "one": [_first_difference(*x) for x in r["one"] if
                                                      _first_difference(*x)],
            "group": [_first_difference(*x) for x in r["group"] if _first_difference(*x)], "items": len(r["one"])}


def window_case(gpu) -> dict:
    """The overlapping view (start row, row, k) with pycute's refusal switched off in this child: the tile at a
    start past the start mode's 897 rows, whose rows 939..1023 exist."""
    import pycute.copy.tma.rules as rules
    refusal, rules.check_window = rules.check_window, lambda *args: None
    try:
        view = pc.make_global_tensor(pc.bf16, Layout((897, 128, 128), (128, 128, 1)))
        load = pc.make_tma_copy(pc.make_smem_tensor(pc.bf16, Layout((1, 128, 64), (0, 64, 1))), view,
                                origin=(pc.dynamic("s"), 0, 0))
    finally:
        rules.check_window = refusal
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
    out += [f"nan/{t}/{w}" for t in NAN_TYPES for w in NAN_CASES]
    return out + ["encode", "smem", "checked/split-k", "checked/grouped-bad", "grouped", "grouped-checked",
                  "window-view"]


def run_case(name: str, gpu) -> dict:
    part = name.split("/")
    if part[0] == "coord":
        return coord_case(gpu, part[1], part[2], tuple(int(v) for v in part[3].split(",")))
    if part[0] == "type":
        return type_case(gpu, part[1], part[2])
    if part[0] == "nan":
        return nan_case(gpu, part[1], part[2])
    return {"encode": lambda: encode_case(gpu), "smem": lambda: smem_case(gpu),
            "checked": lambda: checked_case(gpu, part[-1]), "grouped": lambda: grouped_case(gpu, False),
            "grouped-checked": lambda: grouped_case(gpu, True), "window-view": lambda: window_case(gpu)}[part[0]]()


def _children(names: list[str]) -> None:
    """Run ``names`` in this process, one JSON line each as soon as it is done (a fault ends the process)."""
    from pycute.compile import runtime
    gpu = runtime.Gpu()
    for name in names:
        print(json.dumps({"case": name, **run_case(name, gpu)}), flush=True)


def _batches() -> list[list[str]]:
    """Cases that share a child: those pycute plans (a fault there is itself a finding: the rest rerun), and
    each case outside pycute's promises (a forced store, an extreme coordinate, a trap) alone."""
    safe, alone = [], []
    for name in cases():
        part = name.split("/")
        risky = name.startswith(("checked/", "window"))
        if part[0] == "coord":
            load, store = _dynamic(part[1], part[2])
            r, c = (int(v) for v in part[3].split(","))
            planned = all(p.holds({"r": r, "c": c}[p.name]) for p in (store or load).preconditions)
            risky = not planned or max(abs(r), abs(c)) > 1 << 24
        (alone if risky else safe).append(name)
    return [safe] + [[n] for n in alone]


def _parent(path: Path) -> list[dict]:
    rows: list[dict] = []
    with path.open("w") as f:
        for batch in _batches():
            while batch:
                try:
                    run = subprocess.run([sys.executable, __file__, "--cases", ",".join(batch)], capture_output=True,
                                         text=True, cwd=ROOT, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
                    output, rc = run.stdout + run.stderr, run.returncode
                except subprocess.TimeoutExpired as e:
                    output, rc = str(e.stdout or "") + str(e.stderr or ""), "timeout"
                done = [json.loads(x) for x in output.splitlines() if x.startswith('{"case"')]
                if rc != 0 and len(done) < len(batch):        # the next case died with the process
                    done.append({"case": batch[len(done)], "fault": True, "rc": rc, "output": output[-1500:]})
                for row in done:
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                rows += done
                batch = batch[len(done):]
    return rows


def _verdict(row: dict) -> str:
    """One word per case for the table."""
    name = row["case"]
    if row.get("fault"):
        trapped = name.startswith("checked/") and "breaks" in row.get("output", "")
        return "trapped (message seen)" if trapped else f"FAULT rc={row.get('rc')}"
    if name.startswith("coord/"):
        keys = [k for k in ("smem_vs_emulator", "array_vs_emulator") if k in row]
        if keys:
            return "equal" if all(row[k] is None for k in keys) else "DIFFERS from the emulator"
        if "array_vs_clip" in row:
            return "clip" if row["array_vs_clip"] is None else f"not clip ({row['array_vs_clip']['count']} B)"
        return "completed" if row.get("completed") else ("equal" if row.get("smem") is None else "DIFFERS")
    if name.startswith(("type/", "nan/")):
        ok = all(v is None for k, v in row.items() if k.startswith("smem"))
        return ("equal" if ok else "DIFFERS from the emulator") + (f", store {row['store']}" if "store" in row else "")
    if name in ("grouped", "grouped-checked"):
        return "exact" if row["c"] is None and not row["one"] and not row["group"] else "DIFFERS"
    if name == "window-view":
        return f"all-zero tile: {row['all_zero']} (rows exist: {row['rows_exist']})"
    if name == "smem":
        return f"opt-in {row['optin_bytes']} B, pycute {row['pycute_limit']} B, launches {row['launch']}"
    if name == "encode":
        bad = [k for k, v in row.items() if k != "case" and isinstance(v, dict) and "planner" in v
               and (v["driver"] is True) != (v["planner"] is True)]
        return "driver and planner agree" if not bad else f"DISAGREE on {bad}"
    return "trapped=False (NO TRAP)" if name.startswith("checked/") else "?"


def _table(rows: list[dict]) -> None:
    width = max(len(r["case"]) for r in rows)
    print(f"{'case':<{width}}  verdict")
    for r in rows:
        print(f"{r['case']:<{width}}  {_verdict(r)}")
    enc = next((r for r in rows if r["case"] == "encode" and not r.get("fault")), None)
    if enc:
        print("\nencodes (driver / planner):")
        for k, v in enc.items():
            if isinstance(v, dict):
                print(f"  {k:<38} {v.get('driver')!s:<10} {v.get('planner', v.get('maps'))!s:.70}")


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
            t = MAP_TYPES[name.split("/")[1]]
            g = pc.make_global_tensor(t[0], Layout((40, 64), (64, 1)))
            try:
                store_converts(gpu, pc.make_tma_copy(g, pc.make_smem_tensor(t[0], Layout((64, 32), (32, 1))),
                                                     ftz=t[1]), np.zeros(40 * 64 * 4, np.uint8))
            except pc.CompileError as e:
                assert "needs the CUDA driver" in str(e), e
        if name.startswith("coord/") and name.split("/")[1] in ("load", "store", "reduce"):
            kind, array, at = name.split("/")[1:]
            origin = tuple(int(v) for v in at.split(","))
            load, store = _dynamic(kind, array)
            if not all(p.holds({"r": origin[0], "c": origin[1]}[p.name]) for p in (store or load).preconditions):
                continue
            rt = TmaRoundTrip(load, store)
            a, b = rt.arrays(0)
            image, array_after = rt.emulate(origin)
            got = {"smem": image, "array": array_after, "a": a, "b": b}
            want_image, want_array = _reference(load, store, got, origin)
            tile = load.tile_shape
            offsets = np.array([load.smem.element_offset(*tuple(idx2crd(i, tile))) for i in range(product(tile))])
            got_image = np.concatenate([image[o * load.elem_bytes:(o + 1) * load.elem_bytes] for o in offsets])
            assert np.array_equal(got_image, want_image), name
            assert np.array_equal(array_after, want_array), name
    print(f"{len(cases())} cases built; the reference model equals the emulator on the planned ones")


if __name__ == "__main__":
    if "--cases" in sys.argv:
        _children(sys.argv[sys.argv.index("--cases") + 1].split(","))
    elif "--check" in sys.argv:
        check_on_cpu()
    else:
        out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(os.environ.get("OUT", ".")) / "tma_coords_h200.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        _table(_parent(out))
        print(f"\nwrote {out}")
