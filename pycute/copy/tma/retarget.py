"""Retargeting a TMA plan's tensor map on the device: one map per CTA serves every group of a grouped GEMM (or every
batch of a ragged one), its global address, extents and strides rewritten for the group at hand, so that loads
fill and stores clip at the group's own bounds.

The map is copied into shared memory, edited field by field with ``tensormap.replace.tile`` (PTX ISA
#tensormap-instructions-tensormap-replace, sm_90a), copied back to global memory and released to the tensormap
proxy by the whole warp with ``tensormap.cp_fenceproxy`` (#tensormap-instructions-tensormap-cp-fenceproxy); the
thread that issues the copies then acquires it with ``fence.proxy.tensormap::generic.acquire.gpu``
(#parallel-synchronization-and-communication-instructions-membar). ``make_retarget`` (``plan.retarget(...)``)
derives from the plan's view of the array which fields change: the box, the swizzle and the element type stay.
"""
from __future__ import annotations

from math import gcd
from typing import Any, Literal, Sequence

import attrs

from ...arch.sm90.tma import DIM_LIMIT, GLOBAL_ALIGN, STORE_UNIT, STRIDE_ALIGN, STRIDE_LIMIT
from ...dtypes import dtype
from ...errors import PlanError
from ...int_tuple import as_int
from ...tensor.gmem import GlobalTensor
from ...tensor.region import Dynamic
from ...tensor.tile import contiguous_mode, whole_array_modes
from ...views import provides, view
from .plan import TensorMapParams, TmaPlan, TmaPrecondition

__all__ = ["TensorMapField", "TensorMapReplace", "make_retarget"]

Field = Literal["global_address", "global_dim", "global_stride"]
_TAKEN = frozenset({"tmpl", "gmap", "smap", "address", "lane"})


@attrs.frozen
class TensorMapField:
    """One field a retarget writes: ``field`` with its ``ordinal`` (the tensor-map dimension; a stride's ordinal
    ``k`` is dimension ``k + 1``'s, as ``tensormap.replace`` numbers them) and its value: ``value`` when static,
    else the run-time parameter ``name`` times ``scale`` over ``divisor`` (a stride: elements x bits per element
    x the part's step / 8 bytes; an extent viewed in parts: over the part)."""

    field: Field
    ordinal: int | None
    value: int | None = None
    name: str | None = None
    scale: int = 1
    divisor: int = 1

    def resolve(self, values: dict[str, int]) -> int:
        if self.name is None:
            return int(self.value or 0)
        return values[self.name] * self.scale // self.divisor

    def c_value(self) -> str:
        """The value as C over the function's parameters."""
        if self.name is None:
            return f"{self.value}ull" if self.field == "global_stride" else f"{self.value}u"
        if self.field == "global_stride" and self.scale % self.divisor == 0:
            return f"(unsigned long long){self.name} * {self.scale // self.divisor}ull"
        if self.field == "global_stride":
            return f"(unsigned long long){self.name} * {self.scale}ull / {self.divisor}ull"
        return f"(unsigned)({self.name} / {self.divisor})" if self.divisor > 1 else f"(unsigned){self.name}"


