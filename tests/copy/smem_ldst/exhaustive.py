"""Every register <-> shared plan of small cases, enumerated and scored with the bank model: the ground truth the
planner's search and its lower bound are held to. Built from the forms' cell maps (``arch.sm90.matrix``,
``arch.sm100.matrix``), the alignment rules of ``ld/st.shared`` and ``banks.py``'s wavefront counts alone; it
shares no code with the planner's search.

A plan is one family of forms: a matrix family (any values in any slots, each register's lanes giving 16-byte
aligned row addresses that agree, the registers in any x4 / x2 / x1 grouping, which does not change the
wavefronts: each 8-row matrix is served on its own), or ``ld/st.shared`` of one width (each access an aligned run
of the thread's values, the same value indices in every thread)."""
from __future__ import annotations

import numpy as np

from pycute.arch.sm100.matrix import B8_MATRIX_TARGETS, b8_forms
from pycute.arch.sm90.matrix import MatrixForm, m8n8_forms
from pycute.arch.sm90.shared import SHARED_WIDTHS
from pycute.copy.smem_ldst.banks import group_wavefronts, vector_wavefronts
from pycute.tensor.values import layout_values, smem_element_offsets

__all__ = ["addresses", "fewest_wavefronts"]


def addresses(tile, fragment) -> np.ndarray:
    """``(threads, values)``: the byte address (from the buffer base) of each value of each thread."""
    tv = fragment.layout
    table = layout_values(tv).reshape(tv[1].size(), fragment.threads).T
    return smem_element_offsets(tile)[table] * (tile.bits // 8)


def _families(op: str, e: int, arch: str | None) -> list[MatrixForm]:
    forms = [m8n8_forms(op)[0], m8n8_forms(op)[3]]
    if arch in B8_MATRIX_TARGETS:
        forms.append(b8_forms(op)[0])
    return [f for f in forms if not (e == 1 and f.element_bits == 16 and f.trans)]


def _slot_cells(form: MatrixForm, e: int) -> list[tuple[np.ndarray, np.ndarray]] | None:
    cells = form.cells()[:, 0]                                   # (lanes, bytes, (row, offset)) of register 0
    out = []
    for j in range(4 // e):
        row, off = cells[:, j * e, 0], cells[:, j * e, 1]
        if any(not (np.array_equal(cells[:, j * e + k, 0], row) and np.array_equal(cells[:, j * e + k, 1], off + k))
               for k in range(1, e)):
            return None
        out.append((row, off))
    return out


def _slot_rows(slot, v: int, addr: np.ndarray) -> np.ndarray | None:
    """``(warps, 8)``: the row starts value ``v`` gives in slot ``slot`` (-1 for rows the slot does not fill), or
    None when its lanes do not give one 16-byte aligned address per row."""
    row, off = slot
    warps = addr.shape[0] // 32
    rows = np.full((warps, 8), -1, dtype=np.int64)
    for w in range(warps):
        start = addr[32 * w:32 * w + 32, v] - off
        if np.any(start % 16):
            return None
        for r in np.unique(row):
            got = np.unique(start[row == r])
            if got.size > 1:
                return None
            rows[w, r] = got[0]
    return rows


def _words(slots, addr: np.ndarray, fixed: bool) -> dict[tuple[int, ...], np.ndarray]:
    """Every register a family can form (value per slot) -> its row starts (warps, 8)."""
    values = addr.shape[1]
    part = [[_slot_rows(slot, v, addr) for v in range(values)] for slot in slots]
    out = {}

    def extend(word: tuple[int, ...], rows: np.ndarray) -> None:
        j = len(word)
        if j == len(slots):
            if np.all(rows >= 0):
                out[word] = rows
            return
        for v in ([word[0] + j] if fixed and word else range(values)):
            mine = part[j][v] if v < values else None
            if v in word or mine is None:
                continue
            both = (rows >= 0) & (mine >= 0)
            if np.array_equal(rows[both], mine[both]):
                extend(word + (v,), np.where(rows >= 0, rows, mine))
    starts = range(0, values, len(slots)) if fixed else range(values)
    for v in starts:
        if part[0][v] is not None:
            extend((v,), part[0][v])
    return out


def _matrix_best(form: MatrixForm, e: int, addr: np.ndarray, fixed: bool) -> int | None:
    slots = _slot_cells(form, e)
    if slots is None:
        return None
    values = addr.shape[1]
    cost = {word: sum(group_wavefronts(r[:, None] + np.arange(16)[None, :]) for r in rows)
            for word, rows in _words(slots, addr, fixed).items()}
    by_value: dict[int, list[tuple[int, ...]]] = {}
    for word in cost:
        by_value.setdefault(min(word), []).append(word)
    best: list[int | None] = [None]

    def cover(used: frozenset[int], total: int) -> None:
        if best[0] is not None and total >= best[0]:
            return
        left = next((v for v in range(values) if v not in used), None)
        if left is None:
            best[0] = total
            return
        for word in by_value.get(left, []):
            if not used.intersection(word):
                cover(used | set(word), total + cost[word])
    cover(frozenset(), 0)
    return best[0]


def _whole_registers(members: list[int], e: int, width: int) -> bool:
    """Without a conversion the registers are the fragment's (value ``v`` at byte ``v * e % 4`` of register
    ``v * e // 4``): each 4-byte part of an access is one register's values in order (any registers), a narrower
    access an aligned part of one."""
    part = min(width, 4) // e
    chunks = [members[k:k + part] for k in range(0, len(members), part)]
    return all(c == list(range(c[0], c[0] + part)) and c[0] * e % min(width, 4) == 0 for c in chunks)


def _vector_best(width: int, e: int, addr: np.ndarray, fixed: bool) -> int | None:
    threads, values = addr.shape
    per = width // e
    blocks: dict[tuple[int, ...], np.ndarray] = {}
    for v in range(values):
        start = addr[:, v] - addr[:, v] % width
        members = []
        for k in range(per):
            hit = np.flatnonzero(np.all(addr == (start + k * e)[:, None], axis=0))
            if hit.size != 1:
                return None
            members.append(int(hit[0]))
        if fixed and not _whole_registers(members, e, width):
            return None
        blocks[tuple(members)] = start
    return sum(vector_wavefronts(start[w:w + 32], width) for start in blocks.values()
               for w in range(0, threads, 32))


def fewest_wavefronts(op: str, e: int, addr: np.ndarray, fixed: bool, arch: str | None) -> int | None:
    """The fewest wavefronts of every plan of every family (None when no family moves the fragment)."""
    got = [_matrix_best(f, e, addr, fixed) for f in _families(op, e, arch)]
    got += [_vector_best(w, e, addr, fixed) for w in SHARED_WIDTHS if w >= e]
    return min((g for g in got if g is not None), default=None)
