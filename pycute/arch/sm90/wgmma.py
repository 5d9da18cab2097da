"""Hopper's warpgroup MMA, ``wgmma.mma_async`` (sm_90a), as data (PTX ISA #asynchronous-warpgroup-level-matrix-
instructions, #asynchronous-warpgroup-level-matrix-instructions-wgmma-mma, #asynchronous-warpgroup-level-matrix-
register-fragment): the operand types with their K per instruction, accumulators and transposability, the legal N,
the register fragments of D and of an A in registers, the ordering instructions and ``setmaxnreg``.

One instruction computes a 64-row slice of D (``WGMMA_M``) for the warpgroup that issues it: 4 consecutive warps,
the first a multiple of 4. A and B are read through shared-memory descriptors (``arch.sm90.gmma_descriptor``), A
may instead come from 4 registers per thread; D lives in every thread's registers.
"""
from __future__ import annotations

from typing import Literal

import attrs

from ...layout import Layout

__all__ = ["WARPGROUP_WARPS", "WARPGROUP_THREADS", "WGMMA_M", "A_REGISTERS", "WgmmaType", "WGMMA_TYPES",
           "D_PTX", "n_values", "warpgroup_fragment", "D_RUN", "wgmma_ptx", "FENCE_PTX", "COMMIT_PTX",
           "WAIT_PTX", "SETMAXNREG", "MAXNREG_RANGE", "WGMMA_SASS", "Family", "WgmmaAccumulation",
           "EXACT_ACCUMULATION", "WGMMA_ACCUMULATION", "MEASURED_RUN", "FP8_F32", "FP8_F16", "HALF_F32", "HALF_F16",
           "WGMMA_NAN"]

WARPGROUP_WARPS = 4
WARPGROUP_THREADS = 32 * WARPGROUP_WARPS
#: Rows of A and D one warpgroup's instruction computes (the ``m64`` of every shape).
WGMMA_M = 64
#: 32-bit registers per thread holding an A in registers for one instruction (every type: 64 x 32 bytes of K).
A_REGISTERS = 4

#: Operand families: A and B are one type, except that the fp8 forms mix e4m3 / e5m2 and the integer forms s8 / u8.
Family = Literal["f16", "bf16", "tf32", "fp8", "int"]


@attrs.frozen
class WgmmaType:
    """An operand type: pycute's ``name``, the PTX ``ptx`` spelling, ``k`` elements per instruction (32 bytes),
    the accumulator types (pycute names) it takes, whether its operands may be MN-major (``imm-trans-a/b``: the
    16-bit types only), and its family."""

    name: str
    ptx: str
    bits: int
    k: int
    accumulators: tuple[str, ...]
    transpose: bool
    family: Family


WGMMA_TYPES = {t.name: t for t in (
    WgmmaType("f16", "f16", 16, 16, ("f32", "f16"), True, "f16"),
    WgmmaType("bf16", "bf16", 16, 16, ("f32",), True, "bf16"),
    WgmmaType("tf32", "tf32", 32, 8, ("f32",), False, "tf32"),
    WgmmaType("f8e4m3", "e4m3", 8, 32, ("f32", "f16"), False, "fp8"),
    WgmmaType("f8e5m2", "e5m2", 8, 32, ("f32", "f16"), False, "fp8"),
    WgmmaType("i8", "s8", 8, 32, ("i32",), False, "int"),
    WgmmaType("u8", "u8", 8, 32, ("i32",), False, "int"),
)}

#: Accumulator type (pycute name) -> its PTX ``.dtype``.
D_PTX = {"f32": "f32", "f16": "f16", "i32": "s32"}

#: Adjacent columns of one D row a thread holds together (f32 / s32 in two registers, f16 packed in one).
D_RUN = 2

_N_FLOAT = tuple(range(8, 257, 8))
# The integer shapes: 8 to 32 in steps of 8, then 48 to 224 in steps of 16 (no 40, 56, ..., none above 224).
_N_INT = (8, 16, 24, 32) + tuple(range(48, 225, 16))


def n_values(family: Family) -> tuple[int, ...]:
    """The legal N of a family's shapes (``.m64nNkK``)."""
    return _N_INT if family == "int" else _N_FLOAT


