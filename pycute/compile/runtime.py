"""Optional GPU runtime: load a cubin and launch any kernel through ``cuda.core`` (cluster shapes, dynamic shared
memory, CUDA events), with ``cuda.bindings.driver`` for the few calls cuda.core leaves to it.

Nothing here touches the driver unless ``driver_available()`` found libcuda first: on a machine without a driver
the driver bindings raise, and some cuda.core calls can hang a process (docs/toolchain-cpu-only.md section 7).
"""
from __future__ import annotations

from typing import Any

import ctypes
import ctypes.util
import functools
import re

import numpy as np

from ..errors import CompileError

__all__ = ["driver_available", "device_info", "skip_reason", "Gpu", "check_gpu", "encode_tensor_map", "encode_im2col_map", "tensor_map_arg",
           "tensor_map_bytes"]


@functools.lru_cache(maxsize=1)
def driver_available() -> bool:
    """True when libcuda can be loaded (checked without calling into it)."""
    for name in (ctypes.util.find_library("cuda"), "libcuda.so.1", "libcuda.so"):
        if not name:
            continue
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def _check(result, what: str):
    from cuda.bindings import driver
    err = result[0] if isinstance(result, tuple) else result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise CompileError(f"{what} failed: {err}")
    if isinstance(result, tuple):
        return result[1] if len(result) == 2 else result[1:]
    return None


@functools.lru_cache(maxsize=1)
def device_info() -> tuple[str, tuple[int, int]] | None:
    """``(name, (major, minor))`` of device 0, or None without a driver or device."""
    if not driver_available():
        return None
    from cuda.bindings import driver
    try:
        _check(driver.cuInit(0), "cuInit")
        if _check(driver.cuDeviceGetCount(), "cuDeviceGetCount") < 1:
            return None
        dev = _check(driver.cuDeviceGet(0), "cuDeviceGet")
        attr = driver.CUdevice_attribute
        major = _check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cc")
        minor = _check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cc")
        name = _check(driver.cuDeviceGetName(128, dev), "cuDeviceGetName")
        return name.split(b"\0")[0].decode(), (major, minor)
    except Exception:
        return None


def skip_reason() -> str | None:
    """Why GPU round trips cannot run here, or None when they can."""
    if not driver_available():
        return "no CUDA driver (libcuda) on this machine: tcgen05 round trips need an sm_100-family GPU"
    info = device_info()
    if info is None:
        return "a CUDA driver is present but no GPU device answered"
    if info[1][0] not in (10, 11):
        return f"device 0 is {info[0]} (sm_{info[1][0]}{info[1][1]}), not an sm_100-family GPU with tcgen05"
    return None


def _dims(value, what: str) -> tuple:
    """A launch dimension as a 3-tuple of positive ints."""
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        raise TypeError(f"launch: {what} must be a positive int or a tuple of up to 3 positive ints, got {value!r}")
    return dims + (1,) * (3 - len(dims))


def _grid_counts_clusters() -> bool:
    """cuda.core 0.4 and later read ``LaunchConfig.grid`` as clusters when a cluster shape is given."""
    import cuda.core
    major, minor = (int(x) for x in cuda.core.__version__.split(".")[:2])
    return (major, minor) >= (0, 4)


def _timing_options(options_class):
    """Event options that record timing (cuda.core spells the field ``timing_enabled``; 0.x ``enable_timing``)."""
    try:
        return options_class(timing_enabled=True)
    except TypeError:
        return options_class(enable_timing=True)


