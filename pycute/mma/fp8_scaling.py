"""FP8 scaling as a plan (Hopper ``wgmma`` with e4m3 / e5m2 operands, f32 scales): what each scale multiplies,
where it is applied, and how often the tensor core's partial sums are promoted into f32 registers.

Hopper's fp8 ``wgmma`` accumulates in an adder narrower than f32 (measured on an H100: each k-step's products and
C keep 13 bits below the largest exponent, cut toward zero, and the sum 13 below its own leading bit -- 14
significant bits, DeepSeek-V3's "about 14 bits"; ``arch.sm90.wgmma.FP8_F32``), so a kernel that leaves all of K in
the tensor core's accumulator loses bits with every k-step and its error grows with K. **Promotion**: a consumer runs ``interval`` k-blocks of ``wgmma`` into a
partial accumulator that starts at zero (the interval's first instruction with scale-d 0), waits for them, and adds
the partial into f32 registers -- ``acc += partial`` (``tensor`` / ``row`` / ``col`` / ``rowcol``: the scales are
applied once, in the epilogue, ``D = sa[row] sb[col] acc``) or ``acc += partial x sa[row, kb] x sb[nb, kb]``
(``block``: the scales change every 128 of K, so they are applied at each promotion and the interval is one k-block
of 128). The tensor core's error is then bounded by one interval's k-steps, whatever K, at the cost of a second
accumulator's registers and the adds (CUTLASS's ``KernelTmaWarpSpecializedFP8FastAccum`` is the unpromoted form).

Scale layouts (f32):

* ``tensor``: one per operand; ``row``: A's ``(M,)`` (per token); ``col``: B's ``(N,)`` (per output channel);
  ``rowcol``: both (``torch._scaled_mm``'s rowwise form).
* ``block`` (DeepSeek-V3): A in 1 x 128 blocks, ``(ceil(K / 128), M_pad)`` K-block-major (each k-block's M scales
  contiguous: the tile's ``BM`` scales of a k-block are one TMA box; ``M_pad`` = M rounded up to 4, a row of whole
  16-byte units), and B in 128 x 128 blocks, ``(ceil(N / 128), ceil(K / 128))`` row-major.
"""
from __future__ import annotations

from typing import Callable, Literal

import attrs
import numpy as np

from ..errors import PlanError
from ..int_tuple import as_int
from ..views import view

__all__ = ["ScaleKind", "Fp8Scaling", "make_fp8_scaling", "InstructionSum", "exact_instruction_sum", "K_STEP",
           "SCALE_BLOCK", "A_SCALE_PAD"]

ScaleKind = Literal["tensor", "row", "col", "rowcol", "block"]
#: K of one fp8 ``wgmma.mma_async`` (m64nNk32, PTX ISA #asynchronous-warpgroup-level-matrix-shape).
K_STEP = 32
#: The block scales' extent along K (and along N for B), DeepSeek-V3's 128.
SCALE_BLOCK = 128
#: A's block scales hold M rounded up to this many per k-block: a row of whole 16-byte units (TMA's stride rule).
A_SCALE_PAD = 4
#: One instruction's sum: ``(a (M, 32), b (N, 32), c (M, N) or None) -> D (M, N)`` as float64 values of f32.
InstructionSum = Callable[[np.ndarray, np.ndarray, "np.ndarray | None"], np.ndarray]