def warpgroup_fragment(rows: int, cols: int, run: int) -> Layout:
    """The ``(thread, value) -> row + rows * col`` layout every wgmma register fragment follows over a ``rows`` x
    ``cols`` tile (``rows`` a multiple of 64: warpgroup ``g`` holds rows ``64 g ..``): thread ``t`` of warp ``w``
    holds ``run`` adjacent columns from ``run * (t % 4)`` of rows ``16 w + t / 4`` and ``+ 8``, and repeats every
    ``4 * run`` columns. D uses ``run`` 2 over N; an A in registers ``32 / bits`` (one register's elements) over K
    (PTX figures "WGMMA .m64nNk16/k8/k32 register fragment layout"; CuTe's CLayout_64xN and ALayout_64x{8,16,32})."""
    groups = rows // WGMMA_M
    thread = [(4, run * rows), (8, 1), (WARPGROUP_WARPS, 16), (groups, WGMMA_M)]
    value = [(run, rows), (2, 8), (cols // (4 * run), 4 * run * rows)]
    thread = [m for m in thread if m[0] > 1]
    value = [m for m in value if m[0] > 1] or [(1, 0)]
    return Layout((tuple(s for s, _ in thread), tuple(s for s, _ in value)),
                  (tuple(d for _, d in thread), tuple(d for _, d in value)))


def wgmma_ptx(n: int, k: int, d: str, a: str, b: str) -> str:
    """The opcode of ``wgmma.mma_async`` for shape ``m64n{n}k{k}`` and pycute type names of D, A and B."""
    return (f"wgmma.mma_async.sync.aligned.m{WGMMA_M}n{n}k{k}.{D_PTX[d]}.{WGMMA_TYPES[a].ptx}."
            f"{WGMMA_TYPES[b].ptx}")


#: Orders the registers wgmma reads (A, D) after the warpgroup's earlier accesses to them; before the first wgmma
#: and whenever the accumulators or A's registers were touched since (PTX #asynchronous-warpgroup-level-matrix-
#: instructions-wgmma-fence).
FENCE_PTX = "wgmma.fence.sync.aligned"
#: Closes the thread's uncommitted wgmma into a group (PTX ...-wgmma-commit-group).
COMMIT_PTX = "wgmma.commit_group.sync.aligned"
#: Waits until at most N of the thread's groups are pending (an immediate; PTX ...-wgmma-wait-group).
WAIT_PTX = "wgmma.wait_group.sync.aligned"
#: Per-thread register budget moves between warpgroups (PTX #miscellaneous-instructions-setmaxnreg): inc / dec.
SETMAXNREG = {"inc": "setmaxnreg.inc.sync.aligned.u32", "dec": "setmaxnreg.dec.sync.aligned.u32"}
#: setmaxnreg's count: 24 to 256, a multiple of 8.
MAXNREG_RANGE = range(24, 257, 8)

#: The SASS opcode each family assembles to (ptxas 13, sm_90a): HGMMA.64xNx16.F32.BF16, QGMMA.64xNx32.F32.E4M3.E4M3...
WGMMA_SASS: dict[Family, str] = {"f16": "HGMMA", "bf16": "HGMMA", "tf32": "HGMMA", "fp8": "QGMMA", "int": "IGMMA"}


Rounding = Literal["rz", "rd", "rn"]


@attrs.frozen
class WgmmaAccumulation:
    """How one ``wgmma.mma_async`` instruction (one k-step) sums its K products and the accumulator C into D, as a
    multi-term adder, in the order the hardware's steps happen:

    1. Alignment. The exact products of each ``block`` of consecutive k are aligned, with the running sum (and C,
       when ``c_term`` is ``aligned``), to the largest term's exponent; each term keeps ``fraction_bits`` bits below
       that exponent, the bits under it dropped by ``term_rounding`` (``rz`` toward zero, ``rd`` toward minus
       infinity, ``rn`` to nearest even); the aligned integers add exactly. ``grid`` says which exponent a product
       aligns by: the sum of its operands' exponents (``exponents``; a subnormal operand counts its type's smallest
       normal exponent, and a product of two significands in [1, 2) may lie one binade above the sum) or its
       value's own (``values``). C aligns by its own exponent, a subnormal C by D's type's smallest normal one (so
       the bits of a subnormal C below that grid are lost). With ``c_term`` ``after``, C is added to the products'
       sum exactly.
    2. ``sum_bits``: the instruction's sum keeps that many bits below its own leading bit, cut toward zero (None:
       all of them). This is where a sum that carried into the binade above the largest term loses a bit.
    3. ``rounding``: the sum is rounded into D's type (f32, f16).
    4. ``zero``: the sign of a D of zero from nonzero terms (a cancellation, or a sum rounded to zero): ``ieee``
       (-0 for a negative sum rounded to zero) or ``positive`` (+0). A D whose terms are all zero follows IEEE
       either way (-0 only when every term is -0).
    5. ``overflow``: a sum whose magnitude reaches the binade above D's largest (2^128 for f32) is infinite
       (``inf``), or rounds as IEEE says (``ieee``: toward zero it stays at the largest finite value).

    NaN and infinite terms give D as IEEE says (a NaN D's code is ``WGMMA_NAN``). ``fraction_bits`` None is the exact
    sum rounded once (``sum_bits`` must then be None). ``source`` names the evidence."""

    #: Bits each aligned term keeps below the largest exponent of its block (None: the exact sum).
    fraction_bits: int | None = None
    #: Consecutive products aligned together; blocks are added in k order, the running sum aligned with each.
    block: int = 32
    #: ``aligned``: C is a term of the first block (its low bits are cut like a product's); ``after``: added exactly.
    c_term: Literal["aligned", "after"] = "aligned"
    #: How a term's bits below the grid go.
    term_rounding: Rounding = "rz"
    #: How the sum is rounded into D's type.
    rounding: Literal["rz", "rn"] = "rn"
    #: Which exponent a product aligns by.
    grid: Literal["exponents", "values"] = "exponents"
    #: Bits the instruction's sum keeps below its own leading bit, cut toward zero, before D's rounding (None: all).
    sum_bits: int | None = None
    #: The sign of a D of zero whose terms were not all zero.
    zero: Literal["ieee", "positive"] = "ieee"
    #: A sum past D's largest binade: IEEE's rounding, or infinite.
    overflow: Literal["ieee", "inf"] = "ieee"
    source: str = ""

    def __attrs_post_init__(self) -> None:
        if self.fraction_bits is not None and not 1 <= self.fraction_bits <= 45:
            raise ValueError(f"WgmmaAccumulation: fraction_bits {self.fraction_bits} outside 1..45 (the aligned sum "
                             f"must stay exact in a float64)")
        if self.block < 1:
            raise ValueError(f"WgmmaAccumulation: block {self.block} < 1")
        if self.sum_bits is not None:
            if not 1 <= self.sum_bits <= 52:
                raise ValueError(f"WgmmaAccumulation: sum_bits {self.sum_bits} outside 1..52 (a float64's fraction)")
            # the cut works on the aligned sum, one float64; the exact model and C added after leave a pair
            if self.fraction_bits is None or self.c_term != "aligned":
                raise ValueError("WgmmaAccumulation: sum_bits cuts the aligned sum; it needs fraction_bits and "
                                 "c_term 'aligned'")

    @property
    def exact(self) -> bool:
        return self.fraction_bits is None

    def describe(self) -> str:
        edges = (f"{'; zero D +0' if self.zero == 'positive' else ''}"
                 f"{'; overflow inf' if self.overflow == 'inf' else ''}")
        if self.exact:
            return f"the exact sum rounded once ({self.rounding}){edges}"
        c = "C aligned with the first block" if self.c_term == "aligned" else "C added after"
        cut = f", the sum cut to {self.sum_bits} bits below its leading bit" if self.sum_bits is not None else ""
        return (f"blocks of {self.block} products aligned to the largest {self.grid[:-1]} keeping {self.fraction_bits}"
                f" bits below it (terms {self.term_rounding}), {c}{cut}, D rounded {self.rounding}{edges}")


#: The exact sum rounded to nearest once: what pycute's emulator computes where the hardware's accumulation has not
#: been measured (tf32). It is *not* the hardware's for the measured families (docs/wgmma.md, "fp8 accumulation").
EXACT_ACCUMULATION = WgmmaAccumulation(source="not measured: the exact sum rounded once, not the hardware's")

#: The run every measured record below reproduces bit for bit (tools/fp8_accumulation.py, seed 2026), on an H100;
#: the H200 has the same GH100 tensor cores but the run has not been repeated there. Its re-analysis with these
#: records and each one's one-field neighbours: docs/runs/wgmma/fp8-accumulation-h100-refit.jsonl.
MEASURED_RUN = ("docs/runs/wgmma/fp8-accumulation-h100.npz (every D code) and "
                "docs/runs/wgmma/fp8-accumulation-h100.jsonl (the analysis): an H100 80GB HBM3, sm_90a, 2026-12-07")

#: fp8 (e4m3 / e5m2, any pairing) into f32, QGMMA: 13 bits below the largest exponent of the instruction's 32
#: products and C, cut toward zero; the sum cut again to 13 bits below its own leading bit. 540672 of 540672 D
#: equal (6 kernels: the four pairings at K 32, e4m3 at K 128 and e5m2 at K 64 chained, D rounded between
#: instructions). One field changed, the D that differ: sum cut 14 56125, none 62046, 12 187089; products aligned
#: by their values 63758; blocks of 16 104583; 14 bits 206966, 12 288800; terms to nearest 268564, down 386905.
#: D's rounding, the sign of zero and overflow make no difference in these kernels (the 13-bit sum is exact in f32;
#: no fp8 sum overflowed): they are the other families' measured behaviour, kept for one adder's rules.
FP8_F32 = WgmmaAccumulation(13, 32, "aligned", "rz", "rz", "exponents", sum_bits=13, zero="positive",
                            overflow="inf", source="measured: " + MEASURED_RUN)
#: fp8 into f16: the same alignment (13 bits, 32 products with C, toward zero) but no cut of the sum: it is rounded
#: to nearest into f16 directly. 180224 of 180224 equal (e4m3 K 32, e5m2 K 64). One field changed: the sign of zero
#: IEEE's 3; the sum cut to 13 bits 1976; aligned by values 8023; blocks of 16 13959; 14 bits 23509, 12 39440;
#: terms to nearest 29824, down 70115; D toward zero 60472. Overflow: no sum reached 2^16.
FP8_F16 = WgmmaAccumulation(13, 32, "aligned", "rz", "rn", "exponents", zero="positive", overflow="inf",
                            source="measured: " + MEASURED_RUN)
#: f16 or bf16 into f32, HGMMA: 25 bits below the largest exponent of the instruction's 16 products and C, cut
#: toward zero, the sum cut toward zero into f32. 270336 of 270336 equal (bf16 K 16 and K 64, f16 K 16). One field
#: changed, bf16 / f16: IEEE's zero 2 / 0, IEEE's overflow 2 / 0 (C = 3e38 plus products past 2^128 is inf); blocks
#: of 8 2876 / 10075; aligned by values 3452 / 6383; 26 bits 10713 / 19124, 24 20997 / 29004; terms to nearest
#: 16319 / 25156, down 67802 / 48993; D to nearest 51692 / 22681. A cut of the sum to 25 bits changes none (D
#: keeps 23 anyway): whether the adder cuts its sum before D's rounding the data do not tell.
HALF_F32 = WgmmaAccumulation(25, 16, "aligned", "rz", "rz", "exponents", zero="positive", overflow="inf",
                             source="measured: " + MEASURED_RUN)
#: f16 into f16: 25 bits, the sum rounded to nearest into f16. 90112 of 90112 equal (K 32). One field changed:
#: aligned by values 1; IEEE's zero 2; blocks of 8 13; 26 bits 18, 24 38; terms to nearest 29, down 47; D toward
#: zero 48119; a sum cut to 25 bits none.
HALF_F16 = WgmmaAccumulation(25, 16, "aligned", "rz", "rn", "exponents", zero="positive", overflow="inf",
                             source="measured: " + MEASURED_RUN)

#: The code of every NaN D, whatever the NaN operands or C carried (sign, payload): all of the run's NaN D, in all
#: twelve kernels, are these (``MEASURED_RUN``; the jsonl's ``nan_codes``).
WGMMA_NAN: dict[str, int] = {"f32": 0x7FFFFFFF, "f16": 0x7FFF}

#: Each (family, D type) wgmma takes and the accumulation the emulator models it with: the measured records, and the
#: exact model (labelled not the hardware's) for tf32, which the run did not measure.
WGMMA_ACCUMULATION: dict[tuple[Family, str], WgmmaAccumulation] = {
    ("fp8", "f32"): FP8_F32, ("fp8", "f16"): FP8_F16, ("f16", "f32"): HALF_F32, ("bf16", "f32"): HALF_F32,
    ("f16", "f16"): HALF_F16, ("tf32", "f32"): EXACT_ACCUMULATION}
