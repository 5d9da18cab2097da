"""The register <-> shared executor against the PTX ISA's text: stmatrix puts lane t's register at row t / 4,
bytes 4 (t % 4) of its matrix (.trans: the halves in rows 2 (t % 4) and + 1); ldmatrix reads back what stmatrix
wrote; addresses PTX leaves undefined are refused; and decode reads a compiled statement's address and data."""
import numpy as np
import pytest

import pycute as pc
from pycute.arch.sm100.matrix import b8_forms, unpack_forms
from pycute.arch.sm90.matrix import m8n8_forms
from pycute.atoms.smem_ldst import SmemMatrixAtom, SmemVectorAtom
from pycute.sim.emulator import Sm90Emulator
from pycute.sim.executors.smem_ldst import decode

ROWS = np.arange(32) * 48 % 1024 // 16 * 16 + 2048          # 32 distinct 16-byte rows, scattered


def _store(form, regs):
    emu = Sm90Emulator(smem_bytes=4096)
    emu.smem_store(SmemMatrixAtom(form), ROWS, regs)
    return emu


def test_stmatrix_puts_lane_t_at_row_t_over_4_bytes_4_t_mod_4():
    form = m8n8_forms("st")[0]                              # .x4, not transposed
    regs = np.arange(32 * 4, dtype=np.uint32).reshape(32, 4) * 0x01010101
    smem = _store(form, regs).ctas[0].smem
    for t in range(32):
        for g in range(4):
            row = ROWS[8 * g + t // 4]
            assert bytes(smem[row + 4 * (t % 4):row + 4 * (t % 4) + 4]) == int(regs[t, g]).to_bytes(4, "little")


def test_stmatrix_trans_puts_the_low_half_in_row_2_t_mod_4_and_the_high_half_in_the_next():
    form = m8n8_forms("st")[5]                              # .x1.trans
    assert form.trans and form.num == 1
    regs = (np.arange(32, dtype=np.uint32) * 0x00020002 + 0x00010000)[:, None]
    smem = _store(form, regs).ctas[0].smem.view(np.uint16)
    for t in range(32):
        lo, hi = int(regs[t, 0]) & 0xFFFF, int(regs[t, 0]) >> 16
        assert smem[(ROWS[2 * (t % 4)] + 2 * (t // 4)) // 2] == lo
        assert smem[(ROWS[2 * (t % 4) + 1] + 2 * (t // 4)) // 2] == hi


@pytest.mark.parametrize("k", range(6))
def test_ldmatrix_reads_back_what_stmatrix_wrote(k):
    st, ld = m8n8_forms("st")[k], m8n8_forms("ld")[k]
    regs = np.random.default_rng(k).integers(0, 1 << 32, (32, st.registers), dtype=np.uint64).astype(np.uint32)
    emu = _store(st, regs)
    assert np.array_equal(emu.smem_load(SmemMatrixAtom(ld), ROWS), regs)


def test_the_8_bit_load_reads_back_two_8_bit_stores():
    st, ld = b8_forms("st")[1], b8_forms("ld")[1]           # stmatrix m16n8.x2, ldmatrix m16n16.x1 (2 registers)
    regs = np.random.default_rng(9).integers(0, 1 << 32, (32, 2), dtype=np.uint64).astype(np.uint32)
    emu = Sm90Emulator(smem_bytes=4096)
    emu.smem_store(SmemMatrixAtom(st), ROWS, regs)
    lanes = np.empty(32, dtype=np.int64)
    lanes[ld.row_lane()] = ROWS[:16]                     # the lane that gives each row the address stmatrix used
    lanes[16:] = lanes[:16]
    assert np.array_equal(emu.smem_load(SmemMatrixAtom(ld), lanes), regs)


def test_an_unpacking_load_puts_each_element_in_the_low_bits_of_its_byte():
    form = unpack_forms("b4x16_p64")[2]                     # m8n16.x1
    emu = Sm90Emulator(smem_bytes=4096)
    emu.write_smem(2048, bytes(range(0x10, 0x18)) + bytes(8))  # row 0: elements 0, 1, 1, 1, 2, 1, 3, 1, ...
    got = emu.smem_load(SmemMatrixAtom(form), np.full(32, 2048)).view(np.uint8).reshape(32, 4)
    assert list(got[0]) == [0x0, 0x1, 0x1, 0x1] and list(got[1]) == [0x2, 0x1, 0x3, 0x1]


def test_misaligned_addresses_are_refused():
    emu = Sm90Emulator(smem_bytes=4096)
    with pytest.raises(pc.EmulationError, match="not 16-byte aligned"):
        emu.smem_store(SmemMatrixAtom(m8n8_forms("st")[0]), ROWS + 4, np.zeros((32, 4), dtype=np.uint32))
    with pytest.raises(pc.EmulationError, match="lane 0's address 0x8 is not 16-byte aligned"):
        emu.smem_store(SmemVectorAtom("st", 16), np.full(32, 8), np.zeros((32, 4), dtype=np.uint32))
    with pytest.raises(pc.EmulationError, match="outside"):
        emu.smem_load(SmemVectorAtom("ld", 4), np.full(32, 8192))


def test_decode_reads_the_address_and_a_stores_data():
    regs = {"%r1": 0x400, "%r2": 7, "%r3": 9}
    value = lambda tok: regs.get(tok, None) if tok in regs else int(tok)      # noqa: E731
    issue = decode("st.shared.v2.b32", ["[%r1+16]", "{%r2, %r3}"], value)
    assert issue == ("st.shared.v2.b32", 0x410, (7, 9))
    assert decode("ldmatrix.sync.aligned.m8n8.x1.shared.b16", ["{%r2}", "[%r1]"], value).address == 0x400
