"""CopyAtom: one hardware copy instruction described the way CuTe's copy traits describe it.

An atom has a thread layout (``thr_id``) and source/destination thread-value layouts: ``src_tv(thr, val)`` is the
value's position in the source, ``dst_tv(thr, val)`` its position in the destination. For ``tcgen05.cp`` the
"threads" are the CTAs of the issuing group (1, or the pair for cta_group::2) and the values are bits.
"""
from __future__ import annotations

import attrs

from ..layout import Layout

__all__ = ["CopyAtom"]


@attrs.frozen
class CopyAtom:
    """Base class of every copy atom; subclasses describe one PTX form."""

    @property
    def ptx(self) -> str:
        raise NotImplementedError

    @property
    def thr_id(self) -> Layout:
        raise NotImplementedError

    @property
    def src_tv(self) -> Layout:
        raise NotImplementedError

    @property
    def dst_tv(self) -> Layout:
        raise NotImplementedError
