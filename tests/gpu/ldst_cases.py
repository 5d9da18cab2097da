"""The tcgen05.ld/st round trips: cp then ld (every ld shape, cta_group 1 and 2, three element widths) and st then
ld (every shape as the store and as the load, f32 and packed 16-bit, every accumulator layout)."""
import numpy as np

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.harness.tcgen05_ldst import LdStRoundTrip
from pycute.tensor.canonical import kmajor_smem_buffer
from pycute.copy.tcgen05_ldst.cells import tensor_cells
from pycute.sim import Sm100Emulator, run_tmem_copy

SHAPES = ("32x32b", "16x256b", "16x128b", "16x64b", "16x32bx2")


def cp_then_ld():
    out = []
    for g in (1, 2):
        for dtype, swizzle in ((pc.bf16, "128B"), (pc.f32, "none"), (pc.u8, "32B")):
            k = 2 * 256 // dtype.bits
            src = kmajor_smem_buffer(dtype, 128, k, swizzle)[0:128, 0:k]
            dst = pc.make_tmem_tensor(dtype, Layout((128, k), (TLane, TCol)), columns=32)
            cp = pc.make_tiled_copy(dst, src, cta_group=g)
            for shape in SHAPES:
                out.append((f"cp-g{g}-{dtype.name}-{swizzle}-ld-{shape}",
                            LdStRoundTrip(pc.make_tmem_copy(dst, shape=shape), cp=cp, cta_group=g)))
    return out


def st_then_ld():
    out = []
    pairs = list(zip(SHAPES, SHAPES[1:] + SHAPES[:1]))
    for (m, g), dtype in [((m, g), d) for m, g in ((128, 1), (64, 1), (256, 2), (128, 2)) for d in (pc.f32, pc.f16)]:
        acc = pc.mma_accumulator(dtype, m, 32, cta_group=g)
        warps = len(tensor_cells(acc).blocks)
        for s1, s2 in pairs + [(s, s) for s in SHAPES]:
            try:
                st = pc.make_tmem_copy(acc, op="st", shape=s1, warps=warps)
                ld = pc.make_tmem_copy(acc, shape=s2, warps=warps)
            except pc.PlanError:
                continue            # 32x32b on 16-lane data
            out.append((f"st-M{m}-g{g}-{dtype.name}-{s1}-ld-{s2}", LdStRoundTrip(ld, st=st, cta_group=g)))
    return out


CASES = cp_then_ld() + st_then_ld()


def emulate(rt: LdStRoundTrip, seed: int = 0):
    """The round trip in the emulator: (got, expected) as the GPU run returns them."""
    images, regs, coords = rt.inputs(seed)
    emu = Sm100Emulator(smem_bytes=rt.smem_bytes, ctas=rt.cta_group)
    for c in range(rt.cta_group):
        emu.write_smem(0, images[c], cta=c)
    base = emu.alloc(max(32, rt.ld.tensor.columns or 32), cta_group=rt.cta_group)
    if rt.cp is not None:
        emu.run(rt.cp.stream(0, base))
    got = []
    for c in range(rt.cta_group):
        if rt.st is not None:
            run_tmem_copy(emu, rt.st, base, regs[c], cta=c)
        got.append(run_tmem_copy(emu, rt.ld, base, cta=c))
    return np.stack(got), rt.expected(coords)
