"""Tensor maps from real tensors. A compiled kernel fixes every field of its TMA maps but the array's address,
dimensions and strides (the box, swizzle, element strides, data type, L2 promotion and out-of-bounds fill: the
plan's ``TensorMapParams``); ``TensorMapSpec`` keeps those, checks a tensor against TMA's rules (arch.sm90.tma:
the address and every stride in whole 16-byte units, the innermost stride 1, the dimensions and strides in range) and
encodes its map with the driver's ``cuTensorMapEncodeTiled`` (CUDA driver API, "Tensor Map Object Management"),
called through ctypes with the argument arrays built once, the 128-byte maps cached by (address, shape, strides).
``params_for`` gives the same fields as plan parameters, for the CPU path and for the tests that hold the shortcut
equal to the planner."""
from __future__ import annotations

import ctypes
import functools
from typing import Any

import attrs

from ..arch.sm90.tma import DIM_LIMIT, GLOBAL_ALIGN, STRIDE_ALIGN, STRIDE_LIMIT, TmaSwizzle
from ..copy.tma.params import DTYPE_BYTES, TensorMapParams
from ..errors import LaunchError

__all__ = ["TensorMapSpec", "TORCH_DTYPES", "TORCH_NAMES", "torch_dtype_name"]

TENSOR_MAP_BYTES = 128
#: pycute's names of torch's dtypes (the ones a tensor map can name).
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64", "float8_e4m3fn": "f8e4m3",
                "float8_e5m2": "f8e5m2", "uint8": "u8", "int8": "i8", "int16": "i16", "uint16": "u16", "int32": "i32",
                "uint32": "u32", "int64": "i64", "uint64": "u64"}
#: torch's dtype names by pycute's.
TORCH_NAMES = {v: k for k, v in TORCH_DTYPES.items()}
_CACHE_LIMIT = 4096


def torch_dtype_name(dtype: Any) -> str:
    """pycute's name of a torch dtype (``torch.bfloat16`` -> ``"bf16"``); LaunchError for one TMA cannot name."""
    name = str(dtype).removeprefix("torch.")
    if name not in TORCH_DTYPES:
        raise LaunchError(f"a tensor map cannot hold {dtype}: one of {', '.join(TORCH_DTYPES)}")
    return TORCH_DTYPES[name]


@functools.lru_cache(maxsize=1)
def _encode_tiled() -> Any:
    """``cuTensorMapEncodeTiled`` from libcuda, through ctypes."""
    from ..compile.runtime import driver_available, skip_reason
    if not driver_available():
        raise LaunchError(f"encoding a tensor map needs the CUDA driver: {skip_reason()}")
    fn = ctypes.CDLL("libcuda.so.1").cuTensorMapEncodeTiled
    u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                   ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


