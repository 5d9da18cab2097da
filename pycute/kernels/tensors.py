"""torch tensors as the kernels take them: rows whose pitch is whole 16-byte units (TMA's stride rule, arch.sm90.tma)
for inputs and outputs, and, for the CPU path that runs a compiled kernel through ``pycute.interp.run_kernel``, the
tensors' element bits as numpy arrays and back. torch is imported lazily (``launcher.torch_module``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..arch.sm90.tma import GLOBAL_ALIGN, STRIDE_ALIGN
from ..errors import LaunchError
from .launcher import torch_module

__all__ = ["row_pitch", "tma_rows", "empty_rows", "to_bits", "from_bits", "CPU_LIMIT", "check_cpu_size"]

#: The CPU path runs every thread of the kernel in Python (pycute.interp): at most this many multiply-adds.
CPU_LIMIT = 1 << 23
_BITS = {1: (np.uint8, "uint8"), 2: (np.uint16, "int16"), 4: (np.uint32, "int32")}


def row_pitch(columns: int, element_bytes: int) -> int:
    """The least row pitch (in elements) of ``columns`` elements whose bytes are whole 16-byte units."""
    unit = STRIDE_ALIGN // element_bytes
    return -(-columns // unit) * unit


def tma_rows(t: Any) -> Any:
    """``t`` (2-D) if TMA can read it as it is -- unit inner stride, a row pitch of whole 16-byte units, a 16-byte
    aligned address -- else a copy into rows of the least such pitch (a view of the padded buffer)."""
    size = t.element_size()
    if t.stride(1) == 1 and (t.stride(0) * size) % STRIDE_ALIGN == 0 and t.data_ptr() % GLOBAL_ALIGN == 0 \
            and t.stride(0) >= t.shape[1]:
        return t
    out = empty_rows(t.shape[0], t.shape[1], t.dtype, t.device)
    out.copy_(t)
    return out


def empty_rows(rows: int, columns: int, dtype: Any, device: Any) -> Any:
    """A ``rows x columns`` tensor whose rows are whole 16-byte units: contiguous when ``columns`` already is, else
    the first ``columns`` of a padded buffer."""
    torch = torch_module()
    pitch = row_pitch(columns, torch.empty((), dtype=dtype).element_size())
    buf = torch.empty((rows, pitch), dtype=dtype, device=device)
    return buf if pitch == columns else buf[:, :columns]


def to_bits(t: Any) -> np.ndarray:
    """A CPU tensor's elements as unsigned integers of their width (bf16 -> uint16, e4m3 -> uint8, f32 -> uint32),
    C-contiguous: what a kernel run on the CPU reads."""
    torch = torch_module()
    np_type, torch_type = _BITS[t.element_size()]
    return np.ascontiguousarray(t.detach().contiguous().view(getattr(torch, torch_type)).numpy().view(np_type))


def from_bits(bits: np.ndarray, dtype: Any) -> Any:
    """The tensor of ``dtype`` whose elements have ``bits`` (the inverse of ``to_bits``)."""
    torch = torch_module()
    _, torch_type = _BITS[bits.dtype.itemsize]
    return torch.from_numpy(bits.view(getattr(np, torch_type))).view(dtype)


def check_cpu_size(what: str, macs: int) -> None:
    """LaunchError when a CPU run of ``macs`` multiply-adds is past ``CPU_LIMIT``."""
    if macs > CPU_LIMIT:
        raise LaunchError(f"{what} on the CPU runs the compiled kernel thread by thread (pycute.interp): "
                          f"{macs} multiply-adds is past its limit of {CPU_LIMIT}; run it on a CUDA tensor")
