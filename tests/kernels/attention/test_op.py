"""``pycute.kernels.attention``, attention forward as a torch operation, checked on the CPU: the op runs the kernel
compiled for one consumer warpgroup thread by thread (pycute.interp) and gives the float64 reference's O and
log-sum-exp; its fake implementation gives the real outputs' shapes; ``torch.library.opcheck`` passes and
``torch.compile(fullgraph=True)`` traces it; bad inputs are refused naming what was wrong. (On a GPU the same op
launches on torch's stream: tools/attention_speed.py.)"""
import math

import numpy as np
import pytest

import pycute as pc

torch = pytest.importorskip("torch")
from pycute.kernels.attention import attention, attention_varlen  # noqa: E402
from pycute.kernels.attention.reference import attention_reference, tolerance  # noqa: E402


def tensors(shape_q, shape_kv, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape_q, generator=g).to(dtype), torch.randn(shape_kv, generator=g).to(dtype),
            torch.randn(shape_kv, generator=g).to(dtype))


def test_the_op_gives_the_references_o_and_log_sum_exp():
    q, k, v = tensors((1, 40, 2, 64), (1, 24, 1, 64))              # causal, grouped heads, rows that see no key
    o, lse = attention(q, k, v, causal=True, scale=0.2)
    want_o, want_lse = attention_reference(q.double().numpy(), k.double().numpy(), v.double().numpy(), 0.2, True)
    assert o.shape == q.shape and o.dtype == q.dtype and lse.shape == (1, 2, 40) and lse.dtype == torch.float32
    assert np.abs(o.double().numpy() - want_o).max() <= tolerance("bf16") * v.abs().max().item()
    seen = np.isfinite(want_lse)
    assert (lse.numpy()[~seen] == -np.inf).all() and np.abs(lse.numpy()[seen] - want_lse[seen]).max() <= 1e-5


def test_the_fake_implementation_gives_the_outputs_shapes():
    q, k, v = tensors((2, 33, 4, 128), (2, 17, 2, 128))
    with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
        o, lse = torch.ops.pycute.attention(*(mode.from_tensor(t) for t in (q, k, v)), False, None)
    assert (o.shape, o.dtype, lse.shape, lse.dtype) == (q.shape, q.dtype, (2, 4, 33), torch.float32)


def test_opcheck_passes():
    q, k, v = tensors((1, 16, 1, 64), (1, 16, 1, 64))
    torch.library.opcheck(torch.ops.pycute.attention.default, (q, k, v, True, None),
                          test_utils=("test_schema", "test_faketensor"))


def test_torch_compile_traces_the_op_in_one_graph():
    q, k, v = tensors((1, 16, 1, 64), (1, 16, 1, 64), seed=3)
    fn = torch.compile(lambda q, k, v: attention(q, k, v, causal=True)[0].float().relu(), fullgraph=True,
                       backend="aot_eager")
    want = attention_reference(q.double().numpy(), k.double().numpy(), v.double().numpy(), 1 / math.sqrt(64), True)[0]
    assert np.abs(fn(q, k, v).numpy() - np.maximum(want, 0)).max() <= tolerance("bf16") * v.abs().max().item()


def test_the_varlen_op_gives_each_sequences_reference():
    q, k, v = tensors((50, 2, 64), (60, 1, 64), seed=7)
    cu_q, cu_k = torch.tensor([0, 20, 50], dtype=torch.int32), torch.tensor([0, 40, 60], dtype=torch.int32)
    o, lse = attention_varlen(q, k, v, cu_q, cu_k, 30, 40, causal=True, scale=0.125)
    assert o.shape == q.shape and lse.shape == (2, 50)
    for b in range(2):
        rows, keys = slice(int(cu_q[b]), int(cu_q[b + 1])), slice(int(cu_k[b]), int(cu_k[b + 1]))
        want_o, want_lse = attention_reference(*(x[None, s].double().numpy() for x, s in ((q, rows), (k, keys),
                                                                                           (v, keys))), 0.125, True)
        assert np.abs(o[rows].double().numpy() - want_o[0]).max() <= tolerance("bf16") * v.abs().max().item()
        got, seen = lse[:, rows].numpy(), np.isfinite(want_lse[0])
        assert (got[~seen] == -np.inf).all() and np.abs(got[seen] - want_lse[0][seen]).max() <= 1e-5
    with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
        fo, flse = torch.ops.pycute.attention_varlen(*(mode.from_tensor(t) for t in (q, k, v, cu_q, cu_k)), 30, 40,
                                                     True, 0.125)
    assert fo.shape == o.shape and flse.shape == lse.shape


def test_bad_offsets_are_refused_naming_them():
    q, k, v = tensors((50, 2, 64), (60, 1, 64))
    with pytest.raises(pc.LaunchError, match=r"cu_seqlens_q and cu_seqlens_k are int32 \(batch \+ 1\) offsets"):
        attention_varlen(q, k, v, torch.tensor([0, 50]), torch.tensor([0, 60]), 50, 60)
    with pytest.raises(pc.LaunchError, match=r"max_seqlen_q and max_seqlen_k are the longest sequences' lengths"):
        attention_varlen(q, k, v, torch.tensor([0, 50], dtype=torch.int32), torch.tensor([0, 60], dtype=torch.int32),
                         0, 60)


@pytest.mark.parametrize("q, kv, dtypes, error", [
    ((1, 8, 2, 64), (1, 8, 2, 32), None, r"k and v are \(batch, seqlen_k, kv_heads, head_dim\) like q's batch and "
                                         r"head dim: q \(1, 8, 2, 64\), k \(1, 8, 2, 32\)"),
    ((1, 8, 2, 96), (1, 8, 2, 96), None, r"head dim 96: the kernel is built for head dims \[64, 128, 256\]"),
    ((1, 8, 3, 64), (1, 8, 2, 64), None, r"3 query heads over 2 key / value heads: grouped-query attention needs"),
    ((1, 8, 2, 64), (1, 8, 2, 64), (torch.bfloat16, torch.float16), r"all bfloat16 or all float16, got "
                                                                   r"torch.bfloat16, torch.float16"),
    ((1, 0, 2, 64), (1, 8, 2, 64), None, r"an empty problem"),
    ((8, 2, 64), (1, 8, 2, 64), None, r"q is \(batch, seqlen, heads, head_dim\), got shape \(8, 2, 64\)")])
def test_bad_inputs_are_refused_naming_them(q, kv, dtypes, error):
    dq, dkv = dtypes or (torch.bfloat16, torch.bfloat16)
    with pytest.raises(pc.LaunchError, match=error):
        attention(torch.zeros(q, dtype=dq), torch.zeros(kv, dtype=dkv), torch.zeros(kv, dtype=dkv))


def test_inputs_that_are_not_tensors_are_a_type_error():
    with pytest.raises(TypeError, match=r"q is a torch tensor, got list"):
        attention([[1.0]], torch.zeros(1), torch.zeros(1))
