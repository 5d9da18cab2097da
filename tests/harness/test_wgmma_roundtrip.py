"""The wgmma round trip on the CPU: every case of the GPU matrix compiles (one NVRTC call) for sm_90a to exactly its
planned HGMMA / QGMMA / IGMMA with no local memory; the round-trip kernel itself, interpreted, issues each
warpgroup's planned stream at its shared buffer; the emulator's registers, read through the fragment, are the
reference MMA of the input it uploads. tests/gpu/test_gpu_wgmma.py and python -m tools wgmma run it on the H200."""
import numpy as np
import pytest

from pycute.compile.sass import opcode_histogram
from pycute.harness.wgmma import WGMMA_CASES, compile_cases
from pycute.interp.stream import trace_entry


@pytest.fixture(scope="module")
def sass():
    return compile_cases()


@pytest.mark.parametrize("case", WGMMA_CASES, ids=lambda c: c.name)
def test_every_case_compiles_to_its_planned_wgmma_and_no_local_memory(sass, case):
    h = opcode_histogram(sass[case.name])
    mmas = {op: n for op, n in h.items() if "GMMA" in op}
    assert list(mmas) == [next(op for op in mmas if op.startswith(case.sass + "."))]
    assert sum(mmas.values()) == len(case.plan().instructions)
    assert not [op for op in h if op.startswith(("LDL", "STL"))]


INTERPRETED = [next(c for c in WGMMA_CASES if want(c)) for want in (
    lambda c: c.a_source == "registers", lambda c: c.m == 128 and c.a_source == "smem",
    lambda c: c.m == 128 and c.a_source == "registers", lambda c: c.staged and c.m == 128)]


@pytest.mark.parametrize("case", INTERPRETED, ids=lambda c: c.name)
def test_the_round_trip_kernel_issues_each_warpgroups_planned_stream(case):
    rt = case.roundtrip()
    ptx = rt.compile().ptx
    ops, base = rt.operands(), 0x400
    smem_a = None if ops.smem_a is None else base + ops.smem_a
    for g in range(rt.plan.warpgroups):
        thread = trace_entry(ptx, {0: 0x7000_0000_0000, 1: 0x7100_0000_0000}, {"raw": base}, "wgmma_roundtrip",
                             max_steps=400_000, tid=128 * g, specials={"%ntid.x": rt.threads})
        assert thread.mma == rt.plan.stream(smem_a, base + ops.smem_b, case.accumulate, g, **dict(rt.values))


@pytest.mark.parametrize("case", list(WGMMA_CASES[:3]) + INTERPRETED, ids=lambda c: c.name)
def test_the_input_holds_the_image_and_the_registers_and_the_emulator_gives_the_reference(case):
    rt = case.roundtrip()
    ops = rt.operands(seed=3)
    words = rt.threads * (rt.plan.a_register_count + rt.plan.d_registers)
    assert rt.input(seed=3).size == ops.image.size + 4 * words
    assert np.array_equal(rt.d_codes(rt.emulate(seed=3)), rt.reference(seed=3))
    assert np.count_nonzero(rt.reference(seed=3))
