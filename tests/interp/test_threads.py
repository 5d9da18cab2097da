"""Every thread of a grid runs: warp-collective instructions see their whole warp (shuffles of every mode, votes,
matches, reductions, elect), divergent lanes reconverge at them, CTA barriers count threads, atomics are atomic, and
clusters share their shared memory (mapa, the cluster barrier). One NVRTC build of all the kernels."""
import numpy as np
import pytest

import pycute as pc
from pycute.compile import compile_cuda
from pycute.interp import DeadlockError, run_kernel

SOURCE = r'''
#include "pycute/sm100.cuh"
extern "C" __global__ void shuffles(const unsigned* x, unsigned* out) {
  const unsigned v = x[threadIdx.x], lane = threadIdx.x % 32u;
  out[0 * blockDim.x + threadIdx.x] = __shfl_sync(0xffffffffu, v, (lane * 7u) % 32u);
  out[1 * blockDim.x + threadIdx.x] = __shfl_up_sync(0xffffffffu, v, 3);
  out[2 * blockDim.x + threadIdx.x] = __shfl_down_sync(0xffffffffu, v, 5, 16);
  out[3 * blockDim.x + threadIdx.x] = __shfl_xor_sync(0xffffffffu, v, 9);
  out[4 * blockDim.x + threadIdx.x] = __ballot_sync(0xffffffffu, v & 1u);
  out[5 * blockDim.x + threadIdx.x] = __all_sync(0xffffffffu, v < 1000u) + 2u * __any_sync(0xffffffffu, v == 7u);
  out[6 * blockDim.x + threadIdx.x] = __match_any_sync(0xffffffffu, v % 3u);
  out[7 * blockDim.x + threadIdx.x] = __reduce_add_sync(0xffffffffu, v) + __reduce_max_sync(0xffffffffu, v);
}

extern "C" __global__ void divergence(unsigned* out) {
  const unsigned lane = threadIdx.x % 32u;
  unsigned v = lane;
  if (lane < 10u) v += 100u;          // lanes diverge ...
  else v *= 3u;
  __syncwarp();                        // ... and meet again
  const unsigned sum = __reduce_add_sync(0xffffffffu, v);
  if (pycute_elect_one_sync()) out[threadIdx.x / 32u] = sum;
}

extern "C" __global__ void barriers(unsigned* out, unsigned* counter) {
  __shared__ unsigned slots[256];
  slots[threadIdx.x] = threadIdx.x * 2u;
  __syncthreads();
  const unsigned mine = slots[(threadIdx.x + 1u) % blockDim.x];
  const int votes = __syncthreads_count(mine % 4u == 0u);
  atomicAdd(counter, mine);
  out[threadIdx.x] = mine + 1000u * (unsigned)votes;
}

extern "C" __global__ void __cluster_dims__(4, 1, 1) neighbours(unsigned* out) {
  __shared__ unsigned value;
  const unsigned rank = pycute_cluster_ctarank();
  if (threadIdx.x == 0) value = 10u * rank + 1u;
  pycute_cluster_sync();
  unsigned remote;
  asm volatile("{ .reg .b32 a; mapa.shared::cluster.u32 a, %1, %2; ld.shared::cluster.u32 %0, [a]; }"
               : "=r"(remote) : "r"(pycute_smem_address(&value)), "r"((rank + 1u) % 4u));
  pycute_cluster_sync();
  if (threadIdx.x == 0) out[rank] = remote;
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) remote_store(unsigned* out) {
  __shared__ unsigned slot;
  __shared__ __align__(8) unsigned long long mbar;
  const unsigned rank = pycute_cluster_ctarank(), m = pycute_smem_address(&mbar);
  if (threadIdx.x == 0) {
    pycute_mbarrier_init(m, 1);
    pycute_mbarrier_arrive_expect_tx(m, 4);
  }
  pycute_cluster_sync();
  if (threadIdx.x == 0)
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];"
                 :: "r"(pycute_mapa(pycute_smem_address(&slot), rank ^ 1u)), "r"(100u + rank),
                    "r"(pycute_mapa(m, rank ^ 1u)) : "memory");
  pycute_mbarrier_wait_parity(m, 0);
  if (threadIdx.x == 0) out[rank] = slot;
  pycute_cluster_sync();
}

extern "C" __global__ void unwaited_store(unsigned* out) {
  __shared__ __align__(16) unsigned tile[4];
  tile[threadIdx.x] = threadIdx.x;
  pycute_fence_proxy_async_shared();
  __syncthreads();
  if (threadIdx.x == 0) {
    pycute_bulk_store(out, pycute_smem_address(tile), 16u);
    pycute_bulk_commit_group();                      // no wait_group: the CTA exits under the copy
  }
}

extern "C" __global__ void local_array(const unsigned* index, unsigned* out) {
  unsigned scratch[40];                                   // indexed at run time: local memory
  for (unsigned k = 0; k < 40u; ++k) scratch[k] = k * k + threadIdx.x;
  out[threadIdx.x] = scratch[index[threadIdx.x] % 40u];
}

extern "C" __global__ void flag(unsigned* out) {
  __shared__ unsigned data[32];
  __shared__ volatile unsigned ready;
  if (threadIdx.x == 0) ready = 0u;
  __syncthreads();
  if (threadIdx.x == 32u) {                          // a producer warp publishes through a volatile flag
    for (unsigned i = 0; i < 32u; ++i) data[i] = i * 3u;
    __threadfence_block();
    ready = 1u;
  } else if (threadIdx.x < 32u) {                    // the consumer warp spins on it: the scheduler runs the producer
    while (ready == 0u) { }
    __threadfence_block();
    out[threadIdx.x] = data[threadIdx.x];
  }
}

extern "C" __global__ void stuck(unsigned* out) {
  if (threadIdx.x < 64u) __syncthreads();                            // barrier 0: all 128 threads
  else asm volatile("bar.sync 1, 96;" ::: "memory");                 // barrier 1: 96 of them
  out[threadIdx.x] = 1u;
}
'''


