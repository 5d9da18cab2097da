"""The MMA executor: ``tcgen05.mma`` with A read through its shared-memory descriptor or from TMEM and B through
its descriptor, D in TMEM (PTX ISA #tcgen05-mma, #tcgen05-block-scaling). It computes in float64 from the element
codes (``sim.operand``), rounds D to its 32-bit type once per instruction, and writes D through the data-path
layout of its M, cta_group and ``.ws`` (``mma.accumulator_layout``: for M 128, cta_group::1, row m in lane m and
column n in column n). Block-scaled kinds read each row's SFs from quadrant 0 at the SF address's column plus
``row // 32`` and byte ``sf_id + j``. A cta_group::2 MMA is the pair's, issued by the even CTA: each CTA holds M/2
rows of A and N/2 rows of B and receives its rows of D. What it does not model (16-bit D, 6-bit and container
elements, data paths pycute does not place) is an EmulationError."""
from __future__ import annotations

import re
from typing import Callable, NamedTuple

import numpy as np

from ...arch.sm100.mma import MMA_KINDS
from ...arch.sm100.tmem import CELL_BITS, COLUMNS, QUADRANT_LANES, split_address
from ...atoms.mma import MmaIssue
from ...errors import EmulationError, PlanError
from ...layout import Layout
from ...mma.accumulator import accumulator_layout
from ...tensor.values import layout_values
from ...mma.instr import InstrDescriptor
from ..machine import Machine, tmem_operand
from ..operand import mma_operand, operand_bytes, reference_mma

__all__ = ["Tcgen05MmaExecutor", "decode"]


class _Form(NamedTuple):
    kind: str
    fields: dict
    a_type: str
    b_type: str
    m: int
    n: int
    group: int
    rows: int
    layout: Layout
    bits: int
    b_bits: int
    kk: int
    a_major: str
    b_major: str

_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f8e4m3": 8, "f8e5m2": 8, "i8": 8, "u8": 8}


def _operand_bits(kind: str, dtype: str) -> int:
    if dtype == "f4e2m1" and MMA_KINDS[kind].packed:
        return 4
    if dtype not in _BITS:
        raise EmulationError(f"kind::{kind} operands of {dtype} are not modelled")
    return _BITS[dtype]


