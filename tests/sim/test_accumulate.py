"""The wgmma accumulation models (pycute.sim.accumulate): the exact model is the exact sum rounded once, the
aligned models cut each term at the grid of the block's largest exponent."""
import numpy as np
import pytest

from pycute.arch.sm90.wgmma import EXACT_ACCUMULATION, WgmmaAccumulation
from pycute.sim.accumulate import dot_sum, round_pair

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