def exact_instruction_sum(a: np.ndarray, b: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    """The exact sum of the products and C rounded once to f32 (what the emulator computed before the H100 run
    measured Hopper's fp8 adder; not the hardware's)."""
    d = a.astype(np.float64) @ b.astype(np.float64).T
    return (d if c is None else d + c).astype(np.float32).astype(np.float64)


@attrs.frozen(repr=False)
class Fp8Scaling:
    """The scaling of an fp8 GEMM with ``(BM, BN)`` tiles and k-blocks of ``bk`` elements: the ``kind`` of scales,
    and ``interval``, the k-blocks summed in the tensor core's accumulator before each promotion into f32 registers
    (None: no promotion, all of K in the tensor core)."""

    kind: ScaleKind
    tile: tuple[int, int]
    bk: int
    interval: int | None

    @property
    def promoted(self) -> bool:
        return self.interval is not None

    @property
    def applied(self) -> Literal["promotion", "epilogue"]:
        """Where the scales multiply: at each promotion (block scales) or once in the epilogue."""
        return "promotion" if self.kind == "block" else "epilogue"

    @property
    def steps(self) -> int:
        """``wgmma`` k-steps (of 32) per promotion."""
        if self.interval is None:
            raise PlanError("an unpromoted plan keeps all of K in the tensor core: no promotion interval")
        return self.interval * self.bk // K_STEP

    def promotions(self, kblocks: int) -> int:
        """Promotions of a tile of ``kblocks`` k-blocks (the last interval may be shorter)."""
        return 0 if self.interval is None else -(-as_int(kblocks, "kblocks") // self.interval)

    def registers(self, accumulator: int) -> int:
        """f32 registers per consumer thread for an ``accumulator`` of that many: doubled by promotion (the
        tensor core's partial beside the f32 sum), plus a block plan's two A scales (its rows r and r + 8) per
        64-row block and B's scale(s)."""
        acc = as_int(accumulator, "accumulator") * (2 if self.promoted else 1)
        if self.kind != "block":
            return acc
        return acc + 2 * (self.tile[0] // 64) + max(1, self.tile[1] // SCALE_BLOCK)

    def a_scales(self, m: int, k: int) -> tuple[int, ...]:
        """The shape of A's scales for an ``m x k`` A (block: ``(ceil(K / 128), M_pad)``)."""
        m, k = as_int(m, "m"), as_int(k, "k")
        return {"tensor": (1,), "col": (1,), "row": (m,), "rowcol": (m,),
                "block": (-(-k // SCALE_BLOCK), -(-m // A_SCALE_PAD) * A_SCALE_PAD)}[self.kind]

    def b_scales(self, n: int, k: int) -> tuple[int, ...]:
        """The shape of B's scales for an ``n x k`` B (block: ``(ceil(N / 128), ceil(K / 128))``)."""
        n, k = as_int(n, "n"), as_int(k, "k")
        return {"tensor": (1,), "row": (1,), "col": (n,), "rowcol": (n,),
                "block": (-(-n // SCALE_BLOCK), -(-k // SCALE_BLOCK))}[self.kind]

    def scale_matrices(self, sa: np.ndarray, sb: np.ndarray, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The scales as ``(M, ceil(K / 128))`` and ``(N, ceil(K / 128))`` f64 matrices (one column per k-block of
        128; per-tensor and per-row / column scales repeated along K)."""
        kb = -(-k // SCALE_BLOCK)
        sa, sb = np.asarray(sa, np.float64), np.asarray(sb, np.float64)
        if sa.shape != self.a_scales(m, k) or sb.shape != self.b_scales(n, k):
            raise PlanError(f"{self.kind} scales for {m} x {n} x {k}: A's are {self.a_scales(m, k)} and B's "
                            f"{self.b_scales(n, k)}, got {sa.shape} and {sb.shape}")
        if self.kind == "block":
            return sa[:, :m].T, np.repeat(sb, SCALE_BLOCK, axis=0)[:n]
        return (np.broadcast_to(sa.reshape(-1, 1), (m, kb)) if sa.size == m else np.full((m, kb), sa[0]),
                np.broadcast_to(sb.reshape(-1, 1), (n, kb)) if sb.size == n else np.full((n, kb), sb[0]))

    def reference(self, a: np.ndarray, b: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
        """``D = sum_k sa[m, k] a[m, k] sb[n, k] b[n, k]`` in float64 (``a``: M x K, ``b``: N x K fp8 values)."""
        (m, k), n = a.shape, b.shape[0]
        fa, fb = self.scale_matrices(sa, sb, m, n, k)
        fa, fb = np.repeat(fa, SCALE_BLOCK, axis=1)[:, :k], np.repeat(fb, SCALE_BLOCK, axis=1)[:, :k]
        return (a.astype(np.float64) * fa) @ (b.astype(np.float64) * fb).T

    def emulate(self, a: np.ndarray, b: np.ndarray, sa: np.ndarray, sb: np.ndarray,
                step: InstructionSum = exact_instruction_sum) -> np.ndarray:
        """D as the kernel computes it (f32, before the output conversion): ``step`` sums each k-step of 32 into
        the tensor core's accumulator (``exact_instruction_sum``, or a model of Hopper's fp8 adder), promoted
        every ``interval`` k-blocks into f32 with the plan's scales."""
        (m, k), n = a.shape, b.shape[0]
        fa, fb = self.scale_matrices(sa, sb, m, n, k)
        pad = -k % K_STEP
        a64 = np.pad(a.astype(np.float64), ((0, 0), (0, pad)))
        b64 = np.pad(b.astype(np.float64), ((0, 0), (0, pad)))
        per = self.steps if self.promoted else a64.shape[1] // K_STEP
        acc = np.zeros((m, n), np.float32)
        for start in range(0, a64.shape[1], per * K_STEP):
            part: np.ndarray | None = None
            for s in range(start, min(start + per * K_STEP, a64.shape[1]), K_STEP):
                part = step(a64[:, s:s + K_STEP], b64[:, s:s + K_STEP], part)
            assert part is not None
            if self.kind == "block":                   # interval 1 k-block of 128: this block's scales
                kb = start // SCALE_BLOCK
                scale = (fa[:, kb:kb + 1].astype(np.float32) * fb[None, :, kb].astype(np.float32))
                acc = (acc.astype(np.float64) + part * scale.astype(np.float64)).astype(np.float32)   # fmaf
            else:
                acc = (acc + part.astype(np.float32)).astype(np.float32)
        if self.kind != "block":
            acc = (acc * (fa[:, :1].astype(np.float32) * fb[None, :, 0].astype(np.float32))).astype(np.float32)
        return acc.astype(np.float64)

    def cuda(self, name: str = "fp8s") -> str:
        """``<name>_promote`` (block scales: each k-block's promotion) or ``<name>_scale`` (the other kinds: the
        epilogue's multiply), each register's row and column from the wgmma accumulator fragment."""
        return str(view("cuda", self, name))

    def explain(self) -> str:
        bm, bn = self.tile
        what = {"tensor": "one scale per operand", "row": "A's per-row scales", "col": "B's per-row (D's per-column) "
                "scales", "rowcol": "A's per-row and B's per-row scales", "block": "A's 1 x 128 and B's 128 x 128 "
                "block scales"}[self.kind]
        promote = ("never: all of K in the tensor core's accumulator" if self.interval is None else
                   f"every {self.interval} k-block(s) of {self.bk} ({self.steps} wgmma k-steps): a zeroed partial "
                   f"accumulator, then acc += partial" + (" x sa x sb" if self.kind == "block" else ""))
        where = "each promotion" if self.applied == "promotion" else "the epilogue"
        cost = ("; registers: twice the accumulator" + (" and the k-block's scales" if self.kind == "block" else "")
                if self.promoted else "")
        return "\n".join([f"fp8 scaling ({self.kind}): {what}, f32, {bm} x {bn} tiles", f"  promotion   {promote}",
                          f"  scales      applied at {where}{cost}"])

    def __repr__(self) -> str:
        return f"Fp8Scaling({self.kind}, tile {self.tile}, bk {self.bk}, interval {self.interval})"


def make_fp8_scaling(kind: ScaleKind, tile: tuple[int, int], *, bk: int = 128, interval: int | None = 1) -> Fp8Scaling:
    """Plan an fp8 GEMM's scaling: ``kind`` of f32 scales, ``(BM, BN)`` tiles, ``bk``-element k-blocks, partial
    sums promoted every ``interval`` k-blocks (None: never; block scales need 1 with ``bk`` = 128, their block)."""
    who = "make_fp8_scaling"
    if kind not in ("tensor", "row", "col", "rowcol", "block"):
        raise PlanError(f"{who}: kind={kind!r}: 'tensor', 'row', 'col', 'rowcol' or 'block'")
    if not isinstance(tile, tuple) or len(tile) != 2:
        raise TypeError(f"{who}: tile is a (BM, BN) pair, got {tile!r}")
    bm, bn, bk = as_int(tile[0], f"{who}: BM"), as_int(tile[1], f"{who}: BN"), as_int(bk, f"{who}: bk")
    if bm < 64 or bm % 64 or bn < 8 or bn % 8 or bk < K_STEP or bk % K_STEP:
        raise PlanError(f"{who}: tile {(bm, bn)} and bk {bk}: BM a multiple of 64, BN of 8, bk of {K_STEP} "
                        f"(wgmma m64nNk32)")
    if interval is not None and as_int(interval, f"{who}: interval") < 1:
        raise PlanError(f"{who}: interval={interval}: at least one k-block (None: no promotion)")
    if kind == "block":
        if interval != 1 or bk != SCALE_BLOCK:
            raise PlanError(f"{who}: block scales change every {SCALE_BLOCK} of K: promote every k-block of "
                            f"{SCALE_BLOCK} (interval=1, bk={SCALE_BLOCK}), not interval={interval}, bk={bk}")
        if bn % SCALE_BLOCK and SCALE_BLOCK % bn:
            raise PlanError(f"{who}: BN={bn} with 128 x 128 B scales: a tile must lie in one scale block or cover "
                            f"whole ones (BN divides 128 or 128 divides BN)")
    return Fp8Scaling(kind, (bm, bn), bk, interval)
