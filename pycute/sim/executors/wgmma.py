"""The wgmma executor: ``wgmma.mma_async`` of one warpgroup (PTX ISA #asynchronous-warpgroup-level-matrix-
instructions-wgmma-mma). A is read through its sm_90 descriptor from shared memory (the descriptor's fields alone,
the swizzle on absolute addresses: ``sim.operand.gmma_operand``) or from the warpgroup's 4 A registers per thread
through the A fragment; B through its descriptor; D is read from and written to each thread's registers through the
accumulator fragment (``arch.sm90.wgmma.warpgroup_fragment``). It computes in float64 from the element codes and
rounds D to its type (f32, f16; s32 wraps) once per instruction. ``decode`` reads a compiled ``wgmma.mma_async``
back into its issue record for the PTX interpreter; the fence, commit and wait order an asynchrony this model does
not have, and the interpreter records them in order (``SYNC_PREFIXES``)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...arch.sm90.wgmma import (A_REGISTERS, COMMIT_PTX, D_RUN, FENCE_PTX, SETMAXNREG, WAIT_PTX, WARPGROUP_THREADS,
                                WGMMA_ACCUMULATION, WGMMA_M, WGMMA_NAN, WGMMA_TYPES, warpgroup_fragment)
from ...atoms.wgmma import WgmmaIssue, parse_wgmma_ptx
from ...errors import EmulationError, PlanError
from ...layout import Layout
from ...tensor.values import layout_values
from ..machine import Machine
from ..accumulate import dot_sum
from ..operand import decode as element_values, gmma_operand, reference_mma

__all__ = ["WgmmaExecutor", "decode", "pack_fragment", "unpack_fragment", "d_values", "d_codes_of", "SYNC_PREFIXES",
           "D_BITS"]

#: Opcode prefixes that order or budget but write no register the model tracks (the interpreter records them).
SYNC_PREFIXES = (FENCE_PTX.split(".sync")[0], COMMIT_PTX.split(".sync")[0], WAIT_PTX.split(".sync")[0],
                 SETMAXNREG["inc"].split(".inc")[0])
#: Bits of one D element by accumulator type.
D_BITS = {"f32": 32, "f16": 16, "i32": 32}
_FLOAT = {32: np.float32, 16: np.float16}


def _table(layout: Layout, threads: int) -> np.ndarray:
    """(threads, values): the coordinate index value v of thread t holds."""
    return layout_values(layout).reshape(-1, threads).T


def pack_fragment(codes: np.ndarray, layout: Layout, threads: int, bits: int) -> np.ndarray:
    """(threads, registers) uint32: each thread's values (``codes`` by coordinate index, ``bits`` wide) packed
    ``32 / bits`` to a register, the lowest value in the low bits."""
    table = _table(layout, threads)
    per = 32 // bits
    vals = np.asarray(codes, dtype=np.uint64).reshape(-1)[table]
    regs = np.zeros((threads, table.shape[1] // per), dtype=np.uint64)
    for j in range(per):
        regs |= (vals[:, j::per] & np.uint64((1 << bits) - 1)) << np.uint64(j * bits)
    return regs.astype(np.uint32)


def unpack_fragment(registers: np.ndarray, layout: Layout, threads: int, bits: int) -> np.ndarray:
    """The inverse of ``pack_fragment``: the codes by coordinate index (uint64, the layout's size)."""
    table = _table(layout, threads)
    per = 32 // bits
    regs = np.asarray(registers, dtype=np.uint64)
    if regs.shape != (threads, table.shape[1] // per):
        raise EmulationError(f"the fragment has {table.shape[1] // per} registers per thread for {threads} threads, "
                             f"got an array of {regs.shape}")
    out = np.zeros(table.size, dtype=np.uint64)
    for j in range(per):
        out[table[:, j::per]] = (regs >> np.uint64(j * bits)) & np.uint64((1 << bits) - 1)
    return out


def d_values(codes: np.ndarray, d: str) -> np.ndarray:
    """D element codes of accumulator type ``d`` as float64 (s32 as integers)."""
    if d == "i32":
        return codes.astype(np.uint32).view(np.int32).astype(np.float64)
    return codes.astype({32: np.uint32, 16: np.uint16}[D_BITS[d]]).view(_FLOAT[D_BITS[d]]).astype(np.float64)


def d_codes_of(values: np.ndarray, d: str) -> np.ndarray:
    """Values rounded to accumulator type ``d`` (f32, f16; s32 wraps), as codes; a NaN is the code wgmma writes
    (``WGMMA_NAN``)."""
    if d == "i32":                                     # s32 accumulators wrap (no .satfinite)
        return (values.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)
    bits = D_BITS[d]
    codes = values.astype(_FLOAT[bits]).view({32: np.uint32, 16: np.uint16}[bits]).astype(np.uint64)
    return np.where(np.isnan(values), np.uint64(WGMMA_NAN[d]), codes)


class WgmmaExecutor(Machine):
    """wgmma.mma_async against a CTA's shared memory and one warpgroup's registers; ``accumulation`` is each
    float family's summation model by D type (the hardware's where measured, ``arch.sm90.wgmma.WGMMA_ACCUMULATION``)."""

    accumulation: dict = WGMMA_ACCUMULATION

    def wgmma(self, issue: WgmmaIssue, d: np.ndarray, a: np.ndarray | None = None, cta: int = 0) -> np.ndarray:
        """Execute ``issue`` for one warpgroup: ``d`` its 128 threads' D registers ((128, registers) uint32), ``a``
        their A registers ((128, 4) uint32) when A is in registers. Returns the new D registers."""
        try:
            shape = parse_wgmma_ptx(issue.ptx)
        except PlanError as e:
            raise EmulationError(str(e)) from None
        c = self.ctas[self._cta(cta)]
        ta, tb = WGMMA_TYPES[shape.a], WGMMA_TYPES[shape.b]
        if issue.a_desc is None:
            if a is None:
                raise EmulationError(f"{issue.ptx}: A is in registers; give the warpgroup's {A_REGISTERS} A registers")
            layout = warpgroup_fragment(WGMMA_M, shape.k, 32 // ta.bits)
            a_codes = unpack_fragment(a, layout, WARPGROUP_THREADS, ta.bits).reshape(shape.k, WGMMA_M).T
        else:
            a_codes = gmma_operand(issue.a_desc, "MN" if issue.trans_a else "K", WGMMA_M, shape.k, ta.bits, c.smem,
                                   c.smem_base)
        b_codes = gmma_operand(issue.b_desc, "MN" if issue.trans_b else "K", shape.n, shape.k, tb.bits, c.smem,
                               c.smem_base)
        layout = warpgroup_fragment(WGMMA_M, shape.n, D_RUN)
        old = d_values(unpack_fragment(d, layout, WARPGROUP_THREADS, D_BITS[shape.d]), shape.d)
        if ta.family == "int":
            prod = reference_mma(a_codes, b_codes, shape.a, shape.b)
            new = prod.T.reshape(-1) + (old if issue.scale_d else 0.0)     # index row + 64 * col
        else:                       # the family's accumulation model (arch.sm90.wgmma.WGMMA_ACCUMULATION)
            a_vals = element_values(a_codes, shape.a) * (issue.scale_a or 1)
            b_vals = element_values(b_codes, shape.b) * (issue.scale_b or 1)
            acc = old.reshape(shape.n, WGMMA_M).T if issue.scale_d else None
            model = self.accumulation[ta.family, shape.d]
            new = dot_sum(a_vals[:, None], b_vals[None], acc, shape.a, shape.b, shape.d, model)
            new = new.T.reshape(-1)
        return pack_fragment(d_codes_of(new, shape.d), layout, WARPGROUP_THREADS, D_BITS[shape.d])


def _registers(operand: str) -> tuple[str, ...]:
    if not (operand.startswith("{") and operand.endswith("}")):
        raise EmulationError(f"wgmma register operand {operand!r} is not a {{...}} vector")
    return tuple(r.strip() for r in operand[1:-1].split(","))


def decode(op: str, args: list, value: Callable[[str], int]) -> WgmmaIssue:
    """A compiled ``wgmma.mma_async`` as its issue record: ``{d...}, a-desc | {a...}, b-desc, scale-d`` and, by form,
    ``imm-scale-a, imm-scale-b`` (floating point) and ``imm-trans-a`` (A in shared memory), ``imm-trans-b``
    (f16 / bf16). A negated predicate ``!p`` reads as its complement."""
    shape = parse_wgmma_ptx(op)
    family = WGMMA_TYPES[shape.a]
    a_regs = args[1].startswith("{")
    scale = args[3].strip()
    scale_d = bool(value(scale.lstrip("!"))) != scale.startswith("!")
    imm = [value(x) for x in args[4:]]
    want = (2 if family.family != "int" else 0) + ((1 if a_regs else 2) if family.transpose else 0)
    if len(imm) != want:
        raise EmulationError(f"{op}: {len(imm)} immediate operand(s) after scale-d, the form has {want}")

    neg = [x - (1 << 64) if x >> 63 else x for x in imm[:2]] if family.family != "int" else [None, None]
    trans = imm[2:] if family.transpose else []
    trans_a = None if not family.transpose or a_regs else trans[0]
    trans_b = trans[-1] if family.transpose else None
    return WgmmaIssue(op, None if a_regs else value(args[1]), value(args[2]), scale_d, neg[0], neg[1], trans_a,
                      trans_b, _registers(args[1]) if a_regs else (), _registers(args[0]))
