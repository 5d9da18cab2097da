"""The references kernels are checked against: float64 (or exact) GEMMs -- plain, with per-tensor or per-row
scales, block-scaled MX FP8 / FP6 / FP4 and NVFP4 -- attention (causal, variable-length, grouped-query heads, the
log-sum-exp), the epilogue (alpha, beta, bias, activations, the output's rounding), the kernels' number formats
(decode, quantize, codes, block quantization), tolerances that say what they are and why, and NaN-filled output
buffers.

numpy is all it imports; PyTorch tensors are taken where torch is installed, and a GPU tensor's reference is
computed in float64 on its device. Nothing in pycute imports this module but ``pycute.kernels``: it is for tests,
examples, benchmarks, tools and kernels' users (``import pycute.testing as pt``)."""
from .numbers import MX_BLOCK, NVFP4_BLOCK, BlockScaled, block_quantize, decode, quantize, to_codes
from .gemm import blockscaled_gemm, blockscaled_gemm_codes, gemm, scaled_gemm
from .attention import Attention, attention
from .epilogue import ACTIVATIONS, Activation, activation, epilogue
from .tolerance import Tolerance, assert_close, assert_exact, rel_err
from .buffers import poisoned, poisoned_tensor, unwritten

__all__ = ["decode", "quantize", "to_codes", "BlockScaled", "block_quantize", "MX_BLOCK", "NVFP4_BLOCK", "gemm",
           "scaled_gemm", "blockscaled_gemm", "blockscaled_gemm_codes", "Attention", "attention", "Activation",
           "ACTIVATIONS", "activation", "epilogue", "Tolerance", "assert_close", "assert_exact", "rel_err",
           "poisoned", "poisoned_tensor", "unwritten"]
