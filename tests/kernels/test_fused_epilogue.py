"""Fused epilogues as plans, in the Hopper GEMM: the epilogue's struct of inputs as the kernel declares it; the
chunk's register of the accumulator found by coordinates; per-column inputs read as pairs (one 32-bit load of two
bf16); every configuration compiled with a heavy epilogue without local memory; and whole-kernel runs on the CPU
(the compiled kernel through pycute.interp) of small ragged problems for every epilogue form and every type of D,
each within one unit in the last place of D's type of the float64 reference, and near 0 within f32's cancellation
of the largest accumulator (the inputs are small integers, so the accumulator is exact and only the epilogue's f32
arithmetic and D's rounding remain). The configurations with the
most accumulator registers (128 x 256 cooperative, 128 x 128 ping-pong) are the ones checked for local memory."""
import attrs
import numpy as np
import pytest

import pycute as pc
import pycute.kernels as pk
from pycute.kernels.fused import FusedEpilogue, _register_step, _vector_width
from pycute.kernels.hopper_gemm import HopperGemm
from pycute.testing import Tolerance


@pk.epilogue
def gated(acc, s: pk.Row, bias: pk.Col, alpha: float):
    return pk.where(acc > 0, pk.silu(acc * s + bias), acc * alpha)


def test_the_struct_holds_pointers_pitches_then_scalars():
    def f(acc, x: pk.Row, r: pk.Residual, a: float, b: float):
        return acc * x + r * a + b
    fused = FusedEpilogue(pk.epilogue(f), ("f32", "bf16"))
    assert [(f.name, f.ctype, f.offset) for f in fused.fields()] == [
        ("x", "const float*", 0), ("r", "const __nv_bfloat16*", 8), ("r_ld", "long long", 16), ("a", "float", 24),
        ("b", "float", 28)]
    assert fused.struct_size == 32 and FusedEpilogue().struct_size == 1
    assert fused.struct_bytes({"x": 16, "r": 32, "r_ld": 72, "a": 0.5, "b": 2.0})[16:28] == \
        (72).to_bytes(8, "little") + np.float32(0.5).tobytes()


def test_an_epilogue_binds_a_type_to_each_tensor_input():
    with pytest.raises(pc.PlanError, match=r"2 tensor input\(s\) \('s', 'bias'\), 1 type\(s\) given"):
        FusedEpilogue(gated, ("f32",))
    with pytest.raises(pc.PlanError, match=r"input 's': a tensor of bf16, f16, f32, not i32"):
        FusedEpilogue(gated, ("i32", "f32"))


def test_a_chunks_register_is_found_by_coordinates_one_step_per_chunk():
    acc, chunk = pc.wgmma_accumulator(pc.f32, 64, 256), pc.wgmma_accumulator(pc.f32, 64, 64)
    assert _register_step(acc, chunk) == 32
    with pytest.raises(pc.PlanError, match=r"is not a column block of"):
        _register_step(pc.wgmma_accumulator(pc.f32, 128, 256), chunk)


def test_per_column_inputs_are_read_as_aligned_pairs():
    coords = pc.fragment_coords(pc.wgmma_accumulator(pc.f32, 64, 64))
    offsets = [int(coords.value_col[vs[0]]) for vs in coords.slots("col")]
    assert offsets[:4] == [0, 1, 8, 9] and _vector_width(offsets, coords.thread_col, 64) == 2
    assert _vector_width([0, 2, 4, 6], coords.thread_col, 64) == 1


def _heavy() -> FusedEpilogue:
    def f(acc, s: pk.Row, bias: pk.Col, r: pk.Residual, alpha: float):
        return pk.where(acc > 0, pk.gelu(acc * s + bias), acc * alpha) + r
    return FusedEpilogue(pk.epilogue(f), ("f32", "bf16", "f16"))


@pytest.mark.parametrize("g, out", [(HopperGemm(), "bf16"), (HopperGemm(BN=128, m_blocks=2, mode="pingpong"), "f32")],
                         ids=["128x256 bf16", "ping-pong f32"])
