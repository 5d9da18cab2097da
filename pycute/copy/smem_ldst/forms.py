"""How one candidate form moves a fragment: which of a thread's values each instruction moves, in which register
byte, and the shared address each thread gives. The same code runs in every thread, so an instruction's registers
hold the same value indices in every thread; what differs per thread is only the address.

``addr[t, v]`` is the shared byte address (from the buffer base, swizzled) of value ``v`` of thread ``t``. With a
*fixed* register image (no conversion) value ``v`` sits in register ``v * e // 4`` at byte ``v * e % 4``; with a
conversion the ``cvt`` that packs a register may take any values, so the planner forms the registers:

* ``st/ld.shared`` of ``w`` bytes: a thread's ``w`` bytes are one aligned run, so an instruction is ``w / e`` values
  whose addresses follow one another by ``e`` bytes in every thread.
* ``stmatrix`` / ``ldmatrix``: register ``g`` of the 32 lanes fills 8 rows of 16 bytes; byte ``b`` of lane ``t``
  lands at a fixed (row, offset) (``arch.sm90.matrix``). A value fits element slot ``j`` when its address minus the
  slot's offset is 16-byte aligned and the same for every lane of the same row: that is the row's address. A
  register is one value per slot whose row addresses agree, and any registers make an instruction (x4, x2, x1).
"""
from __future__ import annotations

from typing import Callable, Sequence

import attrs
import numpy as np

from ...arch.sm90.matrix import ROW_BYTES, ROWS_PER_REGISTER, MatrixForm
from ...atoms.smem_ldst import SmemAtom, SmemMatrixAtom, SmemVectorAtom
from ..protocol import Reject
from .banks import matrix_wavefronts, vector_wavefronts
from .pairing import pair_units, row_classes

__all__ = ["Move", "vector_moves", "matrix_moves"]

_WARP = 32


@attrs.frozen(eq=False)
class Move:
    """One instruction of every thread: its atom, the values each of its registers holds (byte order, lowest first;
    a narrow access holds part of a register), each thread's address (bytes from the buffer base) and its
    wavefronts summed over the warps."""

    atom: SmemAtom
    words: tuple[tuple[int, ...], ...]
    addresses: np.ndarray = attrs.field(repr=False)
    wavefronts: int


