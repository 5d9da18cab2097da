"""The softmax warps' functions on sm_100a, written against the fragments of their ``tcgen05.ld`` / ``st`` plans
(never a register index): S read from TMEM (``s_read``), masked by its values' (row, column) (``fragment_coords``),
reduced along its rows (``make_reduction``: with ``32x32b`` a thread holds its whole row, so no shuffle), the online
softmax step of the Hopper kernel (``softmax.online_step``: the same base-2 update, the same treatment of a row that
saw only masked keys), P converted (``make_fragment_convert`` into ``p_write``'s fragment) and written to TMEM, O
rescaled in TMEM chunk by chunk (``o_read`` / ``o_write``: O's row slots are S's, checked), and at a tile's end O
normalised and stored (``store_o``) and each row's log-sum-exp written.

The tcgen05 ordering rules each function keeps (PTX ISA #tcgen05-memory-consistency-model): a ``tcgen05.ld`` /
``st`` is complete only after ``tcgen05.wait::ld`` / ``::st`` (in the plans' functions); before a thread signals an
mbarrier that another thread's ``tcgen05.mma`` waits on, it runs ``tcgen05.fence::before_thread_sync``; after a
wait on an mbarrier a ``tcgen05.commit`` or another thread's arrival completed, ``tcgen05.fence::after_thread_sync``
before its own tcgen05 operations."""
from __future__ import annotations

import attrs

from ....copy import EpiloguePlan, Tcgen05LdStPlan
from ....errors import PlanError
from ....mma import make_fragment_convert, make_reduction
from ....tensor import fragment_coords
from ..softmax import check_row_state, lse_lines, math_lines, online_step

__all__ = ["TmemSoftmax"]


