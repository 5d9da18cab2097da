"""pycute's tcgen05 round-trip kernels (sm_100a builds: no GPU runs them here) run whole on the CPU and read back
what the layouts say: tcgen05.cp of both CTA groups, tcgen05.ld / st of several shapes after a cp or an st, and the
MMA round trip against the emulator."""
import numpy as np
import pytest

import pycute as pc
from pycute.harness import RoundTrip
from pycute.harness.mma import MmaRoundTrip
from pycute.interp import run_kernel

from tests.copy.tcgen05_cp.test_roundtrip import CASES, build
from tests.gpu.ldst_cases import CASES as LDST
from tests.mma.test_mma_soft import plan as mma_plan

CP_ATOMS = ["tcgen05.cp.cta_group::1.32x128b.warpx4", "tcgen05.cp.cta_group::2.128x256b"]


@pytest.mark.parametrize("ptx", CP_ATOMS)
def test_a_tcgen05_cp_round_trip_reads_back_the_layouts_tmem(ptx):
    atom, swizzle, dtype, middle = next(c for c in CASES if c[0].ptx == ptx and c[2].bits >= 8)
    src, dst = build(atom, swizzle, dtype, middle)
    rt = RoundTrip(pc.make_tiled_copy(dst, src, cta_group=atom.cta_group, shape=atom.shape,
                                      multicast=atom.multicast or None))
    values, cols = rt.values(0), rt.plan.dst.alloc_columns
    out = np.full(rt.ctas * 128 * cols, 0xFFFFFFFF, dtype=np.uint32)
    run_kernel(rt.compile(), rt.entry, grid=rt.ctas, block=128, smem=rt.dynamic_smem(), args=[values, out])
    assert np.array_equal(out.reshape(rt.ctas, 128, cols), rt.expected(values))


@pytest.mark.parametrize("name", ["cp-g2-f32-none-ld-16x32bx2", "st-M128-g1-f16-16x128b-ld-16x64b"])
def test_a_tcgen05_ld_st_round_trip_reads_back_every_register(name):
    rt = dict(LDST)[name]
    images, regs, coords = rt.inputs(0)
    out = np.full(rt.cta_group * rt.threads * rt.ld.registers, 0xFFFFFFFF, dtype=np.uint32)
    run_kernel(rt.compile("sm_100a"), rt.entry, grid=rt.cta_group, block=rt.threads, smem=rt.smem_bytes + 1024,
               args=[images.reshape(-1), regs.reshape(-1), out])
    assert np.array_equal(out.reshape(rt.cta_group, rt.threads, rt.ld.registers), rt.expected(coords))


def test_the_mma_round_trip_writes_the_emulators_d():
    rt = MmaRoundTrip(mma_plan())
    out = np.full(128 * rt.columns, 0xFFFFFFFF, dtype=np.uint32)
    run_kernel(rt.compile("sm_100a"), "mma_roundtrip", block=128, smem=rt.smem_bytes + 1024, args=[rt.image(0), out])
    n = rt.plan.shape[1]
    assert np.array_equal(out.reshape(128, rt.columns)[:, rt.plan.d_column:rt.plan.d_column + n], rt.emulate(0))
