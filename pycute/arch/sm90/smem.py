"""Shared memory of an sm_90 SM and CTA (CUDA C++ Programming Guide, technical specifications per compute
capability: 228 KiB per SM and 227 KiB per thread block for compute capability 9.0, opted into at launch; the
driver reserves 1 KiB of each block's, cudaDevAttrReservedSharedMemoryPerBlock)."""

__all__ = ["SMEM_MAX_BYTES", "SMEM_PER_SM", "SMEM_RESERVED_PER_CTA"]

SMEM_MAX_BYTES = 232_448     # 227 KiB
SMEM_PER_SM = 233_472        # 228 KiB
SMEM_RESERVED_PER_CTA = 1_024