@attrs.frozen(repr=False)
class TensorMapReplace:
    """The fields that point ``plan``'s tensor map at a group (``fields``, in the order the code writes them; the
    global address is always the first and always given at run time), the group's extents and strides per array
    mode (ints, or the names of run-time ``int`` parameters), and what those run-time values must satisfy."""

    plan: TmaPlan
    fields: tuple[TensorMapField, ...]
    extents: tuple[int | str, ...]
    strides: tuple[int | str, ...]
    preconditions: tuple[TmaPrecondition, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The generated function's ``int`` parameters after ``address``, in array-mode order (extents, then
        strides)."""
        out = [e for e in self.extents if isinstance(e, str)] + [s for s in self.strides if isinstance(s, str)]
        return tuple(dict.fromkeys(out))

    def _values(self, values: dict, who: str) -> dict[str, int]:
        unknown = sorted(set(values) - set(self.names))
        missing = [n for n in self.names if n not in values]
        if unknown or missing:
            raise PlanError(f"{who}the retarget takes {', '.join(self.names) or 'no run-time values'}; "
                            + (f"unknown: {', '.join(unknown)}" if unknown else f"missing: {', '.join(missing)}"))
        out = {k: as_int(v, f"{who}{k}") for k, v in values.items()}
        for p in self.preconditions:
            p.check(out[p.name], who)
        return out

    def tensor_map(self, **values: int) -> TensorMapParams:
        """The retargeted map's parameters for the run-time values (the address aside)."""
        vals = self._values(values, "tensor_map: ")
        dims, strides = list(self.plan.tensor_map.global_dims), list(self.plan.tensor_map.global_strides)
        for f in self.fields:
            if f.field == "global_dim":
                dims[f.ordinal or 0] = f.resolve(vals)
            elif f.field == "global_stride":
                strides[f.ordinal or 0] = f.resolve(vals)
        return attrs.evolve(self.plan.tensor_map, global_dims=tuple(dims), global_strides=tuple(strides))

    def edits(self, address: int, **values: int) -> list[tuple[str, int | None, int]]:
        """``(field, ordinal, value)`` per ``tensormap.replace`` the code issues, in order, for a group at global
        ``address`` (what the PTX interpreter reads back from the compiled function)."""
        address = as_int(address, "edits: address")
        if address % GLOBAL_ALIGN:
            raise PlanError(f"edits: address {address:#x} is not {GLOBAL_ALIGN}-byte aligned (a tensor map's global "
                            f"address is, CUDA driver API)")
        vals = self._values(values, "edits: ")
        return [(f.field, f.ordinal, address if f.field == "global_address" else f.resolve(vals))
                for f in self.fields]

    def cuda(self, name: str = "pycute_tma_retarget") -> str:
        """A ``__device__`` function one whole warp calls: ``name(const void* tmpl, void* gmap, unsigned smap,
        const void* address, int ...)`` copies the map ``tmpl`` (any map of the plan: the kernel's
        ``__grid_constant__`` parameter) into the 128-byte shared scratch ``smap``, writes the fields, and
        publishes it to ``gmap`` (this CTA's 128-byte-aligned map in global memory). The thread that issues the
        copies then runs ``pycute_tensormap_acquire_gpu(gmap)`` before its first copy through ``gmap`` (another
        warp: after a CTA barrier). Compiled with ``-DPYCUTE_CHECKED`` it traps on values that break
        ``preconditions`` or an address off 16 bytes."""
        return view("cuda", self, name)

    def explain(self) -> str:
        p = self.plan
        lines = [f"TMA retarget of {p!r}",
                 f"  template    dims {p.tensor_map.global_dims}, strides {p.tensor_map.global_strides} B",
                 f"  group       extents {self.extents}, strides {self.strides} (elements; names are run-time "
                 f"ints)",
                 "  fields      " + ", ".join(_describe(f) for f in self.fields),
                 "  code        one warp: copy the map to shared memory, tensormap.replace each field (one lane), "
                 "tensormap.cp_fenceproxy to global (the warp); the issuing thread acquires "
                 "(fence.proxy.tensormap::generic.acquire.gpu) before its first copy",
                 f"  address     a run-time pointer, {GLOBAL_ALIGN}-byte aligned"]
        if self.preconditions:
            lines.append("  preconditions (checked by tensor_map/edits; the code traps on them under "
                         "-DPYCUTE_CHECKED):")
            lines += [f"    {c.rule:<22} {c.why}" for c in self.preconditions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"TensorMapReplace({len(self.fields)} fields: "
                + ", ".join(_describe(f) for f in self.fields) + ")")


def _describe(f: TensorMapField) -> str:
    at = "" if f.ordinal is None else f"[{f.ordinal}]"
    if f.field == "global_address":
        return "global_address = address"
    if f.name is None:
        return f"{f.field}{at} = {f.value}"
    if f.field == "global_stride":
        return f"{f.field}{at} = {f.name} x {f.scale / f.divisor:g} B"
    value = f.name + (f" / {f.divisor}" if f.divisor != 1 else "")
    return f"{f.field}{at} = {value}"


