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

__all__ = ["FloatProbe", "EXACT_OPS", "APPROX_OPS", "LIBRARY_OPS", "ulp_distance", "same_values"]

# (name, operands, result, result format, text). Operand and result kinds: "f" a float32 (the bit pattern given),
# "h" 16 bits, "r" 32 bits, "d" an f64 and "l" 64 bits (as operands from two of the input words), "D" an f64 with
# its NaNs made +0 (f64 -> integer conversions: what the GPU gives for a NaN is not known yet, and the interpreter
# refuses it; docs/interpreter.md); the result format
# names how to read it (per lane). The text is inline asm with %0 the result and %1.. the operands; "=expr" a C
# expression of x0, x1, x2 (the operands as float / double); "@op" an atomic op on a word of the output holding
# operand 0, with operand 1 as its value.
_RND = ("rn", "rz", "rm", "rp")
_IRND = ("rni", "rzi", "rmi", "rpi")
EXACT_OPS: tuple[tuple[str, str, str, str, str], ...] = tuple(
    [(f"{op}.{m}.f32", "ff", "f", "f32", f"{op}.{m}.f32 %0, %1, %2;") for op in ("add", "sub", "mul")
     for m in _RND]
    + [(f"fma.{m}.f32", "fff", "f", "f32", f"fma.{m}.f32 %0, %1, %2, %3;") for m in _RND]
    + [(f"div.{m}.f32", "ff", "f", "f32", f"div.{m}.f32 %0, %1, %2;") for m in _RND]
    + [(f"{op}.{m}.f32", "f", "f", "f32", f"{op}.{m}.f32 %0, %1;") for op in ("sqrt", "rcp") for m in _RND]
    + [("add.rn.ftz.f32", "ff", "f", "f32", "add.rn.ftz.f32 %0, %1, %2;"),
       ("mul.rn.sat.f32", "ff", "f", "f32", "mul.rn.sat.f32 %0, %1, %2;"),
       ("min.f32", "ff", "f", "f32", "min.f32 %0, %1, %2;"), ("max.NaN.f32", "ff", "f", "f32", "max.NaN.f32 %0, %1, %2;"),
       ("min.xorsign.abs.f32", "ff", "f", "f32", "min.xorsign.abs.f32 %0, %1, %2;")]
    + [(f"cvt.{m}.f16.f32", "f", "h", "f16", f"cvt.{m}.f16.f32 %0, %1;") for m in _RND]
    + [(f"cvt.{m}.bf16.f32", "f", "h", "bf16", f"cvt.{m}.bf16.f32 %0, %1;") for m in ("rn", "rz")]
    + [("cvt.rn.relu.bf16x2.f32", "ff", "r", "bf16x2", "cvt.rn.relu.bf16x2.f32 %0, %1, %2;"),
       ("cvt.rn.satfinite.e4m3x2.f32", "ff", "h", "e4m3x2", "cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;"),
       ("cvt.rn.satfinite.e5m2x2.f32", "ff", "h", "e5m2x2", "cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;"),
       ("cvt.rn.f16x2.e4m3x2", "h", "r", "f16x2", "cvt.rn.f16x2.e4m3x2 %0, %1;"),
       ("cvt.rna.tf32.f32", "f", "r", "tf32", "cvt.rna.tf32.f32 %0, %1;")]
    + [(f"cvt.{m}.s32.f32", "f", "r", "s32", f"cvt.{m}.s32.f32 %0, %1;") for m in _IRND]
    + [(f"cvt.{m}.f32.s32", "r", "f", "f32", f"cvt.{m}.f32.s32 %0, %1;") for m in _RND]
    + [("fma.rn.f16", "hhh", "h", "f16", "fma.rn.f16 %0, %1, %2, %3;"),
       ("fma.rn.bf16", "hhh", "h", "bf16", "fma.rn.bf16 %0, %1, %2, %3;"),
       ("add.rn.bf16", "hh", "h", "bf16", "add.rn.bf16 %0, %1, %2;"),
       ("mul.rn.f16x2", "rr", "r", "f16x2", "mul.rn.f16x2 %0, %1, %2;")]
    # issue 43: rounding to an integral value keeps the sign of zero; widening and narrowing NaNs, subnormals;
    # the f64 subset ordinary code compiles to; atomics' flushing
    + [(f"cvt.{m}.f32.f32", "f", "f", "f32", f"cvt.{m}.f32.f32 %0, %1;") for m in _IRND]
    + [("cvt.rni.ftz.f32.f32", "f", "f", "f32", "cvt.rni.ftz.f32.f32 %0, %1;"),
       ("cvt.rzi.sat.f32.f32", "f", "f", "f32", "cvt.rzi.sat.f32.f32 %0, %1;")]
    + [(f"cvt.{m}.f64.f64", "d", "d", "f64", f"cvt.{m}.f64.f64 %0, %1;") for m in _IRND]
    + [(f"cvt.{m}.f16.f16", "h", "h", "f16", f"cvt.{m}.f16.f16 %0, %1;") for m in ("rni", "rzi")]
    + [(f"cvt.{m}.f32.f64", "d", "f", "f32", f"cvt.{m}.f32.f64 %0, %1;") for m in ("rn", "rz", "rn.ftz")]
    + [("cvt.f64.f32", "f", "d", "f64", "cvt.f64.f32 %0, %1;"), ("cvt.f32.f16", "h", "f", "f32", "cvt.f32.f16 %0, %1;"),
       ("cvt.f32.bf16", "h", "f", "f32", "cvt.f32.bf16 %0, %1;"),
       ("cvt.rn.f16x2.f32", "ff", "r", "f16x2", "cvt.rn.f16x2.f32 %0, %1, %2;"),
       ("cvt.rn.bf16x2.f32", "ff", "r", "bf16x2", "cvt.rn.bf16x2.f32 %0, %1, %2;"),
       ("cvt.rn.f16x2.e5m2x2", "h", "r", "f16x2", "cvt.rn.f16x2.e5m2x2 %0, %1;"),
       ("cvt.rn.satfinite.e4m3x2.f16x2", "r", "h", "e4m3x2", "cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;"),
       ("cvt.rn.satfinite.e5m2x2.f16x2", "r", "h", "e5m2x2", "cvt.rn.satfinite.e5m2x2.f16x2 %0, %1;"),
       ("cvt.rzi.s32.f64", "D", "r", "s32", "cvt.rzi.s32.f64 %0, %1;"),
       ("cvt.rni.s64.f64", "D", "l", "s64", "cvt.rni.s64.f64 %0, %1;"),
       ("cvt.rn.f64.s64", "l", "d", "f64", "cvt.rn.f64.s64 %0, %1;"),
       ("cvt.rzi.u32.f32", "f", "r", "u32", "cvt.rzi.u32.f32 %0, %1;")]
    + [(f"add.{m}.f64", "dd", "d", "f64", f"add.{m}.f64 %0, %1, %2;") for m in _RND]
    + [(f"mul.{m}.f64", "dd", "d", "f64", f"mul.{m}.f64 %0, %1, %2;") for m in ("rn", "rz")]
    + [(f"fma.{m}.f64", "ddd", "d", "f64", f"fma.{m}.f64 %0, %1, %2, %3;") for m in ("rn", "rm")]
    + [("div.rn.f64", "dd", "d", "f64", "div.rn.f64 %0, %1, %2;"), ("sqrt.rn.f64", "d", "d", "f64", "sqrt.rn.f64 %0, %1;"),
       ("rcp.rn.f64", "d", "d", "f64", "rcp.rn.f64 %0, %1;"), ("min.f64", "dd", "d", "f64", "min.f64 %0, %1, %2;"),
       ("max.f64", "dd", "d", "f64", "max.f64 %0, %1, %2;"), ("abs.f64", "d", "d", "f64", "abs.f64 %0, %1;"),
       ("neg.f64", "d", "d", "f64", "neg.f64 %0, %1;"), ("abs.f32", "f", "f", "f32", "abs.f32 %0, %1;"),
       ("neg.f32", "f", "f", "f32", "neg.f32 %0, %1;"), ("copysign.f32", "ff", "f", "f32", "copysign.f32 %0, %1, %2;"),
       ("red.global.add.f32", "ff", "f", "f32", "@red.global.add.f32"),
       ("red.global.add.noftz.f16x2", "rr", "r", "f16x2", "@red.global.add.noftz.f16x2")])
