"""Layout algebra throughput, cold (caches cleared before each call) and cached, on the inputs ``perf.report``
times beside CUTLASS pycute (``algebra_cases.cases``) plus the operations only pycute has.

Run: ``pytest perf/test_bench_algebra.py --benchmark-only``; ``python -m perf.report`` prints the side-by-side.
"""
import pytest

import pycute as pc

from .algebra_cases import cases

L = pc.Layout

#: Operations CUTLASS pycute does not have, timed by the report without a reference.
PYCUTE_ONLY = {
    "blocked_product": (pc.blocked_product, (L((2, 2), (1, 2)), L((2, 3), (3, 1)))),
    "raked_product": (pc.raked_product, (L((2, 2), (1, 2)), L((2, 3), (3, 1)))),
    "tile_to_shape": (pc.tile_to_shape, (L((8, 8), (8, 1)), (64, 32))),
    "flat_divide": (pc.flat_divide, (L((16, 8), (1, 16)), (L(4, 1), L(2, 1)))),
    "upcast": (pc.upcast, (L((16, 8), (1, 16)), 4)),
    "max_common_vector": (pc.max_common_vector, (L((8, 4), (1, 8)), L((8, 4), (1, 16)))),
    "make_ordered_layout": (pc.make_ordered_layout, ((4, 8, 2), (1, 0, 2))),
}
CASES = {**cases(pc), **PYCUTE_ONLY}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cold(benchmark, cold, name):
    fn, args = CASES[name]
    benchmark.group = "algebra cold"
    benchmark(cold(lambda: fn(*args)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_cached(benchmark, name):
    fn, args = CASES[name]
    fn(*args)
    benchmark.group = "algebra cached"
    benchmark(fn, *args)
