"""IntTuple: an int or a (nested) tuple of IntTuples, with CuTe's helpers (``cute/int_tuple.hpp``, ``stride.hpp``).

Every value is static in pycute, so each function computes what CuTe computes for static integers. Coordinates
and strides are column-major by default, and a compact layout gives a size-1 mode stride 0 (``compact_col_major``).
"""
from __future__ import annotations

import numbers
from typing import Any, Sequence, TypeGuard

from .basis import ScaledBasis
from .errors import LayoutError
from .typing import IntTuple
from .memo import last_call

__all__ = ["is_int", "is_tuple", "flatten", "product", "product_each", "inner_product", "prefix_product", "shape_div",
           "shape_min", "ceil_div", "elem_scale", "congruent", "weakly_congruent", "compact_col_major", "compact_order",
           "crd2idx", "idx2crd", "crd2crd", "slice_", "as_int", "has_none", "signum", "tuplify", "zero_nones",
           "tuple_max", "unflatten", "check_profile"]


def is_int(x: object) -> TypeGuard[int]:
    """True for a Python integer (bool excluded)."""
    return type(x) is int or (isinstance(x, int) and not isinstance(x, bool))


def is_tuple(x: object) -> TypeGuard[tuple]:
    """True for a tuple (a hierarchical IntTuple node)."""
    return isinstance(x, tuple)


def tuplify(x: object) -> Any:
    """Lists become tuples, recursively: the canonical, hashable form of a user-written IntTuple."""
    if isinstance(x, (list, tuple)):
        return tuple(tuplify(e) for e in x)
    return x


def flatten(t: IntTuple) -> tuple:
    """The leaves of ``t`` in order: ``flatten(((1,2),3)) == (1,2,3)``; an int flattens to a 1-tuple."""
    if type(t) is not tuple:
        if isinstance(t, (str, bytes, float, bool)):
            raise TypeError(f"flatten: {t!r} is not an IntTuple (an integer or a tuple of them)")
        return (t,)
    for e in t:
        if type(e) is tuple:
            break
    else:
        return t
    out: list = []
    for e in t:
        if type(e) is tuple:
            out.extend(flatten(e))
        else:
            out.append(e)
    return tuple(out)


def unflatten(flat: Sequence, profile: IntTuple) -> IntTuple:
    """The leaves ``flat`` arranged like ``profile``: ``unflatten(flatten(t), t) == t``."""
    it = iter(flat)

    def build(p: IntTuple) -> IntTuple:
        return tuple(build(e) for e in p) if type(p) is tuple else next(it)
    return build(profile)


def signum(a: int) -> int:
    """-1, 0 or 1 with the sign of ``a``."""
    return (a > 0) - (a < 0)


def product(a: IntTuple) -> int:
    """Product of all leaves: ``product((2,(3,4))) == 24``; ``product(()) == 1``."""
    if type(a) is tuple:
        r = 1
        for e in a:
            r *= product(e)
        return r
    return a if type(a) is int else _leaf_int(a, "product", "a leaf")


def product_each(a: IntTuple) -> tuple:
    """``(product(a_0), product(a_1), ...)``; an int is its own 1-tuple."""
    return tuple(product(e) for e in a) if type(a) is tuple else (a,)


def tuple_max(a: IntTuple) -> int:
    """The largest leaf of ``a``."""
    if type(a) is tuple:
        return max(tuple_max(e) for e in a)
    return a if type(a) is int else _leaf_int(a, "tuple_max", "a leaf")


