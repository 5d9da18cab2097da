// The persistent block-scaled GEMM's kernel, D = (A * SFA) (B * SFB)^T (pycute/kernels/blockscaled_gemm;
// docs/blockscaled-gemm.md, docs/kernels.md). Before it, BlockScaledGemm.source() puts the configuration's constants
// (THREADS) and the plans' functions: mainloop_* (the operand pipeline: TMA and bulk loads), accum_* (the two TMEM
// accumulators' pipeline), gemm_* (the MMA mainloop: SF copies into TMEM, tcgen05.mma, TMEM allocation), epilogue_*
// (tcgen05.ld -> convert -> swizzled shared ring -> TMA store) and sched_* (the persistent tile scheduler). A pair
// (cta_group 2) is a cluster of two CTAs, given at launch.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
blockscaled_gemm(const __grid_constant__ pycute_tensor_map map_a, const __grid_constant__ pycute_tensor_map map_b,
                 const unsigned char* sfa, const unsigned char* sfb, const __grid_constant__ pycute_tensor_map map_d,
                 unsigned tiles_m, unsigned tiles_n, unsigned k_blocks) {
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[mainloop_barrier_words], acc_bars[accum_barrier_words];
  __shared__ unsigned tmem_slot;
  const unsigned smem = (pycute_smem_address(raw) + 1023u) & ~1023u, warp = pycute_warp_index();
  const unsigned b = pycute_smem_address(bars), ab = pycute_smem_address(acc_bars);
  const unsigned tmem = gemm_start(b, ab, pycute_smem_address(&tmem_slot), warp == 1u);
  mainloop_state st = warp == 0u ? mainloop_producer_start() : mainloop_consumer_start();
  accum_state acc = warp == 1u ? accum_producer_start() : accum_consumer_start();
  if (warp == 0u)                        // the producer; tiles_m counts whole pairs, so every tile is inside
    for (unsigned w = sched_first(); w < sched_units(tiles_m, tiles_n); w = sched_next(w))
      gemm_load_tile(b, st, k_blocks, smem, &map_a, &map_b, sfa, sfb, sched_at(w, tiles_m, tiles_n));
  else if (warp == 1u)                   // the MMA warp (the odd CTA of a pair relays)
    for (unsigned w = sched_first(); w < sched_units(tiles_m, tiles_n); w = sched_next(w))
      gemm_mma_tile(b, ab, st, acc, k_blocks, smem, tmem);
  else {                                // the epilogue warps
    for (unsigned w = sched_first(); w < sched_units(tiles_m, tiles_n); w = sched_next(w))
      epilogue_tile(ab, acc, &map_d, smem + mainloop_smem_bytes, tmem, sched_at(w, tiles_m, tiles_n));
    epilogue_finish();
  }
  gemm_finish(tmem, warp == 1u);
}
