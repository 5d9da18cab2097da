"""Which CTAs of a cluster share a multicast load (PTX ISA #data-movement-and-conversion-instructions-cp-async-bulk-
tensor, ``.multicast::cluster``: bit ``r`` of the 16-bit ``ctaMask`` is the CTA of ``%cluster_ctarank`` ``r``).

``Multicast(cluster, mask=...)`` names any set of CTAs of a cluster shape, by rank (``Multicast.of`` builds the
mask from ``%cluster_ctaid`` coordinates); ``Multicast(cluster, along="y")`` is the GEMM pattern: every line of
CTAs along one cluster axis shares its own tile, each CTA's mask computed on the device from its rank. The tile is
split over the CTAs that share it; each writes its slice into all of them (CuTe's multicast split)."""
from __future__ import annotations

from typing import Callable, Literal

import attrs

from ...arch.sm90.bulk import MAX_CLUSTER, cluster_coord, cluster_rank
from ...errors import PlanError
from ...int_tuple import as_int


__all__ = ["ClusterAxis", "Multicast", "TmaMulticast", "multicast_spec", "AXES", "split_multicast",
           "check_pair_multicast"]

ClusterAxis = Literal["x", "y", "z"]
AXES: tuple[ClusterAxis, ...] = ("x", "y", "z")


def _cluster(value: object) -> tuple[int, int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, tuple) or not 1 <= len(value) <= 3:
        raise TypeError(f"Multicast: cluster is a shape of 1 to 3 extents, like (2, 2), got {value!r}")
    shape = tuple(as_int(v, "Multicast: cluster extent") for v in value) + (1,) * (3 - len(value))
    if any(n < 1 for n in shape) or shape[0] * shape[1] * shape[2] > MAX_CLUSTER:
        raise PlanError(f"Multicast: cluster {shape} holds {shape[0] * shape[1] * shape[2]} CTAs; a multicast mask "
                        f"reaches at most {MAX_CLUSTER} (ctaMask is 16 bits)")
    return shape[0], shape[1], shape[2]


@attrs.frozen
class Multicast:
    """The CTAs that share a load, in a cluster of shape ``cluster`` (x, y, z): a fixed ``mask`` of ranks, or each
    line of CTAs ``along`` one axis (then every CTA of the cluster loads, with the mask of its line)."""

    cluster: tuple[int, int, int] = attrs.field(converter=_cluster)
    mask: int | None = None
    along: ClusterAxis | None = None

    def __attrs_post_init__(self) -> None:
        if (self.mask is None) == (self.along is None):
            raise PlanError(f"Multicast: give a mask or an axis to multicast along, not {'both' if self.mask else 'neither'}")
        if self.mask is not None:
            mask = as_int(self.mask, "Multicast: mask")
            if mask == 0:
                raise PlanError(f"Multicast: mask 0 names no CTA of the cluster {self.cluster}")
            if not 0 < mask < 1 << self.size:
                raise PlanError(f"Multicast: mask {mask:#x} names CTAs outside the cluster {self.cluster} (ranks 0.."
                                f"{self.size - 1})")
        elif self.along not in AXES:
            raise PlanError(f"Multicast: along={self.along!r}: the cluster's axes are x, y and z")

    @classmethod
    def of(cls, cluster: object, ctas: list[tuple[int, ...]]) -> "Multicast":
        """The mask of the CTAs at ``%cluster_ctaid`` coordinates ``ctas`` (each (x,), (x, y) or (x, y, z))."""
        shape = _cluster(cluster)
        mask = 0
        for c in ctas:
            coord = tuple(c) + (0,) * (3 - len(c))
            if len(coord) != 3 or any(not 0 <= v < n for v, n in zip(coord, shape)):
                raise PlanError(f"Multicast.of: CTA {c} is outside the cluster {shape}")
            mask |= 1 << cluster_rank(shape, (coord[0], coord[1], coord[2]))
        return cls(shape, mask=mask)

    @property
    def size(self) -> int:
        return self.cluster[0] * self.cluster[1] * self.cluster[2]

    @property
    def ctas(self) -> int:
        """CTAs sharing one tile (the slices it is split into); 1: each CTA that loads is its own mask's only CTA,
        and its load is a plain one (PTX ISA: a ``ctaMask`` naming the issuer alone writes only its own shared
        memory; CUTLASS's sm90_cluster_shape_to_tma_atom picks SM90_TMA_LOAD when the multicast mode has one CTA)."""
        return bin(self.mask).count("1") if self.mask is not None else self.cluster[AXES.index(self.along or "x")]

    @property
    def axis_stride(self) -> int:
        """Ranks between neighbours along ``along``."""
        a = AXES.index(self.along or "x")
        return (1, self.cluster[0], self.cluster[0] * self.cluster[1])[a]

    @property
    def line_mask(self) -> int:
        """The fixed mask, or the mask of the line along ``along`` through rank 0."""
        if self.mask is not None:
            return self.mask
        return sum(1 << (k * self.axis_stride) for k in range(self.ctas))

    def mask_of(self, rank: int) -> int | None:
        """The mask CTA ``rank`` multicasts to, or None when it takes no part."""
        if self.mask is not None:
            return self.mask if self.mask >> rank & 1 else None
        return self.line_mask << (rank - self.slice_of(rank) * self.axis_stride)

    def slice_of(self, rank: int) -> int:
        """Which slice of the tile CTA ``rank`` issues (its place among the CTAs that share the tile)."""
        if self.mask is not None:
            return bin(self.mask & ((1 << rank) - 1)).count("1")
        return rank // self.axis_stride % self.ctas

    def participants(self) -> list[int]:
        return [r for r in range(self.size) if self.mask_of(r) is not None]

    def describe(self) -> str:
        if self.mask is not None:
            coords = ", ".join(str(cluster_coord(self.cluster, r)) for r in self.participants())
            return f"cluster {self.cluster}, mask {self.mask:#06x} (CTA{'s' if self.ctas > 1 else ''} {coords})"
        if self.ctas == 1:
            return f"cluster {self.cluster}, one CTA along {self.along} (each CTA its own line)"
        return f"cluster {self.cluster}, every line of {self.ctas} CTAs along {self.along} (mask computed per CTA)"


