"""The hardware probe that settles tcgen05.cp decompression (docs/tcgen05-cp-decompression.md section 6): all 16
four-bit codes and distinct six-bit codes in, raw TMEM bytes out, TMEM pre-filled with ones so unwritten bits show.

On an sm_100-family GPU it checks the four-bit placement pycute implements (code << 2, sign bit included) and
reports which six-bit hypothesis holds (A: bits [6:1]; B: bits [5:0]) -- the fact pycute refuses to guess. It
deliberately issues the .b6x16_p32 form the planner refuses. Elsewhere it is compiled (sm_100a, SASS checked)."""
import numpy as np
import pytest

from pycute.arch.sm100 import SmemDescriptor
from pycute.compile import compile_cuda, runtime

TEMPLATE = SmemDescriptor(sbo=128).encode()       # 128 rows of 16 bytes, no swizzle, LBO 0
SOURCE = f"""#include "pycute/sm100.cuh"
extern "C" __global__ void __launch_bounds__(128, 1) decompression_probe(const unsigned char* src, unsigned six,
                                                                        unsigned* out) {{
  __shared__ __align__(1024) unsigned char buf[128 * 16];
  __shared__ unsigned slot;
  __shared__ __align__(8) unsigned long long mbar_word;
  const unsigned warp = pycute_warp_index(), mbar = pycute_smem_address(&mbar_word);
  for (unsigned i = threadIdx.x; i < 128u * 16u; i += blockDim.x) buf[i] = src[i];
  if (warp == 0) {{ pycute_tmem_alloc<1>(pycute_smem_address(&slot), 32u); pycute_tmem_relinquish_alloc_permit<1>(); }}
  if (threadIdx.x == 0) pycute_mbarrier_init(mbar, 1);
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned taddr = slot, mine = taddr + ((32u * (warp % 4u)) << PYCUTE_TMEM_LANE_SHIFT);
  const unsigned ones[4] = {{0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}};
  pycute_tcgen05_st_32x32b_x4(mine, ones);
  pycute_tcgen05_wait_st();
  pycute_fence_proxy_async_shared();
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  if (warp == 0 && pycute_elect_one_sync()) {{
    const unsigned long long desc = pycute_smem_desc(0x{TEMPLATE:016X}ull, buf);
    if (six)
      asm volatile("tcgen05.cp.cta_group::1.128x128b.b8x16.b6x16_p32 [%0], %1;" :: "r"(taddr), "l"(desc) : "memory");
    else
      asm volatile("tcgen05.cp.cta_group::1.128x128b.b8x16.b4x16_p64 [%0], %1;" :: "r"(taddr), "l"(desc) : "memory");
    pycute_tcgen05_commit<1>(mbar);
  }}
  pycute_mbarrier_wait_parity(mbar, 0);
  pycute_tcgen05_fence_after_thread_sync();
  unsigned v[4];
  pycute_tcgen05_ld_32x32b_x4(mine, v);
  pycute_tcgen05_wait_ld();
  for (unsigned j = 0; j < 4u; ++j) out[threadIdx.x * 4u + j] = v[j];
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  if (warp == 0) pycute_tmem_dealloc<1>(taddr, 32u);
}}
"""


def fp4_source(sentinel=0xA5):
    """Row r, element i: code (i + r) % 16 (every code, the sign bit included), bytes 8-15 = sentinel."""
    rows = np.full((128, 16), sentinel, dtype=np.uint8)
    for r in range(128):
        for j in range(8):
            rows[r, j] = (((2 * j + 1 + r) % 16) << 4) | ((2 * j + r) % 16)
    return rows, np.array([[(i + r) % 16 for i in range(16)] for r in range(128)], dtype=np.uint8)


def fp6_source(sentinel=0xA5):
    """Row r, element i: code (16 r + i) % 64, packed LSB first into bytes 0-11, bytes 12-15 = sentinel."""
    rows = np.full((128, 16), sentinel, dtype=np.uint8)
    codes = np.array([[(16 * r + i) % 64 for i in range(16)] for r in range(128)], dtype=np.uint8)
    for r in range(128):
        word = sum(int(c) << (6 * i) for i, c in enumerate(codes[r]))
        rows[r, :12] = np.frombuffer(word.to_bytes(12, "little"), dtype=np.uint8)
    return rows, codes


def test_the_probe_builds_for_sm_100a_with_both_decompressing_forms():
    sass = [i.split()[0] for i in compile_cuda(SOURCE).instructions() if i.startswith("UTCCP")]
    assert sorted(sass) == ["UTCCP.T.S.128dp128bit.U4x16P64", "UTCCP.T.S.128dp128bit.U6x16P32"]


def test_the_probe_inputs_are_what_the_docs_specify():
    rows4, codes4 = fp4_source()
    assert set(codes4.ravel()) == set(range(16)) and rows4[0, :8].tobytes() == bytes.fromhex("1032547698badcfe")
    rows6, codes6 = fp6_source()
    assert set(codes6[:4].ravel()) == set(range(64))
    word = int.from_bytes(rows6[1, :12].tobytes(), "little")
    assert [(word >> (6 * i)) & 63 for i in range(16)] == list(codes6[1])


@pytest.mark.gpu
@pytest.mark.skipif(runtime.skip_reason() is not None, reason=runtime.skip_reason() or "")
def test_decompression_placement_on_sm100():
    gpu = runtime.Gpu()
    arch = "sm_100a" if runtime.device_info()[1][0] == 10 else "sm_110a"
    kernel = gpu.kernel(compile_cuda(SOURCE, arch=arch), "decompression_probe")
    results = {}
    for six, (rows, codes) in ((0, fp4_source()), (1, fp6_source())):
        d_src, d_out = gpu.upload(rows.reshape(-1)), gpu.upload(np.zeros(128 * 4, np.uint32))
        gpu.launch(kernel, d_src, np.uint32(six), d_out, grid=1, block=128)
        results[six] = gpu.download(d_out, np.uint32, 128 * 4).view(np.uint8).reshape(128, 16), codes
    got4, codes4 = results[0]
    assert np.array_equal(got4, codes4 << 2), "4-bit codes do not land in bits [5:2]"
    got6, codes6 = results[1]
    hypothesis = "A: [6:1]" if np.array_equal(got6, codes6 << 1) else "B: [5:0]" if np.array_equal(got6, codes6) \
        else None
    print(f"6-bit decompression placement on this device: {hypothesis}")
    assert hypothesis is not None, f"neither hypothesis; first row {got6[0].tobytes().hex()} for codes {codes6[0]}"
