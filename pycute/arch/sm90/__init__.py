"""Hopper (sm_90) facts every later generation keeps: warps and their member masks (elect.sync, shfl.sync), and
what the Hopper-era copies (TMA, bulk copies, DSMEM) will file here beside them."""
from .warp import FULL_WARP_MASK, WARP_THREADS
