"""The result of make_tiled_copy: which atom, which descriptor, which instructions, and why."""
from __future__ import annotations

import numbers
from typing import ClassVar, Literal

import attrs

from ...arch.convention import Convention
from ...arch.sm90.warp import WARP_THREADS
from ...arch.sm100.descriptor import START_ADDRESS, SmemDescriptor, patch_start_address
from ...arch.sm100.smem import SMEM_MAX_BYTES
from ...arch.sm100.swizzle_modes import UNIT_BYTES
from ...arch.sm100.tmem import ALLOC_COLUMNS, COLUMNS, split_address
from ...errors import DescriptorError, PlanError
from ...atoms.tcgen05_cp import Tcgen05CpAtom, Tcgen05CpIssue
from ...layout import Layout
from ..protocol import Rejection
from ...views import Picture, svg_of, view
from ...tensor.smem import SmemTensor
from ...tensor.tmem import TmemTensor

__all__ = ["IssueMode", "CpInstruction", "Tcgen05CpPlan", "CopyPlan", "DynamicCoord"]


#: Who calls a generated tcgen05.cp function: all 32 lanes of one warp (it elects the issuing lane) or the one
#: thread the caller elected.
IssueMode = Literal["warp", "elected"]


def _column_span(instructions, columns: int) -> tuple[int, int]:
    cols = [split_address(i.tmem_offset)[1] for i in instructions]
    return min(cols), max(cols) + columns


def _address(value, what: str, error=DescriptorError, align: int = UNIT_BYTES) -> int:
    """``value`` as a non-negative int below the start-address field's reach (256 KiB) and ``align``-aligned."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what}: an address must be an integer, got {value!r}")
    value = int(value)
    limit = START_ADDRESS.limit if align == UNIT_BYTES else 1 << 32
    if not 0 <= value < limit:
        raise error(f"{what}: address {value:#x} is outside [0, {limit:#x})")
    if value % align:
        raise error(f"{what}: address {value:#x} is not {align}-byte aligned")
    return value


@attrs.frozen
class CpInstruction:
    """One ``tcgen05.cp``: TMEM address offset (``tmem_address(lane, column)`` from the allocation base) and
    shared-memory byte offset (from the buffer base) of the descriptor's start address."""

    ptx: str
    tmem_offset: int
    smem_offset: int

    @property
    def lane(self) -> int:
        return split_address(self.tmem_offset)[0]

    @property
    def column(self) -> int:
        return split_address(self.tmem_offset)[1]


@attrs.frozen
class DynamicCoord:
    """A run-time coordinate of a plan: value ``v`` in ``[0, extent)`` moves every instruction by ``v * smem_step``
    shared-memory bytes and ``v * tmem_step`` on the TMEM address (lane << 16 | column)."""

    name: str
    extent: int
    smem_step: int
    tmem_step: int