APPROX_OPS: tuple[tuple[str, str, str, str, str], ...] = tuple(
    (f"{op}.approx.f32", "f", "f", "f32", f"{op}.approx.f32 %0, %1;")
    for op in ("rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh")) + (
    ("div.approx.f32", "ff", "f", "f32", "div.approx.f32 %0, %1, %2;"),
    ("div.full.f32", "ff", "f", "f32", "div.full.f32 %0, %1, %2;"),
    ("ex2.approx.ftz.f32", "f", "f", "f32", "ex2.approx.ftz.f32 %0, %1;"),
    ("lg2.approx.ftz.f32", "f", "f", "f32", "lg2.approx.ftz.f32 %0, %1;"),
    ("rcp.approx.ftz.f64", "d", "d", "f64", "rcp.approx.ftz.f64 %0, %1;"),
    ("rsqrt.approx.f64", "d", "d", "f64", "rsqrt.approx.f64 %0, %1;"),
    ("rsqrt.approx.ftz.f64", "d", "d", "f64", "rsqrt.approx.ftz.f64 %0, %1;"))
#: CUDA math library functions (sequences of the instructions above, the approximate ones among them).
LIBRARY_OPS: tuple[tuple[str, str, str, str, str], ...] = tuple(
    (name, kinds, kinds[0], "f32" if kinds[0] == "f" else "f64", "=" + expr) for name, kinds, expr in (
        ("logf", "f", "logf(x0)"), ("expf", "f", "expf(x0)"), ("exp2f", "f", "exp2f(x0)"), ("__expf", "f", "__expf(x0)"),
        ("log2f", "f", "log2f(x0)"), ("rsqrtf", "f", "rsqrtf(x0)"), ("tanhf", "f", "tanhf(x0)"),
        ("sqrtf", "f", "sqrtf(x0)"), ("divide.f32", "ff", "x0 / x1"), ("log", "d", "log(x0)"), ("exp", "d", "exp(x0)"),
        ("rsqrt", "d", "rsqrt(x0)"), ("divide.f64", "dd", "x0 / x1")))
