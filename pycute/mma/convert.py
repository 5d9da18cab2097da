"""make_fragment_convert: the f32 accumulator of one MMA as the A operand, in registers, of the next (attention's
``P = softmax(S)`` fed to ``O = P V`` without shared memory), derived from the two fragments' coordinates
(``fragment_coords``; docs/fragments.md).

Each destination register packs ``32 / bits`` values; each pair of them is one ``cvt.rn{.satfinite}.<t>x2.f32``
of two source values (PTX ISA #data-movement-and-conversion-instructions-cvt: the first source lands in the upper
half, the upper byte for the 8-bit pairs). Where every destination value's source element is held by the same
thread, the conversion is that packing alone -- the f32 accumulator into a bf16 / f16 A fragment of K = N: value
``v`` of D is value ``v`` of A, register ``r`` of A is ``cvt(D[2r + 1], D[2r])``. Where they are not -- an 8-bit A
holds 4 adjacent K elements per register, the accumulator gives a thread 2 adjacent columns -- the values travel:

* ``columns="same"``: each unit a sender converts goes to the thread that holds its element, 32 bits per
  ``shfl.sync`` (PTX #data-movement-and-conversion-instructions-shfl-sync): the units are paired into words in
  the receiver's order, the words scheduled into rounds in which every lane reads one lane and is read by at most
  one (an edge colouring of the receivers x senders multigraph: as many rounds as the most words a lane receives
  or sends), and each destination register assembled from at most two received words by ``prmt``. For e4m3 from
  the wgmma accumulator: 2 shuffles per 16 columns of K, each thread of a quad reading two of its quad.
* ``columns="permuted"``: no value leaves its thread; A's column ``k`` holds the source's column
  ``permutation[k]`` instead (the same for every row and thread), and the next MMA's B must have its K rows
  permuted alike (``O = P V`` sums over K in any order): for e4m3, within every 16 columns, A's ``4 q + j`` is
  S's ``2 q + j`` (``j < 2``) and ``8 + 2 q + j - 2`` -- FlashAttention 3's FP8 layout.

Refused, naming the rule: a pair of destination values from two threads (one ``cvt`` converts one thread's two
registers), values crossing warps (shared memory, not planned), no column permutation that keeps every element in
its thread, threads or warps that would need different code.
"""
from __future__ import annotations

from typing import ClassVar, Literal

import attrs
import numpy as np

from ..arch.convention import Convention
from ..arch.sm80.cvt import PackConversion, pack_conversion
from ..arch.sm90.warp import WARP_THREADS
from ..errors import PlanError
from ..tensor.coords import FragmentCoords, HasRegisterFragment, fragment_coords
from ..tensor.rmem import RegisterFragment
from ..views import view

__all__ = ["FragmentConvertPlan", "make_fragment_convert", "Unit", "ShuffleRound", "Assembly", "Columns"]

#: ``same``: A holds S's elements where S has them (shuffles where needed); ``permuted``: A's columns permuted so no
#: value leaves its thread (the next MMA's B permuted alike).
Columns = Literal["same", "permuted"]
_SHFL = "PTX #data-movement-and-conversion-instructions-shfl-sync"


@attrs.frozen
class Unit:
    """One ``cvt`` of the sending thread's source values ``hi`` (upper half) and ``lo``: 32 bits for a 16-bit
    destination type, 16 for an 8-bit one."""

    hi: int
    lo: int


@attrs.frozen
class ShuffleRound:
    """One ``shfl.sync``: lane ``l`` reads lane ``src_lane[l]``'s word, and offers ``send[l]`` (its units, low
    first) to whichever lane reads it."""

    src_lane: tuple[int, ...]
    send: tuple[tuple[Unit, ...], ...]


@attrs.frozen
class Assembly:
    """Destination register ``r``: ``prmt(word a, word b, selector[lane])`` of the words received in rounds ``a`` and
    ``b`` (PTX #data-movement-and-conversion-instructions-prmt: bytes 0-3 of a, 4-7 of b)."""

    a: int
    b: int
    selector: tuple[int, ...]


