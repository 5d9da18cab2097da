"""Fused epilogues as plans: ``D = epilogue(scale * A B^T)``, the epilogue one elementwise expression (``expr.py``)
of the accumulator and named inputs -- per-row vectors (M values), per-column vectors (N values), residual tensors
(M x N), scalars -- generated into the kernel through fragment coordinates (``pycute.fragment_coords``: which row
and column of the tile each register of each thread holds), never a register index written by hand.

``Epilogue`` is what a user writes (``@epilogue`` on a function, or ``bias_activation``); ``FusedEpilogue`` binds it
to its tensors' types and is part of a kernel's configuration. For an output chunk of a register fragment it plans:

* the per-row values each thread needs, loaded once per tile (one masked load per row slot of the thread: rows past
  M read 0);
* the per-column values, loaded once per chunk of columns (each column of a tile once), as vectors of the widest
  run of adjacent columns a thread holds at aligned offsets (the wgmma accumulator: pairs, one 32-bit load of two
  bf16), masked at N;
* the residual's element of each value (masked at M and N), the expression as straight-line CUDA, and the chunk's
  register of the accumulator by coordinates (checked to be an affine step per chunk).

The host side packs the inputs into the kernel's ``epilogue_params`` struct (``struct_bytes``, or ``struct_arg`` for
a run on the CPU) and ``reference`` evaluates the expression in float64."""
from __future__ import annotations

import struct
from typing import Any, Callable

import attrs
import numpy as np

from ..errors import LaunchError, PlanError
from ..tensor.coords import fragment_coords
from ..tensor.rmem import RegisterFragment
from .expr import Expr, Kind, c_expression, evaluate, parse, trace

__all__ = ["Epilogue", "epilogue", "bias_activation", "PLAIN", "ACTIVATIONS", "FusedEpilogue", "TENSOR_TYPES",
           "OUT_TYPES"]

#: The types an input tensor may hold (read as f32), with their C types.
TENSOR_TYPES = {"bf16": "__nv_bfloat16", "f16": "__half", "f32": "float"}
#: The output types the epilogue's store converts f32 to (cvt.rn, e4m3 saturating).
OUT_TYPES = ("bf16", "f16", "f32", "f8e4m3")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")


@attrs.frozen(cache_hash=True)
class Epilogue:
    """An elementwise epilogue: ``expr`` of ``acc`` (``scale * (A B^T)``, f32) and named inputs."""

    expr: Expr
    #: The canonical text (what a torch op's schema carries; ``Epilogue.parse`` reads it back).
    text: str = attrs.field(init=False, eq=False, repr=False)
    #: The named inputs ``(name, kind)`` in the order they first appear.
    inputs: tuple[tuple[str, Kind], ...] = attrs.field(init=False, eq=False, repr=False)
    #: The inputs that are tensors (row, column, residual), in order, and those that are scalars.
    tensors: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)
    scalars: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # Worked out once, here: a torch op reads them on every call, and under torch.compile Dynamo traces those
        # reads -- walking the expression (a set of its nodes) there breaks the graph where Dynamo cannot hash
        # user objects (torch 2.11: "hashing object of type Expr", seen on the H100 run of 2026-12-07).
        inputs = self.expr.inputs()
        object.__setattr__(self, "text", self.expr.text)
        object.__setattr__(self, "inputs", inputs)
        object.__setattr__(self, "tensors", tuple(n for n, k in inputs if k != "scalar"))
        object.__setattr__(self, "scalars", tuple(n for n, k in inputs if k == "scalar"))

    @classmethod
    def parse(cls, text: str) -> "Epilogue":
        return cls(parse(text))

    def __repr__(self) -> str:
        return f"Epilogue({self.text})"


def epilogue(fn: Callable[..., Any]) -> Epilogue:
    """The epilogue ``fn`` computes (a decorator): its first parameter is the accumulator, each other an input
    annotated ``pycute.kernels.Row``, ``Col``, ``Residual`` or ``float``::

        @pycute.kernels.epilogue
        def swiglu_bias(acc, bias: Col, gate: Residual):
            return pycute.kernels.silu(acc + bias) * gate
    """
    return Epilogue(trace(fn))


