"""SASS checks: the round-trip kernel of every atom x cta_group x swizzle issues exactly the planned UTCCPs."""
import pytest

import pycute as pc
from pycute.arch.sm100 import alloc_columns_for
from pycute.atoms import cp_candidates
from pycute.compile import compile_cuda, function_instructions, opcode_histogram, utccp_instructions
from pycute.atoms.tcgen05_cp import atom_tmem_tensor
from pycute.tensor.canonical import kmajor_smem_buffer
from pycute.harness.tcgen05_cp import RoundTrip
from pycute.codegen.probe import probe_entry, probe_source

CASES = [(atom, sw) for g in (1, 2) for atom in cp_candidates(g) for sw in ("none", "32B", "64B", "128B")]


def plan_for(atom, swizzle, middle=4, dtype=pc.bf16):
    k = middle * atom.bits // dtype.bits
    columns = alloc_columns_for(k * dtype.bits // 32)
    src = kmajor_smem_buffer(dtype, atom.rows, k, swizzle)[0:atom.rows, 0:k]
    return pc.make_tiled_copy(atom_tmem_tensor(dtype, atom, k, columns), src, cta_group=atom.cta_group,
                              shape=atom.shape, multicast=atom.multicast or None)


@pytest.fixture(scope="module")
def round_trips():
    """Every case's round-trip kernel (``rt<case>_roundtrip``) in one translation unit, compiled for sm_100a and
    disassembled once (an NVRTC compile and an nvdisasm run each were ~1 s a case): each kernel's SASS is its own
    function's, the same instructions as its kernel compiled alone but for the numbering of branch labels."""
    source = "".join(RoundTrip(plan_for(atom, sw), f"rt{i}").source() for i, (atom, sw) in enumerate(CASES))
    return function_instructions(compile_cuda(source, "sm_100a").sass())


@pytest.mark.parametrize("atom,swizzle", CASES, ids=[f"{a.ptx}-{s}" for a, s in CASES])
def test_round_trip_kernel_sass_has_the_planned_utccps(atom, swizzle, round_trips):
    plan = plan_for(atom, swizzle)
    instructions = round_trips[RoundTrip(plan, f"rt{CASES.index((atom, swizzle))}").entry]
    assert utccp_instructions(instructions) == [atom.sass] * len(plan.instructions)
    hist = opcode_histogram(instructions)
    commit = "UTCBAR" if atom.cta_group == 1 else "UTCBAR.2CTA.MULTICAST"
    assert hist.get(commit) == 1
    assert hist.get("LDTM.x8", 0) == plan.dst.columns // 8          # the readback survived: it is used


MIDDLES = [1, 3, 16]


@pytest.fixture(scope="module")
def probes():
    """The three probe kernels (``probe<middle>_probe``) in one translation unit: one compile, one nvdisasm run."""
    source = "".join(probe_source(plan_for(cp_candidates(1)[0], "none", middle=m), f"probe{m}") for m in MIDDLES)
    return function_instructions(compile_cuda(source).sass())


@pytest.mark.parametrize("middle", MIDDLES)
def test_probe_sass_count_follows_the_plan(middle, probes):
    plan = plan_for(cp_candidates(1)[0], "none", middle=middle)
    assert len(utccp_instructions(probes[probe_entry(f"probe{middle}")])) == len(plan.instructions) == middle


def test_a_listing_splits_into_its_functions():
    src = ('extern "C" __global__ void a(unsigned* p) { p[0] = 1; }\n'
           'extern "C" __global__ void b(unsigned* p) { p[1] = 2; p[2] = 3; }\n')
    functions = pc.compile.function_instructions(pc.compile.compile_cuda(src).sass())
    assert set(functions) == {"a", "b"}
    assert all(f[-1].startswith(("NOP", "BRA")) and "EXIT" in f for f in functions.values())
    assert sum(i.startswith("STG") for i in functions["b"]) == 2 and sum(i.startswith("STG") for i in functions["a"]) == 1
