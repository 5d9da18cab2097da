"""Standalone kernels for a plan: an issue-only probe (for SASS and PTX checks) and a full round trip.

Round trip, one CTA of 128 threads (a 2-CTA cluster for cta_group 2, the even CTA issuing):
  1. fill the shared buffer from global memory through the source tensor's layout and swizzle;
  2. warp 0 allocates TMEM (``tcgen05.alloc``) and relinquishes the allocation permit;
  3. every warp zeroes its TMEM lane quadrant (``tcgen05.st``; alloc does not clear TMEM);
  4. ``fence.proxy.async.shared::cta`` so the async proxy sees the fill, then a CTA (or cluster) barrier;
  5. one thread issues the planned copy and ``tcgen05.commit`` to an mbarrier (CTA mask 0b11 for cta_group 2);
  6. every thread waits on the mbarrier, then each warp reads its quadrant with ``tcgen05.ld.32x32b``;
  7. ``tcgen05.wait::ld``, store to global, barrier, ``tcgen05.dealloc``.

With ``-DPYCUTE_TIME_COPY`` thread 0 of each CTA also stores the clock64 cycles from the issue to the mbarrier
completion after the readback words (two words per CTA).

Compiled with ``-DPYCUTE_SOFT_TCGEN05`` (for a GPU without tcgen05, e.g. sm_90a) the tcgen05 instructions are
replaced by a software model over a TMEM image in shared memory (reached through distributed shared memory for
the CTA pair); everything else, including the cluster launch and the mbarrier protocol, is unchanged.
"""
from __future__ import annotations

import attrs
import numpy as np

from .arch.sm100.emit import emit_device_function
from .copy.plan import CopyPlan
from .compile.nvrtc import compile_cuda
from .compile.ptx import run_entry
from .copy.reference import expected_tmem, smem_bytes_needed, smem_element_offsets
from .errors import CompileError
from .int_tuple import flatten
from .layout import coalesce

__all__ = ["probe_source", "probe_stream", "roundtrip_source", "RoundTrip", "Timing", "PROBE_SHARED_SYMBOL"]

PROBE_SHARED_SYMBOL = "pycute_probe_smem"
_LD_CHUNK = 8   # tcgen05.ld.32x32b.x8: 8 columns per load


def probe_source(plan: CopyPlan, name: str = "pycute_copy") -> str:
    """The device function and a kernel that only calls it: what SASS and PTX checks compile."""
    return emit_device_function(plan, name) + f"""
// Issue-only probe: the generated function alone, for SASS and PTX-level checks.
extern "C" __global__ void {name}_probe(unsigned tmem_base) {{
  extern __shared__ __align__(1024) unsigned char {PROBE_SHARED_SYMBOL}[];
  {name}({PROBE_SHARED_SYMBOL}, tmem_base);
}}
"""


def probe_stream(ptx: str, name: str, smem_base: int, tmem_base: int) -> list:
    """The ``(opcode, taddr, descriptor)`` stream the compiled probe ``name`` issues (PTX interpreted for its one
    issuing thread) when its shared buffer is at ``smem_base`` and its TMEM allocation at ``tmem_base``."""
    return run_entry(ptx, {0: tmem_base}, {PROBE_SHARED_SYMBOL: smem_base}, f"{name}_probe")


def _src_offset_function(plan: CopyPlan) -> str:
    """``pycute_src_byte_offset(i)``: logical element i -> byte offset in the shared buffer (generated)."""
    src = plan.src
    c = coalesce(src.layout)
    shapes, strides = flatten(c.shape), flatten(c.stride)
    lines = ["// Logical element i of the source region -> byte offset from the shared buffer base: the region's",
             f"// layout {src.layout!r} at element offset {src.offset}"
             + (f", then the swizzle {src.swizzle!r}" if src.swizzle is not None else "") + ".",
             "__device__ __forceinline__ unsigned pycute_src_byte_offset(unsigned i) {",
             f"  unsigned e = {src.offset}u;"]
    prefix = 1
    for n, d in zip(shapes, strides):
        if n > 1 and d:
            lines.append(f"  e += ((i / {prefix}u) % {n}u) * {d}u;")
        prefix *= n
    sw = src.swizzle
    if sw is not None and sw.bits:
        lines.append(f"  e ^= (e & 0x{sw.yyy_mask:X}u) >> {sw.shift};")
    lines += [f"  return e * {src.bits // 8}u;", "}"]
    return "\n".join(lines)


