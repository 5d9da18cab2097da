"""The generated cp.async function issues exactly the plan's stream: compiled by NVRTC, its PTX interpreted thread
by thread (pycute.interp.stream) gives the same shared addresses, global addresses, sizes and src-sizes as
``plan.stream`` (the threads holding the vector that ends the array included), and SASS holds one LDGSTS per
planned copy site on sm_80, sm_90a and sm_100a."""
import re

import pytest

from pycute.atoms.cp_async import CpAsyncIssue, CpAsyncResidue
from pycute.compile.nvrtc import compile_cuda
from pycute.copy.cp_async import make_cp_async_copy
from pycute.interp.stream import trace_entry

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


def tail_threads(plan, tile) -> set[int]:
    """The threads whose copies in ``tile`` include the vector that ends the array."""
    return {t for t in range(plan.threads) for i in plan.stream(SMEM, *tile, thread=t)
            if isinstance(i, CpAsyncResidue) or i.size != plan.atom.size}


def test_every_thread_issues_the_plans_stream(compiled):
    plan, code, tiles = compiled
    assert sum(1 for i in code.instructions() if re.search(r"(^|\s)LDGSTS", i)) == plan.copy_sites
    for tile in tiles:
        for thread in sorted({0, 1, plan.threads // 2, plan.threads - 1} | tail_threads(plan, tile)):
            params = {0: GMEM, 1: SMEM, **{2 + k: t for k, t in enumerate(tile)}}
            got = trace_entry(code.ptx, params, {}, "probe", tid=thread).cp_async
            want = [i for i in plan.stream(SMEM, *tile, thread=thread) if isinstance(i, CpAsyncIssue)]
            assert [(i.smem, i.gmem - GMEM, i.size, i.src_size) for i in got] == \
                [(i.smem, i.gmem, i.size, i.src_size) for i in want], (tile, thread)


RESIDUE = [c for c in CP_ASYNC if (lambda p: p.tail is not None and p.tail.residue)(make_cp_async_copy(c[2], c[1], **c[3]))]


@pytest.mark.parametrize("name, g, s, options, tiles", RESIDUE, ids=[c[0] for c in RESIDUE])
def test_the_residue_is_a_zero_word_then_its_bytes_and_its_thread_waits_then_arrives_with_release(name, g, s, options, tiles):
    """The array's last bytes past its last 4-byte word: one zero st.shared.b32, then a byte load and store each;
    with an mbarrier completion that thread waits for its own copies and arrives itself (release)."""
    plan = make_cp_async_copy(s, g, **options)
    code = compile_cuda(probe_source(plan), arch="sm_90a")
    tile = tiles[1]
    threads = tail_threads(plan, tile)
    assert len(threads) == 1
    params = {0: GMEM, 1: SMEM, **{2 + k: t for k, t in enumerate(tile)}}
    ops = [entry[0] for entry in trace_entry(code.ptx, params, {}, "probe", tid=threads.pop()).trace]
    assert [op for op in ops if op.startswith("st.shared")] == ["st.shared.b32"] + ["st.shared.u8"] * plan.tail.residue
    assert ops.count("ld.global.u8") == plan.tail.residue
    assert [op for op in ops if "arrive" in op or "wait_all" in op] == (
        [] if plan.completion == "group" else ["cp.async.wait_all", "mbarrier.arrive.shared::cta.b64"])