@attrs.frozen
class TmemSoftmax:
    """``attn_registers`` (S, P and the per-row state), ``attn_read_s``, ``attn_mask``, ``attn_softmax``,
    ``attn_write_p`` (O's rescale, P's conversion and store) and ``attn_finish`` (O normalised and stored, the
    log-sum-exp) for S's, P's and O's plans, ``block_n`` keys a block, ``chunks`` chunks of O, ``slots`` shared
    tiles of O's store."""

    s_read: Tcgen05LdStPlan
    p_write: Tcgen05LdStPlan
    o_read: Tcgen05LdStPlan
    o_write: Tcgen05LdStPlan
    store_o: EpiloguePlan
    block_n: int
    chunks: int
    slots: int
    o_chunk: int
    staging: int

    def check(self) -> None:
        """What the functions rely on, from the fragments: O's chunk is read and written in one register order,
        O's row slots are S's rows (one per-row state scales both), one lane per row has column base 0 (it writes
        the row's log-sum-exp)."""
        s, o = fragment_coords(self.s_read), fragment_coords(self.o_read)
        w = fragment_coords(self.o_write)
        if (o.row != w.row).any() or (o.col != w.col).any():
            raise PlanError("attention (sm_100a): O's tcgen05.ld and tcgen05.st fragments differ; its rescale writes "
                            "each value back where it read it")
        check_row_state(s, o, "attention (sm_100a)")

    def cuda(self) -> str:
        self.check()
        s, o = fragment_coords(self.s_read), fragment_coords(self.o_read)
        p_registers = self.p_write.registers
        return "\n".join([s.cuda("s"), o.cuda("o"), make_reduction(self.s_read).cuda("s"),
                          make_fragment_convert(self.p_write.fragment_tensor, self.s_read).cuda("s_to_p"),
                          *self._state(p_registers), *math_lines(), *self._read(), *self._mask(),
                          *online_step(fence=False), *self._write(), *self._finish()]) + "\n"

    def _state(self, p_registers: int) -> list[str]:
        return [f"constexpr int p_registers = {p_registers};",
                "// The softmax warps' registers: S, P and, per row slot, the running max, sum and the last step's "
                "rescale;",
                "// `stores`: O chunks stored so far (their shared tiles are used in turn).",
                "struct attn_registers {",
                "  float s[s_values];", "  unsigned p[p_registers];",
                "  float max[s_row_slots], sum[s_row_slots], scale[s_row_slots];", "  unsigned stores;", "};",
                "// The softmax warps' thread of the fragments: warp w % 4 reads TMEM lane quadrant w % 4.",
                "__device__ __forceinline__ unsigned attn_softmax_thread() {",
                "  return PYCUTE_TMEM_QUADRANT_LANES * (pycute_warp_index() % 4u) + threadIdx.x % 32u;", "}"]

    def _read(self) -> list[str]:
        return ["// S of the next key block: wait for its MMA's commit, read it (tcgen05.ld, waited), give its TMEM",
                "// back.",
                "__device__ __forceinline__ void attn_read_s(const attn_barriers& b, attn_states& st, "
                "attn_registers& r, unsigned tmem) {",
                "  tmem_s_consumer_wait(b.s, st.s);",
                "  pycute_tcgen05_fence_after_thread_sync();",
                "  unsigned raw[s_values];",
                "  s_read(tmem, raw, st.s.index);",
                "#pragma unroll", "  for (int v = 0; v < s_values; ++v) r.s[v] = __uint_as_float(raw[v]);",
                "  pycute_tcgen05_fence_before_thread_sync();   // the reads, before the MMA that refills the buffer",
                "  tmem_s_consumer_advance(b.s, st.s);", "}"]

    def _mask(self) -> list[str]:
        return ["// Scores past each query's last key (past seqlen_k, or past the causal diagonal) become -inf.",
                "__device__ __forceinline__ void attn_mask(attn_registers& r, unsigned t, const attn_tile& tile, "
                "int n) {",
                f"  const int row0 = attn_first_row(tile, 0u), col0 = n * {self.block_n};",
                "  s_for_each(t, [&](int v, int row, int col) {",
                "    if (col0 + col > attn_last_key(row0 + row, tile.seqlen_q, tile.seqlen_k)) r.s[v] = -attn_inf();",
                "  });", "}"]

    def _write(self) -> list[str]:
        return ["// O's rows rescaled in TMEM by the last step's scale, chunk by chunk (read, scale, write back).",
                "__device__ __forceinline__ void attn_rescale_o(const attn_registers& r, unsigned tmem) {",
                "#pragma unroll 1",
                f"  for (unsigned c = 0; c < {self.chunks}u; ++c) {{",
                "    unsigned v_[o_values];",
                "    o_read(tmem, v_, c);",
                "#pragma unroll",
                "    for (int v = 0; v < o_values; ++v) v_[v] = __float_as_uint(__uint_as_float(v_[v]) * "
                "r.scale[o_row_slot(v)]);",
                "    o_write(tmem, v_, c);", "  }", "}",
                "// P of this key block into TMEM, once the P V that read the last P (and wrote O) has completed; O",
                "// rescaled first unless this is the tile's first block (its P V overwrites O); then the MMA warp may",
                "// multiply.",
                "__device__ __forceinline__ void attn_write_p(const attn_barriers& b, attn_states& st, "
                "attn_registers& r, unsigned tmem, bool rescale) {",
                "  tmem_p_producer_acquire(b.p, st.p);",
                "  pycute_tcgen05_fence_after_thread_sync();   // after the commit of the P V that read P and wrote O",
                "  if (rescale) attn_rescale_o(r, tmem);",
                "  s_to_p(r.s, r.p);",
                "  p_write(tmem, r.p);",
                "  pycute_tcgen05_fence_before_thread_sync();   // P and O written, before the MMA warp's P V",
                "  tmem_p_producer_commit(b.p, st.p);",
                "  st.p.advance();", "}"]

    def _finish(self) -> list[str]:
        """O normalised and stored chunk by chunk, each row's log-sum-exp written by the row's lane whose columns
        start at 0."""
        s = fragment_coords(self.s_read)
        out = ["// The tile's end: the rows' sums over their lanes; once the last P V has completed, O read chunk by",
               "// chunk, normalised (a row with no key: 0), converted and stored through the shared tiles in turn",
               "// (the TMEM given back after the last read); the log-sum-exp of each row below seqlen_q (natural",
               "// log of the scaled scores; -inf for no key), written by the lane whose columns start at 0.",
               "__device__ __forceinline__ void attn_finish(const attn_barriers& b, attn_states& st, attn_registers& r,"
               " float* lse,",
               "                                            unsigned t, const attn_tile& tile, float scale_log2, "
               "unsigned tmem,",
               "                                            unsigned smem, const void* map_o) {",
               "  s_row_allreduce_sum(r.sum);",
               "  float inv[s_row_slots];",
               "#pragma unroll",
               "  for (int i = 0; i < s_row_slots; ++i) inv[i] = r.sum[i] > 0.f ? 1.f / r.sum[i] : 0.f;",
               "  tmem_o_consumer_wait(b.o, st.o);",
               "  pycute_tcgen05_fence_after_thread_sync();",
               "#pragma unroll 1",
               f"  for (unsigned c = 0; c < {self.chunks}u; ++c, ++r.stores) {{",
               "    unsigned v_[o_values];",
               "    o_read(tmem, v_, c);",
               f"    if (c + 1u == {self.chunks}u) {{   // the last read: the next tile's P V may overwrite O",
               "      pycute_tcgen05_fence_before_thread_sync();",
               "      tmem_o_consumer_advance(b.o, st.o);", "    }",
               "    float o[o_values];",
               "#pragma unroll   // a row that saw no key is 0, whatever its masked products held",
               "    for (int v = 0; v < o_values; ++v) o[v] = inv[o_row_slot(v)] > 0.f ? "
               "__uint_as_float(v_[v]) * inv[o_row_slot(v)] : 0.f;",
               "    store_o_wait(t);   // the TMA store that last read this chunk's shared tile has",
               f"    store_o(map_o, smem + {self.staging}u, t, o, attn_first_row(tile, 0u), int(c) * {self.o_chunk}, "
               f"tile.h, tile.b, r.stores % {self.slots}u);",
               "  }",
               *lse_lines(s, "0u")]
        return out + ["}",
                      "// After the last tile: thread 0 waits until its TMA stores of O are complete.",
                      "__device__ __forceinline__ void attn_store_finish(unsigned t) {",
                      "  if (t == 0u) pycute_bulk_wait_group<0>();", "}"]