@attrs.frozen(repr=False)
class Tcgen05CpPlan:
    """A validated shared-memory -> TMEM copy. ``instructions`` is exactly what generated code issues.

    ``lane``, ``col`` and ``middle`` are the partition of the region's elements as layouts whose strides step both
    sides at once: ``TLane``/``TCol`` (TMEM, TCol in elements) and ``Smem`` (shared-memory bytes, pre-swizzle;
    ``SmemBit``, in bits, for the column steps of elements narrower than a byte).
    """

    atom: Tcgen05CpAtom
    descriptor: SmemDescriptor
    instructions: tuple[CpInstruction, ...]
    lane: Layout
    col: Layout
    middle: Layout
    src: SmemTensor
    dst: TmemTensor
    smem_end: int              # one past the last shared-memory byte the copy reads, from the buffer base
    rejected: tuple[Rejection, ...] = attrs.field(default=(), eq=False)   # the wider candidates tried;
    # a reason is any object whose str() is the rule it broke (formatted lazily by the planner)
    dynamic: tuple[DynamicCoord, ...] = ()   # DynamicCoord per run-time coordinate; instructions are those of value 0
    smem_start: int = 0        # the first shared-memory byte the copy reads (of any run-time value)
    decompress: str | None = None   # the .dst_fmt.src_fmt pair (arch.sm100.tcgen05_cp.FP4_DECOMPRESSION) or None
    # (smem_start, smem_end) of every value combination of the run-time coordinates, in itertools.product order
    spans: tuple[tuple[int, int], ...] = attrs.field(default=(), eq=False, repr=False)

    VARIANT: ClassVar[str] = "tcgen05_cp"

    def memo_weight(self) -> int:
        """What a plan holds, for the bounded plan cache: its instructions and partition layouts."""
        return 4 * len(self.instructions) + 64

    @property
    def cta_group(self) -> int:
        return self.atom.cta_group

    @property
    def bytes(self) -> int:
        """Shared-memory bytes the copy reads."""
        return self.atom.bytes * len(self.instructions)

    @property
    def lower_bound(self) -> int:
        """Fewest instructions any tcgen05.cp form could use: bytes / bytes of the widest form (4 KiB)."""
        return -(-self.bytes // 4096)

    @property
    def smem_range(self) -> tuple[int, int]:
        """``(first, one past the last)`` shared-memory byte, from the buffer base, that the copy reads for any
        value of its run-time coordinates."""
        return self.smem_start, self.smem_end

    @property
    def tmem_columns(self) -> tuple[int, int]:
        """``(first, one past the last)`` 32-bit TMEM column, from the allocation base, that the copy writes for any
        value of its run-time coordinates."""
        lo, hi = _column_span(self.instructions, self.atom.columns)
        for d in self.dynamic:
            reach = (d.extent - 1) * split_address(d.tmem_step)[1]
            lo, hi = min(lo, lo + reach), max(hi, hi + reach)
        return lo, hi

    def at(self, **values: int) -> "Tcgen05CpPlan":
        """The static plan of one value of each run-time coordinate (``plan.at(stage=2)``); a static plan is its own
        value. The planner proved every value legal and laid out as value 0 shifted, so this is value 0 moved by
        each coordinate's steps."""
        if not self.dynamic:
            if values:
                raise PlanError(f"the plan has no run-time coordinates, but values were given for "
                                f"{', '.join(sorted(values))}")
            return self
        src_names = {d.name for d in self.src.dynamic}
        dst_names = {d.name for d in self.dst.dynamic}
        unknown = sorted(set(values) - src_names - dst_names)
        if unknown:
            raise PlanError(f"the plan has no run-time coordinate {', '.join(unknown)} (it has "
                            f"{', '.join(d.name for d in self.dynamic)})")
        missing = [d.name for d in self.dynamic if d.name not in values]
        if missing:
            raise PlanError(f"the plan's run-time coordinates need values: {', '.join(missing)}")
        src = self.src.at(**{k: v for k, v in values.items() if k in src_names})
        dst = self.dst.at(**{k: v for k, v in values.items() if k in dst_names})
        point = tuple(values[d.name] for d in self.dynamic)       # in range: the tensors' at() checked each value
        smem = sum(v * d.smem_step for v, d in zip(point, self.dynamic))
        tmem = sum(v * d.tmem_step for v, d in zip(point, self.dynamic))
        index = 0
        for v, d in zip(point, self.dynamic):             # the spans are in itertools.product order
            index = index * d.extent + v
        start, end = self.spans[index]
        return attrs.evolve(self, src=src, dst=dst, dynamic=(), spans=(), smem_start=start, smem_end=end,
                            instructions=tuple(attrs.evolve(i, tmem_offset=i.tmem_offset + tmem,
                                                            smem_offset=i.smem_offset + smem)
                                               for i in self.instructions))

    def descriptor_for(self, smem_address: int) -> int:
        """The 64-bit descriptor of an instruction whose start is at shared-window byte ``smem_address`` (a multiple
        of 16 below 256 KiB, the reach of the start-address field; else DescriptorError)."""
        return self.descriptor.encode(start_address=_address(smem_address, "descriptor_for"))

    def stream(self, smem_base: int, tmem_base: int, **values: int) -> list[Tcgen05CpIssue]:
        """``Tcgen05CpIssue(ptx, taddr, desc)`` per instruction for a buffer at ``smem_base`` and TMEM at ``tmem_base``, at
        the given values of the run-time coordinates (``stream(0, 0, stage=2)``).

        The bases must meet the plan's assumptions, else PlanError: ``smem_base`` aligned to the tensor's
        ``base_align`` with the whole copy inside an sm_100 CTA's shared memory, and ``tmem_base`` an allocation's
        address (lane 0, a column on the 32-column allocation unit) with room for ``dst.columns`` columns.
        """
        if self.dynamic or values:
            return self.at(**values).stream(smem_base, tmem_base)
        smem_base = _address(smem_base, "stream: smem_base", PlanError)
        if smem_base % self.src.base_align:
            raise PlanError(f"stream: smem_base {smem_base:#x} is not aligned to the {self.src.base_align} B the "
                            f"plan assumes for the buffer (make_smem_tensor(base_align=...))")
        if smem_base + self.smem_end > SMEM_MAX_BYTES:
            raise PlanError(f"stream: a buffer at {smem_base:#x} puts the copy's last byte at "
                            f"{smem_base + self.smem_end - 1:#x}, beyond the {SMEM_MAX_BYTES} B of shared memory "
                            f"an sm_100 CTA can have")
        tmem_base = _address(tmem_base, "stream: tmem_base", PlanError, align=1)
        lane, column = split_address(tmem_base)
        if lane or column % ALLOC_COLUMNS[0] or column + self.dst.alloc_columns > COLUMNS:
            raise PlanError(f"stream: tmem_base {tmem_base:#x} (lane {lane}, column {column}) is not the base of a "
                            f"{self.dst.alloc_columns}-column tcgen05.alloc: lane 0, a column that is a multiple of "
                            f"{ALLOC_COLUMNS[0]}, and {self.dst.alloc_columns} columns inside {COLUMNS}")
        template = self.descriptor.encode()
        return [Tcgen05CpIssue(i.ptx, tmem_base + i.tmem_offset,
                               patch_start_address(template, smem_base + i.smem_offset)) for i in self.instructions]

    @property
    def convention(self) -> Convention:
        """Who calls the generated function by default (``cuda(issue="warp")``): all 32 lanes of a warp, which
        elects the issuing lane (``issue="elected"``: the one thread the caller elected)."""
        return Convention("warp", WARP_THREADS)

    def cuda(self, name: str = "pycute_tcgen05_cp", issue: IssueMode = "warp", explain: bool = False) -> str:
        """A ``__device__ __forceinline__`` function that issues this plan (``pycute.codegen.emit``): called by
        all 32 lanes of one warp (``issue="warp"``, it elects the issuing lane) or by the one thread the caller
        elected (``issue="elected"``). Run-time coordinates become ``unsigned`` parameters after ``tmem_base``.
        The function carries a short header comment; ``explain=True`` adds the whole ``explain()``."""
        return view("cuda", self, name, issue=issue, explain=explain)

    def verify(self, seed: int = 0) -> None:
        """Run the plan in the emulator and compare every TMEM cell with what the two layouts alone say (for every
        value of the run-time coordinates); raises ``EmulationError`` naming the first wrong cell."""
        view("verify", self, seed=seed)

    def draw(self, **values: int) -> Picture:
        """The plan as a picture (``pycute.draw_plan``): TMEM cells coloured by the instruction that writes them,
        beside the shared memory each instruction reads. ``.save(path)`` writes the SVG. A plan with run-time
        coordinates is drawn at the given values."""
        return view("svg", self.at(**values))

    def _repr_svg_(self) -> str | None:
        return svg_of(self)

    def explain(self) -> str:
        """What a person reads to trust the plan (or to see why a wider atom was not used)."""
        a, d = self.atom, self.descriptor
        n = len(self.instructions)
        lines = [f"tcgen05.cp plan: {self.src!r} -> {self.dst!r}",
                 f"  atom        {a.ptx}  ({a.rows} rows x {a.bits} bits = {a.bytes} B per instruction)"]
        if self.rejected:
            lines.append("  wider candidates rejected:")
            lines += [f"    {name:<22} {reason}" for name, reason in self.rejected]
        lines += [
            f"  chosen      {a.name}: the widest form whose lane pattern, row shape and alignment all fit",
            f"  count       {n} instruction{'s' if n != 1 else ''} for {self.bytes} B "
            f"({self.bytes} B / {a.bytes} B per {a.name}); lower bound over all forms {self.lower_bound}",
            f"  descriptor  swizzle {d.swizzle.name}, LBO {d.lbo} B, SBO {d.sbo} B, base offset 0, "
            f"template {d.encode():#018x} (start address set per call, advanced per copy)",
            f"  lane        {self.lane!r}",
            f"  col         {self.col!r}",
            f"  middle      {self.middle!r}",
        ]
        if self.decompress:
            lines.append(f"  decompress  .{self.decompress}: each 4-bit element of a 16-byte unit (16 elements, then 8 "
                         f"bytes of padding) becomes TMEM byte bits [5:2]")
        for c in self.dynamic:
            lines.append(f"  run-time    {c.name} in [0, {c.extent}): +{c.smem_step} B shared memory, "
                         f"+{c.tmem_step:#x} TMEM address per unit (every value planned and checked)")
        if a.cta_group == 2:
            lines.append("  cta_group 2 the even CTA of the pair issues; each CTA copies its own shared memory into "
                         "its own TMEM; commit with .multicast::cluster and CTA mask 0b11")
        lines.append("  instructions (tmem lane, column; smem byte offset):")
        shown = self.instructions if n <= 16 else self.instructions[:8] + self.instructions[-4:]
        for k, inst in enumerate(shown):
            if n > 16 and k == 8:
                lines.append(f"    ... {n - 12} more ...")
            lines.append(f"    lane {inst.lane:>3}  col {inst.column:>3}  smem +{inst.smem_offset}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        ptx = self.atom.ptx + (f".{self.decompress}" if self.decompress else "")
        head = (f"Tcgen05CpPlan({ptx}, {len(self.instructions)} instr, swizzle {self.descriptor.swizzle.name}, "
                f"LBO {self.descriptor.lbo} B, SBO {self.descriptor.sbo} B)")
        rows = [f"  {'#':>3}  {'tmem lane':>9}  {'tmem col':>8}  {'smem +B':>8}"]
        rows += [f"  {k:>3}  {i.lane:>9}  {i.column:>8}  {i.smem_offset:>8}" for k, i in enumerate(self.instructions)]
        return "\n".join([head] + rows)


#: The name this record had before the copy family had other plans; kept so that code written against it works.
CopyPlan = Tcgen05CpPlan
