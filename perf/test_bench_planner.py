"""Planning throughput. Targets: the article's demo with inference <= 0.1 ms (median), any atom's 128-row,
4-middle copy <= 0.2 ms, a repeated request <= 5 us. "cold" clears the plan cache and every algebra cache first."""
import pytest

import pycute as pc
from pycute.copy.tcgen05_cp.planner import _plan
from pycute.layout import clear_caches

from .cases import ATOMS, atom_copy, demo_copy, failing_plan, mma_plans, smem_copies


def cold(fn):
    def call():
        _plan.cache_clear()
        clear_caches()
        return fn()
    return call


def test_demo_inferred_cold(benchmark):
    args = demo_copy()
    benchmark.group = "plan"
    benchmark(cold(lambda: pc.make_tiled_copy(*args)))


def test_demo_cached(benchmark):
    args = demo_copy()
    pc.make_tiled_copy(*args)
    benchmark.group = "plan"
    benchmark(pc.make_tiled_copy, *args)


@pytest.mark.parametrize("middle", [1, 4, 48])   # 48 x 4 KiB: the most a CTA's shared memory holds
@pytest.mark.parametrize("name", sorted(ATOMS))
def test_atom_explicit_cold(benchmark, name, middle):
    atom = ATOMS[name]
    dst, src = atom_copy(atom, middle)
    benchmark.group = f"plan explicit, middle {middle}"
    plan = benchmark(cold(lambda: pc.make_tiled_copy(dst, src, cta_group=atom.cta_group, shape=atom.shape,
                                                      multicast=atom.multicast or None)))
    assert len(plan.instructions) == middle


def test_failing_plan_time_to_error(benchmark):
    benchmark.group = "plan"
    benchmark(cold(failing_plan()))


def test_tmem_load_of_a_128x256_f32_accumulator_cold(benchmark):
    acc = pc.mma_accumulator(pc.f32, 128, 256)
    benchmark.group = "plan ld/st"
    benchmark(cold(lambda: pc.make_tmem_copy(acc)))


@pytest.mark.parametrize("label", sorted(mma_plans()))
def test_mma_plan_cold(benchmark, label):
    build = mma_plans()[label]
    benchmark.group = "plan mma"
    plan = benchmark(lambda: (clear_caches(), build())[1])
    assert len(plan.instructions) == plan.lower_bound


@pytest.mark.parametrize("label", sorted(smem_copies()))
def test_smem_copy_plan(benchmark, label):
    """make_smem_copy weighs every form and, for stmatrix .trans, searches the value pairings (no plan cache)."""
    dst, src, arch = smem_copies()[label]
    benchmark.group = "plan smem"
    plan = benchmark(lambda: pc.make_smem_copy(dst, src, arch))
    assert plan.wavefronts == plan.min_wavefronts
