"""Where a TMA plan's box starts, in the array's elements (static, or a run-time ``int`` of the generated function),
and what a run-time coordinate must satisfy for the plan to copy what it says."""
from __future__ import annotations

from typing import Literal, Sequence, Union

import attrs

from ...arch.sm90.tma import BOX_START_UNIT, COORD_MAX, COORD_MIN
from ...errors import PlanError
from ...int_tuple import as_int, is_int
from ...tensor.gmem import GlobalTensor
from ...tensor.region import Dynamic
from ...tensor.tile import contiguous_mode, whole_array_modes
from ..protocol import Reject

__all__ = ["TmaOrigin", "TmaPrecondition", "Origin", "origin_value", "step_why", "inner_unit_why",
           "origin_spec",
           "place_origins", "check_static_origin", "widen_origin"]


@attrs.frozen
class TmaOrigin:
    """Where the box starts along array mode ``mode``, in the tensors' elements: the static ``value`` or the
    run-time ``int`` parameter ``name``. Tensor-map coordinate ``dim`` is ``origin / step``: ``step`` > 1 where the
    map views the mode in ``step``-element parts (a split mode, or elements widened ``unit`` to one), and the
    origin must then be a multiple of ``step``."""

    mode: int
    dim: int
    step: int
    value: int | None = None
    name: str | None = None
    unit: int = 1                       # the tensors' elements per tensor-map element along the mode (widen.py)

    def label(self) -> str:
        return self.name if self.name is not None else str(self.value)


@attrs.frozen
class TmaPrecondition:
    """What a run-time coordinate must satisfy for the plan to copy what it says: ``name % bound == 0``
    (``multiple``), ``name >= bound`` (``at_least``) or ``name <= bound`` (``at_most``); ``why`` names the rule.
    ``stream`` / ``at`` check it, and the generated code traps on it when compiled with ``-DPYCUTE_CHECKED``."""

    name: str
    kind: Literal["multiple", "at_least", "at_most"]
    bound: int
    why: str

    def holds(self, value: int) -> bool:
        if self.kind == "multiple":
            return value % self.bound == 0
        return value >= self.bound if self.kind == "at_least" else value <= self.bound

    @property
    def rule(self) -> str:
        op = {"multiple": f"% {self.bound} ==", "at_least": ">=", "at_most": "<="}[self.kind]
        return f"{self.name} {op} {0 if self.kind == 'multiple' else self.bound}"

    @property
    def broken_c(self) -> str:
        """The C condition under which the precondition is broken (the checked build's test)."""
        return {"multiple": f"{self.name} % {self.bound} != 0", "at_least": f"{self.name} < {self.bound}",
                "at_most": f"{self.name} > {self.bound}"}[self.kind]

    def check(self, value: int, who: str) -> None:
        if not self.holds(value):
            raise PlanError(f"{who}{self.name} = {value} breaks {self.rule}: {self.why}")


def origin_value(o: TmaOrigin, coords: dict[str, int]) -> int:
    return coords[o.name] if o.name is not None else int(o.value or 0)


def step_why(o: TmaOrigin) -> str:
    if o.unit > 1 and o.step == o.unit:
        return (f"{o.unit} elements travel as one tensor-map element (widened), so the box starts on a whole "
                f"one along mode {o.mode}")
    return (f"the map views array mode {o.mode} in {o.step}-element parts (the box spans several), so the box "
            f"starts on a part boundary; an origin between would copy the wrong elements")


def inner_unit_why(unit: int) -> str:
    return (f"a box whose start along the contiguous mode is off a 16-byte unit ({unit} elements) raised an "
            f"illegal-instruction exception on the H200 for loads, stores, reductions and prefetches alike "
            f"(docs/tma.md, docs/runs/tma/tma-h200-coords.jsonl)")


#: Where a plan's box starts: ``"tile"`` (tile indices, the short form), ``"element"`` (run-time element
#: coordinates ``c0, c1, ...`` per array mode), or per array mode an ``int`` (static) or ``pc.dynamic(name)``.
Origin = Union[Literal["tile", "element"], Sequence[Union[int, Dynamic]]]
#: Names the generated function already uses (its other parameters and locals).
_TAKEN = frozenset({"map", "smem", "mbar", "rank", "mask", "slice", "policy"})




