"""Does the GPU copy every box pycute plans, im2col and PyTorch's arrays included, as the emulator does?

Each case in its own child process with a time limit (a fault or a hang loses that case, never the run), one JSON
line per case, a summary table last (docs/tma.md section 7, docs/im2col.md).

    PYTHONPATH=. python -m tools tma_every_box [OUT.jsonl] [--only PREFIX] [--timeout SECONDS]
                                               (default $OUT/tma_every_box.jsonl)
    PYTHONPATH=. python -m tools tma_every_box --dry [--only PREFIX]   (no GPU: every case's maps and kernels built)

The groups:

* ``boxes/*``: every case of tests/copy/tma/cases_boxes.py (narrow swizzled rows, 128-B offsets, broadcast and
  overlapping arrays, six and more modes, hierarchical modes, multicast masks and lines of 1-3-D clusters, L2
  promotion, cache hints): the real load (and store) against the emulator, bit for bit, every CTA's shared
  memory. Narrow rows also say which model the hardware followed (a pattern row per box row, or rows packed);
  tiles at 128-B offsets whether the phase was the absolute address's or the tile's.
* ``tx/*``: a narrow-row load whose mbarrier is armed with 16 bytes more than the plan's expect_tx must not
  complete (the box delivers its data bytes, not its pattern rows).
* ``rank-order/*``: %cluster_ctarank against %cluster_ctaid in 2-D and 3-D clusters (pycute's x-fastest order).
* ``encode/*``: what cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col take (stride 0, overlapping strides, every
  L2 promotion, interleaved maps, im2col corners at their limits, rank-1 maps: the driver refused every one on the
  H200, docs/runs/tma/tma-h200-encode.jsonl).
* ``interleave/*``: interleaved maps' loads against the tiled model of the same parameters.
* ``hint/*``: bulk copies and cp.async with createpolicy cache hints against the emulator.
* ``im2col/*``: every case of tests/copy/tma/cases_im2col.py: the real im2col load against the emulator (bit for
  bit) and the tile against numpy's im2col.
* ``torch/*``: bf16 and f32 PyTorch tensors read by ``pc.global_tensor_from`` (DLPack), every tile loaded from one
  and stored into the other through the plans: the copy exact.
"""
from __future__ import annotations

import argparse
import json
import time

from tools._common import JsonLines, last_json, out_path, run_question

SPIN = 1 << 26
SHORT_SPIN = 1 << 16
CLUSTERS = [(2, 2, 1), (4, 2, 1), (2, 4, 1), (2, 2, 2), (1, 2, 2), (1, 1, 8)]


def _diff(got, want) -> dict | None:
    import numpy as np
    bad = np.argwhere(np.asarray(got) != np.asarray(want))
    if not bad.size:
        return None
    first = tuple(int(v) for v in bad[0])
    return {"at": list(first), "got": int(np.asarray(got)[first]), "want": int(np.asarray(want)[first]),
            "count": int(len(bad))}


class _PackedRows:
    """The other model of a narrow swizzled row: box rows packed at their own width (what pycute does not plan)."""

    def __init__(self, mode):
        self.name, self.code, self.byte_swizzle, self.span, self.repeat = (mode.name, mode.code, mode.byte_swizzle,
                                                                          mode.span, mode.repeat)

    def row_pitch(self, row_bytes: int) -> int:
        return row_bytes


