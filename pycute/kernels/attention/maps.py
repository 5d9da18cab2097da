"""Where each work tile's tensor maps come from. A dense batch's tiles read the kernel's own four maps (the batch a
map mode). Packed sequences of different lengths (``varlen``) read maps bounded by their own sequence: the load
warp retargets this CTA's copies of the four maps at the tile's sequence (``TmaPlan.retarget``: the base address at
the sequence's first row, the row count its length; ``tensormap.replace``, published with
``tensormap.cp_fenceproxy``), so a load past the sequence's end fills zeros and the store of O writes nothing past
its last row -- nothing is read or written outside a sequence.

A CTA keeps two sets of maps, used by its tiles in turn (``slot``: the tile's Q fill, counted modulo 2 from the Q
pipeline's state). The load warp rewrites a slot only after it has acquired the tile's Q stage, which the consumers
release once the tile two before it (one before, with one Q stage) is done: its loads landed and its O stores
complete (``attn_drain`` waits for the stores to finish, not only to read their tile), so nothing in flight still
reads the maps rewritten. The consumers' wait for the Q stage orders the new O map before their store, which
acquires it (PTX ISA #tensormap-instructions-tensormap-cp-fenceproxy)."""
from __future__ import annotations

import attrs

from ...errors import PlanError
from ...tensor import dynamic
from .plans import AttentionPlans

__all__ = ["AttentionMaps", "SLOTS"]

#: Map sets per CTA (varlen): the tiles use them in turn.
SLOTS = 2
_TENSORS = ("q", "k", "v", "o")


