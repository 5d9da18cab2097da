"""Runs of one kernel under several schedules (``run_kernel(..., schedules=k, seed=s)``): the thread order first,
then k - 1 seeded orders in which any ready thread runs next for a random slice; every run's checks apply, and an
argument array that ends differently from the first run's is a ``ScheduleError`` (docs/interpreter.md, "Other
schedules")."""
from __future__ import annotations

import random
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import EmulationError

__all__ = ["ScheduleError", "run_schedules"]


class ScheduleError(EmulationError):
    """A kernel whose output depends on the order its threads run in: two schedules left different bytes in an
    argument array."""


def _arrays(args: Sequence[Any] | Mapping[str, Any]) -> list[tuple[str, np.ndarray]]:
    """The argument arrays a run may write (numpy arrays and tensor maps' arrays), by label."""
    items = args.items() if isinstance(args, Mapping) else enumerate(args)
    out = []
    for key, v in items:
        a = getattr(v, "array", v)
        if isinstance(a, np.ndarray):
            out.append((f"argument {key!r}" if isinstance(key, str) else f"argument {key}", a))
    return out


def _as_bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def run_schedules(launch: Callable[[random.Random | None], Any], args: Sequence[Any] | Mapping[str, Any],
                  schedules: int, seed: int) -> Any:
    """``launch(order)`` in thread order, then under ``schedules - 1`` seeded orders from the same inputs; the
    first run's result (the arrays keep its output)."""
    if isinstance(schedules, bool) or not isinstance(schedules, (int, np.integer)) or schedules < 1:
        raise EmulationError(f"run_kernel: schedules is a number of runs (at least 1), got {schedules!r}")
    arrays = _arrays(args)
    before = [a.copy() for _, a in arrays] if schedules > 1 else []
    first = launch(None)
    after = [a.copy() for _, a in arrays]
    for k in range(1, int(schedules)):
        for (_, a), b in zip(arrays, before):
            a[...] = b
        try:
            launch(random.Random(seed * 1_000_003 + k))
        except EmulationError as e:
            raise type(e)(f"{e} (in schedule {k} of {schedules}, seed {seed}; thread order passed)") from None
        differ = [(label, a.copy(), b) for (label, a), b in zip(arrays, after) if not np.array_equal(a, b)]
        for (_, a), b in zip(arrays, after):
            a[...] = b
        if differ:
            label, got, want = differ[0]
            x, y = _as_bytes(want), _as_bytes(got)
            at = int(np.flatnonzero(x != y)[0])
            raise ScheduleError(f"run_kernel: the output depends on the order the threads run in: {label} differs "
                                f"at byte {at:#x} ({int(x[at]):#04x} in thread order, {int(y[at]):#04x} in schedule "
                                f"{k} of {schedules}, seed {seed}; {int((x != y).sum())} bytes differ)")
    return first
