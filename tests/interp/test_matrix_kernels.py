"""stmatrix / ldmatrix in whole-kernel runs: warp collectives that move every lane's registers at once (PTX ISA
#warp-level-matrix-store-instruction-stmatrix, #warp-level-matrix-load-instruction-ldmatrix), as the emulator does;
a lane missing, or a warp reading rows another warp wrote without a barrier, is reported. The epilogue round trip
(pycute/harness/epilogue.py: registers -> stmatrix / st.shared -> TMA store, then ldmatrix / ld.shared back) and the
Blackwell epilogue example (examples/epilogue.py: sm_100a, and the sm_90a build with soft tcgen05) run whole and
leave what the emulator says."""
import numpy as np
import pytest

from examples.epilogue import M, N, Epilogue
from pycute.harness.epilogue import registers_of
from pycute.errors import EmulationError
from pycute.interp import RaceError, run_kernel, tensor_map
from pycute.sim.emulator import Sm90Emulator
from pycute.interp.matrix import matrix_atom

from tests.gpu.epilogue_probe import roundtrip
from tests.interp.ptxkit import entry

STORE = "stmatrix.sync.aligned.m8n8.x4.shared.b16"
LOAD = "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
ROWS = """\t.shared .align 128 .b8 tile[1024];
\tmov.u32 %r1, %tid.x;
\tand.b32 %r12, %r1, 31;
\tmov.u32 %r2, tile;
\tshl.b32 %r3, %r12, 4;
\tadd.u32 %r3, %r3, %r2;
\tmad.lo.u32 %r4, %r12, 65537, 0x01000100;
\tadd.u32 %r5, %r4, 0x00200020;
\tadd.u32 %r6, %r4, 0x00400040;
\tadd.u32 %r7, %r4, 0x00600060;"""
OUT = """\tmul.wide.u32 %rd3, %r1, 16;
\tadd.s64 %rd4, %out, %rd3;
\tst.global.v4.u32 [%rd4], {%r8, %r9, %r10, %r11};"""


def lane_registers() -> np.ndarray:
    """What ROWS puts in each lane's 4 registers."""
    lane = np.arange(32, dtype=np.uint64)
    first = (lane * 65537 + 0x01000100) & 0xFFFFFFFF
    words = [(first + d) & 0xFFFFFFFF for d in (0, 0x00200020, 0x00400040, 0x00600060)]
    return np.stack(words, axis=1).astype(np.uint32)


def test_stmatrix_then_ldmatrix_trans_moves_every_lanes_registers_as_the_emulator_does():
    out = np.zeros(4 * 32, dtype=np.uint32)
    body = "\n".join([ROWS, f"\t{STORE} [%r3], {{%r4, %r5, %r6, %r7}};", "\tbar.warp.sync -1;",
                      f"\t{LOAD} {{%r8, %r9, %r10, %r11}}, [%r3];", OUT])
    run = run_kernel(entry(body), block=32, args=[out])
    emu = Sm90Emulator(smem_bytes=run.smem[0].size)
    addresses = 0x400 + 16 * np.arange(32)
    emu.smem_store(matrix_atom(STORE), addresses, lane_registers())
    assert np.array_equal(run.smem[0], emu.ctas[0].smem)
    assert np.array_equal(out.reshape(32, 4), emu.smem_load(matrix_atom(LOAD), addresses))


def test_a_warp_reading_rows_another_warp_wrote_without_a_barrier_is_a_race():
    body = "\n".join([ROWS, "\tsetp.lt.u32 %p1, %r1, 32;", "\t@!%p1 bra READ;",
                      f"\t{STORE} [%r3], {{%r4, %r5, %r6, %r7}};", "\tbra.uni DONE;",
                      "READ:", f"\t{LOAD} {{%r8, %r9, %r10, %r11}}, [%r3];", OUT, "DONE:"])
    with pytest.raises(RaceError, match=r"ldmatrix.* CTA 0 thread 32 \(warp 1 lane 0\) reads shared byte 0x400 of "
                                        r"CTA 0 \(tile\), last written by CTA 0 thread 0 \(warp 0 lane 0\), without "
                                        r"synchronising with that write"):
        run_kernel(entry(body), block=64, args=[np.zeros(4 * 64, dtype=np.uint32)])


def test_a_lane_that_left_before_a_stmatrix_is_reported():
    body = "\n".join([ROWS, "\tsetp.eq.u32 %p1, %r1, 31;", "\t@%p1 bra DONE;",
                      f"\t{STORE} [%r3], {{%r4, %r5, %r6, %r7}};", "DONE:"])
    with pytest.raises(EmulationError, match=r"every lane of warp 0 executes stmatrix \(\.sync\.aligned\); lanes "
                                             r"\[31\] did not"):
        run_kernel(entry(body), block=32, args=[np.zeros(1, dtype=np.uint32)])


@pytest.mark.parametrize("name", ["wgmma-bf16-row-plain", "wgmma-f16-col-64B", "wgmma-e4m3-col-64B",
                                  "tmem32-f32-row-32B"])
def test_the_epilogue_round_trip_leaves_the_emulators_image_array_and_registers(name):
    rt = roundtrip(name)
    ep = rt.epilogue
    words = np.ascontiguousarray(registers_of(rt.fragment(0), ep.store.fragment.dtype.bits).T)
    array, dump = rt.array(0), np.zeros(rt.smem_bytes, dtype=np.uint8)
    loaded = np.zeros(rt._words(rt.load) * ep.threads, dtype=np.uint32)
    run_kernel(rt.compile(), "epilogue_roundtrip", block=ep.threads, smem=rt.smem_bytes + 1024,
               args=[words, tensor_map(ep.tma, array), dump, loaded, *rt.origin])
    want = rt.emulate(0)
    assert np.array_equal(dump, want["smem"]) and np.array_equal(array, want["array"])
    assert np.array_equal(loaded.reshape(-1, ep.threads).T, want["loaded"])


@pytest.mark.parametrize("arch,soft", [("sm_100a", False), ("sm_90a", True)], ids=["sm_100a", "sm_90a soft tcgen05"])
def test_the_blackwell_epilogue_example_writes_the_scaled_bf16_tile(arch, soft):
    example = Epilogue()
    x = example.inputs(0)
    out = np.random.default_rng(1).integers(0, 256, M * N * 2, dtype=np.uint8)
    want = example.expected(x, 0.37, (256, 96), out)
    run_kernel(example.compile(arch, soft), "blackwell_epilogue", block=128, smem=example.smem_bytes,
               args=[tensor_map(example.load, x), tensor_map(example.epilogue.tma, out), 0.37, 256, 96])
    assert np.array_equal(out, want)
