"""pycute/kernels/hopper_gemm, the Hopper wgmma GEMM from plans, checked without a GPU: each configuration compiles
for sm_90a to exactly the planned instructions per k-block and tile (HGMMA / QGMMA, the TMA loads with B multicast,
the epilogue's stmatrix and TMA stores) with no local memory; one compiled kernel serves every problem (the
problem's tensor maps come from plans that issue the kernel's boxes); rows that TMA cannot store are refused; the
body is kernel.cuh as it is, after the configuration's constants, and its hand-written lines are what the docs say;
``choose`` weighs waves of tiles. Its H200 runs are docs/hopper-gemm.md."""
import re
from pathlib import Path

import pytest

import pycute as pc
from pycute.kernels import Kernel
from pycute.kernels.hopper_gemm import HANDWRITTEN_LINES, GemmPlans, HopperGemm, candidates, choose, kernel_body_lines
from pycute.kernels.hopper_gemm.config import BODY

ROOT = Path(__file__).resolve().parents[2]

CONFIGS = {"bf16 cooperative 128x256": HopperGemm(),
           "bf16 ping-pong 128x128": HopperGemm(BN=128, m_blocks=2, mode="pingpong"),
           "e4m3 cooperative 128x256": HopperGemm(dtype="e4m3"),
           "bf16 64x64, one consumer, 2 CTAs/SM": HopperGemm(BN=64, consumers=1, stages=5, cluster=1)}


@pytest.fixture(scope="module", params=list(CONFIGS), ids=list(CONFIGS))
def built(request):
    g = CONFIGS[request.param]
    return g, g.compile()


def test_each_k_block_is_the_planned_wgmmas_and_no_local_memory(built):
    g, code = built
    h = code.histogram()
    mma = {k: v for k, v in h.items() if re.match(r"[HQ]GMMA\.", k)}
    family = "QGMMA" if g.dtype == "e4m3" else "HGMMA"
    k = 32 if g.dtype == "e4m3" else 16
    assert mma == {f"{family}.64x{g.BN}x{k}.F32{'.E4M3.E4M3' if g.dtype == 'e4m3' else '.BF16'}": 4 * g.m_blocks}
    assert len(g.plans.mma.instructions) == 4
    assert not any(op.startswith(("LDL", "STL")) for op in h)


def test_the_loads_are_one_a_box_and_a_multicast_half_of_b_per_k_block(built):
    g, code = built
    h = code.histogram()
    if g.cluster > 1:
        assert (h.get("UTMALDG.2D"), h.get("UTMALDG.2D.MULTICAST")) == (1, 1)
    else:
        assert h.get("UTMALDG.2D") == 2


def test_the_epilogue_stores_each_64x64_chunk_with_four_stmatrix_x4_per_warp_and_one_tma_store(built):
    g, code = built
    h = code.histogram()
    chunks = g.BN // 64 * g.m_blocks
    assert h.get("STSM.16.M88.4") == 4 * chunks and h.get("UTMASTG.2D") == chunks


def test_the_source_is_the_constants_the_plans_functions_then_the_body_as_it_is(built):
    g, _ = built
    source, body = g.source(), BODY.read_text()
    assert source.endswith(body) and f"constexpr unsigned BM = {g.BM}u;" in source
    assert f"constexpr bool COOPERATIVE = {'true' if g.mode == 'cooperative' else 'false'};" in source


def test_the_body_is_one_text_for_every_configuration_with_no_spliced_values():
    assert "{" + "self" not in BODY.read_text() and "{{" not in BODY.read_text()
    assert all(g.source().endswith(BODY.read_text()) for g in CONFIGS.values())


def test_the_hand_written_lines_are_counted_in_the_docs():
    assert kernel_body_lines() == HANDWRITTEN_LINES
    assert f"{HANDWRITTEN_LINES} hand-written lines" in (ROOT / "docs" / "kernels.md").read_text()


def test_a_configuration_follows_the_kernel_protocol():
    g = HopperGemm()
    assert isinstance(g, Kernel)
    shape = g.launch_shape
    assert (shape.entry, shape.threads, shape.smem_bytes, shape.cluster) == ("gemm", 384, g.smem_bytes, (2, 1, 1))


@pytest.mark.parametrize("mnk", [(8192, 8192, 8192), (1000, 1304, 528), (64, 8, 16), (777, 4104, 2056), (1, 8, 1)])
@pytest.mark.parametrize("g", candidates() + candidates("e4m3"), ids=repr)
def test_one_kernel_serves_every_problem_its_tensor_maps_issue_the_kernels_boxes(g, mnk):
    pitch = -(-mnk[2] // 16) * 16                 # A's and B's rows in whole 16-byte units (TMA's stride rule)
    assert GemmPlans.of(g, *mnk, lda=pitch, ldb=pitch).issues_as(g.plans)


def test_padded_rows_load_any_k_but_d_rows_must_be_whole_16_byte_units():
    g = HopperGemm()
    assert GemmPlans.of(g, 333, 520, 1001, lda=1008, ldb=1008, ldd=520).issues_as(g.plans)
    with pytest.raises(pc.PlanError, match=r"rows are 1034 B; a TMA store writes every 16-byte unit"):
        GemmPlans.of(g, 333, 517, 64, ldd=520)


def test_the_mainloop_pipeline_passes_the_model_checker():
    pc.check_pipeline(HopperGemm(BN=64, consumers=1, stages=2, cluster=1).plans.mainloop)


@pytest.mark.parametrize("mnk, tile", [((512, 512, 512), (64, 64)), ((1024, 1024, 1024), (64, 64)),
                                       ((2048, 2048, 2048), (128, 256)), ((8192, 8192, 8192), (128, 256)),
                                       ((64, 8192, 8192), (64, 64))])
def test_choose_weighs_waves_of_tiles(mnk, tile):
    g = choose(*mnk)
    assert (g.BM, g.BN) == tile