@attrs.frozen
class AttentionMaps:
    """``attn_maps`` (the four maps' sources), ``attn_fill_q`` (Q's fill, with the retargeting), ``attn_map`` /
    ``attn_o_map`` (a tile's map), the Q state's slot, ``attn_drain`` (the end of a tile's stores) for ``plans``'
    configuration; ``element_bytes`` of Q, K, V and O, ``head_dim``."""

    plans: AttentionPlans
    varlen: bool
    q_stages: int
    head_dim: int
    element_bytes: int

    def __attrs_post_init__(self) -> None:
        if self.varlen and self.q_stages > SLOTS:
            raise PlanError(f"attention: packed sequences take at most {SLOTS} Q stages (a CTA's {SLOTS} map sets "
                            f"follow the tiles' Q fills), not {self.q_stages}")

    def _retargets(self) -> list[str]:
        p = self.plans
        plans = (p.q.load("q"), p.k.load("k"), p.v.load("v"), p.store_o.tma)
        rows = (dynamic("rows"), None, None, None)
        return [plan.retarget(extents=rows).cuda(f"attn_retarget_{name}").replace('#include "pycute/tma.cuh"\n', "")
                for plan, name in zip(plans, _TENSORS)]

    def cuda(self) -> str:
        slot = {1: ("st.phase ^ 1u", "st.phase"), 2: ("st.index", "st.index")}.get(self.q_stages, ("0u", "0u"))
        where = "this CTA's, pointed at the tile's sequence by the load warp (packed sequences)" if self.varlen \
            else "the kernel's own (a dense batch)"
        out = ["// A tile's tensor maps: " + where,
               "struct attn_maps { const pycute_tensor_map* map[4]; const char* base[4]; pycute_tensor_map* ws; };",
               "typedef const pycute_tensor_map* attn_map_t;",
               "__device__ __forceinline__ attn_maps attn_maps_of(attn_map_t q, attn_map_t k, attn_map_t v, "
               "attn_map_t o,",
               "    const void* pq, const void* pk, const void* pv, const void* po, pycute_tensor_map* ws) {",
               "  return attn_maps{{q, k, v, o}, {(const char*)pq, (const char*)pk, (const char*)pv, (const char*)po},",
               "                   ws};", "}",
               "// The tile's map set: its Q fill modulo 2, from the producer's or the consumers' Q state.",
               f"__device__ __forceinline__ unsigned attn_producer_slot(const q_state& st) {{ return {slot[0]}; }}",
               f"__device__ __forceinline__ unsigned attn_consumer_slot(const q_state& st) {{ return {slot[1]}; }}"]
        if self.varlen:
            out += self._retargets() + self._varlen()
        else:
            out += ["// Tensor i (Q, K, V, O)'s map for the tile in map set `slot`.",
                    "__device__ __forceinline__ const void* attn_map(const attn_maps& m, unsigned, int i) {",
                    "  return m.map[i];", "}",
                    "__device__ __forceinline__ const void* attn_o_map(const attn_maps& m, unsigned) {",
                    "  return m.map[3];", "}",
                    "__device__ __forceinline__ void attn_forget_maps() {}"]
        out += self._fill_q() + self._drain()
        return "\n".join(out) + "\n"

    def _varlen(self) -> list[str]:
        d, e = self.head_dim, self.element_bytes
        return [
            f"__shared__ int attn_map_seq[{SLOTS}];                  // each map set's sequence (-1: none yet)",
            "__shared__ __align__(128) unsigned char attn_map_scratch[128];   // a map being edited",
            "__device__ __forceinline__ void attn_forget_maps() {",
            f"  for (int s = 0; s < {SLOTS}; ++s) attn_map_seq[s] = -1;", "}",
            "__device__ __forceinline__ pycute_tensor_map* attn_ws(const attn_maps& m, unsigned slot, int i) {",
            f"  return m.ws + (blockIdx.x * {SLOTS}u + slot) * 4u + (unsigned)i;", "}",
            "__device__ __forceinline__ const void* attn_map(const attn_maps& m, unsigned slot, int i) {",
            "  return attn_ws(m, slot, i);", "}",
            "// The consumers' O map, acquired (the load warp published it before it filled the tile's Q stage).",
            "__device__ __forceinline__ const void* attn_o_map(const attn_maps& m, unsigned slot) {",
            "  pycute_tensormap_acquire_gpu(attn_ws(m, slot, 3));", "  return attn_ws(m, slot, 3);", "}",
            "// The load warp points map set `slot` at the tile's sequence (rows of contiguous (total, heads,",
            "// head_dim) tensors), unless it already is, and acquires the loads' maps.",
            "__device__ __forceinline__ void attn_retarget(const attn_maps& m, unsigned slot, const attn_tile& t,",
            "                                              const attn_problem& pr) {",
            "  if (attn_map_seq[slot] == t.seq) return;",
            "  const unsigned smap = pycute_smem_address(attn_map_scratch);",
            f"  const long long q_row = (long long)pr.heads * {d * e};",
            f"  const long long kv_row = (long long)(pr.heads / pr.group) * {d * e};",
            "  const int k0 = pr.cu_k[t.seq], sk = max(1, t.seqlen_k);    // a map has at least one row",
            "  attn_retarget_q(m.map[0], attn_ws(m, slot, 0), smap, m.base[0] + t.q0 * q_row, t.seqlen_q);",
            "  attn_retarget_k(m.map[1], attn_ws(m, slot, 1), smap, m.base[1] + k0 * kv_row, sk);",
            "  attn_retarget_v(m.map[2], attn_ws(m, slot, 2), smap, m.base[2] + k0 * kv_row, sk);",
            "  attn_retarget_o(m.map[3], attn_ws(m, slot, 3), smap, m.base[3] + t.q0 * q_row, t.seqlen_q);",
            "  for (int i = 0; i < 3; ++i) pycute_tensormap_acquire_gpu(attn_ws(m, slot, i));",
            "  __syncwarp();",
            "  if (pycute_elect_one_sync()) attn_map_seq[slot] = t.seq;",
            "  __syncwarp();", "}"]

    def _fill_q(self) -> list[str]:
        retarget = ["  attn_retarget(m, slot, t, pr);"] if self.varlen else []
        return ["// Q's fill for tile t (the load warp): acquire its stage, point the tile's map set at its sequence,",
                "// issue Q's load; the map set's slot.",
                "__device__ __forceinline__ unsigned attn_fill_q(unsigned bars, q_state& st, unsigned smem, "
                "const attn_maps& m,",
                "                                                const attn_tile& t, const attn_problem& pr) {",
                "  const unsigned slot = attn_producer_slot(st), full = q_producer_acquire(bars, st);", *retarget,
                "  if (pycute_elect_one_sync()) q_q(attn_map(m, slot, 0), smem, full, t.m, 0, t.h, t.b, "
                "st.index);",
                "  st.advance();", "  return slot;", "}"]

    def _drain(self) -> list[str]:
        wait = ["  if (thread == 0u) pycute_bulk_wait_group<0>();    // written, not only read: its map is rewritten",
                f"  pycute_named_barrier_sync(EPILOGUE_BARRIER + warpgroup, {self.plans.store_o.threads}u);"] \
            if self.varlen else \
            ["  store_o_drain(thread, EPILOGUE_BARRIER + warpgroup);"]
        return ["// The end of a tile's O store, before its Q stage (and map set) go back to the load warp.",
                "__device__ __forceinline__ void attn_drain(unsigned thread, unsigned warpgroup) {", *wait, "}"]
