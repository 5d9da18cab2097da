"""Tile schedulers as plans: which output tiles each CTA computes, in which order.

The output is ``tiles = (tiles_m, tiles_n)`` tiles; a cluster of ``cluster = (cm, cn)`` CTAs takes a ``cm x cn`` block
of adjacent tiles (CTA rank ``r`` the tile ``(r % cm, r // cm)`` of its block), so the CTAs that share an operand by
multicast compute neighbours. Blocks are *work units*, ordered by a swizzled raster for L2 reuse: consecutive
units walk a band of ``swizzle`` block rows (``raster="m"``: rows of M, consecutive units down M, then the next
column of N; ``raster="n"`` the transpose), so the A panels of the band's rows and each B panel stay in L2 while
the band is in flight (Triton's grouped ordering; CUTLASS's ``PersistentTileSchedulerSm90`` swizzle). A last band
narrower than ``swizzle`` is walked the same way.

``make_tile_scheduler`` is the static persistent scheduler: ``grid(sms, occupancy)`` CTAs, cluster ``k`` of ``C``
takes units ``k, k + C, ...``. ``make_clc_scheduler`` is Blackwell's dynamic one (PTX ISA
#parallel-synchronization-and-communication-instructions-clusterlaunchcontrol): one cluster launched per unit, and a
running cluster cancels clusters not yet launched and computes their units instead.
"""
from __future__ import annotations

import re
from typing import ClassVar, Literal, TypeVar

import attrs

from ..arch.convention import Convention
from ..arch.sm100.clc import CLC_TARGETS
from ..arch.sm90.bulk import MAX_CLUSTER
from ..errors import PlanError
from ..int_tuple import as_int
from ..views import view

__all__ = ["Raster", "SchedulerFunction", "TileScheduler", "ClcScheduler", "make_tile_scheduler",
           "make_clc_scheduler"]

Raster = Literal["m", "n"]
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@attrs.frozen
class SchedulerFunction:
    """A generated function of a scheduler: its name, calling convention and what it does."""

    name: str
    convention: Convention
    does: str


_R = TypeVar("_R", bound="_Raster")


