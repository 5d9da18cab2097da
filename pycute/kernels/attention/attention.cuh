// The attention forward kernel's body, O = softmax(scale Q K^T) V on sm_90a (pycute/kernels/attention).
//
// The only hand-written CUDA of the kernel: every function it calls is generated from its plans (plans.py), its
// constants (THREADS, ...) come from its configuration (kernel.py); both precede it in the translation unit.
// Roles: warpgroup 0 produces (its first warp loads Q, K and V with TMA; the warpgroup gives registers back),
// warpgroups 1.. consume, 64 rows of the tile each. A consumer walks the tile's key blocks from the last down: in
// its turn at the tensor cores it issues S = Q K_n^T and O += P V_{n+1} together, then masks and exponentiates S
// (the online softmax) while P V runs, rescales O once it has landed and converts S to the next P in registers.

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attention(const __grid_constant__ pycute_tensor_map map_q, const __grid_constant__ pycute_tensor_map map_k,
          const __grid_constant__ pycute_tensor_map map_v, const __grid_constant__ pycute_tensor_map map_o,
          float* lse, int seqlen_q, int seqlen_k, int heads, int group, int batch, float scale_log2) {
  extern __shared__ unsigned char raw[];
  __shared__ attn_barrier_array bars;
  const unsigned smem = attn_buffer(raw), wg = pycute_warpgroup_index(), units = attn_units(seqlen_q, batch, heads);
  const attn_barriers b = attn_barriers_at(bars);
  if (threadIdx.x == 0) attn_init(b);
  __syncthreads();
  if (wg == 0) {
    pycute_setmaxnreg_dec<PRODUCER_REGISTERS>();
    if (pycute_warp_index() == 0) {             // the load warp: every lane waits for a stage, one issues
      attn_states st = attn_producer_start();
      for (unsigned w = sched_first(); w < units; w = sched_next(w)) {
        const attn_tile t = attn_tile_at(w, seqlen_q, seqlen_k, batch, heads, group);
        k_fill(b.k, st.k, smem, &map_k, t.end - 1, 0, t.kv_h, t.b);
        q_fill(b.q, st.q, smem, &map_q, t.m, 0, t.h, t.b);
        for (int n = t.end - 1; n >= 0; --n) {    // K of the block before this one, then V of this one
          if (n > 0) k_fill(b.k, st.k, smem, &map_k, n - 1, 0, t.kv_h, t.b);
          v_fill(b.v, st.v, smem, &map_v, n, 0, t.kv_h, t.b);
        }
      }
    }
  } else {
    pycute_setmaxnreg_inc<CONSUMER_REGISTERS>();
    const unsigned cw = wg - 1u, thread = pycute_warpgroup_thread();
    attn_states st = attn_consumer_start();
    attn_registers r;
    mma_start(cw);
    for (unsigned w = sched_first(); w < units; w = sched_next(w)) {
      const attn_tile t = attn_tile_at(w, seqlen_q, seqlen_k, batch, heads, group);
      q_consumer_wait(b.q, st.q);
      k_consumer_wait(b.k, st.k);
      mma_wait(cw);
      qk(smem, smem, r.s, 0u, cw, st.k.index, st.q.index);     // S of the last key block
      mma_pass(cw);
      pycute_wgmma_wait_group<0>();
      k_consumer_advance(b.k, st.k);
      if (t.mask_from < t.end) attn_mask(r, thread, t, cw, t.end - 1, seqlen_q, seqlen_k);
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
        if (n >= t.mask_from) attn_mask(r, thread, t, cw, n, seqlen_q, seqlen_k);
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
      attn_finish(r, lse, thread, t, cw, seqlen_q, heads, scale_log2);
      store_o(&map_o, smem, thread, r.o, attn_first_row(t, cw), 0, t.h, t.b, st.q.index, cw, EPILOGUE_BARRIER + cw);
      store_o_drain(thread, EPILOGUE_BARRIER + cw);
      q_consumer_advance(b.q, st.q);
    }
  }
}
