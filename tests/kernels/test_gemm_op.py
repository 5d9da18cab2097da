"""``pycute.kernels.gemm``, the Hopper GEMM as a torch operation, checked on the CPU: the op runs the very same
compiled sm_90a kernel thread by thread (pycute.interp) and writes the bf16 rounding of the exact product for ragged
problems (M, N, K no multiple of a tile; N and K no multiple of 16 bytes; inputs of any strides), bf16 and e4m3;
its fake implementation gives the real output's shape and strides; ``torch.library.opcheck`` passes and
``torch.compile(fullgraph=True)`` traces it; bad inputs are refused naming what was wrong. (On a GPU the same op
launches on torch's stream: tools/gemm_op.py.)"""
import pytest

import pycute as pc

torch = pytest.importorskip("torch")
import pycute.kernels  # noqa: E402
import pycute.kernels.ops  # noqa: E402,F401  registers torch.ops.pycute.*
from pycute.kernels.tensors import CPU_LIMIT  # noqa: E402


def integers(rows: int, cols: int, dtype, seed: int):
    """Small integers: every product and sum exact, so the result is the bf16 rounding of the exact product."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-3, 4, (rows, cols), generator=g).to(dtype)


def exact(a, b, scale: float):
    return (a.double() @ b.double().T * scale).to(torch.bfloat16)


@pytest.mark.parametrize("M, N, K", [(64, 64, 64), (100, 72, 40), (130, 20, 70)],
                         ids=["one tile", "ragged M and N", "N and K not whole 16 bytes"])
def test_the_op_writes_the_rounded_exact_product(M, N, K):
    a, b = integers(M, K, torch.bfloat16, 1), integers(N, K, torch.bfloat16, 2)
    d = pycute.kernels.gemm(a, b, 0.5)
    assert d.dtype == torch.bfloat16 and d.shape == (M, N) and torch.equal(d, exact(a, b, 0.5))


def test_e4m3_operands_give_the_rounded_exact_product():
    a, b = integers(70, 40, torch.float8_e4m3fn, 3), integers(24, 40, torch.float8_e4m3fn, 4)
    assert torch.equal(pycute.kernels.gemm(a, b, 2.0), exact(a, b, 2.0))


def test_inputs_of_any_strides_are_read_as_their_values():
    a = integers(40, 96, torch.bfloat16, 5)[:, ::2]                # a stride of 2 along K
    b = integers(48, 64, torch.bfloat16, 6)[:, 8:56]               # rows of a wider buffer
    assert torch.equal(pycute.kernels.gemm(a, b), exact(a, b, 1.0))


def test_a_ragged_n_pads_ds_rows_to_whole_16_bytes_and_returns_a_view():
    a, b = integers(64, 32, torch.bfloat16, 7), integers(20, 32, torch.bfloat16, 8)
    d = pycute.kernels.gemm(a, b)
    assert d.stride() == (24, 1)
    with torch._subclasses.fake_tensor.FakeTensorMode() as mode:             # the fake implementation's output
        out = torch.ops.pycute.gemm(mode.from_tensor(a), mode.from_tensor(b), 1.0)
    assert out.shape == d.shape and out.stride() == d.stride()


def test_opcheck_passes():
    a, b = integers(64, 16, torch.bfloat16, 9), integers(8, 16, torch.bfloat16, 10)
    torch.library.opcheck(torch.ops.pycute.gemm.default, (a, b, 0.25))


def test_torch_compile_traces_the_op_in_one_graph():
    a, b = integers(64, 32, torch.bfloat16, 11), integers(16, 32, torch.bfloat16, 12)
    fn = torch.compile(lambda a, b: pycute.kernels.gemm(a, b, 0.5).float().relu(), fullgraph=True,
                       backend="aot_eager")
    assert torch.equal(fn(a, b), exact(a, b, 0.5).float().relu())


@pytest.mark.parametrize("a, b, error", [
    ((64, 32, "bfloat16"), (16, 24, "bfloat16"), r"a is M x K and b is N x K .* got \(64, 32\) and \(16, 24\)"),
    ((64, 32, "bfloat16"), (16, 32, "float16"), r"both bfloat16 or both float8_e4m3fn; got torch.bfloat16 and "
                                                r"torch.float16"),
    ((64, 0, "bfloat16"), (16, 0, "bfloat16"), r"an empty problem 64 x 16 x 0")])
def test_bad_operands_are_refused_naming_them(a, b, error):
    ta = torch.zeros(a[:2], dtype=getattr(torch, a[2]))
    tb = torch.zeros(b[:2], dtype=getattr(torch, b[2]))
    with pytest.raises(pc.LaunchError, match=error):
        pycute.kernels.gemm(ta, tb)


def test_operands_that_are_not_tensors_are_a_type_error():
    with pytest.raises(TypeError, match=r"a and b are torch tensors, got list and Tensor"):
        pycute.kernels.gemm([[1.0]], torch.zeros(1, 1))


def test_a_problem_too_large_for_the_cpu_path_is_refused():
    a, b = torch.zeros(512, 512, dtype=torch.bfloat16), torch.zeros(512, 512, dtype=torch.bfloat16)
    with pytest.raises(pc.LaunchError, match=rf"134217728 multiply-adds is past its limit of {CPU_LIMIT}"):
        pycute.kernels.gemm(a, b)


def test_the_example_is_one_call_and_runs_on_the_cpu(capsys):
    import runpy
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "examples" / "hopper_gemm.py"
    text = path.read_text()
    assert "d = pk.gemm(a, b)" in text and 'pk.gemm(a, b, bias=bias, activation="relu")' in text
    runpy.run_path(str(path), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all("on cpu: relative error" in line and float(line.split()[-1]) < 1e-2
                                   for line in lines)


def test_out_is_written_and_returned():
    a, b = integers(64, 32, torch.bfloat16, 13), integers(16, 32, torch.bfloat16, 14)
    out = torch.full((64, 16), float("nan"), dtype=torch.bfloat16)
    assert pycute.kernels.gemm(a, b, out=out) is out and torch.equal(out, exact(a, b, 1.0))


@pytest.mark.parametrize("shape, dtype, error", [
    ((64, 16), "float32", r"out must be a 64 x 16 bfloat16 tensor on cpu; got \(64, 16\) torch.float32"),
    ((64, 12), "bfloat16", r"out must be a 64 x 16 bfloat16"),
])
def test_an_out_of_another_shape_or_dtype_is_refused(shape, dtype, error):
    a, b = integers(64, 32, torch.bfloat16, 13), integers(16, 32, torch.bfloat16, 14)
    with pytest.raises(pc.LaunchError, match=error):
        pycute.kernels.gemm(a, b, out=torch.zeros(shape, dtype=getattr(torch, dtype)))


def test_an_out_whose_rows_a_tma_store_would_overrun_is_refused():
    a, b = integers(64, 32, torch.bfloat16, 13), integers(20, 32, torch.bfloat16, 14)
    with pytest.raises(pc.LaunchError, match=r"out's rows are 20 x 2 B = 40 B; a TMA store writes whole 16-byte units"):
        pycute.kernels.gemm(a, b, out=torch.zeros(64, 20, dtype=torch.bfloat16))
