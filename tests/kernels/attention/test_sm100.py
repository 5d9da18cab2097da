"""The sm_100a attention kernel (pycute/kernels/attention/sm100): its body's hand-written lines (at most 60, none an
address, a count, a parity, a register index or a lane mask); its sm_100a SASS per configuration -- one UTCHMMA per
16-element k-block of S = Q K^T and of O += P V at each of their two issue sites, a tcgen05.commit for each release
and fill, the S, P and O moves between TMEM and registers, the TMA loads and the one TMA store, no local memory;
the sm_100a build run whole on the CPU (pycute's interpreter, its tcgen05 instructions by pycute's emulator) and its
soft sm_90a build (pycute's tcgen05 model, no tcgen05 instruction) run whole too, each against the float64 reference
(O within a few units of its type's rounding, every element written, the log-sum-exp within 1e-5, -inf exactly for a
row that sees no key); and the configurations it refuses. No Blackwell GPU has run it."""
import math
import re

import numpy as np
import pytest

from pycute.errors import PlanError
from pycute.kernels.attention.reference import attention_reference, bf16_bits, f16_bits, from_bits, tolerance
from pycute.kernels.attention.sm100 import Sm100Config
from pycute.kernels.attention.sm100.cpu import run_on_cpu
from pycute.kernels.attention.sm100.kernel import BODY, HANDWRITTEN_LINES, body_lines

BITS = {"bf16": bf16_bits, "f16": f16_bits}
#: 128 x 128 tiles at head dims 64 (causal) and 128 (f16): their sm_100a builds are checked and run on the CPU.
CAUSAL = Sm100Config(head_dim=64, causal=True)
FULL = Sm100Config(dtype="f16", head_dim=128)
#: The soft builds run on the CPU: 64-key blocks (each soft MMA is interpreted element by element, and each soft
#: build is ~20 s of NVRTC when not cached).
SOFT_CAUSAL = Sm100Config(head_dim=64, block_n=64, causal=True)
SOFT_FULL = Sm100Config(head_dim=64, block_n=64)


def test_the_body_has_at_most_60_hand_written_lines():
    assert body_lines() == HANDWRITTEN_LINES <= 60


def test_no_line_of_the_body_is_an_address_a_count_a_parity_a_register_index_or_a_lane_mask():
    body = BODY.read_text()
    body = body[body.index('extern "C"'):]
    code = "\n".join(line.split("//")[0] for line in body.splitlines())
    assert set(re.findall(r"(?<![\w.])(\d+)u?\b", code)) <= {"0", "1", "2"}     # loop bounds only
    for pattern in (r"0x", r"<<", r">>", r"%", r"\.phase", r"parity", r"\[\s*\d", r"&\s*\d", r"\bsmem\s*\+",
                    r"\btmem\s*\+", r"threadIdx", r"lane"):
        assert not re.search(pattern, code), pattern


@pytest.fixture(scope="module", params=[CAUSAL, FULL], ids=lambda c: c.name)
def sm100a(request):
    return request.param, request.param.compile("sm_100a")


def test_one_utchmma_per_k_block_at_each_issue_site(sm100a):
    c, k = sm100a
    h = k.histogram()
    # kind::f16 multiplies 16 elements of K per instruction (PTX ISA #tcgen05-matrix-shape): S = Q K^T over the
    # head dim, O += P V over the block's keys, each issued before / in the loop and in it / after it
    assert sum(n for op, n in h.items() if op.startswith("UTCHMMA")) == 2 * c.head_dim // 16 + 2 * c.block_n // 16
    assert not any(op.startswith(("UTCQMMA", "UTCOMMA", "UTCIMMA", "HGMMA")) for op in h)
    # a commit at each site for K's release and S's fill, V's and P's release; Q's release and O's fill
    assert sum(n for op, n in h.items() if op.startswith("UTCBAR")) == 2 * 2 + 2 * 2 + 2


def test_s_p_and_o_move_between_tmem_and_registers_as_planned(sm100a):
    c, k = sm100a
    h = k.histogram()
    count = lambda prefix: sum(n for op, n in h.items() if op.startswith(prefix))         # noqa: E731
    # 32 32-bit columns an x32 instruction: S's block_n f32 columns once; a 64-column f32 chunk of O at its rescale
    # and at its store (each a loop over the chunks); P's block_n 16-bit values, two a column
    assert count("LDTM") == c.block_n // 32 + 2 * 64 // 32
    assert count("STTM") == c.block_n // 2 // 32 + 64 // 32


