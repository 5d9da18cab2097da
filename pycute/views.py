"""Views of lower-layer values that higher layers implement: a plan's CUDA (``pycute.codegen``) and pictures of
layouts, tensors and plans (``pycute.viz``).

The value's class keeps the method its users call (``plan.cuda()``), which asks this registry for the view; the
layer that implements the view registers it when it is imported, and ``import pycute`` imports every layer. So
values flow upward into code generation and drawing while no module imports a layer above its own.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Protocol

__all__ = ["Picture", "provides", "view", "svg_of"]


class Picture(Protocol):
    """What a drawing view returns (``pycute.viz.svg.Svg``): SVG text by ``str()``, written by ``save``."""

    def save(self, path: str | os.PathLike[str]) -> Path: ...

    def _repr_svg_(self) -> str: ...

_VIEWS: dict[tuple[str, type], Callable] = {}


def provides(kind: str, cls: type) -> Callable[[Callable], Callable]:
    """Decorator: the function is the ``kind`` view (``"cuda"``, ``"svg"``, ...) of instances of ``cls``."""
    def register(fn: Callable) -> Callable:
        _VIEWS[(kind, cls)] = fn
        return fn
    return register


def _find(kind: str, obj) -> Callable | None:
    for cls in type(obj).__mro__:
        fn = _VIEWS.get((kind, cls))
        if fn is not None:
            return fn
    return None


def view(kind: str, obj: object, *args: Any, **kwargs: Any) -> Any:
    """The ``kind`` view of ``obj``; LookupError if no imported layer provides one."""
    fn = _find(kind, obj)
    if fn is None:
        raise LookupError(f"no {kind!r} view of {type(obj).__name__} is registered (import pycute first)")
    return fn(obj, *args, **kwargs)


def svg_of(obj: object) -> str | None:
    """``obj``'s picture as SVG text (what Jupyter's ``_repr_svg_`` returns), or None where no picture is
    registered, so that a notebook falls back to the text repr."""
    fn = _find("svg", obj)
    return None if fn is None else str(fn(obj))
