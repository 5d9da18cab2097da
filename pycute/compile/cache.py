"""On-disk compile cache: content-addressed, atomic, integrity-checked, safe across processes.

An entry is ``MAGIC | sha256(payload) | payload`` written to a temporary file in the cache folder and renamed into
place (``os.replace`` is atomic on POSIX), so a reader sees a whole entry or none. Concurrent writers of the same
key write identical bytes. A truncated or corrupted entry fails its checksum and is rebuilt.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

__all__ = ["CompileCache", "default_cache_dir"]

_MAGIC = b"PYCUTE-CUBIN-CACHE-1\n"


def default_cache_dir() -> Path:
    """``$PYCUTE_CACHE_DIR``, else ``$XDG_CACHE_HOME/pycute``, else ``~/.cache/pycute``."""
    env = os.environ.get("PYCUTE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pycute"


class CompileCache:
    """A folder of cache entries keyed by a hex digest."""

    def __init__(self, directory: os.PathLike | str | None = None):
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def __repr__(self) -> str:
        return f"CompileCache({str(self.directory)!r})"

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.bin"

    def get(self, key: str) -> bytes | None:
        """The payload stored under ``key``, or None if absent, truncated or corrupted (a corrupt entry is removed)."""
        p = self.path(key)
        try:
            blob = p.read_bytes()
        except OSError:
            return None
        head = len(_MAGIC) + 32
        if len(blob) >= head and blob.startswith(_MAGIC):
            digest, payload = blob[len(_MAGIC):head], blob[head:]
            if hashlib.sha256(payload).digest() == digest:
                return payload
        try:
            p.unlink()
        except OSError:
            pass
        return None

    def put(self, key: str, payload: bytes) -> None:
        """Store ``payload`` atomically; failures to write (read-only folder, full disk) are not errors."""
        p = self.path(key)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-", suffix=".bin")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
                os.replace(tmp, p)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return
