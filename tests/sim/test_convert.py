"""The packing conversions' models (pycute.sim.convert) round as PTX's cvt.rn defines: to nearest, ties to even,
subnormals kept, NaN canonical (sign cleared), overflow to infinity or, with .satfinite, to the largest finite
value; checked against independent references (numpy's float16, the bf16 bit trick, the fp8 value grid) over every
special case and random bits."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pycute.sim.convert import FORMATS, pack_pair, round_f32


def _grid(fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """Every finite non-negative encoding of ``fmt`` and its value, ascending."""
    f = FORMATS[fmt]
    codes = np.arange(f.max_finite + 1)
    e, m = codes >> f.mantissa, codes & ((1 << f.mantissa) - 1)
    values = np.where(e == 0, m * 2.0 ** (1 - f.bias - f.mantissa),
                      (1 + m / 2 ** f.mantissa) * 2.0 ** (e.astype(np.float64) - f.bias))
    return codes, values


def _reference(bits: np.ndarray, fmt: str, satfinite: bool) -> np.ndarray:
    """Nearest grid value, ties to the even encoding; past the largest finite by half an ulp or more: infinity
    (NaN for e4m3) or, saturating, the largest finite."""
    f = FORMATS[fmt]
    codes, values = _grid(fmt)
    x = bits.view(np.float32).astype(np.float64)
    ax = np.abs(x)
    i = np.clip(np.searchsorted(values, ax), 1, values.size - 1)
    lo, hi = values[i - 1], values[i]
    pick = np.where(ax - lo < hi - ax, i - 1, np.where(ax - lo > hi - ax, i, np.where((i - 1) % 2 == 0, i - 1, i)))
    ulp = values[-1] - values[-2]
    over = ax >= values[-1] + ulp / 2
    top = f.max_finite if satfinite else ((((1 << f.exponent) - 1) << f.mantissa) if f.inf else f.nan)
    enc = np.where(over, top, codes[np.minimum(pick, codes.size - 1)])
    enc = np.where(ax > values[-1], np.where(over, top, f.max_finite), enc)
    enc = enc | (np.signbit(x).astype(np.int64) << f.sign_bit)
    return np.where(np.isnan(x), f.nan, enc).astype(np.uint16)


SPECIALS = np.array([0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F800000, 0xFF800000, 0x7FC00000,
                     0xFFC00001, 0x7F800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F808000, 0x3F818000, 0x3F808001,
                     0x477FF000, 0x477FEFFF, 0x43E80000, 0x43F00000, 0x47600000, 0x47700000, 0x33000000,
                     0x33000001, 0x3A800000, 0x3B000000], dtype=np.uint32)


@pytest.mark.parametrize("fmt,satfinite", [("bf16", False), ("bf16", True), ("f16", False), ("f16", True),
                                           ("f8e4m3", True), ("f8e5m2", True)])   # the 8-bit pairs always saturate
def test_special_values_round_as_the_grid_says(fmt, satfinite):
    assert np.array_equal(round_f32(SPECIALS, fmt, satfinite), _reference(SPECIALS, fmt, satfinite))


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["bf16", "f16", "f8e4m3", "f8e5m2"]), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_random_bit_patterns_round_as_the_grid_says(fmt, satfinite, seed):
    bits = np.random.default_rng(seed).integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32)
    satfinite = satfinite or fmt.startswith("f8")
    assert np.array_equal(round_f32(bits, fmt, satfinite), _reference(bits, fmt, satfinite))


def test_f16_agrees_with_numpy_and_bf16_with_the_bit_trick():
    bits = np.random.default_rng(7).integers(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(np.uint32)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    with np.errstate(over="ignore", invalid="ignore"):
        f16 = bits.view(np.float32).astype(np.float16).view(np.uint16)
    assert np.array_equal(round_f32(bits, "f16")[~nan], f16[~nan])
    x = bits.astype(np.uint64)
    bf16 = ((x + 0x7FFF + ((x >> np.uint64(16)) & 1)) >> np.uint64(16)).astype(np.uint16)
    assert np.array_equal(round_f32(bits, "bf16")[~nan], bf16[~nan])


def test_nan_is_canonical_and_saturation_keeps_the_sign():
    assert round_f32(np.array([0xFFC00001], dtype=np.uint32), "bf16")[0] == 0x7FFF
    assert round_f32(np.array([0xFF800000], dtype=np.uint32), "bf16", True)[0] == 0xFF7F
    assert round_f32(np.array([0xFF800000], dtype=np.uint32), "f8e4m3", True)[0] == 0xFE
    assert round_f32(np.array([0x7F800001], dtype=np.uint32), "f8e5m2", True)[0] == 0x7F


def test_a_pair_puts_a_in_the_upper_half():
    a, b = np.array([0x3F800000], dtype=np.uint32), np.array([0x40000000], dtype=np.uint32)
    assert pack_pair(a, b, "bf16")[0] == 0x3F804000
    assert pack_pair(a, b, "f8e4m3", True)[0] == 0x3840
