"""The launcher: any pycute-built kernel (a ``Kernel`` configuration) compiled once, loaded once per device, and
launched on torch's current stream through the driver's ``cuLaunchKernelEx`` (CUDA driver API, "Execution
Control"), the cluster given as a launch attribute, so that torch's events, streams and CUDA graphs see it as one of
theirs. Everything that does not depend on the call is done when the launcher is made: the parameter block's
layout is read from the kernel's PTX (``.entry`` parameters: sizes and alignments), the launch configuration, the
cluster attribute and the array of parameter pointers are built once per thread; a call packs its arguments into
the block with one ``struct.pack_into`` and makes one ctypes call. torch is imported lazily: importing pycute needs
neither torch nor a GPU, and a launch without them raises ``LaunchError`` saying which is missing."""
from __future__ import annotations

import ctypes
import functools
import importlib
import re
import struct
import threading
from typing import Any, Sequence

from ..errors import LaunchError
from .protocol import Kernel, LaunchShape

__all__ = ["Launcher", "ParamLayout", "param_layout", "torch_module", "current_stream", "sm_count"]

CUDA_ERROR_INVALID_CONTEXT = 201
_CLUSTER_DIMENSION = 4            # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (cuda.h, CUlaunchAttributeID)
#: PTX parameter types (PTX ISA #parameter-state-space) -> struct codes.
_CODES = {"b8": "B", "u8": "B", "s8": "b", "b16": "H", "u16": "H", "s16": "h", "b32": "I", "u32": "I", "s32": "i",
          "f32": "f", "b64": "Q", "u64": "Q", "s64": "q", "f64": "d"}


@functools.lru_cache(maxsize=1)
def torch_module() -> Any:
    """torch, imported on first use; LaunchError when it is not installed."""
    try:
        return importlib.import_module("torch")
    except ImportError:
        raise LaunchError("launching a pycute kernel needs torch (pip install torch): pycute imports without it, "
                          "but a launch runs on torch's tensors and stream") from None


def current_stream(device: int) -> int:
    """The raw ``cudaStream_t`` of torch's current stream on ``device``."""
    torch = torch_module()
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return int(raw(device)) if raw is not None else int(torch.cuda.current_stream(device).cuda_stream)


_sms: dict[int, int] = {}


def sm_count(device: int) -> int:
    """The SMs of CUDA device ``device`` (asked of torch once)."""
    n = _sms.get(device)
    if n is None:
        n = _sms[device] = torch_module().cuda.get_device_properties(device).multi_processor_count
    return n


class ParamLayout:
    """An entry's parameters as one packed block: each parameter's offset, size and struct code (``128s`` for a
    128-byte tensor map, ``i`` for an ``.s32``, ``f`` for an ``.f32``, ...)."""

    def __init__(self, entry: str, params: Sequence[tuple[str, int, int, str]]):
        self.entry = entry
        self.params = tuple(params)                     # (name, offset, size, code)
        fmt, at = "<", 0
        for _, offset, size, code in self.params:
            fmt += "x" * (offset - at) + code
            at = offset + size
        self.size = at
        self.packer = struct.Struct(fmt)

    def __len__(self) -> int:
        return len(self.params)

    def __repr__(self) -> str:
        return f"ParamLayout({self.entry}: " + ", ".join(f"{n}@{o}:{c}" for n, o, _, c in self.params) + ")"


