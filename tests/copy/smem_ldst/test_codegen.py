"""The generated register <-> shared function issues exactly the plan: compiled by NVRTC, SASS holds one STSM /
LDSM / STS / LDS of the planned width per planned instruction (sm_90a and, for the 8-bit forms, sm_100a); the PTX
interpreter reads back every thread's addresses equal to ``plan.stream``; and the compiled stores, interpreted
with their data for every thread and executed by the emulator, leave the tile the layouts say (conversions
included: the cvt's upper half is the higher element)."""
import collections

import numpy as np
import pytest

import pycute as pc
from pycute.copy.smem_ldst import make_smem_copy
from pycute.sim.verify_smem import expected_tile
from pycute.tensor.values import smem_bytes_needed

from pycute.compile.nvrtc import compile_cuda

from .cases import DTYPES, fragment, tile, wgmma_layout
from .compiled import SMEM, compile_probe, fragment_value, run_compiled_store, thread_issues

# (kind, dtype, order, swizzle, op, arch): every form the planner chooses among these fragments
PLANS = [("wgmma", "bf16", "row", "128B", "st", "sm_90a"), ("wgmma", "f16", "col", "64B", "st", "sm_90a"),
         ("wgmma", "e4m3", "row", "64B", "st", "sm_90a"), ("wgmma", "e5m2", "col", "32B", "st", "sm_90a"),
         ("wgmma", "e4m3", "col", "64B", "st", "sm_100a"), ("wgmma", "f32", "row", "32B", "st", "sm_90a"),
         ("tmem32", "bf16", "row", "64B", "st", "sm_90a"), ("tmem32", "f32", "col", "128B", "st", "sm_90a"),
         ("user", "f32", "col", "plain", "st", "sm_90a"),
         ("wgmma", "bf16", "row", "128B", "ld", "sm_90a"), ("wgmma", "bf16", "col", "32B", "ld", "sm_90a"),
         ("wgmma", "e4m3", "col", "64B", "ld", "sm_100a"), ("tmem32", "f16", "row", "64B", "ld", "sm_90a"),
         ("wgmma", "e4m3", "row", "64B", "ld", "sm_90a"),
         # stmatrix .trans with values paired for the fewest wavefronts (cases.TRANSPOSED)
         ("tmem16x128b", "bf16", "col", "128B", "st", "sm_90a"),
         ("tmem16x128b", "e4m3", "col", "128B", "st", "sm_100a"),
         ("tmem16x64b", "bf16", "col", "Sw<3,4,3>", "st", "sm_90a")]


def _plan(kind, dt, order, sw, op, arch):
    t = tile(kind, dt, order, sw)
    frag = fragment(kind) if op == "st" else fragment(kind, DTYPES[dt])
    return make_smem_copy(t, frag, arch=arch) if op == "st" else make_smem_copy(frag, t, arch=arch)


@pytest.fixture(scope="module", params=PLANS, ids=["-".join(p) for p in PLANS])
def compiled(request):
    plan = _plan(*request.param)
    return plan, compile_probe(plan, request.param[-1]), request.param[-1]


def test_sass_holds_one_instruction_per_planned_one(compiled):
    plan, code, _ = compiled
    want = collections.Counter(m.atom.sass for m in plan.moves)
    ops = [i.split()[0] for i in code.instructions()]
    got = collections.Counter(o for o in ops if o in want or o.startswith(("STSM", "LDSM", "STS", "LDS")))
    assert got == want


def test_every_thread_gives_the_planned_addresses(compiled):
    plan, code, _ = compiled
    issues = thread_issues(plan, code)
    for t in range(plan.threads):
        assert [(i.ptx, i.address) for i in issues[t]] == [(i.ptx, i.address) for i in plan.stream(SMEM, thread=t)]


STORES = [p for p in PLANS if p[4] == "st"]


@pytest.mark.parametrize("case", STORES, ids=["-".join(p) for p in STORES])
def test_the_compiled_stores_leave_the_tile_the_layouts_say(case):
    plan = _plan(*case)
    code = compile_probe(plan, case[-1])
    nbytes = smem_bytes_needed(plan.smem) + SMEM
    image = np.full(nbytes, 0xA5, dtype=np.uint8)
    got = run_compiled_store(plan, thread_issues(plan, code), nbytes, image)
    t, v = np.meshgrid(np.arange(plan.threads), np.arange(plan.values), indexing="ij")
    frag = np.vectorize(fragment_value, otypes=[np.uint64])(t, v).astype(np.uint32)
    if plan.conversion is None and plan.fragment.dtype.bits < 32:
        per = 32 // plan.fragment.dtype.bits          # the probe fills registers: split them into elements
        regs = np.vectorize(fragment_value, otypes=[np.uint64])(t[:, ::per], v[:, :plan.values // per])
        frag = ((regs.astype(np.uint64)[:, :, None] >> (np.arange(per) * plan.fragment.dtype.bits)[None, None, :])
                & ((1 << plan.fragment.dtype.bits) - 1)).reshape(plan.threads, -1).astype(np.uint32)
    want = expected_tile(plan, frag, image, SMEM)
    assert np.array_equal(got, want), f"{int((got != want).sum())} bytes differ"


def test_the_address_arithmetic_is_computed_once_and_offsets_fold_into_the_instructions():
    """The Hopper GEMM epilogue (64 x 256 bf16, 128B): 16 STSM, 12 of them with an immediate offset; beside the
    STSMs, the conversions (F2FP), the fragment's loads (LDG) and the kernel's own set-up, at most 14 SASS
    instructions: one base address and three XORs of it."""
    plan = make_smem_copy(pc.kmajor_smem_tensor(pc.bf16, 64, 256, "128B"),
                          pc.make_fragment(pc.f32, 128, wgmma_layout(256)))
    source = plan.cuda("copy") + """
extern "C" __global__ void probe(const float* in, unsigned smem) {
  float v[128];
  for (int i = 0; i < 128; ++i) v[i] = in[i * 128 + threadIdx.x];
  copy(smem, threadIdx.x, v);
}
"""
    ops = compile_cuda(source, arch="sm_90a").instructions()
    stsm = [i for i in ops if i.startswith("STSM")]
    assert len(stsm) == 16 and sum("+0x" in i for i in stsm) == 12
    setup = ("F2FP", "LDG", "STSM", "EXIT", "BRA", "NOP", "IMAD.WIDE", "ULDC", "LDC", "S2R")
    assert len([i for i in ops if not i.startswith(setup)]) <= 14


def test_the_unpacking_load_compiles_to_its_ldsm_and_gives_the_planned_row_addresses():
    frag = pc.make_fragment(pc.u8, 32, pc.Layout(((4, 8), (4, 4)), ((128, 1), (32, 8))))
    plan = make_smem_copy(frag, pc.make_smem_tensor(pc.f4e2m1, pc.Layout((32, 16), (32, 1))), arch="sm_100a")
    code = compile_probe(plan, "sm_100a")
    assert [i.split()[0] for i in code.instructions() if i.startswith("LDSM")] == ["LDSM.U4x16P64TO8.M816.4"]
    issues = thread_issues(plan, code)
    assert [[i.address for i in issues[t]] for t in range(32)] == \
        [[i.address for i in plan.stream(SMEM, thread=t)] for t in range(32)]