@attrs.frozen
class TmaMulticast:
    """A load split over the CTAs of a cluster that share it (CuTe's multicast split): CTA rank ``r`` issues the
    plan's boxes moved by ``slice(r) * coord_step`` on dimension ``dim`` and ``slice(r) * smem_step`` bytes, each
    written to and signalled in every CTA of its mask; every receiving CTA's mbarrier gets the whole tile (``spec``
    says which CTAs share it: a fixed mask, or each line of CTAs along a cluster axis)."""

    spec: Multicast
    dim: int
    coord_step: int
    smem_step: int

    @property
    def ctas(self) -> int:
        """CTAs sharing one tile."""
        return self.spec.ctas

    @property
    def mask(self) -> int:
        """The fixed mask (for a multicast along an axis: the mask of the line through rank 0)."""
        return self.spec.line_mask

    @property
    def plain(self) -> bool:
        """Whether each CTA that loads is alone in its mask: the load is a plain one (no ``.multicast::cluster``)
        into the issuer's own shared memory, and a fixed mask's other CTAs issue nothing."""
        return self.spec.ctas == 1


def multicast_spec(multicast: object) -> Multicast:
    """``make_tma_copy``'s ``multicast`` option: ``n`` (CTAs 0..n-1 of a cluster of n) or a ``Multicast``."""
    if isinstance(multicast, Multicast):
        return multicast
    if isinstance(multicast, bool) or not isinstance(multicast, int):
        raise TypeError(f"make_tma_copy: multicast is a CTA count or a pycute.Multicast, got {multicast!r}")
    if not 1 <= multicast <= MAX_CLUSTER:
        raise PlanError(f"make_tma_copy: multicast={multicast}: a multicast reaches 1 to {MAX_CLUSTER} CTAs (one: a "
                        f"plain load)")
    return Multicast((multicast,), mask=(1 << multicast) - 1)


def split_multicast(dims: list, box_elems: int, spec: Multicast, elem: int, padded: Callable[[int], int],
                    where: str) -> tuple[list, TmaMulticast]:
    """The box's outermost dimension split over the CTAs sharing it: each issues a contiguous slice of the tile."""
    ctas = spec.ctas
    j = max((k for k, d in enumerate(dims) if d[2] > 1), default=0)
    if ctas == 1:                               # the issuer alone: the whole box, a plain load
        return dims, TmaMulticast(spec, j, dims[j][2], padded(box_elems) * elem)
    if j == 0 or dims[j][2] % ctas:
        raise PlanError(f"make_tma_copy: multicast over {ctas} CTAs splits the box's outermost dimension, which is "
                        f"{dims[j][2]} long{' (the contiguous one)' if j == 0 else ''}; it must be a multiple of "
                        f"{ctas} (pycute splits only that dimension, so that each CTA's slice is contiguous){where}")
    g, stride, n, axis, step = dims[j]
    dims = dims[:j] + [(g, stride, n // ctas, axis, step)] + dims[j + 1:]
    return dims, TmaMulticast(spec, j, n // ctas, padded(box_elems // ctas) * elem)


def check_pair_multicast(spec: Multicast, where: str) -> None:
    """A pair load's multicast signals each destination's bytes on its even pair CTA's barrier: the mask must hold
    both CTAs of every pair it touches, so that each even barrier counts two whole tiles."""
    masks = [spec.mask_of(r) for r in spec.participants()]
    for m in {m for m in masks if m is not None}:
        unpaired = [r for r in range(spec.size) if m >> r & 1 and not m >> (r ^ 1) & 1]
        if unpaired:
            raise PlanError(f"make_tma_copy: cta_group=2 with multicast: mask {m:#06x} holds CTA {unpaired[0]} without "
                            f"its pair CTA {unpaired[0] ^ 1}; each even CTA's barrier counts both CTAs' tiles (PTX ISA, "
                            f".cta_group::2 with .multicast::cluster){where}")
