"""Global-memory tensors: a dtype, a layout in elements from the base pointer, and what the caller guarantees of the
base's alignment. Integer strides only; slicing keeps the offset, as for the other memory spaces."""
from __future__ import annotations

import ctypes

import attrs

from ..dtypes import DType, DTypeLike, element_dtype
from ..errors import PlanError
from ..int_tuple import as_int, product
from ..layout import Layout
from .region import DynamicIndex, Region, check_int_strides

__all__ = ["GlobalTensor", "make_global_tensor", "global_tensor_from", "dlpack_fields"]


@attrs.frozen(repr=False, cache_hash=True)
class GlobalTensor(Region):
    """A region of a global-memory array: element ``c`` lives at element ``offset + layout(c)`` from the base
    pointer, which is ``base_align``-byte aligned."""

    dtype: DType
    layout: Layout
    offset: int = 0
    base_align: int = 16
    dynamic: tuple[DynamicIndex, ...] = ()                          # DynamicIndex per run-time coordinate
    address: int | None = attrs.field(default=None, eq=False)    # the device pointer, where the array gave one

    KIND = "global-memory tensor"
    SPACE = "global"

    def __repr__(self) -> str:
        return f"gmem<{self.dtype.name}>[{self.offset} o {self.layout!r}]{self._dynamic_repr()}"


def make_global_tensor(dtype: DTypeLike, layout: Layout, base_align: int = 16) -> GlobalTensor:
    """A global-memory tensor over a base pointer aligned to ``base_align`` bytes (a power of two)."""
    dt = element_dtype(dtype, "make_global_tensor")
    if not isinstance(layout, Layout):
        raise TypeError(f"make_global_tensor: the layout must be a Layout, got {type(layout).__name__}")
    check_int_strides(layout, "global-memory layout")
    base_align = as_int(base_align, "make_global_tensor: base_align")
    if base_align < 1 or base_align & (base_align - 1):
        raise PlanError(f"make_global_tensor: base_align {base_align} is not a power of two")
    return GlobalTensor(dt, layout, 0, base_align)


_TYPESTR = {"u1": "u8", "i1": "i8", "u2": "u16", "i2": "i16", "f2": "f16", "u4": "u32", "i4": "i32", "f4": "f32",
            "u8": "u64", "i8": "i64", "f8": "f64"}
_DLPACK_CODES = {(0, 8): "i8", (0, 16): "i16", (0, 32): "i32", (0, 64): "i64", (1, 8): "u8", (1, 16): "u16",
                 (1, 32): "u32", (1, 64): "u64", (2, 16): "f16", (2, 32): "f32", (2, 64): "f64", (4, 16): "bf16"}
_DLPACK_CUDA = (2, 13)            # kDLCUDA, kDLCUDAManaged


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


def dlpack_fields(obj: object) -> tuple[str, tuple[int, ...], tuple[int, ...] | None, int, int]:
    """``(dtype name, shape, strides in elements or None, data address, DLPack device type)`` of an object with
    ``__dlpack__`` (the DLPack C structure read through its capsule; the producer keeps the memory)."""
    capsule = obj.__dlpack__()  # type: ignore[attr-defined]
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    t = _DLTensor.from_address(get(capsule, b"dltensor"))
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key not in _DLPACK_CODES:
        raise PlanError(f"global_tensor_from: DLPack type code {t.dtype.code}, {t.dtype.bits} bits x {t.dtype.lanes} "
                        f"lanes has no pycute dtype")
    shape = tuple(t.shape[k] for k in range(t.ndim))
    strides = tuple(t.strides[k] for k in range(t.ndim)) if t.strides else None
    return _DLPACK_CODES[key], shape, strides, (t.data or 0) + t.byte_offset, t.device.device_type


def _cuda_array_interface(obj: object) -> tuple[str, tuple[int, ...], tuple[int, ...] | None, int]:
    cai = obj.__cuda_array_interface__  # type: ignore[attr-defined]
    code = cai["typestr"][1:]
    if code not in _TYPESTR:
        raise PlanError(f"global_tensor_from: typestr {cai['typestr']!r} has no pycute dtype")
    size = int(code[1])
    strides = None if cai.get("strides") is None else tuple(s // size for s in cai["strides"])
    if cai.get("strides") is not None and any(s % size for s in cai["strides"]):
        raise PlanError(f"global_tensor_from: byte strides {cai['strides']} are not whole elements")
    return _TYPESTR[code], tuple(cai["shape"]), strides, int(cai["data"][0])


def global_tensor_from(array: object) -> GlobalTensor:
    """The global tensor of a device array that offers ``__cuda_array_interface__`` (CuPy, Numba, PyTorch) or
    ``__dlpack__`` (PyTorch, JAX, CuPy), without importing those libraries: its dtype, its layout in the array's
    axis order (strides in elements), the base's alignment (the largest power of two dividing the address, at most
    1024) and the address (``plan.tensor_map.encode(tensor.address)``). Keep the array alive while it is used."""
    if hasattr(array, "__dlpack__"):            # first: it names bf16, which the array interface calls '<V2'
        name, shape, strides, address, device = dlpack_fields(array)
        if device not in _DLPACK_CUDA:
            raise PlanError(f"global_tensor_from: the array is on DLPack device type {device}, not a CUDA device "
                            f"(TMA reads device memory)")
    elif hasattr(array, "__cuda_array_interface__"):
        name, shape, strides, address = _cuda_array_interface(array)
    else:
        raise TypeError(f"global_tensor_from: expected an object with __cuda_array_interface__ or __dlpack__, got "
                        f"{type(array).__name__}")
    if strides is None:                                        # C order: the last axis contiguous
        strides = tuple(product(shape[k + 1:]) for k in range(len(shape)))
    layout = Layout(shape if len(shape) > 1 else shape[0], strides if len(shape) > 1 else strides[0])
    align = address & -address if address else 1024
    return attrs.evolve(make_global_tensor(name, layout, base_align=min(align, 1024)), address=address)
