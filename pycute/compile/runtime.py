"""Optional GPU runtime: load a cubin and launch a kernel through the CUDA driver API (``cuda.bindings.driver``).

Nothing here touches the driver unless ``driver_available()`` found libcuda first: on a machine without a driver
the driver bindings raise, and some cuda.core calls can hang a process (toolchain-cpu-only.md section 7).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

import numpy as np

from ..errors import CompileError

__all__ = ["driver_available", "device_info", "tcgen05_device", "skip_reason", "Gpu"]


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
def device_info():
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


def tcgen05_device() -> bool:
    """True on an sm_100-family device (compute capability 10.x or 11.x: B200/B300/Thor-class)."""
    info = device_info()
    return info is not None and info[1][0] in (10, 11)


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


class Gpu:
    """Device 0: a context, module loading and kernel launches (only constructed where a driver exists)."""

    def __init__(self):
        if not driver_available():
            raise CompileError(skip_reason())
        from cuda.bindings import driver
        self.driver = driver
        _check(driver.cuInit(0), "cuInit")
        self.device = _check(driver.cuDeviceGet(0), "cuDeviceGet")
        self.context = _check(driver.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
        _check(driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def __repr__(self) -> str:
        info = device_info()
        return f"Gpu({info[0]}, sm_{info[1][0]}{info[1][1]})" if info else "Gpu(?)"

    def run(self, cubin: bytes, entry: str, grid: int, block: int, dynamic_smem: int, inputs: np.ndarray,
            out_words: int, events: bool = False):
        """Launch ``entry(const unsigned char* inputs, unsigned* out)`` and return ``out`` as uint32; with
        ``events``, return ``(out, milliseconds)`` timed by CUDA events around the launch."""
        d = self.driver
        module = _check(d.cuModuleLoadData(cubin), "cuModuleLoadData")
        try:
            fn = _check(d.cuModuleGetFunction(module, entry.encode()), "cuModuleGetFunction")
            _check(d.cuFuncSetAttribute(fn, d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        dynamic_smem), "cuFuncSetAttribute")
            inputs = np.ascontiguousarray(inputs, dtype=np.uint8)
            d_in = _check(d.cuMemAlloc(max(inputs.nbytes, 1)), "cuMemAlloc")
            d_out = _check(d.cuMemAlloc(out_words * 4), "cuMemAlloc")
            try:
                _check(d.cuMemcpyHtoD(d_in, inputs.ctypes.data, inputs.nbytes), "cuMemcpyHtoD")
                _check(d.cuMemsetD32(d_out, 0xFFFFFFFF, out_words), "cuMemsetD32")
                args = ((int(d_in), int(d_out)), (ctypes.c_void_p, ctypes.c_void_p))
                if events:
                    start = _check(d.cuEventCreate(0), "cuEventCreate")
                    stop = _check(d.cuEventCreate(0), "cuEventCreate")
                    _check(d.cuEventRecord(start, 0), "cuEventRecord")
                _check(d.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, dynamic_smem, 0, args, 0), "cuLaunchKernel")
                if events:
                    _check(d.cuEventRecord(stop, 0), "cuEventRecord")
                _check(d.cuCtxSynchronize(), "kernel execution")
                host = np.empty(out_words, dtype=np.uint32)
                _check(d.cuMemcpyDtoH(host.ctypes.data, d_out, out_words * 4), "cuMemcpyDtoH")
                if not events:
                    return host
                ms = _check(d.cuEventElapsedTime(start, stop), "cuEventElapsedTime")
                d.cuEventDestroy(start)
                d.cuEventDestroy(stop)
                return host, float(ms)
            finally:
                d.cuMemFree(d_in)
                d.cuMemFree(d_out)
        finally:
            d.cuModuleUnload(module)
