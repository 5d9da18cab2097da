"""pycute.testing's attention reference against the definition written out query by query: scaled scores, the
causal mask aligned to the bottom right, grouped-query heads, packed variable-length sequences, the log-sum-exp,
and a query with no key to see."""
import math

import numpy as np
import pytest

import pycute.testing as pt

RNG = np.random.default_rng(3)


def by_definition(q, k, v, scale, causal):
    """One sequence and head, query by query."""
    out, lse = np.zeros((len(q), v.shape[1])), np.zeros(len(q))
    for i in range(len(q)):
        keys = [j for j in range(len(k)) if not causal or j <= i + len(k) - len(q)]
        if not keys:
            out[i], lse[i] = 0.0, -math.inf
            continue
        s = [scale * float(q[i] @ k[j]) for j in keys]
        top = max(s)
        w = [math.exp(x - top) for x in s]
        out[i] = sum(wj * v[j] for wj, j in zip(w, keys)) / sum(w)
        lse[i] = math.log(sum(w)) + top
    return out, lse


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sq, sk, hq, hk", [(5, 7, 4, 2), (6, 3, 2, 2), (4, 4, 3, 1)])
def test_every_head_of_every_batch_entry_is_the_definition(causal, sq, sk, hq, hk):
    q, k, v = RNG.standard_normal((2, sq, hq, 8)), RNG.standard_normal((2, sk, hk, 8)), RNG.standard_normal((2, sk, hk, 6))
    got = pt.attention(q, k, v, causal=causal)
    assert got.out.shape == (2, sq, hq, 6) and got.lse.shape == (2, hq, sq)
    for b in range(2):
        for h in range(hq):
            out, lse = by_definition(q[b, :, h], k[b, :, h // (hq // hk)], v[b, :, h // (hq // hk)], 8 ** -0.5,
                                     causal)
            assert np.allclose(got.out[b, :, h], out, rtol=1e-12, atol=1e-12)
            assert np.allclose(got.lse[b, h], lse, rtol=1e-12) and np.array_equal(np.isinf(got.lse[b, h]), np.isinf(lse))


def test_packed_sequences_are_each_their_own_batch_entry():
    lens_q, lens_k = [3, 5, 1], [4, 5, 6]
    cq, ck = np.cumsum([0] + lens_q), np.cumsum([0] + lens_k)
    q, k, v = (RNG.standard_normal((n, 2, 8)) for n in (cq[-1], ck[-1], ck[-1]))
    got = pt.attention(q, k, v, scale=0.3, causal=True, cu_seqlens_q=cq, cu_seqlens_k=ck)
    assert got.lse.shape == (2, cq[-1])
    for s in range(3):
        one = pt.attention(q[None, cq[s]:cq[s + 1]], k[None, ck[s]:ck[s + 1]], v[None, ck[s]:ck[s + 1]], scale=0.3,
                           causal=True)
        assert np.array_equal(got.out[cq[s]:cq[s + 1]], one.out[0])
        assert np.array_equal(got.lse[:, cq[s]:cq[s + 1]], one.lse[0])


def test_torch_tensors_give_the_same_in_torch_float64():
    torch = pytest.importorskip("torch")
    q, k, v = RNG.standard_normal((1, 4, 2, 8)), RNG.standard_normal((1, 6, 1, 8)), RNG.standard_normal((1, 6, 1, 8))
    want = pt.attention(q, k, v, causal=True)
    got = pt.attention(*(torch.tensor(x, dtype=torch.float32) for x in (q, k, v)), causal=True)
    assert got.out.dtype == torch.float64
    assert np.allclose(got.out.numpy(), pt.attention(*(x.astype(np.float32) for x in (q, k, v)), causal=True).out)
    assert np.allclose(got.lse.numpy(), want.lse, rtol=1e-6)


def test_inputs_are_refused_naming_their_shapes():
    q, k = np.zeros((1, 4, 3, 8)), np.zeros((1, 4, 2, 8))
    with pytest.raises(ValueError, match="3 query heads do not group over 2 key / value heads"):
        pt.attention(q, k, k)
    with pytest.raises(ValueError, match=r"cu_seqlens_q \[0, 2\] and cu_seqlens_k \[0, 5\] are batch \+ 1"):
        pt.attention(np.zeros((3, 2, 8)), np.zeros((4, 2, 8)), np.zeros((4, 2, 8)), cu_seqlens_q=[0, 2],
                     cu_seqlens_k=[0, 5])
    with pytest.raises(ValueError, match="packed sequences need both cu_seqlens_q and cu_seqlens_k"):
        pt.attention(np.zeros((3, 2, 8)), np.zeros((4, 2, 8)), np.zeros((4, 2, 8)), cu_seqlens_q=[0, 3])
