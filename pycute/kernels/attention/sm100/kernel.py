"""The sm_100a attention kernel's source (``kernel_source``): the configuration's constants, the functions every
plan generates (``plans.py``), the roles' per-step functions composed from them here, then the hand-written body
``attention.cuh``. ``body_lines`` counts the body's hand-written lines as the Hopper kernel's are counted.

Roles, one CTA of 192 threads per work tile at a time (persistent over the scheduler's tiles):

* warps 0..3, the softmax warps: S from TMEM, mask, online softmax, P and O's rescale into TMEM, O's store and the
  log-sum-exp (``softmax.py``); warp w reads TMEM lane quadrant w (PTX ISA #tcgen05-memory-layout);
* warp ``LOAD_WARP``: every lane waits for a stage, one issues its TMA load (``<ring>_fill``);
* warp ``MMA_WARP``: allocates TMEM; one lane issues every ``tcgen05.mma`` and ``tcgen05.commit`` (the commit
  tracks the MMAs its own thread issued, PTX ISA #tcgen05-instructions-tcgen05-commit)."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ....arch.sm90.mbarrier import MBARRIER_BYTES
from ...source import handwritten_lines, kernel_source, read_body
from ..tiles import AttentionTiles
from .plans import BLOCK_M, EPILOGUE_BARRIER, O_CHUNK, O_SLOTS, SOFTMAX_WARPS, Sm100Plans
from .softmax import TmemSoftmax

__all__ = ["BODY", "ENTRY", "HANDWRITTEN_LINES", "LOAD_WARP", "MMA_WARP", "WARPS", "source", "body_lines",
           "PIPELINES"]

BODY = Path(__file__).with_name("attention.cuh")
#: The kernel's entry.
ENTRY = "attention_sm100"
#: The body's hand-written lines, held by a test.
HANDWRITTEN_LINES = 42
#: The load warp and the MMA warp, after the softmax warps.
LOAD_WARP, MMA_WARP = SOFTMAX_WARPS, SOFTMAX_WARPS + 1
WARPS = SOFTMAX_WARPS + 2
#: The pipelines, in the barrier array's order, by the short names the body's structs use.
PIPELINES = (("q", "q"), ("k", "k"), ("v", "v"), ("s", "tmem_s"), ("p", "tmem_p"), ("o", "tmem_o"))


class Built(Protocol):
    """What the source reads of a configuration (``Sm100Config``)."""

    @property
    def block_n(self) -> int: ...

    @property
    def head_dim(self) -> int: ...

    @property
    def causal(self) -> bool: ...

    @property
    def plans(self) -> Sm100Plans: ...


def constants() -> dict[str, bool | int]:
    """The compile-time constants ``attention.cuh`` reads."""
    return {"THREADS": 32 * WARPS, "LOAD_WARP": LOAD_WARP, "MMA_WARP": MMA_WARP, "EPILOGUE_BARRIER": EPILOGUE_BARRIER}


def _shared(plans: Sm100Plans) -> str:
    """The dynamic buffer's base, the six pipelines' barriers in one static array, the roles' states, the start
    (barriers initialised, TMEM allocated) and the end (TMEM freed)."""
    w, cols = MBARRIER_BYTES, plans.alloc.columns
    words = " + ".join(f"{full}_barrier_words" for _, full in PIPELINES)
    fields = ", ".join(short for short, _ in PIPELINES)
    offsets, at = [], "0u"
    for short, full in PIPELINES:
        offsets.append(f"base + ({at}) * {w}u")
        at = f"{at} + {full}_barrier_words" if at != "0u" else f"{full}_barrier_words"
    align = plans.q.ring("q").base_align

    def start(role: str, sides: dict[str, str]) -> list[str]:
        parts = ", ".join(f"{full}_{sides[short]}_start()" for short, full in PIPELINES)
        return [f"__device__ __forceinline__ attn_states attn_{role}_start() {{", f"  return attn_states{{{parts}}};",
                "}"]
    return "\n".join([
        f"// the dynamic buffer's base, {align}-byte aligned as the rings' tiles are",
        "__device__ __forceinline__ unsigned attn_buffer(const unsigned char* raw) {",
        f"  return (pycute_smem_address(raw) + {align - 1}u) & ~{align - 1}u;", "}",
        "// the six pipelines' barriers (8-byte mbarriers, PTX ISA #parallel-synchronization-and-communication-"
        "instructions-mbarrier)",
        f"struct __align__({w}) attn_barrier_array {{", f"  unsigned long long words[{words}];", "};",
        f"struct attn_barriers {{ unsigned {fields}; }};   // each pipeline's barriers' shared address",
        "__device__ __forceinline__ attn_barriers attn_barriers_at(const attn_barrier_array& bars) {",
        "  const unsigned base = pycute_smem_address(bars.words);",
        f"  return attn_barriers{{{', '.join(offsets)}}};", "}",
        "struct attn_states { " + " ".join(f"{full}_state {short};" for short, full in PIPELINES) +
        " };   // a role's place in each ring",
        *start("load", {"q": "producer", "k": "producer", "v": "producer", "s": "consumer", "p": "consumer",
                        "o": "consumer"}),
        *start("mma", {"q": "consumer", "k": "consumer", "v": "consumer", "s": "producer", "p": "consumer",
                       "o": "producer"}),
        *start("softmax", {"q": "consumer", "k": "consumer", "v": "consumer", "s": "consumer", "p": "producer",
                           "o": "consumer"}),
        "// One thread initialises every barrier, the MMA warp allocates the TMEM (PTX ISA #tcgen05-memory-alloc-"
        "manage-instructions);",
        "// the tcgen05 fences around the CTA barrier order the allocation before every role's use of its address.",
        "__device__ __forceinline__ unsigned attn_start(const attn_barriers& b, unsigned slot, bool allocates) {",
        "  if (threadIdx.x == 0u) {",
        *(f"    {full}_init(b.{short});" for short, full in PIPELINES), "  }",
        "  if (allocates) {", f"    pycute_tmem_alloc<1>(slot, {cols}u);",
        "    pycute_tmem_relinquish_alloc_permit<1>();", "  }",
        "  pycute_tcgen05_fence_before_thread_sync();", "  __syncthreads();",
        "  pycute_tcgen05_fence_after_thread_sync();", "  unsigned tmem;",
        '  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(tmem) : "r"(slot) : "memory");', "  return tmem;", "}",
        "// After every role's last tile: every MMA, read and write of TMEM done, the allocating warp frees it.",
        "__device__ __forceinline__ void attn_end(unsigned tmem, bool allocates) {",
        "  pycute_tcgen05_fence_before_thread_sync();", "  __syncthreads();",
        f"  if (allocates) pycute_tmem_dealloc<1>(tmem, {cols}u);", "}"])


def _mma_role(plans: Sm100Plans) -> str:
    """The MMA warp's steps: a tile's start and end, S = Q K^T of a key block, O (+)= P V of a key block."""
    s_step = plans.s_read.column_shift(s=1)
    return "\n".join([
        "// A tile's start: its Q has landed and the softmax warps have read the last tile's O out of TMEM.",
        "__device__ __forceinline__ void attn_mma_begin(const attn_barriers& b, attn_states& st) {",
        "  q_consumer_wait(b.q, st.q);",
        "  tmem_o_producer_acquire(b.o, st.o);",
        "  pycute_tcgen05_fence_after_thread_sync();", "}",
        "// S = Q K^T of the next key block into the next S buffer; the commits free K's stage and fill the buffer",
        "// once the MMAs complete.",
        "__device__ __forceinline__ void attn_qk(const attn_barriers& b, attn_states& st, unsigned smem, "
        "unsigned tmem) {",
        "  k_consumer_wait(b.k, st.k);",
        "  tmem_s_producer_acquire(b.s, st.s);      // the softmax warps have read this buffer's last S",
        "  pycute_tcgen05_fence_after_thread_sync();",
        f"  if (pycute_elect_one_sync()) qk(smem, smem, tmem + st.s.index * {s_step}u, 0u, st.k.index, st.q.index);",
        "  __syncwarp();",
        "  k_consumer_advance(b.k, st.k);",
        "  tmem_s_producer_commit(b.s, st.s);",
        "  st.s.advance();", "}",
        "// O (+)= P V of the next key block (`accumulate` false: the tile's first), once the softmax warps have",
        "// written P (and rescaled O); the commits free V's stage and P once the MMAs complete.",
        "__device__ __forceinline__ void attn_pv(const attn_barriers& b, attn_states& st, unsigned smem, "
        "unsigned tmem, bool accumulate) {",
        "  tmem_p_consumer_wait(b.p, st.p);",
        "  v_consumer_wait(b.v, st.v);",
        "  pycute_tcgen05_fence_after_thread_sync();",
        "  if (pycute_elect_one_sync()) pv(smem, tmem, accumulate ? 1u : 0u, st.v.index);",
        "  __syncwarp();",
        "  v_consumer_advance(b.v, st.v);",
        "  tmem_p_consumer_advance(b.p, st.p);", "}",
        "// A tile's end: Q's stage is free, and O full, once every MMA issued has completed.",
        "__device__ __forceinline__ void attn_mma_end(const attn_barriers& b, attn_states& st) {",
        "  q_consumer_advance(b.q, st.q);",
        "  tmem_o_producer_commit(b.o, st.o);",
        "  st.o.advance();", "}"])


def generated(config: Built) -> list[str]:
    """Every plan's functions, in the order the body's helpers need them."""
    c, p = config, config.plans
    softmax = TmemSoftmax(p.s_read, p.p_write, p.o_read, p.o_write, p.store_o, c.block_n, c.head_dim // O_CHUNK,
                          O_SLOTS, O_CHUNK, p.v.smem_bytes)
    return [p.q.cuda(), p.k.cuda(), p.v.cuda(), p.tmem_s.cuda(), p.tmem_p.cuda(), p.tmem_o.cuda(),
            p.qk.cuda("qk"), p.pv.cuda("pv"), p.s_read.cuda("s_read"), p.p_write.cuda("p_write"),
            p.o_read.cuda("o_read"), p.o_write.cuda("o_write"), p.store_o.cuda("store_o"), p.sched.cuda(),
            AttentionTiles(BLOCK_M, c.block_n, c.causal).cuda(), _shared(p), _mma_role(p), softmax.cuda()]


def source(config: Built) -> str:
    """The whole translation unit: the constants, the plans' functions, then the body."""
    return kernel_source(repr(config), constants(), generated(config), BODY)


def body_lines() -> int:
    """The hand-written lines of the body (blank, comment and lone-brace lines not counted)."""
    return handwritten_lines(read_body(BODY), ENTRY)
