"""The wgmma accumulation models (pycute.sim.accumulate): the exact model is the exact sum rounded once, the
aligned models cut each term at the grid of the block's largest exponent; the measured records' mechanisms, each on
a hand-made case (most taken from the H100 run, docs/runs/wgmma/fp8-accumulation-h100.jsonl)."""
import attrs
import numpy as np
import pytest

from pycute.arch.sm90.wgmma import EXACT_ACCUMULATION, FP8_F16, FP8_F32, HALF_F32, WgmmaAccumulation
from pycute.sim.accumulate import dot_sum, round_pair
from pycute.sim.executors.wgmma import d_codes_of

ONES = np.ones(4)


def one(terms, c=None, model=EXACT_ACCUMULATION, d="f32", a="f8e5m2"):
    return float(dot_sum(np.array(terms, dtype=np.float64), ONES[:len(terms)] if len(terms) <= 4 else
                         np.ones(len(terms)), None if c is None else np.float64(c), a, a, d, model))


def test_exact_model_is_the_sum_rounded_once():
    rng = np.random.default_rng(1)
    a, b, c = rng.standard_normal((16, 32)), rng.standard_normal((8, 32)), rng.standard_normal((16, 8))
    got = dot_sum(a[:, None], b[None], c, "f32", "f32", "f32", EXACT_ACCUMULATION)
    assert np.array_equal(got, (a @ b.T + c).astype(np.float32).astype(np.float64))


@pytest.mark.parametrize("bits, want", [(13, 1.0), (20, 1.0 + 2.0 ** -20), (19, 1.0)])
def test_a_term_below_the_kept_bits_is_cut(bits, want):
    model = WgmmaAccumulation(bits, rounding="rz")
    assert one([1.0, 2.0 ** -20], model=model) == want


@pytest.mark.parametrize("term, want", [("rz", 3.0), ("rd", 3.0 - 2.0 ** -12), ("rn", 3.0)])
def test_term_rounding_direction_of_a_negative_small_term(term, want):
    # C = 3 sets the grid at 2^(1 - 13): the product -2^-20 is cut toward zero (0) or down (-2^-12)
    model = WgmmaAccumulation(13, term_rounding=term, rounding="rz")
    assert one([-2.0 ** -20], c=3.0, model=model) == want


def test_c_is_cut_when_aligned_and_kept_when_added_after():
    c = 1.0 + 2.0 ** -20
    assert one([2.0], c=c, model=WgmmaAccumulation(13, c_term="aligned", rounding="rz")) == 3.0
    assert one([2.0], c=c, model=WgmmaAccumulation(13, c_term="after", rounding="rz")) == 3.0 + 2.0 ** -20


def test_blocks_sum_their_own_small_terms_first():
    # two terms of 0.75 grid units each vanish one by one beside the large one, but not when summed in a block of
    # their own before it
    unit = 2.0 ** -13
    terms = [0.75 * unit, 0.75 * unit, 1.0, 0.0]
    assert one(terms, model=WgmmaAccumulation(13, block=4, rounding="rz")) == 1.0
    assert one(terms, model=WgmmaAccumulation(13, block=2, rounding="rz")) == 1.0 + unit


def test_exponents_grid_aligns_a_product_by_its_operands_exponents():
    # 1.875 * 1.875 = 3.515625 lies one binade above its exponent sum 0: keeping 7 bits, the grid is 2^-7 by the
    # exponents and 2^-6 by the value, which cuts a term of 2^-7
    a, b = np.array([1.875, 2.0 ** -7]), np.array([1.875, 1.0])
    by = {g: float(dot_sum(a, b, None, "f8e4m3", "f8e4m3", "f32", WgmmaAccumulation(7, grid=g, rounding="rz")))
          for g in ("exponents", "values")}
    assert by == {"exponents": 3.515625 + 2.0 ** -7, "values": 3.515625}


@pytest.mark.parametrize("hi, lo, mode, want", [
    (1.0 + 2.0 ** -24, 2.0 ** -60, "rn", 1.0 + 2.0 ** -23),       # a tie broken upward by lo
    (1.0 + 2.0 ** -24, -(2.0 ** -60), "rn", 1.0),                   # ... and downward
    (1.0 + 2.0 ** -24, 0.0, "rn", 1.0),                             # a true tie: to even
    (1.0, -(2.0 ** -60), "rz", 1.0 - 2.0 ** -24),                   # just below a value of the type: toward zero
    (-1.0, 2.0 ** -60, "rz", -(1.0 - 2.0 ** -24)),
    (1.0e39, 0.0, "rz", float(np.finfo(np.float32).max)),           # overflow toward zero stays finite
    (1.0e39, 0.0, "rn", np.inf)])
def test_round_pair(hi, lo, mode, want):
    assert float(round_pair(np.array(hi), np.array(lo), "f32", mode)) == want


def test_special_values_follow_ieee():
    model = WgmmaAccumulation(13)
    assert np.isnan(one([np.inf, -np.inf], model=model))
    assert one([np.inf, 1.0], model=model) == np.inf
    assert np.isnan(one([1.0], c=np.nan, model=model))
    assert np.signbit(one([-0.0, -0.0], c=-0.0, model=model))
    assert not np.signbit(one([1.0, -1.0], model=model))


