// The attention forward kernel's body, O = softmax(scale Q K^T) V on sm_90a (pycute/kernels/attention).
//
// The only hand-written CUDA of the kernel: every function it calls is generated from its plans (plans.py), its
// constants (THREADS, ...) come from its configuration (kernel.py); both precede it in the translation unit.
// Roles: warpgroup 0 produces (its first warp loads Q, K and V with TMA; the warpgroup gives registers back),
// warpgroups 1.. consume, 64 rows of the tile each. A consumer walks the tile's key blocks from the last down: in
// its turn at the tensor cores it issues S = Q K_n^T and O += P V_{n+1} together, then masks and exponentiates S
// (the online softmax) while P V runs, rescales O once it has landed and converts S to the next P in registers.
// Packed sequences (cu_seqlens_q / _k, the tensors q, k, v, o and this CTA's map sets in `maps`) read maps the
// load warp points at each tile's sequence; a dense batch passes them as null and reads the four maps given.

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attention(const __grid_constant__ pycute_tensor_map map_q, const __grid_constant__ pycute_tensor_map map_k,
          const __grid_constant__ pycute_tensor_map map_v, const __grid_constant__ pycute_tensor_map map_o,
          float* lse, const int* cu_seqlens_q, const int* cu_seqlens_k, const void* q, const void* k, const void* v,
          void* o, pycute_tensor_map* maps, int seqlen_q, int seqlen_k, int heads, int group, int batch, int total_q,
          float scale_log2) {
  extern __shared__ unsigned char raw[];
  __shared__ attn_barrier_array bars;
  const unsigned smem = attn_buffer(raw), wg = pycute_warpgroup_index();
  const attn_barriers b = attn_barriers_at(bars);
  const attn_problem pr = attn_problem_of(seqlen_q, seqlen_k, heads, group, batch, total_q, cu_seqlens_q, cu_seqlens_k);
  const attn_maps m = attn_maps_of(&map_q, &map_k, &map_v, &map_o, q, k, v, o, maps);
  if (threadIdx.x == 0) attn_init(b);
  __syncthreads();
  if (wg == 0) {
    pycute_setmaxnreg_dec<PRODUCER_REGISTERS>();
    if (pycute_warp_index() == 0) {             // the load warp: every lane waits for a stage, one issues
      attn_states st = attn_producer_start();
      for (unsigned w = attn_first(pr); w < pr.units; w = attn_next(w, pr)) {
        const attn_tile t = attn_tile_at(w, pr);
        const unsigned slot = attn_fill_q(b.q, st.q, smem, m, t, pr);
        k_fill(b.k, st.k, smem, attn_map(m, slot, 1), t.end - 1, 0, t.kv_h, t.b);
        for (int n = t.end - 1; n >= 0; --n) {    // K of the block before this one, then V of this one
          if (n > 0) k_fill(b.k, st.k, smem, attn_map(m, slot, 1), n - 1, 0, t.kv_h, t.b);
          v_fill(b.v, st.v, smem, attn_map(m, slot, 2), n, 0, t.kv_h, t.b);
        }
      }
    }
  } else {
    pycute_setmaxnreg_inc<CONSUMER_REGISTERS>();
    const unsigned cw = wg - 1u, thread = pycute_warpgroup_thread();
    attn_states st = attn_consumer_start(cw);
    attn_registers r;
    for (unsigned w = attn_first(pr); w < pr.units; w = attn_next(w, pr)) {
      const attn_tile t = attn_tile_at(w, pr);
      q_consumer_wait(b.q, st.q);
      k_consumer_wait(b.k, st.k);
      mma_wait(cw);
      qk(smem, smem, r.s, 0u, cw, st.k.index, st.q.index);     // S of the last key block
      mma_pass(cw);
      pycute_wgmma_wait_group<0>();
      k_consumer_advance(b.k, st.k);
      if (t.mask_from < t.end) attn_mask(r, thread, t, cw, t.end - 1);
      attn_softmax(r, scale_log2, true);
      attn_to_p(r);
      for (int n = t.end - 2; n >= 0; --n) {      // S of block n and O += P V of block n + 1, in flight together
        k_consumer_wait(b.k, st.k);
        mma_wait(cw);
        qk(smem, smem, r.s, 0u, cw, st.k.index, st.q.index);
        v_consumer_wait(b.v, st.v);
        pv(r.p, smem, r.o, n < t.end - 2 ? 1u : 0u, st.v.index);
        mma_pass(cw);
        pycute_wgmma_wait_group<1>();             // S is in
        k_consumer_advance(b.k, st.k);
        if (n >= t.mask_from) attn_mask(r, thread, t, cw, n);
        attn_softmax(r, scale_log2, false);
        pycute_wgmma_wait_group<0>();             // O is in
        v_consumer_advance(b.v, st.v);
        attn_rescale(r);
        attn_to_p(r);
      }
      v_consumer_wait(b.v, st.v);
      pv(r.p, smem, r.o, t.end > 1 ? 1u : 0u, st.v.index);     // O += P V of block 0
      pycute_wgmma_wait_group<0>();
      v_consumer_advance(b.v, st.v);
      attn_finish(r, lse, thread, t, cw, scale_log2);
      attn_store_o(m, st.q, smem, thread, r, t, cw);
      attn_drain(thread, cw);
      q_consumer_advance(b.q, st.q);
    }
  }
}
