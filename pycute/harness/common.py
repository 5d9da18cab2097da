"""Kernel text the round trips share."""
from __future__ import annotations

__all__ = ["BUFFER_AND_BARRIER"]

#: A round-trip kernel's first lines: its dynamic shared memory aligned to 1 KiB (``base``, a shared-window
#: address, and ``buf``, a pointer) and one mbarrier at shared address ``m``.
BUFFER_AND_BARRIER = """  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long mbar;
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  unsigned char* buf = raw + (base - pycute_smem_address(raw));
  const unsigned m = pycute_smem_address(&mbar);"""