#: The plain GEMM's epilogue: D = scale * A B^T.
PLAIN = Epilogue(Expr("acc"))


def bias_activation(bias: bool = False, activation: str | None = None, residual: bool = False) -> Epilogue:
    """``activation(acc + bias) + residual`` (each part optional): a per-column ``bias``, ``activation`` one of
    relu, gelu (erf), gelu_tanh, silu, an M x N ``residual``."""
    if activation is not None and activation not in ACTIVATIONS:
        raise PlanError(f"bias_activation: activation is one of {', '.join(ACTIVATIONS)}, not {activation!r}")
    e = Expr("acc")
    if bias:
        e = Expr("add", (e, Expr("input", name="bias", kind="col")))
    if activation is not None:
        e = Expr(activation, (e,))
    if residual:
        e = Expr("add", (e, Expr("input", name="residual", kind="residual")))
    return Epilogue(e)


@attrs.frozen
class _Field:
    """A member of ``epilogue_params``."""

    name: str
    ctype: str
    offset: int
    code: str          # struct code of its value: "Q" a pointer, "q" a row pitch, "f" a scalar


@attrs.frozen(cache_hash=True)
class FusedEpilogue:
    """An epilogue bound to the types of its tensor inputs (``dtypes``, in ``epilogue.tensors`` order): part of a
    kernel's configuration (hashable), its CUDA generated for a register fragment's chunks."""

    epilogue: Epilogue = PLAIN
    dtypes: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if len(self.dtypes) != len(self.epilogue.tensors):
            raise PlanError(f"{self.epilogue!r}: {len(self.epilogue.tensors)} tensor input(s) "
                            f"{self.epilogue.tensors}, {len(self.dtypes)} type(s) given")
        for name, t in zip(self.epilogue.tensors, self.dtypes):
            if t not in TENSOR_TYPES:
                raise PlanError(f"epilogue input {name!r}: a tensor of {', '.join(TENSOR_TYPES)}, not {t}")

    @property
    def text(self) -> str:
        return self.epilogue.text

    def _kinds(self) -> dict[str, Kind]:
        return dict(self.epilogue.inputs)

    def _dtype(self, name: str) -> str:
        return self.dtypes[self.epilogue.tensors.index(name)]

    # ---- the parameters' struct ---------------------------------------------------------------------------------
    def fields(self) -> tuple[_Field, ...]:
        """``epilogue_params``' members in order (natural alignment): a pointer per tensor input (and a row pitch,
        in elements, per residual), then a float per scalar."""
        out, at = [], 0
        for name, kind in self.epilogue.inputs:
            if kind == "scalar":
                continue
            out.append(_Field(name, f"const {TENSOR_TYPES[self._dtype(name)]}*", at, "Q"))
            at += 8
            if kind == "residual":
                out.append(_Field(f"{name}_ld", "long long", at, "q"))
                at += 8
        for name in self.epilogue.scalars:
            out.append(_Field(name, "float", at, "f"))
            at += 4
        return tuple(out)

    @property
    def struct_size(self) -> int:
        """sizeof(epilogue_params): 8-byte aligned, and 1 for an empty struct (C++)."""
        last = self.fields()[-1] if self.fields() else None
        end = last.offset + (8 if last.code != "f" else 4) if last else 0
        return -(-end // 8) * 8 if end else 1

    def struct_bytes(self, values: dict[str, Any]) -> bytes:
        """The struct's bytes: ``values`` gives each pointer (a device address), row pitch and scalar by name."""
        out = bytearray(self.struct_size)
        for f in self.fields():
            struct.pack_into("<" + f.code, out, f.offset, values[f.name])
        return bytes(out)

    def struct_arg(self, values: dict[str, Any]) -> Any:
        """The struct as a CPU run's argument (``pycute.interp.StructArg``): numpy arrays for the pointers."""
        from ..interp import StructArg
        return StructArg(tuple((f.offset, values[f.name] if f.code == "Q" else struct.pack("<" + f.code,
                                                                                            values[f.name]))
                               for f in self.fields()))

    # ---- CUDA -------------------------------------------------------------------------------------------------
    def cuda(self, acc: RegisterFragment, chunk: RegisterFragment, blocks: int, name: str = "epilogue") -> str:
        """``<name>_params`` (the inputs, by value), ``<name>_tile`` (the per-row values of ``blocks`` row blocks,
        the per-column values of a chunk), ``<name>_load_rows(e, block, thread, row0, M, p)``,
        ``<name>_load_cols(e, thread, col0, N, p)`` and ``<name>_chunk(e, acc, block, j, frag, thread, row0, col0,
        M, N, scale, p)``: value v of ``frag`` (chunk ``j`` of ``acc``, element (row0 + row, col0 + col)) is the
        expression of ``acc``'s value there."""
        coords = fragment_coords(chunk)
        rows = [int(coords.value_row[vs[0]]) for vs in coords.slots("row")]
        cols = [int(coords.value_col[vs[0]]) for vs in coords.slots("col")]
        kinds = self._kinds()
        return "\n".join([
            "#include <cuda_bf16.h>", "#include <cuda_fp16.h>", coords.cuda(f"{name}_at").rstrip(),
            f"// {name}: D = {self.text}, acc = scale * (A B^T); the inputs by value (the host packs them: "
            f"FusedEpilogue.struct_bytes)",
            f"struct {name}_params {{" + "".join(f" {f.ctype} {f.name};" for f in self.fields()) + " };",
            f"// the per-row values of {blocks} row block(s) (loaded once per tile) and the per-column values of a "
            f"chunk (once per chunk)",
            f"struct {name}_tile {{" + "".join(
                f" float row_{n}[{blocks}][{len(rows)}];" if k == "row" else f" float col_{n}[{len(cols)}];"
                for n, k in kinds.items() if k in ("row", "col")) + " };",
            *_load_helpers(name), *self._c_rows(name, rows), *self._c_cols(name, cols, coords),
            *self._c_chunk(name, acc, chunk)]) + "\n"

    def _c_rows(self, name: str, offsets: list[int]) -> list[str]:
        """``<name>_load_rows``: each row input's value at each of the thread's row slots, 0 past M."""
        rows = [n for n, k in self._kinds().items() if k == "row"]
        out = [f"__device__ __forceinline__ void {name}_load_rows({name}_tile& e, unsigned block, unsigned thread, "
               f"int row0, int M, const {name}_params& p) {{"]
        out += [f"  const int r = row0 + {name}_at_row_thread(thread);"] if rows else []
        out += [f"  e.row_{n}[block][{s}] = r + {off} < M ? {name}_load(p.{n} + r + {off}) : 0.0f;"
                for n in rows for s, off in enumerate(offsets)]
        return out + ["}"]

    def _c_cols(self, name: str, offsets: list[int], coords: Any) -> list[str]:
        """``<name>_load_cols``: each column input's values at the thread's column slots, as vectors of the widest
        aligned run, 0 past N."""
        cols = [n for n, k in self._kinds().items() if k == "col"]
        width = _vector_width(offsets, coords.thread_col, coords.shape[1])
        out = [f"__device__ __forceinline__ void {name}_load_cols({name}_tile& e, unsigned thread, int col0, int N, "
               f"const {name}_params& p) {{"]
        out += [f"  const int c = col0 + {name}_at_col_thread(thread);"] if cols else []
        out += [f"  {name}_load{width}(p.{n}, c + {offsets[s]}, N, "
                + ", ".join(f"e.col_{n}[{s + i}]" for i in range(width)) + ");"
                for n in cols for s in range(0, len(offsets), width)]
        return out + ["}"]

    def _c_chunk(self, name: str, acc: RegisterFragment, chunk: RegisterFragment) -> list[str]:
        """``<name>_chunk``: per group of values (pairs a residual is read in), the residual, then per value its
        accumulator register (by coordinates) and the expression."""
        coords, step, kinds = fragment_coords(chunk), _register_step(acc, chunk), self._kinds()
        out = [f"__device__ __forceinline__ void {name}_chunk(const {name}_tile& e, const float "
               f"(&acc)[{_values(acc)}], unsigned block, unsigned j, float (&frag)[{coords.values}], unsigned thread, "
               f"int row0, int col0, int M, int N, float scale, const {name}_params& p) {{",
               f"  const int r = row0 + {name}_at_row_thread(thread), c = col0 + {name}_at_col_thread(thread);"]
        residuals = [n for n, k in kinds.items() if k == "residual"]
        for group in _pairs(coords) if residuals else [(v,) for v in range(coords.values)]:
            row, col = int(coords.value_row[group[0]]), int(coords.value_col[group[0]])
            out.append(f"  {{   // values {', '.join(map(str, group))}: row r + {row}, columns c + {col}"
                       + (f"..{col + len(group) - 1}" if len(group) > 1 else ""))
            for n in residuals:
                names = [f"in_{n}{i}" for i in range(len(group))]
                out += [f"    float {', '.join(names)};",
                        f"    if (r + {row} < M) {name}_load{len(group)}(p.{n} + (long long)(r + {row}) * p.{n}_ld, "
                        f"c + {col}, N, {', '.join(names)});", f"    else {' = '.join(names)} = 0.0f;"]
            for i, v in enumerate(group):
                values = {"acc": f"acc[{step}u * j + {v}u] * scale"}
                for n, k in kinds.items():
                    values[n] = {"row": f"e.row_{n}[block][{coords.slots('row').index(_slot(coords, 'row', v))}]",
                                 "col": f"e.col_{n}[{coords.slots('col').index(_slot(coords, 'col', v))}]",
                                 "scalar": f"p.{n}", "residual": f"in_{n}{i}"}[k]
                out += ["    { float out;", *(f"      {t}" for t in c_expression(self.epilogue.expr, values)),
                        f"      frag[{v}] = out; }}"]
            out.append("  }")
        return out + ["}"]

    # ---- the reference ------------------------------------------------------------------------------------------
    def reference(self, acc: Any, inputs: dict[str, Any]) -> Any:
        """The expression over the float64 accumulator ``scale * A B^T`` (numpy or torch), inputs by name."""
        return evaluate(self.epilogue.expr, acc, inputs)


def _slot(coords: Any, axis: str, v: int) -> tuple[int, ...]:
    """The slot (values on one row or column of the thread) value ``v`` lies on."""
    return next(vs for vs in coords.slots(axis) if v in vs)


def _pairs(coords: Any) -> list[tuple[int, ...]]:
    """A thread's values in groups that one vector load of a row-major tensor reads: two values on one row at
    adjacent columns, the first at an even column in every thread (else each value alone)."""
    if not all(int(b) % 2 == 0 for b in coords.thread_col):
        return [(v,) for v in range(coords.values)]
    out: list[tuple[int, ...]] = []
    used: set[int] = set()
    for v in range(coords.values):
        if v in used:
            continue
        mate = next((w for w in range(coords.values) if w not in used and w != v
                     and coords.value_row[w] == coords.value_row[v] and coords.value_col[w] == coords.value_col[v] + 1
                     and coords.value_col[v] % 2 == 0), None)
        group: tuple[int, ...] = (v,) if mate is None else (v, mate)
        used.update(group)
        out.append(group)
    return out


def _values(fragment: RegisterFragment) -> int:
    return fragment_coords(fragment).values


def _register_step(acc: RegisterFragment, chunk: RegisterFragment) -> int:
    """The step ``s`` such that value ``v`` of chunk ``j`` (the ``j``-th block of columns of ``acc``'s tile as wide
    as ``chunk``'s) is value ``s * j + v`` of ``acc`` in the same thread, from both fragments' coordinates; a
    PlanError where no such step exists."""
    A, C = fragment_coords(acc), fragment_coords(chunk)
    rows, cols = C.shape
    if A.threads != C.threads or A.shape[0] != rows or A.shape[1] % cols:
        raise PlanError(f"fused epilogue: {chunk!r} is not a column block of {acc!r}")
    where = {}
    for t in range(A.threads):
        for v in range(A.values):
            where[t, int(A.row[t, v]), int(A.col[t, v])] = v
    chunks = A.shape[1] // cols
    step = None
    for j in range(chunks):
        for t in range(C.threads):
            for v in range(C.values):
                w = where.get((t, int(C.row[t, v]), int(C.col[t, v]) + cols * j))
                if w is None:
                    raise PlanError(f"fused epilogue: thread {t}'s value {v} of chunk {j} is held by another thread "
                                    f"of the accumulator")
                if j == 1 and step is None:
                    step = w - v
                if w != (step or 0) * j + v:
                    raise PlanError(f"fused epilogue: chunk {j}'s value {v} is the accumulator's value {w}, not one "
                                    f"step per chunk from value {v}")
    return step or 0


def _vector_width(offsets: list[int], thread_base: np.ndarray, cols: int) -> int:
    """The widest vector (1, 2 or 4 elements) every run of a thread's column slots splits into at aligned columns."""
    for width in (4, 2):
        runs = len(offsets) % width == 0 and all(
            offsets[s] % width == 0 and offsets[s:s + width] == list(range(offsets[s], offsets[s] + width))
            for s in range(0, len(offsets), width))
        if runs and all(int(b) % width == 0 for b in thread_base) and cols % width == 0:
            return width
    return 1


def _load_helpers(name: str) -> list[str]:
    """``<name>_load(p)`` (one element as f32) and ``<name>_load<w>(p, col, N, out...)`` (``w`` adjacent elements
    from column ``col``, those at or past ``N`` read as 0; one vector load when all are inside) for each input
    type."""
    out = []
    for ctype, one, two in (("float", "__ldg(p)", "__ldg(reinterpret_cast<const float2*>(p))"),
                            ("__nv_bfloat16", "__bfloat162float(__ldg(p))",
                             "__bfloat1622float2(__ldg(reinterpret_cast<const __nv_bfloat162*>(p)))"),
                            ("__half", "__half2float(__ldg(p))",
                             "__half22float2(__ldg(reinterpret_cast<const __half2*>(p)))")):
        out += [f"__device__ __forceinline__ float {name}_load(const {ctype}* p) {{ return {one}; }}",
                f"__device__ __forceinline__ void {name}_load1(const {ctype}* p, int col, int N, float& x) {{ "
                f"x = col < N ? {name}_load(p + col) : 0.0f; }}",
                f"__device__ __forceinline__ void {name}_load2(const {ctype}* p, int col, int N, float& x, "
                f"float& y) {{",
                f"  if (col + 1 < N) {{ const float2 v = {two.replace('(p)', '(p + col)')}; x = v.x; y = v.y; }}",
                f"  else {{ x = col < N ? {name}_load(p + col) : 0.0f; y = 0.0f; }}", "}",
                f"__device__ __forceinline__ void {name}_load4(const {ctype}* p, int col, int N, float& x, float& y, "
                f"float& z, float& w) {{",
                f"  {name}_load2(p, col, N, x, y);", f"  {name}_load2(p, col + 2, N, z, w);", "}"]
    return out


def check_vector(t: Any, length: int, what: str) -> None:
    """LaunchError unless ``t`` is a contiguous vector of ``length`` values aligned for pair loads."""
    if t.dim() != 1 or t.shape[0] != length or t.stride(0) != 1:
        raise LaunchError(f"{what}: a contiguous vector of {length} values, got {tuple(t.shape)} strides "
                          f"{tuple(t.stride())}")