def boxes(name: str, gpu) -> dict:
    import attrs
    from pycute.copy.tma import make_tma_copy
    from pycute.harness.tma import TmaRoundTrip
    from tests.copy.tma.cases_boxes import BOXES
    _, g, s, tiles, store, options = next(c for c in BOXES if c[0] == name)
    load = make_tma_copy(s, g, **options)
    rest = {k: v for k, v in options.items() if k != "multicast"}
    rt = TmaRoundTrip(load, make_tma_copy(g, s, **rest) if store else None)
    if gpu is None:
        return {"compiled": repr(rt.compile())}
    out: dict = {"tiles": []}
    m = load.tensor_map
    narrow = m.swizzle.row_pitch(m.box[0] * load.elem_bytes) != m.box[0] * load.elem_bytes
    offset = m.swizzle.byte_swizzle is not None and min(i.smem_offset for i in load.instructions) % m.swizzle.repeat
    for k, tile in enumerate(tiles):
        r = rt.run(gpu, tile, seed=k)
        row = {"tile": list(tile), "spins": r["spins"], "smem": _diff(*r["smem"]), "array": _diff(*r["array"])}
        if narrow:
            packed = rt.emulate(tile, k, attrs.evolve(m, swizzle=_PackedRows(m.swizzle)))[0]
            row["models"] = {"pattern-row-per-box-row": row["smem"] is None,
                             "packed-rows": _diff(r["smem"][0], packed) is None}
        if offset:
            shift = (m.swizzle.repeat - offset) % m.swizzle.repeat
            relative = rt.emulate(tile, k, shift=shift)[0]
            row["models"] = {"absolute-address-phase": row["smem"] is None,
                             "tile-relative-phase": _diff(r["smem"][0], relative) is None}
        out["tiles"].append(row)
    out["ok"] = all(t["smem"] is None and t["array"] is None and t["spins"] < SPIN for t in out["tiles"])
    out["plan"] = repr(load)
    return out


def tx(name: str, gpu) -> dict:
    from pycute.copy.tma import make_tma_copy
    from pycute.harness.tma import TmaRoundTrip
    from tests.copy.tma.cases_boxes import BOXES
    _, g, s, tiles, _, options = next(c for c in BOXES if c[0] == name)
    exact_rt = TmaRoundTrip(make_tma_copy(s, g, **options), None, spin=SHORT_SPIN)
    more_rt = TmaRoundTrip(make_tma_copy(s, g, **options), None, extra_tx=16, spin=SHORT_SPIN)
    if gpu is None:
        return {"compiled": [repr(exact_rt.compile()), repr(more_rt.compile())]}
    exact, more = exact_rt.run(gpu, tiles[0])["spins"], more_rt.run(gpu, tiles[0])["spins"]
    return {"exact_spins": exact, "plus16_spins": more, "ok": exact < SHORT_SPIN and more >= SHORT_SPIN,
            "note": "expect_tx is the box's data bytes" if exact < SHORT_SPIN <= more else "expect_tx is not exact"}


def rank_order(name: str, gpu) -> dict:
    import numpy as np
    from pycute.arch.sm90.bulk import cluster_rank
    from pycute.compile import compile_cuda
    shape = tuple(int(v) for v in name.split("x"))
    source = '#include "pycute/common.cuh"\n' + r'''
extern "C" __global__ void ranks(unsigned* out) {
  unsigned r, x, y, z;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(x));
  asm volatile("mov.u32 %0, %%cluster_ctaid.y;" : "=r"(y));
  asm volatile("mov.u32 %0, %%cluster_ctaid.z;" : "=r"(z));
  const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x == 0) { out[4 * b] = r; out[4 * b + 1] = x; out[4 * b + 2] = y; out[4 * b + 3] = z; }
}
'''
    compiled = compile_cuda(source, arch="sm_90a")
    if gpu is None:
        return {"compiled": repr(compiled)}
    n = shape[0] * shape[1] * shape[2]
    d = gpu.upload(np.zeros(4 * n, dtype=np.uint32))
    gpu.launch(gpu.kernel(compiled, "ranks"), d, grid=shape, block=32, cluster=shape)
    got = gpu.download(d, np.uint32, 4 * n).reshape(n, 4)
    rows = [{"rank": int(r), "ctaid": [int(x), int(y), int(z)]} for r, x, y, z in got]
    wrong = [row for row in rows if cluster_rank(shape, tuple(row["ctaid"])) != row["rank"]]
    return {"cluster": list(shape), "ranks": rows, "ok": not wrong, "mismatches": wrong[:4]}