def test_the_largest_accumulators_compile_a_heavy_epilogue_without_local_memory(g, out):
    h = attrs.evolve(g, out=out, epilogue=_heavy()).compile().histogram()
    assert not any(op.startswith(("LDL", "STL")) for op in h)
    chunks = g.BN // 64
    assert h.get("LDG.E.CONSTANT", 0) >= 8 * chunks        # the bias's pairs (and the residual's): 32-bit loads


torch = pytest.importorskip("torch")
import pycute.kernels.ops  # noqa: E402,F401  registers torch.ops.pycute.*


def ints(rows: int, cols: int, seed: int):
    return torch.randint(-3, 4, (rows, cols), generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


def values(shape, dtype, seed: int):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


TOLERANCE = {"bf16": Tolerance.of("bf16", 1), "f16": Tolerance.of("f16", 1), "f8e4m3": Tolerance.of("f8e4m3", 1),
             "f32": Tolerance(4e-6, 1e-6, "f32 arithmetic of the epilogue: expf, erff, tanhf within a few ulp")}
#: Small problems (each element of each tile runs the epilogue in the interpreter's exact f32 arithmetic, so the
#: tiles are few): M and N no multiple of the tile, so the masks at M and N are exercised.
CASES = {
    "bias relu bf16": (dict(bias=("col", "bf16"), activation="relu"), "bf16", None, (60, 72, 40)),
    "bias gelu residual f16": (dict(bias=("col", "f32"), activation="gelu", residual=("residual", "f16")), "f16",
                               None, (70, 40, 48)),
    "bias gelu_tanh bf16": (dict(bias=("col", "f16"), activation="gelu_tanh"), "bf16", None, (40, 24, 16)),
    "bias relu f32, ping-pong": (dict(bias=("col", "bf16"), activation="relu"), "f32",
                                 HopperGemm(BN=128, m_blocks=2, mode="pingpong"), (100, 40, 32)),
    "gated rows columns scalar e4m3": (dict(epilogue=gated, s=("row", "f32"), bias=("col", "bf16"), alpha=0.25),
                                       "f8e4m3", HopperGemm(BN=128, consumers=1, stages=3), (60, 72, 32)),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_the_whole_kernel_on_the_cpu_writes_the_epilogue_of_the_exact_product(case):
    spec, out, config, (M, N, K) = CASES[case]
    a, b = ints(M, K, 1), ints(N, K, 2)
    kwargs, inputs = {}, {}
    for k, (n, v) in enumerate(spec.items()):
        if isinstance(v, tuple):
            kind, dt = v
            shape = {"row": (M,), "col": (N,), "residual": (M, N)}[kind]
            kwargs[n] = inputs[n] = values(shape, getattr(torch, {"f32": "float32", "bf16": "bfloat16",
                                                                   "f16": "float16"}[dt]), 10 + k)
        else:
            kwargs[n] = v
            if n == "alpha":
                inputs[n] = v
    d = pk.gemm(a, b, 0.5, out_dtype=out, config=config, **kwargs)
    ep = spec.get("epilogue") or pk.bias_activation("bias" in spec, spec.get("activation"), "residual" in spec)
    acc = (a.double() @ b.double().T * 0.5).numpy()
    want = FusedEpilogue(ep, tuple("f32" for _ in ep.tensors)).reference(
        acc, {n: (v.double().numpy() if isinstance(v, torch.Tensor) else v) for n, v in inputs.items()})
    assert d.shape == (M, N)
    # f32's cancellation where an activation tends to 0 (1 + tanh(x) for x << 0): 4 ulp of f32 of the largest |acc|
    tol = TOLERANCE[out]
    atol = 4 * float(np.abs(acc).max()) * 2.0 ** -24
    Tolerance(tol.rtol, max(tol.atol, atol), f"{tol.why}; {atol:.2g} absolute: f32 cancellation near 0").check(
        d.double().numpy(), want)
