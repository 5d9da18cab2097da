"""pycute.testing's GEMM references: exact on integers, scales per tensor and per row, block scales per K block as
the tensor core applies them (the emulator's reference_mma agrees on the codes), PyTorch tensors computed in
float64 on their device, and shapes refused naming them."""
import numpy as np
import pytest

import pycute.testing as pt
from pycute.sim.operand import reference_mma

RNG = np.random.default_rng(7)
A, B = RNG.integers(-8, 9, (9, 64)), RNG.integers(-8, 9, (5, 64))


def test_the_plain_reference_is_exact_on_integers():
    assert np.array_equal(pt.gemm(A, B), (A @ B.T).astype(np.float64))


@pytest.mark.parametrize("scale_a, scale_b", [(0.5, 3.0), (np.arange(1, 10), np.full(5, 0.25)), (2.0, np.arange(5))])
def test_scales_apply_per_tensor_or_per_row(scale_a, scale_b):
    want = (A * np.reshape(scale_a, (-1, 1))) @ (B * np.reshape(scale_b, (-1, 1))).T
    assert np.array_equal(pt.scaled_gemm(A, B, scale_a, scale_b), want)


def test_block_scales_multiply_each_block_of_k():
    sfa, sfb = 2.0 ** RNG.integers(-3, 4, (9, 2)), 2.0 ** RNG.integers(-3, 4, (5, 2))
    want = sum((A[:, k * 32:(k + 1) * 32] * sfa[:, k:k + 1]) @ (B[:, k * 32:(k + 1) * 32] * sfb[:, k:k + 1]).T
               for k in range(2))
    assert np.array_equal(pt.blockscaled_gemm(A, B, sfa, sfb, 32), want)


@pytest.mark.parametrize("element, scale, block", [("f8e4m3", "ue8m0", 32), ("f4e2m1", "ue4m3", 16),
                                                    ("f6e3m2", "ue8m0", 32)])
def test_the_codes_reference_is_the_emulators(element, scale, block):
    x = pt.block_quantize(RNG.standard_normal((16, 64)), element, scale)
    y = pt.block_quantize(RNG.standard_normal((8, 64)), element, scale)
    (a, sfa), (b, sfb) = x.codes(), y.codes()
    got = pt.blockscaled_gemm_codes(a, b, element, sfa, sfb, scale, block)
    assert np.array_equal(got, reference_mma(a, b, element, element, sfa, sfb, scale, block))
    assert np.allclose(got, pt.gemm(x.dequantized, y.dequantized), rtol=1e-12, atol=1e-12)


def test_torch_tensors_give_torch_float64_on_their_device():
    torch = pytest.importorskip("torch")
    a, b = torch.tensor(A, dtype=torch.bfloat16), torch.tensor(B, dtype=torch.bfloat16)
    got = pt.scaled_gemm(a, b, torch.tensor(0.5), torch.ones(5))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64 and got.device == a.device
    assert np.array_equal(got.numpy(), 0.5 * (A @ B.T))


def test_shapes_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"A is M x K and B is N x K .*got A \(9, 64\) and B \(64, 5\)"):
        pt.gemm(A, B.T)
    with pytest.raises(ValueError, match=r"scale_b is one scale \(per tensor\) or 5 \(per row\); got shape \(9,\)"):
        pt.scaled_gemm(A, B, 1.0, np.ones(9))
    with pytest.raises(ValueError, match=r"K = 64 in blocks of 32 needs SFA 9 x 2 and SFB 5 x 2"):
        pt.blockscaled_gemm(A, B, np.ones((9, 4)), np.ones((5, 2)), 32)