_SPECIALS = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x807FFFFF, 0x00800000,
             0x7F7FFFFF, 0x3F800000, 0xBF800000, 0x3F000000, 0x4B000000, 0x33800000, 0x477FE000, 0x43E00000,
             0xBEC00000, 0x7F800001, 0xFFC00001, 0x3EFFFFFF, 0xBF400000, 0x00400000]
#: Bits of each result kind.
_WIDTH = {"f": 32, "h": 16, "r": 32, "d": 64}


def ulp_distance(a: np.ndarray, b: np.ndarray, fmt: str = "f32") -> np.ndarray:
    """Units in the last place between f32 (or f64) bit patterns (+0 and -0: 0; NaN against NaN: 0; NaN against a
    number: 2^31)."""
    bits = 64 if fmt == "f64" else 32
    view = np.float64 if bits == 64 else np.float32
    ua = np.asarray(a).astype(np.uint64 if bits == 64 else np.uint32)
    ub = np.asarray(b).astype(np.uint64 if bits == 64 else np.uint32)
    sign = 1 << (bits - 1)
    ia, ib = (x.astype(object) if bits == 64 else x.astype(np.int64) for x in (ua, ub))
    oa = np.where(ia & sign, -(ia & (sign - 1)), ia)                  # monotone in value; +0 and -0 meet
    ob = np.where(ib & sign, -(ib & (sign - 1)), ib)
    fa, fb = ua.view(view), ub.view(view)
    both = np.isnan(fa) & np.isnan(fb)
    one = np.isnan(fa) ^ np.isnan(fb)
    far = np.abs(oa - ob)
    return np.where(both, 0, np.where(one, 1 << 31, np.minimum(far, 1 << 62))).astype(np.int64)


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


_OPERAND = {"f": "__uint_as_float(v[{j}])", "h": "(unsigned short)v[{j}]", "r": "v[{j}]",
            "d": "__longlong_as_double(probe_f64(i, v[{j}], v[({j} + 1) % 3]))",
            "l": "probe_f64(i, v[{j}], v[({j} + 1) % 3])",
            "D": "__longlong_as_double(probe_f64_number(i, v[{j}], v[({j} + 1) % 3]))"}
_CONSTRAINT = {"f": "f", "h": "h", "r": "r", "d": "d", "l": "l", "D": "d"}
_CTYPE = {"f": ("float", "__float_as_uint({})"), "h": ("unsigned short", "{}"), "r": ("unsigned", "{}"),
          "d": ("double", "__double_as_longlong({})"), "l": ("unsigned long long", "{}")}