def origin_spec(origin: object, rank: int, stages: tuple, where: str) -> tuple[int | Dynamic, ...] | None:
    """The origin per array mode (ints and run-time names), or None for tile indices; TypeError / PlanError for
    a value of the wrong type or count."""
    if isinstance(origin, str):
        if origin == "tile":
            return None
        if origin == "element":
            return tuple(Dynamic(f"c{k}") for k in range(rank))
        raise PlanError(f"make_tma_copy: origin={origin!r}: 'tile' (tile indices), 'element' (run-time element "
                        f"coordinates c0, c1, ...) or a tuple of ints and pc.dynamic names, one per array mode{where}")
    if not isinstance(origin, (tuple, list)):
        raise TypeError(f"make_tma_copy: origin must be 'tile', 'element' or a tuple of ints and pc.dynamic(...) "
                        f"values, got {origin!r} ({type(origin).__name__})")
    if len(origin) != rank:
        raise PlanError(f"make_tma_copy: origin has {len(origin)} entries; the array has {rank} modes (one element "
                        f"coordinate per mode){where}")
    out: list[int | Dynamic] = []
    for k, v in enumerate(origin):
        if isinstance(v, Dynamic):
            out.append(v)
            continue
        v = as_int(v, f"make_tma_copy: origin of mode {k}")
        if not COORD_MIN <= v <= COORD_MAX:
            raise PlanError(f"make_tma_copy: origin {v} of mode {k} is outside the signed 32-bit range of a TMA "
                            f"coordinate{where}")
        out.append(v)
    names = [v.name for v in out if isinstance(v, Dynamic)] + [s.name for s in stages]
    clash = sorted({n for n in names if names.count(n) > 1} | (set(names) & _TAKEN))
    if clash:
        raise PlanError(f"make_tma_copy: run-time name(s) {', '.join(clash)} repeat or clash with the generated "
                        f"function's own ({', '.join(sorted(_TAKEN))}){where}")
    return tuple(out)


def place_origins(spec: tuple, dims: list, tile: tuple, unit: int, inner: int) -> tuple[TmaOrigin, ...]:
    """Each array mode's origin on the tensor-map dimension that views its outermost part."""
    out = []
    for axis, v in enumerate(spec):
        j = max((k for k, d in enumerate(dims) if d[3] == axis), key=lambda k: dims[k][4])
        u = unit if axis == inner else 1
        name, value = (v.name, None) if isinstance(v, Dynamic) else (None, v)
        out.append(TmaOrigin(axis, j, dims[j][4] * u, value, name, u))
    return tuple(out)


def check_static_origin(origins: tuple[TmaOrigin, ...], direction: str, elem: int, inner: int, where: str) -> None:
    """The rules a static origin must keep (the preconditions the run-time ones state): along the contiguous mode
    it sits on a 16-byte unit (the H200 faults otherwise, for every direction: docs/tma.md); a store's is never
    negative (PTX ISA #data-movement-and-conversion-instructions-tensor-copy-restrictions). A NaN-filling load may
    start at negative coordinates on the unit, rows and columns alike (run 3 on the H200: docs/tma.md)."""
    for o in origins:
        if o.value is None:
            continue
        unit = max(1, BOX_START_UNIT * o.unit // elem)
        if o.mode == inner and o.value % unit:
            raise PlanError(f"make_tma_copy: the origin {o.value} on the contiguous mode {o.mode} is not on a "
                            f"16-byte unit ({unit} elements): {inner_unit_why(unit)}{where}")
        if direction == "store" and o.value < 0:
            raise PlanError(f"make_tma_copy: a store's origin {o.value} on mode {o.mode} is negative; PTX requires "
                            f"a store's coordinates to be non-negative (a box partly before the array is not "
                            f"clipped there){where}")


def widen_origin(spec: tuple | None, gmem: GlobalTensor, n: int, own: bool) -> None:
    """Reject widening by ``n`` where the origin along the contiguous mode could fall inside a wide element: a
    static one not a multiple of ``n``, or a run-time one when the type has a map type of its own (widening is
    then only an optimization, never worth a precondition the caller did not ask for)."""
    if spec is None:
        return
    inner = contiguous_mode(whole_array_modes(gmem, "make_tma_copy"))
    if inner is None:
        return
    v = spec[inner]
    if isinstance(v, Dynamic) and own:
        raise Reject("the run-time origin {name} of the contiguous mode may fall inside a wide element", name=v.name)
    if is_int(v) and v % n:
        raise Reject("the origin {v} of the contiguous mode is not a multiple of {n}", v=v, n=n)
