"""CUTLASS pycute's namespace: ``from pycute.compat import *`` brings every name CUTLASS's pure-Python pycute
exports at its top level (the algebra, the int-tuple helpers, ``Integer`` and ``LayoutBase``), for code written
against it. ``pycute``'s own ``__all__`` is the kernel author's tour and leaves the helpers out."""
from . import COMPAT_NAMES, __all__ as _tour
from . import *  # noqa: F401,F403
from . import has_none, is_int, is_tuple, signum, slice_, tuple_max  # noqa: F401
from .typing import Integer

__all__ = [*_tour, *COMPAT_NAMES, "Integer"]
