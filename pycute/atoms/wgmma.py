"""``wgmma.mma_async`` atoms (PTX ISA #asynchronous-warpgroup-level-matrix-instructions-wgmma-mma): one per shape
``m64nNkK``, D / A / B types, A from a descriptor or from registers, and the operands' majors; the issue record a
plan streams, the emulator executes and the PTX interpreter reads back from compiled code."""
from __future__ import annotations

import re

import attrs

from ..arch.sm90.wgmma import D_PTX, WGMMA_M, WGMMA_SASS, WGMMA_TYPES, Family, wgmma_ptx
from ..errors import PlanError

__all__ = ["WgmmaAtom", "WgmmaIssue", "WgmmaShape", "parse_wgmma_ptx"]


@attrs.frozen
class WgmmaShape:
    """What a ``wgmma.mma_async`` opcode names: N, K and the D, A and B types (pycute names)."""

    n: int
    k: int
    d: str
    a: str
    b: str


_OPCODE = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m(\d+)n(\d+)k(\d+)(?:\.satfinite)?\.(\w+)\.(\w+)\.(\w+)$")
_BY_PTX = {t.ptx: t.name for t in WGMMA_TYPES.values()}
_D_BY_PTX = {v: k for k, v in D_PTX.items()}


def parse_wgmma_ptx(op: str) -> WgmmaShape:
    """The shape and types of a ``wgmma.mma_async`` opcode; PlanError for one outside the forms pycute plans."""
    m = _OPCODE.match(op)
    if not m or int(m.group(1)) != WGMMA_M or m.group(4) not in _D_BY_PTX or m.group(5) not in _BY_PTX \
            or m.group(6) not in _BY_PTX:
        raise PlanError(f"{op!r} is not a wgmma.mma_async form pycute plans (m64, D f32/f16/s32, A and B "
                        f"{', '.join(_BY_PTX)})")
    return WgmmaShape(int(m.group(2)), int(m.group(3)), _D_BY_PTX[m.group(4)], _BY_PTX[m.group(5)],
                      _BY_PTX[m.group(6)])


@attrs.frozen
class WgmmaIssue:
    """One issued ``wgmma.mma_async``: its opcode, A's descriptor (None when A is in registers), B's descriptor,
    ``scale_d`` (False: D = A B, True: D += A B), the negations ``scale_a`` / ``scale_b`` (1 or -1; None for the
    integer forms, which have none) and the transposes ``trans_a`` / ``trans_b`` (0 K-major, 1 MN-major; None for
    the forms without the operand). ``a_registers`` / ``d_registers`` name the registers (a plan's stream: indices
    into the A fragment and D arrays; the PTX interpreter: the compiled register names) and do not take part in
    equality, so that a compiled stream equals the plan's."""

    ptx: str
    a_desc: int | None
    b_desc: int
    scale_d: bool
    scale_a: int | None = 1
    scale_b: int | None = 1
    trans_a: int | None = None
    trans_b: int | None = None
    a_registers: tuple = attrs.field(default=(), eq=False)
    d_registers: tuple = attrs.field(default=(), eq=False, repr=False)


@attrs.frozen
class WgmmaAtom:
    """``wgmma.mma_async.m64n{n}k{k}.{d}.{a}.{b}`` with A through a descriptor or, ``a_registers``, from 4 registers
    per thread, and A's / B's majors (MN-major, ``trans_*``, only for the 16-bit types; A in registers is K-major)."""

    n: int
    d: str
    a: str
    b: str
    a_registers: bool = False
    trans_a: bool = False
    trans_b: bool = False

    def __attrs_post_init__(self) -> None:
        for which in ("a", "b"):
            if getattr(self, which) not in WGMMA_TYPES:
                raise PlanError(f"wgmma {which.upper()} type {getattr(self, which)!r} is one of "
                                f"{', '.join(WGMMA_TYPES)}")
        if (self.trans_a or self.trans_b) and not WGMMA_TYPES[self.a].transpose:
            raise PlanError(f"wgmma of {self.a} does not transpose: MN-major operands are for f16 / bf16 only (PTX "
                            f"#asynchronous-warpgroup-level-matrix-instructions-wgmma-mma)")
        if self.trans_a and self.a_registers:
            raise PlanError("an A in registers has no major: imm-trans-a is for an A in shared memory")

    @property
    def k(self) -> int:
        return WGMMA_TYPES[self.a].k

    @property
    def family(self) -> Family:
        return WGMMA_TYPES[self.a].family

    @property
    def ptx(self) -> str:
        return wgmma_ptx(self.n, self.k, self.d, self.a, self.b)

    @property
    def sass(self) -> str:
        """The SASS opcode it assembles to (``HGMMA`` / ``QGMMA`` / ``IGMMA``), with its shape: ``HGMMA.64x256x16``."""
        return f"{WGMMA_SASS[self.family]}.{WGMMA_M}x{self.n}x{self.k}"

    @property
    def negates(self) -> bool:
        """Whether the form has ``imm-scale-a`` / ``imm-scale-b`` (the floating-point forms)."""
        return self.family != "int"

    @property
    def transposes(self) -> bool:
        """Whether the form has ``imm-trans-*`` operands (the 16-bit forms)."""
        return WGMMA_TYPES[self.a].transpose