class Tcgen05MmaExecutor(Machine):
    """tcgen05.mma against the CTAs' shared memory and TMEM."""

    def _sfs(self, address: int, rows: int, sf_id: int, vec: int, cta: int) -> np.ndarray:
        """(rows, vec) SF codes at TMEM ``address``: row r at column + r // 32, byte sf_id + j, lane r % 32."""
        lane0, col = split_address(address)
        tmem = self.ctas[cta].tmem
        r = np.arange(rows)
        cells = tmem[lane0 + r % QUADRANT_LANES, col + r // QUADRANT_LANES].astype(np.uint64)
        return np.stack([(cells >> (8 * (sf_id + j))) & 0xFF for j in range(vec)], axis=1).astype(np.uint8)

    def _tmem_a(self, address: int, kk: int, bits: int, cta: int) -> np.ndarray:
        """(128, kk) codes of an A in TMEM at ``address``: row r in lane + r, K packed along the columns (32 / bits
        to a cell, the lowest K in the low bits)."""
        lane0, col = split_address(address)
        per = CELL_BITS // bits
        cells = self.ctas[cta].tmem[lane0:lane0 + 128, col:col + kk // per].astype(np.uint64)
        if cells.shape != (128, kk // per):
            raise EmulationError(f"A in TMEM at {address:#x}: lanes {lane0}.. and columns {col}.. leave TMEM")
        k = np.arange(kk)
        shift = ((k % per) * bits).astype(np.uint64)
        return (cells[:, k // per] >> shift) & np.uint64((1 << bits) - 1)

    def _form(self, issue: MmaIssue, cta: int) -> "_Form":
        """What the instruction descriptor and the opcode say: kind, types, M, N, the pair, D's layout."""
        kind = re.search(r"kind::(\w+)", issue.ptx).group(1)          # type: ignore[union-attr]
        group = 2 if ".cta_group::2" in issue.ptx else 1
        f = InstrDescriptor.decode(kind, issue.idesc).fields
        names = {v: n for n, v in MMA_KINDS[kind].operand_codes.items()}
        a_type, b_type, m, n = names[f["a_type"]], names[f["b_type"]], f["m"], f["n"]
        try:
            layout = accumulator_layout(CELL_BITS, m, n, group, ".ws." in issue.ptx)  # where D's (row, column) go
        except PlanError as e:
            raise EmulationError(f"{issue.ptx}: {e}") from None
        if group == 2 and (cta % 2 or cta + 1 >= len(self.ctas)):
            raise EmulationError(f"{issue.ptx} from CTA {cta}: a pair MMA is issued by the even CTA of a pair "
                                 f"({len(self.ctas)} CTA(s) modelled)")
        bits = _operand_bits(kind, a_type)
        return _Form(kind, f, a_type, b_type, m, n, group, m // group, layout, bits, _operand_bits(kind, b_type),
                     256 // bits, *("MN" if f[t] else "K" for t in ("transpose_a", "transpose_b")))

    def mma(self, issue: MmaIssue, cta: int = 0) -> None:
        """Issue one MMA from CTA ``cta``: D (+)= A B^T (scaled for the block-scaled kinds). A cta_group::2 MMA is
        issued by the even CTA of the pair: A's rows and B's rows are each CTA's tile at the descriptors' address
        (the even CTA's first), and each CTA's D rows (lanes 0-127) take its A rows times all of B, scaled by the
        SFA of its rows and the SFB of all N columns from its own TMEM."""
        cta = self._cta(cta)
        s = self._form(issue, cta)
        k, f, rows, kk = MMA_KINDS[s.kind], s.fields, s.rows, s.kk
        pair = range(cta, cta + s.group)
        a = [self._tmem_a(issue.a_desc, kk, s.bits, c) if issue.a_tmem else
             mma_operand(issue.a_desc, s.a_major, rows, kk, s.bits, self.ctas[c].smem, self.ctas[c].smem_base)
             for c in pair]
        b = np.concatenate([mma_operand(issue.b_desc, s.b_major, s.n // s.group, kk, s.b_bits, self.ctas[c].smem,
                                        self.ctas[c].smem_base) for c in pair])
        if k.block_scaled and (issue.sfa is None or issue.sfb is None):
            raise EmulationError(f"{issue.ptx}: a block-scaled MMA names its SF addresses")
        for c, a_c in zip(pair, a):
            if issue.sfa is not None and issue.sfb is not None:
                vec = self._vec(issue, k)
                types = {v: t for t, v in k.scale_types.items()}
                sfa = self._sfs(issue.sfa, rows, f["sfa_id"], vec, c)
                sfb = self._sfs(issue.sfb, s.n, f["sfb_id"], vec, c)
                prod = reference_mma(a_c, b, s.a_type, s.b_type, sfa, sfb, types[f["scale_type"]], kk // vec)
            else:
                prod = reference_mma(a_c, b, s.a_type, s.b_type)
            self._accumulate(issue, prod, s.kind, c, s.layout)

    @staticmethod
    def _vec(issue: MmaIssue, k) -> int:
        return k.scale_vecs[0] if len(k.scale_vecs) == 1 else (4 if issue.ptx.endswith("4X") else 2)

    def mma_footprint(self, issue: MmaIssue, cta: int = 0) -> dict:
        """What one MMA touches, per CTA of its pair: ``smem`` byte offsets it reads (A unless in TMEM, B), and
        TMEM cells (``lane * COLUMNS + column``) it reads (A in TMEM, SFs) and writes (D)."""
        cta = self._cta(cta)
        s = self._form(issue, cta)
        out: dict = {"smem": {}, "tmem_read": {}, "tmem_write": {}}
        lane0, col0 = split_address(issue.d)
        d_cells = (lane0 + layout_values(s.layout, "TLane")) * COLUMNS + col0 + layout_values(s.layout, "TCol")
        for c in range(cta, cta + s.group):
            base = self.ctas[c].smem_base
            parts = [operand_bytes(issue.b_desc, s.b_major, s.n // s.group, s.kk, s.b_bits, base)[0]]
            reads = []
            if issue.a_tmem:
                a_lane, a_col = split_address(issue.a_desc)
                cols = a_col + np.arange(s.kk // (CELL_BITS // s.bits))
                reads.append(((a_lane + np.arange(128))[:, None] * COLUMNS + cols[None, :]).reshape(-1))
            else:
                parts.append(operand_bytes(issue.a_desc, s.a_major, s.rows, s.kk, s.bits, base)[0])
            for address, rows in ((issue.sfa, s.rows), (issue.sfb, s.n)):
                if address is not None:
                    lane, col = split_address(address)
                    r = np.arange(rows)
                    reads.append((lane + r % QUADRANT_LANES) * COLUMNS + col + r // QUADRANT_LANES)
            out["smem"][c] = np.unique(np.concatenate([p.reshape(-1) for p in parts]))
            out["tmem_read"][c] = np.unique(np.concatenate(reads)) if reads else np.zeros(0, dtype=np.int64)
            out["tmem_write"][c] = np.asarray(d_cells, dtype=np.int64).reshape(-1)
        return out

    def _accumulate(self, issue: MmaIssue, prod: np.ndarray, kind: str, cta: int, layout) -> None:
        """D (+)= ``prod`` (rows x N) through the data path's ``layout``: element (r, c) at its lane and column."""
        lane, col = split_address(issue.d)
        tmem = self.ctas[cta].tmem
        lanes = lane + layout_values(layout, "TLane")
        cols = col + layout_values(layout, "TCol")
        if lane or cols.max() >= tmem.shape[1]:
            raise EmulationError(f"D at TMEM address {issue.d:#x}: lane {lane}, columns {col}..{cols.max()}")
        flat = prod.T.reshape(-1)                       # index r + rows * c, the layout's order
        keep = 1 if issue.accumulate else 0
        if kind == "i8":
            total = tmem[lanes, cols].view(np.int32).astype(np.int64) * keep + flat.astype(np.int64)
            tmem[lanes, cols] = (total & 0xFFFFFFFF).astype(np.uint32)
            return
        old = tmem[lanes, cols].view(np.float32).astype(np.float64)
        tmem[lanes, cols] = (old * keep + flat).astype(np.float32).view(np.uint32)


def decode(op: str, args: list, value: Callable[[str], int]) -> MmaIssue:
    """A compiled ``tcgen05.mma`` as its issue record: ``[d], a-desc | [a-tmem], b-desc, idesc{, [sfa], [sfb]}, p``
    (the predicate's value read as the accumulate flag)."""
    d = tmem_operand(args[0], value, "tcgen05.mma D")
    a_tmem = args[1].startswith("[")
    a = tmem_operand(args[1], value, "tcgen05.mma A") if a_tmem else value(args[1])
    scaled = ".block_scale" in op
    sfa = tmem_operand(args[4], value, "SFA") if scaled else None
    sfb = tmem_operand(args[5], value, "SFB") if scaled else None
    return MmaIssue(op, d, a, value(args[2]), value(args[3]) & 0xFFFFFFFF, bool(value(args[-1])), sfa, sfb,
                    a_tmem)