def _encode(params, gpu) -> dict:
    import numpy as np
    if gpu is None:
        return {"params": repr(params)}
    buf = gpu.upload(np.zeros(1 << 22, dtype=np.uint8))
    try:
        params.encode(int(buf.handle))
        return {"encoded": True}
    except Exception as e:          # the driver's refusal is the evidence
        return {"encoded": False, "error": str(e).split(":")[0][:200]}


def _encode_cases() -> dict:
    from pycute.arch.sm90.tma import TMA_SWIZZLES
    from pycute.copy.tma import TensorMapParams
    from pycute.copy.tma.im2col import Im2colMapParams
    none, sw32, sw64, sw128 = TMA_SWIZZLES
    cases = {
        "stride-0": TensorMapParams("f32", 7, (96, 64), (0,), (32, 32), (1, 1), none),
        "overlapping-stride-64B": TensorMapParams("f32", 7, (64, 200), (64,), (64, 32), (1, 1), none),
        "narrow-64B-box-in-128B-swizzle": TensorMapParams("bf16", 9, (96, 200), (192,), (32, 64), (1, 1), sw128),
        "narrow-48B-box-in-64B-swizzle": TensorMapParams("f32", 7, (48, 70), (192,), (12, 32), (1, 1), sw64),
        "interleave-16B-rank3": TensorMapParams("f16", 6, (8, 16, 4), (16, 256), (8, 16, 2), (1, 1, 1), none,
                                                interleave=1),
        "interleave-16B-rank2": TensorMapParams("f16", 6, (8, 16), (16,), (8, 16), (1, 1), none, interleave=1),
        "interleave-32B-32B-swizzle": TensorMapParams("bf16", 9, (16, 16, 4), (32, 512), (16, 16, 2), (1, 1, 1),
                                                      sw32, interleave=2),
        "interleave-32B-128B-swizzle": TensorMapParams("bf16", 9, (16, 16, 4), (32, 512), (16, 16, 2), (1, 1, 1),
                                                       sw128, interleave=2),
        "interleave-16B-element-stride-2": TensorMapParams("f16", 6, (8, 16, 4), (16, 256), (8, 16, 2), (2, 1, 1),
                                                           none, interleave=1),
        "im2col-rank4-corners-at-limits": Im2colMapParams("bf16", 9, (64, 300, 300, 1), (128, 38400, 11520000),
                                                          (-128, -128), (127, 127), 64, 128, (1, 1, 1, 1), sw128),
        "im2col-rank4-corner-past-limit": Im2colMapParams("bf16", 9, (64, 300, 300, 1), (128, 38400, 11520000),
                                                          (-129, 0), (0, 0), 64, 128, (1, 1, 1, 1), sw128),
        "im2col-rank5-corners-at-limits": Im2colMapParams("f32", 7, (16, 20, 20, 20, 1), (64, 1280, 25600, 512000),
                                                          (-16, -16, -16), (15, 15, 15), 16, 64, (1, 1, 1, 1, 1), none),
        "im2col-empty-box": Im2colMapParams("bf16", 9, (64, 4, 4, 1), (128, 512, 2048), (0, 0), (-4, 0), 64, 16,
                                            (1, 1, 1, 1), sw128),
        "im2col-narrow-32B-channels-in-128B": Im2colMapParams("bf16", 9, (16, 8, 8, 2), (32, 256, 2048), (-1, -1),
                                                              (-1, -1), 16, 64, (1, 1, 1, 1), sw128),
    }
    for p, code in (("none", 0), ("64B", 1), ("128B", 2), ("256B", 3)):
        cases[f"l2-promotion-{p}"] = TensorMapParams("f32", 7, (96, 300), (384,), (32, 64), (1, 1), none,
                                                     l2_promotion=code)
    for dtype, code in (("f32", 7), ("u8", 0)):           # rank 1: refused on the H200 whatever the box
        for box in (16, 256):
            cases[f"rank1-{dtype}-box{box}"] = TensorMapParams(dtype, code, (1024,), (), (box,), (1,), none)
    cases["rank2-f32-1000x4-box32x2"] = TensorMapParams("f32", 7, (1000, 4), (4096,), (32, 2), (1, 1), none)
    return cases


