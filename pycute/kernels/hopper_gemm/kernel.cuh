// The Hopper GEMM's kernel, D = scale * A B^T (pycute/kernels/hopper_gemm; docs/kernels.md, docs/hopper-gemm.md).
// Before it, HopperGemm.source() puts the configuration's constants (THREADS, BM, BN, BK, TURNS, ...: constexpr)
// and the plans' functions: mainloop_* (the TMA pipeline and its barriers), mma (a k-block's wgmma on one 64-row
// slice), store_d / store_d_wait (the epilogue: stmatrix into a swizzled ring, TMA store) and sched_* (the
// persistent tile scheduler). Every address, count, parity and register grouping is theirs.
extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
gemm(const __grid_constant__ pycute_tensor_map map_a, const __grid_constant__ pycute_tensor_map map_b,
     const __grid_constant__ pycute_tensor_map map_d, int M, int N, int K, float scale) {
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[mainloop_barrier_words];
  const unsigned smem = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(bars);
  const unsigned tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, kblocks = (K + BK - 1) / BK;
  const unsigned units = sched_units(tiles_m, tiles_n), wg = pycute_warpgroup_index();
  if (threadIdx.x == 0) mainloop_init(b);
  pycute_cluster_sync();
  if (wg == 0) {
    pycute_setmaxnreg_dec<PRODUCER_REGISTERS>();
    if (pycute_warp_index() == 0) {           // the load warp: every lane waits, one issues
      mainloop_state st = mainloop_producer_start();
      for (unsigned w = sched_first(); w < units; w = sched_next(w)) {
        pycute_tile t;
        sched_tile(w, t, tiles_m, tiles_n);
        for (unsigned kb = 0; kb < kblocks; ++kb, st.advance()) {
          const unsigned full = mainloop_producer_acquire(b, st);
          if (pycute_elect_one_sync()) {
            mainloop_a(&map_a, smem, full, t.m, kb, st.index);
            mainloop_b(&map_b, smem, full, t.n, kb, st.index);
          }
        }
      }
    }
  } else {
    pycute_setmaxnreg_inc<CONSUMER_REGISTERS>();
    // consumer cw: cooperative, the slices cw * M_BLOCKS.. of every tile; ping-pong, every TURNS-th tile whole
    const unsigned cw = wg - 1u, turn = cw % TURNS, slice = COOPERATIVE ? cw * M_BLOCKS : 0u, bar = 1u + cw;
    const unsigned thread = pycute_warpgroup_thread(), epi = smem + mainloop_smem_bytes + cw * EPILOGUE_RING_BYTES;
    float d[M_BLOCKS][ACC_VALUES];
    unsigned stored = 0;
    mainloop_state st = mainloop_consumer_start(), done = st;
    st.advance(turn * kblocks);
    for (unsigned w = sched_first(), n = 0; w < units; w = sched_next(w), ++n) {
      pycute_tile t;
      sched_tile(w, t, tiles_m, tiles_n);
      if (n % TURNS != turn) continue;
      if (n > 0u) mainloop_turn_wait(cw);
      for (unsigned kb = 0; kb < kblocks; ++kb, st.advance()) {
        mainloop_consumer_wait(b, st);
        pycute_wgmma_fence();
#pragma unroll
        for (unsigned mi = 0; mi < M_BLOCKS; ++mi) mma(smem, smem, d[mi], kb > 0u, slice + mi, st.index);
        pycute_wgmma_commit_group();
        pycute_wgmma_wait_group<1>();
        if (kb > 0u) mainloop_consumer_release(b, done);
        done = st;
      }
      if (sched_next(w) < units) mainloop_turn_pass(cw);
      pycute_wgmma_wait_group<0>();
      mainloop_consumer_release(b, done);
      st.advance((TURNS - 1u) * kblocks);
#pragma unroll
      for (unsigned c = 0; c < M_BLOCKS * CHUNKS_N; ++c, ++stored) {
        const unsigned mi = c / CHUNKS_N, j = c % CHUNKS_N;
        float frag[CHUNK_VALUES];
#pragma unroll
        for (unsigned i = 0; i < CHUNK_VALUES; ++i) frag[i] = d[mi][CHUNK_VALUES * j + i] * scale;
        store_d_wait(thread, bar);
        store_d(&map_d, epi, thread, frag, t.m * BM + (slice + mi) * SLICE_ROWS, t.n * BN + CHUNK * j,
                stored % EPILOGUE_SLOTS, bar);
      }
    }
    if (thread == 0u) pycute_bulk_wait_group<0>();
  }
  __syncwarp();
  pycute_cluster_sync();
}
