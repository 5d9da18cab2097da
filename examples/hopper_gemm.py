"""The Hopper GEMM from torch (pycute/kernels/hopper_gemm; docs/kernels.md, docs/hopper-gemm.md): one call,
``pycute.kernels.gemm(a, b)`` = ``a @ b.T`` in bf16, with a fused epilogue when asked -- bias + ReLU in the same call,
or a user's own elementwise expression in a few lines of Python. On a GPU it launches on torch's current stream; on
the CPU the very same compiled kernel runs thread by thread in pycute's interpreter (small problems only).

    PYTHONPATH=. python examples/hopper_gemm.py
"""
import torch

import pycute.kernels as pk


@pk.epilogue
def leaky_bias(acc, bias: pk.Col, slope: float):           # a user's epilogue: traced once, generated to CUDA
    x = acc + bias
    return pk.where(x > 0, x, slope * x)


def main() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    M, N, K = (4096, 4096, 4096) if device == "cuda" else (64, 40, 32)
    a = torch.randn(M, K, device=device).to(torch.bfloat16)
    b = torch.randn(N, K, device=device).to(torch.bfloat16)
    bias = torch.randn(N, device=device).to(torch.bfloat16)

    d = pk.gemm(a, b)                                          # bf16, M x N
    d_relu = pk.gemm(a, b, bias=bias, activation="relu")       # relu(a @ b.T + bias), fused
    d_leaky = pk.gemm(a, b, epilogue=leaky_bias, bias=bias, slope=0.1)

    exact = a.double() @ b.double().T
    for name, got, want in (("plain", d, exact), ("bias + relu", d_relu, torch.relu(exact + bias.double())),
                            ("leaky bias", d_leaky, torch.nn.functional.leaky_relu(exact + bias.double(), 0.1))):
        error = (got.double() - want).norm() / want.norm()
        print(f"{name:12} {M} x {N} x {K} on {device}: relative error {error:.2e}")


if __name__ == "__main__":
    main()
