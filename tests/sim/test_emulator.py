"""The emulator against an independent scalar oracle written from the PTX definitions (spec note sections 4, 6)."""
import numpy as np
import pytest

from pycute import DescriptorError, EmulationError
from pycute.arch.sm100 import SmemDescriptor, SwizzleMode
from pycute.sim import Sm100Emulator
from pycute.atoms import TmemLoadAtom, cp_candidates

PITCH = {0: 16, 6: 32, 4: 64, 2: 128}
MODE = {0: SwizzleMode.NONE, 6: SwizzleMode.B32, 4: SwizzleMode.B64, 2: SwizzleMode.B128}
ROWS_BITS = {"128x256b": (128, 256), "4x256b": (4, 256), "128x128b": (128, 128), "64x128b": (64, 128),
             "32x128b": (32, 128)}


def swz(a, code):
    """Section 6.4, bit by bit."""
    if code == 6:
        return a ^ ((a >> 3) & 0x10)
    if code == 4:
        return a ^ ((a >> 3) & 0x30)
    if code == 2:
        return a ^ ((a >> 3) & 0x70)
    return a


def dst_lanes(name, L, r):
    """Section 4's table."""
    if name in ("128x256b", "128x128b"):
        return [L + r]
    if name == "4x256b":
        return [L + 32 * r]
    if name == "64x128b.warpx2::02_13":
        return [L + r, L + r + 64]
    if name == "64x128b.warpx2::01_23":
        b = 64 * (r // 32) + r % 32
        return [L + b, L + b + 32]
    return [L + r + 32 * w for w in range(4)]


def oracle(smem, base, name, L, C, start, lbo, sbo, code):
    rows, bits = ROWS_BITS[name.split(".")[0]]
    expected = {}
    for r in range(rows):
        row = b""
        for u in range(bits // 128):
            lin = start + (r % 8) * PITCH[code] + (r // 8) * sbo + u * (lbo if code == 0 else 16)
            a = swz(lin, code) - base
            row += bytes(smem[a:a + 16])
        for lane in dst_lanes(name, L, r):
            for k in range(bits // 32):
                expected[(lane, C + k)] = int.from_bytes(row[4 * k:4 * k + 4], "little")
    return expected


def filled(emu, seed, cta=0):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, emu.ctas[cta].smem.size, dtype=np.uint8)
    emu.write_smem(emu.ctas[cta].smem_base, data, cta)
    return data


def check(emu, expected, cta=0, marker=0xDEADBEEF):
    img = emu.tmem_image(cta)
    for (lane, col), v in expected.items():
        assert img[lane, col] == v, (lane, col)
    untouched = np.ones_like(img, dtype=bool)
    for lane, col in expected:
        untouched[lane, col] = False
    assert (img[untouched] == marker).all()


@pytest.mark.parametrize("code", [0, 6, 4, 2], ids=["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("atom", cp_candidates(1), ids=lambda a: a.name)
@pytest.mark.parametrize("k", [0, 1])
def test_cp_matches_the_oracle(atom, code, k):
    base = 2048
    emu = Sm100Emulator(smem_bytes=48 * 1024, smem_base=base, fill_tmem=0xDEADBEEF)
    smem = filled(emu, seed=hash((atom.name, code, k)) & 0xFFFF)
    col = emu.alloc(64)
    pitch = PITCH[code]
    # Start inside the first swizzle row (k-th 16-B unit) so the XOR really uses absolute address bits.
    start = base + (16 * k if code and pitch >= 16 * (atom.units + k) else 0)
    sbo = 8 * pitch if code else 256
    lbo = 4096 if code == 0 else 16
    desc = SmemDescriptor(lbo=lbo, sbo=sbo, swizzle=MODE[code]).encode(start)
    emu.run([(atom.ptx, col + 8, desc)])
    check(emu, oracle(smem, base, atom.name, 0, col + 8, start, lbo, sbo, code))


def test_worked_example_b_32b_swizzle_swaps_units_of_rows_4_to_7():
    emu = Sm100Emulator(smem_bytes=8192, fill_tmem=0)
    for r in range(16):
        for u in range(2):
            emu.write_smem(0x800 + 32 * (r % 8) + 256 * (r // 8) + 16 * u, bytes([16 * r + u]) * 16)
    col = emu.alloc(32)
    emu.run([("tcgen05.cp.cta_group::1.128x256b", col, 0xC000401000010080)])
    img = emu.tmem_image()
    for r in range(16):
        lo, hi = (r * 16 + 1, r * 16) if r % 8 >= 4 else (r * 16, r * 16 + 1)
        assert img[r, 0] == lo * 0x01010101 and img[r, 4] == hi * 0x01010101


def test_worked_example_c_128b_swizzle_chunk_order():
    emu = Sm100Emulator(smem_bytes=32768, fill_tmem=0)   # 16 core groups x SBO 1024 from 0x1000
    for r in range(8):
        for chunk in range(8):
            emu.write_smem(0x1000 + 128 * r + 16 * chunk, bytes([chunk]) * 16)
    col = emu.alloc(32)
    emu.run([("tcgen05.cp.cta_group::1.128x128b", col, 0x4000404000010101)])
    assert [int(emu.tmem_image()[r, 0]) & 0xFF for r in range(8)] == [1, 0, 3, 2, 5, 4, 7, 6]


@pytest.mark.parametrize("atom", cp_candidates(2), ids=lambda a: a.name)
def test_cta_group_2_copies_each_ctas_own_smem_into_its_own_tmem(atom):
    emu = Sm100Emulator(smem_bytes=8192, ctas=2, fill_tmem=0xDEADBEEF)
    s0, s1 = filled(emu, 1, cta=0), filled(emu, 2, cta=1)
    col = emu.alloc(32, cta_group=2)
    desc = SmemDescriptor(sbo=128).encode(0)
    emu.cp(atom.ptx, col, desc, cta=0)
    emu.commit()
    check(emu, oracle(s0, 0, atom.name, 0, col, 0, 0, 128, 0), cta=0)
    check(emu, oracle(s1, 0, atom.name, 0, col, 0, 0, 128, 0), cta=1)


def test_4x256b_lane_field_selects_the_row_within_each_quadrant():
    emu = Sm100Emulator(smem_bytes=4096, fill_tmem=0xDEADBEEF)
    smem = filled(emu, 3)
    col = emu.alloc(32)
    emu.run([("tcgen05.cp.cta_group::1.4x256b", 5 << 16 | col, SmemDescriptor(lbo=16).encode(0))])
    check(emu, oracle(smem, 0, "4x256b", 5, col, 0, 16, 0, 0))


def test_ld_32x32b_reads_each_warps_quadrant():
    emu = Sm100Emulator(smem_bytes=4096, fill_tmem=0)
    filled(emu, 4)
    col = emu.alloc(32)
    emu.run([("tcgen05.cp.cta_group::1.32x128b.warpx4", col, SmemDescriptor(sbo=128).encode(0))])
    img = emu.tmem_image()
    for warp in range(4):
        regs = emu.ld_32x32b(warp, col, 4)
        assert (regs == img[32 * warp:32 * warp + 32, col:col + 4]).all()
        assert (regs == emu.ld_32x32b(warp, (32 * warp) << 16 | col, 4)).all()


def test_ld_16x256b_mapping():
    emu = Sm100Emulator(smem_bytes=1024, fill_tmem=0)
    col = emu.alloc(32)
    emu.ctas[0].tmem[:, :] = np.arange(128 * 512, dtype=np.uint32).reshape(128, 512)
    regs = emu.ld(TmemLoadAtom("16x256b", 1), warp=1, taddr=col)
    t, j = 6, 3
    lane, c = 32 + (t >> 2) + 8 * ((j >> 1) & 1), col + (j & 1) + 2 * (t & 3)
    assert regs[t, j] == lane * 512 + c


# -- strictness ---------------------------------------------------------------------------------------------------
def emu_with_alloc(cols=32):
    emu = Sm100Emulator(smem_bytes=8192)
    return emu, emu.alloc(cols)


@pytest.mark.parametrize("desc,exc,message", [
    (SmemDescriptor(sbo=128, base_offset=1).encode(), EmulationError, "base offset 1 is not modelled"),
    (SmemDescriptor(sbo=128, lbo_mode=1).encode(), EmulationError, "LBO mode 1"),
    (SmemDescriptor(sbo=1024, swizzle=SwizzleMode.B128_BASE32B).encode(), EmulationError, "32B-atoms"),
    (1 << 46 | 5 << 61, DescriptorError, "swizzle code 5 is invalid"),
])
def test_descriptor_policies(desc, exc, message):
    emu, col = emu_with_alloc()
    with pytest.raises(exc, match=message):
        emu.cp("tcgen05.cp.cta_group::1.128x128b", col, desc)


def test_lane_overflow_is_refused():
    emu, col = emu_with_alloc()
    with pytest.raises(EmulationError, match="past the 128-lane TMEM"):
        emu.cp("tcgen05.cp.cta_group::1.32x128b.warpx4", 1 << 16 | col, SmemDescriptor(sbo=128).encode())


def test_unaligned_column_is_refused():
    emu, col = emu_with_alloc()
    with pytest.raises(EmulationError, match="column 2 is not 128-bit aligned"):
        emu.cp("tcgen05.cp.cta_group::1.128x128b", col + 2, SmemDescriptor(sbo=128).encode())


def test_write_outside_the_allocation_is_refused():
    emu, col = emu_with_alloc(32)
    with pytest.raises(EmulationError, match=r"columns \[28, 36\) are not all inside a TMEM allocation"):
        emu.cp("tcgen05.cp.cta_group::1.128x256b", col + 28, SmemDescriptor(sbo=128, lbo=16).encode())


def test_row_crossing_a_swizzle_row_is_refused():
    emu, col = emu_with_alloc()
    desc = SmemDescriptor(lbo=16, sbo=1024, swizzle=SwizzleMode.B128).encode(112)
    with pytest.raises(EmulationError, match="cross a 1024-byte B128 swizzle period"):
        emu.cp("tcgen05.cp.cta_group::1.128x256b", col, desc)


def test_reading_outside_shared_memory_is_refused():
    emu, col = emu_with_alloc()
    with pytest.raises(EmulationError, match="outside shared memory"):
        emu.cp("tcgen05.cp.cta_group::1.128x256b", col, SmemDescriptor(sbo=8192, lbo=16).encode())


def test_fp6_decompression_is_refused_with_the_reason():
    emu, col = emu_with_alloc()
    with pytest.raises(EmulationError, match="6-bit container placement"):
        emu.cp("tcgen05.cp.cta_group::1.128x256b.b8x16.b6x16_p32", col, SmemDescriptor(sbo=128).encode())


def test_fp4_decompression_puts_element_i_of_bytes_0_7_in_bits_5_2_of_byte_i():
    emu, col = emu_with_alloc()
    unit = bytes(range(0x10, 0x18)) + bytes([0xEE] * 8)          # bytes 8-15 are padding
    emu.write_smem(0, unit * 128)
    emu.run([("tcgen05.cp.cta_group::1.128x128b.b8x16.b4x16_p64", col, SmemDescriptor(sbo=128).encode())])
    got = emu.tmem_image()[5, col:col + 4].view(np.uint8)
    codes = [n for b in unit[:8] for n in (b & 0xF, b >> 4)]   # low nibble first
    assert list(got) == [c << 2 for c in codes]


def test_illegal_form_is_refused():
    emu, col = emu_with_alloc()
    with pytest.raises(EmulationError, match="illegal multicast 'warpx4'"):
        emu.cp("tcgen05.cp.cta_group::1.128x256b.warpx4", col, SmemDescriptor(sbo=128).encode())


def test_mixed_cta_groups_are_refused():
    emu = Sm100Emulator(smem_bytes=4096, ctas=2)
    col = emu.alloc(32, cta_group=1)
    with pytest.raises(EmulationError, match="must use the same .cta_group"):
        emu.cp("tcgen05.cp.cta_group::2.128x128b", col, SmemDescriptor(sbo=128).encode())


def test_cta_group_2_from_the_odd_cta_is_refused():
    emu = Sm100Emulator(smem_bytes=4096, ctas=2)
    col = emu.alloc(32, cta_group=2)
    with pytest.raises(EmulationError, match="odd CTA"):
        emu.cp("tcgen05.cp.cta_group::2.128x128b", col, SmemDescriptor(sbo=128).encode(), cta=1)


def test_overlapping_uncommitted_copies_race():
    emu, col = emu_with_alloc()
    d = SmemDescriptor(sbo=128).encode()
    emu.cp("tcgen05.cp.cta_group::1.128x128b", col, d)
    emu.cp("tcgen05.cp.cta_group::1.32x128b.warpx4", col, d)
    with pytest.raises(EmulationError, match="race"):
        emu.commit()


def test_ld_before_commit_is_refused():
    emu, col = emu_with_alloc()
    emu.cp("tcgen05.cp.cta_group::1.128x128b", col, SmemDescriptor(sbo=128).encode())
    with pytest.raises(EmulationError, match="before the issued tcgen05.cp were committed"):
        emu.ld_32x32b(0, col, 4)


def test_ld_outside_the_warps_quadrant_is_refused():
    emu, col = emu_with_alloc()
    with pytest.raises(EmulationError, match="warp 1 may only access lanes 32..63"):
        emu.ld_32x32b(1, 64 << 16 | col, 4)


def test_illegal_allocation_is_refused():
    with pytest.raises(EmulationError, match="allocation of 48 columns is illegal"):
        Sm100Emulator(smem_bytes=1024).alloc(48)


@pytest.mark.parametrize("atom", [a for a in cp_candidates(1) if a.multicast], ids=lambda a: a.name)
def test_multicast_copy_writes_every_lane_exactly_once(atom):
    emu = Sm100Emulator(smem_bytes=4096, fill_tmem=0xDEADBEEF)
    smem = filled(emu, 11)
    col = emu.alloc(32)
    emu.run([(atom.ptx, col, SmemDescriptor(sbo=128).encode(0))])     # the race check refuses double writes
    img = emu.tmem_image()
    assert (img[:, col:col + 4] != 0xDEADBEEF).all() and (img[:, col + 4:] == 0xDEADBEEF).all()
    check(emu, oracle(smem, 0, atom.name, 0, col, 0, 0, 128, 0))


def test_fp4_decompression_reproduces_the_published_gb300_measurement():
    """docs/tcgen05-cp-decompression.md section 2 (PROBE): source bytes 00 01 .. 0f gave these raw TMEM bytes."""
    emu, col = emu_with_alloc()
    emu.write_smem(0, bytes(range(16)) * 128)
    emu.run([("tcgen05.cp.cta_group::1.128x128b.b8x16.b4x16_p64", col, SmemDescriptor(sbo=128).encode())])
    measured = bytes.fromhex("00 00 04 00 08 00 0c 00 10 00 14 00 18 00 1c 00")
    assert emu.tmem_image()[0, col:col + 4].tobytes() == measured