@attrs.frozen(repr=False)
class FragmentConvertPlan:
    """``dst`` (A's register fragment) from ``src`` (the f32 accumulator), converting with ``conversion``: in the
    thread (``registers[r]``: register ``r``'s units, low first) or through ``rounds`` of shuffles and the
    ``assembly`` of each register. ``permutation[k]``: the source column A's column ``k`` holds."""

    dst: RegisterFragment
    src: RegisterFragment
    conversion: PackConversion
    permutation: tuple[int, ...]
    registers: tuple[tuple[Unit, ...], ...] = ()
    rounds: tuple[ShuffleRound, ...] = ()
    assembly: tuple[Assembly, ...] = ()

    VARIANT: ClassVar[str] = "fragment_convert"

    @property
    def shuffles(self) -> int:
        """``shfl.sync`` per thread: 0 when every value stays in its thread."""
        return len(self.rounds)

    @property
    def src_registers(self) -> int:
        return fragment_coords(self.src).values

    @property
    def dst_registers(self) -> int:
        return fragment_coords(self.dst).values * self.dst.dtype.bits // 32

    @property
    def units(self) -> tuple[Unit, ...]:
        """Every ``cvt`` a thread issues, in first-use order."""
        seen: dict[Unit, None] = {}
        for regs in self.registers:
            seen.update(dict.fromkeys(regs))
        for rnd in self.rounds:
            for word in rnd.send:
                seen.update(dict.fromkeys(word))
        return tuple(seen)

    @property
    def convention(self) -> Convention:
        """In the thread: any thread on its own; with shuffles: every lane of the fragment's warps, converged."""
        return Convention("warps", self.dst.threads, "none") if self.rounds else Convention("any", 1, "none")

    def cuda(self, name: str = "pycute_fragment_convert") -> str:
        """``name(const float (&src)[n], unsigned (&dst)[m])`` (``pycute.codegen.fragment``)."""
        return view("cuda", self, name)

    def emulate(self, registers: np.ndarray) -> np.ndarray:
        """(threads, dst registers) uint32 the plan's program leaves from (threads, src registers) f32 bits
        (``pycute.sim.fragment``)."""
        return view("emulate", self, registers)

    def reference(self, registers: np.ndarray) -> np.ndarray:
        """(threads, dst registers) uint32 from the coordinates alone: every element of A is S's element at
        (row, ``permutation[col]``) rounded by ``conversion``, packed through A's fragment."""
        return view("reference", self, registers)

    def explain(self) -> str:
        c = self.conversion
        lines = [f"fragment conversion: {self.src!r} -> {self.dst!r}",
                 f"  convert     {c.ptx} ({len(self.units)} per thread: first source in the upper part)"]
        if any(k != p for k, p in enumerate(self.permutation)):
            lines.append(f"  columns     permuted: A's column k holds S's column permutation[k] "
                         f"({list(self.permutation[:16])}...); the next MMA's B rows alike")
        if not self.rounds:
            lines.append(f"  in thread   every value stays in its thread: {self.dst_registers} register(s), no shuffle")
        else:
            lines.append(f"  shuffles    {len(self.rounds)} shfl.sync per thread (lanes read "
                         f"{sorted(set(self.rounds[0].src_lane[:8]))}... of their warp), {len(self.assembly)} prmt")
        return "\n".join(lines)

    def __repr__(self) -> str:
        how = f"{len(self.rounds)} shuffles" if self.rounds else "in thread"
        perm = ", columns permuted" if any(k != p for k, p in enumerate(self.permutation)) else ""
        return f"FragmentConvertPlan({self.src.dtype.name} -> {self.dst.dtype.name}, {how}{perm})"


# --- derivation --------------------------------------------------------------------------------------------------
def _inverse(coords: FragmentCoords) -> tuple[np.ndarray, np.ndarray]:
    """Element index ``row + rows * col`` -> (thread, value) holding it (-1 where none)."""
    rows, cols = coords.shape
    thread = np.full(rows * cols, -1, dtype=np.int64)
    value = np.full(rows * cols, -1, dtype=np.int64)
    idx = (coords.row + rows * coords.col).ravel()
    t, v = np.divmod(np.arange(idx.size), coords.values)
    order = np.argsort(idx, kind="stable")[::-1]                # the first holder wins
    thread[idx[order]], value[idx[order]] = t[order], v[order]
    return thread, value


