"""L2 cache policies on bulk copies and cp.async (PTX ISA createpolicy, ``.L2::cache_hint``): the plan's option is
the policy the generated code makes once and hands every copy; the PTX interpreter reads each copy's policy back
from the compiled code; SASS carries it as the copy's memory descriptor; the bytes copied are the same."""
import re

import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import Layout
from pycute.arch.sm80.cache import policy_of_ptx, policy_of_token
from pycute.compile import compile_cuda
from pycute.copy.bulk import make_bulk_copy
from pycute.copy.cp_async import make_cp_async_copy
from pycute.interp.stream import trace_entry

POLICY = pc.CachePolicy("evict_last", 0.25, "evict_first")
ARRAY = pc.make_global_tensor(pc.f32, Layout((128, 96), (96, 1)))
TILE = pc.make_smem_tensor(pc.f32, Layout((32, 32), (32, 1)))
GMEM = 0x7000_0000_0000


@settings(max_examples=30, deadline=None)
@given(primary=st.sampled_from(["evict_normal", "evict_first", "evict_last", "evict_unchanged"]),
       secondary=st.sampled_from(["evict_unchanged", "evict_first"]),
       fraction=st.floats(min_value=2.0 ** -20, max_value=1.0, allow_nan=False, width=32))
def test_a_policy_survives_its_instruction_and_its_interpreter_token(primary, secondary, fraction):
    policy = pc.CachePolicy(primary, fraction, secondary)
    assert policy_of_token(policy.token) == policy
    assert policy_of_ptx(policy.ptx, int(policy.fraction_literal[2:], 16)) == policy


def _default_descriptors(sass: str) -> set[str]:
    """The uniform registers a kernel loads its default global-memory descriptor into (c[0x0][0x208])."""
    return set(re.findall(r"ULDC\.64 (UR\d+), c\[0x0\]\[0x208\]", sass))


@pytest.fixture(scope="module")
def bulk():
    load, store = make_bulk_copy(TILE, ARRAY, cache_hint=POLICY), make_bulk_copy(ARRAY, TILE, cache_hint="evict_first")
    source = (load.cuda("ld") + store.cuda("st").replace('#include "pycute/bulk.cuh"\n', "") +
              'extern "C" __global__ void kl(const void* g, unsigned s, int a, int b) { ld(g, s, 8u, a, b); }\n'
              'extern "C" __global__ void ks(void* g, unsigned s, int a, int b) { st(g, s, a, b); }\n')
    return load, store, compile_cuda(source, arch="sm_90a")


def test_a_hinted_bulk_copy_issues_every_chunk_with_its_policy(bulk):
    load, store, code = bulk
    for entry, plan in (("kl", load), ("ks", store)):
        got = trace_entry(code.ptx, {0: GMEM, 1: 0x400, 2: 3, 3: 2}, {}, entry).bulk
        want = plan.stream(0x400, 3, 2)
        assert [i.policy for i in got] == [i.policy for i in want] == [plan.cache_hint] * len(want)
        assert len(got) == len(want)
        plan.verify()


def test_a_hinted_bulk_copy_carries_the_policy_as_its_descriptor_in_sass(bulk):
    load, store, code = bulk
    lines = [line for line in code.sass().splitlines() if "UBLKCP" in line]
    assert len(lines) == len(load.instructions) + len(store.instructions)
    assert all("desc[" in line for line in lines)
    plain = make_bulk_copy(TILE, ARRAY).cuda("ld") + \
        'extern "C" __global__ void k(const void* g, unsigned s, int a, int b) { ld(g, s, 8u, a, b); }'
    assert not any("desc[" in line for line in compile_cuda(plain, arch="sm_90a").sass().splitlines()
                   if "UBLKCP" in line)


@pytest.mark.parametrize("policy", ["evict_first", "evict_last", POLICY])
def test_a_hinted_cp_async_is_refused_with_the_h200_evidence(policy):
    # every hinted cp.async the H200 ran raised an illegal-instruction exception (docs/runs/tma/tma-h200-boxes.jsonl)
    with pytest.raises(pc.PlanError, match=r"cp.async with .L2::cache_hint raised an illegal-instruction exception "
                                           r"on the H200.*make_bulk_copy and make_tma_copy take the hint"):
        make_cp_async_copy(TILE, ARRAY, threads=128, cache_hint=policy)


def test_a_dsmem_copy_takes_no_cache_hint():
    from pycute.arch.sm90.bulk import bulk_ptx
    with pytest.raises(pc.PlanError, match="a DSMEM copy takes no L2 cache hint"):
        bulk_ptx("dsmem", cache_hint=True)


def test_explain_names_the_policy_of_every_variant():
    for plan in (make_bulk_copy(TILE, ARRAY, cache_hint=POLICY), pc.make_tma_copy(TILE, ARRAY, cache_hint=POLICY)):
        assert "cache hint  .L2::cache_hint with createpolicy evict_last for 0.25 of the accesses, evict_first for " \
               "the rest" in plan.explain()