def param_layout(ptx: str, entry: str) -> ParamLayout:
    """The parameter block of ``.entry entry`` in ``ptx``: each ``.param`` at its alignment (``.align N`` or its
    type's size), byte arrays (tensor maps passed by value) as one field."""
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\(([^)]*)\)", ptx)
    if m is None:
        raise LaunchError(f"the compiled kernel has no entry {entry!r}")
    params, at = [], 0
    for decl in re.finditer(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(\w+)(?:\[(\d+)\])?", m.group(1)):
        align, kind, name, count = decl.groups()
        if kind not in _CODES:
            raise LaunchError(f"{entry}: parameter {name} is .{kind}, which the launcher does not pack")
        unit = struct.calcsize("<" + _CODES[kind])
        size = unit * int(count or 1)
        align_to = int(align or unit)
        at = -(-at // align_to) * align_to
        params.append((name, at, size, f"{size}s" if count else _CODES[kind]))
        at += size
    return ParamLayout(entry, params)


class _LaunchConfig(ctypes.Structure):
    """``CUlaunchConfig`` (cuda.h)."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p),
                ("numAttrs", ctypes.c_uint)]


class _LaunchAttribute(ctypes.Structure):
    """``CUlaunchAttribute`` (cuda.h): the id, padding to 8 bytes, a 64-byte value union."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_ubyte * 64)]


@functools.lru_cache(maxsize=1)
def _driver() -> Any:
    """libcuda through ctypes, with the signatures of the calls the hot path makes."""
    from ..compile.runtime import driver_available, skip_reason
    if not driver_available():
        raise LaunchError(f"launching needs the CUDA driver: {skip_reason()}")
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuLaunchKernelEx.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.cuLaunchKernelEx.restype = ctypes.c_int
    lib.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
    lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    return lib


def _error_name(code: int) -> str:
    name = ctypes.c_char_p()
    _driver().cuGetErrorName(code, ctypes.byref(name))
    return (name.value or b"?").decode()


class _Thread(threading.local):
    """One thread's parameter block, its pointer array and its launch configuration (a launch copies the
    parameters, so a block is reused by the next call of the same thread)."""

    def __init__(self, layout: ParamLayout, shape: LaunchShape, attribute: Any):
        self.block = ctypes.create_string_buffer(layout.size + 64)
        base = ctypes.addressof(self.block)
        self.offset = -base % 64                        # the block 64-byte aligned, as the parameters' alignment
        self.pointers = (ctypes.c_void_p * max(1, len(layout)))(
            *[base + self.offset + offset for _, offset, _, _ in layout.params])
        self.config = _LaunchConfig(1, 1, 1, shape.threads, 1, 1, shape.smem_bytes, None,
                                    ctypes.addressof(attribute) if attribute is not None else None,
                                    1 if attribute is not None else 0)


class Launcher:
    """A ``Kernel`` configuration compiled, loaded on CUDA device ``device`` and launchable on torch's current
    stream: ``launcher(grid, *args)`` with the arguments in the entry's order (a tensor map as its 128 bytes, from
    ``TensorMapSpec.encode``; an int; a float). ``Launcher.of`` caches one per (configuration, device)."""

    _made: dict[tuple[Any, int], "Launcher"] = {}
    _lock = threading.Lock()

    def __init__(self, kernel: Kernel, device: int = 0):
        torch = torch_module()
        if not torch.cuda.is_available():
            raise LaunchError("launching needs a CUDA GPU: torch sees none (torch.cuda.is_available() is False)")
        from cuda.bindings import driver as cu
        self.kernel, self.device, self.shape = kernel, int(device), kernel.launch_shape
        compiled = kernel.compile()
        self.layout = param_layout(compiled.ptx, self.shape.entry)
        with torch.cuda.device(self.device):
            torch.zeros(1, device=f"cuda:{self.device}")          # the device's primary context, current here
            err, self.context = cu.cuCtxGetCurrent()
            err, self.module = cu.cuModuleLoadData(compiled.cubin)
            if int(err):
                raise LaunchError(f"cuModuleLoadData refused {kernel!r}: {err}")
            err, fn = cu.cuModuleGetFunction(self.module, self.shape.entry.encode())
            if int(err):
                raise LaunchError(f"{kernel!r}: no entry {self.shape.entry!r} ({err})")
            attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            (err,) = cu.cuFuncSetAttribute(fn, attr, self.shape.smem_bytes)
            if int(err):
                raise LaunchError(f"{kernel!r} asks {self.shape.smem_bytes} B of dynamic shared memory, which device "
                                  f"{self.device} refuses ({err})")
        self.function = ctypes.c_void_p(int(fn))
        self.attribute = None
        if self.shape.cluster_size > 1:
            self.attribute = _LaunchAttribute(_CLUSTER_DIMENSION)
            struct.pack_into("<III", self.attribute.value, 0, *self.shape.cluster)
        self._thread = _Thread(self.layout, self.shape, self.attribute)
        self._launch = _driver().cuLaunchKernelEx

    @classmethod
    def of(cls, kernel: Kernel, device: int = 0) -> "Launcher":
        """The launcher of ``kernel`` on ``device``, made on first use (compiling, or NVRTC's on-disk cache)."""
        key = (kernel, device)
        found = cls._made.get(key)
        if found is None:
            with cls._lock:
                found = cls._made.get(key)
                if found is None:
                    found = cls._made[key] = cls(kernel, device)
        return found

    def __repr__(self) -> str:
        return f"Launcher({self.kernel!r} on cuda:{self.device}, {self.layout!r})"

    def __call__(self, grid: int | tuple[int, int, int], *args: Any, stream: int | None = None) -> None:
        """Launch on ``stream`` (a raw ``cudaStream_t``; default torch's current stream on the device) with
        ``grid`` CTAs (an int, or x, y, z), each dimension a whole number of clusters."""
        t = self._thread
        cfg = t.config
        x, y, z = (grid, 1, 1) if isinstance(grid, int) else grid
        cx, cy, cz = self.shape.cluster
        if x % cx or y % cy or z % cz or x < 1 or y < 1 or z < 1:
            raise LaunchError(f"{self.shape.entry}: grid {(x, y, z)} is not a whole number of clusters "
                              f"{self.shape.cluster}")
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = x, y, z
        cfg.hStream = current_stream(self.device) if stream is None else stream
        try:
            self.layout.packer.pack_into(t.block, t.offset, *args)
        except struct.error as e:
            raise LaunchError(f"{self.shape.entry}: the arguments do not fit its parameters {self.layout!r}: "
                              f"{e} (given {len(args)})") from None
        rc = self._launch(ctypes.byref(cfg), self.function, t.pointers, None)
        if rc == CUDA_ERROR_INVALID_CONTEXT:            # a thread with no current context: the device's primary one
            _driver().cuCtxSetCurrent(ctypes.c_void_p(int(self.context)))
            rc = self._launch(ctypes.byref(cfg), self.function, t.pointers, None)
        if rc:
            raise LaunchError(f"cuLaunchKernelEx of {self.shape.entry} failed: {_error_name(rc)} (grid {(x, y, z)}, "
                              f"{self.shape.threads} threads, {self.shape.smem_bytes} B shared, cluster "
                              f"{self.shape.cluster})")
