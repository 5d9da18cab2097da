"""The Hopper GEMM from torch (pycute/kernels/hopper_gemm; docs/kernels.md, docs/hopper-gemm.md): one call,
``pycute.kernels.gemm(a, b, scale)`` = ``scale * a @ b.T`` in bf16. On a GPU it launches on torch's current stream;
on the CPU the very same compiled kernel runs thread by thread in pycute's interpreter (small problems only).

    PYTHONPATH=. python examples/hopper_gemm.py [--explain]

``--explain`` also prints the configuration ``choose`` picks for the problem and its plans."""
import sys

import torch

import pycute.kernels
from pycute.kernels.hopper_gemm import choose

device = "cuda" if torch.cuda.is_available() else "cpu"
M, N, K = (4096, 4096, 4096) if device == "cuda" else (128, 72, 96)
a = torch.randn(M, K, device=device).to(torch.bfloat16)
b = torch.randn(N, K, device=device).to(torch.bfloat16)

d = pycute.kernels.gemm(a, b)                       # bf16, M x N

error = (d.double() - a.double() @ b.double().T).norm() / (a.double() @ b.double().T).norm()
print(f"{M} x {N} x {K} on {device}: relative error {error:.2e} (bf16 output)")
if "--explain" in sys.argv:
    print(choose(M, N, K).explain())