@attrs.frozen
class FloatProbe:
    """``ops`` applied to ``n`` operand triples (``seed``): ``run_cpu`` / ``run_gpu`` return one uint64 row per op
    (a 64-bit result in two output words, low first)."""

    ops: tuple = EXACT_OPS + APPROX_OPS + LIBRARY_OPS
    n: int = 4096
    seed: int = 0

    @property
    def words(self) -> list[int]:
        """The first output word of each op (a 64-bit result takes two)."""
        starts, at = [], 0
        for _, _, result, _, _ in self.ops:
            starts.append(at)
            at += 2 if result in "dl" else 1
        return starts + [at]

    def source(self) -> str:
        lines = []
        for (_, operands, result, _, text), w in zip(self.ops, self.words):
            args = [_OPERAND[c].format(j=j) for j, c in enumerate(operands)]
            ctype, bits = _CTYPE[result]
            store = (f"out[{w} * n + i] = unsigned({bits.format('r')}); out[{w + 1} * n + i] = unsigned("
                     f"{bits.format('r')} >> 32);") if result in "dl" else f"out[{w} * n + i] = {bits.format('r')};"
            if text.startswith("="):                    # a C expression of x0, x1, x2
                decl = "".join(f" const {_CTYPE[c][0]} x{j} = {a};" for j, (c, a) in enumerate(zip(operands, args)))
                lines.append(f"  {{{decl} const {ctype} r = {text[1:]}; {store} }}")
            elif text.startswith("@"):                  # an atomic on a word holding operand 0
                lines.append(f"  {{ unsigned* p = &out[{w} * n + i]; *p = v[0]; asm volatile(\"{text[1:]} [%0], "
                             f"%1;\" :: \"l\"(p), \"{_CONSTRAINT[operands[1]]}\"({args[1]}) : \"memory\"); }}")
            else:
                ins = ", ".join(f'"{_CONSTRAINT[c]}"({a})' for c, a in zip(operands, args))
                lines.append(f'  {{ {ctype} r; asm("{text}" : "={_CONSTRAINT[result]}"(r) : {ins}); {store} }}')
        body = "\n".join(lines)
        return f"""// An f64 operand from two input words: a quarter raw bits, the rest the f32 pattern widened with integer
// operations only (no conversion instruction under test), its mantissa extended by the other word but on the
// special values (zeros, infinities, NaNs, subnormals stay what they were).
__device__ __forceinline__ unsigned long long probe_f64(int i, unsigned hi, unsigned lo) {{
  if (i % 4 == 0) return ((unsigned long long)hi << 32) | lo;
  const unsigned long long sign = (unsigned long long)(hi >> 31) << 63, man = hi & 0x7FFFFFu;
  const unsigned e = (hi >> 23) & 0xFFu;
  const unsigned long long low = (i % 8 == 1) ? 0ull : (lo & 0x1FFFFFFFu);
  if (e == 0xFFu) return sign | 0x7FF0000000000000ull | (man << 29) | (man ? low : 0ull);
  if (e == 0u) return sign | (man << 29);
  return sign | ((unsigned long long)(e + 896u) << 52) | (man << 29) | low;
}}

__device__ __forceinline__ unsigned long long probe_f64_number(int i, unsigned hi, unsigned lo) {{
  const unsigned long long x = probe_f64(i, hi, lo);
  return ((x >> 52) & 0x7FFull) == 0x7FFull && (x & 0xFFFFFFFFFFFFFull) ? 0ull : x;
}}

extern "C" __global__ void float_probe(const unsigned* operands, unsigned* out, int n) {{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned v[3] = {{operands[i], operands[n + i], operands[2 * n + i]}};
{body}
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def operands(self) -> np.ndarray:
        """3 x n uint32: a quarter random bits, half numbers of moderate size, the rest the special values; one in
        eight second operands is the first negated (an exact cancellation) and one in eight the first itself."""
        rng = np.random.default_rng(self.seed)
        bits = rng.integers(0, 1 << 32, (3, self.n), dtype=np.uint64).astype(np.uint32)
        moderate = (rng.standard_normal((3, self.n)) * np.exp2(rng.integers(-20, 20, (3, self.n)))).astype(np.float32)
        out = np.where(np.arange(self.n) % 4 == 0, bits, moderate.view(np.uint32))
        special = rng.choice(np.array(_SPECIALS, dtype=np.uint32), (3, self.n))
        out = np.where(np.arange(self.n) % 8 == 1, special, out).astype(np.uint32)
        idx = np.arange(self.n)
        out[1] = np.where(idx % 8 == 3, out[0] ^ np.uint32(0x80000000), np.where(idx % 8 == 5, out[0], out[1]))
        return out

    def _rows(self, out: np.ndarray) -> np.ndarray:
        words = out.reshape(-1, self.n).astype(np.uint64)
        rows = np.zeros((len(self.ops), self.n), dtype=np.uint64)
        for k, ((_, _, result, _, _), w) in enumerate(zip(self.ops, self.words)):
            rows[k] = words[w] | ((words[w + 1] << np.uint64(32)) if result in "dl" else np.uint64(0))
        return rows

    def run_cpu(self) -> np.ndarray:
        out = np.zeros(self.words[-1] * self.n, dtype=np.uint32)
        run_kernel(self.compile(), "float_probe", grid=-(-self.n // 128), block=128,
                   args=[self.operands(), out, self.n])
        return self._rows(out)

    def run_gpu(self, gpu: Gpu) -> np.ndarray:
        gpu = check_gpu(gpu)
        d_in = gpu.upload(self.operands())
        d_out = gpu.upload(np.zeros(self.words[-1] * self.n, dtype=np.uint32))
        gpu.launch(gpu.kernel(self.compile(), "float_probe"), d_in, d_out, np.int32(self.n),
                   grid=-(-self.n // 128), block=128)
        return self._rows(gpu.download(d_out, np.uint32, self.words[-1] * self.n))
