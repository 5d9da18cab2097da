"""Test helpers: the library's canonical tensors under short names."""
from pycute.copy.canonical import SWIZZLE_PITCH, atom_tmem_tensor as atom_tmem, kmajor_smem_tensor as kmajor_smem

SWIZZLE_BITS = {"32B": 1, "64B": 2, "128B": 3}

__all__ = ["SWIZZLE_PITCH", "SWIZZLE_BITS", "atom_tmem", "kmajor_smem"]
