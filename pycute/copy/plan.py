"""The result of make_tiled_copy: which atom, which descriptor, which instructions, and why."""
from __future__ import annotations

import numbers

import attrs

from ..arch.sm100.descriptor import START_ADDRESS, SmemDescriptor, patch_start_address
from ..arch.sm100.smem import SMEM_MAX_BYTES
from ..arch.sm100.swizzle_modes import UNIT_BYTES
from ..arch.sm100.tmem import ALLOC_COLUMNS, COLUMNS, split_address
from ..errors import DescriptorError, PlanError
from ..atoms.tcgen05_cp import Tcgen05CpAtom
from ..layout import Layout
from ..views import svg_of, view
from .tensor import SmemTensor, TmemTensor

__all__ = ["CpInstruction", "CopyPlan"]


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


@attrs.frozen(repr=False)
class CopyPlan:
    """A validated shared-memory -> TMEM copy. ``instructions`` is exactly what generated code issues.

    ``lane``, ``col`` and ``middle`` are the partition of the region's elements as layouts whose strides step both
    sides at once: ``TLane``/``TCol`` (TMEM, TCol in elements) and ``Smem`` (shared-memory bytes, pre-swizzle;
    ``SmemBit``, in bits, for the column steps of elements narrower than a byte).
    """

    atom: Tcgen05CpAtom
    descriptor: SmemDescriptor
    instructions: tuple
    lane: Layout
    col: Layout
    middle: Layout
    src: SmemTensor
    dst: TmemTensor
    smem_end: int              # one past the last shared-memory byte the copy reads, from the buffer base
    rejected: tuple = attrs.field(default=(), eq=False)   # ((atom name, reason), ...) wider candidates tried;
    # a reason is any object whose str() is the rule it broke (formatted lazily by the planner)

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

    def descriptor_for(self, smem_address: int) -> int:
        """The 64-bit descriptor of an instruction whose start is at shared-window byte ``smem_address`` (a multiple
        of 16 below 256 KiB, the reach of the start-address field; else DescriptorError)."""
        return self.descriptor.encode(start_address=_address(smem_address, "descriptor_for"))

    def stream(self, smem_base: int, tmem_base: int) -> list[tuple[str, int, int]]:
        """``(ptx, taddr, descriptor)`` per instruction for a buffer at ``smem_base`` and TMEM at ``tmem_base``.

        The bases must meet the plan's assumptions, else PlanError: ``smem_base`` aligned to the tensor's
        ``base_align`` with the whole copy inside an sm_100 CTA's shared memory, and ``tmem_base`` an allocation's
        address (lane 0, a column on the 32-column allocation unit) with room for ``dst.columns`` columns.
        """
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
        if lane or column % ALLOC_COLUMNS[0] or column + self.dst.columns > COLUMNS:
            raise PlanError(f"stream: tmem_base {tmem_base:#x} (lane {lane}, column {column}) is not the base of a "
                            f"{self.dst.columns}-column tcgen05.alloc: lane 0, a column that is a multiple of "
                            f"{ALLOC_COLUMNS[0]}, and {self.dst.columns} columns inside {COLUMNS}")
        template = self.descriptor.encode()
        return [(i.ptx, tmem_base + i.tmem_offset, patch_start_address(template, smem_base + i.smem_offset))
                for i in self.instructions]

    def cuda(self, name: str = "pycute_tcgen05_cp", issue: str = "warp") -> str:
        """A ``__device__ __forceinline__`` function that issues this plan (``pycute.codegen.emit``): called by
        all 32 lanes of one warp (``issue="warp"``, it elects the issuing lane) or by the one thread the caller
        elected (``issue="elected"``)."""
        return view("cuda", self, name, issue=issue)

    def draw(self):
        """The plan as a picture (``pycute.draw_plan``): TMEM cells coloured by the instruction that writes them,
        beside the shared memory each instruction reads. ``.save(path)`` writes the SVG."""
        return view("svg", self)

    def _repr_svg_(self):
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
        head = (f"CopyPlan({self.atom.ptx}, {len(self.instructions)} instr, swizzle {self.descriptor.swizzle.name}, "
                f"LBO {self.descriptor.lbo} B, SBO {self.descriptor.sbo} B)")
        rows = [f"  {'#':>3}  {'tmem lane':>9}  {'tmem col':>8}  {'smem +B':>8}"]
        rows += [f"  {k:>3}  {i.lane:>9}  {i.column:>8}  {i.smem_offset:>8}" for k, i in enumerate(self.instructions)]
        return "\n".join([head] + rows)
