"""``tcgen05.mma`` facts: the 32-bit instruction descriptor's fields, the kinds with their operand and accumulator
types, the legal shapes, and block scaling (PTX #tcgen05-instruction-descriptor, #tcgen05-kind-shapes,
#tcgen05-transpose-negate-mma-kind, #tcgen05-block-scaling; docs/tcgen05-mma-operands.md sections 6-8).

Every value an encoder or decoder writes comes from these tables: ``DENSE_FIELDS`` for kind::tf32 / f16 /
f8f6f4 / i8 and ``BLOCK_SCALED_FIELDS`` for kind::mxf8f6f4 / mxf4 / mxf4nvf4. Type codes are per kind (E2M1 is 5
in f8f6f4 and mxf8f6f4 but 1 in mxf4*).
"""
from __future__ import annotations

from typing import Literal

import attrs

from ...layout import Layout, make_layout
from .tmem import LANES, QUADRANT_LANES, TCol, TLane

__all__ = ["Major", "IdescField", "DENSE_FIELDS", "BLOCK_SCALED_FIELDS", "MmaKind", "MMA_KINDS", "WS_SHAPES",
           "MAX_SHIFTS", "K_BYTES", "TRANSPOSABLE", "SF_CELL_BYTES", "scale_factor_layout", "SF_REPLICA", "mma_ptx"]


@attrs.frozen
class IdescField:
    """``width`` bits at ``lo`` of the instruction descriptor; ``shift`` drops low bits of the value (N >> 3)."""

    name: str
    lo: int
    width: int
    shift: int = 0

    def put(self, value: int) -> int:
        return (value >> self.shift) << self.lo

    def get(self, desc: int) -> int:
        return ((desc >> self.lo) & ((1 << self.width) - 1)) << self.shift

    def fits(self, value: int) -> bool:
        return value >= 0 and value % (1 << self.shift) == 0 and value >> self.shift < 1 << self.width


DENSE_FIELDS = (
    IdescField("sparse_selector", 0, 2), IdescField("sparse", 2, 1), IdescField("saturate", 3, 1),
    IdescField("d_type", 4, 2), IdescField("a_type", 7, 3), IdescField("b_type", 10, 3),
    IdescField("negate_a", 13, 1), IdescField("negate_b", 14, 1), IdescField("transpose_a", 15, 1),
    IdescField("transpose_b", 16, 1), IdescField("n", 17, 6, 3), IdescField("m", 24, 5, 4),
    IdescField("max_shift", 30, 2),
)
BLOCK_SCALED_FIELDS = (
    IdescField("sparse", 2, 1), IdescField("sfb_id", 4, 2), IdescField("a_type", 7, 3),
    IdescField("b_type", 10, 3), IdescField("negate_a", 13, 1), IdescField("negate_b", 14, 1),
    IdescField("transpose_a", 15, 1), IdescField("transpose_b", 16, 1), IdescField("n", 17, 6, 3),
    IdescField("scale_type", 23, 1), IdescField("m", 27, 2, 7), IdescField("sfa_id", 29, 2),
    IdescField("k96", 31, 1),
)

#: ``.ws`` max-shift values and their codes (bits 30-31).
MAX_SHIFTS = {0: 0, 8: 1, 16: 2, 32: 3}
#: Bytes of K one dense MMA consumes (16 f16, 8 tf32, 32 f8 / i8, 64 fp4 elements).
K_BYTES = 32
#: An operand's major: K (each row's K elements contiguous) or MN (transposed).
Major = Literal["K", "MN"]

#: Operand types that may be MN-major (transposed); fp6 / fp4 may not (CUTLASS InstrDescriptor).
TRANSPOSABLE = frozenset({"f8e4m3", "f8e5m2", "i8", "u8", "f16", "bf16", "tf32"})


@attrs.frozen
class MmaKind:
    """One ``.kind``: its operand type codes, accumulator type codes, K bits per element, legal M per
    cta_group, the N step per cta_group, and its block-scaling rules."""

    name: str
    operand_codes: dict = attrs.field(repr=False)
    d_codes: dict = attrs.field(repr=False)
    m_values: dict                 # cta_group -> legal M
    n_step: dict                   # cta_group -> N step (N from the step to 256)
    block_scaled: bool = False
    scale_types: dict = attrs.field(factory=dict, repr=False)   # scale type -> code (bit 23)
    scale_vecs: tuple[int, ...] = ()         # legal scale_vec (1X / 2X / 4X)
    transpose: bool = True         # may A / B be MN-major
    negate: bool = True
    saturate: bool = False
    open_shapes: tuple[tuple[tuple[int, int], str], ...] = ()        # ((cta_group, M), why) the sources disagree on
    n_extra: dict = attrs.field(factory=dict, repr=False)   # cta_group -> N legal besides the steps
    packed: bool = False           # 4-bit operands packed two to a byte (else 4/6-bit elements in 8-bit containers)

    def n_legal(self, cta_group: int, n: int) -> bool:
        step = self.n_step[cta_group]
        return (step <= n <= 256 and n % step == 0) or n in self.n_extra.get(cta_group, ())


