"""SASS inspection with nvdisasm (from the nvidia-cuda-nvdisasm wheel; not on PATH)."""
from __future__ import annotations

from typing import Iterable

import collections
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
import threading

from ..errors import CompileError

__all__ = ["nvdisasm_path", "disassemble", "sass_instructions", "function_instructions", "opcode_histogram",
           "utccp_instructions"]

_INSTR = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([^;]*?)\s*;")
_FUNCTION = re.compile(r"^\s*\.section\s+\.text\.([\w$]+),", re.M)


@functools.lru_cache(maxsize=1)
def nvdisasm_path() -> str:
    """The nvdisasm binary: the PyPI wheel's, else one on PATH."""
    candidates = []
    for key in ("purelib", "platlib"):
        base = os.path.join(sysconfig.get_paths()[key], "nvidia")
        for sub in ("cu13", "cu12", "cuda_nvdisasm"):
            candidates.append(os.path.join(base, sub, "bin", "nvdisasm"))
    candidates.append(shutil.which("nvdisasm") or "")
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise CompileError("nvdisasm not found: install nvidia-cuda-nvdisasm (a pycute dependency)")


#: The listings of the last cubins disassembled, by the cubin's SHA-256: nvdisasm spends about half a second starting up on
#: any cubin, and a compiled kernel's SASS is often read several times (its instructions, its histogram, its
#: functions).
_LISTINGS: collections.OrderedDict[str, str] = collections.OrderedDict()
_KEEP = 64
_LOCK = threading.Lock()


def disassemble(cubin: bytes) -> str:
    """The SASS listing of a cubin (the last few cubins' listings are remembered)."""
    if not isinstance(cubin, (bytes, bytearray)):
        raise TypeError(f"disassemble: a cubin is bytes, got {type(cubin).__name__}")
    key = hashlib.sha256(cubin).hexdigest()
    with _LOCK:
        if key in _LISTINGS:
            _LISTINGS.move_to_end(key)
            return _LISTINGS[key]
    listing = _nvdisasm(cubin)
    with _LOCK:
        _LISTINGS[key] = listing
        while len(_LISTINGS) > _KEEP:
            _LISTINGS.popitem(last=False)
    return listing


def _nvdisasm(cubin: bytes) -> str:
    try:
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(cubin)
            f.flush()
            r = subprocess.run([nvdisasm_path(), "-c", f.name], capture_output=True, text=True)
    except OSError as e:      # no space for the temporary file, no permission, nvdisasm not executable
        raise CompileError(f"nvdisasm could not run: {e}") from None
    if r.returncode:
        raise CompileError(f"nvdisasm failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def sass_instructions(listing: str) -> list[str]:
    """Instruction texts in order (predicate guards removed)."""
    return [m.group(1) for m in _INSTR.finditer(listing)]


def function_instructions(listing: str) -> dict[str, list[str]]:
    """Each function's instructions, by name (the listing's ``.text.<name>`` sections)."""
    starts = [(m.group(1), m.end()) for m in _FUNCTION.finditer(listing)]
    ends = [m.start() for m in _FUNCTION.finditer(listing)][1:] + [len(listing)]
    return {name: sass_instructions(listing[start:end]) for (name, start), end in zip(starts, ends)}


def opcode_histogram(instructions: Iterable[str]) -> dict[str, int]:
    """Opcode with modifiers (first word) -> count."""
    return dict(collections.Counter(i.split()[0] for i in instructions if i))


def utccp_instructions(instructions: Iterable[str]) -> list[str]:
    """The UTCCP (tcgen05.cp) instructions' opcodes."""
    return [i.split()[0] for i in instructions if i.startswith("UTCCP")]
