"""Ordinary CUDA float and double code on the CPU: kernels calling CUDA's math library (logf, expf, exp2f, __expf,
log2f, sqrtf, rsqrtf, fmaxf, division; their double versions, fma, conversions, comparisons) compile for sm_90a
to selp.f32 / selp.f64, ex2 / lg2 / rcp / rsqrt .approx, fma.rn.f64, cvt f32 <-> f64 and setp.*.f64 among
others, and run whole through run_kernel within the CUDA math library's documented error bounds (CUDA C++
Programming Guide, "Mathematical Functions": maximum ulp errors) of the float64 references; the correctly rounded
ones (sqrt, division, fma, fmax, conversions) bit for bit."""
import re
from fractions import Fraction

import numpy as np
import pytest

from pycute.compile import compile_cuda
from pycute.interp import run_kernel

F32 = {  # name: (expression of x and y, numpy float64 reference, max ulp error: CUDA's bound; 0: exact)
    "logf": ("logf(x)", np.log, 1), "expf": ("expf(x)", np.exp, 2), "exp2f": ("exp2f(x)", np.exp2, 2),
    "log2f": ("log2f(x)", np.log2, 1), "sqrtf": ("sqrtf(x)", np.sqrt, 0), "rsqrtf": ("rsqrtf(x)",
                                                                                   lambda x: 1 / np.sqrt(x), 2),
    "fmaxf": ("fmaxf(x, y)", np.fmax, 0), "div": ("x / y", np.divide, 0),
    "__expf": ("__expf(x)", np.exp, lambda x: 2 + np.floor(np.abs(1.173 * x))), "tanhf": ("tanhf(x)", np.tanh, 2),
    # __log2f: an absolute error of 2^-22.6 on [0.5, 2], else 2 ulp
    "__log2f": ("__log2f(x)", np.log2, lambda x: np.where((x >= 0.5) & (x <= 2), 2.0 ** -22.6 / np.spacing(
        np.abs(np.log2(x)).astype(np.float32), dtype=np.float32).astype(np.float64), 2)),
}
F64 = {
    "log": ("log(x)", np.log, 1), "exp": ("exp(x)", np.exp, 1), "exp2": ("exp2(x)", np.exp2, 1),
    "sqrt": ("sqrt(x)", np.sqrt, 0), "rsqrt": ("rsqrt(x)", lambda x: 1 / np.sqrt(x), 1),
    "div": ("x / y", np.divide, 0), "fma": ("fma(x, y, x)", None, 0), "fmin": ("fmin(x, y)", np.fmin, 0),
    "abs_neg": ("-fabs(x)", lambda x: -np.abs(x), 0), "to_f32": ("(double)(float)x", None, 0),
    "select": ("x < y ? x : y", np.minimum, 0), "log2": ("log2(x)", np.log2, 1),
}
#: The opcodes these kernels must compile to (the ones the issue named and the approximate instructions).
OPCODES = ("selp.f32", "selp.f64", "ex2.approx.ftz.f32", "lg2.approx.f32", "rcp.approx.ftz.f64", "rsqrt.approx.f32",
           "fma.rn.f64", "cvt.f64.f32", "cvt.rn.f32.f64", "setp.lt.f64", "mov.b64", "abs.f64", "neg.f64",
           "min.f64", "max.f32", "div.rn.f32", "div.rn.f64", "sqrt.rn.f32", "sqrt.rn.f64")


def _source() -> str:
    def body(table, t):
        return "\n".join(f"  out[{k} * n + i] = {expr};" for k, (expr, _, _) in enumerate(table.values()))
    return f"""
extern "C" __global__ void f32_math(const float* xs, const float* ys, float* out, int n) {{
  const int i = threadIdx.x;
  const float x = xs[i], y = ys[i];
{body(F32, "float")}
}}
extern "C" __global__ void f64_math(const double* xs, const double* ys, double* out, int n) {{
  const int i = threadIdx.x;
  const double x = xs[i], y = ys[i];
{body(F64, "double")}
}}
"""


@pytest.fixture(scope="module")
def compiled():
    return compile_cuda(_source(), arch="sm_90a")


def _ulps(got: np.ndarray, want: np.ndarray, dtype) -> np.ndarray:
    """Distance in units of the last place of ``dtype`` at the reference's magnitude (0 where both agree)."""
    want_t = want.astype(dtype)
    ulp = np.spacing(np.abs(want_t)).astype(np.float64)
    with np.errstate(invalid="ignore"):
        d = np.abs(got.astype(np.float64) - want) / ulp
    return np.where((got == want_t) | (np.isnan(got) & np.isnan(want)), 0.0, d)


def test_the_kernels_compile_to_the_opcodes_the_issue_names(compiled):
    ops = set(re.findall(r"^\s*(?:@!?%\w+\s+)?([a-z][\w.]*)", compiled.ptx, re.M))
    assert set(OPCODES) <= ops, sorted(set(OPCODES) - ops)


@pytest.mark.parametrize("dtype, table, entry", [(np.float32, F32, "f32_math"), (np.float64, F64, "f64_math")],
                         ids=["f32", "f64"])
def test_math_library_runs_within_its_error_bounds(compiled, dtype, table, entry):
    rng = np.random.default_rng(7)
    n = 64
    x = np.concatenate([np.exp2(rng.uniform(-20, 20, n - 8)), [0.5, 1.0, 2.0, 1e-30, 88.0, -3.0, 0.0, 100.0]])
    y = rng.uniform(-4, 4, n)
    x, y = x.astype(dtype), y.astype(dtype)
    out = np.zeros(len(table) * n, dtype)
    run_kernel(compiled, entry, grid=1, block=n, args=[x, y, out, n])
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    for k, (name, (expr, ref, bound)) in enumerate(table.items()):
        got = out[k * n:(k + 1) * n]
        with np.errstate(all="ignore"):
            if name == "fma":              # the exact x * y + x rounded once
                want = np.array([float(Fraction(a) * Fraction(b) + Fraction(a)) for a, b in zip(xd, yd)])
            elif name == "to_f32":
                want = x.astype(np.float32).astype(np.float64)
            else:
                want = ref(xd, yd) if ref in (np.fmax, np.fmin, np.divide, np.minimum) else ref(xd)
            bound_v = bound(xd) if callable(bound) else np.full(n, bound)
            ulps = _ulps(got, want, dtype)
        assert np.all(ulps <= bound_v), (name, x[ulps > bound_v][:3], got[ulps > bound_v][:3],
                                         want[ulps > bound_v][:3])
