"""make_wgmma (``make_mma`` with a register accumulator): plan the ``wgmma.mma_async`` instructions of one tile,
``D (+)= A B^T`` over its k-steps, from the three tensors: D a register fragment (``wgmma_accumulator``: M / 64
warpgroups), A (M x K) in shared memory or registers (``wgmma_a_fragment``), B (N x K) in shared memory (PTX ISA
#asynchronous-warpgroup-level-matrix-instructions-wgmma-mma, #asynchronous-warpgroup-level-matrix-shape)."""
from __future__ import annotations

from ..arch.sm90.wgmma import A_REGISTERS, WGMMA_M, WGMMA_TYPES, WgmmaType, n_values
from ..atoms.wgmma import WgmmaAtom
from ..errors import DescriptorError, PlanError
from ..tensor.rmem import RegisterFragment
from ..tensor.smem import SmemTensor
from .gmma_operand import GmmaDescriptor, make_gmma_desc
from .wgmma_fragment import fragment_shape, wgmma_a_fragment, wgmma_accumulator
from .wgmma_plan import WgmmaInstruction, WgmmaPlan

__all__ = ["make_wgmma"]

_RULE = "PTX #asynchronous-warpgroup-level-matrix-instructions-wgmma-mma"


def _type(t: SmemTensor | RegisterFragment, which: str) -> WgmmaType:
    if t.dtype.name not in WGMMA_TYPES:
        raise PlanError(f"make_mma: wgmma's {which} is one of {', '.join(WGMMA_TYPES)}, not {t.dtype.name}")
    return WGMMA_TYPES[t.dtype.name]


def _check_types(a: WgmmaType, b: WgmmaType, d: RegisterFragment) -> None:
    if a.family != b.family:
        raise PlanError(f"make_mma: A {a.name} and B {b.name}: wgmma's A and B are one type, except the fp8 forms "
                        f"(e4m3 / e5m2) and the integer forms (s8 / u8), which mix within themselves ({_RULE})")
    if d.dtype.name not in a.accumulators:
        raise PlanError(f"make_mma: wgmma of {a.name} accumulates into {', '.join(a.accumulators)}, not "
                        f"{d.dtype.name} ({_RULE})")


def _operand_a(a: SmemTensor | RegisterFragment, t: WgmmaType) -> tuple[GmmaDescriptor | RegisterFragment, int]:
    """A's descriptor or checked register fragment, and its M."""
    if isinstance(a, SmemTensor):
        da = make_gmma_desc(a)
        if da.mn % WGMMA_M:
            raise PlanError(f"make_mma: A has {da.mn} rows; wgmma computes 64-row slices (one per warpgroup): M a "
                            f"multiple of {WGMMA_M}")
        return da, da.mn
    m, k = fragment_shape(a)
    want = wgmma_a_fragment(t.name, m, k)
    if a.layout != want.layout:
        raise PlanError(f"make_mma: A {a!r} is not the {m}x{k} {t.name} fragment wgmma reads from registers "
                        f"({want.layout!r}; wgmma_a_fragment makes it)")
    return a, m


def _check_d(d: RegisterFragment, m: int, n: int) -> None:
    if fragment_shape(d) != (m, n) or d.layout != wgmma_accumulator(d.dtype, m, n).layout:
        raise PlanError(f"make_mma: D {d!r} is not the {m}x{n} accumulator wgmma writes "
                        f"({wgmma_accumulator(d.dtype, m, n).layout!r}; wgmma_accumulator makes it)")


def _a_rows(da: GmmaDescriptor, m: int) -> tuple[int, ...]:
    rows = tuple(da.row_offset(WGMMA_M * g) for g in range(m // WGMMA_M))
    if any(r % 16 for r in rows):
        raise DescriptorError(f"make_mma: A's warpgroup slices start at bytes {list(rows)}; a descriptor's start is "
                              f"16-byte aligned")
    return rows


def make_wgmma(d: RegisterFragment, a: SmemTensor | RegisterFragment, b: SmemTensor) -> WgmmaPlan:
    """Plan ``D (+)= A B^T`` as one ``wgmma.mma_async`` per k-step (32 bytes of K) and warpgroup: D the M x N
    accumulator (``wgmma_accumulator``, M / 64 warpgroups), A M x K in shared memory (K-major, or MN-major for f16 /
    bf16) or registers (``wgmma_a_fragment``), B N x K in shared memory. PlanError / DescriptorError name the rule
    a tensor breaks."""
    if not (isinstance(d, RegisterFragment) and isinstance(a, (SmemTensor, RegisterFragment))
            and isinstance(b, SmemTensor)):
        raise TypeError(f"make_mma: wgmma's D is a register fragment (wgmma_accumulator), A a shared tile or register "
                        f"fragment (wgmma_a_fragment), B a shared tile, got {type(d).__name__}, {type(a).__name__}, "
                        f"{type(b).__name__}")
    ta, tb = _type(a, "A"), _type(b, "B")
    _check_types(ta, tb, d)
    db = make_gmma_desc(b)
    da, m = _operand_a(a, ta)
    n, k = db.mn, db.k
    if n not in n_values(ta.family):
        legal = n_values(ta.family)
        raise PlanError(f"make_mma: B has {n} rows, not a wgmma N for {ta.name}: {legal[0]}..{legal[-1]} "
                        f"({', '.join(map(str, legal)) if ta.family == 'int' else 'in steps of 8'}; PTX "
                        f"#asynchronous-warpgroup-level-matrix-shape)")
    a_k = da.k if isinstance(da, GmmaDescriptor) else fragment_shape(da)[1]
    if a_k != k:
        raise PlanError(f"make_mma: A has K {a_k} and B K {k}")
    _check_d(d, m, n)
    steps = range(k // ta.k)
    if isinstance(da, GmmaDescriptor):
        atom = WgmmaAtom(n, d.dtype.name, ta.name, tb.name, False, da.major == "MN", db.major == "MN")
        insts = tuple(WgmmaInstruction(j, da.k_offsets[j], db.k_offsets[j]) for j in steps)
        return WgmmaPlan(atom, d, da, db, insts, _a_rows(da, m))
    atom = WgmmaAtom(n, d.dtype.name, ta.name, tb.name, True, False, db.major == "MN")
    insts = tuple(WgmmaInstruction(j, None, db.k_offsets[j], tuple(range(A_REGISTERS * j, A_REGISTERS * (j + 1))))
                  for j in steps)
    return WgmmaPlan(atom, d, da, db, insts)
