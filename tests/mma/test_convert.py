"""The accumulator as the next MMA's A operand (pycute.mma.convert): which source values each cvt packs into which
register, the shuffles where values change threads or the column permutation that avoids them, derived from the two
fragments' coordinates; the program's emulation equals the coordinates' reference; refusals name the rule."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import PlanError
from pycute.codegen import read_conventions
from pycute.compile import compile_cuda
from pycute.compile.sass import function_instructions, opcode_histogram
from pycute.mma.convert import Unit, make_fragment_convert


def plan(dtype, m=64, n=64, columns="same"):
    return make_fragment_convert(pc.wgmma_a_fragment(dtype, m, n), pc.wgmma_accumulator(pc.f32, m, n), columns)


@pytest.mark.parametrize("dtype", [pc.bf16, pc.f16])
def test_a_16_bit_a_fragment_is_the_accumulator_packed_in_place(dtype):
    p = plan(dtype, 128, 64)
    assert p.shuffles == 0 and p.permutation == tuple(range(64))
    assert p.registers == tuple((Unit(2 * r + 1, 2 * r),) for r in range(16))      # cvt(D[2r+1], D[2r]): hi first
    assert p.convention.caller == "any"


def test_an_8_bit_a_fragment_exchanges_two_words_per_16_columns_in_the_quad():
    p = plan(pc.f8e4m3, 64, 64)
    assert p.shuffles == 8 and len(p.assembly) == 8
    for rnd in p.rounds:                                                # every lane reads a lane of its own quad
        assert all(s // 4 == lane // 4 for lane, s in enumerate(rnd.src_lane))
    # lanes 0 / 1 of a quad take their first half from the first word, lanes 2 / 3 from the second
    assert {a.selector[0] for a in p.assembly} == {0x1054, 0x3276}
    assert {a.selector[2] for a in p.assembly} == {0x5410, 0x7632}
    assert p.convention.caller == "warps" and p.convention.threads == 128


def test_permuted_columns_keep_every_value_in_its_thread():
    p = plan(pc.f8e4m3, 64, 64, "permuted")
    assert p.shuffles == 0
    assert p.permutation[:16] == (0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15)
    assert p.permutation[16:32] == tuple(16 + c for c in p.permutation[:16])
    assert p.registers[0] == (Unit(1, 0), Unit(5, 4))                  # A's columns 4q..4q+3 of row t/4


def test_a_16_bit_permutation_is_the_identity():
    assert plan(pc.bf16, 64, 32, "permuted").permutation == tuple(range(32))


CASES = [(d, m, n, c) for d in (pc.bf16, pc.f16, pc.f8e4m3, pc.f8e5m2) for m, n in ((64, 16), (128, 64), (64, 256))
         for c in ("same", "permuted") if not (d.bits == 8 and n < 32)]


@pytest.mark.parametrize("dtype,m,n,columns", CASES, ids=lambda x: getattr(x, "name", str(x)))
def test_the_programs_emulation_is_the_coordinates_reference(dtype, m, n, columns):
    p = plan(dtype, m, n, columns)
    x = (np.random.default_rng(m + n).standard_normal((2 * m, n // 2)) * 300).astype(np.float32)
    assert np.array_equal(p.emulate(x), p.reference(x))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([pc.bf16, pc.f16, pc.f8e4m3, pc.f8e5m2]), st.sampled_from([32, 64, 128]),
       st.sampled_from(["same", "permuted"]), st.integers(0, 2**16))
def test_any_values_specials_included_convert_as_the_reference_says(dtype, n, columns, seed):
    p = plan(dtype, 64, n, columns)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((128, n // 2)) * np.exp2(rng.integers(-30, 30, (128, n // 2)))).astype(np.float32)
    x[rng.random(x.shape) < 0.05] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0, 1e30], np.float32))
    assert np.array_equal(p.emulate(x), p.reference(x))


def test_a_reference_is_the_rounded_element_at_its_coordinates():
    p = plan(pc.bf16, 64, 16)
    x = np.zeros((128, 8), dtype=np.float32)
    x[5, 6] = 257.0                                       # thread 5 value 6: row 9, column 10 -> A's value 6 too
    regs = p.reference(x)
    assert regs[5, 3] == 256 * 0 + 0x4380                 # bf16(257) = 256 (ties to even) in the low half


@pytest.mark.parametrize("dst,src,match", [
    (pc.wgmma_a_fragment(pc.bf16, 64, 64), pc.wgmma_accumulator(pc.f16, 64, 64),
     r"the source is an f32 accumulator .* not f16"),
    (pc.wgmma_a_fragment(pc.tf32, 64, 64), pc.wgmma_accumulator(pc.f32, 64, 64), r"f32 converts to .* not tf32"),
    (pc.wgmma_a_fragment(pc.bf16, 64, 64), pc.wgmma_accumulator(pc.f32, 64, 128),
     r"a 64 x 64 tile over 128 threads, the source .* a 64 x 128 tile over 128: the accumulator's M x N is A's M x K"),
    (pc.make_fragment(pc.bf16, 128, pc.Layout(((64, 2), 32), ((1, 2048), 64)), shape=(64, 64)),   # a thread a row
     pc.wgmma_accumulator(pc.f32, 64, 64), r"A's register \d+ of thread \d+ needs values of thread \d+, in another "
                                           r"warp: shfl.sync reaches the lanes of one warp; a conversion across warps "
                                           r"needs shared memory, which is not planned"),
    (pc.make_fragment(pc.bf16, 128, pc.Layout(((4, 8, 4), (2, 2, 8)), ((64, 1, 16), (256, 8, 512))),
                      shape=(64, 64)),
     pc.wgmma_accumulator(pc.f32, 64, 64), r"A's values 0 and 1 of thread 0 come from threads 0 and \d+: one cvt "
                                           r"packs two values of one thread"),
], ids=["f16 source", "tf32", "shapes", "across warps", "a pair from two threads"])
def test_what_is_refused_names_the_rule(dst, src, match):
    with pytest.raises(PlanError, match=match):
        make_fragment_convert(dst, src)


def test_no_permutation_refuses_naming_the_columns():
    dst = pc.make_fragment(pc.bf16, 128, pc.Layout((128, 32), (1, 128)), shape=(128, 32))    # a thread a row
    src = pc.make_fragment(pc.f32, 128, pc.Layout(((32, 4), 32), ((128, 32), 1)), shape=(128, 32))  # a column
    with pytest.raises(PlanError, match=r"thread 0 holds 32 of row 0's columns in A and 1 in the source: no column "
                                        r"permutation keeps every element in its thread"):
        make_fragment_convert(dst, src, "permuted")


def test_columns_is_same_or_permuted():
    with pytest.raises(PlanError, match=r"columns is 'same' or 'permuted', not 'any'"):
        make_fragment_convert(pc.wgmma_a_fragment(pc.bf16, 64, 16), pc.wgmma_accumulator(pc.f32, 64, 16), "any")


def test_the_wgmma_plan_gives_its_accumulator():
    qk = pc.make_mma(pc.wgmma_accumulator(pc.f32, 64, 64), pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"),
                     pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"))
    assert make_fragment_convert(pc.wgmma_a_fragment(pc.bf16, 64, 64), qk) == plan(pc.bf16)


# --- the generated function ----------------------------------------------------------------------------------------
KERNEL = """extern "C" __global__ void k(const float* in, unsigned* out) {{
  float s[{n}]; unsigned d[{m}];
  for (int i = 0; i < {n}; ++i) s[i] = in[threadIdx.x * {n} + i];
  conv(s, d);
  for (int i = 0; i < {m}; ++i) out[threadIdx.x * {m} + i] = d[i];
}}"""


def sass(p):
    code = p.cuda("conv") + KERNEL.format(n=p.src_registers, m=p.dst_registers)
    return opcode_histogram(function_instructions(compile_cuda(code, arch="sm_90a").sass())["k"])


@pytest.mark.parametrize("dtype,columns,f2fp,shfl", [
    (pc.bf16, "same", 32, 0), (pc.f16, "same", 32, 0), (pc.f8e4m3, "permuted", 32, 0), (pc.f8e4m3, "same", 32, 16)])
def test_the_conversion_is_one_cvt_per_pair_and_a_shuffle_per_word(dtype, columns, f2fp, shfl):
    h = sass(plan(dtype, 64, 128, columns))
    assert sum(v for k, v in h.items() if k.startswith("F2FP")) == f2fp
    assert sum(v for k, v in h.items() if k.startswith("SHFL")) == shfl
    assert not any(k.startswith(("LDL", "STL")) for k in h)
    if not shfl:                                           # nothing but the conversions between the loads and stores
        assert {k for k in h if not k.startswith(("LDG", "STG", "F2FP"))} <= {
            "LDC", "LDC.64", "S2R", "ULDC.64", "IMAD.SHL.U32", "IMAD.WIDE.U32", "EXIT", "BRA", "NOP"}


def test_the_function_states_its_convention():
    for p in (plan(pc.bf16), plan(pc.f8e4m3)):
        assert read_conventions(p.cuda("conv")) == {"conv": p.convention}


def test_a_permuted_function_says_how_to_permute_b():
    assert "permute the next MMA's B rows alike" in plan(pc.f8e4m3, 64, 32, "permuted").cuda("conv")
