"""The register-fragment round trips (pycute/harness/fragments.py) run whole on the CPU: every thread's coordinate
helpers give ``fragment_coords``' tables."""
import numpy as np
import pytest

import pycute as pc
from pycute.harness.fragments import CoordsRoundTrip, ReduceRoundTrip, same_floats
from pycute.mma.reduce import make_reduction
from pycute.interp import run_kernel

COORDS = {
    "wgmma D f32 128x24": pc.wgmma_accumulator(pc.f32, 128, 24),
    "wgmma A e4m3 64x64": pc.wgmma_a_fragment(pc.f8e4m3, 64, 64),
    "tcgen05.ld 8 warps 128x64": pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64), "ld", warps=8),
}


@pytest.mark.parametrize("name", list(COORDS))
def test_each_threads_helpers_give_the_tables(name):
    rt = CoordsRoundTrip(pc.fragment_coords(COORDS[name]))
    out = np.zeros(rt.out_words, dtype=np.uint32)
    run_kernel(rt.compile(), block=rt.threads, args=[np.zeros(4, dtype=np.uint8), out])
    assert np.array_equal(rt.got(out), rt.expected())


REDUCTIONS = {
    "wgmma D f32 128x64 rows": (pc.wgmma_accumulator(pc.f32, 128, 64), "row"),
    "wgmma D f32 64x24 rows": (pc.wgmma_accumulator(pc.f32, 64, 24), "row"),
    "tcgen05.ld 4 warps 128x32 rows": (pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32), "ld", warps=4), "row"),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_every_reduction_function_leaves_the_references_bits(name):
    rt = ReduceRoundTrip(make_reduction(*REDUCTIONS[name]))
    out = np.zeros(rt.out_words, dtype=np.uint32)
    run_kernel(rt.compile(), block=rt.threads, args=[rt.input(3).view(np.float32), out])
    assert same_floats(rt.got(out), rt.expected(3)).all()
