"""A persistent scheduler over the (group, tile) pairs of a grouped GEMM whose group sizes live on the device.

Groups (a mixture of experts' tokens per expert) are rows of one array: in ``"offsets"`` form (``torch._grouped_mm``'s
convention) group ``g`` is rows ``[offs[g - 1], offs[g])`` of A's ``(sum M_g) x K`` (``offs[-1]`` = 0), the int32
cumulative ends on the device; in ``"counts"`` form (a padded batch ``G x M_max x K``) group ``g`` is rows
``[g M_max, g M_max + counts[g])``. Group ``g`` has ``ceil(M_g / BM) x tiles_n`` tiles (``tiles_n`` the same for
every group: the experts' B are ``G x N x K``), a group of zero rows none; its tiles are cluster blocks walked in the
swizzled raster of ``make_tile_scheduler``, and the groups' units follow one another in group order. Persistent
cluster ``c`` of ``G`` takes units ``c, c + G, ...``; it finds a unit's group with a cursor that only moves forward
(its units increase), reading each group's bounds once: ``O(groups + units)`` per CTA, and no host sync -- the host
never reads the offsets, so it launches ``SMs x occupancy`` CTAs whatever the groups, and a CTA whose first unit
lies past the last group exits.

A group's bounds are clamped: it starts where the previous group ended (the offsets form reads only ``offs[g]``)
and ends within ``[start, rows]`` (decreasing offsets give an empty group; a count within ``[0, M_max]``), so groups
never overlap and nothing past A's or D's rows is addressed, whatever the device array says.
"""
from __future__ import annotations

from typing import ClassVar, Literal, Sequence

import attrs

from ..arch.convention import Convention
from ..errors import PlanError
from ..int_tuple import as_int
from ..views import view
from .scheduler import Raster, SchedulerFunction, _Raster, _raster_args

__all__ = ["GroupForm", "GroupTile", "GroupedScheduler", "make_grouped_scheduler"]

GroupForm = Literal["offsets", "counts"]


@attrs.frozen
class GroupTile:
    """A tile of group ``group``: tile ``(m, n)`` of the group, whose rows are ``[row0, row0 + rows)`` of the array."""

    group: int
    m: int
    n: int
    row0: int
    rows: int


