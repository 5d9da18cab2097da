"""Emission and compilation. Targets: emission <= 1 ms per plan; pycute's own work around a cold compile
(emission, cache key, cache lookup and store) <= 10% of the NVRTC time; a cache hit <= 2 ms."""
import tempfile

import pytest

import pycute as pc
from pycute.compile import CompileCache, compile_cuda
from pycute.codegen.probe import probe_source

from .cases import ATOMS, atom_copy, compile_overhead, demo_copy


@pytest.mark.parametrize("middle", [1, 64])
def test_emission(benchmark, middle):
    atom = ATOMS["128x128b-g1"]          # 64 x 2 KiB fits a CTA's shared memory (64 x 4 KiB would not)
    dst, src = atom_copy(atom, middle)
    plan = pc.make_tiled_copy(dst, src, shape=atom.shape)
    benchmark.group = "emit"
    code = benchmark(plan.cuda, "copy")
    assert code.count("pycute_tcgen05_cp_128x128b_cg1(tmem_base") == middle


def test_nvrtc_cold(benchmark):
    source = probe_source(pc.make_tiled_copy(*demo_copy()), "cold")
    benchmark.group = "compile"
    benchmark.pedantic(compile_cuda, args=(source,), kwargs={"cache": False}, rounds=5, iterations=1)


def test_pycute_overhead_around_a_cold_compile(benchmark):
    """Everything compile_cuda does besides NVRTC, for a cache miss: emit, key, lookup, store."""
    benchmark.group = "compile"
    benchmark(compile_overhead(pc.make_tiled_copy(*demo_copy()), tempfile.mkdtemp()))


def test_cache_hit(benchmark):
    source = probe_source(pc.make_tiled_copy(*demo_copy()), "hit")
    cache = CompileCache(tempfile.mkdtemp())
    compile_cuda(source, cache=cache)
    benchmark.group = "compile"
    result = benchmark(compile_cuda, source, cache=cache)
    assert result.from_cache
