"""make_cp_async_copy: plan the cp.async instructions that move one tile of a global array into shared memory.

The tile's elements are ordered colexicographically with the array's contiguous mode first; vector ``j`` is
``vector`` consecutive elements of that order, thread ``t`` copies vectors ``t, t + threads, ...`` (consecutive
threads on consecutive global bytes). The vector is the widest of 16, 8 and 4 bytes for which every vector is one
aligned run in shared memory (the swizzle applied to the bytes) and in the array (its base, its other modes' strides
and the tile's contiguous extent aligned to the width, the array at least one vector long): the rule each wider
width broke is kept.

No copy's source window leaves the array's allocation: where the contiguous extent is not whole vectors, the one
vector that ends the array would read past its last byte with the plan's width (cp.async's source window is its
cp-size, whatever its src-size), so that vector alone is narrower copies (``CpAsyncTail``).
"""
from __future__ import annotations

import attrs
import numpy as np

from ...arch.sm80.cache import CachePolicy, cache_policy
from ...arch.sm80.cp_async import CP_ASYNC_SIZES, MIN_SOURCE_WINDOW, CpAsyncCache, CpAsyncCompletion, L2Prefetch
from ...atoms.cp_async import cp_async_atom
from ...errors import PlanError
from ...int_tuple import as_int, flatten, product
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...tensor.tile import contiguous_mode, mode_extents, tile_elements, whole_array_modes
from ..protocol import Reject, Rejection
from ...tensor.stages import smem_stages
from .plan import CpAsyncInstruction, CpAsyncPlan, CpAsyncTail, TailCopy, Terms, array_end

__all__ = ["make_cp_async_copy", "tail_copies"]

MAX_THREADS = 1024          # a CTA's threads


def _operands(dst: object, src: object) -> tuple[GlobalTensor, SmemTensor]:
    if not (isinstance(dst, SmemTensor) and isinstance(src, GlobalTensor)):
        raise TypeError(f"make_cp_async_copy: cp.async copies a global array (make_global_tensor) into a shared tile "
                        f"(make_smem_tensor), got {type(dst).__name__} <- {type(src).__name__}")
    if src.dtype != dst.dtype:
        raise PlanError(f"make_cp_async_copy: cp.async copies bytes unchanged: {src.dtype.name} and "
                        f"{dst.dtype.name}")
    if src.dtype.bits % 8:
        raise PlanError(f"make_cp_async_copy: {src.dtype.name} elements are {src.dtype.bits} bits; pycute plans "
                        f"whole-byte elements (bounds are checked per element)")
    return src, dst


def _order(modes: list[tuple[int, int]], tile: tuple[int, ...], smem: SmemTensor) -> tuple[int, ...]:
    if len(tile) != len(modes):
        raise PlanError(f"make_cp_async_copy: the tile has {len(tile)} modes and the array {len(modes)}; mode i of "
                        f"the tile is a window of mode i of the array ({smem!r})")
    u = contiguous_mode(modes)
    return tuple(range(len(modes))) if u is None else (u,) + tuple(k for k in range(len(modes)) if k != u)


def _check_width(size: int, elem: int, modes: list, order: tuple, tile: tuple, gmem: GlobalTensor,
                 smem: SmemTensor, smem_bytes: np.ndarray, stages: tuple) -> None:
    """Reject ``size``-byte vectors with the first rule they break."""
    v, u = size // elem, order[0]
    if v > 1 and modes[u][1] != 1:
        raise Reject("no array mode has stride 1, so no two elements are adjacent in global memory")
    if tile[u] % v:
        raise Reject("the tile's contiguous extent {n} is not a multiple of {v} elements", n=tile[u], v=v)
    if gmem.base_align % size:
        raise Reject("the array's base is aligned to {a} B", a=gmem.base_align)
    end = array_end(modes, elem)
    if end < size:
        raise Reject("the array is {e} B, less than one copy (its source window would leave the array)", e=end)
    for k, (n, d) in enumerate(modes):
        if k != u and n > 1 and (d * elem) % size:
            raise Reject("array mode {k} has a stride of {b} B, not a multiple of {s}", k=k, b=d * elem, s=size)
    runs = smem_bytes.reshape(-1, v)
    if v > 1 and np.any(np.diff(runs, axis=1) != elem):
        j = int(np.argwhere(np.any(np.diff(runs, axis=1) != elem, axis=1))[0][0])
        raise Reject("elements {a}..{b} are not adjacent in shared memory (at bytes {s})", a=j * v, b=j * v + v - 1,
                     s=list(map(int, runs[j])))
    if smem.base_align % size or np.any(runs[:, 0] % size):
        bad = int(runs[np.argmax(runs[:, 0] % size != 0), 0]) if np.any(runs[:, 0] % size) else smem.base_align
        raise Reject("a vector would start at shared byte {b}, not {s}-byte aligned", b=bad, s=size)
    for s in stages:
        if s.smem_step % size:
            raise Reject("run-time index {n} moves the tile by {b} B", n=s.name, b=s.smem_step)


