"""Layout algebra throughput, cold (caches cleared before each call) and cached.

Reference (CUTLASS's pure-Python pycute on this kind of machine): composition rank-2 ~13 us, logical_divide rank-2
~26 us, coalesce ~3.4 us. Run: ``pytest perf/test_bench_algebra.py --benchmark-only``.
"""
import pytest

import pycute as pc

L = pc.Layout
RANK2_A, RANK2_B = L((6, 2), (8, 2)), L((4, 3), (3, 1))
RANK3 = L((4, 2, 3), (2, 1, 8))
HIER = L((12, (4, 8)), (59, (13, 1)))

CASES = {
    "composition_rank2": (pc.composition, (RANK2_A, RANK2_B)),
    "composition_rank3_hier": (pc.composition, (HIER, (L(3, 4), L(8, 1)))),
    "coalesce_hier": (pc.coalesce, (L((2, (1, 6), (4, 2)), (1, (6, 2), (12, 48))),)),
    "complement": (pc.complement, (L(4, 2), 24)),
    "logical_divide_rank2": (pc.logical_divide, (L((8, 8), (1, 8)), L(4, 2))),
    "logical_divide_rank3": (pc.logical_divide, (RANK3, L(4, 2))),
    "zipped_divide_hier": (pc.zipped_divide, (L((9, (4, 8)), (59, (13, 1))), (L(3, 3), L((2, 4), (1, 8))))),
    "blocked_product": (pc.blocked_product, (L((2, 2), (1, 2)), L((2, 3), (3, 1)))),
    "right_inverse": (pc.right_inverse, (L((4, (2, 4)), (8, (1, 2))),)),
}


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


def test_crd2idx_hierarchical(benchmark):
    benchmark.group = "algebra cold"
    benchmark(HIER, (7, (3, 5)))
