"""Memoisation of pure operations on immutable operands, bounded by what the entries hold.

A repeated call with equal operands is one dictionary lookup. Each table is bounded twice: by entries, and by the
integers its keys and results hold (a 500-mode layout weighs 1000, a crd2idx call a handful), so that the worst case
over every table stays near 100 MB however large the layouts. When a bound is passed the oldest entries go first.
"""
from __future__ import annotations

import collections
import functools
from typing import Any, Callable

import attrs

__all__ = ["memo", "last_call", "clear_caches", "CacheInfo"]

MAX_ENTRIES = 8192
MAX_WEIGHT = 1 << 15          # per table; about 100 bytes per integer, ~40 tables

_CLEARS: list = []


@attrs.frozen
class CacheInfo:
    entries: int
    weight: int


def weight(x: Any) -> int:
    """The number of integers ``x`` holds: an int 1, a tuple its entries' plus one, a layout twice its shape's."""
    t = type(x)
    if t is int:
        return 1
    if t is tuple:
        n = 1
        for e in x:
            n += 1 if type(e) is int else weight(e)
        return n
    shape = getattr(x, "shape", None)
    if shape is None:
        own = getattr(x, "memo_weight", None)       # a value that knows its size (a Tcgen05CpPlan)
        return own() if own is not None else 1
    if type(shape) is int:
        return 2
    n = 1
    for e in shape:
        n += 1 if type(e) is int else weight(e)
    return 2 * n


_MISS = object()


def memo(fn: Callable[..., Any]) -> Any:
    """Memoise ``fn`` on its positional operands (which must be hashable once lists are made tuples); calls with
    keyword arguments run uncached. ``fn.raw`` is the uncached operation, for callers inside the algebra."""
    data: dict[Any, Any] = {}                   # entries in insertion order,
    weights: collections.deque[int] = collections.deque()   # and their weights alongside
    total = 0
    lookup = data.get

    @functools.wraps(fn)
    def cached(*args: Any, **kwargs: Any) -> Any:
        nonlocal total
        if kwargs:
            return fn(*args, **kwargs)
        try:
            value = lookup(args, _MISS)
        except TypeError:                        # unhashable (a list somewhere): run it uncached, lists as tuples
            return fn(*_tuplify(args))
        if value is _MISS:
            value = fn(*args)
            w = weight(args) + weight(value)
            if w <= MAX_WEIGHT // 4:             # one huge entry would flush the table: it is not kept
                while data and (len(data) >= MAX_ENTRIES or total + w > MAX_WEIGHT):
                    del data[next(iter(data))]   # the oldest first
                    total -= weights.popleft()
                data[args] = value
                weights.append(w)
                total += w
        return value

    def cache_clear() -> None:
        nonlocal total
        data.clear()
        weights.clear()
        total = 0

    vars(cached).update(raw=fn, cache_clear=cache_clear, cache_info=lambda: CacheInfo(len(data), total))
    _CLEARS.append(cache_clear)
    return cached


def last_call(fn: Callable[..., Any]) -> Any:
    """Remember ``fn``'s last call only: for operations that cost about what a table lookup costs (coalesce,
    crd2idx, ...), a repeated call returns at once, any other call pays one tuple comparison, and the memory held
    is one call's. ``fn.raw`` is the operation itself."""
    last_args, last_value = _MISS, None

    @functools.wraps(fn)
    def remembered(*args: Any, **kwargs: Any) -> Any:
        nonlocal last_args, last_value
        if kwargs:
            return fn(*args, **kwargs)
        if args == last_args:
            return last_value
        value = fn(*args)
        try:
            hash(args)                           # only immutable operands: a list could change before the next call
        except TypeError:
            return value
        last_args, last_value = args, value
        return value

    def cache_clear() -> None:
        nonlocal last_args, last_value
        last_args, last_value = _MISS, None

    vars(remembered).update(raw=fn, cache_clear=cache_clear)
    _CLEARS.append(cache_clear)
    return remembered


def _tuplify(x):
    if isinstance(x, (list, tuple)):
        return tuple(_tuplify(e) for e in x)
    return x


def register_clear(clear: Callable[[], None]) -> None:
    """Have ``clear_caches`` call ``clear`` too (for caches kept outside the memo tables)."""
    _CLEARS.append(clear)


def clear_caches() -> None:
    """Forget every memoised result (for cold-path benchmarks, or to release memory)."""
    for clear in _CLEARS:
        clear()