def tail_copies(nbytes: int, size: int) -> tuple[tuple[TailCopy, ...], int]:
    """``(copies, residue)`` for a ``size``-byte vector holding ``nbytes`` (fewer) of the array at its end: the
    data's whole 4-byte words as the fewest aligned cp.async, the rest of the vector from the residue's word on as
    zero-filling cp.async, and the residue (bytes past the last whole word). Every data copy's source window ends
    at or before ``nbytes``; the zero-filling ones read nothing."""
    if not 0 < nbytes < size:
        raise PlanError(f"tail_copies: a tail holds 1 to {size - 1} of its {size} bytes, not {nbytes}")
    words = nbytes - nbytes % MIN_SOURCE_WINDOW
    copies = _aligned(0, words, True) + _aligned(words + (MIN_SOURCE_WINDOW if nbytes > words else 0), size, False)
    return copies, nbytes - words


def _aligned(start: int, stop: int, data: bool) -> tuple[TailCopy, ...]:
    """[start, stop) as the fewest cp.async, each aligned to its size (the widest that fits at each offset)."""
    out, off = [], start
    while off < stop:
        w = max(c for c in CP_ASYNC_SIZES if off % c == 0 and off + c <= stop)
        out.append(TailCopy(off, w, w if data else 0))
        off += w
    return tuple(out)


