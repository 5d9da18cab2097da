"""Shared memory of an sm_90 CTA (CUDA C++ Programming Guide, technical specifications per compute capability:
227 KiB of dynamic shared memory per thread block for compute capability 9.0, opted into at launch with
``cudaFuncAttributeMaxDynamicSharedMemorySize``; the H100 and H200 are 9.0)."""

__all__ = ["SMEM_MAX_BYTES"]

SMEM_MAX_BYTES = 232_448     # 227 KiB
