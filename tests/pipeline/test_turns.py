"""make_turns: groups that read the same stages take turns at the tensor cores on named barriers -- group 0 first,
then each group in order, every barrier counting both groups' threads -- and a whole-kernel run on the CPU keeps
that order; a group that skips its wait is a race on what the previous group wrote in its turn."""
import numpy as np
import pytest

import pycute as pc
from pycute.compile import compile_cuda
from pycute.interp import RaceError, run_kernel
from pycute.pipeline import make_turns

ROUNDS = 3


def test_group_g_waits_on_its_own_barrier_and_passes_to_the_next_groups():
    turns = make_turns(3, barrier=4, name="mma")
    assert turns.barriers == (4, 5, 6) and turns.threads == 256
    assert [turns.passes_to(g) for g in range(3)] == [5, 6, 4]
    text = turns.cuda()
    assert 'asm volatile("bar.sync %0, 256;" :: "r"(4u + group)' in text
    assert 'asm volatile("bar.arrive %0, 256;" :: "r"(4u + (group + 1u) % 3u)' in text
    assert "if (group == 0u) asm volatile(\"bar.arrive %0, 256;\" :: \"r\"(4u)" in text


@pytest.mark.parametrize("kwargs, message", [
    (dict(groups=1), r"groups=1: turns take at least 2 groups"),
    (dict(groups=3, barrier=14), r"barriers 14\.\.16: named barriers 1-15 \(0 is __syncthreads'\)"),
    (dict(groups=2, barrier=0), r"barriers 0\.\.1: named barriers 1-15"),
    (dict(groups=2, caller="threads"), r"caller 'threads': a group is a 'warp' or a 'warpgroup'"),
    (dict(groups=2, name="1x"), r"name '1x' is not a C identifier")])
def test_bad_turns_are_refused_naming_the_rule(kwargs, message):
    with pytest.raises(pc.PlanError, match=message):
        make_turns(**kwargs)


def source(groups: int, skip_wait: bool = False) -> str:
    turns = make_turns(groups, caller="warp", barrier=2, name="mma")
    wait = "" if skip_wait else "mma_wait(g);"
    # each warp, in its turn, appends its index to a shared log after reading the previous entry (so the entry
    # the previous group wrote in its turn is read in this one's), then the log is copied out
    return turns.cuda() + f"""
extern "C" __global__ void turns(unsigned* out) {{
  __shared__ unsigned log[{ROUNDS * groups + 1}];
  const unsigned g = threadIdx.x / 32u;
  if (threadIdx.x == 0) log[0] = 0u;
  __syncthreads();
  mma_start(g);
  for (unsigned r = 0; r < {ROUNDS}u; ++r) {{
    {wait}
    if (threadIdx.x % 32u == 0u) {{ const unsigned n = log[0]; log[1u + n] = g; log[0] = n + 1u; }}
    __syncwarp();
    mma_pass(g);
  }}
  __syncthreads();
  if (threadIdx.x == 0) for (unsigned i = 0; i < {ROUNDS * groups + 1}u; ++i) out[i] = log[i];
}}
"""


@pytest.mark.parametrize("groups", [2, 3])
def test_the_groups_take_their_turns_in_order_in_a_whole_kernel_run(groups):
    out = np.zeros(ROUNDS * groups + 1, dtype=np.uint32)
    run_kernel(compile_cuda(source(groups), arch="sm_90a"), "turns", block=32 * groups, args=[out])
    assert out[0] == ROUNDS * groups and list(out[1:]) == list(range(groups)) * ROUNDS


def test_a_group_that_does_not_wait_for_its_turn_races_with_the_previous_turn():
    out = np.zeros(ROUNDS * 2 + 1, dtype=np.uint32)
    with pytest.raises(RaceError, match=r"shared byte"):
        run_kernel(compile_cuda(source(2, skip_wait=True), arch="sm_90a"), "turns", block=64, args=[out])
