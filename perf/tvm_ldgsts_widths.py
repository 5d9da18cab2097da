"""Run under an interpreter with apache-tvm (not pycute): the cp.async width and per-thread count TVM's ``ldgsts``
partitioner (``align_layouts_gs`` with cp.async's widths) picks for the cp.async cases pycute runs on the H200.

``python -m perf.tvm_ldgsts_widths`` from the repository root prints one JSON object per case: TVM's vector bytes
and cp.async per thread, or the reason it refused. docs/cp-async-bulk-dsmem.md holds them beside pycute's.
"""
import json
import sys

# name, dtype, global (shape, strides), tile shape, shared strides (row-major unless given), threads; the plain
# (unswizzled) cases of tests/copy/flat_cases.py, which TVM's layouts can state without its swizzle syntax.
CASES = [
    ("u8-16B", "uint8", ((100, 48), (48, 1)), (32, 32), (32, 1), 128, (32, 32)),
    ("u8-rows-36B-4B", "uint8", ((40, 36), (36, 1)), (16, 32), (32, 1), 64, (16, 32)),
    ("f16-rows-72B-tma-refuses", "float16", ((100, 36), (36, 1)), (64, 32), (32, 1), 128, (64, 32)),
    ("f32-stride-37-transposed", "float32", ((64, 37), (37, 1)), (32, 32), (1, 32), 96, (32, 32)),
    ("f64-16B", "float64", ((50, 20), (20, 1)), (16, 16), (16, 1), 64, (16, 16)),
    ("f32-whole-rows", "float32", ((64, 32), (32, 1)), (32, 32), (32, 1), 128, (32, 32)),
]


def main() -> int:
    import tvm
    from tvm.backend.cuda.tile_primitive.copy._common import align_layouts_gs
    from tvm.tirx.layout import S, TileLayout

    out = []
    for name, dtype, (gshape, gstride), tile, sstride, threads, _ in CASES:
        bits = tvm.DataType(dtype).bits
        g_layout = TileLayout(S[tuple(gshape):tuple(gstride)])
        s_layout = TileLayout(S[tuple(tile):tuple(sstride)])
        try:
            with tvm.target.Target({"kind": "cuda", "arch": "sm_90a"}):
                _, _, vec = align_layouts_gs(g_layout, gshape, [(0, t) for t in tile], s_layout, tile,
                                             [(0, t) for t in tile], bits, threads, vec_bits_candidates=(128, 64, 32))
            n = tile[0] * tile[1]
            out.append({"case": name, "bytes": vec * bits // 8, "per_thread": n / (threads * vec)})
        except Exception as e:          # TVM refuses by raising; the reason is the evidence
            out.append({"case": name, "refused": f"{type(e).__name__}: {str(e)[:200]}"})
    json.dump({"tvm_version": tvm.__version__, "cases": out}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