_SOFT_MODEL = r"""
#if defined(PYCUTE_SOFT_TCGEN05)
// ---- Software model of the tcgen05 instructions (for GPUs without them; see pycute.kernels) ----------------
// TMEM image: 128 lanes x PYCUTE_TMEM_COLS words in dynamic shared memory, at the same offset in every CTA.
__shared__ unsigned pycute_soft_tmem_addr;   // shared-window address of this CTA's image

__device__ __forceinline__ unsigned pycute_cluster_rank() {
  unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
}
__device__ __forceinline__ unsigned pycute_mapa(unsigned addr, unsigned rank) {
  unsigned r; asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank)); return r;
}
__device__ __forceinline__ unsigned pycute_ld_cluster(unsigned addr) {
  unsigned v; asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory"); return v;
}
__device__ __forceinline__ void pycute_st_cluster(unsigned addr, unsigned v) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}

// tcgen05.cp semantics (ptx-tcgen05.md sections 4 and 6): K-major canonical walk, swizzle on absolute address
// bits, rows written to lanes per shape and multicast; cta_group 2 copies each CTA's smem into its own TMEM.
__device__ void pycute_soft_tcgen05_cp(int rows, int bits, int multicast, int cta_group, unsigned taddr,
                                       unsigned long long desc) {
  const unsigned start = unsigned(desc & 0x3FFFull) << 4;
  const unsigned lbo = unsigned((desc >> 16) & 0x3FFFull) << 4;
  const unsigned sbo = unsigned((desc >> 32) & 0x3FFFull) << 4;
  const unsigned sw = unsigned(desc >> 61);
  const unsigned pitch = sw == 0 ? 16u : sw == 6 ? 32u : sw == 4 ? 64u : 128u;
  const unsigned xor_mask = sw == 6 ? 0x10u : sw == 4 ? 0x30u : sw == 2 ? 0x70u : 0u;
  const unsigned units = unsigned(bits) / 128u, lane0 = taddr >> 16, col0 = taddr & 0xFFFFu;
  const unsigned window_hi = pycute_soft_tmem_addr & ~0x3FFFFu;   // the CTA's shared-window high bits
  const unsigned self = pycute_cluster_rank();
  const unsigned first = cta_group == 2 ? (self & ~1u) : self, last = cta_group == 2 ? (self | 1u) : self;
  for (unsigned cta = first; cta <= last; ++cta) {
    for (int r = 0; r < rows; ++r) {
      unsigned lanes[4]; int nl = 0;
      if (rows == 4) { lanes[nl++] = lane0 + 32u * r; }
      else if (multicast == 0) { lanes[nl++] = lane0 + r; }
      else if (multicast == 1) { lanes[nl++] = lane0 + r; lanes[nl++] = lane0 + r + 64u; }
      else if (multicast == 2) { unsigned b = 64u * (r / 32) + r % 32; lanes[nl++] = lane0 + b; lanes[nl++] = lane0 + b + 32u; }
      else { for (unsigned w = 0; w < 4; ++w) lanes[nl++] = lane0 + r + 32u * w; }
      for (unsigned u = 0; u < units; ++u) {
        unsigned lin = start + (r % 8) * pitch + (r / 8) * sbo + u * (sw == 0 ? lbo : 16u);
        unsigned phys = lin ^ ((lin >> 3) & xor_mask);
        for (unsigned k = 0; k < 4; ++k) {
          unsigned word = pycute_ld_cluster(pycute_mapa(window_hi | (phys + 4u * k), cta));
          for (int l = 0; l < nl; ++l) {
            unsigned cell = pycute_soft_tmem_addr + 4u * (lanes[l] * PYCUTE_TMEM_COLS + col0 + 4u * u + k);
            pycute_st_cluster(pycute_mapa(cell, cta), word);
          }
        }
      }
    }
  }
}
#endif
"""