@pytest.fixture(scope="module")
def kernels():
    return compile_cuda(SOURCE, arch="sm_90a")


def test_shuffles_votes_matches_and_reductions_see_the_whole_warp(kernels):
    x = np.random.default_rng(0).integers(0, 200, 64, dtype=np.uint32)
    x[3] = 7
    out = np.zeros(8 * 64, dtype=np.uint32)
    run_kernel(kernels, "shuffles", block=64, args=[x, out])
    got = out.reshape(8, 64)
    lanes = np.arange(32)
    for w in range(2):
        v = x[32 * w:32 * w + 32].astype(np.int64)
        seg = slice(32 * w, 32 * w + 32)
        assert list(got[0, seg]) == list(v[(lanes * 7) % 32])
        assert list(got[1, seg]) == list(np.where(lanes >= 3, v[np.maximum(lanes - 3, 0)], v))
        down = np.where(lanes % 16 + 5 < 16, v[np.minimum(lanes + 5, 31)], v)
        assert list(got[2, seg]) == list(down)
        assert list(got[3, seg]) == list(v[lanes ^ 9])
        assert set(got[4, seg]) == {sum(1 << k for k in range(32) if v[k] & 1)}
        assert set(got[5, seg]) == {1 + 2 * int((v == 7).any())}
        assert list(got[6, seg]) == [sum(1 << k for k in range(32) if v[k] % 3 == v[j] % 3) for j in range(32)]
        assert set(got[7, seg]) == {int(v.sum() + v.max())}


def test_divergent_lanes_reconverge_at_warp_collective_instructions(kernels):
    out = np.zeros(2, dtype=np.uint32)
    run_kernel(kernels, "divergence", block=64, args=[out])
    lanes = np.arange(32)
    assert list(out) == [int(np.where(lanes < 10, lanes + 100, lanes * 3).sum())] * 2


def test_cta_barriers_and_atomics_order_every_thread(kernels):
    out, counter = np.zeros(256, dtype=np.uint32), np.zeros(1, dtype=np.uint32)
    run_kernel(kernels, "barriers", grid=2, block=256, args=[out, counter])
    mine = (np.arange(256) + 1) % 256 * 2
    votes = int((mine % 4 == 0).sum())
    assert list(out) == list(mine + 1000 * votes)
    assert counter[0] == 2 * mine.sum()


def test_a_cluster_reads_its_neighbours_shared_memory_through_mapa(kernels):
    out = np.zeros(4, dtype=np.uint32)
    run_kernel(kernels, "neighbours", grid=4, block=32, args=[out])
    assert list(out) == [11, 21, 31, 1]


def test_a_barrier_some_threads_never_reach_is_a_deadlock_naming_it(kernels):
    with pytest.raises(DeadlockError, match=r"(?s)barrier 0 of CTA 0: 64 of 128 threads arrived: waited by CTA 0 "
                                            r"threads 0-63.*barrier 1 of CTA 0: 64 of 96 threads arrived: waited "
                                            r"by CTA 0 threads 64-127"):
        run_kernel(kernels, "stuck", block=128, args=[np.zeros(128, dtype=np.uint32)])


def test_the_launch_is_checked_against_the_entry(kernels):
    out = np.zeros(4, dtype=np.uint32)
    with pytest.raises(pc.EmulationError, match=r"compiled for clusters of \(4, 1, 1\)"):
        run_kernel(kernels, "neighbours", grid=4, block=32, cluster=2, args=[out])
    with pytest.raises(pc.EmulationError, match="takes 2 arguments, got 1"):
        run_kernel(kernels, "barriers", block=32, args=[out])
    with pytest.raises(pc.EmulationError, match=r"has no parameter 'outs' \(its parameters: out, counter\)"):
        run_kernel(kernels, "barriers", block=32, args={"outs": out, "counter": out})
    with pytest.raises(pc.EmulationError, match="global store of 4 B at .* is outside every buffer"):
        run_kernel(kernels, "barriers", block=256, args=[np.zeros(8, dtype=np.uint32), out])


def test_st_async_stores_into_a_peer_and_completes_its_transaction_bytes(kernels):
    out = np.zeros(2, dtype=np.uint32)
    run_kernel(kernels, "remote_store", grid=2, block=32, args=[out])
    assert list(out) == [101, 100]


def test_a_cta_exiting_under_its_bulk_store_is_an_error(kernels):
    with pytest.raises(pc.EmulationError, match=r"CTA 0 exits while the bulk store issued by CTA 0 thread 0 .* is "
                                                r"still in flight on its shared memory"):
        run_kernel(kernels, "unwaited_store", block=4, args=[np.zeros(4, dtype=np.uint32)])


def test_each_thread_has_its_own_local_memory(kernels):
    index = np.arange(64, dtype=np.uint32) * 7
    out = np.zeros(64, dtype=np.uint32)
    run_kernel(kernels, "local_array", block=64, args=[index, out])
    assert list(out) == [int((i * 7 % 40) ** 2 + i) for i in range(64)]


def test_a_volatile_flag_publishes_shared_memory_without_a_race(kernels):
    out = np.zeros(32, dtype=np.uint32)
    run_kernel(kernels, "flag", block=64, args=[out])
    assert list(out) == [3 * i for i in range(32)]