def encode(name: str, gpu) -> dict:
    out = _encode(_encode_cases()[name], gpu)
    out["ok"] = True                # a verdict either way: the evidence is whether it encoded
    return out


INTERLEAVE = {
    # name: (dtype, array layout, tile layout, swizzle of the tile (element units) or None, interleave code)
    "f16-16B-slices-rank3": ("f16", ((4, 16, 8), (128, 8, 1)), ((2, 16, 8), (128, 8, 1)), None, 1),
    "bf16-32B-slices-32B-swizzle": ("bf16", ((4, 16, 16), (256, 16, 1)), ((2, 16, 16), (256, 16, 1)), (1, 3, 3), 2),
    "f32-32B-slices-rank4": ("f32", ((2, 3, 16, 8), (384, 128, 8, 1)), ((1, 2, 16, 8), (256, 128, 8, 1)), (1, 2, 3),
                             2),
}


def interleave(name: str, gpu) -> dict:
    import attrs
    import pycute as pc
    from pycute import ComposedLayout, Layout, Swizzle
    from pycute.harness.tma import TmaRoundTrip
    dtype, (ashape, astride), (tshape, tstride), sw, code = INTERLEAVE[name]
    layout = Layout(tshape, tstride)
    tile = pc.make_smem_tensor(dtype, layout if sw is None else ComposedLayout(Swizzle(*sw), 0, layout))
    plan = pc.make_tma_copy(tile, pc.make_global_tensor(dtype, Layout(ashape, astride)))
    plan = attrs.evolve(plan, tensor_map=attrs.evolve(plan.tensor_map, interleave=code))
    rt, rows = TmaRoundTrip(plan, None), []
    if gpu is None:
        return {"compiled": repr(rt.compile())}
    for k, t in enumerate([tuple(0 for _ in ashape), tuple(1 if n > t else 0 for n, t in zip(ashape, tshape))]):
        r = rt.run(gpu, t, seed=k)
        rows.append({"tile": list(t), "spins": r["spins"], "same_as_tiled": _diff(*r["smem"]) is None,
                     "smem": _diff(*r["smem"])})
    return {"map": repr(plan.tensor_map), "tiles": rows, "ok": True,
            "proven": all(t["same_as_tiled"] and t["spins"] < SPIN for t in rows)}


def hint(name: str, gpu) -> dict:
    import pycute as pc
    from pycute import Layout
    from pycute.harness.bulk import BulkRoundTrip
    array = pc.make_global_tensor(pc.f32, Layout((128, 96), (96, 1)))
    tile = pc.make_smem_tensor(pc.f32, Layout((32, 32), (32, 1)))
    policy = {"evict-first": "evict_first", "evict-last": "evict_last",
              "fractional": pc.CachePolicy("evict_last", 0.5, "evict_first")}[name.split("/")[-1]]
    rows: list = []
    rt = BulkRoundTrip(pc.make_bulk_copy(tile, array, cache_hint=policy),
                       pc.make_bulk_copy(array, tile, cache_hint=policy))
    if gpu is None:
        return {"compiled": repr(rt.compile())}
    for t in [(0, 0), (3, 2)]:
        r = rt.run(gpu, t)
        rows.append({"tile": list(t), "spins": r["spins"], "smem": _diff(*r["smem"]), "array": _diff(*r["array"])})
    return {"tiles": rows, "ok": all(t["smem"] is None and t["array"] is None for t in rows)}