def roundtrip_source(plan: CopyPlan, name: str = "pycute_copy") -> str:
    """A complete round-trip kernel ``<name>_roundtrip(const unsigned char* values, unsigned* out)``."""
    if plan.src.bits not in (8, 16, 32):
        raise CompileError(f"round-trip kernels fill shared memory element by element and support 8, 16 and 32-bit "
                           f"elements; {plan.src.dtype.name} has {plan.src.bits}")
    g = plan.cta_group
    cols = plan.dst.columns
    smem_bytes = smem_bytes_needed(plan.src)
    n = plan.src.layout.size()
    ebytes = plan.src.bits // 8
    cluster = " __cluster_dims__(2, 1, 1)" if g == 2 else ""
    ld_regs = ", ".join(f"%{k}" for k in range(_LD_CHUNK))
    ld_outs = ", ".join(f'"=r"(v[{k}])' for k in range(_LD_CHUNK))
    st_regs = ", ".join(["%1"] * _LD_CHUNK)
    commit = ('asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" '
              ':: "r"(mbar) : "memory");') if g == 1 else \
        ('asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 '
         '[%0], %1;" :: "r"(mbar), "h"((unsigned short)3) : "memory");')
    soft_commit = ('asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: '
                   '"r"(pycute_mapa(mbar, cta)) : "memory");')
    sync = ('asm volatile("barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;" ::: '
            '"memory");') if g == 2 else "__syncthreads();"
    return f"""{emit_device_function(plan, name)}
#define PYCUTE_SMEM_BYTES {smem_bytes}u
#define PYCUTE_TMEM_COLS {cols}u
#define PYCUTE_ELEMS {n}u
#define PYCUTE_ELEM_BYTES {ebytes}u
{_SOFT_MODEL}
{_src_offset_function(plan)}

// Round trip: fill -> alloc -> zero TMEM -> copy -> commit/wait -> tcgen05.ld -> global. {128 * g} threads.
extern "C" __global__ void __launch_bounds__(128, 1){cluster} {name}_roundtrip(const unsigned char* __restrict__ values,
                                                                          unsigned* __restrict__ out) {{
  extern __shared__ __align__(1024) unsigned char pycute_dynamic_smem[];
  __shared__ unsigned tmem_slot;
  __shared__ __align__(8) unsigned long long mbarrier_word;
  const unsigned tid = threadIdx.x, warp = tid / 32u, lane = tid % 32u;
  unsigned cta = 0;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(cta));
  // The buffer is aligned to 1024 B in the shared window (every swizzle period divides 1024).
  const unsigned dyn = static_cast<unsigned>(__cvta_generic_to_shared(pycute_dynamic_smem));
  unsigned char* buffer = pycute_dynamic_smem + ((1024u - (dyn & 1023u)) & 1023u);
  const unsigned mbar = static_cast<unsigned>(__cvta_generic_to_shared(&mbarrier_word));
#if defined(PYCUTE_SOFT_TCGEN05)
  unsigned* soft_tmem = reinterpret_cast<unsigned*>(buffer + PYCUTE_SMEM_BYTES);
  if (tid == 0) pycute_soft_tmem_addr = static_cast<unsigned>(__cvta_generic_to_shared(soft_tmem));
#endif

  // 1. Fill shared memory through the source layout (zero first: bytes the layout never names stay 0).
  for (unsigned b = tid; b < PYCUTE_SMEM_BYTES; b += blockDim.x) buffer[b] = 0;
  __syncthreads();
  for (unsigned i = tid; i < PYCUTE_ELEMS; i += blockDim.x) {{
    const unsigned off = pycute_src_byte_offset(i);
    for (unsigned k = 0; k < PYCUTE_ELEM_BYTES; ++k) buffer[off + k] = values[(cta * PYCUTE_ELEMS + i) * PYCUTE_ELEM_BYTES + k];
  }}
  // 2. Allocate TMEM (one warp per CTA) and set up the completion mbarrier.
  if (warp == 0) {{
#if defined(PYCUTE_SOFT_TCGEN05)
    if (lane == 0) tmem_slot = 0;
#else
    const unsigned slot = static_cast<unsigned>(__cvta_generic_to_shared(&tmem_slot));
    asm volatile("tcgen05.alloc.cta_group::{g}.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(slot), "r"(PYCUTE_TMEM_COLS) : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::{g}.sync.aligned;" ::: "memory");
#endif
  }}
  if (tid == 0) {{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(mbar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }}
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
#endif
  __syncthreads();
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
#endif
  const unsigned taddr = tmem_slot;
  const unsigned warp_taddr = taddr + ((32u * (warp % 4u)) << 16);

  // 3. Zero this warp's TMEM quadrant: alloc does not clear TMEM.
  for (unsigned c = 0; c < PYCUTE_TMEM_COLS; c += {_LD_CHUNK}u) {{
#if defined(PYCUTE_SOFT_TCGEN05)
    for (unsigned k = 0; k < {_LD_CHUNK}u; ++k) soft_tmem[(32u * (warp % 4u) + lane) * PYCUTE_TMEM_COLS + c + k] = 0u;
#else
    asm volatile("tcgen05.st.sync.aligned.32x32b.x{_LD_CHUNK}.b32 [%0], {{{st_regs}}};" :: "r"(warp_taddr + c), "r"(0u) : "memory");
#endif
  }}
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
#endif
  // 4. Make the generic-proxy fill visible to the async proxy that tcgen05.cp reads through, then sync.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
#endif
  {sync}
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
#endif

  // 5. One thread ({'of the even CTA ' if g == 2 else ''}issues the copy and commits it to the mbarrier.
#if defined(PYCUTE_TIME_COPY)
  const long long t_issue = clock64();
#endif
  if (tid == 0 && {'(cta & 1u) == 0u' if g == 2 else 'true'}) {{
    {name}(buffer, taddr);
#if defined(PYCUTE_SOFT_TCGEN05)
    {'for (unsigned c = 0; c < 2u; ++c) { const unsigned cta = c; ' + soft_commit + ' }' if g == 2 else soft_commit}
#else
    {commit}
#endif
  }}

  // 6. Wait for the copy, then read this warp's lane quadrant back.
  asm volatile("{{\\n\\t.reg .pred done;\\n\\tWAIT_%=:\\n\\t"
               "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], 0;\\n\\t"
               "@!done bra WAIT_%=;\\n\\t}}" :: "r"(mbar) : "memory");
#if defined(PYCUTE_TIME_COPY)
  // Clocks from the issue to the mbarrier completion of the copy, as the issuing thread sees them.
  if (tid == 0) {{
    const long long cycles = clock64() - t_issue;
    out[{g} * 128u * PYCUTE_TMEM_COLS + 2u * cta] = unsigned(cycles);
    out[{g} * 128u * PYCUTE_TMEM_COLS + 2u * cta + 1u] = unsigned(cycles >> 32);
  }}
#endif
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
#endif
  for (unsigned c = 0; c < PYCUTE_TMEM_COLS; c += {_LD_CHUNK}u) {{
    unsigned v[{_LD_CHUNK}];
#if defined(PYCUTE_SOFT_TCGEN05)
    for (unsigned k = 0; k < {_LD_CHUNK}u; ++k) v[k] = soft_tmem[(32u * (warp % 4u) + lane) * PYCUTE_TMEM_COLS + c + k];
#else
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x{_LD_CHUNK}.b32 {{{ld_regs}}}, [%{_LD_CHUNK}];" : {ld_outs} : "r"(warp_taddr + c) : "memory");
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
#endif
    for (unsigned k = 0; k < {_LD_CHUNK}u; ++k)
      out[(cta * 128u + 32u * (warp % 4u) + lane) * PYCUTE_TMEM_COLS + c + k] = v[k];
  }}

  // 7. Free TMEM once every warp has read it.
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
#endif
  {sync}
#if !defined(PYCUTE_SOFT_TCGEN05)
  if (warp == 0) asm volatile("tcgen05.dealloc.cta_group::{g}.sync.aligned.b32 %0, %1;" :: "r"(taddr), "r"(PYCUTE_TMEM_COLS) : "memory");
#endif
}}
"""


