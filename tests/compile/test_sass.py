"""SASS checks: the round-trip kernel of every atom x cta_group x swizzle issues exactly the planned UTCCPs."""
import pytest

import pycute as pc
from pycute.arch.sm100 import alloc_columns_for
from pycute.atoms import cp_candidates
from pycute.compile import utccp_instructions
from pycute.atoms.tcgen05_cp import atom_tmem_tensor
from pycute.tensor.canonical import kmajor_smem_buffer
from pycute.harness.tcgen05_cp import RoundTrip
from pycute.codegen.probe import probe_source

CASES = [(atom, sw) for g in (1, 2) for atom in cp_candidates(g) for sw in ("none", "32B", "64B", "128B")]


def plan_for(atom, swizzle, middle=4, dtype=pc.bf16):
    k = middle * atom.bits // dtype.bits
    columns = alloc_columns_for(k * dtype.bits // 32)
    src = kmajor_smem_buffer(dtype, atom.rows, k, swizzle)[0:atom.rows, 0:k]
    return pc.make_tiled_copy(atom_tmem_tensor(dtype, atom, k, columns), src, cta_group=atom.cta_group,
                              shape=atom.shape, multicast=atom.multicast or None)


@pytest.mark.parametrize("atom,swizzle", CASES, ids=[f"{a.ptx}-{s}" for a, s in CASES])
def test_round_trip_kernel_sass_has_the_planned_utccps(atom, swizzle):
    plan = plan_for(atom, swizzle)
    compiled = RoundTrip(plan, "rt").compile("sm_100a")
    instructions = compiled.instructions()
    assert utccp_instructions(instructions) == [atom.sass] * len(plan.instructions)
    hist = compiled.histogram()
    commit = "UTCBAR" if atom.cta_group == 1 else "UTCBAR.2CTA.MULTICAST"
    assert hist.get(commit) == 1
    assert hist.get("LDTM.x8", 0) == plan.dst.columns // 8          # the readback survived: it is used


@pytest.mark.parametrize("middle", [1, 3, 16])
def test_probe_sass_count_follows_the_plan(middle):
    plan = plan_for(cp_candidates(1)[0], "none", middle=middle)
    compiled = pc.compile.compile_cuda(probe_source(plan, "probe"))
    assert len(utccp_instructions(compiled.instructions())) == len(plan.instructions) == middle


def test_a_listing_splits_into_its_functions():
    src = ('extern "C" __global__ void a(unsigned* p) { p[0] = 1; }\n'
           'extern "C" __global__ void b(unsigned* p) { p[1] = 2; p[2] = 3; }\n')
    functions = pc.compile.function_instructions(pc.compile.compile_cuda(src).sass())
    assert set(functions) == {"a", "b"}
    assert all(f[-1].startswith(("NOP", "BRA")) and "EXIT" in f for f in functions.values())
    assert sum(i.startswith("STG") for i in functions["b"]) == 2 and sum(i.startswith("STG") for i in functions["a"]) == 1