class Gpu:
    """Device 0 through ``cuda.core``: module loading and launches of any kernel (only constructed where a driver
    exists). Device memory comes from ``alloc`` / ``upload``; ``launch`` takes ``cuda.core`` kernel arguments
    (``Buffer``s for pointers, numpy scalars such as ``np.uint32(5)`` for values)."""

    def __init__(self):
        if not driver_available():
            raise CompileError(skip_reason())
        from cuda.core import Device
        self.device = Device(0)
        self.device.set_current()
        self.stream = self.device.create_stream()
        self._parameters: dict[int, tuple[Any, int]] = {}    # id(kernel) -> (kernel, its PTX's parameter count)

    def __repr__(self) -> str:
        info = device_info()
        return f"Gpu({info[0]}, sm_{info[1][0]}{info[1][1]})" if info else "Gpu(?)"

    def multiprocessors(self) -> int:
        """The device's SM count."""
        from cuda.bindings import driver
        attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        return int(_check(driver.cuDeviceGetAttribute(attr, int(self.device.device_id)), "cuDeviceGetAttribute"))

    def kernel(self, compiled: Any, entry: str) -> Any:
        """The ``cuda.core`` Kernel ``entry`` of a ``Compiled`` (or of a cuda.core ``ObjectCode``); a Compiled's
        PTX tells its parameter count, which ``launch`` then checks."""
        code = compiled.object_code() if hasattr(compiled, "object_code") else compiled
        kernel = code.get_kernel(entry)
        count = _ptx_parameter_count(getattr(compiled, "ptx", ""), entry)
        if count is not None:
            self._parameters[id(kernel)] = (kernel, count)
        return kernel

    def alloc(self, nbytes: int) -> Any:
        return self.device.allocate(max(int(nbytes), 1), stream=self.stream)

    def upload(self, array: np.ndarray) -> Any:
        """A device Buffer holding ``array``'s bytes."""
        from cuda.bindings import driver
        host = np.ascontiguousarray(array)
        buf = self.alloc(host.nbytes)
        _check(driver.cuMemcpyHtoDAsync(int(buf.handle), host.ctypes.data, host.nbytes, int(self.stream.handle)),
               "cuMemcpyHtoDAsync")
        self.stream.sync()
        return buf

    def download(self, buf: Any, dtype: Any, count: int) -> np.ndarray:
        from cuda.bindings import driver
        self.stream.sync()
        host = np.empty(count, dtype=dtype)
        _check(driver.cuMemcpyDtoH(host.ctypes.data, int(buf.handle), host.nbytes), "cuMemcpyDtoH")
        return host

    def launch(self, kernel: Any, *args: Any, grid: int | tuple[int, ...] = 1, block: int | tuple[int, ...] = 128,
               cluster: int | tuple[int, ...] | None = None, dynamic_smem: int = 0,
               events: bool = False) -> float | None:
        """Launch ``kernel`` (from ``Gpu.kernel``) with ``grid`` blocks of ``block`` threads -- CUDA's units: with
        ``cluster`` blocks per cluster, ``grid`` still counts blocks, and a kernel compiled with
        ``__cluster_dims__`` needs no ``cluster`` -- and ``dynamic_smem`` bytes of dynamic shared memory; waits
        for it, and with ``events`` returns its duration in milliseconds from CUDA events."""
        from cuda.core import EventOptions, LaunchConfig, launch
        grid, block = _dims(grid, "grid"), _dims(block, "block")
        expected = self._parameters.get(id(kernel), (None, None))[1]
        if expected is not None and expected != len(args):   # the driver would read past the arguments given
            raise CompileError(f"launch: the kernel takes {expected} arguments, {len(args)} given")
        if cluster is not None:
            cluster = _dims(cluster, "cluster")
            if any(g % c for g, c in zip(grid, cluster)):
                raise CompileError(f"launch: grid {grid} (blocks) is not a whole number of clusters {cluster}")
            if _grid_counts_clusters():
                grid = tuple(g // c for g, c in zip(grid, cluster))
        self._allow_smem(kernel, dynamic_smem)
        config = LaunchConfig(grid=grid, block=block, cluster=cluster, shmem_size=int(dynamic_smem))
        start = stop = None
        if events:
            start, stop = (self.device.create_event(_timing_options(EventOptions)) for _ in range(2))
            self.stream.record(start)
        launch(self.stream, config, kernel, *args)
        if start is not None and stop is not None:
            self.stream.record(stop)
            self.stream.sync()
            return stop - start
        self.stream.sync()
        return None

    def _allow_smem(self, kernel, nbytes: int) -> None:
        """Opt a kernel into more than 48 KiB of dynamic shared memory."""
        from cuda.bindings import driver
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        handle = kernel.handle
        if isinstance(handle, driver.CUkernel):
            _check(driver.cuKernelSetAttribute(attr, int(nbytes), handle, int(self.device.device_id)),
                   "cuKernelSetAttribute")
        else:
            _check(driver.cuFuncSetAttribute(handle, attr, int(nbytes)), "cuFuncSetAttribute")

    def run(self, cubin: bytes, entry: str, grid: int, block: int, dynamic_smem: int, inputs: np.ndarray,
            out_words: int, events: bool = False) -> Any:
        """Launch ``entry(const unsigned char* inputs, unsigned* out)`` and return ``out`` as uint32 (filled with
        0xFFFFFFFF first); with ``events``, return ``(out, milliseconds)``."""
        from cuda.core import ObjectCode
        kernel = ObjectCode.from_cubin(cubin).get_kernel(entry)
        d_in = self.upload(np.ascontiguousarray(inputs, dtype=np.uint8))
        d_out = self.upload(np.full(out_words, 0xFFFFFFFF, dtype=np.uint32))
        ms = self.launch(kernel, d_in, d_out, grid=grid, block=block, dynamic_smem=dynamic_smem, events=events)
        host = self.download(d_out, np.uint32, out_words)
        return (host, ms) if events and ms is not None else host


def _ptx_parameter_count(ptx: str, entry: str) -> int | None:
    """The parameters of ``.entry entry`` in ``ptx``, or None without its PTX. (Read from the PTX rather than asked
    of the driver: cuKernelGetParamInfo answers "invalid value" past the last parameter, an API error that
    compute-sanitizer reports in every launch that counts them that way.)"""
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\(([^)]*)\)", ptx or "")
    if m is None:
        return None
    return len(re.findall(r"\.param\b", m.group(1)))


