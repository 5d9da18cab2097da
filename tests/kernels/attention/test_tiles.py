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


@pytest.mark.parametrize("causal", [False, True])
def test_the_device_functions_give_the_python_models_tiles(causal):
    tiles, sched = AttentionTiles(128, 64, causal), make_tile_scheduler(None, raster="n", swizzle=1)
    seqlen_q, seqlen_k, batch, heads, group = 300, 200, 2, 4, 2
    units = -(-seqlen_q // 128) * batch * heads
    source = sched.cuda() + tiles.cuda() + f"""
extern "C" __global__ void tiles(int* out) {{
  for (unsigned w = 0; w < attn_units({seqlen_q}, {batch}, {heads}); ++w) {{
    const attn_tile t = attn_tile_at(w, {seqlen_q}, {seqlen_k}, {batch}, {heads}, {group});
    int* o = out + 7 * w;
    o[0] = t.m; o[1] = t.h; o[2] = t.kv_h; o[3] = t.b; o[4] = t.end; o[5] = t.mask_from;
    o[6] = attn_first_row(t, 1u);
  }}
}}
"""
    out = np.full(7 * units, -7, dtype=np.int32)
    run_kernel(compile_cuda(source, arch="sm_90a"), "tiles", block=1, args=[out])
    want = []
    for w in range(units):
        m, n = w % 3, w // 3                                   # the scheduler's order: a head's query blocks in turn
        b = tiles.blocks(tiles.query_block(m, 3), seqlen_q, seqlen_k)
        want.append([tiles.query_block(m, 3), n % heads, n % heads // group, n // heads, b.end, b.mask_from,
                     tiles.query_block(m, 3) * 128 + 64])
    assert out.reshape(units, 7).tolist() == want
