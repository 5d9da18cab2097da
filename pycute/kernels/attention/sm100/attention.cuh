// The sm_100a attention forward kernel's body, O = softmax(scale Q K^T) V (pycute/kernels/attention/sm100).
//
// The only hand-written CUDA of the kernel: every function it calls is generated from its plans (plans.py, kernel.py,
// softmax.py), its constants (THREADS, LOAD_WARP, MMA_WARP) come from its configuration; both precede it.
// Roles: warps 0..3 run the softmax (S from TMEM, P and O's rescale into TMEM, O's store), the load warp issues the
// TMA loads of Q, K and V, the MMA warp issues S = Q K^T and O += P V with tcgen05.mma (S, P and O in TMEM). A tile's
// key blocks are walked from the last down (the ones that need a mask first); the MMA warp multiplies S of the next
// block (into the other S buffer) before O += P V of this one, so S and the softmax overlap.
// A dense batch: (batch, seqlen, heads, head_dim) Q, K, V and O; group query heads per key / value head.

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attention_sm100(const __grid_constant__ pycute_tensor_map map_q, const __grid_constant__ pycute_tensor_map map_k,
                const __grid_constant__ pycute_tensor_map map_v, const __grid_constant__ pycute_tensor_map map_o,
                float* lse, int seqlen_q, int seqlen_k, int heads, int group, int batch, float scale_log2) {
  extern __shared__ unsigned char raw[];
  __shared__ attn_barrier_array bars;
  __shared__ unsigned tmem_slot;
  const unsigned smem = attn_buffer(raw), warp = pycute_warp_index();
  const attn_barriers b = attn_barriers_at(bars);
  const attn_problem pr = attn_problem_of(seqlen_q, seqlen_k, heads, group, batch, 0, nullptr, nullptr);
  const unsigned tmem = attn_start(b, pycute_smem_address(&tmem_slot), warp == MMA_WARP);
  if (warp == LOAD_WARP) {                      // every lane waits for a stage, one issues
    attn_states st = attn_load_start();
    for (unsigned w = attn_first(pr); w < pr.units; w = attn_next(w, pr)) {
      const attn_tile t = attn_tile_at(w, pr);
      q_fill(b.q, st.q, smem, &map_q, t.m, 0, t.h, t.b);
      k_fill(b.k, st.k, smem, &map_k, t.end - 1, 0, t.kv_h, t.b);
      for (int n = t.end - 1; n >= 0; --n) {      // K of the block before this one, then V of this one
        if (n > 0) k_fill(b.k, st.k, smem, &map_k, n - 1, 0, t.kv_h, t.b);
        v_fill(b.v, st.v, smem, &map_v, n, 0, t.kv_h, t.b);
      }
    }
  } else if (warp == MMA_WARP) {
    attn_states st = attn_mma_start();
    for (unsigned w = attn_first(pr); w < pr.units; w = attn_next(w, pr)) {
      const attn_tile t = attn_tile_at(w, pr);
      attn_mma_begin(b, st);
      attn_qk(b, st, smem, tmem);                 // S of the last key block
      for (int n = t.end - 2; n >= 0; --n) {      // S of block n, then O += P V of block n + 1
        attn_qk(b, st, smem, tmem);
        attn_pv(b, st, smem, tmem, n < t.end - 2);
      }
      attn_pv(b, st, smem, tmem, t.end > 1);      // O += P V of block 0
      attn_mma_end(b, st);
    }
  } else if (warp < LOAD_WARP) {
    attn_states st = attn_softmax_start();
    attn_registers r;
    r.stores = 0;
    const unsigned thread = attn_softmax_thread();
    for (unsigned w = attn_first(pr); w < pr.units; w = attn_next(w, pr)) {
      const attn_tile t = attn_tile_at(w, pr);
      for (int n = t.end - 1; n >= 0; --n) {
        attn_read_s(b, st, r, tmem);
        if (n >= t.mask_from) attn_mask(r, thread, t, n);
        attn_softmax(r, scale_log2, n == t.end - 1);
        attn_write_p(b, st, r, tmem, n < t.end - 1);
      }
      attn_finish(b, st, r, lse, thread, t, scale_log2, tmem, smem, &map_o);
    }
    attn_store_finish(thread);
  }
  attn_end(tmem, warp == MMA_WARP);
}
