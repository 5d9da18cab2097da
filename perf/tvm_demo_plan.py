"""Run under an interpreter with apache-tvm (not pycute): time TVM's ``tcgen05.cp`` planner on the article's demo.

``python -m perf.tvm_demo_plan`` from the repository root prints one JSON object: the median time of TVM's
``_build_plan`` (``tvm.backend.cuda.tile_primitive.copy_async.tcgen05_cp``) on the demo copy -- a 32x16 uint8
shared tile into a warpx4-replicated TMEM tensor, no ``shape`` config, so TVM infers the form as pycute does -- and
the plan it made, for ``perf.tvm_reference`` to hold beside pycute's. The timing helper is the one pycute's
numbers use. TVM's planner keeps no cache between calls, so every call is a cold plan.
"""
import json
import sys

from perf.algebra_cases import median_us


def _demo_call():
    from tvm.script import tirx as T
    from tvm.tirx.layout import R, S, TCol, TileLayout, TLane

    @T.prim_func(check_well_formed=False)
    def demo():
        smem = T.alloc_buffer([32, 16], "uint8", scope="shared", layout=TileLayout(S[(32, 16):(16, 1)]), align=1024)
        tmem_addr = T.alloc_shared([1], "uint32")
        tmem = T.decl_buffer([32, 16], "uint8", scope="tmem", allocated_addr=tmem_addr[0],
                             layout=TileLayout(S[(32, 16):(1 @ TLane, 1 @ TCol)] + R[4:32 @ TLane]))
        T.tile.copy_async(tmem[0:32, 0:16], smem[0:32, 0:16], cta_group=1)

    return demo.body.seq[-1]          # the copy_async TilePrimitiveCall


def main() -> int:
    import tvm
    from tvm.backend.cuda.tile_primitive.copy_async.tcgen05_cp import _build_plan

    call = _demo_call()
    plan = _build_plan(call)
    instructions = 1
    for extent, _, _ in plan["middle_iters"]:
        instructions *= int(extent)
    us = median_us(lambda: _build_plan(call))
    json.dump({"tvm_version": tvm.__version__, "median_us": us,
               "form": plan["shape"] + (f".{plan['multicast']}" if plan["multicast"] else ""),
               "instructions": instructions, "sbo": int(plan["SDO_field"]) * 16,
               "swizzle_mode": int(plan["swizzle_mode"])}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
