"""Type names for code written against CUTLASS's ``pycute`` (``pycute.typing.Integer``) and for annotations:
``Integer`` is any integer but a bool (numpy's included), ``IntTuple`` an integer or a nested tuple of them."""
from __future__ import annotations

import abc
import numbers
from typing import Union

__all__ = ["Integer", "IntTuple"]


class Integer(abc.ABC):
    """``isinstance(x, Integer)``: an ``int`` or any ``numbers.Integral`` (numpy's too), never a ``bool``."""

    @classmethod
    def __subclasshook__(cls, c):
        if cls is Integer:
            return issubclass(c, numbers.Integral) and not issubclass(c, bool)
        return NotImplemented


IntTuple = Union[int, tuple]
