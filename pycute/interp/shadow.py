"""Happens-before checking of shared memory and TMEM (docs/interpreter.md, "Races").

Every agent that accesses memory has a slot in its cluster's vector clocks: each thread, each mbarrier (the copies
that complete transaction bytes on it write as "the barrier at phase p") and each thread's tcgen05 pipeline (its
MMAs and copies, released by ``tcgen05.commit``). A thread's clock joins another's only through synchronisation: a
barrier it waited on, an mbarrier phase it observed, a cluster barrier. Each byte of shared memory (each TMEM cell)
keeps the stamp ``epoch << SLOT_BITS | slot`` of its last write and of its last two unordered reads, or the id of
an asynchronous operation still writing (reading) it. An access is a race when an earlier conflicting access is
neither ordered before it nor its own.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import EmulationError

__all__ = ["RaceError", "SLOT_BITS", "SLOT_MASK", "Clocks", "Shadow", "NONE"]

SLOT_BITS = 20
SLOT_MASK = (1 << SLOT_BITS) - 1
NONE = -1


class RaceError(EmulationError):
    """Two accesses to the same shared-memory bytes (or TMEM cells) that no synchronisation orders, or an access to
    bytes an asynchronous operation is still writing or reading: the message names both and the barriers."""


class Clocks:
    """The vector-clock slots of one cluster: its threads first, then mbarriers and tcgen05 pipelines as they
    appear. ``names[slot]`` describes the agent for messages."""

    def __init__(self, threads: int, spare: int = 4096):
        self.capacity = threads + spare
        self.names: list[str] = [""] * threads
        self.keys: dict[object, int] = {}

    def vector(self) -> np.ndarray:
        return np.zeros(self.capacity, dtype=np.int64)

    def slot(self, key: object, name: str) -> int:
        """The slot of a barrier or pipeline ``key`` (allocated on first use)."""
        if key not in self.keys:
            if len(self.names) >= self.capacity:
                raise EmulationError(f"more than {self.capacity} threads, mbarriers and tcgen05 pipelines in a "
                                     f"cluster: the interpreter's clocks are full")
            self.keys[key] = len(self.names)
            self.names.append(name)
        return self.keys[key]


def stamp_of(slot: int, epoch: int) -> int:
    return epoch << SLOT_BITS | slot


class Shadow:
    """The last write and reads of each of ``size`` bytes (cells), and the asynchronous operations in flight on them.
    ``W`` holds a write stamp, NONE, or ``-(op + 2)`` while operation ``op`` writes; ``F`` the operation reading."""

    def __init__(self, size: int, what: str, explain: Callable[..., str]):
        self.size, self.what, self.explain = size, what, explain
        self.W = np.full(size, NONE, dtype=np.int64)
        self.R1 = np.full(size, NONE, dtype=np.int64)
        self.R2 = np.full(size, NONE, dtype=np.int64)
        self.F = np.full(size, NONE, dtype=np.int64)
        self.Wm, self.R1m, self.R2m, self.Fm = (a.data for a in (self.W, self.R1, self.R2, self.F))

    # -- a thread's own loads and stores ----------------------------------------------------------------------
    def read(self, th, lo: int, n: int, check_unwritten: bool) -> None:
        W, R1, R2 = self.Wm, self.R1m, self.R2m
        me, vc, stamp = th.slot, th.vcm, th.stamp
        for b in range(lo, lo + n):
            w = W[b]
            if w >= 0:
                s = w & SLOT_MASK
                if s != me and vc[s] < w >> SLOT_BITS:
                    raise RaceError(self.explain("read", th, b, w))
            elif w < NONE:
                raise RaceError(self.explain("read-inflight", th, b, w))
            elif check_unwritten:
                raise RaceError(self.explain("read-unwritten", th, b, w))
            r = R1[b]
            if r != stamp:
                if r >= 0 and (r & SLOT_MASK) != me and vc[r & SLOT_MASK] < r >> SLOT_BITS:
                    R2[b] = r
                R1[b] = stamp

    def write(self, th, lo: int, n: int) -> None:
        W, R1, R2, F = self.Wm, self.R1m, self.R2m, self.Fm
        me, vc, stamp = th.slot, th.vcm, th.stamp
        for b in range(lo, lo + n):
            w = W[b]
            if w >= 0:
                s = w & SLOT_MASK
                if s != me and vc[s] < w >> SLOT_BITS:
                    raise RaceError(self.explain("write-after-write", th, b, w))
            elif w < NONE:
                raise RaceError(self.explain("write-inflight", th, b, w))
            if F[b] != NONE:
                raise RaceError(self.explain("write-while-read", th, b, F[b]))
            for r in (R1[b], R2[b]):
                if r >= 0 and (r & SLOT_MASK) != me and vc[r & SLOT_MASK] < r >> SLOT_BITS:
                    raise RaceError(self.explain("write-after-read", th, b, r))
            W[b] = stamp
            R1[b] = NONE
            R2[b] = NONE

    def access(self, th, idx: np.ndarray, write: bool, check_unwritten: bool) -> None:
        """``read`` / ``write`` of the bytes ``idx`` at once (a lane's part of a warp-collective move)."""
        hit = self.first_conflict(idx, th.vc, (th.slot,), write)
        if hit is not None:
            raise RaceError(self.explain(hit[0], th, hit[1], hit[2]))
        if write:
            self.W[idx], self.R1[idx], self.R2[idx] = th.stamp, NONE, NONE
            return
        if check_unwritten and (b := self.unwritten(idx)) is not None:
            raise RaceError(self.explain("read-unwritten", th, b, NONE))
        self.note_reads(idx, th.stamp, th.vc, th.slot)

    def note_reads(self, idx: np.ndarray, stamp: int, vc: np.ndarray, slot: int) -> None:
        """Bytes ``idx`` read by the agent ``slot`` (clock ``vc``): an earlier read it is not ordered after is kept
        as the second one."""
        r1 = self.R1[idx]
        slots = np.where(r1 >= 0, r1 & SLOT_MASK, 0)
        unordered = (r1 >= 0) & (vc[slots] < (r1 >> SLOT_BITS)) & (slots != slot)
        self.R2[idx] = np.where(unordered, r1, self.R2[idx])
        self.R1[idx] = stamp

    # -- asynchronous operations: checked at issue against the issuer's clock, landed later --------------------
    def first_conflict(self, idx: np.ndarray, vc: np.ndarray, own: tuple[int, ...], write: bool,
                       own_ops: frozenset = frozenset()) -> tuple | None:
        """The first byte of ``idx`` an access by an agent with clock ``vc`` (owning slots ``own`` and the
        in-flight operations ``own_ops``, which it is ordered after) would race: ``(kind, byte, stamp or op)``;
        None when all are ordered."""
        if idx.size == 0:
            return None
        w = self.W[idx]
        inflight = w < NONE
        if own_ops and inflight.any():
            inflight &= ~np.isin(-(w + 2), list(own_ops))
        if inflight.any():
            k = int(np.argmax(inflight))
            return ("write-inflight" if write else "read-inflight"), int(idx[k]), int(w[k])
        checks = [(np.where(w < NONE, NONE, w), "write-after-write" if write else "read")]
        if write:
            f = self.F[idx]
            busy = f != NONE
            if own_ops and busy.any():
                busy &= ~np.isin(f, list(own_ops))
            if busy.any():
                k = int(np.argmax(busy))
                return "write-while-read", int(idx[k]), int(f[k])
            checks += [(self.R1[idx], "write-after-read"), (self.R2[idx], "write-after-read")]
        for stamps, kind in checks:
            valid = stamps >= 0
            slots = np.where(valid, stamps & SLOT_MASK, 0)
            bad = valid & (vc[slots] < (stamps >> SLOT_BITS))
            for slot in own:
                bad &= slots != slot
            if bad.any():
                k = int(np.argmax(bad))
                return kind, int(idx[k]), int(stamps[k])
        return None

    def unwritten(self, idx: np.ndarray) -> int | None:
        """The first byte of ``idx`` nothing has written (None if every byte was)."""
        hit = self.W[idx] == NONE
        return int(idx[int(np.argmax(hit))]) if idx.size and hit.any() else None

    def begin(self, idx: np.ndarray, op: int, write: bool) -> None:
        if write:
            self.W[idx] = -(op + 2)
        else:
            self.F[idx] = op

    def finish(self, idx: np.ndarray, op: int, write: bool, stamp: int) -> None:
        """Operation ``op`` has completed: its bytes take ``stamp`` as their last write (or a read)."""
        if write:
            mine = self.W[idx] == -(op + 2)
            self.W[idx[mine]] = stamp
            self.R1[idx[mine]] = NONE
            self.R2[idx[mine]] = NONE
            return
        mine = self.F[idx] == op
        self.F[idx[mine]] = NONE
        self.R2[idx] = np.where(self.R1[idx] >= 0, self.R1[idx], self.R2[idx])
        self.R1[idx] = stamp
