"""The PTX interpreter runs a whole kernel's issuing threads: the grid's and the cluster's special registers (each
CTA's rank in a multicast, a tile index from %ctaid.y) and TMEM allocation are modelled, so a multicast load's
compiled code, run as each CTA of the cluster, issues that CTA's boxes."""
import pytest

import pycute as pc
from pycute import Layout
from pycute.compile.nvrtc import compile_cuda
from pycute.errors import CompileError
from pycute.interp.stream import trace_entry

ARRAY = pc.make_global_tensor(pc.bf16, Layout((300, 128), (128, 1)))
TILE = pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")


def test_each_cta_of_a_multicast_issues_its_own_slice():
    plan = pc.make_tma_copy(TILE, ARRAY, multicast=2)
    source = plan.cuda("ld") + ('extern "C" __global__ void probe(const void* map, unsigned smem, unsigned mbar) '
                                '{ if (threadIdx.x == 0) ld(map, smem, mbar, blockIdx.y, 1); }')
    ptx = compile_cuda(source, arch="sm_90a").ptx
    for rank in (0, 1):
        thread = trace_entry(ptx, {0: 0x7000_0000_0000, 1: 0x400, 2: 8}, {}, "probe",
                             specials={"%cluster_ctarank": rank, "%cluster_nctarank": 2, "%ctaid.y": 2})
        assert [(i.coords, i.smem) for i in thread.tma] == [(i.coords, i.smem) for i in plan.stream(0x400, 2, 1, cta=rank)]


def test_tcgen05_alloc_is_traced_not_refused():
    source = ('#include "pycute/sm100.cuh"\nextern "C" __global__ void probe() { __shared__ unsigned slot; '
              'if (threadIdx.x < 32) { pycute_tmem_alloc<1>(pycute_smem_address(&slot), 64); '
              'pycute_tmem_relinquish_alloc_permit<1>(); } }')
    thread = trace_entry(compile_cuda(source, arch="sm_100a").ptx, {}, {"slot": 0x100}, "probe")
    assert [op for op, _ in thread.trace if op.startswith("tcgen05")][:2] == [
        "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32", "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned"]


def test_an_unmodelled_special_register_is_named():
    with pytest.raises(CompileError, match="special registers %gridid are not modelled"):
        trace_entry(".version 8.0\n.target sm_90a\n.address_size 64\n.entry e()\n{\nret;\n}", {}, {}, "e",
                    specials={"%gridid": 1})