def im2col(name: str, gpu) -> dict:
    import pycute as pc
    from pycute.harness.im2col import Im2colRoundTrip
    from tests.copy.tma.cases_im2col import IM2COL
    _, g, s, conv, tiles = next(c for c in IM2COL if c[0] == name)
    plan = pc.make_im2col_copy(s, g, conv)
    rt, rows = Im2colRoundTrip(plan), []
    if gpu is None:
        return {"compiled": repr(rt.compile())}
    for k, (mt, kt) in enumerate(tiles):
        r = rt.run(gpu, mt, kt, seed=k)
        rows.append({"tile": [mt, kt], "spins": r["spins"], "smem": _diff(*r["smem"]), "numpy": _diff(*r["tile"])})
    return {"plan": repr(plan), "map": repr(plan.tensor_map), "tiles": rows,
            "ok": all(t["smem"] is None and t["numpy"] is None and t["spins"] < SPIN for t in rows)}


TORCH = {   # name: (dtype, rows, columns, the tile's shared tensor)
    "bf16-300x128-kmajor-128B": ("bf16", 300, 128, lambda pc: pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")),
    "f32-300x96": ("f32", 300, 96, lambda pc: pc.make_smem_tensor(pc.f32, pc.Layout((64, 32), (32, 1)))),
}


def torch_arrays(name: str, gpu) -> dict:
    """A PyTorch tensor's tiles loaded and stored into another through the plans of ``pc.global_tensor_from``."""
    import numpy as np

    import pycute as pc
    from pycute.compile import runtime
    from pycute.harness.tma import TmaRoundTrip
    dtype, rows, cols, tile_of = TORCH[name]
    tile = tile_of(pc)
    if gpu is None:         # the same plans from the layout DLPack gives a row-major tensor
        g = pc.make_global_tensor(pc.dtype(dtype), pc.Layout((rows, cols), (cols, 1)), base_align=256)
        return {"compiled": repr(TmaRoundTrip(pc.make_tma_copy(tile, g), pc.make_tma_copy(g, tile)).compile())}
    import torch
    x = torch.randn(rows, cols, device="cuda").to(getattr(torch, {"bf16": "bfloat16", "f32": "float32"}[dtype]))
    y = torch.zeros_like(x)
    gx, gy = pc.global_tensor_from(x), pc.global_tensor_from(y)
    load, store = pc.make_tma_copy(tile, gx), pc.make_tma_copy(gy, tile)
    rt = TmaRoundTrip(load, store)
    maps = [gpu.upload(np.frombuffer(runtime.tensor_map_bytes(p.tensor_map.encode(g.address)), dtype=np.uint8))
            for p, g in ((load, gx), (store, gy))]
    dump = gpu.upload(np.zeros(rt.smem_bytes, dtype=np.uint8))
    status = gpu.upload(np.zeros(1, dtype=np.uint32))
    kernel = gpu.kernel(rt.compile(), "tma_roundtrip")
    tiles = [(t0, t1) for t0 in range(-(-rows // load.tile_shape[0])) for t1 in range(-(-cols // load.tile_shape[1]))]
    for t in tiles:
        gpu.launch(kernel, maps[0], maps[1], dump, status, *(np.int32(v) for v in t), grid=1, block=128,
                   cluster=1, dynamic_smem=rt.smem_bytes + 1024)
    torch.cuda.synchronize()
    exact = bool(torch.equal(x, y))
    return {"dtype": gx.dtype.name, "layout": repr(gx.layout), "base_align": gx.base_align, "tiles": len(tiles),
            "copied_exactly": exact, "ok": exact}


GROUPS = {"boxes": boxes, "tx": tx, "rank-order": rank_order, "encode": encode, "interleave": interleave,
          "hint": hint, "im2col": im2col, "torch": torch_arrays}


def case_names() -> list[str]:
    """Every case the run covers, ``group/name``."""
    from tests.copy.tma.cases_boxes import BOXES, NARROW
    from tests.copy.tma.cases_im2col import IM2COL
    names = [f"boxes/{c[0]}" for c in BOXES]
    names += [f"tx/{c[0]}" for c in NARROW[:2]]
    names += [f"rank-order/{x}x{y}x{z}" for x, y, z in CLUSTERS]
    names += [f"encode/{n}" for n in _encode_cases()]
    names += [f"interleave/{n}" for n in INTERLEAVE]
    # hinted cp.async raised illegal-instruction exceptions on the H200 (docs/runs/tma/tma-h200-boxes.jsonl):
    # now refused
    names += [f"hint/bulk/{p}" for p in ("evict-first", "evict-last", "fractional")]
    names += [f"im2col/{c[0]}" for c in IM2COL]
    names += [f"torch/{n}" for n in TORCH]
    return names


def one(name: str, dry: bool = False) -> dict:
    """Run case ``name`` on the GPU (``dry``: build and compile everything it would launch, on any machine)."""
    from pycute.compile import runtime
    group, _, rest = name.partition("/")
    if group not in GROUPS:
        raise KeyError(f"no case group {group!r} (have {', '.join(GROUPS)})")
    start = time.time()
    out = GROUPS[group](rest, None if dry else runtime.Gpu())
    info = runtime.device_info()
    return {"case": name, "group": group, "device": info[0] if info else None,
            "seconds": round(time.time() - start, 2), **out}


def _summary(lines: list[dict]) -> str:
    rows = [("case", "ok", "detail")]
    for v in lines:
        detail = v.get("error") or v.get("note") or ""
        if "tiles" in v:
            models = [t.get("models") for t in v["tiles"] if t.get("models")]
            if models:
                detail = "models: " + ", ".join(k for k, ok in models[0].items() if ok)
            bad = next((t for t in v["tiles"] if t.get("smem") or t.get("array") or t.get("numpy")), None)
            if bad:
                detail = f"tile {bad['tile']}: {bad.get('smem') or bad.get('array') or bad.get('numpy')}"
            if "proven" in v:
                detail = "same as tiled" if v["proven"] else "differs from tiled"
        if "encoded" in v:
            detail = "encoded" if v["encoded"] else f"refused: {v.get('error', '')}"
        if "mismatches" in v and v["mismatches"]:
            detail = f"rank order differs: {v['mismatches'][:2]}"
        lines = str(detail).strip().splitlines() or [""]
        rows.append((v["case"], "yes" if v.get("ok") else "NO", lines[-1][:100]))
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{a:<{width}}  {b:<3}  {c}" for a, b, c in rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools tma_every_box", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/tma_every_box.jsonl)")
    parser.add_argument("--only", default="", help="run the cases whose name starts with this")
    parser.add_argument("--timeout", type=int, default=180, help="seconds per case before it counts as a hang")
    parser.add_argument("--dry", action="store_true", help="no GPU: build and compile every case in this process")
    parser.add_argument("--one", metavar="NAME", help="run one case in this process (what each child does)")
    parser.add_argument("--list", action="store_true", help="print the cases' names")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one)))
        return 0
    names = [n for n in case_names() if n.startswith(args.only)]
    if args.list:
        print("\n".join(names))
        return 0
    if args.dry:
        built = [one(name, dry=True) for name in names]
        print(f"dry: {len(built)} cases built and compiled for sm_90a")
        return 0
    path = out_path("tma_every_box", args.out)
    with JsonLines(path, echo=True) as out:
        for name in names:
            run = run_question("tma_every_box", ["--one", name], args.timeout)
            verdict = last_json(run.stdout) if run.ok else None
            out.write(verdict or {"case": name, "ok": False, "error": run.error()})
    print(f"\n{len(out.rows)} cases, {sum(1 for v in out.rows if v.get('ok')) } ok -> {path}\n")
    print(_summary(out.rows))
    return 0 if all(v.get("ok") for v in out.rows) else 1
