"""The floating-point instructions the CPU interpreter runs, on the GPU and on the CPU, input for input: one kernel
applies each instruction (inline ``asm``, one rounding mode or modifier each) to the same operand bit patterns --
random bits (NaNs, infinities, subnormals included), random numbers of moderate size, and the special values -- so
``python -m tools interpreter_floats`` can record where ``pycute.interp.run_kernel`` and the hardware differ (docs/interpreter.md)."""
from __future__ import annotations

import math

import attrs
import numpy as np

from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..interp import run_kernel
from ..interp.floats import FORMATS, decode

__all__ = ["FloatProbe", "EXACT_OPS", "APPROX_OPS", "ulp_distance", "same_values"]

# (name, operands, result, asm text with %0 the result and %1.. the operands). Operand and result kinds: "f" a
# float32 (the bit pattern given), "h" 16 bits, "r" 32 bits; the result format names how to read it (per lane).
EXACT_OPS: tuple[tuple[str, str, str, str, str], ...] = tuple(
    [(f"{op}.{m}.f32", "ff", "f", "f32", f"{op}.{m}.f32 %0, %1, %2;") for op in ("add", "sub", "mul")
     for m in ("rn", "rz", "rm", "rp")]
    + [(f"fma.{m}.f32", "fff", "f", "f32", f"fma.{m}.f32 %0, %1, %2, %3;") for m in ("rn", "rz", "rm", "rp")]
    + [(f"div.{m}.f32", "ff", "f", "f32", f"div.{m}.f32 %0, %1, %2;") for m in ("rn", "rz", "rm", "rp")]
    + [(f"{op}.{m}.f32", "f", "f", "f32", f"{op}.{m}.f32 %0, %1;") for op in ("sqrt", "rcp")
       for m in ("rn", "rz", "rm", "rp")]
    + [("add.rn.ftz.f32", "ff", "f", "f32", "add.rn.ftz.f32 %0, %1, %2;"),
       ("mul.rn.sat.f32", "ff", "f", "f32", "mul.rn.sat.f32 %0, %1, %2;"),
       ("min.f32", "ff", "f", "f32", "min.f32 %0, %1, %2;"), ("max.NaN.f32", "ff", "f", "f32", "max.NaN.f32 %0, %1, %2;"),
       ("min.xorsign.abs.f32", "ff", "f", "f32", "min.xorsign.abs.f32 %0, %1, %2;")]
    + [(f"cvt.{m}.f16.f32", "f", "h", "f16", f"cvt.{m}.f16.f32 %0, %1;") for m in ("rn", "rz", "rm", "rp")]
    + [(f"cvt.{m}.bf16.f32", "f", "h", "bf16", f"cvt.{m}.bf16.f32 %0, %1;") for m in ("rn", "rz")]
    + [("cvt.rn.relu.bf16x2.f32", "ff", "r", "bf16x2", "cvt.rn.relu.bf16x2.f32 %0, %1, %2;"),
       ("cvt.rn.satfinite.e4m3x2.f32", "ff", "h", "e4m3x2", "cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;"),
       ("cvt.rn.satfinite.e5m2x2.f32", "ff", "h", "e5m2x2", "cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;"),
       ("cvt.rn.f16x2.e4m3x2", "h", "r", "f16x2", "cvt.rn.f16x2.e4m3x2 %0, %1;"),
       ("cvt.rna.tf32.f32", "f", "r", "tf32", "cvt.rna.tf32.f32 %0, %1;")]
    + [(f"cvt.{m}.s32.f32", "f", "r", "s32", f"cvt.{m}.s32.f32 %0, %1;") for m in ("rni", "rzi", "rmi", "rpi")]
    + [(f"cvt.{m}.f32.s32", "r", "f", "f32", f"cvt.{m}.f32.s32 %0, %1;") for m in ("rn", "rz", "rm", "rp")]
    + [("fma.rn.f16", "hhh", "h", "f16", "fma.rn.f16 %0, %1, %2, %3;"),
       ("fma.rn.bf16", "hhh", "h", "bf16", "fma.rn.bf16 %0, %1, %2, %3;"),
       ("add.rn.bf16", "hh", "h", "bf16", "add.rn.bf16 %0, %1, %2;"),
       ("mul.rn.f16x2", "rr", "r", "f16x2", "mul.rn.f16x2 %0, %1, %2;")])
APPROX_OPS: tuple[tuple[str, str, str, str, str], ...] = tuple(
    (f"{op}.approx.f32", "f", "f", "f32", f"{op}.approx.f32 %0, %1;")
    for op in ("rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh")) + (
    ("div.approx.f32", "ff", "f", "f32", "div.approx.f32 %0, %1, %2;"),
    ("div.full.f32", "ff", "f", "f32", "div.full.f32 %0, %1, %2;"))
