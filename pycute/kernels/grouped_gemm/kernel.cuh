// The grouped GEMM's kernel (pycute/kernels/grouped_gemm; docs/gemm-shapes.md): D[rows of g] = scale * A[rows of g]
// B[g]^T for every group g. Before it, GroupedGemm.source() puts the constants and the plans' functions: mainloop_*
// (the TMA pipeline: A's and B's tiles at element rows), mma (a k-block's wgmma on one 64-row slice), store_d (the
// epilogue), retarget_d (D's map pointed at one group's rows) and grp_* (the grouped scheduler's cursor over the
// group sizes on the device). Every address, count, parity and register grouping is theirs.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
grouped_gemm(const __grid_constant__ pycute_tensor_map map_a, const __grid_constant__ pycute_tensor_map map_b,
             const __grid_constant__ pycute_tensor_map map_d, const int* groups, unsigned count, unsigned extent,
             int N, int K, float scale, pycute_tensor_map* maps, unsigned char* d, unsigned long long ldd) {
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[mainloop_barrier_words];
  const unsigned smem = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(bars);
  const unsigned tiles_n = (N + BN - 1) / BN, kblocks = (K + BK - 1) / BK, wg = pycute_warpgroup_index();
  if (threadIdx.x == 0) mainloop_init(b);
  pycute_cluster_sync();
  grp_cursor c = grp_start(groups, count, extent, tiles_n);
  if (wg == 0) {
    pycute_setmaxnreg_dec<PRODUCER_REGISTERS>();
    if (pycute_warp_index() == 0) {           // the load warp: every lane waits, one issues
      mainloop_state st = mainloop_producer_start();
      for (unsigned u = grp_first(); grp_seek(c, u, groups, count, extent, tiles_n); u = grp_next(u)) {
        pycute_tile t;
        grp_tile(u, c, t, tiles_n);
        const int row = (int)(c.row0 + t.m * BM), brow = (int)(c.group * N + t.n * BN);
        for (unsigned kb = 0; kb < kblocks; ++kb, st.advance()) {
          const unsigned full = mainloop_producer_acquire(b, st);
          if (pycute_elect_one_sync()) {
            mainloop_a(&map_a, smem, full, row, (int)(kb * BK), st.index);
            mainloop_b(&map_b, smem, full, brow, (int)(kb * BK), st.index);
          }
        }
      }
    }
  } else {
    pycute_setmaxnreg_inc<CONSUMER_REGISTERS>();
    const unsigned cw = wg - 1u, slice = cw * M_BLOCKS, bar = 1u + cw, thread = pycute_warpgroup_thread();
    const unsigned epi = smem + mainloop_smem_bytes + cw * EPILOGUE_RING_BYTES;      // 1024-aligned: the swizzle
    const unsigned smap = smem + mainloop_smem_bytes + 2u * EPILOGUE_RING_BYTES + cw * MAP_BYTES;
    pycute_tensor_map* mine = maps + blockIdx.x * CONSUMERS + cw;    // this warpgroup's map of D, at one group
    unsigned mapped = ~0u, stored = 0;
    float acc[M_BLOCKS][ACC_VALUES];
    mainloop_state st = mainloop_consumer_start(), done = st;
    for (unsigned u = grp_first(); grp_seek(c, u, groups, count, extent, tiles_n); u = grp_next(u)) {
      pycute_tile t;
      grp_tile(u, c, t, tiles_n);
      for (unsigned kb = 0; kb < kblocks; ++kb, st.advance()) {
        mainloop_consumer_wait(b, st);
        pycute_wgmma_fence();
#pragma unroll
        for (unsigned mi = 0; mi < M_BLOCKS; ++mi) mma(smem, smem, acc[mi], kb > 0u, slice + mi, st.index);
        pycute_wgmma_commit_group();
        pycute_wgmma_wait_group<1>();
        if (kb > 0u) mainloop_consumer_release(b, done);
        done = st;
      }
      pycute_wgmma_wait_group<0>();
      mainloop_consumer_release(b, done);
      if (c.group != mapped) {                // D's map at this group: its rows, so a store clips at its end
        if (thread == 0u) pycute_bulk_wait_group<0>();        // the stores through the old map are done
        pycute_named_barrier_sync(bar, 128u);
        if (thread < 32u) retarget_d(&map_d, mine, smap, d + c.row0 * ldd, (int)c.rows);
        if (thread == 0u) pycute_tensormap_acquire_gpu(mine);
        mapped = c.group;
      }
#pragma unroll
      for (unsigned q = 0; q < M_BLOCKS * CHUNKS_N; ++q, ++stored) {
        const unsigned mi = q / CHUNKS_N, j = q % CHUNKS_N;
        float frag[CHUNK_VALUES];
#pragma unroll
        for (unsigned v = 0; v < CHUNK_VALUES; ++v) frag[v] = acc[mi][CHUNK_VALUES * j + v] * scale;
        store_d_wait(thread, bar);
        store_d(mine, epi, thread, frag, t.m * BM + (slice + mi) * SLICE_ROWS, t.n * BN + CHUNK * j,
                stored % EPILOGUE_SLOTS, bar);
      }
    }
    if (thread == 0u) pycute_bulk_wait_group<0>();
  }
  __syncwarp();
  pycute_cluster_sync();
}
