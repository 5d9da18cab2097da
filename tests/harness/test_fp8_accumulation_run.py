"""The H100 run of issue 43's accumulation experiment (docs/runs/wgmma/fp8-accumulation-h100.npz: every D code the
GPU wrote; the operands and C are regenerated from the run's seed by pycute.harness.wgmma_accumulation) replayed
through the records pycute holds as sm_90's (arch.sm90.wgmma.WGMMA_ACCUMULATION): every D of every kernel, the
crafted probes and the random cases, bit for bit, NaN codes included."""
import pathlib

import numpy as np
import pytest

from pycute.arch.sm90.wgmma import EXACT_ACCUMULATION, WGMMA_ACCUMULATION, WGMMA_TYPES
from pycute.harness.wgmma_accumulation import accumulation_tiles
from tools import fp8_accumulation as tool

RUN = pathlib.Path(__file__).resolve().parents[2] / "docs/runs/wgmma/fp8-accumulation-h100.npz"


@pytest.fixture(scope="module")
def run():
    return dict(np.load(RUN))


def test_the_run_is_an_h100s(run):
    assert str(run["device"]) == "Gpu(NVIDIA H100 80GB HBM3, sm_90)"


@pytest.mark.parametrize("kernel", tool.KERNELS, ids=lambda k: k.name)
def test_the_held_record_reproduces_every_d_of_the_run(run, kernel):
    tiles = accumulation_tiles(kernel, tool.SEED)
    model = WGMMA_ACCUMULATION[WGMMA_TYPES[kernel.a].family, kernel.d]
    assert model.source.startswith("measured: docs/runs/wgmma/fp8-accumulation-h100.npz")
    assert np.array_equal(kernel.model(tiles, model), run[kernel.entry])


def test_the_exact_sum_rounded_once_misses_most_fp8_into_f32(run):
    # pycute's model before the run: 77570 of the 90112 D of e4m3 x e4m3 into f32 differ (the run's jsonl row)
    kernel = tool.KERNELS[0]
    got = kernel.model(accumulation_tiles(kernel, tool.SEED), EXACT_ACCUMULATION)
    assert int((~tool._same(run[kernel.entry], got, kernel.d)).sum()) == 77570
