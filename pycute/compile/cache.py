"""On-disk compile cache: keyed, versioned, integrity-checked, plain bytes, safe across processes.

An entry file is one JSON header line and the raw bytes of its sections, nothing executable (no pickle: other
processes may write the folder)::

    {"format": "pycute-cache", "version": 2, "key": "<64 hex>", "sha256": "<64 hex>", "sections": [["cubin", n], ...]}\\n
    <section bytes, in order>

``get(key)`` returns the sections only if the header parses, names this format and version, names *this* key (a
valid entry copied over another key's file is not returned), lists sections that fill the body exactly, and the
body's SHA-256 matches; anything else is removed and reported as absent, so the caller rebuilds it. Entries are
written to a temporary file and renamed into place (``os.replace`` is atomic on POSIX): a reader sees a whole entry
or none, and concurrent writers of one key write identical bytes.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

__all__ = ["CompileCache", "default_cache_dir", "FORMAT", "VERSION"]

FORMAT = "pycute-cache"
VERSION = 2
_KEY = re.compile(r"[0-9a-f]{64}")
_MAX_HEADER = 4096


def default_cache_dir() -> Path:
    """``$PYCUTE_CACHE_DIR``, else ``$XDG_CACHE_HOME/pycute``, else ``~/.cache/pycute``."""
    env = os.environ.get("PYCUTE_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pycute"


def _check_key(key) -> str:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"cache key must be 64 lowercase hex digits (a SHA-256), got {key!r}")
    return key


def _parse(blob: bytes, key: str) -> dict[str, bytes] | None:
    """The sections of an entry file for ``key``, or None if it is not exactly such an entry."""
    end = blob.find(b"\n", 0, _MAX_HEADER)
    if end < 0:
        return None
    try:
        header = json.loads(blob[:end].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("version") != VERSION \
            or header.get("key") != key or not isinstance(header.get("sections"), list):
        return None
    body = blob[end + 1:]
    if hashlib.sha256(body).hexdigest() != header.get("sha256"):
        return None
    sections, at = {}, 0
    for item in header["sections"]:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and type(item[1]) is int
                and item[1] >= 0 and item[0] not in sections):
            return None
        sections[item[0]] = body[at:at + item[1]]
        at += item[1]
    return sections if at == len(body) else None


class CompileCache:
    """A folder of cache entries, each holding named byte sections under a SHA-256 key."""

    def __init__(self, directory: os.PathLike | str | None = None):
        if directory is not None and not isinstance(directory, (str, os.PathLike)):
            raise TypeError(f"CompileCache: directory must be a path, got {directory!r}")
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def __repr__(self) -> str:
        return f"CompileCache({str(self.directory)!r})"

    def path(self, key: str) -> Path:
        key = _check_key(key)
        return self.directory / key[:2] / f"{key}.bin"

    def get(self, key: str) -> dict[str, bytes] | None:
        """The sections stored under ``key``; None if absent, or if the file is anything but ``key``'s intact entry
        in this format (such a file is removed)."""
        p = self.path(key)
        try:
            blob = p.read_bytes()
        except OSError:
            return None
        sections = _parse(blob, key)
        if sections is None:
            try:
                p.unlink()
            except OSError:
                pass
        return sections

    def put(self, key: str, sections: dict[str, bytes]) -> None:
        """Store ``sections`` under ``key`` atomically; failures to write (read-only folder, full disk) are not
        errors: the next call compiles again."""
        p = self.path(key)
        for name, data in sections.items():
            if not isinstance(name, str) or not isinstance(data, bytes):
                raise TypeError(f"cache sections must map names to bytes, got {name!r}: {type(data).__name__}")
        body = b"".join(sections.values())
        header = {"format": FORMAT, "version": VERSION, "key": key, "sha256": hashlib.sha256(body).hexdigest(),
                  "sections": [[name, len(data)] for name, data in sections.items()]}
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-", suffix=".bin")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(json.dumps(header).encode() + b"\n" + body)
                os.replace(tmp, p)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return