# Operand types are pycute dtype names (f8e4m3 = E4M3, f4e2m1 = E2M1, ...), accumulators f16 / f32 / i32.
_F8F6F4 = {"f8e4m3": 0, "f8e5m2": 1, "f6e2m3": 3, "f6e3m2": 4, "f4e2m1": 5}
MMA_KINDS = {k.name: k for k in (
    MmaKind("f16", {"f16": 0, "bf16": 1}, {"f16": 0, "f32": 1}, {1: (64, 128), 2: (128, 256)}, {1: 8, 2: 16}),
    MmaKind("tf32", {"tf32": 2}, {"f32": 1}, {1: (64, 128), 2: (128, 256)}, {1: 8, 2: 16}),
    MmaKind("f8f6f4", _F8F6F4, {"f16": 0, "f32": 1}, {1: (64, 128), 2: (128, 256)}, {1: 8, 2: 16}),
    MmaKind("i8", {"u8": 0, "i8": 1}, {"i32": 2}, {1: (64, 128), 2: (128, 256)}, {1: 16, 2: 32}, negate=False,
            saturate=True, n_extra={1: (8, 24)}),
    MmaKind("mxf8f6f4", _F8F6F4, {"f32": 1}, {1: (128,), 2: (256,)}, {1: 8, 2: 16}, True, {"ue8m0": 1}, (1,),
            open_shapes=(((2, 128), "CUTLASS asserts M == 256 for cta_group::2 while the PTX shape summary also "
                                    "lists 128 (docs/tcgen05-mma-operands.md section 12.4)"),)),
    MmaKind("mxf4", {"f4e2m1": 1}, {"f32": 1}, {1: (128,), 2: (128, 256)}, {1: 8, 2: 16}, True, {"ue8m0": 1}, (2,),
            transpose=False, packed=True),
    MmaKind("mxf4nvf4", {"f4e2m1": 1}, {"f32": 1}, {1: (128,), 2: (128, 256)}, {1: 8, 2: 16}, True,
            {"ue8m0": 1, "ue4m3": 0}, (2, 4), transpose=False, packed=True),
)}

#: ``.ws`` (cta_group::1 only): M -> legal N.
WS_SHAPES = {32: (64, 128, 256), 64: (64, 128, 256), 128: (64, 128, 256)}


# Where block_scale reads scale factors (PTX #tcgen05-block-scaling: "duplicated to all 32 lane partitions"; the
# lane/column figures are images, so the map follows CuTe's tmem_sf_frg, TVM's sf_tmem_layout and DeepGEMM, which
# agree; docs/tcgen05-mma-operands.md section 8): SF slot s (= MMA i * scale_vec + j) of row r at lane r % 32 of
# every quadrant, column r // 32, byte s % 4; past a cell's 4 bytes, the next rows / 32 columns.
SF_CELL_BYTES = 4
SF_REPLICA = Layout(LANES // QUADRANT_LANES, QUADRANT_LANES * TLane)


def scale_factor_layout(rows: int, slots: int) -> Layout:
    """``(rows, slots)`` -> (TLane, TCol in bytes) of one quadrant's SFs (``SF_REPLICA`` copies it to the others)."""
    groups = rows // QUADRANT_LANES
    row = Layout((QUADRANT_LANES, groups), (TLane, SF_CELL_BYTES * TCol))
    slot = Layout(slots, TCol) if slots <= SF_CELL_BYTES else \
        Layout((SF_CELL_BYTES, slots // SF_CELL_BYTES), (TCol, SF_CELL_BYTES * groups * TCol))
    return make_layout(row, slot)


def mma_ptx(kind: str, cta_group: int, scale_vec: int | None = None, ws: bool = False) -> str:
    """The opcode of ``tcgen05.mma`` (PTX ISA #tcgen05-mma): operands ``[d-tmem], a-desc | [a-tmem], b-desc, idesc,
    enable-input-d`` and, block-scaled, ``[scale-A-tmem], [scale-B-tmem]`` before the predicate; ``ws`` the
    weight-stationary form ``tcgen05.mma.ws`` (cta_group::1, the dense kinds, #tcgen05-mma-instructions-mma-ws)."""
    head = f"tcgen05.mma{'.ws' if ws else ''}.cta_group::{cta_group}.kind::{kind}"
    if not MMA_KINDS[kind].block_scaled:
        return head
    return head + ".block_scale" + (f".scale_vec::{scale_vec}X" if scale_vec is not None else "")