@attrs.frozen
class Timing:
    """A timed round trip: clock64 cycles from issue to mbarrier completion per CTA, and the whole launch's
    duration from CUDA events."""

    copy_cycles: list
    launch_ms: float


@attrs.frozen
class RoundTrip:
    """A round-trip kernel for ``plan``: its source, launch shape, inputs and the expected output."""

    plan: CopyPlan
    name: str = "pycute_copy"

    @property
    def entry(self) -> str:
        return f"{self.name}_roundtrip"

    @property
    def ctas(self) -> int:
        return self.plan.cta_group

    @property
    def smem_bytes(self) -> int:
        return smem_bytes_needed(self.plan.src)

    def dynamic_smem(self, soft: bool) -> int:
        """Dynamic shared memory to launch with: the buffer, 1 KiB of alignment slack, and (soft) the TMEM image."""
        return self.smem_bytes + 1024 + (128 * self.plan.dst.columns * 4 if soft else 0)

    def source(self) -> str:
        return roundtrip_source(self.plan, self.name)

    def compile(self, arch: str = "sm_100a", soft: bool = False, timed: bool = False):
        """NVRTC-compile the kernel; ``soft`` swaps the tcgen05 instructions for the software model, ``timed``
        adds the clock64 measurement of the copy phase."""
        options = (("-DPYCUTE_SOFT_TCGEN05",) if soft else ()) + (("-DPYCUTE_TIME_COPY",) if timed else ())
        return compile_cuda(self.source(), arch=arch, options=options)

    def run(self, gpu, arch: str = "sm_100a", soft: bool = False, seed: int = 0, timed: bool = False):
        """Launch on ``gpu`` (a ``pycute.compile.runtime.Gpu``): returns ``(got, expected)`` as
        (ctas, 128, columns) uint32 arrays, plus a ``Timing`` when ``timed``."""
        values = self.values(seed)
        compiled = self.compile(arch, soft, timed)
        cols = self.plan.dst.columns
        words = self.ctas * 128 * cols
        out = gpu.run(compiled.cubin, self.entry, grid=self.ctas, block=128, dynamic_smem=self.dynamic_smem(soft),
                      inputs=values, out_words=words + (2 * self.ctas if timed else 0), events=timed)
        if not timed:
            return out.reshape(self.ctas, 128, cols), self.expected(values)
        out, ms = out
        cycles = [int(out[words + 2 * c]) | int(out[words + 2 * c + 1]) << 32 for c in range(self.ctas)]
        return out[:words].reshape(self.ctas, 128, cols), self.expected(values), Timing(cycles, ms)

    def values(self, seed: int = 0) -> np.ndarray:
        """Per CTA, the source region's elements in logical order (as bytes), read from a random buffer image so
        that coordinates naming the same element carry the same value."""
        rng = np.random.default_rng(seed)
        index = self._element_bytes()
        return np.concatenate([rng.integers(0, 256, self.smem_bytes, dtype=np.uint8)[index].reshape(-1)
                               for _ in range(self.ctas)])

    def _element_bytes(self) -> np.ndarray:
        """(elements, bytes per element): the buffer byte indices each logical element occupies."""
        ebytes = self.plan.src.bits // 8
        return smem_element_offsets(self.plan.src)[:, None] * ebytes + np.arange(ebytes)[None, :]

    def expected(self, values: np.ndarray) -> np.ndarray:
        """What the kernel must write to ``out``: (ctas, 128 lanes, columns) uint32, TMEM pre-zeroed."""
        src, dst = self.plan.src, self.plan.dst
        index = self._element_bytes()
        result = []
        for vals in values.reshape(self.ctas, *index.shape):
            image = np.zeros(self.smem_bytes, dtype=np.uint8)
            image[index] = vals
            tmem = expected_tmem(src, dst, image, np.zeros((128, 512), dtype=np.uint32), 0)
            result.append(tmem[:, :dst.columns])
        return np.stack(result)
