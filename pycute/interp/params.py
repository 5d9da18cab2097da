"""Kernel parameters passed by value that hold pointers: a struct of arrays and numbers (``StructArg``), as a
kernel's ``__grid_constant__`` struct of its inputs takes them."""
from __future__ import annotations

from typing import Any, Callable

import attrs
import numpy as np

from ..errors import EmulationError

__all__ = ["StructArg"]


@attrs.frozen(eq=False)
class StructArg:
    """A struct parameter's ``fields``: ``(offset, value)`` pairs, a value a numpy array (placed in global memory,
    its 8-byte address written at the offset) or the bytes to write there; the rest of the struct is 0."""

    fields: tuple[tuple[int, Any], ...]

    def image(self, size: int, label: str, place: Callable[[int, np.ndarray], Any]) -> bytes:
        """The struct's ``size`` bytes, each array placed by ``place(k, array)`` (a global buffer with an
        ``address``)."""
        out = bytearray(size)
        for k, (off, v) in enumerate(self.fields):
            raw = place(k, v).address.to_bytes(8, "little") if isinstance(v, np.ndarray) else bytes(v)
            if not (0 <= off and off + len(raw) <= size):
                raise EmulationError(f"parameter {label}: a field of {len(raw)} B at offset {off} is outside its "
                                     f"{size} bytes")
            out[off:off + len(raw)] = raw
        return bytes(out)
