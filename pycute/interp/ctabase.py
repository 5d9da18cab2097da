"""What the parts of a CTA (``scheduler.Cta``: memory, barriers, warps, copies, tcgen05) share, declared once so
each part can be read, and type-checked, on its own."""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["CtaBase"]


class CtaBase:
    """The attributes and cross-part methods of a CTA (annotations only; ``scheduler.Cta`` provides them)."""

    world: Any
    cluster: Any
    rank: int
    ctaid: tuple[int, int, int]
    name: str
    smem: Any
    smem_view: memoryview
    shadow: Any
    tmem_shadow: Any
    threads: list
    warps: list
    bars: dict
    bar_groups: dict
    mbarriers: dict
    live: int
    suspend: Callable[..., int]
    wake: Callable[..., None]
    shared_target: Callable[..., tuple[Any, int]]
    mbarrier_at: Callable[..., Any]
    mbarrier_for: Callable[..., Any]
    arrive_on: Callable[..., None]
    finish: Callable[..., None]
    tc_collective: Callable[..., None]
    _resolve: Callable[..., tuple]
    ld: Callable[..., int]
