"""The attention kernel's source (``kernel_source``, the kernels' protocol): the configuration's constants, the
functions every plan generates, then the hand-written body ``attention.cuh`` read as it is. ``body_lines`` counts
the body's hand-written lines as issue 34 counts the GEMM's."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ...arch.sm90.mbarrier import MBARRIER_BYTES
from ...dtypes import f32
from ...mma import WgmmaPlan, wgmma_accumulator
from ..source import handwritten_lines, kernel_source, read_body
from .maps import AttentionMaps
from .plans import EPILOGUE_BARRIER, AttentionPlans
from .softmax import OnlineSoftmax
from .tiles import AttentionTiles

__all__ = ["BODY", "ENTRY", "Built", "source", "body_lines", "HANDWRITTEN_LINES"]

BODY = Path(__file__).with_name("attention.cuh")
#: The kernel's entry.
ENTRY = "attention"
#: The body's hand-written lines (issue 40: at most 60), held by a test.
HANDWRITTEN_LINES = 59


class Built(Protocol):
    """What the source reads of a configuration (``AttentionConfig``)."""

    @property
    def threads(self) -> int: ...

    @property
    def producer_registers(self) -> int: ...

    @property
    def consumer_registers(self) -> int: ...

    @property
    def block_m(self) -> int: ...

    @property
    def block_n(self) -> int: ...

    @property
    def causal(self) -> bool: ...

    @property
    def varlen(self) -> bool: ...

    @property
    def q_stages(self) -> int: ...

    @property
    def head_dim(self) -> int: ...

    @property
    def plans(self) -> AttentionPlans: ...


def constants(config: Built) -> dict[str, bool | int]:
    """The compile-time constants ``attention.cuh`` reads."""
    c = config
    return {"THREADS": c.threads, "PRODUCER_REGISTERS": c.producer_registers,
            "CONSUMER_REGISTERS": c.consumer_registers, "EPILOGUE_BARRIER": EPILOGUE_BARRIER}


def _no_turns() -> str:
    return "\n".join(["// one consumer warpgroup: no turns to take",
                      "__device__ __forceinline__ void mma_start(unsigned) {}",
                      "__device__ __forceinline__ void mma_wait(unsigned) {}",
                      "__device__ __forceinline__ void mma_pass(unsigned) {}"])


def _shared(align: int) -> str:
    """The dynamic buffer's base, the three pipelines' barriers in one static array (each pipeline's at its own
    shared address), their initialisation and the roles' states in the three rings."""
    w = MBARRIER_BYTES
    return "\n".join([
        f"// the dynamic buffer's base, {align}-byte aligned as the rings' tiles are",
        "__device__ __forceinline__ unsigned attn_buffer(const unsigned char* raw) {",
        f"  return (pycute_smem_address(raw) + {align - 1}u) & ~{align - 1}u;", "}",
        "// the three pipelines' barriers (8-byte mbarriers, PTX ISA #parallel-synchronization-and-communication-"
        "instructions-mbarrier)",
        f"struct __align__({w}) attn_barrier_array {{",
        "  unsigned long long words[q_barrier_words + k_barrier_words + v_barrier_words];", "};",
        "struct attn_barriers { unsigned q, k, v; };   // each pipeline's barriers' shared address",
        "__device__ __forceinline__ attn_barriers attn_barriers_at(const attn_barrier_array& bars) {",
        "  const unsigned q = pycute_smem_address(bars.words);",
        f"  return attn_barriers{{q, q + q_barrier_words * {w}u, q + (q_barrier_words + k_barrier_words) * {w}u}};",
        "}",
        "// One thread initialises every barrier (and forgets the map sets' sequences); then a CTA barrier before any",
        "// role runs.",
        "__device__ __forceinline__ void attn_init(const attn_barriers& b) {",
        "  q_init(b.q);", "  k_init(b.k);", "  v_init(b.v);", "  attn_forget_maps();", "}",
        "struct attn_states { q_state q; k_state k; v_state v; };   // a role's place in each ring",
        "__device__ __forceinline__ attn_states attn_producer_start() {",
        "  return attn_states{q_producer_start(), k_producer_start(), v_producer_start()};", "}",
        "// A consumer warpgroup's start: its place in each ring, and (group 0) the first turn at the tensor cores.",
        "__device__ __forceinline__ attn_states attn_consumer_start(unsigned warpgroup) {",
        "  mma_start(warpgroup);",
        "  return attn_states{q_consumer_start(), k_consumer_start(), v_consumer_start()};", "}"])


#: The epilogue plan's store of a consumer warpgroup's O: its rows of the tile, through the tile's O map, staged in
#: its part of the tile's Q stage, on its own named barrier.
_STORE_O = """__device__ __forceinline__ void attn_store_o(const attn_maps& m, const q_state& st, unsigned smem,
                                             unsigned thread, const attn_registers& r, const attn_tile& t,
                                             unsigned warpgroup) {
  store_o(attn_o_map(m, attn_consumer_slot(st)), smem, thread, r.o, attn_first_row(t, warpgroup), 0, t.h, t.b,
          st.index, warpgroup, EPILOGUE_BARRIER + warpgroup);
}"""


def generated(config: Built) -> list[str]:
    """Every plan's functions, in the order the body's helpers need them."""
    c, p = config, config.plans
    # a warpgroup's 64 rows of S (the QK MMA's accumulator slice), its O and its P (the PV MMA's D and A)
    softmax = OnlineSoftmax(wgmma_accumulator(f32, 64, c.block_n), p.pv.d, p.pv.a,           # type: ignore[arg-type]
                            c.block_n)
    qk: WgmmaPlan = p.qk
    maps = AttentionMaps(p, c.varlen, c.q_stages, c.head_dim, 2)
    return [p.q.cuda(), p.k.cuda(), p.v.cuda(), qk.cuda("qk", commit=True, warpgroup_arg=True),
            p.pv.cuda("pv", commit=True), p.store_o.cuda("store_o"), p.sched.cuda(),
            p.turns.cuda() if p.turns is not None else _no_turns(),
            AttentionTiles(c.block_m, c.block_n, c.causal, c.varlen).cuda(), maps.cuda(),
            _shared(p.q.ring("q").base_align), softmax.cuda(), _STORE_O]


def source(config: Built) -> str:
    """The whole translation unit: the constants, the plans' functions, then the body."""
    return kernel_source(repr(config), constants(config), generated(config), BODY)


def body_lines() -> int:
    """The hand-written lines of the body (blank, comment and lone-brace lines not counted)."""
    return handwritten_lines(read_body(BODY), ENTRY)