def test_model_parameters_are_checked():
    with pytest.raises(ValueError, match="fraction_bits 60 outside 1..45"):
        WgmmaAccumulation(60)


# ---- the mechanisms the H100 run measured (arch.sm90.wgmma: FP8_F32, FP8_F16, HALF_F32; docs/wgmma.md) ----------


def test_fp8_into_f32_cuts_the_sum_that_carried_to_13_bits_below_its_new_leading_bit():
    # one of the run's probes: C and the product align at 2^(0 - 13) and sum exactly to -0x1.2bfcp+1, which carried
    # into binade 1; the hardware's D keeps 13 bits below that: -0x1.2bf8p+1
    c, p = -float.fromhex("0x1.dffffep+0"), -float.fromhex("0x1.ep-2")
    assert one([p], c=c, model=FP8_F32, a="f8e4m3") == -float.fromhex("0x1.2bf8p+1")
    assert one([p], c=c, model=attrs.evolve(FP8_F32, sum_bits=None), a="f8e4m3") == -float.fromhex("0x1.2bfcp+1")


def test_fp8_into_f32_cuts_c_alone_to_13_bits():
    # every product zero: D is C with its bits below 2^(14 - 13) cut toward zero (the run: D = C in 0 of 512)
    c = -float.fromhex("0x1.dffffep+14")
    assert one([0.0, 0.0], c=c, model=FP8_F32) == -float.fromhex("0x1.dff8p+14")


@pytest.mark.parametrize("c, want", [(2.0 ** -130, 2.0 ** -130), (-(2.0 ** -140), 0.0), (2.0 ** -149, 0.0)])
def test_a_subnormal_c_aligns_at_the_smallest_normal_exponent(c, want):
    # the grid of a lone subnormal C is 2^(-126 - 13): 2^-130 survives, 2^-140 and 2^-149 are cut to +0 (the run's
    # special CTAs: every such D)
    got = one([0.0], c=c, model=FP8_F32)
    assert got == want and not np.signbit(got)


def test_fp8_into_f16_rounds_the_aligned_sum_to_nearest_without_the_cut():
    # 1 + 2^-13 + C (1 + 2^-10) = 2 + 2^-10 + 2^-13, exact on the grid 2^-13: to nearest in f16 (ulp 2^-9 there)
    # it rounds up; cut to 13 bits first it would be the tie 2 + 2^-10, rounded to even: 2
    terms, c = [1.0, 2.0 ** -13], 1.0 + 2.0 ** -10
    assert one(terms, c=c, model=FP8_F16, d="f16") == 2.0 + 2.0 ** -9
    assert one(terms, c=c, model=attrs.evolve(FP8_F16, sum_bits=13), d="f16") == 2.0


def test_a_negative_sum_rounded_to_zero_is_positive_zero():
    # -2^-26 is below half of f16's smallest subnormal 2^-24: IEEE rounds it to -0, the hardware writes +0
    a, b = np.array([-(2.0 ** -13)]), np.array([2.0 ** -13])
    got = {z: float(dot_sum(a, b, None, "f8e5m2", "f8e5m2", "f16", attrs.evolve(FP8_F16, zero=z)))
           for z in ("ieee", "positive")}
    assert got == {"ieee": 0.0, "positive": 0.0}
    assert np.signbit(got["ieee"]) and not np.signbit(got["positive"])


def test_terms_all_negative_zero_keep_ieee_negative_zero():
    # not in the run (no dot product had every term -0): the model keeps IEEE's -0 there
    assert np.signbit(one([-0.0, -0.0], c=-0.0, model=FP8_F32))


def test_a_sum_past_the_largest_binade_is_infinite_even_when_rounding_toward_zero():
    # as in the run's bf16 cases (C = 3e38, products near 4.2e37: inf, though D rounds toward zero): C plus the
    # bf16 product 1.140625 * 2^62 * 2^63 (4.85e37) lies past 2^128
    c = float(np.float32(3.0e38))
    a, b = np.array([1.140625 * 2.0 ** 62]), np.array([2.0 ** 63])
    got = {o: float(dot_sum(a, b, np.float64(c), "bf16", "bf16", "f32", attrs.evolve(HALF_F32, overflow=o)))
           for o in ("ieee", "inf")}
    assert got == {"ieee": float(np.finfo(np.float32).max), "inf": np.inf}


def test_a_nan_d_has_the_code_wgmma_writes():
    codes = d_codes_of(np.array([np.nan, -np.nan, 1.0]), "f32").tolist()
    assert codes == [0x7FFFFFFF, 0x7FFFFFFF, 0x3F800000]
    assert d_codes_of(np.array([np.nan]), "f16").tolist() == [0x7FFF]


@pytest.mark.parametrize("kwargs, message", [
    (dict(fraction_bits=13, sum_bits=0), "sum_bits 0 outside 1..52"),
    (dict(fraction_bits=13, sum_bits=13, c_term="after"), "sum_bits cuts the aligned sum"),
    (dict(sum_bits=13), "sum_bits cuts the aligned sum")])
def test_a_sum_cut_needs_an_aligned_sum(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WgmmaAccumulation(**kwargs)
