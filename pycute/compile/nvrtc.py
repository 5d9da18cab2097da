"""NVRTC: CUDA C++ -> sm_100a cubin (ptxas runs inside NVRTC, so illegal tcgen05 forms are rejected) plus PTX.

Works on a machine without a GPU or CUDA driver: ``cuda.bindings.nvrtc`` loads only libnvrtc. CUDA's own device
headers (``cuda_bf16.h``, ``cuda_fp16.h``, ``cuda_fp8.h``, ...) come from the ``nvidia-cuda-runtime`` wheel, a
dependency, whose include directory every compile gets (``cuda_include_dir``).
"""
from __future__ import annotations

from typing import Any, Sequence

import contextlib
import functools
import hashlib
import os
import re
import time
from pathlib import Path

import attrs

from ..errors import CompileError
from .cache import CompileCache

__all__ = ["Compiled", "compile_cuda", "nvrtc_version", "ARCHES", "include_dir", "cuda_include_dir"]

ARCHES = ("sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f", "sm_90a", "sm_80")
_DEFAULT_OPTIONS = ("-std=c++17",)


@functools.lru_cache(maxsize=1)
def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:   # pragma: no cover - a dependency of the package
        raise CompileError(f"cuda-bindings is not importable ({e}); install pycute's dependencies") from None
    return nvrtc


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> tuple[int, int]:
    err, major, minor = _nvrtc().nvrtcVersion()
    if err != _nvrtc().nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"nvrtcVersion failed: {err}")
    return major, minor


def include_dir() -> Path:
    """The directory holding ``pycute/sm100.cuh`` (pass it to nvcc as ``-I``); ``compile_cuda`` always adds it."""
    return Path(__file__).resolve().parent.parent / "include"


@functools.lru_cache(maxsize=1)
def cuda_include_dir() -> Path | None:
    """The directory of CUDA's device headers (``cuda_bf16.h``, ``cuda_fp16.h``, ``cuda_fp8.h``): the
    ``nvidia-cuda-runtime`` wheel's, else a local toolkit's (as ``cuda.pathfinder`` finds it); None when neither
    exists. ``compile_cuda`` adds it after pycute's and the caller's directories."""
    try:
        from cuda.pathfinder import locate_nvidia_header_directory
        found = locate_nvidia_header_directory("cudart")
    except Exception:                       # noqa: BLE001  a missing or older pathfinder: no CUDA headers
        return None
    if found is None or not (Path(found.abs_path) / "cuda_bf16.h").is_file():
        return None
    return Path(found.abs_path).resolve()


def _fingerprint(root: Path) -> str:
    """CUDA's header directory by the sizes and times of the headers kernels include (hashing all of it, several
    MB, on every compile would cost more than the compile cache saves)."""
    parts = [str(root)]
    for name in ("cuda_bf16.h", "cuda_bf16.hpp", "cuda_fp16.h", "cuda_fp16.hpp", "cuda_fp8.h", "cuda_fp8.hpp",
                 "cuda_runtime_api.h"):
        path = root / name
        if path.is_file():
            st = path.stat()
            parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


@attrs.frozen(repr=False)
class Compiled:
    """A compiled translation unit: the cubin, the PTX, and where it came from."""

    source: str
    arch: str
    options: tuple[str, ...]
    cubin: bytes
    ptx: str
    log: str
    from_cache: bool = attrs.field(default=False, eq=False)
    seconds: float = attrs.field(default=0.0, eq=False)

    def sass(self) -> str:
        """nvdisasm's listing of the cubin."""
        from .sass import disassemble
        return disassemble(self.cubin)

    def instructions(self) -> list[str]:
        """The SASS instructions, without addresses, predicates or encodings."""
        from .sass import sass_instructions
        return sass_instructions(self.sass())

    def object_code(self, name: str = "") -> Any:
        """The cubin as a ``cuda.core`` ``ObjectCode`` (nothing touches the driver until a kernel is fetched from
        it, so this is safe on a machine without one)."""
        from cuda.core import ObjectCode
        return ObjectCode.from_cubin(self.cubin, name=name)

    def histogram(self) -> dict[str, int]:
        """SASS opcode (with modifiers) -> count."""
        from .sass import opcode_histogram
        return opcode_histogram(self.instructions())

    def __repr__(self) -> str:
        origin = "cache" if self.from_cache else f"NVRTC {self.seconds * 1000:.0f} ms"
        return f"Compiled({self.arch}, cubin {len(self.cubin)} B, ptx {len(self.ptx)} chars, from {origin})"