def _registers(values: int, e: int) -> list[tuple[int, ...]]:
    """The fixed image's registers: ``4 / e`` consecutive values each."""
    per = 4 // e
    if values % per:
        raise Reject("the fragment's {v} values of {e} B do not fill whole 32-bit registers", v=values, e=e)
    return [tuple(range(k * per, (k + 1) * per)) for k in range(values // per)]


def _runs(addr: np.ndarray, units: list[tuple[int, ...]], step: int) -> list[list[tuple[int, ...]]]:
    """Units grouped into runs whose start addresses follow one another by ``step`` bytes in every thread."""
    starts = np.stack([addr[:, u[0]] for u in units], axis=1)            # (threads, units)
    keys: dict[bytes, list[int]] = {}
    for k in range(len(units)):
        keys.setdefault((starts[:, k] - starts[0, k]).tobytes(), []).append(k)
    runs = []
    for members in keys.values():
        members.sort(key=lambda k: starts[0, k])
        run = [members[0]]
        for k in members[1:]:
            if starts[0, k] == starts[0, run[-1]] + step:
                run.append(k)
            else:
                runs.append(run)
                run = [k]
        runs.append(run)
    return [[units[k] for k in run] for run in runs]


def _contiguous(addr: np.ndarray, unit: tuple[int, ...], e: int) -> bool:
    return all(np.array_equal(addr[:, b], addr[:, a] + e) for a, b in zip(unit, unit[1:]))


def vector_moves(op: str, width: int, e: int, addr: np.ndarray, fixed: bool) -> list[Move]:
    """Every thread's values as ``width``-byte ld/st.shared, or Reject with the first value that cannot be."""
    atom = SmemVectorAtom(op, width)  # type: ignore[arg-type]
    per = max(1, min(width, 4) // e)                                     # values of one register part
    if fixed:
        units = [r[i:i + per] for r in _registers(addr.shape[1], e) for i in range(0, len(r), per)]
        bad = next((u for u in units if not _contiguous(addr, u, e)), None)
        if bad is not None:
            raise Reject("values {u} share a register but are not adjacent in shared memory", u=bad)
    else:
        units = [(v,) for v in range(addr.shape[1])]
    step = len(units[0]) * e
    moves = []
    for run in _runs(addr, units, step):
        if len(run) * step % width:
            raise Reject("values {a}.. run {n} B in shared memory, not whole {w}-byte accesses",
                         a=run[0][0], n=len(run) * step, w=width)
        for i in range(0, len(run), width // step):
            block = run[i:i + width // step]
            start = addr[:, block[0][0]]
            if np.any(start % width):
                t = int(np.argmax(start % width != 0))
                raise Reject("thread {t}'s value {v} is at shared byte {b}, not {w}-byte aligned", t=t,
                             v=block[0][0], b=int(start[t]), w=width)
            values = tuple(v for u in block for v in u)
            words = tuple(values[j:j + 4 // e] for j in range(0, len(values), 4 // e))
            moves.append(Move(atom, words, start.copy(), _vector_wavefronts(start, width)))
    return sorted(moves, key=lambda m: m.words[0][0])


def _vector_wavefronts(start: np.ndarray, width: int) -> int:
    return sum(vector_wavefronts(start[w:w + _WARP], width) for w in range(0, start.size, _WARP))


@attrs.frozen(eq=False)
class _Fit:
    """Per element slot of a register: its rows and offsets per lane, and per value whether it fits and the row
    addresses it implies (warps x 8, -1 for rows the slot does not fill)."""

    fits: np.ndarray                   # (values,) bool
    rows: np.ndarray                   # (warps, 8, values) int64


def _slots(form: MatrixForm, e: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(row, offset)`` per lane of each ``e``-byte element slot of register 0, or Reject when a slot's bytes are
    not consecutive in one row."""
    cells = form.cells()[:, 0]
    slots = []
    for j in range(4 // e):
        row, off = cells[:, j * e, 0], cells[:, j * e, 1]
        for k in range(1, e):
            if not (np.array_equal(cells[:, j * e + k, 0], row) and np.array_equal(cells[:, j * e + k, 1], off + k)):
                raise Reject("{p} puts the bytes of a {e}-byte element in different rows", p=form.ptx, e=e)
        slots.append((row, off))
    return slots


def _fit(addr: np.ndarray, row: np.ndarray, off: np.ndarray) -> _Fit:
    threads, values = addr.shape
    warps = threads // _WARP
    lane = np.arange(threads) % _WARP
    start = addr - off[lane][:, None]                                    # each value's implied row start
    table = np.full((warps, ROWS_PER_REGISTER, values), -1, dtype=np.int64)
    w = np.arange(threads) // _WARP
    table[w, row[lane]] = start
    agree = np.all(table[w, row[lane]] == start, axis=0)
    return _Fit(agree & np.all(start % ROW_BYTES == 0, axis=0), table)


def _agrees(a: np.ndarray, b: np.ndarray) -> bool:
    both = (a >= 0) & (b >= 0)
    return bool(np.array_equal(a[both], b[both]))


def _combine(fits: list[_Fit], word: tuple[int, ...]) -> np.ndarray | None:
    """The register's row addresses (warps x 8) when the word's values fit their slots and agree, else None."""
    rows = np.full(fits[0].rows.shape[:2], -1, dtype=np.int64)
    for fit, v in zip(fits, word):
        if not fit.fits[v] or not _agrees(rows, fit.rows[:, :, v]):
            return None
        rows = np.where(rows >= 0, rows, fit.rows[:, :, v])
    return rows if np.all(rows >= 0) else None


def _form_registers(addr: np.ndarray, fits: list[_Fit]) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """A free image's registers, greedily: the first unplaced value that fits slot 0, then for each further slot
    the unplaced value that agrees, nearest by a thread-independent distance."""
    left = list(range(addr.shape[1]))
    out: list[tuple[tuple[int, ...], np.ndarray]] = []
    while left:
        head = next((v for v in left if fits[0].fits[v]), None)
        if head is None:
            raise Reject("value {v} fits no register of the form (its address is no row start plus the slot's "
                         "offset in every lane)", v=left[0])
        word: tuple[int, ...] = (head,)
        diff = addr - addr[:, head:head + 1]
        uniform = np.all(diff == diff[:1], axis=0)                       # a thread-independent distance
        for fit in fits[1:]:
            free = [u for u in left if u not in word and fit.fits[u]]
            cand = sorted(free, key=lambda u: (not uniform[u], abs(int(diff[0, u]))))
            pick = next((u for u in cand if _combine(fits[:len(word) + 1], word + (u,)) is not None), None)
            if pick is None:
                raise Reject("value {v} finds no partner for slot {j} of its register", v=head, j=len(word))
            word += (pick,)
        combined = _combine(fits, word)
        if combined is None:
            raise Reject("the register of values {w} leaves rows without an address", w=word)
        out.append((word, combined))
        left = [v for v in left if v not in word]
    return out


def matrix_moves(forms: tuple[MatrixForm, ...], e: int, addr: np.ndarray, fixed: bool,
                 addressable: Callable[[list[np.ndarray]], bool]) -> tuple[list[Move], int]:
    """Every thread's values through one matrix family (its x4 / x2 / x1 forms, widest first), or Reject; and the
    fewest wavefronts any choice of registers of the family takes (``pairing``: the moves reach it unless the
    search stopped or only a pairing ``addressable`` refuses reaches it)."""
    slots = _slots(forms[0], e)
    fits = [_fit(addr, row, off) for row, off in slots]
    if fixed:
        registers = []
        for word in _registers(addr.shape[1], e):
            rows = _combine(fits, word)
            if rows is None:
                raise Reject("register of values {w} is no matrix row fragment: its lanes' addresses are not "
                             "{p}'s rows", w=word, p=forms[0].ptx)
            registers.append((word, rows))
        moves = _instructions(forms, registers, addr.shape[0])
        return moves, sum(m.wavefronts for m in moves)
    classes = row_classes([row for row, _ in slots])
    if len(classes) != 2:                        # one class: each register's values are bound to its first
        moves = _instructions(forms, _form_registers(addr, fits), addr.shape[0])
        return moves, sum(m.wavefronts for m in moves)
    return _paired_moves(forms, addr, fits, classes, addressable)


def _units(fits: list[_Fit], cls: list[int]) -> dict[int, tuple[int, ...]]:
    """The units of a row class, by the value of its first slot: the values that fill the class's other slots at
    the same rows (one each: a store writes an element once)."""
    others = [{fits[s].rows[:, :, u].tobytes(): int(u) for u in np.flatnonzero(fits[s].fits)} for s in cls[1:]]
    out = {}
    for v in np.flatnonzero(fits[cls[0]].fits):
        key = fits[cls[0]].rows[:, :, v].tobytes()
        rest = [o.get(key) for o in others]
        if all(u is not None for u in rest):
            out[int(v)] = (int(v), *(u for u in rest if u is not None))
    return out


def _paired_moves(forms: tuple[MatrixForm, ...], addr: np.ndarray, fits: list[_Fit], classes: list[list[int]],
                  addressable: Callable[[list[np.ndarray]], bool]) -> tuple[list[Move], int]:
    """A two-class form (``.trans``): each register a unit of each class, paired for the fewest wavefronts."""
    per_class = [_units(fits, cls) for cls in classes]
    units = sorted(set(per_class[0].values()) | set(per_class[1].values()))
    held = [v for u in units for v in u]
    missing = sorted(set(range(addr.shape[1])) - set(held))
    if missing:
        raise Reject("value {v} fits no register of the form (its address is no row start plus the slot's offset "
                     "in every lane)", v=missing[0])
    if len(held) != len(set(held)):
        twice = next(v for v in held if held.count(v) > 1)
        raise Reject("value {v} is in two units of {p}'s row classes", v=twice, p=forms[0].ptx)
    slots = len(classes[0]) + len(classes[1])
    built: dict[tuple, list[Move]] = {}

    def build(pairs: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[Move]:
        key = tuple(pairs)
        if key not in built:
            regs = []
            for pair in pairs:
                word = [0] * slots
                for cls, unit in zip(classes, pair):
                    for j, v in zip(cls, unit):
                        word[j] = v
                rows = _combine(fits, tuple(word))
                assert rows is not None, f"{word}: a pairing's register leaves rows without an address"
                regs.append((tuple(word), rows))
            built[key] = _instructions(forms, regs, addr.shape[0])
        return built[key]

    def emittable(pairs: Sequence[tuple[tuple[int, ...], tuple[int, ...]]]) -> bool:
        try:
            return addressable([m.addresses for m in build(pairs)])
        except Reject:
            return False

    try:
        greedy = [(tuple(w[j] for j in classes[0]), tuple(w[j] for j in classes[1]))
                  for w, _ in _form_registers(addr, fits)]
    except Reject:
        greedy = None
    none = np.full(fits[0].rows.shape[:2], -1, dtype=np.int64)

    def starts(c: int) -> np.ndarray:
        return np.stack([fits[classes[c][0]].rows[:, :, u[0]] if per_class[c].get(u[0]) == u else none
                         for u in units])

    def fit(c: int) -> np.ndarray:
        return np.array([per_class[c].get(u[0]) == u for u in units])
    pairing = pair_units(units, (starts(0), starts(1)), (fit(0), fit(1)), greedy, emittable)
    if pairing is None:
        raise Reject("no pairing of {p}'s row units fills every register with addresses the generated code "
                     "computes from one formula", p=forms[0].ptx)
    return build(pairing.registers), pairing.bound


def _instructions(forms: tuple[MatrixForm, ...], registers: list, threads: int) -> list[Move]:
    """The registers in order, the widest form that the rest fills first."""
    moves, k = [], 0
    while k < len(registers):
        form = next((f for f in forms if f.registers <= len(registers) - k), None)
        if form is None:
            raise Reject("{n} register(s) are left, fewer than {p} moves", n=len(registers) - k, p=forms[-1].ptx)
        moves.append(_matrix_move(SmemMatrixAtom(form), registers[k:k + form.registers], threads))
        k += form.registers
    return moves


def _matrix_move(atom: SmemMatrixAtom, group: list, threads: int) -> Move:
    """The instruction of ``group``'s registers: lane ``l`` of warp ``w`` gives row ``row_of_lane[l]``'s address."""
    table = np.concatenate([rows for _, rows in group], axis=1)         # (warps, 8 x registers)
    t = np.arange(threads)
    addresses = table[t // _WARP, atom.row_of_lane()[t % _WARP]]
    wavefronts = sum(matrix_wavefronts(rows) for rows in table)
    return Move(atom, tuple(word for word, _ in group), addresses, wavefronts)
