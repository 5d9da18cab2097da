"""IntTuple: an int or a (nested) tuple of IntTuples, with cuTe's helpers.

Every function here follows ``cute/int_tuple.hpp``; coordinates and strides are column-major by default.
"""
from __future__ import annotations

from .errors import LayoutError

__all__ = [
    "is_int", "is_tuple", "flatten", "product", "inner_product", "prefix_product", "shape_div", "ceil_div",
    "elem_scale", "congruent", "weakly_congruent", "crd2idx", "idx2crd", "crd2crd", "slice_", "has_none",
    "signum", "tuplify", "zero_nones", "tuple_max",
]


def is_int(x) -> bool:
    """True for a Python integer (bool excluded)."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_tuple(x) -> bool:
    """True for a tuple (a hierarchical IntTuple node)."""
    return isinstance(x, tuple)


def tuplify(x):
    """Lists become tuples, recursively: the canonical, hashable form of a user-written IntTuple."""
    if isinstance(x, (list, tuple)):
        return tuple(tuplify(e) for e in x)
    return x


def flatten(t) -> tuple:
    """The leaves of ``t`` in order: ``flatten(((1,2),3)) == (1,2,3)``; an int flattens to a 1-tuple."""
    if not isinstance(t, tuple):
        return (t,)
    for e in t:
        if isinstance(e, tuple):
            break
    else:
        return t
    out = []
    for e in t:
        if isinstance(e, tuple):
            out.extend(flatten(e))
        else:
            out.append(e)
    return tuple(out)


def signum(a: int) -> int:
    """-1, 0 or 1 with the sign of ``a``."""
    return (a > 0) - (a < 0)


def product(a):
    """Product of all leaves: ``product((2,(3,4))) == 24``; ``product(()) == 1``."""
    if isinstance(a, tuple):
        r = 1
        for e in a:
            r *= product(e)
        return r
    return a


def tuple_max(a):
    """The largest leaf of ``a``."""
    if isinstance(a, tuple):
        return max(tuple_max(e) for e in a)
    return a


def inner_product(a, b):
    """Sum of leaf-wise products of congruent ``a`` and ``b``."""
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            raise LayoutError(f"inner_product: {a} and {b} are not congruent")
        return sum((inner_product(x, y) for x, y in zip(a, b)), 0)
    if isinstance(b, tuple):
        raise LayoutError(f"inner_product: {a} and {b} are not congruent")
    return a * b


def prefix_product(a, init=1):
    """Exclusive prefix product, congruent to ``a``: ``prefix_product((2,(3,4))) == (1,(2,6))``."""
    if isinstance(a, tuple):
        if isinstance(init, tuple):
            if len(init) != len(a):
                raise LayoutError(f"prefix_product: {a} and init {init} are not congruent")
            return tuple(prefix_product(x, i) for x, i in zip(a, init))
        out = []
        for e in a:
            out.append(prefix_product(e, init))
            init = init * product(e)
        return tuple(out)
    if isinstance(init, tuple):
        raise LayoutError(f"prefix_product: int {a} with tuple init {init}")
    return init


def ceil_div(a: int, b: int) -> int:
    """The smallest q with q * b >= a."""
    return -(-a // b)


def shape_div(a, b):
    """cuTe's shape division: ``a / b`` where one divides the other (``1`` when ``b`` exceeds ``a``).

    Post-condition: ``shape_div(a, b) * b == a`` when ``b`` divides ``a``; tuples fold left to right.
    """
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(a) != len(b):
                raise LayoutError(f"shape_div: {a} and {b} have different ranks")
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        out = []
        for e in a:
            out.append(shape_div(e, b))
            b = shape_div(b, product(e))
        return tuple(out)
    if isinstance(b, tuple):
        return shape_div(a, product(b))
    if b == 0 or (a % b != 0 and b % a != 0):
        raise LayoutError(f"shape_div: neither of {a} and {b} divides the other")
    q = a // b
    return q if q != 0 else signum(a) * signum(b)


def elem_scale(a, b):
    """Leaf-wise scale: an int ``a`` scales by ``product(b)``; tuples scale mode by mode."""
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            raise LayoutError(f"elem_scale: {a} and {b} are not congruent")
        return tuple(elem_scale(x, y) for x, y in zip(a, b))
    return a * product(b)


def congruent(a, b) -> bool:
    """True when ``a`` and ``b`` have the same hierarchical profile."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return not isinstance(a, tuple) and not isinstance(b, tuple)


