"""CopyAtom: one hardware copy instruction described the way CuTe's copy traits describe it.

An atom has a thread layout (``thr_id``) and source/destination thread-value layouts: ``src_tv(thr, val)`` is the
value's position in the source, ``dst_tv(thr, val)`` its position in the destination. For ``tcgen05.cp`` the
"threads" are the CTAs of the issuing group (1, or the pair for cta_group::2) and the values are bits.
"""
from __future__ import annotations

import abc

import attrs

from ..layout import Layout

__all__ = ["CopyAtom"]


@attrs.frozen
class CopyAtom(abc.ABC):
    """The interface every copy atom implements; each subclass describes one PTX form."""

    @property
    @abc.abstractmethod
    def ptx(self) -> str:
        """The full PTX opcode."""

    @property
    @abc.abstractmethod
    def thr_id(self) -> Layout:
        """The participating threads (CTAs for tcgen05.cp)."""

    @property
    @abc.abstractmethod
    def src_tv(self) -> Layout:
        """(thread, value) -> position in the source."""

    @property
    @abc.abstractmethod
    def dst_tv(self) -> Layout:
        """(thread, value) -> position in the destination."""