_SPECIALS = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x807FFFFF, 0x00800000,
             0x7F7FFFFF, 0x3F800000, 0xBF800000, 0x3F000000, 0x4B000000, 0x33800000, 0x477FE000, 0x43E00000]


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between float32 bit patterns (+0 and -0: 0; NaN against NaN: 0; NaN against a
    number: 2^31)."""
    ia, ib = (x.astype(np.int64) for x in (a, b))
    sign = 1 << 31
    oa = np.where(ia & sign, -(ia & (sign - 1)), ia)                  # monotone in value; +0 and -0 meet
    ob = np.where(ib & sign, -(ib & (sign - 1)), ib)
    fa, fb = a.view(np.float32), b.view(np.float32)
    both = np.isnan(fa) & np.isnan(fb)
    one = np.isnan(fa) ^ np.isnan(fb)
    return np.where(both, 0, np.where(one, 1 << 31, np.abs(oa - ob)))


def same_values(a: np.ndarray, b: np.ndarray, fmt: str) -> np.ndarray:
    """Element by element: the results are equal, or both NaN in every lane where either is (PTX pins values, not
    the payloads of single- and half-precision NaNs, #floating-point-instructions)."""
    name, _, lanes = fmt.partition("x")
    if name not in FORMATS:
        return a == b
    fmt_ = FORMATS[name]
    width = fmt_.bits
    ok = np.ones(a.shape, dtype=bool)
    for k in range(int(lanes or 1)):
        la, lb = ((x.astype(np.uint64) >> np.uint64(k * width)) & np.uint64((1 << width) - 1) for x in (a, b))
        nan_a = np.array([math.isnan(decode(int(v), fmt_)) for v in la])
        nan_b = np.array([math.isnan(decode(int(v), fmt_)) for v in lb])
        ok &= (la == lb) | (nan_a & nan_b)
    return ok


@attrs.frozen
class FloatProbe:
    """``ops`` applied to ``n`` operand triples (``seed``): ``run_cpu`` / ``run_gpu`` return one uint32 row per op."""

    ops: tuple = EXACT_OPS + APPROX_OPS
    n: int = 4096
    seed: int = 0

    def source(self) -> str:
        lines = []
        for k, (_, operands, result, _, text) in enumerate(self.ops):
            regs = {"f": "__uint_as_float(v[{j}])", "h": "(unsigned short)v[{j}]", "r": "v[{j}]"}
            ins = ", ".join(f'"{c}"({regs[c].format(j=j)})' for j, c in enumerate(operands))
            if result == "f":
                lines.append(f'  {{ float r; asm("{text}" : "=f"(r) : {ins}); out[{k} * n + i] = __float_as_uint(r); }}')
            elif result == "h":
                lines.append(f'  {{ unsigned short r; asm("{text}" : "=h"(r) : {ins}); out[{k} * n + i] = r; }}')
            else:
                lines.append(f'  {{ unsigned r; asm("{text}" : "=r"(r) : {ins}); out[{k} * n + i] = r; }}')
        body = "\n".join(lines)
        return f"""extern "C" __global__ void float_probe(const unsigned* operands, unsigned* out, int n) {{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned v[3] = {{operands[i], operands[n + i], operands[2 * n + i]}};
{body}
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def operands(self) -> np.ndarray:
        """3 x n uint32: a quarter random bits, half numbers of moderate size, the rest the special values."""
        rng = np.random.default_rng(self.seed)
        bits = rng.integers(0, 1 << 32, (3, self.n), dtype=np.uint64).astype(np.uint32)
        moderate = (rng.standard_normal((3, self.n)) * np.exp2(rng.integers(-20, 20, (3, self.n)))).astype(np.float32)
        out = np.where(np.arange(self.n) % 4 == 0, bits, moderate.view(np.uint32))
        special = rng.choice(np.array(_SPECIALS, dtype=np.uint32), (3, self.n))
        return np.where(np.arange(self.n) % 8 == 1, special, out).astype(np.uint32)

    def run_cpu(self) -> np.ndarray:
        out = np.zeros(len(self.ops) * self.n, dtype=np.uint32)
        run_kernel(self.compile(), "float_probe", grid=-(-self.n // 128), block=128,
                   args=[self.operands(), out, self.n])
        return out.reshape(len(self.ops), self.n)

    def run_gpu(self, gpu: Gpu) -> np.ndarray:
        gpu = check_gpu(gpu)
        d_in = gpu.upload(self.operands())
        d_out = gpu.upload(np.zeros(len(self.ops) * self.n, dtype=np.uint32))
        gpu.launch(gpu.kernel(self.compile(), "float_probe"), d_in, d_out, np.int32(self.n),
                   grid=-(-self.n // 128), block=128)
        return gpu.download(d_out, np.uint32, len(self.ops) * self.n).reshape(len(self.ops), self.n)
