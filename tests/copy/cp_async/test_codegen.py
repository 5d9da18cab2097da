"""The generated cp.async function issues exactly the plan's stream: compiled by NVRTC, its PTX interpreted thread
by thread (pycute.sim.ptx) gives the same shared addresses, global addresses, sizes and src-sizes as
``plan.stream``, and SASS holds one LDGSTS per planned instruction on sm_80, sm_90a and sm_100a."""
import re

import pytest

from pycute.compile.nvrtc import compile_cuda
from pycute.copy.cp_async import make_cp_async_copy
from pycute.sim.ptx import trace_entry

from tests.copy.flat_cases import CP_ASYNC

GMEM = 0x7000_0000_0000
SMEM = 0x400


def probe_source(plan) -> str:
    modes = len(plan.tile_shape)
    tiles = ", ".join(f"int t{k}" for k in range(modes))
    args = ", ".join(f"t{k}" for k in range(modes))
    mbar = ", 8u" if plan.completion == "arrive" else ""
    return plan.cuda("copy") + f"""
extern "C" __global__ void probe(const void* gmem, unsigned smem, {tiles}) {{
  copy(gmem, smem, threadIdx.x, {args}{mbar});
}}
"""


@pytest.fixture(scope="module", params=CP_ASYNC, ids=[c[0] for c in CP_ASYNC])
def compiled(request):
    _, g, s, options, tiles = request.param
    plan = make_cp_async_copy(s, g, **options)
    return plan, compile_cuda(probe_source(plan), arch="sm_90a"), tiles


def test_every_thread_issues_the_plans_stream(compiled):
    plan, code, tiles = compiled
    assert sum(1 for i in code.instructions() if re.search(r"(^|\s)LDGSTS", i)) == len(plan.instructions)
    for tile in tiles:
        for thread in sorted({0, 1, plan.threads // 2, plan.threads - 1}):
            params = {0: GMEM, 1: SMEM, **{2 + k: t for k, t in enumerate(tile)}}
            got = trace_entry(code.ptx, params, {}, "probe", tid=thread).cp_async
            want = plan.stream(SMEM, *tile, thread=thread)
            assert [(i.smem, i.gmem - GMEM, i.size, i.src_size) for i in got] == \
                [(i.smem, i.gmem, i.size, i.src_size) for i in want], (tile, thread)


@pytest.mark.parametrize("arch", ["sm_80", "sm_100a"])           # sm_90a: the stream test's build
def test_sass_has_one_ldgsts_per_planned_instruction(compiled, arch):
    plan, _, _ = compiled
    sass = compile_cuda(probe_source(plan), arch=arch).instructions()
    assert sum(1 for i in sass if re.search(r"(^|\s)LDGSTS", i)) == len(plan.instructions)