def _get(prog, size_fn, get_fn) -> bytes:
    nvrtc = _nvrtc()
    err, n = size_fn(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"{size_fn.__name__} failed: {err}")
    buf = bytearray(n)   # never b" " * n: NVRTC writes into it, and a 1-byte bytes object is interned
    (err,) = get_fn(prog, buf)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"{get_fn.__name__} failed: {err}")
    return bytes(buf)


def _source_excerpt(source: str, log: str, name: str) -> str:
    """The generated-source lines an NVRTC log points at (``name(LINE): error``)."""
    lines = source.splitlines()
    out = []
    for m in re.finditer(rf"{re.escape(name)}\((\d+)\): (?:error|warning)", log):
        n = int(m.group(1))
        lo, hi = max(1, n - 2), min(len(lines), n + 2)
        out.append("\n".join(f"{'>' if k == n else ' '} {k:5d} | {lines[k - 1]}" for k in range(lo, hi + 1)))
    return "\n\n".join(dict.fromkeys(out))


def _ptx_excerpt(ptx: str, log: str) -> str:
    lines = ptx.splitlines()
    out = []
    for m in re.finditer(r"ptx input, line (\d+);", log):
        n = int(m.group(1))
        if 1 <= n <= len(lines):
            out.append(f"  PTX line {n}: {lines[n - 1].strip()}")
    return "\n".join(dict.fromkeys(out))