@attrs.frozen(eq=False, repr=False)
class TensorMapSpec:
    """A compiled kernel's tensor map but the array: the plan's fields that do not depend on the tensor."""

    dtype: str
    data_type: int
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: TmaSwizzle
    interleave: int
    l2_promotion: int
    oob_fill: int
    _maps: dict = attrs.field(factory=dict, init=False)
    _args: Any = attrs.field(default=None, init=False)

    @classmethod
    def of(cls, params: TensorMapParams) -> "TensorMapSpec":
        """The spec of a plan's map (``plan.tensor_map``)."""
        return cls(params.dtype, params.data_type, params.box, params.element_strides, params.swizzle,
                   params.interleave, params.l2_promotion, params.oob_fill)

    @property
    def rank(self) -> int:
        return len(self.box)

    def __repr__(self) -> str:
        return (f"TensorMapSpec({self.dtype}, rank {self.rank}, box {self.box}, swizzle {self.swizzle.name}, "
                f"{len(self._maps)} map(s) cached)")

    def check(self, shape: tuple[int, ...], strides: tuple[int, ...], address: int, what: str) -> None:
        """TMA's rules for an array of ``shape`` and element ``strides`` (outermost first, as torch lists them) at
        ``address``; LaunchError naming ``what`` and the rule."""
        size = DTYPE_BYTES[self.dtype]
        if len(shape) != self.rank:
            raise LaunchError(f"{what}: {len(shape)} dimensions {tuple(shape)}; the kernel's map has {self.rank}")
        if strides[-1] != 1:
            raise LaunchError(f"{what}: the innermost stride is {strides[-1]}; TMA reads rows of consecutive "
                              f"elements (stride 1): pass a contiguous tensor (.contiguous())")
        for k, (n, s) in enumerate(zip(shape, strides)):
            if not 1 <= n <= DIM_LIMIT:
                raise LaunchError(f"{what}: dimension {k} is {n}; a tensor map's dimensions are 1 to {DIM_LIMIT}")
            if k < len(shape) - 1 and (s * size % STRIDE_ALIGN or not 0 < s * size < STRIDE_LIMIT):
                raise LaunchError(f"{what}: stride {k} is {s} elements = {s * size} B; TMA needs a positive "
                                  f"multiple of {STRIDE_ALIGN} B below 2^40 (pad the rows: a view of a wider "
                                  f"buffer)")
        if address % GLOBAL_ALIGN:
            raise LaunchError(f"{what}: the address {address:#x} is not {GLOBAL_ALIGN}-byte aligned (TMA)")

    def params_for(self, shape: tuple[int, ...], strides: tuple[int, ...]) -> TensorMapParams:
        """The plan parameters of this map over an array of ``shape`` and element ``strides`` (outermost first)."""
        size = DTYPE_BYTES[self.dtype]
        return TensorMapParams(self.dtype, self.data_type, tuple(reversed(shape)),
                               tuple(s * size for s in reversed(strides[:-1])), self.box, self.element_strides,
                               self.swizzle, self.interleave, self.l2_promotion, self.oob_fill)

    def encode(self, tensor: Any, what: str = "tensor") -> bytes:
        """The 128-byte ``CUtensorMap`` of a CUDA torch tensor (checked: its dtype, rank, strides, address), cached
        by (address, shape, strides)."""
        address, shape, strides = tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride())
        key = (address, shape, strides, tensor.dtype)          # UVA: an address names its device too
        found = self._maps.get(key)
        if found is not None:
            return found
        if torch_dtype_name(tensor.dtype) != self.dtype:
            raise LaunchError(f"{what}: {tensor.dtype}; the kernel's map reads {self.dtype}")
        if not tensor.is_cuda:
            raise LaunchError(f"{what}: on {tensor.device}; a tensor map addresses CUDA device memory")
        self.check(shape, strides, address, what)
        encoded = self.encode_raw(address, shape, strides)
        if len(self._maps) >= _CACHE_LIMIT:
            self._maps.clear()
        self._maps[key] = encoded
        return encoded

    def encode_raw(self, address: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> bytes:
        """The driver's map for a checked array (no cache)."""
        fn = _encode_tiled()
        if self._args is None:       # the box and element strides are the spec's: their arrays are built once
            rank = self.rank
            object.__setattr__(self, "_args", ((ctypes.c_uint32 * rank)(*self.box),
                                               (ctypes.c_uint32 * rank)(*self.element_strides)))
        box, elem = self._args
        size = DTYPE_BYTES[self.dtype]
        dims = (ctypes.c_uint64 * self.rank)(*reversed(shape))
        pitches = (ctypes.c_uint64 * max(1, self.rank - 1))(*(s * size for s in reversed(strides[:-1])))
        out = ctypes.create_string_buffer(2 * TENSOR_MAP_BYTES)
        at = (ctypes.addressof(out) + 63) & ~63                  # a CUtensorMap is 64-byte aligned (cuda.h)
        rc = fn(at, self.data_type, self.rank, address, dims, pitches, box, elem, self.interleave,
                self.swizzle.code, self.l2_promotion, self.oob_fill)
        if rc != 0:
            raise LaunchError(f"cuTensorMapEncodeTiled refused the map (CUresult {rc}): "
                              f"{self.params_for(shape, strides)!r} at {address:#x}")
        return ctypes.string_at(at, TENSOR_MAP_BYTES)
