"""Bank conflicts as a number: the wavefronts one warp-instruction takes in the shared-memory pipe
(``arch.sm90.shared``). Within a phase of lanes (or, for stmatrix / ldmatrix, within one 8-row matrix [I]), each bank
serves one distinct 4-byte word per wavefront, so the phase takes as many wavefronts as its busiest bank has distinct
words; the instruction takes the sum over its phases. The fewest any access can take is its bytes over 128."""
from __future__ import annotations

import numpy as np

from ...arch.sm90.shared import BANK_BYTES, BANKS, WAVEFRONT_BYTES, phase_lanes
from ...arch.sm90.matrix import ROW_BYTES, ROWS_PER_REGISTER

__all__ = ["group_wavefronts", "vector_wavefronts", "matrix_wavefronts", "ideal_wavefronts"]


def group_wavefronts(byte_addresses: np.ndarray) -> int:
    """Wavefronts of one group of accesses served together (the bytes it touches, any shape)."""
    words = np.unique(np.asarray(byte_addresses).ravel() // BANK_BYTES)
    if words.size == 0:
        return 0
    return int(np.bincount(words % BANKS, minlength=BANKS).max())


def vector_wavefronts(addresses: np.ndarray, width: int) -> int:
    """One warp's ``width``-byte ld/st.shared at lane ``addresses`` (32,): its phases' wavefronts summed."""
    lanes = phase_lanes(width)
    touched = addresses[:, None] + np.arange(width)[None, :]
    return sum(group_wavefronts(touched[p:p + lanes]) for p in range(0, addresses.size, lanes))


def matrix_wavefronts(rows: np.ndarray) -> int:
    """One warp's stmatrix / ldmatrix whose row start addresses are ``rows`` (registers x 8): each 8-row matrix
    served on its own [I], its wavefronts summed."""
    rows = np.asarray(rows).reshape(-1, ROWS_PER_REGISTER)
    touched = rows[:, :, None] + np.arange(ROW_BYTES)[None, None, :]
    return sum(group_wavefronts(m) for m in touched)


def ideal_wavefronts(bytes_per_warp: int) -> int:
    """The fewest wavefronts an access of that many bytes can take (every bank busy every wavefront)."""
    return max(1, -(-bytes_per_warp // WAVEFRONT_BYTES))
