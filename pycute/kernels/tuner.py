"""Configurations chosen by measurement: a kernel's candidates timed on the GPU present, the winner remembered on
disk. The record of a problem is keyed by the kernel, the device's name, the operands' type, the problem's *shape
class* (each extent rounded up to a power of two: problems of one class share a tile shape's waves closely enough)
and pycute's version (a new version may change every kernel). Nothing is tuned unless asked: ``tune`` functions, or
the environment switch ``PYCUTE_TUNE=1`` (then a call of an untuned class tunes it first); a class with no record
takes the kernel's first guess (``choose``).

The records are one JSON file (``$PYCUTE_TUNING_FILE``, else ``tuning.json`` in pycute's cache directory), read once
per process and written whole through a temporary file and a rename, so a reader never sees half a file (concurrent
tuners: the last writer's records win)."""
from __future__ import annotations

import functools
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any, Callable

import attrs

from ..compile.cache import default_cache_dir
from ..version import __version__

__all__ = ["TuningRecords", "records", "shape_class", "tuning_key", "tuning_enabled", "time_ms", "TuneResult"]


def shape_class(*extents: int) -> tuple[int, ...]:
    """Each extent rounded up to a power of two (1 -> 1, 1000 -> 1024, 1024 -> 1024)."""
    return tuple(1 << max(0, int(e) - 1).bit_length() for e in extents)


def tuning_key(kernel: str, device: str, dtype: str, extents: tuple[int, ...]) -> str:
    """The record's key: kernel, device name, operand type, shape class and pycute's version."""
    return "|".join([kernel, device, dtype, "x".join(map(str, shape_class(*extents))), __version__])


def tuning_enabled() -> bool:
    """``PYCUTE_TUNE=1``: a call of an untuned shape class tunes it first."""
    return os.environ.get("PYCUTE_TUNE", "") == "1"


@attrs.frozen(eq=False)
class TuningRecords:
    """The records file: ``get(key)`` (a record dict or None) and ``put(key, record)`` (written at once)."""

    path: Path
    _records: dict = attrs.field(factory=dict)

    @classmethod
    def load(cls, path: Path) -> "TuningRecords":
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        return cls(path, data if isinstance(data, dict) else {})

    def get(self, key: str) -> dict | None:
        found = self._records.get(key)
        return found if isinstance(found, dict) else None

    def put(self, key: str, record: dict) -> None:
        self._records[key] = record
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tuning-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(self._records, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    def __len__(self) -> int:
        return len(self._records)


@functools.lru_cache(maxsize=None)
def _records(path: str) -> TuningRecords:
    return TuningRecords.load(Path(path))


def records() -> TuningRecords:
    """This process's records (``$PYCUTE_TUNING_FILE`` or the cache directory's ``tuning.json``)."""
    return _records(os.environ.get("PYCUTE_TUNING_FILE") or str(default_cache_dir() / "tuning.json"))


def time_ms(run: Callable[[], None], warmup: int = 3, reps: int = 20) -> float:
    """The median milliseconds of ``run`` on torch's current stream, by CUDA events (``reps`` runs after
    ``warmup``)."""
    from .launcher import torch_module
    torch = torch_module()
    for _ in range(warmup):
        run()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, stop in events:
        start.record()
        run()
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(stop) for start, stop in events)


@attrs.frozen
class TuneResult:
    """A tuning's outcome: the winner, the first guess, and each candidate's milliseconds (None: refused or
    wrong)."""

    winner: Any
    first_guess: Any
    times: tuple[tuple[Any, float | None], ...]

    @property
    def speedup(self) -> float:
        """The first guess's time over the winner's."""
        t = dict(self.times)
        first, best = t.get(self.first_guess), t.get(self.winner)
        return first / best if first and best else float("nan")