def _spec(given: Any, own: list, what: str, where: str) -> list[int | str | None]:
    """Per array mode: an int, a run-time name, or None (the plan's own)."""
    if given is None:
        return [None] * len(own)
    if not isinstance(given, (tuple, list)):
        raise TypeError(f"retarget: {what} must be a tuple (per array mode: an int, pc.dynamic(name) or None), got "
                        f"{given!r}")
    if len(given) != len(own):
        raise PlanError(f"retarget: {what} has {len(given)} entries; the array has {len(own)} modes{where}")
    out: list[int | str | None] = []
    for k, v in enumerate(given):
        if v is None or isinstance(v, Dynamic):
            out.append(None if v is None else v.name)
        else:
            out.append(as_int(v, f"retarget: {what} of mode {k}"))
    return out


@attrs.frozen
class _Group:
    """The group's extents and strides per array mode in the tensors' elements (ints or run-time names), and how
    the plan's map counts them: ``unit`` tensors' elements per map element along mode ``inner``, ``bits`` each."""

    extents: list
    strides: list
    unit: int
    bits: int
    inner: int | None


def _group(plan: TmaPlan, group: GlobalTensor | None, extents: Any, strides: Any, where: str) -> _Group:
    own = whole_array_modes(plan.gmem, "retarget")
    unit = 1 if plan.element is None else plan.gmem.bits // dtype(plan.element).bits
    inner = contiguous_mode(own)
    base = [(n * (unit if k == inner else 1), d * (1 if k == inner else unit)) for k, (n, d) in enumerate(own)]
    if group is not None:
        if not isinstance(group, GlobalTensor):
            raise TypeError(f"retarget: the group is a global tensor (make_global_tensor), got {type(group).__name__}")
        want = plan.gmem.dtype.name if plan.element is None else plan.element
        if group.dtype.name != want:
            raise PlanError(f"retarget: the group holds {group.dtype.name}, the plan's map {want}{where}")
        base = whole_array_modes(group, "retarget")
        if len(base) != len(own):
            raise PlanError(f"retarget: the group has {len(base)} modes, the plan's array {len(own)}{where}")
    ext = [e if e is not None else base[k][0] for k, e in enumerate(_spec(extents, own, "extents", where))]
    std = [s if s is not None else base[k][1] for k, s in enumerate(_spec(strides, own, "strides", where))]
    clash = sorted({v for v in ext + std if isinstance(v, str)} & _TAKEN)
    if clash:
        raise PlanError(f"retarget: run-time name(s) {', '.join(clash)} clash with the generated function's own "
                        f"({', '.join(sorted(_TAKEN))})")
    if inner is not None and std[inner] != 1:
        raise PlanError(f"retarget: array mode {inner} is the map's contiguous dimension; its stride stays 1, not "
                        f"{std[inner]}{where}")
    return _Group(ext, std, unit, plan.gmem.bits // unit, inner)


def _dim(plan: TmaPlan, g: _Group, j: int, axis: int, step: int, where: str) -> tuple[list, list]:
    """The fields and preconditions of tensor-map dimension ``j`` (viewing ``axis`` in ``step``-element parts)."""
    fields: list[TensorMapField] = []
    pre: list[TmaPrecondition] = []
    u = g.unit if axis == g.inner else 1
    e, st = g.extents[axis], g.strides[axis]
    if step == max(s for a, s in plan.views if a == axis):        # the outermost part: its extent follows
        div = step * u
        if isinstance(e, str):
            if div > 1:
                pre.append(TmaPrecondition(e, "multiple", div, f"the map views array mode {axis} in {div}-element "
                                           f"parts, so its extent is a whole number of them"))
            pre.append(TmaPrecondition(e, "at_least", 1, "a tensor-map dimension has at least one element"))
            fields.append(TensorMapField("global_dim", j, name=e, divisor=div))
        elif e % div or not 1 <= e // div <= DIM_LIMIT:
            raise PlanError(f"retarget: array mode {axis}'s extent {e} is not a whole number of the {div}-element "
                            f"parts the map views it in (at least one){where}")
        elif e // div != plan.tensor_map.global_dims[j]:
            fields.append(TensorMapField("global_dim", j, value=e // div))
    if j == 0 or (e == 1 and not isinstance(st, str)):
        return fields, pre                         # dimension 0 has no stride; a size-1 one keeps the plan's
    scale = step * u * g.bits                      # bits one step of the dimension moves
    if isinstance(st, str):
        need = 8 * STRIDE_ALIGN // gcd(8 * STRIDE_ALIGN, scale)
        if need > 1:
            pre.append(TmaPrecondition(st, "multiple", need, f"a tensor-map stride is a multiple of {STRIDE_ALIGN} B "
                                       f"({st} x {scale / 8:g} B)"))
        pre.append(TmaPrecondition(st, "at_least", 1, "a tensor-map stride is positive"))
        fields.append(TensorMapField("global_stride", j - 1, name=st, scale=scale, divisor=8))
    elif (st * scale) % (8 * STRIDE_ALIGN) or not 0 < st * scale // 8 < STRIDE_LIMIT:
        raise PlanError(f"retarget: array mode {axis}'s stride of {st} elements gives a tensor-map stride of "
                        f"{st * scale / 8:g} B; the driver takes a positive multiple of {STRIDE_ALIGN} B below "
                        f"2^40{where}")
    elif st * scale // 8 != plan.tensor_map.global_strides[j - 1]:
        fields.append(TensorMapField("global_stride", j - 1, value=st * scale // 8))
    return fields, pre


@provides("retarget", TmaPlan)
def make_retarget(plan: TmaPlan, group: GlobalTensor | None, extents: Sequence[int | Dynamic | None] | None,
                  strides: Sequence[int | Dynamic | None] | None) -> TensorMapReplace:
    """``plan.retarget(...)``: the fields that point the plan's map at an array of the same type and modes whose
    extents and strides (in the tensors' elements) are ``group``'s layout, overridden per mode by ``extents`` /
    ``strides`` (ints, ``pc.dynamic(name)`` for run-time ``int`` parameters, None for the plan's own)."""
    if not isinstance(plan, TmaPlan):
        raise TypeError(f"retarget: expected a TmaPlan, got {type(plan).__name__}")
    where = f"\n  plan: {plan!r}"
    if any(axis == -2 for axis, _ in plan.views):
        raise PlanError(f"retarget: the plan's map has a dimension over several array modes merged ("
                        f"{'; '.join(plan.notes)}); a retargeted map keeps one dimension per array mode{where}")
    g = _group(plan, group, extents, strides, where)
    fields: list[TensorMapField] = [TensorMapField("global_address", None, name="address")]
    pre: list[TmaPrecondition] = []
    for j, (axis, step) in enumerate(plan.views):
        if axis >= 0:
            f, p = _dim(plan, g, j, axis, step, where)
            fields += f
            pre += p
    if plan.direction == "store" and g.inner is not None:
        e = g.extents[g.inner]
        row = 8 * STORE_UNIT // gcd(8 * STORE_UNIT, g.bits)
        if isinstance(e, str):
            pre.append(TmaPrecondition(e, "multiple", row, f"a store writes {STORE_UNIT}-byte units whole, so a row "
                                       f"of the group is whole units (measured on the H200, docs/tma.md)"))
        elif e % row:
            raise PlanError(f"retarget: the group's rows are {e * g.bits / 8:g} B; a TMA store writes {STORE_UNIT}-"
                            f"byte units whole and would overwrite the bytes past each row (docs/tma.md){where}")
    return TensorMapReplace(plan, tuple(fields), tuple(g.extents), tuple(g.strides), tuple(dict.fromkeys(pre)))
