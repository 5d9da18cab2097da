"""Run under an interpreter with apache-tvm (not pycute): the DSMEM copies TVM 0.27's ``dsmem`` variant emits for
two cases pycute plans differently (``copy_dsmem_impl`` called on the ``copy_async`` call, its TIR read back).

``python -m perf.tvm_dsmem_chunks`` from the repository root prints one JSON object: per case, the copies TVM
emits (a loop's trip count times the copies in its body), their byte size, the source element the first one
starts at, and the ``mapa`` form. docs/cp-async-bulk-dsmem.md holds them beside pycute's plans.
"""
import json
import re
import sys


def _call(src_layout, dst_layout, src_region, dst_region):
    from tvm.script import tirx as T

    @T.prim_func(check_well_formed=False)
    def f():
        src = T.alloc_buffer([64, 64], "bfloat16", scope="shared", layout=src_layout, align=1024)
        dst = T.alloc_buffer([64, 64], "bfloat16", scope="shared", layout=dst_layout, align=1024)
        mbar = T.alloc_shared([1], "uint64")
        T.tile.copy_async(dst[0:64, dst_region[0]:dst_region[1]], src[0:64, src_region[0]:src_region[1]],
                          mbar=mbar.ptr_to([0]), remote_cta_id=1)

    return f.body.seq[-1]


def main() -> int:
    import tvm
    from tvm.backend.cuda.tile_primitive.copy_async.dsmem import copy_dsmem_impl
    from tvm.tirx.layout import S, ComposeLayout, TileLayout

    plain = TileLayout(S[(64, 64):(64, 1)])
    sw128 = ComposeLayout(3, 3, 3, TileLayout(S[(64, 64):(64, 1)]))     # bf16 128B swizzle: Sw<3,3,3> on elements
    cases = [("bf16 64x64, 128B-swizzled source -> plain destination", sw128, plain, (0, 64)),
             ("bf16 64x64 buffers, columns 4..11 (16-byte runs at byte 8 of each row)", plain, plain, (4, 12))]
    out = []
    for name, src, dst, cols in cases:
        text = copy_dsmem_impl(_call(src, dst, cols, cols), None).script()
        trips = [int(n) for n in re.findall(r"for \w+ in range\((\d+)\)", text)] or [1]
        sizes = sorted({int(n) for n in re.findall(r"T\.ptx\.cp\(.*?T\.uint32\((\d+)\)", text)})
        out.append({"case": name, "copies": trips[0] * text.count("T.ptx.cp("), "bytes": sizes,
                    "mapa": re.findall(r'T\.ptx\.mapa\(.*?"(u\d+)"', text)[0],
                    "first_source_element": re.findall(r"address_of\(src(?:_buf_w)?\[([^]]*)\]\)", text)[0]})
    json.dump({"tvm_version": tvm.__version__, "cases": out}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
