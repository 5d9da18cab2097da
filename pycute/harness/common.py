"""Kernel text the round trips share."""
from __future__ import annotations

__all__ = ["BUFFER_AND_BARRIER", "MBARRIER_FIRST", "tmem_readback"]

#: A round-trip kernel's first lines: its dynamic shared memory aligned to 1 KiB (``base``, a shared-window
#: address, and ``buf``, a pointer) and one mbarrier at shared address ``m``.
BUFFER_AND_BARRIER = """  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long mbar;
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  unsigned char* buf = raw + (base - pycute_smem_address(raw));
  const unsigned m = pycute_smem_address(&mbar);"""

#: The mbarrier initialised, then a CTA barrier, before any other shared-memory access: compute-sanitizer's racecheck
#: takes the warp-uniform ``mbarrier.init`` for accesses of the warp's other lanes and reports them against the
#: initialising thread's next use of the barrier, or against the fill (docs/sanitizer.md).
MBARRIER_FIRST = """  if (threadIdx.x == 0) pycute_mbarrier_init(m, 1);
  __syncthreads();                 // the mbarrier set up before any other shared-memory access (racecheck)"""


def tmem_readback(ld: str, width: int, columns: int, chunk: int) -> str:
    """A round-trip kernel's last lines: every warp reads the first ``width`` columns of its lane quadrant (from
    ``warp_taddr``) with the ``chunk``-column load ``ld`` into ``out`` (a row of ``columns`` words per lane), then
    warp 0 frees the ``columns``-column allocation at ``taddr``."""
    return f"""  for (unsigned c = 0; c < {width}u; c += {chunk}u) {{
    unsigned v[{chunk}];
    {ld}(warp_taddr + c, v);
    pycute_tcgen05_wait_ld();
    for (unsigned k = 0; k < {chunk}u; ++k) out[(PYCUTE_TMEM_QUADRANT_LANES * (warp % 4u) + lane) * {columns}u + c + k] = v[k];
  }}
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  if (warp == 0) pycute_tmem_dealloc<1>(taddr, {columns}u);"""