def test_the_planned_tma_loads_and_store_and_no_local_memory(sm100a):
    _, k = sm100a
    h = k.histogram()
    count = lambda prefix: sum(n for op, n in h.items() if op.startswith(prefix))         # noqa: E731
    assert count("UTMALDG") == 4 and count("UTMASTG") == 1          # Q, K twice, V; an O chunk
    assert not any(op.startswith(("LDL", "STL")) for op in h)


@pytest.fixture(scope="module", params=[SOFT_CAUSAL, SOFT_FULL], ids=lambda c: c.name)
def soft(request):
    return request.param.compile("sm_90a", soft=True, ctas=1)


def test_the_soft_build_compiles_for_sm_90a_without_tcgen05(soft):
    assert not re.search(r"^\s*tcgen05\.", soft.ptx, re.M)


def inputs(dtype, batch, seqlen_q, seqlen_k, heads, kv_heads, head_dim, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(BITS[dtype](rng.standard_normal((batch, s, h, head_dim)))
                 for s, h in ((seqlen_q, heads), (seqlen_k, kv_heads), (seqlen_k, kv_heads)))


def check(config, shape, grid=1, soft=False):
    q, k, v = inputs(config.dtype, *shape, config.head_dim)
    scale = 1 / math.sqrt(config.head_dim)
    o, lse = run_on_cpu(config, q, k, v, scale, grid=grid, soft=soft)
    want_o, want_lse = attention_reference(*(from_bits(x, config.dtype) for x in (q, k, v)), scale, config.causal)
    got = from_bits(o, config.dtype)
    assert not np.isnan(got).any(), "an element of O was not written"
    assert np.abs(got - want_o).max() <= tolerance(config.dtype) * np.abs(from_bits(v, config.dtype)).max()
    seen = np.isfinite(want_lse)
    assert np.array_equal(np.isfinite(lse), seen) and (lse[~seen] == -np.inf).all()
    assert np.abs(lse[seen] - want_lse[seen]).max() <= 1e-5
    return want_lse


def test_causal_grouped_heads_several_tiles_per_cta_with_rows_that_see_no_key():
    # 2 query heads on 1 key / value head, 200 queries over 150 keys: 2 query blocks per head (the second 72 rows
    # long), 4 work tiles on 2 persistent CTAs (Q's stage, the S buffers, O and O's shared tiles each taken again);
    # the diagonal aligned to the bottom right crosses 2 key blocks of 128 (the last 22 keys long) and leaves the
    # first 50 rows without a key (O 0, log-sum-exp -inf)
    want_lse = check(CAUSAL, (1, 200, 150, 2, 1), grid=2)
    assert np.isinf(want_lse[0, :, :50]).all() and np.isfinite(want_lse[0, :, 50:]).all()


def test_full_attention_at_head_dim_128_in_f16_over_keys_cut_by_seqlen_k():
    # 2 sequences of 70 queries over 300 keys: 3 key blocks, the last 44 keys long; O rescaled in TMEM and stored in
    # two 64-column chunks
    check(FULL, (2, 70, 300, 1, 1), grid=2)


def test_the_soft_build_causal_with_rows_that_see_no_key():
    # 100 queries over 80 keys in 64-key blocks: the last block 16 keys long, the first 20 rows see no key
    want_lse = check(SOFT_CAUSAL, (1, 100, 80, 1, 1), soft=True)
    assert np.isinf(want_lse[0, 0, :20]).all()


def test_the_soft_build_without_mask_over_keys_cut_by_seqlen_k():
    # 70 queries over 100 keys in 64-key blocks: O rescaled once, the last block 36 keys long
    check(SOFT_FULL, (1, 70, 100, 1, 1), soft=True)


@pytest.mark.parametrize("kw, message", [
    (dict(dtype="f32"), r"dtype 'f32': the kernel takes bf16 or f16"),
    (dict(head_dim=256), r"head dim 256: the kernel is built for head dims \[64, 128\]"),
    (dict(block_n=96), r"block_n=96: the kernel is built and checked for block_n in \[64, 128\]"),
    (dict(kv_stages=1), r"kv_stages=1: at least two K and V stages"),
])
def test_a_configuration_it_does_not_build_is_refused_naming_the_rule(kw, message):
    with pytest.raises(PlanError, match=message):
        Sm100Config(**kw)


def test_a_soft_build_for_sm_100a_is_refused():
    with pytest.raises(PlanError, match=r"builds for sm_100a, or for sm_90a with soft=True"):
        SOFT_CAUSAL.compile("sm_100a", soft=True)
