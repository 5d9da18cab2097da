"""The result of make_cp_async_copy: which thread copies which elements (a CuTe TV layout over the tile), the
per-iteration instructions, and the index arithmetic the generated code and the stream share."""
from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import attrs

from ...arch.convention import Convention
from ...arch.sm80.cp_async import CpAsyncCompletion
from ...atoms.cp_async import CpAsyncAtom, CpAsyncIssue, CpAsyncResidue, cp_async_atom
from ...errors import PlanError
from ...int_tuple import as_int, product
from ...layout import Layout
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...views import view
from ..protocol import ArrayTilePlan, Rejection
from ...tensor.stages import SmemStage, stage_offset

__all__ = ["Terms", "CpAsyncInstruction", "TailCopy", "CpAsyncTail", "CpAsyncPlan", "array_end"]


def array_end(modes: list[tuple[int, int]], elem: int) -> int:
    """Bytes from an array's base to its last element's end (``modes``: extent and stride in elements per mode):
    the smallest allocation that holds it, where every copy's source window must stay."""
    return (sum(max((n - 1) * d, 0) for n, d in modes) + 1) * elem


@attrs.frozen
class Terms:
    """An index function of a tile element's position ``e`` (colexicographic over the plan's mode order):
    ``const + sum((e // div) % mod * coef)``, the form a layout takes on a linear index."""

    terms: tuple[tuple[int, int, int], ...]
    const: int = 0

    def __call__(self, e: Any) -> Any:
        """The value at ``e`` (an int, or a numpy array elementwise)."""
        return self.const + sum(((e // div) % mod * coef for div, mod, coef in self.terms), 0 * e)


@attrs.frozen
class CpAsyncInstruction:
    """Iteration ``iteration`` of every thread: thread ``t`` copies vector ``t + iteration * threads``; only the
    first ``active`` threads copy in it (fewer than all in a last, partial iteration)."""

    iteration: int
    ptx: str
    active: int


class TailCopy(NamedTuple):
    """One cp.async of the vector that ends the array: ``size`` bytes at ``offset`` from the vector's start (in
    shared and global memory alike), reading ``src_size`` of them: all (the array's bytes) or none (zeros, the
    source then the array's base)."""

    offset: int
    size: int
    src_size: int


@attrs.frozen
class CpAsyncTail:
    """How the vector that ends the array is copied when the array's contiguous extent is not whole vectors: it
    holds ``bytes`` of the array, fewer than its cp-size, and a cp.async's source window is its whole cp-size at a
    cp-size-aligned address whatever its src-size (PTX ISA #data-movement-and-conversion-instructions-cp-async:
    src-size is what is copied, the alignment and the operand are cp-size's), so one wide copy would reach past the
    allocation's last byte (compute-sanitizer memcheck reports that read). Instead: ``copies`` (the data's whole
    4-byte words as the fewest aligned cp.async, then the rest of the vector as zero-filling cp.async), and the
    ``residue`` bytes past the last whole word (0 to 3) by a generic load and store (``CpAsyncResidue``). Only the
    plan's ``iterations`` can hold that vector, so only they test for it."""

    bytes: int
    copies: tuple[TailCopy, ...]
    residue: int
    iterations: tuple[int, ...]

    @property
    def residue_offset(self) -> int:
        """Where the residue's 4-byte shared word starts, from the vector's start."""
        return self.bytes - self.residue


@attrs.frozen(repr=False)
class CpAsyncPlan(ArrayTilePlan):
    """A validated cp.async copy of one tile of a global array into shared memory by ``threads`` threads: vector
    ``j`` is the ``vector`` elements from ``j * vector`` in colexicographic order over modes ``order`` (the array's
    contiguous mode first, so that consecutive threads read consecutive global bytes); thread ``t`` copies vectors
    ``t, t + threads, ...``. Elements outside the array are zero-filled (``src-size``); no copy's source window
    leaves the array's allocation (``tail``)."""

    gmem: GlobalTensor
    smem: SmemTensor
    atom: CpAsyncAtom
    threads: int
    vector: int
    order: tuple[int, ...]
    instructions: tuple[CpAsyncInstruction, ...]
    coords: tuple[Terms, ...]                    # per array mode: the element's tile coordinate
    gmem_terms: Terms                            # the element's global offset (elements) from the tile's origin
    smem_terms: Terms                            # the element's shared offset (elements) before the swizzle
    linear: frozenset[str]                       # the quantities that are thread part + iteration part
    completion: CpAsyncCompletion = "group"
    stages: tuple[SmemStage, ...] = ()
    tail: CpAsyncTail | None = None              # the vector that ends the array, where it is not whole
    rejected: tuple[Rejection, ...] = attrs.field(default=(), eq=False)

    direction: str = attrs.field(default="load", init=False)       # cp.async copies global -> shared only

    VARIANT: ClassVar[str] = "cp_async"


    @property
    def vectors(self) -> int:
        """cp.async instructions per tile, all threads together."""
        return product(self.tile_shape) // self.vector

    @property
    def lower_bound(self) -> int:
        """Fewest cp.async per thread any plan could use: the tile in 16-byte copies over the threads."""
        return -(-product(self.tile_shape) * self.elem_bytes // (16 * self.threads))

    @property
    def arrivals(self) -> int:
        """What an mbarrier completion adds to the barrier's expected arrivals: one per thread (``.noinc``)."""
        return self.threads if self.completion == "arrive" else 0

    @property
    def copy_sites(self) -> int:
        """cp.async instructions in the generated function: one per iteration, and the tail's copies in each
        iteration that checks for the vector that ends the array."""
        extra = len(self.tail.copies) * len(self.tail.iterations) if self.tail is not None else 0
        return len(self.instructions) + extra

    @property
    def alloc_bytes(self) -> int:
        """Bytes from the array's base to its last element's end (``array_end``)."""
        return array_end(self.array_modes, self.elem_bytes)

    @property
    def tv_layout(self) -> Layout:
        """``(thread, value) -> element index`` (colexicographic over ``order``), CuTe's TV layout; values of a
        partial last iteration past the tile are not copied."""
        t, v, n = self.threads, self.vector, len(self.instructions)
        return Layout((t, (v, n)), (v, (1, t * v)))

    def element(self, e: int) -> tuple[int, ...]:
        """The tile coordinate of element ``e`` (colexicographic over ``order``)."""
        return tuple(c(e) for c in self.coords)

    def smem_byte(self, e: Any) -> Any:
        """Element ``e``'s shared byte address from the buffer base (swizzled)."""
        x = self.smem_terms(e)
        return (self.smem.swizzle(x) if self.smem.swizzle is not None else x) * self.elem_bytes

    def stream(self, smem_base: int, *tile: int, thread: int = 0, **values: int
               ) -> list[CpAsyncIssue | CpAsyncResidue]:
        """Thread ``thread``'s cp.async for the buffer at shared address ``smem_base`` and tile index ``tile``;
        global addresses are byte offsets from the array's base (0 for a copy wholly out of bounds). The vector
        that ends the array is its tail's copies and residue, in address order."""
        smem_base, thread = self.smem_base(smem_base), as_int(thread, "stream: thread")
        if not 0 <= thread < self.threads:
            raise PlanError(f"stream: thread {thread} is not one of the plan's {self.threads}")
        if len(tile) != len(self.tile_shape):
            raise PlanError(f"stream: the tile index has {len(tile)} entries; the array has {len(self.tile_shape)} "
                            f"modes")
        origin = [as_int(t, "stream: tile index") * n for t, n in zip(tile, self.tile_shape)]
        shift = smem_base + stage_offset(self.stages, values, "cp.async plan: ")
        elem, size = self.elem_bytes, self.atom.size
        out = []
        for inst in self.instructions:
            if thread >= inst.active:
                continue
            e = (thread + inst.iteration * self.threads) * self.vector
            src_size = self._src_size(origin, self.element(e))
            gmem = (sum(o * d for o, (_, d) in zip(origin, self.array_modes)) + self.gmem_terms(e)) * elem
            if src_size and gmem + size > self.alloc_bytes:
                out += self._tail_stream(shift + self.smem_byte(e), gmem, src_size)
            else:
                out.append(CpAsyncIssue(inst.ptx, shift + self.smem_byte(e), gmem if src_size else 0, size,
                                        src_size))
        return out

    def _tail_stream(self, smem: int, gmem: int, src_size: int) -> list[CpAsyncIssue | CpAsyncResidue]:
        tail = self.tail
        if tail is None or src_size != tail.bytes:
            raise PlanError(f"stream: the vector at global +{gmem:#x} reads {src_size} B and crosses the array's "
                            f"{self.alloc_bytes}-byte end, but the plan's tail is {tail!r} (a planner defect)")
        pieces: list[tuple[int, CpAsyncIssue | CpAsyncResidue]] = [
            (c.offset, CpAsyncIssue(cp_async_atom(c.size, None, self.atom.l2_prefetch).ptx, smem + c.offset,
                                    gmem + c.offset if c.src_size else 0, c.size, c.src_size))
            for c in tail.copies]
        if tail.residue:
            r = tail.residue_offset
            pieces.append((r, CpAsyncResidue(smem + r, gmem + r, tail.residue)))
        return [p for _, p in sorted(pieces, key=lambda p: p[0])]

    def _src_size(self, origin: list[int], coord: tuple[int, ...]) -> int:
        """Bytes of the vector at tile coordinate ``coord`` inside the array (the rest is zero-filled)."""
        inside = self.vector
        for k, ((n, _), o, c) in enumerate(zip(self.array_modes, origin, coord)):
            g = o + c
            if k == self.order[0]:
                inside = min(max(n - g, 0), self.vector)
            elif not 0 <= g < n:
                return 0
        return inside * self.elem_bytes if min(origin) >= 0 else 0

    @property
    def convention(self) -> Convention:
        """Who calls the generated function: each of the plan's threads, with its index."""
        return Convention("threads", self.threads)

    def cuda(self, name: str = "pycute_cp_async_copy") -> str:
        """A ``__device__`` function every one of the ``threads`` threads calls: ``name(const void* gmem, unsigned
        smem, unsigned thread, int t0, ...[, unsigned mbar])``."""
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        """Emulate every thread's copies for several tiles (one partly out of bounds) and compare with the
        layouts alone."""
        view("verify", self, seed=seed)

    def explain(self) -> str:
        n = len(self.instructions)
        last = self.instructions[-1].active
        lines = [f"cp.async plan: {self.src!r} -> {self.dst!r}",
                 f"  instruction {self.atom.ptx} ({self.atom.size} B = {self.vector} x {self.smem.dtype.name}), "
                 f"src-size zero-fills what lies outside the array",
                 f"  threads     {self.threads}: {n} cp.async each{self._partial(last)}, {self.vectors} per tile; "
                 f"lower bound {self.lower_bound} per thread",
                 f"  TV layout   {self.tv_layout!r} (thread, value) -> element, colexicographic over modes "
                 f"{self.order} (mode {self.order[0]} contiguous in the array: coalesced)",
                 "  completion  " + ("cp.async.commit_group; wait with cp.async.wait_group, then a barrier"
                                      if self.completion == "group" else
                                      f"cp.async.mbarrier.arrive.noinc: the mbarrier expects {self.arrivals} more "
                                      f"arrivals")]
        lines.append(self._explain_tail())
        lines += [f"  straight    {q}: thread part + iteration part (computed once)" for q in sorted(self.linear)]
        if self.rejected:
            lines.append("  wider copies refused:")
            lines += [f"    {r.candidate:<6} {r.reason}" for r in self.rejected]
        for s in self.stages:
            lines.append(f"  run-time    {s.name} in [0, {s.extent}): +{s.smem_step} B shared memory per unit")
        return "\n".join(lines)

    def _explain_tail(self) -> str:
        size, end = self.atom.size, self.alloc_bytes
        if self.tail is None:
            return (f"  bounds      every {size}-B source window lies inside the array's {end} B (its contiguous "
                    f"extent is whole vectors; a vector wholly outside reads nothing from the array's base)")
        t = self.tail
        data = " + ".join(f"{c.size} B" for c in t.copies if c.src_size)
        zeros = " + ".join(f"{c.size} B" for c in t.copies if not c.src_size)
        parts = ([f"cp.async {data} of data"] if data else []) + \
            ([f"{t.residue} B past its last whole 4-byte word by ld.global + st.shared"] if t.residue else []) + \
            ([f"zero-filling cp.async {zeros}"] if zeros else [])
        its = ", ".join(map(str, t.iterations))
        return (f"  tail        the vector that ends the array holds {t.bytes} of its {size} B; one {size}-B "
                f"cp.async would read past the array's last byte ({end}), so it is {'; '.join(parts)} (no "
                f"source window past byte {end}); checked in iteration{'s' if len(t.iterations) > 1 else ''} "
                f"{its}, every other copy is {size} B")

    def _partial(self, last: int) -> str:
        return "" if last == self.threads else f" (the last by threads 0..{last - 1})"

    def __repr__(self) -> str:
        return (f"CpAsyncPlan({self.threads} threads x {len(self.instructions)} x {self.atom.ptx} {self.atom.size} B, "
                f"{self.completion})")
