"""The block-scaled GEMM example (examples/blockscaled_gemm.py), MXF8 and NVFP4, cta_group 1 and 2: its sm_100a
build holds exactly the planned TMA, bulk, UTCCP, MMA and LDTM instructions; pycute's PTX interpreter runs its
producer and MMA threads to the plans' streams; the emulator, running those traced streams k-block by k-block,
gives the reference's D for whole and partial tiles (and not when the kernel is broken); the soft build compiles
for sm_90a; on a GPU with clusters the soft build's D equals the reference (tests/gpu style skip elsewhere)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pycute as pc
from examples.blockscaled_gemm import STAGES, TILE_N, BlockScaledGemm, pack_scale_factors
from examples.blockscaled_gemm_check import PARAMS, SYMBOLS, emulate, trace
from pycute.compile import runtime
from pycute.sim.emulator import Sm100Emulator

CASES = [("mxf8", 1), ("nvfp4", 1), ("mxf8", 2), ("nvfp4", 2)]
IDS = [f"{k}-cg{g}" for k, g in CASES]
SIZE = (200, 300, 416)                 # M, N, K: no multiple of the tile
ROOT = Path(__file__).resolve().parents[2]


def gemm(kind, g, size=SIZE):
    return BlockScaledGemm(kind, g, *size)


@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_the_sm_100a_build_holds_exactly_the_planned_instructions(kind, g):
    example = gemm(kind, g)
    h = example.compile("sm_100a").histogram()
    count = lambda *prefixes: sum(v for op, v in h.items() if op.startswith(prefixes))     # noqa: E731
    per_k_block = {k: v // example.k_blocks for k, v in example.planned_counts().items() if k != "tcgen05.ld"}
    assert count("UTMALDG") == per_k_block["tma"] == 2             # the loop bodies are not unrolled
    assert count("UBLKCP") == per_k_block["bulk"] == 2
    assert count("UTCCP") == per_k_block["tcgen05.cp"] == (3 if kind == "mxf8" else 12)
    assert count("UTCQMMA", "UTCOMMA") == per_k_block["tcgen05.mma"] == 4
    assert all((".2CTA" in op) == (g == 2) for op in h if op.startswith(("UTCCP", "UTCQMMA", "UTCOMMA", "UTCBAR")))
    assert count("LDTM") == len(example.epilogue.per_warp) == 1
    assert count("UTCBAR") == 2                                     # a stage freed, the accumulator done


def test_the_example_writes_no_asm():
    names = ("blockscaled_gemm", "blockscaled_gemm_check")
    text = "".join((ROOT / "examples" / f"{name}.py").read_text() for name in names)
    assert "asm" not in text.replace("no hand-written ``asm``", "")


@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_the_producer_threads_issue_the_load_plans_streams(kind, g):
    example = gemm(kind, g)
    base = SYMBOLS["raw"]
    a_off, b_off, sfa_off, sfb_off, _ = example.offsets
    for rank in range(g):
        cluster = (example.grid[0] // g - 1, 1)
        x, y = cluster[0] * g + rank, cluster[1]
        thread = trace(example, cluster, rank, 0)
        tma, bulk = [], []
        for kb in range(example.k_blocks):
            s = kb % STAGES
            tma += example.load_a.stream(base + a_off, x, kb, stage=s)
            tma += example.load_b.stream(base + b_off, y * g + rank, kb, stage=s)
            bulk += example.sf_loads[0].stream(base + sfa_off, 0, kb, x, stage=s)
            bulk += example.sf_loads[1].stream(base + sfb_off, 0, kb, y, stage=s)
        assert thread.tma == tma
        arrays = [PARAMS["sfa"], PARAMS["sfb"]] * example.k_blocks     # the interpreter's global addresses
        assert [(i.dst, i.size) for i in thread.bulk] == [(i.dst, i.size) for i in bulk]
        assert [i.src - at for i, at in zip(thread.bulk, arrays)] == [i.src for i in bulk]


@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_the_mma_thread_issues_the_sf_copy_and_mma_plans_streams(kind, g):
    example = gemm(kind, g)
    base = SYMBOLS["raw"]
    a_off, b_off, sfa_off, sfb_off, _ = example.offsets
    thread = trace(example, (0, 0), 0, 32)
    cps, mmas = [], []
    for kb in range(example.k_blocks):
        s = kb % STAGES
        cps += example.sf_copies[0].stream(base + sfa_off, 0, stage=s)
        cps += example.sf_copies[1].stream(base + sfb_off, 0, stage=s)
        sfa, sfb = (c + s * step for c, step in zip(example.sf_columns, example.sf_stage_columns))
        mmas += example.mma.stream(base + a_off, base + b_off, 0, sfa, sfb, accumulate=kb > 0, stage=s)
    assert thread.issued == cps
    assert thread.mma == mmas


@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_the_epilogue_warps_read_their_quadrants_chunk_by_chunk(kind, g):
    example = gemm(kind, g)
    for warp in range(2, 6):
        thread = trace(example, (0, 0), g - 1, 32 * warp)
        want = [i for chunk in range(TILE_N // 32) for i in example.epilogue.stream(0, warp % 4, chunk=chunk)]
        assert [(i.ptx, i.taddr) for i in thread.ldst] == [(i.ptx, i.taddr) for i in want]


def test_the_odd_cta_of_a_pair_relays_and_issues_no_mma():
    thread = trace(gemm("mxf8", 2), (0, 0), 1, 32)
    assert thread.mma == [] and thread.issued == []
    assert sum(op.startswith("mbarrier.arrive") for op, *_ in (t for t in thread.trace if isinstance(t, tuple)
                                                               and isinstance(t[0], str))) == gemm("mxf8", 2).k_blocks


@pytest.mark.parametrize("size", [SIZE, (128, 256, 128)], ids=["partial", "one-tile"])
@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_the_emulated_kernel_gives_the_reference_d(kind, g, size):
    example = gemm(kind, g, size)
    for cluster in {(0, 0), (example.grid[0] // g - 1, example.grid[1] - 1)}:
        got, want = emulate(example, cluster, seed=2)
        assert np.array_equal(got, want) and np.count_nonzero(want) > 0.9 * want.size


def test_the_emulation_catches_a_kernel_that_swaps_sfa_and_sfb():
    example = gemm("mxf8", 1)
    example.sf_columns = example.sf_columns[::-1]
    got, want = emulate(example, (0, 0), seed=2)
    assert not np.array_equal(got, want)


def test_packed_scale_factors_land_where_the_mma_reads_them():
    example = gemm("nvfp4", 1)
    sf = example.sfb
    codes = np.random.default_rng(0).integers(0, 256, (300, 26), dtype=np.uint8)
    packed = pack_scale_factors(codes, sf, 2, example.k_blocks, 0x38)
    copy = example.sf_copies[1]
    slots = sf.mmas * sf.scale_vec
    for tile, kb in ((0, 0), (1, 1)):
        emu = Sm100Emulator(smem_bytes=example.smem_bytes, fill_tmem=0)
        emu.alloc(example.alloc.columns)
        size = sf.rows * slots
        emu.write_smem(example.offsets[3], packed[(tile * example.k_blocks + kb) * size:][:size])
        emu.run(copy.stream(example.offsets[3], 0, stage=0))
        tmem = emu.tmem_image()
        base = copy.dst.placement.column
        for row in (0, 37, 100, 200, 255):
            for slot in (0, 5, 15):
                i = slot // sf.scale_vec
                quadrant = row % 4                                  # any of the four replicas
                cell = tmem[row % 32 + 32 * quadrant, base + sf.column(i) + row // 32]
                got = (int(cell) >> 8 * (sf.sf_id(i) + slot % sf.scale_vec)) & 0xFF
                r, s = tile * sf.rows + row, kb * slots + slot
                want = codes[r, s] if r < 300 and s < 26 else 0x38
                assert got == want, (tile, kb, row, slot)


@pytest.mark.parametrize("kind, g", [("mxf8", 1), ("nvfp4", 2)], ids=["mxf8-cg1", "nvfp4-cg2"])   # both of each
def test_the_soft_build_compiles_for_sm_90a_without_tcgen05(kind, g):
    compiled = gemm(kind, g).compile("sm_90a", soft=True)
    assert not re.search(r"^\s*tcgen05\.", compiled.ptx, re.M)


def test_an_unknown_format_is_refused():
    with pytest.raises(pc.PlanError, match="kind is one of mxf8, nvfp4, not 'fp8'"):
        BlockScaledGemm("fp8")


SOFT_REASON = None if runtime.device_info() is not None and runtime.device_info()[1][0] >= 9 else (
    "the soft-model runs need a CUDA GPU with thread-block clusters (sm_90 or newer)")
GPU_SIZES = [(128, 256, 128), SIZE, (300, 520, 544)]
# Each case in a child process with a time limit: a kernel that hangs or faults fails its case, not the suite.
RUN = """
import json, sys
from examples.blockscaled_gemm import BlockScaledGemm
from pycute.compile import runtime
kind, g, m, n, k = sys.argv[1], *map(int, sys.argv[2:6])
major, minor = runtime.device_info()[1]
got, want = BlockScaledGemm(kind, g, m, n, k).run(runtime.Gpu(), arch=f"sm_{major}{minor}a", seed=3)
print(json.dumps({"differ": int((got != want).sum()), "nonzero": int((want != 0).sum())}))
"""


@pytest.mark.gpu
@pytest.mark.skipif(SOFT_REASON is not None, reason=SOFT_REASON or "")
@pytest.mark.parametrize("size", GPU_SIZES, ids=["one-tile", "partial", "several"])
@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_the_soft_gemm_on_the_gpu_equals_the_reference(kind, g, size):
    run = subprocess.run([sys.executable, "-c", RUN, kind, str(g), *map(str, size)], capture_output=True, text=True,
                         cwd=ROOT, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    case = json.loads(run.stdout.strip().splitlines()[-1])
    assert case["differ"] == 0 and case["nonzero"] > 0, case
