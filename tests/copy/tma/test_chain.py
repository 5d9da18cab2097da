"""One chain, in the emulator: a K-major 128B-swizzled tile that TMA loads is, byte for byte, what make_tiled_copy's
tcgen05.cp and make_umma_desc read: global -> TMA -> shared -> tcgen05.cp -> TMEM -> tcgen05.ld -> registers equals
the array, element for element."""
import numpy as np
import pytest

import pycute as pc
from pycute import Layout, TCol, TLane
from pycute.sim import Sm100Emulator, run_tmem_copy
from pycute.sim.operand import mma_operand


@pytest.mark.parametrize("dtype,k", [(pc.bf16, 64), (pc.u8, 128), (pc.f32, 32)])
def test_a_tma_loaded_tile_reaches_the_registers_unchanged(dtype, k):
    rows, elem = 128, dtype.bits // 8
    array = pc.make_global_tensor(dtype, Layout((256, 2 * k), (2 * k, 1)))
    tile = pc.kmajor_smem_tensor(dtype, rows, k, "128B")
    load = pc.make_tma_copy(tile, array)
    tmem = pc.make_tmem_tensor(dtype, Layout((rows, k), (TLane, TCol)), columns=k * elem // 4 if k * elem >= 128 else 32)
    cp = pc.make_tiled_copy(tmem, tile)
    ld = pc.make_tmem_copy(pc.make_tmem_tensor(pc.u32, Layout((rows, k * elem // 4), (TLane, TCol)),
                                               columns=tmem.columns))
    rng = np.random.default_rng(7)
    gmem = rng.integers(0, 256, 256 * 2 * k * elem, dtype=np.uint8)
    emu = Sm100Emulator(smem_bytes=rows * k * elem)
    t = (1, 1)                                             # rows 128..255, K columns k..2k-1
    for issue in load.stream(0, *t):
        emu.tma_load(load.tensor_map, gmem, issue.coords, issue.smem)
    base = emu.alloc(tmem.columns)
    emu.run(cp.stream(0, base))
    words = run_tmem_copy(emu, ld, base)                    # (128 threads, k * elem / 4 registers)
    want = gmem.reshape(256, 2 * k * elem)[128:256, k * elem:2 * k * elem]
    got = words.view(np.uint8).reshape(rows, k * elem)     # thread t holds lane t: row t of the tile
    assert np.array_equal(got, want)
    desc = pc.make_umma_desc(tile[0:rows, 0:k], major="K")
    operand = mma_operand(desc.encode(0), "K", rows, k, dtype.bits, emu.ctas[0].smem)
    codes = want.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[elem]).reshape(rows, k)
    assert np.array_equal(operand.astype(np.uint64), codes.astype(np.uint64))
