"""The attention kernel run whole on the CPU (``pycute.interp.run_kernel``: every thread, the TMA loads and store,
the wgmma, the pipelines' barriers, the maps retargeted on the device) on small problems that take every path --
several work tiles per persistent CTA, key blocks cut by seqlen_k, the causal diagonal with more queries than keys
(rows that see no key), grouped query heads, packed sequences of different lengths, two consumer warpgroups taking
turns, bf16 and f16 -- against the float64 reference: O within a few units of its type's rounding
(``reference.tolerance``), every element written (O starts as NaN), the log-sum-exp within 1e-5. A consumer that
releases K before its S has landed is reported as the race it is."""
import math

import numpy as np
import pytest

from pycute.compile import compile_cuda
from pycute.interp import RaceError, run_kernel, tensor_map
from pycute.kernels.attention.config import AttentionConfig
from pycute.kernels.attention.kernel import ENTRY
from pycute.kernels.attention.cpu import DENSE, run_on_cpu, run_varlen_on_cpu
from pycute.kernels.attention.plans import AttentionPlans, Problem
from pycute.kernels.attention.reference import attention_reference, bf16_bits, f16_bits, from_bits, tolerance

BITS = {"bf16": bf16_bits, "f16": f16_bits}


def inputs(dtype: str, batch: int, seqlen_q: int, seqlen_k: int, heads: int, kv_heads: int, head_dim: int, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(BITS[dtype](rng.standard_normal((batch, s, h, head_dim)))
                 for s, h in ((seqlen_q, heads), (seqlen_k, kv_heads), (seqlen_k, kv_heads)))


def check(config: AttentionConfig, shape: tuple[int, ...], grid: int) -> None:
    q, k, v = inputs(config.dtype, *shape, config.head_dim)
    scale = 1 / math.sqrt(config.head_dim)
    o, lse = run_on_cpu(config, q, k, v, scale, grid=grid)
    want_o, want_lse = attention_reference(*(from_bits(x, config.dtype) for x in (q, k, v)), scale, config.causal)
    got = from_bits(o, config.dtype)
    assert not np.isnan(got).any(), "an element of O was not written"
    assert np.abs(got - want_o).max() <= tolerance(config.dtype) * np.abs(from_bits(v, config.dtype)).max()
    seen = np.isfinite(want_lse)
    assert np.array_equal(np.isfinite(lse), seen) and (lse[~seen] == -np.inf).all()    # the rows that see no key
    assert np.abs(lse[seen] - want_lse[seen]).max() <= 1e-5


def test_packed_sequences_causal_with_grouped_heads_each_within_its_own_rows():
    # 2 query heads on 1 key / value head; sequences of 70 queries over 50 keys (the first 20 rows see none) and 30
    # over 100; 64-row tiles: 3 work tiles per head, 6 on one persistent CTA (the Q ring and the map sets wrapping),
    # the maps pointed at each sequence on the device; the packed arrays' rows outside the sequences hold NaN, which
    # reaches O only if a load reads past a sequence
    config = AttentionConfig(head_dim=64, block_n=64, consumers=1, causal=True, varlen=True)
    cu_q, cu_k = [0, 70, 100], [0, 50, 150]
    q, k, v = inputs("bf16", 1, 100, 150, 2, 1, 64, seed=5)
    q, k, v = q[0], np.concatenate([k[0], np.full((8, 1, 64), 0x7FC0, np.uint16)]), \
        np.concatenate([v[0], np.full((8, 1, 64), 0x7FC0, np.uint16)])
    o, lse = run_varlen_on_cpu(config, q, k, v, cu_q, cu_k, 0.125, grid=1)
    got = from_bits(o, "bf16")
    assert not np.isnan(got).any(), "an element of O was not written, or NaN past a sequence was read"
    for b in range(2):
        rows, keys = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        want_o, want_lse = attention_reference(*(from_bits(x[None], "bf16") for x in (q[rows], k[keys], v[keys])),
                                               0.125, True)
        assert np.abs(got[rows] - want_o[0]).max() <= tolerance("bf16") * np.abs(from_bits(v, "bf16")[:150]).max()
        seen = np.isfinite(want_lse[0])
        assert (lse[:, rows][~seen] == -np.inf).all() and np.abs(lse[:, rows][seen] - want_lse[0][seen]).max() <= 1e-5


def test_two_consumer_warpgroups_taking_turns_over_keys_cut_by_seqlen_k_in_f16():
    # 70 queries (one 128-row tile, two warpgroups) over 130 keys: 3 key blocks, the last 2 keys long
    check(AttentionConfig(dtype="f16", head_dim=64, block_n=64, consumers=2), (1, 70, 130, 1, 1), grid=1)


def test_a_k_stage_released_before_its_s_has_landed_is_a_race():
    config = AttentionConfig(head_dim=64, block_n=64, consumers=1)
    wait = "pycute_wgmma_wait_group<1>();             // S is in\n        k_consumer_advance(b.k, st.k);"
    source = config.source()
    assert wait in source
    early = source.replace(wait, "k_consumer_advance(b.k, st.k);\n        pycute_wgmma_wait_group<1>();")
    q, k, v = inputs("bf16", 1, 64, 320, 1, 1, 64)
    plans = AttentionPlans.of(config, Problem.dense(1, 64, 320, 1, 1, 64))
    maps = [tensor_map(m, x) for m, x in zip(plans.maps(), (q, k, v, np.zeros_like(q)))]
    with pytest.raises(RaceError, match=r"TMA load .* overwrites shared byte .* which the wgmma of warpgroup 1 of "
                                        r"CTA 0 read and has not released to the writer"):
        run_kernel(compile_cuda(early, arch="sm_90a", options=("-std=c++17",)), ENTRY, block=config.threads,
                   smem=config.smem_bytes, args=[*maps, np.zeros((1, 1, 64), np.float32), *DENSE, 64, 320, 1, 1, 1,
                                                 0, 1.0])
