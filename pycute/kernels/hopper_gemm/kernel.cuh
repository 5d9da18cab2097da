// The Hopper GEMM's kernel, D = epilogue(scale * A B^T) (pycute/kernels/hopper_gemm; docs/kernels.md,
// docs/hopper-gemm.md, docs/gemm-shapes.md). Before it, HopperGemm.source() puts the configuration's constants (THREADS,
// BM, BN, BK, TURNS, ...: constexpr) and the plans' functions: mainloop_* (the TMA pipeline and its barriers), mma (a
// k-block's wgmma on one 64-row slice), epilogue_* (the fused epilogue: its inputs' loads and the expression, by
// fragment coordinates), store_d / store_d_wait (stmatrix into a swizzled ring, TMA store), sched_* (the persistent
// scheduler: whole tiles, or pieces of their k-blocks reduced by a fixup) and fp8s_* (fp8 scales and the promotion
// of the tensor core's partial sums). Every address, count, parity and register grouping is theirs.
extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
gemm(const __grid_constant__ pycute_tensor_map map_a, const __grid_constant__ pycute_tensor_map map_b,
     const __grid_constant__ pycute_tensor_map map_d, int M, int N, int K, float scale, float* ws,
     unsigned* counters, unsigned dp, unsigned workers, const float* scale_a, const float* scale_b,
     const __grid_constant__ epilogue_params ep) {
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[mainloop_barrier_words];
  const unsigned smem = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(bars);
  const unsigned tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, kblocks = (K + BK - 1) / BK;
  const sched_problem p{tiles_m, tiles_n, kblocks, dp, workers};
  const unsigned wg = pycute_warpgroup_index();
  if (threadIdx.x == 0) mainloop_init(b);
  pycute_cluster_sync();
  if (wg == 0) {
    pycute_setmaxnreg_dec<PRODUCER_REGISTERS>();
    if (pycute_warp_index() == 0) {           // the load warp: every lane waits, one issues
      mainloop_state st = mainloop_producer_start();
      for (sched_walk w = sched_begin(p); w.more; sched_advance(p, w)) {
        pycute_tile t;
        sched_tile(w.pc.unit, t, tiles_m, tiles_n);
        for (unsigned kb = w.pc.kb_begin; kb < w.pc.kb_end; ++kb, st.advance()) {
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
    // consumer cw: cooperative, the slices cw * M_BLOCKS.. of every tile; ping-pong, every TURNS-th piece whole
    const unsigned cw = wg - 1u, turn = cw % TURNS, slice = COOPERATIVE ? cw * M_BLOCKS : 0u, bar = 1u + cw;
    const unsigned thread = pycute_warpgroup_thread(), epi = smem + mainloop_smem_bytes + cw * EPILOGUE_RING_BYTES;
    float d[M_BLOCKS][ACC_VALUES];                 // the sum
    float part[M_BLOCKS][ACC_VALUES];              // with PROMOTE, the tensor core's partial sum, promoted into d
    unsigned stored = 0, n = 0;
    mainloop_state st = mainloop_consumer_start(), done = st;
    for (sched_walk w = sched_begin(p); w.more; sched_advance(p, w), ++n) {
      const sched_piece pc = w.pc;
      if (n % TURNS != turn) {                  // the other consumer's piece: its stages pass this one by
        st.advance(pc.kb_end - pc.kb_begin);
        continue;
      }
      pycute_tile t;
      sched_tile(pc.unit, t, tiles_m, tiles_n);
      if (n > 0u) mainloop_turn_wait(cw);
      epilogue_tile ev;                         // the tile's per-row inputs, loaded while its MMAs run
#pragma unroll
      for (unsigned mi = 0; mi < M_BLOCKS; ++mi)
        epilogue_load_rows(ev, mi, thread, t.m * BM + (slice + mi) * SLICE_ROWS, M, ep);
#pragma unroll
      for (unsigned v = 0; v < M_BLOCKS * ACC_VALUES && PROMOTE > 0u; ++v) d[v / ACC_VALUES][v % ACC_VALUES] = 0.0f;
      bool held = false;                        // a stage the last wgmma read, not yet released
      for (unsigned kb = pc.kb_begin; kb < pc.kb_end; ++kb, st.advance()) {
        mainloop_consumer_wait(b, st);
        pycute_wgmma_fence();
        const unsigned step = kb - pc.kb_begin;
        const bool promote = PROMOTE > 0u && ((step + 1u) % PROMOTE == 0u || kb + 1u == pc.kb_end);
#pragma unroll
        for (unsigned mi = 0; mi < M_BLOCKS; ++mi)
          mma(smem, smem, PROMOTE > 0u ? part[mi] : d[mi], PROMOTE > 0u ? step % PROMOTE > 0u : step > 0u, slice + mi,
              st.index);
        pycute_wgmma_commit_group();
        if (promote) pycute_wgmma_wait_group<0>(); else pycute_wgmma_wait_group<1>();
        if (held) mainloop_consumer_release(b, done);
        if (promote) mainloop_consumer_release(b, st);
        done = st;
        held = !promote;
#pragma unroll
        for (unsigned mi = 0; mi < M_BLOCKS && promote; ++mi)
          fp8s_promote(d[mi], part[mi], scale_a, scale_b, kb, t.m * BM + (slice + mi) * SLICE_ROWS, t.n * BN, thread,
                       M, N, kblocks);
      }
      sched_walk next = w;
      sched_advance(p, next);
      if (next.more) mainloop_turn_pass(cw);
      pycute_wgmma_wait_group<0>();
      if (held) mainloop_consumer_release(b, done);
      if constexpr (SPLIT_K) {                  // a shared tile: the part whose arrival is last sums the pieces
        if (!sched_fixup(ws, counters, pc, PARTS > 1u ? cw : 0u, thread, bar, &d[0][0])) continue;
      }
#pragma unroll
      for (unsigned mi = 0; mi < M_BLOCKS && EPILOGUE_SCALES; ++mi)
        fp8s_scale(d[mi], scale_a, scale_b, 1.0f, t.m * BM + (slice + mi) * SLICE_ROWS, t.n * BN, thread, M, N);
#pragma unroll
      for (unsigned c = 0; c < M_BLOCKS * CHUNKS_N; ++c, ++stored) {
        const unsigned j = c / M_BLOCKS, mi = c % M_BLOCKS;
        const int row0 = t.m * BM + (slice + mi) * SLICE_ROWS, col0 = t.n * BN + CHUNK * j;
        if (mi == 0u) epilogue_load_cols(ev, thread, col0, N, ep);      // the chunk's per-column inputs, once
        float frag[CHUNK_VALUES];
        epilogue_chunk(ev, d[mi], mi, j, frag, thread, row0, col0, M, N, scale, ep);
        store_d_wait(thread, bar);
        store_d(&map_d, epi, thread, frag, row0, col0, stored % EPILOGUE_SLOTS, bar);
      }
    }
    if (thread == 0u) pycute_bulk_wait_group<0>();
  }
  __syncwarp();
  pycute_cluster_sync();
}
