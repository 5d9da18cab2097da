"""``pycute.kernels.blockscaled_mm``, the block-scaled GEMM as a torch operation, checked on the CPU: element and
scale-factor codes in, the compiled sm_100a kernel run whole by pycute's interpreter, D equal to the reference bit
for bit (the inputs are exact); the fake implementation's shape and strides; opcheck and torch.compile; bad
operands refused naming the rule; CUDA tensors on a GPU other than sm_100 refused."""
import numpy as np
import pytest

import pycute as pc

torch = pytest.importorskip("torch")
import pycute.kernels  # noqa: E402
import pycute.kernels.ops  # noqa: E402,F401  registers torch.ops.pycute.*
from pycute.kernels.blockscaled_gemm import BlockScaledGemm  # noqa: E402


def operands(kind: str, cta_group: int, m: int, n: int, k: int, d_type: str, seed: int):
    """The op's tensors for exact codes, and the reference D (f32, or bf16 bits)."""
    gemm = BlockScaledGemm(kind, cta_group, m, n, k, d_type)
    x = gemm.inputs(seed)
    data = gemm.arrays(x)
    a, b = (torch.from_numpy(data[t].reshape(rows, -1)) for t, rows in (("a", m), ("b", n)))
    if kind == "mxf8":
        a, b = a.view(torch.float8_e4m3fn), b.view(torch.float8_e4m3fn)
    sfa, sfb = (torch.from_numpy(x[t].astype(np.uint8)) for t in ("sfa", "sfb"))
    return (a, b, sfa, sfb), gemm.reference(x)


@pytest.mark.parametrize("kind, cta_group, d_type", [("nvfp4", 2, "bf16"), ("mxf8", 1, "f32")],
                         ids=["nvfp4 pair bf16", "mxf8 f32"])
def test_the_op_writes_the_reference_d(kind, cta_group, d_type):
    args, want = operands(kind, cta_group, 200, 136, 256, d_type, 3)
    d = pycute.kernels.blockscaled_mm(*args, kind=kind, out_dtype=d_type, cta_group=cta_group)
    got = d.contiguous().view(torch.int16).numpy().view(np.uint16) if d_type == "bf16" else d.numpy()
    assert d.shape == (200, 136) and np.array_equal(got, want)


def test_opcheck_and_torch_compile_trace_the_op():
    args, want = operands("mxf8", 1, 128, 128, 128, "f32", 4)
    # E4M3 codes as their bytes: opcheck's schema check compares the inputs with ops torch lacks for float8 on CPU
    args = (args[0].view(torch.uint8), args[1].view(torch.uint8), *args[2:])
    torch.library.opcheck(torch.ops.pycute.blockscaled_gemm.default, (*args, "mxf8", "f32", 1))
    fn = torch.compile(lambda *t: pycute.kernels.blockscaled_mm(*t) * 2.0, fullgraph=True, backend="aot_eager")
    assert np.array_equal(fn(*args).numpy(), want * 2)


@pytest.mark.parametrize("change, error", [
    (dict(kind="fp8"), r"kind is one of mxf8, nvfp4, out_dtype one of f32, bf16 and cta_group 1 or 2"),
    (dict(a=torch.zeros(128, 120, dtype=torch.uint8), b=torch.zeros(64, 120, dtype=torch.uint8)),
     r"K = 120 \(mxf8\) is 120 bytes a row; TMA reads rows of whole 16 bytes"),
    (dict(sfa=torch.zeros(128, 3, dtype=torch.uint8)), r"sfa 128 x 4 and sfb 64 x 4; got \(128, 3\)"),
    (dict(a=torch.zeros(128, 128, dtype=torch.float16)), r"a is a 2-D tensor of float8_e4m3fn or uint8")])
def test_bad_operands_are_refused_naming_the_rule(change, error):
    args = dict(a=torch.zeros(128, 128, dtype=torch.uint8), b=torch.zeros(64, 128, dtype=torch.uint8),
                sfa=torch.zeros(128, 4, dtype=torch.uint8), sfb=torch.zeros(64, 4, dtype=torch.uint8), kind="mxf8")
    args.update(change)
    with pytest.raises(pc.LaunchError, match=error):
        pycute.kernels.blockscaled_mm(**args)
