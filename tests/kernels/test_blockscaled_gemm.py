"""The persistent block-scaled GEMM (pycute/kernels/blockscaled_gemm), MXF8 and NVFP4, cta_group 1 and 2: its body
(kernel.cuh, as it is after the configuration's constants) is at most 25 hand-written lines; its sm_100a build holds
exactly the planned instructions in each role's loop body; run whole on the CPU (every CTA and thread, several tiles
per CTA, both accumulators in turn) it writes the reference D, f32 or bf16; pycute's single-thread interpreter finds
each role issuing the plans' streams for the scheduler's tiles; the soft build compiles for sm_90a and, on a GPU with
clusters, gives the reference D. The mutation tests of its pipelines are
tests/kernels/test_blockscaled_gemm_mutations.py."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pycute as pc
from pycute.kernels import Kernel
from pycute.kernels.blockscaled_gemm import HANDWRITTEN_LINES, BlockScaledGemm, kernel_body_lines, pack_scale_factors
from pycute.kernels.blockscaled_gemm.check import SYMBOLS, run_whole, trace
from pycute.kernels.blockscaled_gemm.config import BODY
from pycute.compile import runtime
from pycute.sim.emulator import Sm100Emulator

CASES = [("mxf8", 1), ("nvfp4", 1), ("mxf8", 2), ("nvfp4", 2)]
IDS = [f"{k}-cg{g}" for k, g in CASES]
SIZE = (200, 300, 416)                 # M, N, K: no multiple of the tile; 2 x 3 tiles of 128 x 128
ROOT = Path(__file__).resolve().parents[2]
BASE = SYMBOLS["raw"]                  # the interpreter's dynamic shared buffer, 1024-byte aligned


@pytest.fixture(scope="module")
def built():
    """One example (and one sm_100a compile) per configuration: two CTAs or pairs, so each takes several tiles."""
    cache = {}

    def get(kind, g):
        if (kind, g) not in cache:
            gemm = BlockScaledGemm(kind, g, *SIZE, sms=2 * g)
            cache[kind, g] = gemm, gemm.compile("sm_100a")
        return cache[kind, g]
    return get


def test_the_kernel_is_at_most_25_hand_written_lines():
    assert kernel_body_lines() == HANDWRITTEN_LINES <= 25
    assert f"{HANDWRITTEN_LINES} hand-written lines" in (ROOT / "docs" / "kernels.md").read_text()


def test_the_source_ends_with_the_body_as_it_is_for_both_groups():
    assert all(BlockScaledGemm("mxf8", g, *SIZE).source().endswith(BODY.read_text()) for g in (1, 2))


def test_a_configuration_follows_the_kernel_protocol_the_pair_a_cluster_at_launch():
    gemm = BlockScaledGemm("nvfp4", 2, *SIZE)
    assert isinstance(gemm, Kernel) and gemm.launch_shape.cluster == (2, 1, 1)
    assert gemm == BlockScaledGemm("nvfp4", 2, *SIZE) and len({gemm, BlockScaledGemm("nvfp4", 2, *SIZE)}) == 1


def test_the_kernel_writes_no_asm():
    folder = ROOT / "pycute" / "kernels" / "blockscaled_gemm"
    assert not any("asm" in (folder / name).read_text() for name in ("config.py", "check.py", "kernel.cuh"))


@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_each_roles_loop_body_holds_exactly_the_planned_instructions(built, kind, g):
    gemm, compiled = built(kind, g)
    h = compiled.histogram()
    count = lambda *prefixes: sum(v for op, v in h.items() if op.startswith(prefixes))     # noqa: E731
    want = gemm.planned_counts()
    assert count("UTMALDG") == want["tma"] == 2                      # the producer's k-block
    assert count("UBLKCP") == want["bulk"] == 2
    assert count("UTCCP") == want["tcgen05.cp"] == (2 if kind == "mxf8" else 8)     # the MMA warp's k-block
    assert count("UTCQMMA", "UTCOMMA") == want["tcgen05.mma"] == 4
    assert count("UTCBAR") == want["tcgen05.commit"] == 2            # the stage's release, the accumulator's fill
    assert count("LDTM") == want["tcgen05.ld"] == 1                  # the epilogue's chunk
    assert count("UTMASTG") == want["tma.store"] == 1
    assert all((".2CTA" in op) == (g == 2) for op in h if op.startswith(("UTCCP", "UTCQMMA", "UTCOMMA", "UTCBAR")))
    assert count("ELECT") <= 7 and not any(op.startswith(("LDL", "STL")) for op in h)   # no diverged-warp copies


@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_the_whole_kernel_on_the_cpu_writes_the_reference_d(built, kind, g):
    gemm, _ = built(kind, g)
    got, want = run_whole(gemm, seed=2)
    assert np.array_equal(got, want) and np.count_nonzero(want) > 0.9 * want.size


def test_a_bf16_d_with_rows_of_no_whole_16_bytes_is_the_rounded_reference():
    gemm = BlockScaledGemm("nvfp4", 2, *SIZE, d_type="bf16", sms=2)
    assert gemm.ldd == 304                                          # 300 bf16 columns padded to whole 16 bytes
    got, want = run_whole(gemm, seed=5)
    assert got.dtype == want.dtype == np.uint16 and np.array_equal(got, want)


def test_every_call_keeps_its_functions_calling_convention():
    got, want = run_whole(BlockScaledGemm("mxf8", 2, 128, 256, 256, sms=2), conventions=True)
    assert np.array_equal(got, want)


def _fills(gemm, cta):
    """(tile, k-block, stage) of every fill CTA ``cta`` makes, in order."""
    tiles = gemm.sched.at(gemm.tiles).tiles_of(cta, gemm.grid)
    return [(t, kb, (i * gemm.k_blocks + kb) % gemm.operands.stages)
            for i, t in enumerate(tiles) for kb in range(gemm.k_blocks)]


@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_the_producer_issues_the_loads_streams_for_the_schedulers_tiles(built, kind, g):
    gemm, _ = built(kind, g)
    loads = dict(gemm.operands.loads)
    for cta in range(gemm.grid):
        thread = trace(gemm, cta, 0)
        want = {"tma": [], "bulk": []}
        for tile, kb, stage in _fills(gemm, cta):
            for name in ("a", "b", "sfa", "sfb"):
                coords = gemm.mainloop.coordinates(name, tile, kb, rank=cta % g)
                want["tma" if name in ("a", "b") else "bulk"] += loads[name].stream(BASE, *coords, stage=stage)
        assert thread.tma == want["tma"]
        assert [(i.dst, i.size) for i in thread.bulk] == [(i.dst, i.size) for i in want["bulk"]]


@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_the_mma_warp_issues_the_sf_copies_and_mmas_into_either_accumulator(built, kind, g):
    gemm, _ = built(kind, g)
    plan = gemm.mainloop
    for cta in range(0, gemm.grid, g):
        thread = trace(gemm, cta, 32)
        cps, mmas = [], []
        for tile, kb, stage in _fills(gemm, cta):
            n = _fills(gemm, cta).index((tile, kb, stage)) // gemm.k_blocks
            for which, cp in plan.sf_copies:
                cps += cp.stream(BASE, 0, stage=stage)
            sfa, sfb = (c + stage * step for c, step in (plan.sf_column("sfa"), plan.sf_column("sfb")))
            mmas += gemm.mma.stream(BASE, BASE, n % 2 * plan.accumulator_columns, sfa, sfb, accumulate=kb > 0,
                                    stage=stage)
        assert thread.issued == cps and thread.mma == mmas


def test_the_odd_cta_of_a_pair_relays_every_fill_and_issues_no_mma(built):
    gemm, _ = built("mxf8", 2)
    thread = trace(gemm, 1, 32)
    arrivals = [t for t in thread.trace if isinstance(t, tuple) and isinstance(t[0], str)
                and t[0].startswith("mbarrier.arrive")]
    assert thread.mma == [] and thread.issued == [] and len(arrivals) == len(_fills(gemm, 1))


@pytest.mark.parametrize("kind, g", [("mxf8", 1), ("nvfp4", 2)], ids=["mxf8-cg1", "nvfp4-cg2"])
def test_the_epilogue_reads_each_chunk_and_stores_it_where_the_tile_lies(built, kind, g):
    gemm, _ = built(kind, g)
    epi, ring = gemm.epilogue, BASE + gemm.operands.smem_bytes
    for cta in range(gemm.grid):
        tiles = gemm.sched.at(gemm.tiles).tiles_of(cta, gemm.grid)
        reads = [(i.ptx, i.taddr) for n in range(len(tiles)) for chunk in range(epi.chunks)
                 for i in epi.read.stream(0, 2, chunk=chunk, acc=n % 2)]
        assert [(i.ptx, i.taddr) for i in trace(gemm, cta, 64).ldst] == reads           # warp 2: quadrant 2
        stores = [i for tile in tiles for chunk in range(epi.chunks)
                  for i in epi.store.tma.stream(ring, *epi.store.tma_arguments(epi.origin(tile, chunk)),
                                                slot=chunk % epi.slots)]
        assert trace(gemm, cta, 128).tma == stores                                     # the fragment's thread 0


def test_packed_scale_factors_land_where_the_mma_reads_them(built):
    gemm, _ = built("nvfp4", 1)
    sf, (_, copy) = gemm.sfb, gemm.mainloop.sf_copies[1]
    at = dict((n, o) for n, o, _ in gemm.operands.stage_bytes)["sfb"]
    codes = np.random.default_rng(0).integers(0, 256, (300, 26), dtype=np.uint8)
    packed = pack_scale_factors(codes, sf, 3, gemm.k_blocks, 0x38)
    slots, size = sf.mmas * sf.scale_vec, sf.rows * sf.mmas * sf.scale_vec
    for tile, kb in ((0, 0), (2, 1)):
        emu = Sm100Emulator(smem_bytes=gemm.operands.smem_bytes, fill_tmem=0)
        emu.alloc(gemm.alloc.columns)
        emu.write_smem(at, packed[(tile * gemm.k_blocks + kb) * size:][:size])
        emu.run(copy.stream(0, 0, stage=0))
        tmem, base = emu.tmem_image(), copy.dst.placement.column
        for row in (0, 37, 100, 127):
            for slot in (0, 5, 15):
                i = slot // sf.scale_vec
                cell = tmem[row % 32 + 32 * (row % 4), base + sf.column(i) + row // 32]      # any of the replicas
                got = (int(cell) >> 8 * (sf.sf_id(i) + slot % sf.scale_vec)) & 0xFF
                r, s = tile * sf.rows + row, kb * slots + slot
                assert got == (codes[r, s] if r < 300 and s < 26 else 0x38), (tile, kb, row, slot)


#: The soft builds compiled here are ones other tests compile too, so that the compile cache serves the second
#: (an sm_90a soft build is 6-20 s of NVRTC): mxf8 cg1's is the whole CPU run's below, nvfp4 cg2's is the one
#: ``python -m tools blockscaled_gemm_soft --dry`` compiles (tests/tools/test_gemm_op.py). The problem size changes
#: only the constants of the configuration, not the code the soft build swaps in.
SOFT_RUN = dict(kind="mxf8", cta_group=1, m=128, n=128, k=128, sms=1)
SOFT_BUILDS = {"mxf8-cg1": SOFT_RUN, "nvfp4-cg2": dict(kind="nvfp4", cta_group=2, m=200, n=136, k=256, sms=2)}


@pytest.mark.parametrize("config", SOFT_BUILDS.values(), ids=SOFT_BUILDS.keys())   # both of each
def test_the_soft_build_compiles_for_sm_90a_without_tcgen05(config):
    compiled = BlockScaledGemm(**config).compile("sm_90a", soft=True)
    assert not re.search(r"^\s*tcgen05\.", compiled.ptx, re.M)


def test_the_soft_sm_90a_build_runs_whole_on_the_cpu():
    # one 128 x 128 tile, one k-block: every thread of the sm_90a build, the tcgen05 model's MMAs (f64 sums), TMEM
    # and copies interpreted as the CUDA they are (selp.f64 included: the elements' signs)
    got, want = run_whole(BlockScaledGemm(**SOFT_RUN), soft=True)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("kw, error", [(dict(kind="fp8"), r"kind is one of mxf8, nvfp4 .* not 'fp8'"),
                                       (dict(d_type="f16"), r"d_type one of f32, bf16, not .* 'f16'")])
def test_an_unknown_format_is_refused(kw, error):
    with pytest.raises(pc.PlanError, match=error):
        BlockScaledGemm(**kw)


SOFT_REASON = None if runtime.device_info() is not None and runtime.device_info()[1][0] >= 9 else (
    "the soft-model runs need a CUDA GPU with thread-block clusters (sm_90 or newer)")
#: (M, N, K, CTAs or pairs to launch): one tile; partial tiles; several tiles per CTA, both accumulators in turn
GPU_SIZES = [(128, 128, 128, None), (200, 300, 416, None), (520, 280, 1024, 1)]
# Each case in a child process with a time limit: a kernel that hangs or faults fails its case, not the suite.
RUN = """
import json, sys
from pycute.kernels.blockscaled_gemm import BlockScaledGemm
from pycute.compile import runtime
kind, g, m, n, k, sms = sys.argv[1], *map(int, sys.argv[2:7])
major, minor = runtime.device_info()[1]
gemm = BlockScaledGemm(kind, g, m, n, k, sms=sms * g if sms else None)
got, want = gemm.run(runtime.Gpu(), arch=f"sm_{major}{minor}a", seed=3)
print(json.dumps({"differ": int((got != want).sum()), "nonzero": int((want != 0).sum())}))
"""


@pytest.mark.gpu
@pytest.mark.skipif(SOFT_REASON is not None, reason=SOFT_REASON or "")
@pytest.mark.parametrize("size", GPU_SIZES, ids=["one-tile", "partial", "persistent"])
@pytest.mark.parametrize("kind, g", CASES, ids=IDS)
def test_the_soft_gemm_on_the_gpu_equals_the_reference(kind, g, size):
    m, n, k, sms = size
    run = subprocess.run([sys.executable, "-c", RUN, kind, str(g), str(m), str(n), str(k), str(sms or 0)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    case = json.loads(run.stdout.strip().splitlines()[-1])
    assert case["differ"] == 0 and case["nonzero"] > 0, case
