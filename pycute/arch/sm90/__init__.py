"""Hopper (sm_90) facts every later generation keeps: warps and their member masks (``warp``), and the Tensor
Memory Accelerator's tensor maps, swizzles and instructions (``tma``), bulk copies and DSMEM (``bulk``), and a
CTA's shared-memory capacity (``smem``)."""
from .warp import FULL_WARP_MASK, WARP_THREADS
from .tma import MAX_BOX, MAX_RANK, TMA_SWIZZLES, TMA_TARGETS, TmaSwizzle, tma_ptx
from .bulk import BULK_ALIGN, MAX_CLUSTER, bulk_ptx
from .smem import SMEM_MAX_BYTES
