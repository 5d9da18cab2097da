"""pycute.testing's epilogue (alpha, beta, bias along either axis, the activations, the kernel's two roundings),
its tolerances (stated, with the worst element named), exact comparison, the relative error, and NaN-filled output
buffers."""
import math

import numpy as np
import pytest

import pycute.testing as pt


def test_the_epilogue_scales_adds_activates_and_rounds_as_the_kernel_does():
    acc, c = np.array([[1.5, -2.0], [0.25, 4.0]], np.float32), np.array([[1.0, 1.0], [2.0, 2.0]])
    got = pt.epilogue(acc, alpha=2.0, beta=0.5, c=c, bias=np.array([0.1, 0.2]), activation_name="relu", out="bf16")
    want = [[3.59375, 0.0], [1.6015625, 9.1875]]                        # 3.6, 0, 1.6, 9.2 rounded to bf16
    assert np.array_equal(got, want) and pt.to_codes(got, "bf16").dtype == np.uint16
    rows = pt.epilogue(acc, bias=np.array([[1.0], [2.0]]))
    assert np.array_equal(rows, acc + [[1.0], [2.0]])


@pytest.mark.parametrize("name, x, want", [("gelu", 1.0, 0.5 * (1 + math.erf(2 ** -0.5))),
                                           ("gelu_tanh", 1.0, 0.8411919906082768), ("silu", 2.0, 2 / (1 + math.exp(-2))),
                                           ("relu", -3.0, 0.0), ("identity", -3.0, -3.0)])
def test_each_activation_at_a_point(name, x, want):
    assert pt.activation(np.array([x]), name)[0] == pytest.approx(want, rel=1e-15)


def test_the_epilogue_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="beta = 1.0 reads C; pass c"):
        pt.epilogue(np.zeros((2, 2)), beta=1.0)
    with pytest.raises(ValueError, match=r"bias \(3,\) does not broadcast over the accumulator \(2, 2\)"):
        pt.epilogue(np.zeros((2, 2)), bias=np.zeros(3))
    with pytest.raises(ValueError, match="'tanh' is not one of identity, relu, gelu, gelu_tanh, silu"):
        pt.activation(np.zeros(2), "tanh")


def test_a_tolerance_says_what_it_is_why_and_the_worst_element():
    tol = pt.Tolerance.of("bf16")
    assert (tol.rtol, tol.why) == (2.0 ** -7, "1 ulp of bf16 (8 significant bits): a result rounded once into bf16")
    tol.check(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 2 ** -7]))
    with pytest.raises(AssertionError, match=r"1 of 3 elements outside rtol 0\.00781.*\(1 ulp of bf16.*worst at "
                                             r"\(2,\): got 3\.0, want 3\.1"):
        tol.check(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.001, 3.1]))
    with pytest.raises(AssertionError, match="1 of 1 elements outside"):
        pt.assert_close(np.array([np.nan]), np.array([1.0]), pt.Tolerance(0.5, 0.0, "half"))
    assert pt.Tolerance.of("f8e4m3").rtol == 2.0 ** -3 and pt.Tolerance.of("f32").rtol == 2.0 ** -23
    with pytest.raises(ValueError, match="one of them > 0"):
        pt.Tolerance(0.0, 0.0, "nothing")


def test_exact_comparison_names_the_first_difference_and_takes_nan_as_nan():
    pt.assert_exact(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    with pytest.raises(AssertionError, match=r"1 of 3 elements differ; the first at \(1,\): got 2, want 5"):
        pt.assert_exact(np.array([1, 2, 3]), np.array([1, 5, 3]))


def test_the_relative_error_is_frobenius_and_nan_when_got_holds_one():
    assert pt.rel_err(np.array([3.0, 4.0]), np.array([3.0, 0.0])) == pytest.approx(4 / 3)
    assert math.isnan(pt.rel_err(np.array([np.nan, 1.0]), np.array([1.0, 1.0])))


@pytest.mark.parametrize("fmt, kind, code", [("f32", np.float32, None), ("bf16", np.uint16, 0x7FFF),
                                             ("f8e4m3", np.uint8, 0x7F), ("u8", np.uint8, 0xFF)])
def test_a_poisoned_buffer_is_all_nan_until_written(fmt, kind, code):
    buf = pt.poisoned((2, 3), fmt)
    assert buf.dtype == kind and pt.unwritten(buf, fmt) == 6
    assert code is None and np.isnan(buf).all() or (buf == code).all()
    buf[0] = 0
    assert pt.unwritten(buf, fmt) == 3
    with pytest.raises(ValueError, match="f4e2m1 has no NaN to fill with"):
        pt.poisoned(2, "f4e2m1")


def test_a_poisoned_tensor_is_nan():
    torch = pytest.importorskip("torch")
    assert torch.isnan(pt.poisoned_tensor((2, 2), torch.bfloat16, "cpu")).all()
