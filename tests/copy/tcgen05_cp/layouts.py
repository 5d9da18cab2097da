"""Test helpers: the library's canonical tensors under short names."""
from pycute.tensor.canonical import SWIZZLE_PITCH, kmajor_smem_buffer as kmajor_smem
from pycute.atoms.tcgen05_cp import atom_tmem_tensor as atom_tmem

SWIZZLE_BITS = {"32B": 1, "64B": 2, "128B": 3}

__all__ = ["SWIZZLE_PITCH", "SWIZZLE_BITS", "atom_tmem", "kmajor_smem"]
