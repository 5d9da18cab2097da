"""The wgmma accumulation experiment (tools/fp8_accumulation.py) on the CPU: its kernels compile, run whole through
run_kernel equal to the model the emulator uses, and its fit finds a planted model among the candidates."""
import numpy as np
import pytest

from pycute.arch.sm90.wgmma import EXACT_ACCUMULATION, WGMMA_ACCUMULATION, WgmmaAccumulation
from pycute.compile.nvrtc import compile_cuda
from pycute.harness.wgmma_accumulation import AccumulationKernel, Tiles, accumulation_tiles, encode, \
    kernels_source
from tools import fp8_accumulation as tool


def _some(tiles: Tiles, idx: list[int]) -> Tiles:
    return Tiles(tiles.a[idx], tiles.b[idx], tiles.c[idx], tiles.scale_d[idx], tuple(tiles.kind[i] for i in idx))


@pytest.mark.parametrize("kernel", [AccumulationKernel("f8e4m3", "f8e5m2", "f32", 64),
                                    AccumulationKernel("f8e5m2", "f8e5m2", "f16", 32)], ids=lambda k: k.name)
def test_kernel_runs_whole_as_the_emulator_models_it(kernel):
    tiles = _some(accumulation_tiles(kernel, 3), [0, 5, 20])          # a single-product probe, uniform, specials
    compiled = compile_cuda(kernels_source((kernel,)), arch="sm_90a")
    got = kernel.run_cpu(tiles, compiled)
    assert np.array_equal(got, kernel.model(tiles, WGMMA_ACCUMULATION["fp8", kernel.d]))
    assert tiles.scale_d.tolist() == [1, 1, 1]


def test_unscaled_ctas_ignore_c():
    kernel = AccumulationKernel("f8e4m3", "f8e4m3", "f32", 32)
    tiles = accumulation_tiles(kernel, 0)
    i = tiles.kind.index("unscaled")
    one = _some(tiles, [i])
    zero_c = Tiles(one.a, one.b, np.zeros_like(one.c), one.scale_d, one.kind)
    assert tiles.scale_d[i] == 0
    assert np.array_equal(kernel.model(one, EXACT_ACCUMULATION), kernel.model(zero_c, EXACT_ACCUMULATION))


def test_encode_refuses_a_value_the_type_lacks():
    assert encode(np.array([1.0, -0.0, 448.0]), "f8e4m3").tolist() == [0x38, 0x80, 0x7E]
    with pytest.raises(ValueError, match="0.3 is not a f8e4m3 value"):
        encode(np.array([0.3]), "f8e4m3")


def test_fit_finds_a_planted_model():
    planted = tool.Candidate(WgmmaAccumulation(13, 32, "aligned", "rz", "rz"))
    kernel = tool.KERNELS[0]
    runs = {kernel.entry: tool.predict(kernel, tool._tiles(kernel, tool.DRY_CTAS), planted)}
    cands = [tool.Candidate(EXACT_ACCUMULATION), planted,
             tool.Candidate(WgmmaAccumulation(14, 32, "aligned", "rz", "rz")),
             tool.Candidate(WgmmaAccumulation(13, 32, "aligned", "rd", "rz")),
             tool.Candidate(WgmmaAccumulation(13, 32, "after", "rz", "rz"))]
    scored = tool.fit(runs, [kernel], cands, ctas=tool.DRY_CTAS)
    assert scored[0][1] == planted and scored[0][0] == 0
    assert all(n > 0 for n, _, _ in scored[1:])
