"""What every copy plan is, whichever instruction it issues: the protocol the variants' plan records follow, the
record of a rejected alternative, and the one way a planner rejects a candidate.

A plan answers: what it copies (``src``, ``dst``: tensors whose ``space`` chose the variant), what it issues
(``instructions``, typed records that carry their PTX spelling), which alternatives it rejected and why
(``rejected``), how far from the fewest instructions it is (``lower_bound``), and offers ``explain()``,
``stream(...)`` (the issue stream for given bases, as the records the PTX interpreter reads back from compiled
code), ``cuda(name)`` (the device function) and ``verify()`` (the emulator against the layouts alone).
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal, NamedTuple, Protocol, runtime_checkable

from ..errors import PlanError
from ..int_tuple import as_int
from ..tensor.gmem import GlobalTensor
from ..tensor.smem import SmemTensor
from ..tensor.tile import layout_modes, mode_extents

__all__ = ["Plan", "Rejection", "Reject", "Completion", "ArrayTilePlan", "load_or_store"]

#: How the caller learns that a copy has landed: ``expect_tx`` (an mbarrier counts the bytes: TMA and bulk loads,
#: DSMEM), ``arrive`` (one mbarrier arrival per copying thread: cp.async's arrive.noinc), ``group`` (the issuing
#: thread's cp.async or bulk groups: commit, then wait). tcgen05 copies complete through tcgen05.commit / wait.
Completion = Literal["expect_tx", "arrive", "group"]


class Rejection(NamedTuple):
    """A candidate a planner tried and set aside: an atom, a shape or a variant, and the rule it broke (any object
    whose ``str()`` is the rule, so that a reason nobody reads is never formatted)."""

    candidate: str
    reason: object

    def __str__(self) -> str:
        return f"{self.candidate}: {self.reason}"


class Reject(Exception):
    """A candidate does not fit: the first rule it broke. The message is formatted only when read, because
    inference rejects several candidates per plan and nobody reads those reasons unless asked (explain, errors)."""

    def __init__(self, template: str, **values: Any):
        super().__init__(template)
        self.template, self.values = template, values

    def __str__(self) -> str:
        return self.template.format(**self.values) if self.values else self.template


@runtime_checkable
class Plan(Protocol):
    """The copy plan protocol (``isinstance(plan, Plan)`` holds for every variant's plan)."""

    VARIANT: ClassVar[str]

    @property
    def src(self) -> Any: ...

    @property
    def dst(self) -> Any: ...

    @property
    def instructions(self) -> tuple: ...

    @property
    def rejected(self) -> tuple: ...

    @property
    def lower_bound(self) -> int: ...

    def explain(self) -> str: ...

    def stream(self, *args: Any, **kwargs: Any) -> list: ...

    def cuda(self, *args: Any, **kwargs: Any) -> str: ...

    def verify(self, seed: int = 0) -> None: ...


def load_or_store(dst: object, src: object, who: str) -> tuple[Literal["load", "store"], GlobalTensor, SmemTensor]:
    """``(direction, array, tile)`` of a copy between a whole global array and a shared tile, or a TypeError."""
    if isinstance(dst, SmemTensor) and isinstance(src, GlobalTensor):
        return "load", src, dst
    if isinstance(dst, GlobalTensor) and isinstance(src, SmemTensor):
        return "store", dst, src
    raise TypeError(f"{who}: one tensor is a global array (make_global_tensor) and the other a shared tile "
                    f"(make_smem_tensor), got {type(dst).__name__} <- {type(src).__name__}")


class ArrayTilePlan:
    """What the plans of one tile of a whole global array share (TMA, bulk copies, cp.async): from the array
    (``gmem``) and the tile (``smem``), the element bytes, the tile's extent per mode and the array's modes."""

    gmem: GlobalTensor
    smem: SmemTensor
    direction: str                       # "load" (global -> shared) or "store"

    @property
    def src(self) -> GlobalTensor | SmemTensor:
        return self.gmem if self.direction == "load" else self.smem

    @property
    def dst(self) -> GlobalTensor | SmemTensor:
        return self.smem if self.direction == "load" else self.gmem

    def smem_base(self, smem_base: object) -> int:
        """A stream's shared buffer address, checked against the alignment the plan assumes."""
        base = as_int(smem_base, "stream: smem_base")
        if base % self.smem.base_align:
            raise PlanError(f"stream: smem_base {base:#x} is not aligned to the {self.smem.base_align} B the plan "
                            f"assumes for the buffer")
        return base

    @property
    def elem_bytes(self) -> int:
        return self.smem.bits // 8

    @property
    def tile_shape(self) -> tuple[int, ...]:
        """The tile's extent in each array mode."""
        return mode_extents(self.smem.layout)

    @property
    def array_modes(self) -> list[tuple[int, int]]:
        """``(extent, stride in elements)`` per mode of the array."""
        return layout_modes(self.gmem.layout)
