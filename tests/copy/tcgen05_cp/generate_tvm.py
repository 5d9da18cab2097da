"""Generate ``tests/copy/tcgen05_cp/tvm_plans.json``: TVM's own ``tcgen05.cp`` plans for a matrix of copies, which
``test_tvm_parity.py`` holds pycute's plans to, instruction for instruction.

TVM's planner (``_build_plan`` in ``tvm/backend/cuda/tile_primitive/copy_async/tcgen05_cp.py`` of apache-tvm
0.27.0.post1, the design pycute's comes from) runs on a CPU. apache-tvm is about 100 MB and no dependency: run this
under an interpreter that has it, e.g. the one ``perf.report`` installs into pycute's cache folder:

    python -c "from perf.tvm_reference import tvm_python; print(tvm_python()[0])"   # its path
    <that python> tests/copy/tcgen05_cp/generate_tvm.py

Each case is described neutrally (flat ``(extent, stride)`` iterators grouped by the buffer's shape, TVM's notation)
so that both sides build the same copy from it; the K-major tiles are written out here rather than taken from
``pycute.kmajor_smem_tensor``, because this runs where pycute is not installed. Recorded per case: TVM's form, descriptor fields (bytes) and every
instruction's TMEM address offset (lane << 16 | 32-bit column) and shared-memory byte offset; or TVM's refusal
(``error``); or ``unsupported`` where TVM's layout slice of the region gives no layout. Nothing of TVM's code is
copied, only its answers.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "tvm_plans.json"
BITS = {"u8": 8, "bf16": 16, "f32": 32}
TVM_DTYPE = {"u8": "uint8", "bf16": "bfloat16", "f32": "float32"}
# (form, rows, bits per row, TMEM row iterators (extent, lane stride), replica (extent, lane stride) or None)
FORMS = [
    ("128x256b", 128, 256, [(128, 1)], None),
    ("4x256b", 4, 256, [(4, 32)], None),
    ("128x128b", 128, 128, [(128, 1)], None),
    ("64x128b.warpx2::02_13", 64, 128, [(64, 1)], (2, 64)),
    ("64x128b.warpx2::01_23", 64, 128, [(2, 64), (32, 1)], (2, 32)),
    ("32x128b.warpx4", 32, 128, [(32, 1)], (4, 32)),
]
SWIZZLE_BYTES = {"none": 16, "32B": 32, "64B": 64, "128B": 128}


def log2(n: int) -> int:
    return n.bit_length() - 1


def kmajor_smem(dtype: str, rows: int, k: int, swizzle: str) -> dict:
    """A K-major shared-memory tile of ``rows`` x ``k`` elements: 8-row core groups (one group of 4 rows for a
    4-row tile) of ``swizzle``-wide rows (16-byte rows for "none"), the K atoms after all the rows. Flat iterators in
    element units, TVM's order: the row dimension's, then the column dimension's, each outermost first."""
    elem_bytes = BITS[dtype] // 8
    width = SWIZZLE_BYTES[swizzle] // elem_bytes                 # elements in one row of the swizzle atom
    group = min(rows, 8)
    row_iters = [(rows // group, group * width), (group, width)] if rows > group else [(rows, width)]
    col_iters = ([(k // width, rows * width)] if k > width else []) + [(min(width, k), 1)]
    sw = None if swizzle == "none" else [log2(SWIZZLE_BYTES[swizzle] // 16), log2(16 // elem_bytes), 3]
    return {"shape": [rows, k], "iters": row_iters + col_iters, "swizzle": sw}


def tmem(lane_iters: list, k: int, replica) -> dict:
    rows = 1
    for n, _ in lane_iters:
        rows *= n
    return {"shape": [rows, k], "iters": [[n, [s, 0]] for n, s in lane_iters] + [[k, [0, 1]]],
            "replica": list(replica) if replica else None}


def alloc_columns(dtype: str, tmem_desc: dict) -> int:
    """The smallest legal tcgen05.alloc (32..512 columns) holding the TMEM buffer's columns."""
    need = tmem_desc["shape"][1] * BITS[dtype] // 32
    return next(c for c in (32, 64, 128, 256, 512) if c >= need)


def case(name, dtype, src, src_region, dst, dst_region, config=None) -> dict:
    return {"name": name, "dtype": dtype, "src": src, "src_region": src_region, "dst": dst, "dst_region": dst_region,
            "columns": alloc_columns(dtype, dst), "config": config or {}}


def canonical_cases() -> list:
    """Every form x dtype x swizzle x middle {1, 4}, inferred and with the form named; a K narrower than the
    swizzle row is a column window of a one-atom-wide buffer."""
    out = []
    for name, rows, bits, lane_iters, replica in FORMS:
        shape, _, multicast = name.partition(".")
        for dtype in BITS:
            per_row = bits // BITS[dtype]
            for swizzle in SWIZZLE_BYTES:
                width = SWIZZLE_BYTES[swizzle] * 8 // BITS[dtype]
                for middle in (1, 4):
                    k = per_row * middle
                    buffer_k = max(k, width) if swizzle != "none" else k
                    src = kmajor_smem(dtype, rows, buffer_k, swizzle)
                    dst = tmem(lane_iters, k, replica)
                    for config in ({}, {"shape": shape, **({"multicast": multicast} if multicast else {})}):
                        how = "named" if config else "inferred"
                        out.append(case(f"{name}/{dtype}/{swizzle}/middle{middle}/{how}", dtype, src,
                                        [[0, rows], [0, k]], dst, [[0, rows], [0, k]], config))
    return out


def window_cases() -> list:
    """Sub-regions: a row window, a K window, a TMEM column offset (128-bit aligned and not)."""
    out = []
    for dtype in ("bf16", "f32"):
        per_unit = 128 // BITS[dtype]
        src = kmajor_smem(dtype, 128, 4 * per_unit * 2, "128B")
        for k0 in (0, per_unit, 2 * per_unit):
            for t0 in (0, per_unit, per_unit // 2):
                dst = tmem([(128, 1)], 8 * per_unit, None)
                out.append(case(f"window/{dtype}/k0={k0}/tcol0={t0}", dtype, src, [[0, 128], [k0, k0 + 2 * per_unit]],
                                dst, [[0, 128], [t0, t0 + 2 * per_unit]]))
        rows_src = kmajor_smem(dtype, 256, 2 * per_unit, "none")
        for r0 in (0, 64, 128):
            out.append(case(f"row window/{dtype}/r0={r0}", dtype, rows_src, [[r0, r0 + 128], [0, 2 * per_unit]],
                            tmem([(128, 1)], 2 * per_unit, None), [[0, 128], [0, 2 * per_unit]]))
    return out


def refusal_cases() -> list:
    """Copies both planners must refuse, each for one reason."""
    out = []
    bf = 8                                           # bf16 elements per 16-byte unit
    mn_major = {"shape": [128, 2 * bf], "iters": [[128, 1], [2 * bf, 128]], "swizzle": None}
    out.append(case("refuse/mn-major source", "bf16", mn_major, [[0, 128], [0, 2 * bf]],
                    tmem([(128, 1)], 2 * bf, None), [[0, 128], [0, 2 * bf]]))
    out.append(case("refuse/replica of the other warpx2", "bf16", kmajor_smem("bf16", 64, bf, "none"),
                    [[0, 64], [0, bf]], tmem([(64, 1)], bf, (2, 64)), [[0, 64], [0, bf]],
                    {"shape": "64x128b", "multicast": "warpx2::01_23"}))
    out.append(case("refuse/128x256b with a warpx4 replica", "bf16", kmajor_smem("bf16", 32, bf, "none"),
                    [[0, 32], [0, bf]], tmem([(32, 1)], bf, (4, 32)), [[0, 32], [0, bf]], {"shape": "128x256b"}))
    wide = {"shape": [128, 2 * bf], "iters": [[16, 16 * bf], [8, 2 * bf], [2 * bf, 1]], "swizzle": None}
    out.append(case("refuse/rows 32 B apart without a swizzle", "bf16", wide, [[0, 128], [0, 2 * bf]],
                    tmem([(128, 1)], 2 * bf, None), [[0, 128], [0, 2 * bf]]))
    odd_sbo = {"shape": [32, bf], "iters": [[4, 8 * bf + 4], [8, bf], [bf, 1]], "swizzle": None}
    out.append(case("refuse/core groups 136 B apart", "bf16", odd_sbo, [[0, 32], [0, bf]],
                    tmem([(32, 1)], bf, (4, 32)), [[0, 32], [0, bf]]))
    out.append(case("refuse/tmem columns step by 2", "u8", {"shape": [32, 16], "iters": [[32, 16], [16, 1]],
                                                             "swizzle": None}, [[0, 32], [0, 16]],
                    {"shape": [32, 16], "iters": [[32, [1, 0]], [16, [0, 2]]], "replica": [4, 32]},
                    [[0, 32], [0, 16]]))
    return out


def demo_cases() -> list:
    """The article's demo and the 4x256b lane-tiled copy (16 rows per warp quadrant)."""
    demo = case("demo", "u8", {"shape": [32, 16], "iters": [[32, 16], [16, 1]], "swizzle": None}, [[0, 32], [0, 16]],
                tmem([(32, 1)], 16, (4, 32)), [[0, 32], [0, 16]])
    bf = 8
    tiled_src = {"shape": [64, 2 * bf], "iters": [[4, 2 * bf], [16, 8 * bf], [2 * bf, 1]], "swizzle": [1, 3, 3]}
    tiled = case("4x256b lane-tiled", "bf16", tiled_src, [[0, 64], [0, 2 * bf]],
                 tmem([(4, 32), (16, 1)], 2 * bf, None), [[0, 64], [0, 2 * bf]])
    return [demo, tiled]


def random_cases(count: int = 400, seed: int = 20261201) -> list:
    """Seeded random windows of K-major tiles: any form, dtype and swizzle, 1-8 instructions, row and K windows on
    16-byte units, TMEM column offsets on 64-bit steps (half of them not 128-bit aligned), inferred or named."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(count):
        name, rows, bits, lane_iters, replica = rng.choice(FORMS)
        dtype, swizzle = rng.choice(list(BITS)), rng.choice(list(SWIZZLE_BYTES))
        unit = 128 // BITS[dtype]                                   # elements per 16-byte unit
        width = SWIZZLE_BYTES[swizzle] * 8 // BITS[dtype]
        k = bits // BITS[dtype] * rng.choice([1, 2, 4, 8])
        buffer_k = max(width, k) * rng.choice([1, 2])
        buffer_rows = rows * (rng.choice([1, 2]) if rows >= 8 else 1)
        r0 = rng.randrange(0, buffer_rows - rows + 1, 8) if buffer_rows > rows else 0
        k0 = rng.randrange(0, buffer_k - k + 1, unit)
        t0 = rng.randrange(0, 4 * unit, max(unit // 2, 1))
        src = kmajor_smem(dtype, buffer_rows, buffer_k, swizzle)
        dst = tmem(lane_iters, t0 + k, replica)
        shape, _, multicast = name.partition(".")
        config = {"shape": shape, **({"multicast": multicast} if multicast else {})} if rng.random() < 0.5 else {}
        out.append(case(f"random/{i}/{name}/{dtype}/{swizzle}", dtype, src, [[r0, r0 + rows], [k0, k0 + k]], dst,
                        [[0, rows], [t0, t0 + k]], config))
    return out


def cases() -> list:
    return canonical_cases() + window_cases() + refusal_cases() + demo_cases() + random_cases()


def tvm_layout(desc: dict, on_tmem: bool):
    from tvm.tirx.layout import ComposeLayout, R, S, TCol, TileLayout, TLane

    extents = tuple(n for n, _ in desc["iters"])
    if on_tmem:
        strides = tuple(lane @ TLane if lane else col @ TCol for _, (lane, col) in desc["iters"])
        spec = S[extents:strides]
        if desc.get("replica"):
            n, s = desc["replica"]
            spec = spec + R[n:s @ TLane]
        return TileLayout(spec)
    tile = TileLayout(S[extents:tuple(s for _, s in desc["iters"])])
    if desc["swizzle"] is None:
        return tile
    b, m, s = desc["swizzle"]
    return ComposeLayout(m, b, s, tile)


def tvm_plan(case: dict) -> dict:
    import tvm
    from tvm import tirx
    from tvm.ir import Range
    from tvm.tirx.tile_primitive import TilePrimitiveCall
    from tvm.backend.cuda.tile_primitive.copy_async.tcgen05_cp import _build_plan

    dtype = TVM_DTYPE[case["dtype"]]
    smem = tirx.decl_buffer(case["src"]["shape"], dtype, "smem", scope="shared", layout=tvm_layout(case["src"], False))
    taddr = tirx.Var("taddr", "uint32")
    tbuf = tirx.decl_buffer(case["dst"]["shape"], dtype, "tmem", scope="tmem",
                            layout=tvm_layout(case["dst"], True)).with_allocated_addr([taddr])

    def region(buf, r):
        return tirx.BufferRegion(buf, [Range.from_min_extent(lo, hi - lo) for lo, hi in r])

    call = TilePrimitiveCall(region(tbuf, case["dst_region"]), region(smem, case["src_region"]),
                             op=tvm.ir.Op.get("tirx.tile.copy_async"), config={"cta_group": 1, **case["config"]})
    try:
        plan = _build_plan(call)
    except ValueError as e:
        return {"error": str(e)}
    except Exception as e:       # TVM cannot express the region (its slice gives no layout): no reference answer
        return {"unsupported": f"{type(e).__name__}: {e}"}
    instructions = []
    total = 1
    for n, _, _ in plan["middle_iters"]:
        total *= int(n)
    for flat in range(total):
        t_off = s_off = 0
        div = 1
        for n, s_step, t_step in plan["middle_iters"]:
            idx = (flat // div) % int(n)
            div *= int(n)
            t_off += idx * int(t_step)
            s_off += idx * int(s_step)
        instructions.append([int(plan["t_addr_off"]) + t_off, 16 * (int(plan["init_off_16B"]) + s_off)])
    form = plan["shape"] + (f".{plan['multicast']}" if plan["multicast"] else "")
    return {"form": form, "lbo": 16 * int(plan["LDO_field"]), "sbo": 16 * int(plan["SDO_field"]),
            "swizzle_mode": int(plan["swizzle_mode"]), "instructions": instructions}


def main() -> int:
    import tvm

    data = []
    for case in cases():
        case["tvm"] = tvm_plan(case)
        data.append(case)
    lines = ",\n".join(json.dumps(c, separators=(",", ":")) for c in data)      # one case per line
    OUT.write_text(f'{{"reference": "apache-tvm {tvm.__version__} tcgen05_cp._build_plan", "cases": [\n{lines}\n]}}\n')
    refused = sum("error" in c["tvm"] for c in data)
    unsupported = sum("unsupported" in c["tvm"] for c in data)
    print(f"{OUT}: {len(data)} cases, {refused} refused by TVM, {unsupported} it cannot express")
    return 0


if __name__ == "__main__":
    sys.exit(main())
