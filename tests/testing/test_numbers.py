"""pycute.testing's numbers: quantize rounds once to the nearest value of the format, ties to the even code, and
overflows as cvt.rn does; with to_codes it gives the bits of pycute's exact cvt model (pycute.sim.convert, held to
the H200's conversions) for every f32 input; decode and to_codes are inverse; block_quantize follows OCP MX and
NVFP4."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute.testing as pt
from pycute.sim.convert import round_f32

NARROW = ["f8e4m3", "f8e5m2", "f6e2m3", "f6e3m2", "f4e2m1"]
SPECIALS = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 1, 0x477FE000, 0x43E00000,
                     0x43E80000, 0x43F00000, 0x47800000, 0xC3E80000, 0x3F808000, 0x3F818000], np.uint32)


@pytest.mark.parametrize("fmt", ["bf16", "f16", "f8e4m3", "f8e5m2"])
@pytest.mark.parametrize("satfinite", [False, True])
def test_quantize_then_to_codes_is_the_cvt_model_for_every_f32(fmt, satfinite):
    bits = np.concatenate([SPECIALS, np.random.default_rng(1).integers(0, 1 << 32, 20000, np.uint64).astype(np.uint32)])
    with np.errstate(invalid="ignore"):
        x = bits.view(np.float32).astype(np.float64)
    got = pt.to_codes(pt.quantize(x, fmt, satfinite), fmt)
    assert np.array_equal(got, round_f32(bits, fmt, satfinite))


@pytest.mark.parametrize("fmt", NARROW + ["bf16", "tf32", "ue8m0", "ue4m3"])
@settings(max_examples=60, deadline=None)
@given(x=st.floats(min_value=-400.0, max_value=400.0, allow_nan=False, width=64))
def test_quantize_is_the_nearest_value_with_ties_to_the_even_code(fmt, x):
    if fmt.startswith("ue"):
        x = abs(x)
    q = float(pt.quantize(np.array([x]), fmt, satfinite=True)[0])
    code = int(pt.to_codes(np.array([q]), fmt)[0])
    for step in (-1, 1):
        other = float(pt.decode(np.array([code + step]), fmt)[0]) if 0 <= code + step < (1 << 32) else np.nan
        if np.isfinite(other) and np.sign(other) in (0, np.sign(q) or 1):
            assert abs(q - x) < abs(other - x) or (abs(q - x) == abs(other - x) and code % 2 == 0) or \
                abs(q) == abs(float(pt.quantize(np.array([1e300]), fmt, satfinite=True)[0])), (x, q, other)


def test_an_epilogue_rounds_through_f32_where_one_rounding_would_not():
    x = np.array([1 + 2.0 ** -8 + 2.0 ** -30])          # above the bf16 tie, but f32 drops the 2^-30
    assert pt.quantize(x, "bf16")[0] == 1 + 2.0 ** -7
    assert pt.quantize(pt.quantize(x, "f32"), "bf16")[0] == 1.0


@pytest.mark.parametrize("fmt", NARROW + ["ue8m0", "ue4m3"])
def test_decode_and_to_codes_are_inverse_on_every_code(fmt):
    bits = {"f6e2m3": 6, "f6e3m2": 6, "f4e2m1": 4}.get(fmt, 8)
    codes = np.arange(1 << bits)
    if fmt == "ue4m3":
        codes = codes[:128]                             # bit 7 is ignored
    values = pt.decode(codes, fmt)
    keep = ~np.isnan(values)
    assert np.array_equal(pt.to_codes(values[keep], fmt), codes[keep])


def test_overflow_is_infinity_nan_or_the_largest_value():
    big = np.array([1e6, -1e6])
    assert list(pt.quantize(big, "f8e5m2")) == [np.inf, -np.inf]
    assert np.isnan(pt.quantize(big, "f8e4m3")).all()
    assert list(pt.quantize(big, "f8e4m3", satfinite=True)) == [448.0, -448.0]
    assert list(pt.quantize(np.array([464.0]), "f8e4m3")) == [448.0]     # the tie rounds to 448's even code


def test_a_value_the_format_does_not_hold_has_no_code():
    with pytest.raises(ValueError, match=r"to_codes: 0\.1 is not a bf16 value; quantize it first"):
        pt.to_codes(np.array([0.1]), "bf16")
    with pytest.raises(ValueError, match="f4e2m1 has no NaN"):
        pt.to_codes(np.array([np.nan]), "f4e2m1")
    with pytest.raises(ValueError, match="ue8m0 holds no negative value"):
        pt.quantize(np.array([-1.0]), "ue8m0")
    with pytest.raises(ValueError, match="i32 is not a float format"):
        pt.quantize(np.array([1.0]), "i32")


def test_mx_scales_are_the_block_maximums_exponent_less_the_elements():
    x = np.zeros((1, 64))
    x[0, 3], x[0, 40] = 3.0, -0.02                      # floor(log2 3) = 1; e4m3's largest 448 = 1.75 * 2^8
    blocked = pt.block_quantize(x, "f8e4m3")
    assert list(blocked.scales[0]) == [2.0 ** (1 - 8), 2.0 ** (-6 - 8)]
    assert blocked.elements[0, 3] == 384.0 and blocked.block == pt.MX_BLOCK
    assert np.allclose(blocked.dequantized, x, rtol=2 ** -4)


def test_nvfp4_scales_are_the_block_maximum_over_six_in_ue4m3():
    x = np.array([[4.5] + [0.3] * 15])
    blocked = pt.block_quantize(x, "f4e2m1", "ue4m3")
    assert blocked.scales[0, 0] == 0.75 and blocked.elements[0, 0] == 6.0 and blocked.block == pt.NVFP4_BLOCK
    elements, scales = blocked.codes()
    assert elements.dtype == np.uint8 and pt.decode(scales, "ue4m3")[0, 0] == 0.75


def test_block_quantize_refuses_a_partial_block_and_wrong_formats():
    with pytest.raises(ValueError, match="the last axis .40. is not a whole number of 32-element blocks"):
        pt.block_quantize(np.zeros((2, 40)), "f8e4m3")
    with pytest.raises(ValueError, match="scales are ue8m0 or ue4m3, not bf16"):
        pt.block_quantize(np.zeros((2, 32)), "f8e4m3", "bf16")
    with pytest.raises(ValueError, match="elements are fp8, fp6 or fp4"):
        pt.block_quantize(np.zeros((2, 32)), "bf16")