def inner_product(a: IntTuple, b: IntTuple) -> Any:
    """Sum of leaf-wise products of congruent ``a`` and ``b``."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        if type(a) is not tuple or type(b) is not tuple or len(a) != len(b):
            raise LayoutError(f"inner_product: {a} and {b} are not congruent")
        return sum((inner_product(x, y) for x, y in zip(a, b)), 0)
    if not (is_int(a) or isinstance(a, ScaledBasis)) or not (is_int(b) or isinstance(b, ScaledBasis)):
        raise TypeError(f"inner_product: leaves are integers (or scaled-basis strides), got {a!r} and {b!r}")
    return a * b


def prefix_product(a: IntTuple, init: IntTuple = 1) -> IntTuple:
    """Exclusive prefix product, congruent to ``a``: ``prefix_product((2,(3,4))) == (1,(2,6))``."""
    if type(a) is tuple:
        if type(init) is tuple:
            if len(init) != len(a):
                raise LayoutError(f"prefix_product: {a} and init {init} are not congruent")
            return tuple(prefix_product(x, i) for x, i in zip(a, init))
        out = []
        for e in a:
            out.append(prefix_product(e, init))
            init = init * product(e)
        return tuple(out)
    if type(init) is tuple:
        raise LayoutError(f"prefix_product: int {a} with tuple init {init}")
    if type(a) is not int:
        _leaf_int(a, "prefix_product", "a leaf")
    return init


def shape_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """CuTe's shape division: tuples divide element-wise, a tuple by an int folds left to right, an int by a tuple
    divides by the product; for ints one must divide the other, and ``a / b`` rounds away from zero (1 when
    ``b`` exceeds ``a``). Post-condition: ``shape_div(a, b) * b == a`` when ``b`` divides ``a``."""
    if isinstance(a, tuple):
        if type(b) is tuple:
            if len(a) != len(b):
                raise LayoutError(f"shape_div: {a} and {b} have different ranks")
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        out = []
        for e in a:
            out.append(shape_div(e, b))
            b = shape_div(b, e)
        return tuple(out)
    if isinstance(b, tuple):
        return shape_div(a, product(b))
    if not (is_int(a) and is_int(b) and a > 0 and b > 0):
        error = LayoutError if is_int(a) and is_int(b) else TypeError
        raise error(f"shape_div: shapes are positive integers (or tuples of them), got {a!r} and {b!r}")
    if a % b != 0 and b % a != 0:
        raise LayoutError(f"shape_div: neither of {a} and {b} divides the other")
    return max(a // b, 1)                       # 1 when b exceeds a (CuTe rounds away from zero)



def check_profile(profile: object, what: str) -> None:
    """A profile is None, an int (a leaf: the mode is coalesced whole) or a tuple of profiles."""
    if profile is not None and not is_int(profile) and not isinstance(profile, tuple):
        raise TypeError(f"{what}: the profile must be None, an int or a tuple of them, got {profile!r}")


def shape_min(a: int, b: int) -> int:
    """The smaller shape; 1 is smaller than every shape."""
    if a == 1 or b == 1:
        return 1
    return a if a < b else b


def ceil_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """The smallest ``q`` with ``q * b >= a``; tuples as CuTe: element-wise (``b`` padded with 1s), or a tuple by an
    int folding left to right."""
    if isinstance(a, tuple):
        if type(b) is tuple:
            if len(b) > len(a):
                raise LayoutError(f"ceil_div: {b} has more modes than {a}")
            return tuple(ceil_div(x, y) for x, y in zip(a, b + (1,) * (len(a) - len(b))))
        out = []
        for e in a:
            out.append(ceil_div(e, b))
            b = ceil_div(b, e)
        return tuple(out)
    if isinstance(b, tuple):
        return ceil_div(a, product(b))
    return -(-a // b)


def elem_scale(a: IntTuple, b: IntTuple) -> IntTuple:
    """Leaf-wise scale: an int ``a`` scales by ``product(b)``; tuples scale mode by mode."""
    if type(a) is tuple:
        if type(b) is not tuple or len(a) != len(b):
            raise LayoutError(f"elem_scale: {a} and {b} are not congruent")
        return tuple(elem_scale(x, y) for x, y in zip(a, b))
    return a * product(b)


def congruent(a: IntTuple, b: IntTuple) -> bool:
    """True when ``a`` and ``b`` have the same hierarchical profile."""
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return type(a) is not tuple and type(b) is not tuple


def weakly_congruent(a: IntTuple, b: IntTuple) -> bool:
    """True when ``a``'s profile is a coarsening of ``b``'s (an int of ``a`` may stand for a tuple of ``b``)."""
    if type(a) is not tuple:
        return True
    if type(b) is not tuple:
        return False
    return len(a) == len(b) and all(weakly_congruent(x, y) for x, y in zip(a, b))


def compact_col_major(shape: IntTuple, current: int = 1) -> IntTuple:
    """Column-major strides of ``shape`` starting at ``current``; a size-1 mode gets stride 0, as in CuTe."""
    if type(shape) is not tuple:
        return 0 if shape == 1 else current
    out = []
    for s in shape:
        out.append(compact_col_major(s, current))
        current = current * product(s)
    return tuple(out)


def compact_order(shape: IntTuple, order: IntTuple) -> IntTuple:
    """Compact strides of ``shape`` in the order ``order`` (congruent to ``shape``): a mode's stride is the product
    of the modes with a smaller order, and modes of equal order share it (CuTe's ``compact_order``)."""
    if not congruent(shape, order):
        raise LayoutError(f"make_ordered_layout: order {order!r} is not congruent to shape {shape!r}")
    pairs = list(zip(flatten(shape), flatten(order)))

    def strides(s: Any, o: IntTuple) -> IntTuple:
        if type(o) is tuple:
            return tuple(strides(x, y) for x, y in zip(s, o))
        d = 1
        for fs, fo in pairs:
            if fo < o:
                d *= fs
        return compact_col_major(s, d)
    return strides(shape, order)


def has_none(a: object) -> bool:
    """True when ``a`` contains ``None`` (cuTe's ``_``) anywhere."""
    if a is None:
        return True
    if type(a) is tuple:
        return any(has_none(e) for e in a)
    return False


def as_int(x: object, what: str) -> int:
    """``x`` as a Python int: any ``numbers.Integral`` but a bool (numpy's integers too); else TypeError."""
    if type(x) is int:
        return x
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return int(x)
    raise TypeError(f"{what} must be an integer, got {x!r} ({type(x).__name__})")


def _leaf_int(x, op, what):
    return x if type(x) is int else as_int(x, f"{op}: {what}")


def _crd2idx_int(crd: int, shape, stride):
    """An integer coordinate unfolded colexicographically over ``shape`` (the last mode takes the rest)."""
    if type(shape) is not tuple:
        if type(stride) is tuple:
            raise LayoutError(f"crd2idx: shape {shape!r} and stride {stride!r} are not congruent")
        return crd * stride
    if type(stride) is not tuple or len(stride) != len(shape):
        raise LayoutError(f"crd2idx: shape {shape!r} and stride {stride!r} are not congruent")
    result = 0
    last = len(shape) - 1
    for i in range(last):
        n = product(shape[i])
        result = result + _crd2idx_int(crd % n, shape[i], stride[i])
        crd //= n
    return result + _crd2idx_int(crd, shape[last], stride[last])


def _crd2idx(crd, shape, stride):
    if type(crd) is tuple:
        if type(shape) is not tuple or len(crd) != len(shape):
            raise LayoutError(f"crd2idx: coordinate {crd} does not match shape {shape}")
        if type(stride) is not tuple or len(stride) != len(shape):
            raise LayoutError(f"crd2idx: shape {shape!r} and stride {stride!r} are not congruent")
        result = 0
        for c, s, d in zip(crd, shape, stride):
            if type(c) is int and type(s) is int and type(d) is not tuple:
                result = result + c * d
            else:
                result = result + _crd2idx(c, s, d)
        return result
    if crd is None:
        raise LayoutError(f"crd2idx: coordinate is None for shape {shape} (use slicing)")
    return _crd2idx_int(_leaf_int(crd, "crd2idx", "a coordinate"), shape, stride)


@last_call
def crd2idx(crd: IntTuple, shape: IntTuple, stride: IntTuple | ScaledBasis | None = None) -> Any:
    """The index of coordinate ``crd`` in ``shape`` under ``stride`` (default: compact column-major).

    ``crd`` is an int (unfolded colexicographically) or a tuple mapped mode by mode, at any depth.
    """
    return _crd2idx(crd, shape, compact_col_major(shape) if stride is None else stride)


def _idx2crd(idx, shape, stride):
    if type(idx) is tuple:
        if type(shape) is not tuple or len(idx) != len(shape):
            raise LayoutError(f"idx2crd: index {idx} does not match shape {shape}")
        if stride is None:
            return tuple(_idx2crd(i, s, None) for i, s in zip(idx, shape))
        if type(stride) is not tuple or len(stride) != len(shape):
            raise LayoutError(f"idx2crd: shape {shape!r} and stride {stride!r} are not congruent")
        return tuple(_idx2crd(i, s, d) for i, s, d in zip(idx, shape, stride))
    idx = _leaf_int(idx, "idx2crd", "an index")
    if type(shape) is tuple:
        if stride is None:
            return _colex(idx, shape, 1)[0]
        if type(stride) is not tuple:
            stride = compact_col_major(shape, 1 if stride is None else stride)
        if len(stride) != len(shape):
            raise LayoutError(f"idx2crd: shape {shape!r} and stride {stride!r} are not congruent")
        return tuple(_idx2crd(idx, s, d) for s, d in zip(shape, stride))
    if type(shape) is not int or shape < 1:
        raise LayoutError(f"idx2crd: shape entries must be positive integers, got {shape!r}")
    if stride is None:
        return idx
    if shape == 1:
        return 0
    if type(stride) is tuple or stride == 0:
        raise LayoutError(f"idx2crd: stride {stride!r} of shape {shape!r} cannot split an index")
    return (idx // stride) % shape


def _colex(idx: int, shape: tuple, current: int):
    """The compact column-major coordinate of ``idx`` in ``shape`` (each leaf ``(idx // stride) % extent``, a
    size-1 leaf 0), and the stride after ``shape``."""
    out = []
    for s in shape:
        if type(s) is tuple:
            c, current = _colex(idx, s, current)
        elif type(s) is not int or s < 1:
            raise LayoutError(f"idx2crd: shape entries must be positive integers, got {s!r}")
        else:
            c = 0 if s == 1 else (idx // current) % s
            current *= s
        out.append(c)
    return tuple(out), current


@last_call
def idx2crd(idx: IntTuple, shape: IntTuple, stride: IntTuple | ScaledBasis | None = None) -> IntTuple:
    """The coordinate of ``idx`` in ``shape`` (CuTe's inverse of ``crd2idx`` for compact strides): a tuple index
    maps mode by mode, an int index splits over every mode as ``(idx // stride) % shape``."""
    return _idx2crd(idx, shape, stride)


def _crd2crd(crd, dst_shape, src_shape):
    if type(crd) is tuple and type(dst_shape) is tuple and (src_shape is None or type(src_shape) is tuple):
        if len(crd) != len(dst_shape) or (src_shape is not None and len(src_shape) != len(crd)):
            raise LayoutError(f"crd2crd: coordinate {crd} does not match shape {dst_shape}")
        srcs = src_shape if src_shape is not None else (None,) * len(crd)
        return tuple(_crd2crd(c, d, s) for c, d, s in zip(crd, dst_shape, srcs))
    if type(crd) is tuple and src_shape is None:
        raise LayoutError(f"crd2crd: tuple coordinate {crd} into shape {dst_shape} needs src_shape")
    if src_shape is None:
        idx = crd
    elif type(crd) is int and type(src_shape) is int:
        idx = crd if src_shape != 1 else 0
    else:
        idx = _crd2idx(crd, src_shape, compact_col_major(src_shape))
    return _idx2crd(idx, dst_shape, None) if type(dst_shape) is tuple else idx


@last_call
def crd2crd(crd: IntTuple, dst_shape: IntTuple, src_shape: IntTuple | None = None) -> IntTuple:
    """``crd`` (a coordinate of ``src_shape``) as a coordinate of ``dst_shape``: mode by mode where both are
    tuples, else through the index (CuTe's ``crd2crd(coord, src, dst)``, in CUTLASS pycute's argument order;
    without ``src_shape`` an int ``crd`` is a 1-D index)."""
    return _crd2crd(crd, dst_shape, src_shape)


def slice_(crd: Any, trg: Any) -> tuple:
    """The modes of ``trg`` where ``crd`` is ``None``, as a tuple: ``slice_((None, 3), (4, 8)) == (4,)`` and
    ``slice_(None, t) == (t,)`` (cuTe's ``filter_tuple``)."""
    if type(crd) is tuple:
        if type(trg) is not tuple or len(crd) != len(trg):
            raise LayoutError(f"slice: coordinate {crd} does not match {trg}")
        kept = []
        for c, t in zip(crd, trg):
            if c is None:
                kept.append(t)
            elif type(c) is tuple and has_none(c):
                kept.extend(slice_(c, t))
        return tuple(kept)
    if crd is None:
        return (trg,)
    return ()


def zero_nones(crd: Any) -> IntTuple:
    """``crd`` with every ``None`` replaced by 0: the offset part of a slice."""
    if type(crd) is tuple:
        return tuple(zero_nones(c) for c in crd)
    return 0 if crd is None else crd