@attrs.frozen(repr=False)
class GroupedScheduler(_Raster):
    """The scheduler of a grouped GEMM with ``tile_m``-row tiles in ``form`` (module docstring). ``group_rows`` /
    ``tiles_n`` / ``m_max`` model one problem (``at``); the generated functions take them at run time."""

    tile_m: int = 128
    form: GroupForm = "offsets"
    group_rows: tuple[int, ...] | None = None
    tiles_n: int | None = None
    m_max: int | None = None

    VARIANT: ClassVar[str] = "grouped"

    def at(self, group_rows: Sequence[int], tiles_n: int,  # type: ignore[override]
           m_max: int | None = None) -> "GroupedScheduler":
        """The plan at one problem: groups of ``group_rows`` rows (zero allowed), ``tiles_n`` tiles along N; in
        ``"counts"`` form each group padded to ``m_max`` rows."""
        rows = tuple(as_int(r, "at: group rows") for r in group_rows)
        tn = as_int(tiles_n, "at: tiles_n")
        if any(r < 0 for r in rows) or tn < 1:
            raise PlanError(f"at: group rows {rows} (each at least 0) and tiles_n={tn} (at least 1)")
        if self.form == "counts":
            if m_max is None or any(r > m_max for r in rows):
                raise PlanError(f"at: the counts form pads each group to m_max rows: m_max={m_max!r} for groups of "
                                f"{rows}")
        return attrs.evolve(self, tiles=(1, tn), group_rows=rows, tiles_n=tn, m_max=m_max)

    def _rows(self) -> tuple[int, ...]:
        if self.group_rows is None or self.tiles_n is None:
            raise PlanError(f"scheduler {self.name!r}: the groups are run-time arguments; model a problem with "
                            f".at(group_rows, tiles_n)")
        return self.group_rows

    def _group(self, g: int) -> _Raster:
        """Group ``g``'s raster over its tiles (None for an empty group)."""
        rows = self._rows()[g]
        return _Raster(self.name, (-(-rows // self.tile_m), self.tiles_n or 1), self.cluster, self.swizzle,
                       self.raster)

    def starts(self) -> list[int]:
        """Each group's first row of the array."""
        rows = self._rows()
        if self.form == "counts":
            return [g * (self.m_max or 0) for g in range(len(rows))]
        return [sum(rows[:g]) for g in range(len(rows))]

    def group_units(self) -> list[int]:
        """Work units (cluster blocks) per group: none for an empty one."""
        return [self._group(g).units if r else 0 for g, r in enumerate(self._rows())]

    @property
    def units(self) -> int:
        return sum(self.group_units())

    def tiles_of_unit(self, unit: int) -> list[GroupTile | None]:
        """Unit ``unit``'s tiles, one per cluster rank (None outside its group's tiles)."""
        unit = as_int(unit, "work unit")
        if not 0 <= unit < self.units:
            raise PlanError(f"work unit {unit} is outside [0, {self.units})")
        starts = self.starts()
        for g, n in enumerate(self.group_units()):
            if unit < n:
                r = self._group(g)
                out: list[GroupTile | None] = []
                for rank in range(self.cluster_size):
                    t = r.tile(unit, rank)
                    out.append(None if t is None else GroupTile(g, t[0], t[1], starts[g], self._rows()[g]))
                return out
            unit -= n
        raise AssertionError("unreachable: the unit lies in a group")

    def grid(self, sms: int, occupancy: int = 1) -> int:
        """CTAs to launch: ``sms x occupancy`` rounded down to whole clusters (the host does not know the units)."""
        sms, occupancy = as_int(sms, "grid: sms"), as_int(occupancy, "grid: occupancy")
        if sms * occupancy < self.cluster_size:
            raise PlanError(f"grid: {sms} x {occupancy} CTAs hold no whole cluster of {self.cluster_size}")
        return sms * occupancy // self.cluster_size * self.cluster_size

    def tiles_of(self, cta: int, grid: int) -> list[GroupTile | None]:
        """The tiles CTA ``cta`` of a ``grid``-CTA launch computes, in order."""
        cta, grid = as_int(cta, "cta"), as_int(grid, "grid")
        if grid < 1 or grid % self.cluster_size or not 0 <= cta < grid:
            raise PlanError(f"CTA {cta} of a grid of {grid}: the grid is whole clusters of {self.cluster_size}")
        units = range(cta // self.cluster_size, self.units, grid // self.cluster_size)
        return [self.tiles_of_unit(u)[cta % self.cluster_size] for u in units]

    @property
    def functions(self) -> tuple[SchedulerFunction, ...]:
        any_thread = Convention("any", 1, "none")
        return (SchedulerFunction(f"{self.name}_first", any_thread, "this cluster's first work unit"),
                SchedulerFunction(f"{self.name}_next", any_thread, "the work unit after `unit`: + the grid's "
                                                                   "clusters"),
                SchedulerFunction(f"{self.name}_start", any_thread, "a cursor at the first group"),
                SchedulerFunction(f"{self.name}_seek", any_thread, "moves the cursor forward to the group holding "
                                                                   "`unit`; false past the last group"),
                SchedulerFunction(f"{self.name}_tile", any_thread, "this CTA's tile of `unit` in the cursor's "
                                                                   "group, and whether it lies inside the group's "
                                                                   "tiles"))

    def cuda(self) -> str:
        """The cursor record and the functions (every count a run-time argument)."""
        return str(view("cuda", self))

    def explain(self) -> str:
        if self.group_rows is None:
            head = f"grouped tile scheduler {self.name!r} ({self.form} form): the groups are run-time arguments"
        else:
            head = (f"grouped tile scheduler {self.name!r} ({self.form} form): {len(self.group_rows)} groups of "
                    f"{list(self.group_rows)} rows, {self.units} work units")
        where = ("rows [offs[g - 1], offs[g]) of the array, int32 cumulative ends on the device" if self.form ==
                 "offsets" else "rows [g m_max, g m_max + counts[g]) of the padded array, int32 counts on the device")
        lines = [head, f"  groups      group g is {where}, clamped to the array",
                 f"  tiles       ceil(rows / {self.tile_m}) x tiles_n per group, in blocks of the "
                 f"{self.cluster[0]} x {self.cluster[1]} cluster, groups in order",
                 self._describe()[1],
                 "  persistent  cluster c of G takes units c, c + G, ...; a forward-only cursor finds each unit's "
                 "group"]
        lines += [f"  {f.name:<24} {f.convention.who}: {f.does}" for f in self.functions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"GroupedScheduler({self.name!r}, {self.form}, tile_m {self.tile_m}, groups {self.group_rows}, "
                f"tiles_n {self.tiles_n}, cluster {self.cluster}, swizzle {self.swizzle} along {self.raster})")


def make_grouped_scheduler(tile_m: int, *, form: GroupForm = "offsets", cluster: tuple[int, int] = (1, 1),
                           swizzle: int = 1, raster: Raster = "m", name: str = "grp") -> GroupedScheduler:
    """Plan a persistent scheduler over a grouped GEMM's (group, tile) pairs, groups of rows given on the device
    in ``form`` (``"offsets"``: int32 cumulative ends, ``torch._grouped_mm``'s; ``"counts"``: int32 rows per group
    of a padded batch), ``tile_m``-row tiles, clusters of ``cluster`` CTAs and bands of ``swizzle`` block rows
    along ``raster`` within a group. ``plan.at(group_rows, tiles_n)`` models one problem."""
    who = "make_grouped_scheduler"
    args = _raster_args(name, None, cluster, swizzle, raster, who)
    tm = as_int(tile_m, f"{who}: tile_m")
    if tm < 1:
        raise PlanError(f"{who}: tile_m={tm}: at least one row")
    if form not in ("offsets", "counts"):
        raise PlanError(f"{who}: form={form!r}: 'offsets' (cumulative ends) or 'counts' (a padded batch)")
    return GroupedScheduler(*args, tile_m=tm, form=form)