def _permutation(dst: FragmentCoords, src: FragmentCoords) -> tuple[int, ...]:
    """The column permutation that keeps every element in its thread: each thread's destination columns on a row,
    ascending, paired with its source columns on that row, ascending; the same pairing for every thread and row."""
    rows, cols = dst.shape
    perm = np.full(cols, -1, dtype=np.int64)
    for t in range(dst.threads):
        for r in np.unique(dst.row[t]):
            d = np.sort(dst.col[t][dst.row[t] == r])
            s = np.sort(src.col[t][src.row[t] == r])
            if d.size != s.size:
                raise PlanError(f"make_fragment_convert: thread {t} holds {d.size} of row {r}'s columns in A and "
                                f"{s.size} in the source: no column permutation keeps every element in its thread")
            clash = (perm[d] >= 0) & (perm[d] != s)
            if clash.any():
                k = int(d[np.argmax(clash)])
                raise PlanError(f"make_fragment_convert: A's column {k} would hold the source's column "
                                f"{int(perm[k])} for one thread and {int(s[np.argmax(clash)])} for thread {t} (row "
                                f"{r}): no one column permutation keeps every element in its thread")
            perm[d] = s
    if (perm < 0).any() or np.unique(perm).size != cols:
        raise PlanError("make_fragment_convert: the threads' columns do not pair into one permutation of the tile's "
                        "columns")
    return tuple(int(p) for p in perm)