def weakly_congruent(a, b) -> bool:
    """True when ``a``'s profile is a coarsening of ``b``'s (an int of ``a`` may stand for a tuple of ``b``)."""
    if not isinstance(a, tuple):
        return True
    if not isinstance(b, tuple):
        return False
    return len(a) == len(b) and all(weakly_congruent(x, y) for x, y in zip(a, b))


def has_none(a) -> bool:
    """True when ``a`` contains ``None`` (cuTe's ``_``) anywhere."""
    if a is None:
        return True
    if isinstance(a, tuple):
        return any(has_none(e) for e in a)
    return False


def crd2idx(crd, shape, stride=None):
    """The index of coordinate ``crd`` in ``shape`` under ``stride`` (default: column-major).

    ``crd`` may be an int (a 1-D coordinate, unfolded colexicographically) or congruent to ``shape``.
    """
    if stride is None:
        stride = prefix_product(shape)
    if isinstance(crd, tuple):
        if not isinstance(shape, tuple) or len(crd) != len(shape):
            raise LayoutError(f"crd2idx: coordinate {crd} does not match shape {shape}")
        result = 0
        for c, s, d in zip(crd, shape, stride):
            result = result + crd2idx(c, s, d)
        return result
    if crd is None:
        raise LayoutError(f"crd2idx: coordinate is None for shape {shape} (use slicing)")
    if isinstance(shape, tuple):
        result = 0
        last = len(shape) - 1
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == last:
                return result + crd2idx(crd, s, d)
            n = product(s)
            result = result + crd2idx(crd % n, s, d)
            crd = crd // n
        return result
    return crd * stride


def idx2crd(idx, shape, stride=None):
    """The coordinate of ``idx`` in ``shape`` (cuTe's inverse of ``crd2idx`` for compact strides)."""
    if stride is None:
        stride = prefix_product(shape)
    if isinstance(idx, tuple):
        if not isinstance(shape, tuple) or len(idx) != len(shape):
            raise LayoutError(f"idx2crd: index {idx} does not match shape {shape}")
        return tuple(idx2crd(i, s, d) for i, s, d in zip(idx, shape, stride))
    if isinstance(shape, tuple):
        return tuple(idx2crd(idx, s, d) for s, d in zip(shape, stride))
    return (idx // stride) % shape


def crd2crd(crd, dst_shape, src_shape=None):
    """Re-express ``crd`` (a coordinate of ``src_shape``) as a coordinate of ``dst_shape``."""
    if isinstance(crd, tuple):
        if isinstance(dst_shape, tuple):
            if len(crd) != len(dst_shape):
                raise LayoutError(f"crd2crd: coordinate {crd} does not match shape {dst_shape}")
            srcs = src_shape if isinstance(src_shape, tuple) else (None,) * len(crd)
            return tuple(crd2crd(c, d, s) for c, d, s in zip(crd, dst_shape, srcs))
        if src_shape is None:
            raise LayoutError(f"crd2crd: tuple coordinate {crd} into an int shape needs src_shape")
        return crd2idx(crd, src_shape)
    if isinstance(dst_shape, tuple):
        return idx2crd(crd, dst_shape)
    return crd


def slice_(crd, trg):
    """The modes of ``trg`` where ``crd`` is ``None``, as a tuple: ``slice_((None, 3), (4, 8)) == (4,)`` and
    ``slice_(None, t) == (t,)`` (cuTe's ``filter_tuple``)."""
    if isinstance(crd, tuple):
        if not isinstance(trg, tuple) or len(crd) != len(trg):
            raise LayoutError(f"slice: coordinate {crd} does not match {trg}")
        kept = []
        for c, t in zip(crd, trg):
            if c is None:
                kept.append(t)
            elif isinstance(c, tuple) and has_none(c):
                kept.extend(slice_(c, t))
        return tuple(kept)
    if crd is None:
        return (trg,)
    return ()


def zero_nones(crd):
    """``crd`` with every ``None`` replaced by 0: the offset part of a slice."""
    if isinstance(crd, tuple):
        return tuple(zero_nones(c) for c in crd)
    return 0 if crd is None else crd
