"""Which values share a register of a transposed matrix form, chosen for the fewest wavefronts.

A form's element slots fall into *row classes*: slots that fill the same rows of a matrix in every lane. The
values of one class are bound to each other (each row's 16 bytes are one address, so once the first slot's value
is chosen the others are the values at the row's other offsets): a class's values make a *unit*. Without
``.trans`` a register is one class and nothing is left to choose. ``stmatrix .trans`` has two classes (the even
rows and the odd rows of ``m8n8``; of ``m16n8``, rows ``2(t%4)`` and ``2(t%4)+1``), so a register is a *pair* of
units, and which unit goes with which decides the banks: a matrix takes as many wavefronts as its busiest 16-byte
bank quad has rows (``banks.matrix_wavefronts``; distinct rows, since a store writes each element once).

The pairing is a minimum-cost perfect matching of the units, searched exactly:

1. every pair's cost from the units' per-warp bank-quad histograms (numpy, all pairs at once), and the bound
   ``ceil(sum over units of its cheapest partner / 2)``: no matching costs less;
2. incumbents: the nearest-partner pairing and every XOR-of-the-unit-index pairing (unit ``i`` with ``i ^ m``: the
   pairings that keep each instruction's addresses one formula); one that meets the bound is optimal;
3. otherwise a dynamic programme over units grouped by their cost profile (interchangeable units collapse, so a
   structured fragment has a handful of groups) gives the optimum, up to ``STATE_LIMIT`` states.

A pairing whose instructions the generator cannot address (``address.address_plan`` refuses it) is passed over for
the best one it can; ``Pairing.bound`` stays the fewest wavefronts any pairing takes (or the bound of step 1 when
the search stopped), so it is a true lower bound for the form whichever pairing is returned.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

import attrs
import numpy as np

from ...arch.sm90.matrix import ROW_BYTES
from ...arch.sm90.shared import BANKS, BANK_BYTES

__all__ = ["Pairing", "Unit", "row_classes", "pair_units", "STATE_LIMIT"]

#: Dynamic-programme states visited before the search stops and reports its bound instead of the optimum.
STATE_LIMIT = 20_000
_QUADS = BANKS * BANK_BYTES // ROW_BYTES          # 16-byte rows one wavefront serves: 8
_NONE = np.iinfo(np.int64).max // 4

Unit = tuple[int, ...]
Register = tuple[Unit, Unit]                      # (the unit of class 0, the unit of class 1)


@attrs.frozen
class Pairing:
    """The registers (a class-0 unit and a class-1 unit each, in the order the instructions take them), their
    wavefronts (all warps), and ``bound``: the fewest wavefronts any pairing of these units takes, or where the
    search stopped a lower bound on it."""

    registers: tuple[Register, ...]
    wavefronts: int
    bound: int


def row_classes(rows: Sequence[np.ndarray]) -> list[list[int]]:
    """Slots grouped by the rows they fill (``rows[j]``: slot ``j``'s row per lane), in slot order."""
    classes: dict[bytes, list[int]] = {}
    for j, r in enumerate(rows):
        classes.setdefault(np.asarray(r).tobytes(), []).append(j)
    return list(classes.values())


def _histograms(starts: np.ndarray) -> np.ndarray:
    """``(units, warps, 8)``: how many of a unit's rows start in each 16-byte bank quad, per warp (``starts``:
    ``(units, warps, 8)`` row starts, -1 where the unit fills no row)."""
    quads = np.where(starts >= 0, (starts // ROW_BYTES) % _QUADS, _QUADS)
    onehot = quads[..., None] == np.arange(_QUADS)
    return onehot.sum(axis=2)


def _costs(hist: list[np.ndarray], fits: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(n, n)`` twice: the wavefronts of the register of unit ``a`` in class 0 and ``b`` in class 1 (``_NONE``
    where that does not fit), and of the pair in its cheaper orientation."""
    directed = (hist[0][:, None] + hist[1][None, :]).max(axis=-1).sum(axis=-1)
    directed = np.where(fits[0][:, None] & fits[1][None, :], directed, _NONE)
    np.fill_diagonal(directed, _NONE)
    return directed, np.minimum(directed, directed.T)


def _orient(a: int, b: int, directed: np.ndarray) -> tuple[int, int]:
    """``(class-0 unit, class-1 unit)`` for the pair: the cheaper orientation that fits, the lower unit in class 0
    on a tie (as the instructions' order puts it: one formula for every instruction's addresses)."""
    return (a, b) if (directed[a, b], a) <= (directed[b, a], b) else (b, a)


def _total(pairs: list[tuple[int, int]], cost: np.ndarray) -> int:
    return int(sum(cost[a, b] for a, b in pairs))


def _xor_pairings(n: int, cost: np.ndarray) -> list[tuple[int, list[tuple[int, int]]]]:
    """``(cost, pairs)``: unit ``i`` with unit ``i ^ m`` for every mask ``m`` (``n`` a power of two) that pairs
    every unit, cheapest first (then the smaller mask)."""
    if n & (n - 1) or n < 2:
        return []
    units = np.arange(n)
    masks = np.arange(1, n)
    totals = cost[units[None, :], units[None, :] ^ masks[:, None]]                  # (masks, units)
    ok = np.all(totals < _NONE, axis=1)
    order = sorted((int(totals[k].sum()) // 2, int(m)) for k, m in enumerate(masks) if ok[k])
    return [(total, [(i, i ^ m) for i in range(n) if not i & (m & -m)]) for total, m in order]


def _groups(cost: np.ndarray, hist: list[np.ndarray],
            fits: list[np.ndarray]) -> tuple[list[list[int]], np.ndarray]:
    """Units grouped by what their costs depend on (histograms, classes), each group's members in index order; and
    the group-to-group cost (any two members stand for all; a group of one cannot pair with itself)."""
    keys: dict[bytes, list[int]] = {}
    for u in range(cost.shape[0]):
        key = hist[0][u].tobytes() + hist[1][u].tobytes() + bytes([bool(fits[0][u]), bool(fits[1][u])])
        keys.setdefault(key, []).append(u)
    members = list(keys.values())
    k = len(members)
    gcost = np.full((k, k), _NONE, dtype=np.int64)
    for g in range(k):
        for h in range(k):
            if g != h:
                gcost[g, h] = cost[members[g][0], members[h][0]]
            elif len(members[g]) > 1:
                gcost[g, g] = cost[members[g][0], members[g][1]]
    return members, gcost


def _optimum(cost: np.ndarray, directed: np.ndarray, hist: list[np.ndarray], fits: list[np.ndarray],
             upper: int) -> tuple[int, list[tuple[int, int]]] | None:
    """The cheapest perfect matching (cost, pairs; no pairs when it costs ``upper``, a known matching's cost) by a
    dynamic programme over the counts left in each group of interchangeable units, or None past ``STATE_LIMIT``
    states."""
    members, gcost = _groups(cost, hist, fits)
    k = len(members)
    memo: dict[tuple[int, ...], tuple[int, int]] = {}

    def best(state: tuple[int, ...]) -> int:
        if state in memo:
            return memo[state][0]
        if len(memo) >= STATE_LIMIT:
            raise _Stop
        g = next((i for i, c in enumerate(state) if c), None)
        if g is None:
            return 0
        result, choice = _NONE, -1
        for h in range(g, k):
            if state[h] < (2 if h == g else 1) or gcost[g, h] >= _NONE:
                continue
            got = int(gcost[g, h]) + best(_take(state, g, h))
            if got < result:
                result, choice = got, h
        memo[state] = (result, choice)
        return result

    try:
        total = best(tuple(len(m) for m in members))
    except _Stop:
        return None
    if total >= _NONE:
        return None
    if total >= upper:
        return total, []
    pool = [list(m) for m in members]                 # the group pairs realised in index order
    pairs, state = [], tuple(len(m) for m in members)
    while any(state):
        g = next(i for i, c in enumerate(state) if c)
        h = memo[state][1]
        a = pool[g].pop(0)
        pairs.append(_orient(a, pool[h].pop(0), directed))
        state = _take(state, g, h)
    return total, pairs


def _take(state: tuple[int, ...], g: int, h: int) -> tuple[int, ...]:
    """The counts left once a unit of group ``g`` and one of ``h`` are paired."""
    out = list(state)
    out[g] -= 1
    out[h] -= 1
    return tuple(out)


class _Stop(Exception):
    """The dynamic programme passed ``STATE_LIMIT`` states."""


def pair_units(units: Sequence[Unit], starts: tuple[np.ndarray, np.ndarray], fits: tuple[np.ndarray, np.ndarray],
               greedy: Sequence[Register] | None,
               emittable: Callable[[list[Register]], bool]) -> Pairing | None:
    """The fewest-wavefront pairing of ``units`` (each a tuple of values; together every value once) into
    registers of a two-class form. ``starts[c]``: ``(units, warps, 8)`` the row starts each unit gives in class
    ``c`` (-1 where it fills no row); ``fits[c]``: ``(units,)`` whether it may take class ``c``. ``greedy``: a
    pairing found another way (kept when it is optimal, so known plans stay as they were). ``emittable``: whether
    the generator can address the registers in that order. None when no pairing fills every register."""
    n = len(units)
    hist = [_histograms(starts[0]), _histograms(starts[1])]
    fit = [np.asarray(fits[0], dtype=bool), np.asarray(fits[1], dtype=bool)]
    directed, cost = _costs(hist, fit)
    cheapest = cost.min(axis=1)
    if n % 2 or np.any(cheapest >= _NONE):
        return None
    bound = int(-(-int(cheapest.sum()) // 2))
    index = {u: i for i, u in enumerate(units)}

    def registers(pairs: list[tuple[int, int]]) -> list[Register]:
        oriented = [_orient(a, b, directed) for a, b in pairs]
        return [(units[a], units[b]) for a, b in sorted(oriented, key=lambda p: units[p[0]])]

    tried: list[tuple[int, Callable[[], list[Register]]]] = []       # registers made only when weighed
    if greedy is not None:
        tried.append((_total([(index[a], index[b]) for a, b in greedy], cost), lambda: list(greedy)))
    if not tried or tried[0][0] > bound:
        tried += [(total, partial(registers, p)) for total, p in _xor_pairings(n, cost)]
    upper = min((t[0] for t in tried), default=_NONE)
    if upper > bound:
        found = _optimum(cost, directed, hist, fit, upper)
        if found is not None:                                # else the search stopped: the bound stays
            bound = found[0]
            if found[1]:
                tried.append((found[0], partial(registers, found[1])))
    for total, make in sorted(tried, key=lambda t: t[0]):
        regs = make()
        if emittable(regs):
            return Pairing(tuple(regs), total, min(bound, total))
    return None