def _units(dst: FragmentCoords, src: FragmentCoords, perm: tuple[int, ...],
           dst_bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every thread, destination register and unit position: the sending thread and the two source values
    (hi, lo) of the unit, as (threads, registers, units) arrays."""
    rows = dst.shape[0]
    inv_t, inv_v = _inverse(src)
    src_col = np.asarray(perm, dtype=np.int64)[dst.col]
    idx = dst.row + rows * src_col
    sender, value = inv_t[idx], inv_v[idx]
    if (sender < 0).any():
        t, v = np.argwhere(sender < 0)[0]
        raise PlanError(f"make_fragment_convert: A's value {v} of thread {t} is element {dst.of(t, v)}, which the "
                        f"source fragment does not hold")
    per_reg = 32 // dst_bits
    regs = dst.values // per_reg
    sender = sender.reshape(dst.threads, regs, per_reg // 2, 2)
    value = value.reshape(dst.threads, regs, per_reg // 2, 2)
    split = sender[..., 0] != sender[..., 1]
    if split.any():
        t, r, k = np.argwhere(split)[0]
        v = r * per_reg + 2 * k
        raise PlanError(f"make_fragment_convert: A's values {v} and {v + 1} of thread {t} come from threads "
                        f"{sender[t, r, k, 0]} and {sender[t, r, k, 1]}: one cvt packs two values of one thread "
                        f"(PTX #data-movement-and-conversion-instructions-cvt)")
    return sender[..., 0], value[..., 1], value[..., 0]


def _uniform(table: np.ndarray, what: str) -> np.ndarray:
    """``table`` (threads, ...) must be the same for every thread: its row 0."""
    bad = (table != table[:1]).reshape(table.shape[0], -1).any(axis=1)
    if bad.any():
        raise PlanError(f"make_fragment_convert: {what} differ between threads 0 and {int(np.argmax(bad))}: one "
                        f"generated function serves every thread")
    return table[0]


def _in_thread(hi: np.ndarray, lo: np.ndarray) -> tuple[tuple[Unit, ...], ...]:
    h, l_ = _uniform(hi, "the source registers of A's units"), _uniform(lo, "the source registers of A's units")
    return tuple(tuple(Unit(int(a), int(b)) for a, b in zip(hr, lr)) for hr, lr in zip(h, l_))


def _color(edges: list[tuple[int, int]]) -> list[int]:
    """A proper edge colouring of a bipartite multigraph (left, right) with as many colours as its largest degree
    (Koenig; alternating-path recolouring): colour ``c`` is shuffle round ``c``."""
    degree = max(max(np.bincount([u for u, _ in edges])), max(np.bincount([v for _, v in edges])))
    left = [[-1] * degree for _ in range(WARP_THREADS)]
    right = [[-1] * degree for _ in range(WARP_THREADS)]
    color = [-1] * len(edges)
    for e, (u, v) in enumerate(edges):
        a = next(c for c in range(degree) if left[u][c] < 0)
        b = next(c for c in range(degree) if right[v][c] < 0)
        if right[v][a] >= 0:                                  # swap a / b along the path from v
            path, side, node, c = [], "right", v, a
            while True:
                nxt = (right if side == "right" else left)[node][c]
                if nxt < 0:
                    break
                path.append(nxt)
                eu, ev = edges[nxt]
                node, side, c = (eu, "left", b if c == a else a) if side == "right" else (ev, "right",
                                                                                          b if c == a else a)
            for p in path:
                pu, pv = edges[p]
                left[pu][color[p]] = right[pv][color[p]] = -1
            for p in path:
                pu, pv = edges[p]
                color[p] = b if color[p] == a else a
                left[pu][color[p]] = right[pv][color[p]] = p
        color[e] = a
        left[u][a] = right[v][a] = e
    return color


def _warp0(sender: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sending lanes and source values of warp 0, checked to be every warp's (one function serves them all)
    and within the warp."""
    threads = sender.shape[0]
    warp_of = np.arange(threads) // WARP_THREADS
    far = sender // WARP_THREADS != warp_of[:, None, None]
    if far.any():
        t, r, _ = np.argwhere(far)[0]
        raise PlanError(f"make_fragment_convert: A's register {r} of thread {t} needs values of thread "
                        f"{int(sender[t, r].max())}, in another warp: shfl.sync reaches the lanes of one warp; a "
                        f"conversion across warps needs shared memory, which is not planned ({_SHFL})")
    lane = sender % WARP_THREADS
    w0 = slice(0, WARP_THREADS)
    for w in range(1, threads // WARP_THREADS):
        rows = slice(WARP_THREADS * w, WARP_THREADS * (w + 1))
        if not all(np.array_equal(a[rows], a[w0]) for a in (lane, hi, lo)):
            raise PlanError(f"make_fragment_convert: warp {w} exchanges values unlike warp 0: one generated function "
                            f"serves every warp")
    return lane[w0], hi[w0], lo[w0]


_Word = tuple[tuple[Unit, ...], tuple[tuple[int, int], ...]]      # (units, the receiver's (register, position)s)


def _words(lane: np.ndarray, hi: np.ndarray, lo: np.ndarray, unit_bits: int) -> tuple[list[tuple[int, int]],
                                                                                     list[_Word]]:
    """Each receiver's units from each sender, in the receiver's register order, paired into 32-bit words: the
    edges (receiver, sender) and the words they carry."""
    regs, per = lane.shape[1:]
    per_word = 32 // unit_bits
    edges: list[tuple[int, int]] = []
    words: list[_Word] = []
    for r_lane in range(WARP_THREADS):
        by_sender: dict[int, list[tuple[Unit, tuple[int, int]]]] = {}
        for r in range(regs):
            for k in range(per):
                unit = Unit(int(hi[r_lane, r, k]), int(lo[r_lane, r, k]))
                by_sender.setdefault(int(lane[r_lane, r, k]), []).append((unit, (r, k)))
        for s, got in by_sender.items():
            if len(got) % per_word:
                raise PlanError(f"make_fragment_convert: lane {r_lane} needs {len(got)} {unit_bits}-bit units from "
                                f"lane {s}, not whole 32-bit words ({_SHFL})")
            for i in range(0, len(got), per_word):
                chunk = got[i:i + per_word]
                edges.append((r_lane, s))
                words.append((tuple(u for u, _ in chunk), tuple(p for _, p in chunk)))
    return edges, words


def _rounds(edges: list[tuple[int, int]], words: list[_Word]) -> tuple[tuple[ShuffleRound, ...],
                                                                      dict[tuple[int, int, int], tuple[int, int]]]:
    """The shuffle rounds (one colour of the edges each) and where each receiver's (register, position) lands:
    (round, unit in the word)."""
    color = _color(edges)
    n_rounds = max(color) + 1
    src_lane = [list(range(WARP_THREADS)) for _ in range(n_rounds)]
    send: list[list[tuple[Unit, ...] | None]] = [[None] * WARP_THREADS for _ in range(n_rounds)]
    where: dict[tuple[int, int, int], tuple[int, int]] = {}
    for e, ((r_lane, s), (units, places)) in enumerate(zip(edges, words)):
        c = color[e]
        src_lane[c][r_lane] = s
        send[c][s] = units
        for j, (r, k) in enumerate(places):
            where[(r_lane, r, k)] = (c, j)
    rounds = []
    for c in range(n_rounds):
        idle = next(w for w in send[c] if w is not None)          # a lane nobody reads offers what another offers
        rounds.append(ShuffleRound(tuple(src_lane[c]), tuple(w if w is not None else idle for w in send[c])))
    return tuple(rounds), where


def _assemble(where: dict[tuple[int, int, int], tuple[int, int]], regs: int, per: int,
              unit_bits: int) -> tuple[Assembly, ...]:
    """Each A register from (at most) two received words: the rounds and every lane's prmt selector."""
    out = []
    unit_bytes = unit_bits // 8
    for r in range(regs):
        used = sorted({where[(ln, r, k)][0] for ln in range(WARP_THREADS) for k in range(per)})
        if len(used) > 2:
            raise PlanError(f"make_fragment_convert: A's register {r} gathers words of {len(used)} shuffle rounds "
                            f"across lanes; one prmt takes two")
        a, b = used[0], used[-1]
        selector = []
        for ln in range(WARP_THREADS):
            nibbles = []
            for k in range(per):
                c, j = where[(ln, r, k)]
                nibbles += [(0 if c == a else 4) + j * unit_bytes + i for i in range(unit_bytes)]
            selector.append(sum(n << (4 * i) for i, n in enumerate(nibbles)))
        out.append(Assembly(a, b, tuple(selector)))
    return tuple(out)


def _shuffled(sender: np.ndarray, hi: np.ndarray, lo: np.ndarray,
              unit_bits: int) -> tuple[tuple[ShuffleRound, ...], tuple[Assembly, ...]]:
    lane, hi, lo = _warp0(sender, hi, lo)
    rounds, where = _rounds(*_words(lane, hi, lo, unit_bits))
    return rounds, _assemble(where, lane.shape[1], lane.shape[2], unit_bits)


def make_fragment_convert(dst: RegisterFragment, src: RegisterFragment | HasRegisterFragment,
                          columns: Columns = "same", satfinite: bool | None = None) -> FragmentConvertPlan:
    """Plan ``dst`` (the next MMA's A in registers, ``wgmma_a_fragment(bf16 | f16 | f8e4m3 | f8e5m2, M, K)``) from
    ``src`` (an f32 accumulator of the same tile, ``wgmma_accumulator(f32, M, K)`` or its plan): which source values
    each ``cvt`` packs into which register, and the shuffles where values change threads (``columns="same"``) or
    the column permutation that avoids them (``"permuted"``). ``satfinite`` as ``pack_conversion`` takes it (on for
    the 8-bit types). PlanError names what is refused."""
    if isinstance(src, HasRegisterFragment) and not isinstance(src, RegisterFragment):
        src = src.fragment_tensor
    if not (isinstance(dst, RegisterFragment) and isinstance(src, RegisterFragment)):
        raise TypeError(f"make_fragment_convert: two register fragments (dst: wgmma_a_fragment, src: "
                        f"wgmma_accumulator), got {type(dst).__name__}, {type(src).__name__}")
    if columns not in ("same", "permuted"):
        raise PlanError(f"make_fragment_convert: columns is 'same' or 'permuted', not {columns!r}")
    if src.dtype.name != "f32":
        raise PlanError(f"make_fragment_convert: the source is an f32 accumulator (cvt.rn.<t>x2.f32), not "
                        f"{src.dtype.name}")
    conversion = pack_conversion(dst.dtype.name, satfinite)
    d, s = fragment_coords(dst), fragment_coords(src)
    if d.threads != s.threads or d.shape != s.shape:
        raise PlanError(f"make_fragment_convert: A {dst!r} is a {d.shape[0]} x {d.shape[1]} tile over {d.threads} "
                        f"threads, the source {src!r} a {s.shape[0]} x {s.shape[1]} tile over {s.threads}: the "
                        f"accumulator's M x N is A's M x K")
    perm = _permutation(d, s) if columns == "permuted" else tuple(range(d.shape[1]))
    sender, hi, lo = _units(d, s, perm, dst.dtype.bits)
    own = sender == np.arange(d.threads)[:, None, None]
    if own.all():
        return FragmentConvertPlan(dst, src, conversion, perm, registers=_in_thread(hi, lo))
    rounds, assembly = _shuffled(sender, hi, lo, conversion.result_bits)
    return FragmentConvertPlan(dst, src, conversion, perm, rounds=rounds, assembly=assembly)