@contextlib.contextmanager
def _program(source: str, name: str, target: str, options: tuple):
    """Compile ``source`` for ``--gpu-architecture=target``; yields ``(program, result, log)``, then destroys it."""
    nvrtc = _nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"nvrtcCreateProgram failed: {err}")
    try:
        args = [f"--gpu-architecture={target}".encode()] + [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(args), args)
        log = _get(prog, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog).rstrip(b"\0").decode(
            errors="replace")
        yield prog, err, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _compile_uncached(source: str, arch: str, options: tuple, name: str) -> tuple[bytes, str, str]:
    nvrtc = _nvrtc()
    with _program(source, name, arch, options) as (prog, err, log):
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            detail = _source_excerpt(source, log, name)
            if "ptxas" in log:
                detail = _ptx_excerpt(_ptx_only(source, arch, options, name), log) or detail
            raise CompileError(f"NVRTC failed for {arch} ({err.name}):\n{log.strip()}"
                               + (f"\n\noffending lines:\n{detail}" if detail else ""))
        cubin = _get(prog, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
        ptx = _get(prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX).rstrip(b"\0").decode()
        return cubin, ptx, log


def _ptx_only(source: str, arch: str, options: tuple, name: str) -> str:
    """The PTX of a source whose cubin compile failed in ptxas (ptxas line numbers point into it)."""
    nvrtc = _nvrtc()
    with _program(source, name, arch.replace("sm_", "compute_"), options) as (prog, err, _):
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return ""
        return _get(prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX).rstrip(b"\0").decode()


def cache_key(source: str, arch: str, options: tuple) -> str:
    """The compile cache's key: NVRTC's version, the target, the options and the source, and the contents of the
    headers under every ``--include-path`` option."""
    major, minor = nvrtc_version()
    h = hashlib.sha256()
    for part in (f"nvrtc {major}.{minor}", arch, "\0".join(options), source, _header_digest(options)):
        h.update(part.encode())
        h.update(b"\x00\x01")
    return h.hexdigest()


def _include_options(include_dirs) -> tuple:
    if isinstance(include_dirs, (str, os.PathLike)) or not isinstance(include_dirs, (tuple, list)):
        raise TypeError(f"compile_cuda: include_dirs must be a sequence of paths, got {include_dirs!r}")
    out = []
    cuda = cuda_include_dir()
    for d in (include_dir(), *include_dirs, *([cuda] if cuda is not None else [])):
        if not isinstance(d, (str, os.PathLike)):
            raise TypeError(f"compile_cuda: an include directory must be a path, got {d!r}")
        if not Path(d).is_dir():
            raise CompileError(f"compile_cuda: include directory {str(d)!r} does not exist")
        out.append(f"--include-path={Path(d).resolve()}")
    return tuple(out)


def _header_digest(options: tuple) -> str:
    """A digest of every header under the ``--include-path`` directories (a cached cubin is rebuilt when one
    changes)."""
    h = hashlib.sha256()
    cuda = cuda_include_dir()
    for opt in options:
        if not opt.startswith("--include-path="):
            continue
        root = Path(opt.split("=", 1)[1])
        if root == cuda:
            h.update(_fingerprint(root).encode())
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in (".h", ".hpp", ".cuh", ".inl"):
                h.update(str(path.relative_to(root)).encode())
                h.update(path.read_bytes())
    return h.hexdigest()


def compile_cuda(source: str, arch: str = "sm_100a", options: Sequence[str] = (), name: str = "pycute.cu",
                 cache: CompileCache | None | bool = True,
                 include_dirs: Sequence[str | os.PathLike[str]] = (), checked: bool = False) -> Compiled:
    """Compile ``source`` to a cubin (and PTX) for ``arch``; raises CompileError with the log and offending lines.

    ``#include "pycute/sm100.cuh"`` and CUDA's ``<cuda_bf16.h>`` / ``<cuda_fp16.h>`` / ``<cuda_fp8.h>`` resolve with
    no flags (``cuda_include_dir``); ``include_dirs`` adds directories of the caller's own headers, ``options`` further NVRTC options (``-DNAME``, ``-lineinfo``, ...). ``cache``: True for the default
    on-disk cache, False for none, or a CompileCache (keyed by the source, options and every included header).
    ``checked=True`` defines ``PYCUTE_CHECKED``: generated functions then trap, after a printf naming the rule,
    on run-time values that break their preconditions (a TMA plan's coordinates, a retarget's fields).
    """
    if not isinstance(checked, bool):
        raise TypeError(f"compile_cuda: checked must be a bool, got {checked!r}")
    if not isinstance(source, str):
        raise TypeError(f"compile_cuda: source must be CUDA C++ text (str), got {type(source).__name__}")
    if not isinstance(name, str) or not isinstance(options, (tuple, list)) \
            or not all(isinstance(o, str) for o in options):
        raise TypeError(f"compile_cuda: name must be a str and options a sequence of str, got {name!r}, "
                        f"{options!r}")
    if arch not in ARCHES:
        raise CompileError(f"unsupported arch {arch!r}; one of {', '.join(ARCHES)} (tcgen05 needs an sm_100a, "
                           f"sm_100f, sm_103a/f or sm_110a/f target; sm_90a runs Hopper-era copies and the soft build; sm_80 "
                           f"cp.async alone)")
    options = tuple(_DEFAULT_OPTIONS) + tuple(options) + (("-DPYCUTE_CHECKED",) if checked else ()) \
        + _include_options(include_dirs)
    store = _store(cache)
    key = cache_key(source, arch, options) if store is not None else None
    if store is not None and key is not None:
        sections = store.get(key)
        if sections is not None and set(sections) == {"cubin", "ptx", "log"} \
                and sections["cubin"].startswith(b"\x7fELF"):
            try:
                ptx, log = sections["ptx"].decode(), sections["log"].decode()
            except UnicodeDecodeError:
                ptx = None
            if ptx is not None:
                return Compiled(source, arch, options, sections["cubin"], ptx, log, from_cache=True)
    t0 = time.perf_counter()
    cubin, ptx, log = _compile_uncached(source, arch, options, name)
    seconds = time.perf_counter() - t0
    if store is not None and key is not None:
        store.put(key, {"cubin": cubin, "ptx": ptx.encode(), "log": log.encode()})
    return Compiled(source, arch, options, cubin, ptx, log, from_cache=False, seconds=seconds)


def _store(cache) -> CompileCache | None:
    if cache is True:
        return CompileCache()
    if cache is False or cache is None:
        return None
    if not isinstance(cache, CompileCache):
        raise TypeError(f"compile_cuda: cache must be True, False, None or a CompileCache, got {cache!r}")
    return cache