def check_gpu(gpu: object) -> Gpu:
    """``gpu`` if it is a ``Gpu`` (what round trips launch on), else a TypeError naming what was given."""
    if not isinstance(gpu, Gpu):
        raise TypeError(f"expected a pycute.compile.runtime.Gpu to launch on, got {type(gpu).__name__}")
    return gpu


def encode_tensor_map(params: Any, address: int) -> Any:
    """``cuTensorMapEncodeTiled`` of a plan's tensor-map parameters (``copy.tma.TensorMapParams``) for the array at
    device pointer ``address``: the driver's ``CUtensorMap``. Needs a CUDA driver (CompileError elsewhere); a
    refusal by the driver is a CompileError naming every field."""
    if not driver_available():
        raise CompileError(f"encoding a tensor map needs the CUDA driver: {skip_reason()}")
    from cuda.bindings import driver
    cu = driver
    dims = [cu.cuuint64_t(int(d)) for d in params.global_dims]
    strides = [cu.cuuint64_t(int(s)) for s in params.global_strides]
    box = [cu.cuuint32_t(int(b)) for b in params.box]
    elem = [cu.cuuint32_t(int(e)) for e in params.element_strides]
    err, tmap = cu.cuTensorMapEncodeTiled(
        cu.CUtensorMapDataType(params.data_type), params.rank, int(address), dims, strides, box, elem,
        cu.CUtensorMapInterleave(params.interleave), cu.CUtensorMapSwizzle(params.swizzle.code),
        cu.CUtensorMapL2promotion(params.l2_promotion), cu.CUtensorMapFloatOOBfill(params.oob_fill))
    if int(err) != 0:
        raise CompileError(f"cuTensorMapEncodeTiled refused the map ({err}): {params!r} at {address:#x}")
    return tmap


