"""Generate ``tests/copy/tma/tvm_tma_plans.json``: what apache-tvm 0.27.0.post1's ``tma_auto`` planner
(``_build_auto_plan`` in ``tvm/backend/cuda/tile_primitive/copy_async/tma.py``) makes of a matrix of TMA loads, which
``test_tvm_parity.py`` holds pycute's plans to.

TVM's planner runs on a CPU. apache-tvm is about 100 MB and no dependency: run this under an interpreter that has
it, e.g. the one ``perf.report`` installs into pycute's cache folder:

    python -c "from perf.tvm_reference import tvm_python; print(tvm_python()[0])"   # its path
    <that python> tests/copy/tma/generate_tvm.py

Each case is described neutrally: the array's (shape, strides) in elements (a mode may be nested, its sub-modes
innermost first, as CuTe writes them), and per tile mode its iterators
(extent, stride in elements), innermost first, with the swizzle (B, M, S) on elements or None, so that both sides
build the same copy. Recorded per case: TVM's tensor map (global dims and byte strides, innermost first), box,
swizzle mode and instruction count, or TVM's refusal (``error``). Nothing of TVM's code is copied, only its answers.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "tvm_tma_plans.json"
TVM_DTYPE = {"u8": "uint8", "bf16": "bfloat16", "f32": "float32"}


def kmajor(rows: int, cols: int, atom_cols: int, b: int, m: int) -> dict:
    """A K-major tile of swizzle atoms (8-row groups of ``atom_cols``-element rows), as pycute's kmajor_smem_tensor
    lays it out: rows at ``atom_cols``, atoms along K after all rows."""
    k = [(atom_cols, 1)] + ([(cols // atom_cols, rows * atom_cols)] if cols > atom_cols else [])
    return {"modes": [[(rows, atom_cols)], k], "swizzle": [b, m, 3]}


def plain(rows: int, cols: int, pitch: int | None = None) -> dict:
    return {"modes": [[(rows, pitch or cols)], [(cols, 1)]], "swizzle": None}


CASES = {
    "f32 300x96, 64x32 plain": ("f32", ((300, 96), (96, 1)), plain(64, 32)),
    "u8 100x48, 64x16 plain": ("u8", ((100, 48), (48, 1)), plain(64, 16)),
    "f32 300x32, 512x32 plain (rows over 256)": ("f32", ((300, 32), (32, 1)), plain(512, 32)),
    "f32 300x64, 64x32 rows padded to 64": ("f32", ((300, 64), (64, 1)), plain(64, 32, 64)),
    "bf16 300x256, 128x128 K-major 128B": ("bf16", ((300, 256), (256, 1)), kmajor(128, 128, 64, 3, 3)),
    "bf16 200x64, 64x64 K-major 64B": ("bf16", ((200, 64), (64, 1)), kmajor(64, 64, 32, 2, 3)),
    "bf16 72x48, 64x32 K-major 32B": ("bf16", ((72, 48), (48, 1)), kmajor(64, 32, 16, 1, 3)),
    "u8 130x256, 128x256 K-major 128B": ("u8", ((130, 256), (256, 1)), kmajor(128, 256, 128, 3, 4)),
    "f32 128x64, 64x64 K-major 128B": ("f32", ((128, 64), (64, 1)), kmajor(64, 64, 32, 3, 2)),
    "bf16 300x64, 64x64 K-major 128B-long Sw<3,4,3> (not a TMA swizzle)": (
        "bf16", ((300, 64), (64, 1)), {"modes": [[(64, 64)], [(64, 1)]], "swizzle": [3, 4, 3]}),
    "u8 128x(8,4), 64x32 columns nested 8 B apart": ("u8", ((128, (8, 4)), (32, (1, 8))), plain(64, 32)),
    "bf16 96x(4,16), 32x32 columns nested 8 B apart": ("bf16", ((96, (4, 16)), (64, (1, 4))), plain(32, 32)),
    "bf16 256x8, 64x8 16-byte rows packed under 128B": (
        "bf16", ((256, 8), (8, 1)), {"modes": [[(64, 8)], [(8, 1)]], "swizzle": [3, 3, 3]}),
}


def _iterators(shape, stride) -> list[tuple[int, int]]:
    """A mode's iterators outermost first (TVM's order): a nested mode's sub-modes reversed."""
    if isinstance(shape, int):
        return [(shape, stride)]
    return [it for n, d in reversed(list(zip(shape, stride))) for it in _iterators(n, d)]


def _size(shape) -> int:
    if isinstance(shape, int):
        return shape
    n = 1
    for x in shape:
        n *= _size(x)
    return n


def tvm_plan(dtype: str, array, tile: dict) -> dict:
    import tvm
    from tvm.backend.cuda.tile_primitive.copy_async.tma import _build_auto_plan
    from tvm.script import tirx as T
    from tvm.tirx.exec_scope import ExecScope
    from tvm.tirx.layout import S, ComposeLayout, TileLayout
    from tvm.tirx.tile_primitive import DispatchContext

    gshape, gstride = array
    g0, g1 = (_size(n) for n in gshape)
    s0 = 1
    for e, _ in tile["modes"][0]:
        s0 *= e
    s1 = 1
    for e, _ in tile["modes"][1]:
        s1 *= e
    iters = [it for mode in tile["modes"] for it in reversed(mode)]        # TVM: outermost first
    layout = TileLayout(S[tuple(e for e, _ in iters):tuple(d for _, d in iters)])
    if tile["swizzle"] is not None:
        b, m, s = tile["swizzle"]
        layout = ComposeLayout(m, b, s, layout)
    giters = [it for n, d in zip(gshape, gstride) for it in _iterators(n, d)]
    glayout = TileLayout(S[tuple(e for e, _ in giters):tuple(d for _, d in giters)])
    name = TVM_DTYPE[dtype]

    @T.prim_func(check_well_formed=False)
    def f():
        g = T.alloc_buffer((g0, g1), name, scope="global", layout=glayout)
        sm = T.alloc_buffer((s0, s1), name, scope="shared", layout=layout, align=1024)
        mbar = T.alloc_shared([1], "uint64")
        T.tile.copy_async(sm[0:s0, 0:s1], g[0:s0, 0:s1], mbar=mbar.ptr_to([0]))

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    try:
        with target:
            plan = _build_auto_plan(f.body.seq[-1], DispatchContext(target, ExecScope("thread"), {}, {}))
    except Exception as e:                      # TVM refuses by raising: its message is the answer
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
    spec = plan.spec
    return {"global_dims": [int(x) for x in spec.global_dims], "global_strides": [int(x) for x in spec.global_strides],
            "box": [int(x) for x in spec.box_dims], "swizzle": int(spec.swizzle), "instructions": int(plan.issue_extent())}


def main() -> int:
    import tvm
    out = {"tvm_version": tvm.__version__, "cases": {}}
    for name, (dtype, array, tile) in CASES.items():
        out["cases"][name] = {"dtype": dtype, "array": array, "tile": tile, "tvm": tvm_plan(dtype, array, tile)}
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
