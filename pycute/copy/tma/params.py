"""A tensor map's parameters as ``cuTensorMapEncodeTiled`` takes them (CUDA driver API), the bytes of the element
types they name, and the shared memory a CTA may fill on the targets that have TMA."""
from __future__ import annotations

from typing import Any

import attrs

from ...arch.sm100.smem import SMEM_MAX_BYTES as SM100_SMEM_MAX_BYTES
from ...arch.sm90.smem import SMEM_MAX_BYTES as SM90_SMEM_MAX_BYTES
from ...arch.sm90.tma import DATA_TYPES, INTERLEAVE_NONE, L2_PROMOTION_128B, OOB_FILL_NONE, TmaSwizzle
from ...dtypes import dtype
from ...int_tuple import as_int, product

__all__ = ["TensorMapParams", "DTYPE_BYTES", "smem_capacity"]


@attrs.frozen
class TensorMapParams:
    """``cuTensorMapEncodeTiled``'s arguments but the address, dimension 0 (the contiguous one) first:
    ``global_dims`` in elements, ``global_strides`` in bytes for dims 1.., ``box`` in elements."""

    dtype: str
    data_type: int
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: TmaSwizzle
    interleave: int = INTERLEAVE_NONE
    l2_promotion: int = L2_PROMOTION_128B
    oob_fill: int = OOB_FILL_NONE

    @property
    def rank(self) -> int:
        return len(self.global_dims)

    @property
    def box_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype] * product(self.box)

    def encode(self, global_address: int) -> Any:
        """The ``CUtensorMap`` for an array at ``global_address`` (a device pointer), through the CUDA driver's
        ``cuTensorMapEncodeTiled``; a machine without a driver gets a CompileError."""
        from ...compile.runtime import encode_tensor_map
        return encode_tensor_map(self, as_int(global_address, "tensor_map: global_address"))


#: Bytes per element of the types a tensor map names.
DTYPE_BYTES = {name: dtype(name).bits // 8 for name in DATA_TYPES}


def smem_capacity(targets: tuple[str, ...]) -> tuple[int, str]:
    """``(bytes, target)``: the least dynamic shared memory one CTA may have on any of ``targets`` (sm_90: 227 KiB,
    arch.sm90.smem; sm_100 and later: 227 KiB, arch.sm100.smem)."""
    caps = [(SM90_SMEM_MAX_BYTES if t.startswith("sm_90") else SM100_SMEM_MAX_BYTES, t) for t in targets]
    return min(caps, key=lambda c: c[0])
