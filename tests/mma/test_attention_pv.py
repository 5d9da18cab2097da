"""Attention's P x V from plans alone: P (bf16, 128 x 128) written into TMEM by a tcgen05.st plan, through the
plan's own register fragment, lands exactly where the MMA with A in TMEM reads it, so O = P V (V row-major in shared
memory under the 128B swizzle, an MN-major B) equals the float64 reference (pycute.testing.gemm) bit for bit in the
emulator; the MMA's stream and the store's are the generated code's."""
import numpy as np

import pycute as pc
import pycute.testing as pt
from pycute import ComposedLayout, Layout, Swizzle
from pycute.arch.sm100.datapath import data_path
from pycute.sim.emulator import Sm100Emulator
from pycute.sim.verify import run_tmem_copy
from pycute.sim.verify_mma import exact_codes, read_d, write_tile
from pycute.compile.nvrtc import compile_cuda
from pycute.interp.stream import trace_entry

SEQ, HEAD = 128, 64


def plans():
    alloc = pc.TmemAllocation()
    o = alloc.add(pc.f32, pc.mma_accumulator(pc.f32, 128, HEAD).layout, name="o")
    p = alloc.add(pc.bf16, data_path(128, 1, False).layout(SEQ, 1), name="p")
    # V[seq][head] row-major, 128 B a row under the 128B swizzle (as TMA loads it): B's (N, K), MN-major
    v = pc.make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(3, 3, 3), 0, Layout((HEAD, SEQ), (1, HEAD))))
    return alloc, pc.make_tmem_copy(p, op="st"), pc.make_mma(o, p, v), v


def registers(store, p_codes):
    """Each thread's registers as the store's fragment says: value v of thread t is P's element ``table[t, v]``,
    two bf16 values to a register (the lower one in the low half)."""
    values = p_codes.T.reshape(-1)[store.table].astype(np.uint32)           # index row + 128 * column
    return values[:, 0::2] | (values[:, 1::2] << np.uint32(16))


def test_p_stored_by_a_tcgen05_st_plan_is_the_a_the_mma_reads():
    alloc, store, mma, v = plans()
    assert mma.atom.a_tmem and mma.b.major == "MN" and store.values_per_register == 2
    rng = np.random.default_rng(7)
    p_codes = exact_codes("bf16", 16, rng, (128, SEQ))
    v_codes = exact_codes("bf16", 16, rng, (HEAD, SEQ))                     # B's (n, k) = V[k][n]
    emu = Sm100Emulator(smem_bytes=32 * 1024, fill_tmem=0)
    image = np.zeros(emu.ctas[0].smem.size, dtype=np.uint8)
    write_tile(image, 0, v, v_codes)
    emu.write_smem(0, image)
    base = emu.alloc(alloc.columns)
    run_tmem_copy(emu, store, base, registers(store, p_codes))
    for issue in mma.stream(None, 0, base):
        emu.mma(issue)
    want = pt.gemm(pt.decode(p_codes, "bf16"), pt.decode(v_codes, "bf16")).astype(np.float32)
    assert np.array_equal(read_d(emu.ctas[0].tmem, mma.d).view(np.float32), want)


def test_the_generated_store_and_mma_issue_the_plans_streams():
    _, store, mma, _ = plans()
    source = store.cuda("store_p") + mma.cuda("pv") + f"""
extern "C" __global__ void attention_pv(unsigned smem_v, unsigned tmem, const unsigned* p) {{
  unsigned regs[{store.registers}];
  for (int r = 0; r < {store.registers}; ++r) regs[r] = p[threadIdx.x * {store.registers} + r];
  store_p(tmem, regs);
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  if (threadIdx.x == 0) pv(smem_v, tmem, 0u);
}}
"""
    ptx = compile_cuda(source, arch="sm_100a").ptx
    thread = trace_entry(ptx, {0: 0x400, 1: 0x20, 2: 0x7000_0000_0000}, {}, "attention_pv", tid=0)
    assert [(i.ptx, i.taddr) for i in thread.ldst] == [(i.ptx, i.taddr) for i in store.stream(0x20, 0)]
    assert thread.mma == mma.stream(None, 0x400, 0x20)
