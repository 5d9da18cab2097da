"""A small TMA pipeline (one producer thread, two consumer warps, two stages) runs whole on the CPU; each classic
pipeline bug is reported naming the barrier: a consumer waiting on the wrong parity, a producer waiting on the wrong
parity, a wrong arrival count, an expect_tx too large or too small, and a stage released before it was read."""
import numpy as np
import pytest

import pycute as pc
from pycute import Layout
from pycute.compile import compile_cuda
from pycute.interp import BarrierError, DeadlockError, RaceError, run_kernel, tensor_map

ARRAY = pc.make_global_tensor(pc.f32, Layout((96, 64), (64, 1)))
LOAD = pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((16, 64), (64, 1))), ARRAY)
TILES, STAGES, CONSUMERS = 6, 2, 64
CORRECT = {"full_count": "1u", "empty_count": f"{CONSUMERS}u", "producer_parity": "((k / STAGES) - 1) & 1",
           "consumer_parity": "(k / STAGES) & 1", "expect": "ld_expect_tx", "release_first": "0",
           "release": "pycute_mbarrier_arrive(pycute_smem_address(&empty[s]));"}


def source(**knobs) -> str:
    k = {**CORRECT, **knobs}
    return LOAD.cuda("ld") + f"""
#define STAGES {STAGES}
extern "C" __global__ void pipe(const pycute_tensor_map* map, unsigned* out, int tiles) {{
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  const unsigned* words = reinterpret_cast<const unsigned*>(raw + (base - pycute_smem_address(raw)));
  if (threadIdx.x == 0)
    for (int s = 0; s < STAGES; ++s) {{
      pycute_mbarrier_init(pycute_smem_address(&full[s]), {k['full_count']});
      pycute_mbarrier_init(pycute_smem_address(&empty[s]), {k['empty_count']});
    }}
  __syncthreads();
  if (threadIdx.x == {CONSUMERS}) {{                         // the producer
    for (int k = 0; k < tiles; ++k) {{
      const int s = k % STAGES;
      if (k >= STAGES) pycute_mbarrier_wait_parity(pycute_smem_address(&empty[s]), {k['producer_parity']});
      pycute_mbarrier_arrive_expect_tx(pycute_smem_address(&full[s]), {k['expect']});
      ld(map, base + s * 4096u, pycute_smem_address(&full[s]), k, 0);
    }}
  }} else if (threadIdx.x < {CONSUMERS}) {{                   // the consumers
    unsigned sum = 0;
    for (int k = 0; k < tiles; ++k) {{
      const int s = k % STAGES;
      pycute_mbarrier_wait_parity(pycute_smem_address(&full[s]), {k['consumer_parity']});
      if ({k['release_first']}) pycute_mbarrier_arrive(pycute_smem_address(&empty[s]));
      for (unsigned i = threadIdx.x; i < 1024u; i += {CONSUMERS}u) sum += words[s * 1024u + i] * (k + 1u);
      if (!{k['release_first']}) {{ {k['release']} }}
    }}
    out[threadIdx.x] = sum;
  }}
}}
"""


def run(**knobs) -> tuple[np.ndarray, np.ndarray]:
    words = np.random.default_rng(1).integers(0, 1 << 20, 96 * 64, dtype=np.uint32)
    out = np.zeros(CONSUMERS, dtype=np.uint32)
    run_kernel(compile_cuda(source(**knobs), arch="sm_90a"), "pipe", block=CONSUMERS + 32,
               smem=STAGES * 4096 + 1024, args=[tensor_map(LOAD, words), out, TILES])
    return out, words


def test_the_pipeline_delivers_every_tile_to_every_consumer():
    out, words = run()
    tiles = words.reshape(TILES, 1024).astype(np.uint64)
    want = sum((tiles[k].reshape(-1, CONSUMERS) * (k + 1)).sum(axis=0) for k in range(TILES)) % (1 << 32)
    assert list(out) == list(want)


def test_a_consumer_waiting_on_the_wrong_parity_is_named_with_its_barrier():
    with pytest.raises(RaceError, match=r"reads shared byte .* full\[0\]: parity 1 while phase 0 was in progress, "
                                        r"passed at once"):
        run(consumer_parity="((k / STAGES) & 1) ^ 1")


def test_a_producer_waiting_on_the_wrong_parity_refills_a_stage_before_its_release():
    with pytest.raises(BarrierError, match=r"mbarrier full\[0\] .* more arrivals than the phase expects .* "
                                           r"empty\[0\]: parity 1 while phase 0 was in progress, passed at once"):
        run(producer_parity="(((k / STAGES) - 1) & 1) ^ 1")


def test_a_wrong_arrival_count_is_a_deadlock_naming_the_barrier_and_its_pending_arrivals():
    with pytest.raises(DeadlockError, match=r"mbarrier empty\[0\] \(shared 0x\w+ of CTA 0\): phase 0 in progress, 1 "
                                            rf"of {CONSUMERS + 1} arrivals pending, tx-count 0 B: waited for parity "
                                            rf"0 by CTA 0 thread {CONSUMERS}"):
        run(empty_count=f"{CONSUMERS + 1}u")


def test_an_expect_tx_too_large_is_a_deadlock_naming_the_missing_bytes():
    with pytest.raises(DeadlockError, match=r"mbarrier full\[0\] .* 0 of 1 arrivals pending, tx-count 16 B"):
        run(expect="ld_expect_tx + 16")


def test_an_expect_tx_too_small_completes_the_phase_with_a_copy_in_flight():
    with pytest.raises(BarrierError, match=r"mbarrier full\[0\] .* the phase completes .* the TMA load .* "
                                           r"expect_tx armed 4080 B, but the copies issued for "
                                           r"this phase bring 4096 B"):
        run(expect="ld_expect_tx - 16")


def test_a_stage_released_before_it_is_read_is_overwritten_before_its_release():
    with pytest.raises(RaceError, match=r"the TMA load issued by CTA 0 thread 64 .* overwrites shared byte .* which "
                                        r"CTA 0 thread \d+ .* read and has not released to the writer: the stage is "
                                        r"overwritten before its release"):
        run(release_first="1")


def test_a_warp_that_syncs_before_one_lane_releases_for_it_is_ordered():
    out, words = run(empty_count="2u", release="__syncwarp(); if (threadIdx.x % 32u == 0u) "
                                              "pycute_mbarrier_arrive(pycute_smem_address(&empty[s]));")
    tiles = words.reshape(TILES, 1024).astype(np.uint64)
    want = sum((tiles[k].reshape(-1, CONSUMERS) * (k + 1)).sum(axis=0) for k in range(TILES)) % (1 << 32)
    assert list(out) == list(want)


def test_one_lane_releasing_for_a_warp_that_did_not_sync_is_a_race():
    with pytest.raises(RaceError, match=r"overwrites shared byte .* which CTA 0 thread \d+ .* read and has not "
                                        r"released to the writer"):
        run(empty_count="2u", release="if (threadIdx.x % 32u == 0u) "
                                      "pycute_mbarrier_arrive(pycute_smem_address(&empty[s]));")