def _tail(modes: list, order: tuple, tile: tuple, coords: tuple[Terms, ...], elem: int, size: int, threads: int,
          nvec: int) -> CpAsyncTail | None:
    """The tail, if the contiguous extent is not whole vectors: the vector holding the array's last element then
    starts at column ``n - n % v``; the iterations are those of the tile vectors that sit where some tile index
    puts that vector (the other modes at the coordinate of the array's largest offset; any for a stride 0)."""
    v, u = size // elem, order[0]
    n = modes[u][0]
    if v == 1 or n % v == 0:
        return None
    want = {u: (n - n % v) % tile[u]}
    for k, (extent, d) in enumerate(modes):
        if k != u and (extent == 1 or d != 0):
            want[k] = (extent - 1) % tile[k] if d > 0 else 0
    e = np.arange(nvec, dtype=np.int64) * v
    hit = np.all([np.asarray(coords[k](e)) == c for k, c in want.items()], axis=0)
    copies, residue = tail_copies(n % v * elem, size)
    return CpAsyncTail(n % v * elem, copies, residue, tuple(sorted({int(j) // threads for j in np.flatnonzero(hit)})))


def _width(elem: int, *args) -> tuple[int, list[Rejection]]:
    rejected: list[Rejection] = []
    for size in CP_ASYNC_SIZES:
        if size % elem:
            continue
        try:
            _check_width(size, elem, *args)
            return size, rejected
        except Reject as why:
            rejected.append(Rejection(f"{size} B", why))
    raise PlanError("make_cp_async_copy: no cp.async width fits (cp.async moves 16, 8 or 4 aligned bytes):\n" +
                    "\n".join(f"  {r}" for r in rejected) + f"\n  global: {args[3]!r}\n  shared: {args[4]!r}")


def _terms(smem: SmemTensor, modes: list, order: tuple, tile: tuple) -> tuple[tuple[Terms, ...], Terms, Terms]:
    """Per-mode coordinates, global offset and pre-swizzle shared offset of element ``e`` as Terms."""
    coords: list[Terms] = [Terms(())] * len(tile)
    gmem, smem_t = [], []
    shape = smem.layout.shape if isinstance(smem.layout.shape, tuple) else (smem.layout.shape,)
    stride = smem.layout.stride if isinstance(smem.layout.shape, tuple) else (smem.layout.stride,)
    prefix = 1
    for k in order:
        coords[k] = Terms(((prefix, tile[k], 1),))
        gmem.append((prefix, tile[k], modes[k][1]))
        sub = prefix
        for n, d in zip(flatten(shape[k]), flatten(stride[k])):
            if n > 1 and d != 0:
                smem_t.append((sub, n, d))
            sub *= n
        prefix *= tile[k]
    return tuple(coords), Terms(tuple(t for t in gmem if t[1] > 1 and t[2] != 0)), Terms(tuple(smem_t), smem.offset)


def _linear(quantities: dict, threads: int, iterations: int, vector: int, nvec: int) -> frozenset[str]:
    """The quantities ``q`` with ``q(t + i T) = q(t) + q(i T) - q(0)`` for every copied (thread, iteration): the
    generated code computes their thread part once and adds a constant per iteration."""
    j = np.arange(threads)[:, None] + np.arange(iterations)[None, :] * threads
    valid = j < nvec
    out = set()
    for name, q in quantities.items():
        table = np.asarray(q(np.where(valid, j, 0) * vector), dtype=np.int64)
        if np.all((table == table[:, :1] + table[:1, :] - table[0, 0]) | ~valid):
            out.add(name)
    return frozenset(out)


def make_cp_async_copy(dst: SmemTensor, src: GlobalTensor, threads: int = 128, cache: CpAsyncCache | None = None,
                       l2_prefetch: L2Prefetch | None = None, completion: CpAsyncCompletion = "group",
                       cache_hint: str | CachePolicy | None = None) -> CpAsyncPlan:
    """Plan a cp.async copy of one tile of the whole global array ``src`` into the shared tile ``dst`` by
    ``threads`` threads (mode ``i`` of the tile is a window of mode ``i`` of the array; the generated code takes a
    tile index per mode, and zero-fills elements outside the array). ``cache`` forces ``.ca`` / ``.cg`` (16-byte
    copies bypass L1 by default), ``l2_prefetch`` adds an ``.L2::<n>B`` hint, ``completion`` is ``"group"``
    (commit_group; the caller waits) or ``"arrive"`` (each thread arrives on an mbarrier, ``.noinc``). A
    ``cache_hint`` is refused: ``cp.async ... .L2::cache_hint`` raised an illegal-instruction exception on the H200
    for every policy tried (docs/tma.md; TMA and bulk copies take the hint). PlanError names the rule a copy
    breaks."""
    gmem, smem = _operands(dst, src)
    if cache_hint is not None:
        policy = cache_policy(cache_hint, "make_cp_async_copy")
        raise PlanError(f"make_cp_async_copy: cache_hint={policy}: cp.async with .L2::cache_hint raised an "
                        f"illegal-instruction exception on the H200 for evict_first, evict_last and a fractional "
                        f"policy (docs/tma.md, docs/runs/tma/tma-h200-boxes.jsonl hint/cp-async/*), so pycute does not "
                        f"issue it; make_bulk_copy and make_tma_copy take the hint")
    threads = as_int(threads, "make_cp_async_copy: threads")
    if not 1 <= threads <= MAX_THREADS:
        raise PlanError(f"make_cp_async_copy: threads={threads}: a CTA has 1 to {MAX_THREADS} threads")
    if completion not in ("group", "arrive"):
        raise PlanError(f"make_cp_async_copy: completion={completion!r}: cp.async completes in a 'group' "
                        f"(commit / wait_group) or by an mbarrier 'arrive' per thread (arrive.noinc)")
    elem = gmem.dtype.bits // 8
    if elem not in CP_ASYNC_SIZES and elem > max(CP_ASYNC_SIZES):
        raise PlanError(f"make_cp_async_copy: {elem}-byte elements exceed cp.async's widest copy")
    modes = whole_array_modes(gmem, "make_cp_async_copy")
    stages = smem_stages(smem, min(CP_ASYNC_SIZES), "make_cp_async_copy")
    smem = smem.at(**{d.name: 0 for d in smem.dynamic}) if smem.dynamic else smem
    tile = mode_extents(smem.layout)
    order = _order(modes, tile, smem)
    _, smem_bytes = tile_elements(smem, order)
    size, rejected = _width(elem, modes, order, tile, gmem, smem, smem_bytes, stages)
    atom = cp_async_atom(size, cache, l2_prefetch)
    vector, nvec = size // elem, product(tile) * elem // size
    iterations = -(-nvec // threads)
    insts = tuple(CpAsyncInstruction(i, atom.ptx, min(threads, nvec - i * threads)) for i in range(iterations))
    coords, g, s = _terms(smem, modes, order, tile)
    plan = CpAsyncPlan(gmem, smem, atom, threads, vector, order, insts, coords, g, s, frozenset(), completion,
                       stages, _tail(modes, order, tile, coords, elem, size, threads, nvec), tuple(rejected))
    linear = _linear({"smem": plan.smem_byte, "gmem": g, **{f"coord{k}": c for k, c in enumerate(coords)}},
                     threads, iterations, vector, nvec)
    return attrs.evolve(plan, linear=linear)
