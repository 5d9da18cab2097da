"""Which keys a work tile's queries see: the key blocks a query block needs (at least one) are exactly those holding
a key one of its rows sees, the blocks from ``mask_from`` on are exactly those with a key one of its rows must not
see, a causal schedule takes the last query block first -- and the generated device functions, run on the CPU,
give the Python model's answers."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pycute.compile import compile_cuda
from pycute.interp import run_kernel
from pycute.kernels.attention.tiles import AttentionTiles
from pycute.pipeline import make_tile_scheduler


def seen(tiles: AttentionTiles, row: int, seqlen_q: int, seqlen_k: int) -> np.ndarray:
    keys = np.arange(seqlen_k)
    return keys <= row + seqlen_k - seqlen_q if tiles.causal else np.ones(seqlen_k, bool)


@settings(max_examples=200, deadline=None)
@given(bm=st.sampled_from([64, 128, 192]), bn=st.sampled_from([64, 80, 128]), causal=st.booleans(),
       seqlen_q=st.integers(1, 600), seqlen_k=st.integers(1, 600), data=st.data())
def test_the_key_blocks_are_those_a_row_sees_and_the_masked_ones_those_a_row_must_not(bm, bn, causal, seqlen_q,
                                                                                      seqlen_k, data):
    tiles = AttentionTiles(bm, bn, causal)
    m = data.draw(st.integers(0, (seqlen_q - 1) // bm))
    rows = range(m * bm, min((m + 1) * bm, seqlen_q))
    visible = np.array([seen(tiles, r, seqlen_q, seqlen_k) for r in rows])          # rows x keys
    b = tiles.blocks(m, seqlen_q, seqlen_k)
    n_blocks = -(-seqlen_k // bn)
    needed = [n for n in range(n_blocks) if visible[:, n * bn:(n + 1) * bn].any()]
    assert b.end == max(1, (needed[-1] + 1) if needed else 0) and b.end <= max(1, n_blocks)
    for n in range(b.end):
        block = visible[:, n * bn:(n + 1) * bn]
        whole = block.shape[1] == bn and block.all()
        assert (n >= b.mask_from) == (not whole), f"block {n}"


def test_a_causal_schedule_takes_the_query_blocks_from_the_last_one():
    assert [AttentionTiles(128, 128, True).query_block(m, 4) for m in range(4)] == [3, 2, 1, 0]
    assert [AttentionTiles(128, 128, False).query_block(m, 4) for m in range(4)] == [0, 1, 2, 3]


def run_tiles(tiles, seqlen_q, seqlen_k, batch, heads, group, cu_q=None, cu_k=None, total_q=0) -> np.ndarray:
    """Every work unit the generated functions give (``attn_first`` / ``attn_next``), as rows (work, m, h, kv_h,
    seq, b, q0, seqlen_q, seqlen_k, end, mask_from, lse0, first row of warpgroup 1)."""
    sched = make_tile_scheduler(None, raster="n", swizzle=1)
    source = sched.cuda() + tiles.cuda() + f"""
extern "C" __global__ void tiles(int* out, const int* cu_q, const int* cu_k) {{
  const attn_problem pr = attn_problem_of({seqlen_q}, {seqlen_k}, {heads}, {group}, {batch}, {total_q}, cu_q, cu_k);
  int n = 0;
  for (unsigned w = attn_first(pr); w < pr.units; w = attn_next(w, pr), ++n) {{
    const attn_tile t = attn_tile_at(w, pr);
    int* o = out + 13 * n;
    o[0] = (int)w; o[1] = t.m; o[2] = t.h; o[3] = t.kv_h; o[4] = t.seq; o[5] = t.b; o[6] = t.q0; o[7] = t.seqlen_q;
    o[8] = t.seqlen_k; o[9] = t.end; o[10] = t.mask_from; o[11] = (int)t.lse0; o[12] = attn_first_row(t, 1u);
  }}
  out[13 * n] = -1;
}}
"""
    out = np.full(13 * 200, -7, dtype=np.int32)
    args = [out, np.asarray(cu_q if cu_q is not None else [0], np.int32), np.asarray(cu_k if cu_k is not None else [0],
                                                                                    np.int32)]
    run_kernel(compile_cuda(source, arch="sm_90a"), "tiles", block=1, args=args)
    rows = out.reshape(-1, 13)
    return rows[:np.argmax(rows[:, 0] == -1)]


@pytest.mark.parametrize("causal", [False, True])
def test_the_device_functions_give_the_python_models_tiles(causal):
    tiles = AttentionTiles(128, 64, causal)
    seqlen_q, seqlen_k, batch, heads, group = 300, 200, 2, 4, 2
    want = []
    for w in range(3 * batch * heads):
        m, n = tiles.query_block(w % 3, 3), w // 3                 # the scheduler's order: a head's query blocks
        b = tiles.blocks(m, seqlen_q, seqlen_k)
        seq, h = n // heads, n % heads
        want.append([w, m, h, h // group, seq, seq, 0, seqlen_q, seqlen_k, b.end, b.mask_from,
                     (seq * heads + h) * seqlen_q, m * 128 + 64])
    assert run_tiles(tiles, seqlen_q, seqlen_k, batch, heads, group).tolist() == want


@pytest.mark.parametrize("causal", [False, True])
def test_packed_sequences_take_their_own_lengths_and_skip_the_query_blocks_past_them(causal):
    tiles = AttentionTiles(64, 64, causal, varlen=True)
    cu_q, cu_k = [0, 70, 100, 230], [0, 50, 150, 160]             # lengths q (70, 30, 130), k (50, 100, 10)
    heads, group = 2, 2
    want = []
    for w in range(3 * 3 * heads):                                 # 3 query blocks of the longest, 3 sequences
        m, n = tiles.query_block(w % 3, 3), w // 3
        seq, h = n // heads, n % heads
        sq, sk = cu_q[seq + 1] - cu_q[seq], cu_k[seq + 1] - cu_k[seq]
        if m * 64 >= sq:
            continue                                               # past its sequence: no work
        b = tiles.blocks(m, sq, sk)
        want.append([w, m, h, h // group, seq, 0, cu_q[seq], sq, sk, b.end, b.mask_from, h * 230 + cu_q[seq],
                     m * 64 + 64])
    assert run_tiles(tiles, 130, 100, 3, heads, group, cu_q, cu_k, total_q=230).tolist() == want