@attrs.frozen(repr=False)
class _Raster:
    """What both schedulers share: the tiles, the cluster's block, and the swizzled order of the blocks."""

    name: str
    tiles: tuple[int, int] | None           # None: the tile counts are run-time arguments (tiles_m, tiles_n)
    cluster: tuple[int, int]
    swizzle: int
    raster: Raster

    @property
    def cluster_size(self) -> int:
        return self.cluster[0] * self.cluster[1]

    @property
    def runtime(self) -> bool:
        """Whether the tile counts are run-time arguments of the generated functions (one kernel, any problem)."""
        return self.tiles is None

    def at(self: "_R", tiles: tuple[int, int]) -> "_R":
        """The same scheduler over ``tiles`` output tiles (for the Python model of a run-time scheduler)."""
        return attrs.evolve(self, tiles=_tile_counts(tiles, "at"))

    def _tiles(self) -> tuple[int, int]:
        if self.tiles is None:
            raise PlanError(f"scheduler {self.name!r}: the tile counts are run-time arguments; model a problem with "
                            f".at(tiles=(tiles_m, tiles_n))")
        return self.tiles

    @property
    def blocks(self) -> tuple[int, int]:
        """Work units along M and N: cluster blocks, the last ones partly outside the tiles when the tiles are not
        whole blocks."""
        tiles = self._tiles()
        return (-(-tiles[0] // self.cluster[0]), -(-tiles[1] // self.cluster[1]))

    @property
    def units(self) -> int:
        return self.blocks[0] * self.blocks[1]

    def block(self, unit: int) -> tuple[int, int]:
        """The ``(m, n)`` block of work unit ``unit`` in the swizzled raster."""
        unit = as_int(unit, "work unit")
        if not 0 <= unit < self.units:
            raise PlanError(f"work unit {unit} is outside [0, {self.units})")
        major, minor = self.blocks if self.raster == "m" else self.blocks[::-1]
        band = self.swizzle * minor
        first = unit // band * self.swizzle
        height = min(major - first, self.swizzle)
        along, across = first + unit % band % height, unit % band // height
        return (along, across) if self.raster == "m" else (across, along)

    def tile(self, unit: int, rank: int) -> tuple[int, int] | None:
        """The tile CTA ``rank`` of a cluster computes for work unit ``unit``; None when it lies outside the
        tiles (an edge block)."""
        rank = as_int(rank, "cluster rank")
        if not 0 <= rank < self.cluster_size:
            raise PlanError(f"rank {rank} is outside the cluster of {self.cluster_size} CTAs")
        bm, bn = self.block(unit)
        m, n = bm * self.cluster[0] + rank % self.cluster[0], bn * self.cluster[1] + rank // self.cluster[0]
        tiles = self._tiles()
        return (m, n) if m < tiles[0] and n < tiles[1] else None

    def _describe(self) -> list[str]:
        cm, cn = self.cluster
        major = "M" if self.raster == "m" else "N"
        if self.tiles is None:
            counts = "tiles_m x tiles_n (run-time arguments)"
            blocks = f" in blocks of the {cm} x {cn} cluster"
        else:
            (tm, tn), (bm, bn) = self.tiles, self.blocks
            counts, blocks = f"{tm} x {tn}", f" in {bm} x {bn} blocks of the {cm} x {cn} cluster"
        return [f"  tiles       {counts}" + (f"{blocks} (rank r takes tile (r % {cm}, r // {cm}) of its block)"
                                             if self.cluster_size > 1 else ""),
                f"  raster      bands of {self.swizzle} block row(s) along {major}: consecutive work units walk "
                f"down {major} within the band, then across"]


@attrs.frozen(repr=False)
class TileScheduler(_Raster):
    """A static persistent scheduler: a grid of whole clusters, cluster ``k`` of ``C`` taking work units ``k,
    k + C, ...``."""

    VARIANT: ClassVar[str] = "static"

    def grid(self, sms: int, occupancy: int = 1) -> int:
        """CTAs to launch: ``sms x occupancy`` rounded down to whole clusters, and no more clusters than work
        units."""
        sms, occupancy = as_int(sms, "grid: sms"), as_int(occupancy, "grid: occupancy")
        if sms < 1 or occupancy < 1:
            raise PlanError(f"grid: {sms} SMs x {occupancy} CTAs per SM: both at least 1")
        clusters = min(sms * occupancy // self.cluster_size, self.units)
        if clusters < 1:
            raise PlanError(f"grid: {sms} x {occupancy} CTAs hold no whole cluster of {self.cluster_size}")
        return clusters * self.cluster_size

    def work(self, cta: int, grid: int) -> list[int]:
        """The work units CTA ``cta`` (``blockIdx.x``) of a ``grid``-CTA launch takes, in order."""
        cta, grid = as_int(cta, "cta"), as_int(grid, "grid")
        if grid < 1 or grid % self.cluster_size or not 0 <= cta < grid:
            raise PlanError(f"CTA {cta} of a grid of {grid}: the grid is whole clusters of {self.cluster_size}")
        return list(range(cta // self.cluster_size, self.units, grid // self.cluster_size))

    def tiles_of(self, cta: int, grid: int) -> list[tuple[int, int] | None]:
        """The tiles CTA ``cta`` computes in order (None for an edge block's tile outside the output)."""
        return [self.tile(u, cta % self.cluster_size) for u in self.work(cta, grid)]

    def schedule(self, grid: int) -> dict[int, list[tuple[int, int] | None]]:
        """Every CTA's tiles."""
        return {cta: self.tiles_of(cta, grid) for cta in range(grid)}

    @property
    def functions(self) -> tuple[SchedulerFunction, ...]:
        any_thread = Convention("any", 1, "none")
        return (SchedulerFunction(f"{self.name}_first", any_thread, "this cluster's first work unit"),
                SchedulerFunction(f"{self.name}_next", any_thread, "the work unit after `work`: + the grid's "
                                                                   "clusters"),
                SchedulerFunction(f"{self.name}_tile", any_thread, "this CTA's tile of work unit `work`, and "
                                                                   "whether it lies inside the output"),
                SchedulerFunction(f"{self.name}_at", any_thread, "this CTA's tile of work unit `work` as a value "
                                  "(inside the output whenever the tile counts are whole cluster blocks)"))

    def cuda(self) -> str:
        """The constants and the ``<name>_first`` / ``_next`` / ``_tile`` / ``_at`` functions."""
        return str(view("cuda", self))

    def explain(self) -> str:
        units = "work units from the run-time tile counts" if self.runtime else f"{self.units} work units"
        lines = [f"static persistent tile scheduler {self.name!r}: {units}"] + self._describe()
        lines.append(f"  persistent  grid(sms, occupancy) CTAs; cluster k of C takes units k, k + C, ...")
        lines += [f"  {f.name:<24} {f.convention.who}: {f.does}" for f in self.functions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"TileScheduler({self.name!r}, tiles {self.tiles}, cluster {self.cluster}, swizzle {self.swizzle} "
                f"along {self.raster})")


@attrs.frozen(repr=False)
class ClcScheduler(_Raster):
    """A cluster-launch-control scheduler (sm_100a): the grid launches one cluster per work unit; a running
    cluster computes its own unit, then cancels a cluster not yet launched and computes that one's unit, until a
    cancel fails. ``multicast``: one CTA's request answers every CTA of the cluster."""

    arch: str = "sm_100a"

    VARIANT: ClassVar[str] = "clc"

    @property
    def grid(self) -> int:
        """CTAs to launch: a cluster per work unit."""
        return self.units * self.cluster_size

    @property
    def multicast(self) -> bool:
        return self.cluster_size > 1

    @property
    def functions(self) -> tuple[SchedulerFunction, ...]:
        any_thread, elected = Convention("any", 1, "none"), Convention("elected", 1)
        return (SchedulerFunction(f"{self.name}_first", any_thread, "this cluster's own work unit"),
                SchedulerFunction(f"{self.name}_tile", any_thread, "this CTA's tile of work unit `work`, and "
                                                                   "whether it lies inside the output"),
                SchedulerFunction(f"{self.name}_start", any_thread, "the answers' first state (phase bit 0)"),
                SchedulerFunction(f"{self.name}_init", elected, "initialises the response's mbarrier"),
                SchedulerFunction(f"{self.name}_request", elected,
                                  "arms the mbarrier for the 16-byte response and, "
                                  + ("in the cluster's rank 0, " if self.multicast else "")
                                  + "asks to cancel a cluster not yet launched"),
                SchedulerFunction(f"{self.name}_answer", Convention("any", 1),
                                  "waits for the response; true and the cancelled cluster's work unit, or false: "
                                  "no cluster is left (request no more)"))

    def cuda(self) -> str:
        """The constants and the ``<name>_first`` / ``_tile`` / ``_init`` / ``_request`` / ``_answer``
        functions (sm_100a)."""
        return str(view("cuda", self))

    def explain(self) -> str:
        lines = [f"cluster-launch-control tile scheduler {self.name!r} ({self.arch}): {self.units} work units, a "
                 f"{self.cluster_size}-CTA cluster launched per unit ({self.grid} CTAs)"] + self._describe()
        lines.append("  stealing    a running cluster cancels a cluster not yet launched (clusterlaunchcontrol."
                     "try_cancel" + (".multicast::cluster::all" if self.multicast else "") + ") and computes its "
                     "unit; after a failed cancel it requests no more (a further request is undefined)")
        lines += [f"  {f.name:<24} {f.convention.who}: {f.does}" for f in self.functions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"ClcScheduler({self.name!r}, tiles {self.tiles}, cluster {self.cluster}, swizzle {self.swizzle} "
                f"along {self.raster})")


def _tile_counts(tiles: object, who: str) -> tuple[int, int]:
    if not isinstance(tiles, tuple) or len(tiles) != 2:
        raise TypeError(f"{who}: tiles is an (m, n) pair, got {tiles!r}")
    t = (as_int(tiles[0], f"{who}: tiles"), as_int(tiles[1], f"{who}: tiles"))
    if min(t) < 1:
        raise PlanError(f"{who}: tiles {t}: at least one along each mode")
    return t


def _raster_args(name: str, tiles: object, cluster: object, swizzle: object, raster: object,
                 who: str) -> tuple[str, tuple[int, int] | None, tuple[int, int], int, Raster]:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise PlanError(f"{who}: name {name!r} is not a C identifier (it prefixes the generated functions)")
    if not isinstance(cluster, tuple) or len(cluster) != 2:
        raise TypeError(f"{who}: tiles and cluster are (m, n) pairs, got {tiles!r} and {cluster!r}")
    t = None if tiles is None else _tile_counts(tiles, who)
    c = (as_int(cluster[0], f"{who}: cluster"), as_int(cluster[1], f"{who}: cluster"))
    if min(c) < 1 or c[0] * c[1] > MAX_CLUSTER:
        raise PlanError(f"{who}: tiles {t} and cluster {c}: at least one of each, a cluster of at most "
                        f"{MAX_CLUSTER} CTAs")
    sw = as_int(swizzle, f"{who}: swizzle")
    if sw < 1:
        raise PlanError(f"{who}: swizzle={sw}: a band is at least one block row")
    if raster not in ("m", "n"):
        raise PlanError(f"{who}: raster={raster!r}: 'm' (walk down M within a band) or 'n'")
    return name, t, c, sw, raster


def make_tile_scheduler(tiles: tuple[int, int] | None, *, cluster: tuple[int, int] = (1, 1), swizzle: int = 1,
                        raster: Raster = "m", name: str = "sched") -> TileScheduler:
    """Plan a static persistent scheduler over ``tiles`` output tiles for clusters of ``cluster`` CTAs, walking
    bands of ``swizzle`` block rows along ``raster``; launch ``plan.grid(sms, occupancy)`` CTAs in clusters of
    ``cluster[0] * cluster[1]``. ``tiles=None`` makes the tile counts run-time arguments (``tiles_m``,
    ``tiles_n``) of the generated functions, so one kernel serves any problem size; ``plan.at(tiles=...)`` models
    one."""
    return TileScheduler(*_raster_args(name, tiles, cluster, swizzle, raster, "make_tile_scheduler"))


def make_clc_scheduler(tiles: tuple[int, int], *, cluster: tuple[int, int] = (1, 1), swizzle: int = 1,
                       raster: Raster = "m", name: str = "clc", arch: str = "sm_100a") -> ClcScheduler:
    """Plan a cluster-launch-control scheduler (sm_100a and later) over ``tiles`` output tiles: launch
    ``plan.grid`` CTAs in clusters of ``cluster[0] * cluster[1]``; running clusters take over the units of
    clusters not yet launched."""
    if arch not in CLC_TARGETS:
        raise PlanError(f"make_clc_scheduler: cluster launch control exists on {', '.join(CLC_TARGETS)}, not {arch}")
    if tiles is None:
        raise PlanError("make_clc_scheduler: the grid is a cluster per work unit, so the tile counts are the "
                        "launch's: give them")
    return ClcScheduler(*_raster_args(name, tiles, cluster, swizzle, raster, "make_clc_scheduler"), arch=arch)
