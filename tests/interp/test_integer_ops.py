"""Integer, bit and predicate instructions run by the whole-kernel interpreter, against the ISA's definitions
written out here in Python (PTX ISA #integer-arithmetic-instructions, #logic-and-shift-instructions)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests.interp.ptxkit import run_body

U32 = st.integers(0, (1 << 32) - 1)


def s32(v):
    return v - (1 << 32) if v >> 31 else v


def compute(op: str, a: int, b: int, c: int = 0) -> int:
    """``op`` on %r1 = a, %r2 = b, %r3 = c, the 32-bit result stored."""
    body = (f"\tmov.b32 %r1, {a};\n\tmov.b32 %r2, {b};\n\tmov.b32 %r3, {c};\n\t{op};\n"
            "\tst.global.u32 [%out], %r4;")
    return int(run_body(body, 1)[0])


def brev(v):
    return int(f"{v:032b}"[::-1], 2)


def bfe(a, pos, length, signed):
    pos, length = pos & 0xFF, length & 0xFF
    if length == 0:
        return 0
    bits = [(a >> i) & 1 for i in range(32)]
    sbit = bits[min(pos + length - 1, 31)] if signed else 0
    return sum((bits[pos + i] if i < length and pos + i <= 31 else sbit) << i for i in range(32))


def prmt(a, b, c):
    data = (b << 32 | a).to_bytes(8, "little")
    out = 0
    for k in range(4):
        sel = (c >> (4 * k)) & 0xF
        byte = data[sel & 7]
        out |= ((0xFF if byte & 0x80 else 0) if sel & 8 else byte) << (8 * k)
    return out


CASES = {
    "popc.b32 %r4, %r1": lambda a, b, c: bin(a).count("1"),
    "clz.b32 %r4, %r1": lambda a, b, c: 32 - a.bit_length(),
    "brev.b32 %r4, %r1": lambda a, b, c: brev(a),
    "bfind.u32 %r4, %r1": lambda a, b, c: a.bit_length() - 1 if a else 0xFFFFFFFF,
    "bfind.shiftamt.u32 %r4, %r1": lambda a, b, c: 32 - a.bit_length() if a else 0xFFFFFFFF,
    "bfind.s32 %r4, %r1": lambda a, b, c: ((~a & 0xFFFFFFFF) if a >> 31 else a).bit_length() - 1
    if ((~a & 0xFFFFFFFF) if a >> 31 else a) else 0xFFFFFFFF,
    "bfe.u32 %r4, %r1, %r2, %r3": lambda a, b, c: bfe(a, b, c, False),
    "bfe.s32 %r4, %r1, %r2, %r3": lambda a, b, c: bfe(a, b, c, True),
    "prmt.b32 %r4, %r1, %r2, %r3": lambda a, b, c: prmt(a, b, c),
    "shf.l.wrap.b32 %r4, %r1, %r2, %r3": lambda a, b, c: (((b << 32 | a) << (c & 31)) >> 32) & 0xFFFFFFFF,
    "shf.r.clamp.b32 %r4, %r1, %r2, %r3": lambda a, b, c: ((b << 32 | a) >> min(c, 32)) & 0xFFFFFFFF,
    "mul.hi.s32 %r4, %r1, %r2": lambda a, b, c: ((s32(a) * s32(b)) >> 32) & 0xFFFFFFFF,
    "mul.hi.u32 %r4, %r1, %r2": lambda a, b, c: (a * b) >> 32,
    "mad.lo.s32 %r4, %r1, %r2, %r3": lambda a, b, c: (a * b + c) & 0xFFFFFFFF,
    "shr.s32 %r4, %r1, %r2": lambda a, b, c: (s32(a) >> min(b, 32)) & 0xFFFFFFFF,
    "shr.u32 %r4, %r1, %r2": lambda a, b, c: a >> min(b, 32),
    "shl.b32 %r4, %r1, %r2": lambda a, b, c: (a << min(b, 32)) & 0xFFFFFFFF,
    "min.s32 %r4, %r1, %r2": lambda a, b, c: min(s32(a), s32(b)) & 0xFFFFFFFF,
    "max.u32 %r4, %r1, %r2": lambda a, b, c: max(a, b),
    "sad.u32 %r4, %r1, %r2, %r3": lambda a, b, c: (c + abs(a - b)) & 0xFFFFFFFF,
    "abs.s32 %r4, %r1": lambda a, b, c: abs(s32(a)) & 0xFFFFFFFF,
    "neg.s32 %r4, %r1": lambda a, b, c: (-a) & 0xFFFFFFFF,
    "not.b32 %r4, %r1": lambda a, b, c: ~a & 0xFFFFFFFF,
    "cnot.b32 %r4, %r1": lambda a, b, c: int(a == 0),
    "xor.b32 %r4, %r1, %r2": lambda a, b, c: a ^ b,
    "add.sat.s32 %r4, %r1, %r2": lambda a, b, c: min(max(s32(a) + s32(b), -(1 << 31)), (1 << 31) - 1) & 0xFFFFFFFF,
}


@pytest.mark.parametrize("op", list(CASES))
@settings(max_examples=15)
@given(a=U32, b=U32, c=st.one_of(st.integers(0, 40), U32))
def test_an_integer_instruction_computes_what_the_isa_defines(op, a, b, c):
    assert compute(op, a, b, c) == CASES[op](a, b, c)


@settings(max_examples=25)
@given(a=U32, b=U32, c=U32, lut=st.integers(0, 255))
def test_lop3_applies_its_truth_table_bit_by_bit(a, b, c, lut):
    want = sum(((lut >> (((a >> i) & 1) << 2 | ((b >> i) & 1) << 1 | ((c >> i) & 1))) & 1) << i for i in range(32))
    assert compute(f"lop3.b32 %r4, %r1, %r2, %r3, {lut}", a, b, c) == want


@settings(max_examples=25)
@given(a=U32, b=U32.filter(bool))
def test_signed_division_truncates_toward_zero_and_remainder_takes_the_dividend_sign(a, b):
    q = int(s32(a) / s32(b)) if s32(b) != -1 or s32(a) != -(1 << 31) else -(1 << 31)
    assert compute("div.s32 %r4, %r1, %r2", a, b) == q & 0xFFFFFFFF
    assert compute("rem.s32 %r4, %r1, %r2", a, b) == (s32(a) - q * s32(b)) & 0xFFFFFFFF


def test_wide_multiply_and_carry_chains_give_the_full_product():
    a, b = 0xFFFFFFFF, 0x12345678
    body = (f"\tmov.b32 %r1, {a};\n\tmov.b32 %r2, {b};\n\tmul.wide.u32 %rd1, %r1, %r2;\n"
            "\tst.global.u64 [%out], %rd1;\n"
            "\tadd.cc.u32 %r5, %r1, %r2;\n\taddc.u32 %r6, 0, 0;\n\tst.global.u32 [%out+8], %r5;\n"
            "\tst.global.u32 [%out+12], %r6;")
    out = run_body(body, 4)
    assert int(out[0]) | int(out[1]) << 32 == a * b
    assert (int(out[2]), int(out[3])) == ((a + b) & 0xFFFFFFFF, 1)


def test_sub_word_loads_sign_extend_into_wider_registers_and_cvt_saturates():
    body = ("\tmov.b32 %r1, 0xFFFFFF80;\n\tst.global.u32 [%out], %r1;\n\tld.global.s8 %r2, [%out];\n"
            "\tst.global.u32 [%out+4], %r2;\n\tcvt.sat.u8.s32 %r3, %r1;\n\tst.global.u32 [%out+8], %r3;\n"
            "\tcvt.s64.s32 %rd1, %r1;\n\tst.global.u64 [%out+16], %rd1;")
    out = run_body(body, 6)
    assert out[1] == 0xFFFFFF80 and out[2] == 0 and (int(out[4]) | int(out[5]) << 32) == (1 << 64) - 128


def test_setp_combines_with_a_predicate_and_writes_the_complement():
    body = ("\tmov.b32 %r1, 5;\n\tsetp.eq.u32 %p1, %r1, 5;\n\tsetp.lt.and.s32 %p2|%p3, %r1, 9, %p1;\n"
            "\tselp.u32 %r4, 1, 0, %p2;\n\tselp.u32 %r5, 1, 0, %p3;\n"
            "\tst.global.u32 [%out], %r4;\n\tst.global.u32 [%out+4], %r5;")
    assert list(run_body(body, 2)) == [1, 0]


def test_selp_of_floats_picks_a_bit_pattern_by_the_predicate():
    # what NVRTC emits for `x = p ? x : -INFINITY`: the float form moves bits as the integer one does
    body = ("\tmov.b32 %f1, 0f3F800000;\n\tsetp.eq.u32 %p1, 1, 1;\n\tselp.f32 %f2, %f1, 0fFF800000, %p1;\n"
            "\tsetp.eq.u32 %p2, 1, 0;\n\tselp.f32 %f3, %f1, 0fFF800000, %p2;\n\tst.global.f32 [%out], %f2;\n\tst.global.f32 [%out+4], %f3;")
    assert list(run_body(body, 2)) == [0x3F800000, 0xFF800000]


def test_vector_moves_pack_and_unpack_the_lowest_element_first():
    body = ("\tmov.b16 %h1, 0x1111;\n\tmov.b16 %h2, 0x2222;\n\tmov.b32 %r1, {%h1, %h2};\n"
            "\tmov.b32 {%h3, %h4}, %r1;\n\tcvt.u32.u16 %r2, %h4;\n"
            "\tst.global.u32 [%out], %r1;\n\tst.global.u32 [%out+4], %r2;")
    assert list(run_body(body, 2)) == [0x22221111, 0x2222]


def test_braces_blocks_scope_their_registers_and_labels():
    body = ("\tmov.b32 %r1, 1;\n"
            "\t{\n\t.reg .b32 t;\n\tmov.b32 t, 7;\n\tadd.s32 %r1, %r1, t;\n\tbra DONE;\n\tmov.b32 %r1, 0;\nDONE:\n\t}\n"
            "\t{\n\t.reg .b32 t;\n\tmov.b32 t, 30;\n\tadd.s32 %r1, %r1, t;\n\tbra DONE;\nDONE:\n\t}\n"
            "\tst.global.u32 [%out], %r1;")
    assert run_body(body, 1)[0] == 38