def encode_im2col_map(params: Any, address: int) -> Any:
    """``cuTensorMapEncodeIm2col`` of an im2col plan's map parameters (``copy.tma.im2col.Im2colMapParams``; its W
    modes through ``cuTensorMapEncodeIm2colWide``, compute capability 10.0) for activations at ``address``. Needs
    a CUDA driver (CompileError elsewhere); a refusal is a CompileError naming every field."""
    if not driver_available():
        raise CompileError(f"encoding a tensor map needs the CUDA driver: {skip_reason()}")
    from cuda.bindings import driver as cu
    dims = [cu.cuuint64_t(int(d)) for d in params.global_dims]
    strides = [cu.cuuint64_t(int(s)) for s in params.global_strides]
    elem = [cu.cuuint32_t(int(e)) for e in params.element_strides]
    common = (cu.CUtensorMapDataType(params.data_type), params.rank, int(address), dims, strides)
    tail = (cu.CUtensorMapSwizzle(params.swizzle.code), cu.CUtensorMapL2promotion(params.l2_promotion),
            cu.CUtensorMapFloatOOBfill(params.oob_fill))
    none = cu.CUtensorMapInterleave(0)
    if params.mode == "im2col":
        err, tmap = cu.cuTensorMapEncodeIm2col(*common, list(params.lower), list(params.upper), params.channels,
                                               params.pixels, elem, none, *tail)
    else:
        wide = getattr(cu.CUtensorMapIm2ColWideMode, "CU_TENSOR_MAP_IM2COL_WIDE_MODE_" + params.mode.upper())
        err, tmap = cu.cuTensorMapEncodeIm2colWide(*common, params.lower[0], params.upper[0], params.channels,
                                                   params.pixels, elem, none, wide, *tail)
    if int(err) != 0:
        raise CompileError(f"cuTensorMapEncodeIm2col refused the map ({err}): {params!r} at {address:#x}")
    return tmap


class _ArrayView:
    """A device array as ``__cuda_array_interface__`` (row-major shape, byte strides), for cuda.core's views."""

    def __init__(self, address: int, shape: tuple, strides: tuple, itemsize: int):
        self.__cuda_array_interface__ = {"shape": shape, "strides": strides, "typestr": f"<u{itemsize}",
                                         "data": (address, False), "version": 3}


def tensor_map_arg(params: Any, address: int) -> Any:
    """A plan's tensor map (``copy.tma.TensorMapParams``) for the array at ``address``, as a kernel argument
    passed by value: cuda.core's ``TensorMapDescriptor``, encoded by the driver from the same parameters. The
    kernel declares ``const __grid_constant__ pycute_tensor_map map`` and hands ``&map`` to the TMA functions (no
    tensormap fence is needed). Needs a CUDA driver (CompileError elsewhere)."""
    if not driver_available():
        raise CompileError(f"encoding a tensor map needs the CUDA driver: {skip_reason()}")
    from cuda.core.utils import StridedMemoryView
    from cuda.core._tensor_map import (TensorMapDataType, TensorMapL2Promotion, TensorMapOOBFill,
                                       TensorMapSwizzle)
    elem = {0: 1, 1: 2, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2, 10: 4, 11: 4, 12: 4}[params.data_type]
    view = StridedMemoryView.from_cuda_array_interface(
        _ArrayView(int(address), tuple(reversed(params.global_dims)),
                   tuple(reversed((elem,) + tuple(params.global_strides))), elem), stream_ptr=-1)
    data_type = {0: "UINT8", 1: "UINT16", 2: "UINT32", 3: "INT32", 4: "UINT64", 5: "INT64", 6: "FLOAT16",
                 7: "FLOAT32", 8: "FLOAT64", 9: "BFLOAT16", 11: "TFLOAT32"}[params.data_type]
    swizzle = ("NONE", "SWIZZLE_32B", "SWIZZLE_64B", "SWIZZLE_128B")[params.swizzle.code]
    return view.as_tensor_map(tuple(reversed(params.box)), element_strides=tuple(reversed(params.element_strides)),
                              data_type=getattr(TensorMapDataType, data_type),
                              swizzle=getattr(TensorMapSwizzle, swizzle),
                              l2_promotion=(TensorMapL2Promotion.NONE, TensorMapL2Promotion.L2_64B,
                                            TensorMapL2Promotion.L2_128B, TensorMapL2Promotion.L2_256B)[
                                  params.l2_promotion],
                              oob_fill=(TensorMapOOBFill.NONE, TensorMapOOBFill.NAN_REQUEST_ZERO_FMA)[params.oob_fill])


def tensor_map_bytes(tmap: Any) -> bytes:
    """The 128 bytes of a ``CUtensorMap`` (to place in device memory or a kernel parameter)."""
    import ctypes
    return ctypes.string_at(int(tmap.getPtr()), 128)
