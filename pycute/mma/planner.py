"""make_mma: plan the ``tcgen05.mma`` instructions of one tile, ``D (+)= A B^T`` over its k-blocks, from the three
tensors: A (M x K) and B (N x K) in shared memory, described by make_umma_desc; D in TMEM, which must be the
accumulator layout the MMA writes (arch.sm100.datapath); for the block-scaled kinds the SF tensors of
scale_factor_tensor, each k-block reading its SF id and column (PTX ISA #tcgen05-mma, #tcgen05-block-scaling)."""
from __future__ import annotations

from typing import overload

from ..arch.sm100.mma import MMA_KINDS
from ..arch.sm100.tmem import CELL_BITS, check_cta_group
from ..atoms.mma import MmaAtom
from ..errors import DescriptorError, PlanError
from ..tensor.rmem import RegisterFragment
from ..tensor.smem import SmemTensor
from ..tensor.tmem import TmemTensor
from .accumulator import accumulator_layout
from .instr import InstrDescriptor, check_mma_shape, make_instr_desc
from .operand import UmmaDescriptor, make_umma_desc
from .plan import MmaInstruction, MmaPlan
from .scale import ScaleFactorTensor
from .tmem_operand import TmemOperand, make_tmem_operand
from .wgmma_plan import WgmmaPlan
from .wgmma_planner import make_wgmma

__all__ = ["make_mma"]

_DENSE = {"f16": "f16", "bf16": "f16", "tf32": "tf32", "i8": "i8", "u8": "i8"}


def _kind(a: SmemTensor | TmemTensor, b: SmemTensor, kind: str | None, scaled: bool) -> str:
    if kind is not None:
        if kind not in MMA_KINDS:
            raise PlanError(f"make_mma: unknown kind {kind!r}; one of {', '.join(MMA_KINDS)}")
        return kind
    name = a.dtype.name
    if name in _DENSE:
        return _DENSE[name]
    if scaled:
        return "mxf4" if a.bits == 4 and b.bits == 4 else "mxf8f6f4"
    return "f8f6f4"


def _check_d(d: TmemTensor, kind: str, m: int, n: int, cta_group: int, ws: bool) -> int:
    """D's column offset from the allocation base, after checking it is the MMA's accumulator."""
    if d.dtype.name not in MMA_KINDS[kind].d_codes:
        raise PlanError(f"make_mma: kind::{kind} accumulates into {', '.join(MMA_KINDS[kind].d_codes)}, not "
                        f"{d.dtype.name}")
    want = accumulator_layout(d.bits, m, n, cta_group, ws)
    if d.layout != want or d.lane_offset:
        raise PlanError(f"make_mma: D {d!r} is not the {m}x{n} accumulator the MMA writes ({want!r} from lane 0; "
                        f"mma_accumulator makes it)")
    column = d.col_offset * d.bits
    if column % CELL_BITS:
        raise PlanError(f"make_mma: D starts {d.col_offset} {d.dtype.name} elements into TMEM, not on a column")
    return column // CELL_BITS


def _check_sf(sf: object, name: str, kind: str, rows: int, k_blocks: int, cta_group: int) -> ScaleFactorTensor:
    if not isinstance(sf, ScaleFactorTensor):
        raise TypeError(f"make_mma: {name} must be a ScaleFactorTensor (scale_factor_tensor), got {sf!r}")
    if sf.kind != kind or sf.rows != rows or sf.mmas < k_blocks or sf.cta_group != cta_group:
        raise PlanError(f"make_mma: {name} {sf!r} is not the SFs of {k_blocks} kind::{kind} cta_group::{cta_group} "
                        f"MMA(s) for {rows} rows")
    return sf


def _operand_a(a: SmemTensor | TmemTensor, kind: str, cta_group: int) -> UmmaDescriptor | TmemOperand:
    """A's descriptor (shared memory) or its TMEM operand."""
    if isinstance(a, TmemTensor):
        if a.bits < 8 and not MMA_KINDS[kind].packed:
            raise PlanError(f"make_mma: kind::{kind} reads {a.dtype.name} elements one to a byte (8-bit containers); "
                            f"pycute plans packed 4-bit operands for the packed kinds only")
        rows = a.layout[0].size() if len(a.layout.shape) == 2 else 0
        return make_tmem_operand(a, rows * cta_group, cta_group)
    return make_umma_desc(a, kind=kind)


def _check_shape(k: str, da, db, cta_group: int, ws: bool) -> tuple[int, int]:
    """(M, N) of the MMA from A's and B's rows (the pair: each CTA holds M/2 rows of A and N/2 of B)."""
    if da.k != db.k:
        raise DescriptorError(f"make_mma: A has K {da.k} and B K {db.k}")
    m, n = da.mn * cta_group, db.mn * cta_group
    try:
        check_mma_shape(MMA_KINDS[k], m, n, cta_group, ws)
    except DescriptorError as e:
        pair = " (each CTA of the pair holds M/2 rows of A and N/2 rows of B)" if cta_group == 2 else ""
        raise PlanError(f"make_mma: A's {da.mn} and B's {db.mn} rows make an M {m} x N {n} MMA{pair}: {e}") from None
    return m, n


def _check_tmem_a(da: TmemOperand, d_column: int, n: int) -> None:
    width = da.k * da.tensor.bits // CELL_BITS
    if da.column < d_column + n and d_column < da.column + width:
        raise PlanError(f"make_mma: A in TMEM (columns {da.column}..{da.column + width - 1}) overlaps D (columns "
                        f"{d_column}..{d_column + n - 1})")


def _wgmma(d: RegisterFragment, a: SmemTensor | TmemTensor | RegisterFragment, b: SmemTensor,
           **options: object) -> WgmmaPlan:
    """make_mma with a register accumulator: Hopper's wgmma, which takes none of tcgen05's options."""
    given = sorted(n for n, v in options.items() if v not in (None, False) and not (n == "cta_group" and v == 1))
    if given:
        raise PlanError(f"make_mma: a register accumulator plans wgmma, which takes no tcgen05 options "
                        f"(kind, sfa, sfb, scale_type, cta_group, ws), got {', '.join(given)}")
    if isinstance(a, TmemTensor):
        raise TypeError("make_mma: wgmma reads A from shared memory or registers, not TMEM")
    return make_wgmma(d, a, b)


@overload
def make_mma(d: TmemTensor, a: SmemTensor | TmemTensor, b: SmemTensor, *, kind: str | None = None,
             sfa: ScaleFactorTensor | None = None, sfb: ScaleFactorTensor | None = None,
             scale_type: str | None = None, cta_group: int = 1, ws: bool = False) -> MmaPlan: ...


@overload
def make_mma(d: RegisterFragment, a: SmemTensor | RegisterFragment, b: SmemTensor, *, kind: str | None = None,
             sfa: ScaleFactorTensor | None = None, sfb: ScaleFactorTensor | None = None,
             scale_type: str | None = None, cta_group: int = 1, ws: bool = False) -> WgmmaPlan: ...


def make_mma(d: TmemTensor | RegisterFragment, a: SmemTensor | TmemTensor | RegisterFragment, b: SmemTensor, *,
             kind: str | None = None, sfa: ScaleFactorTensor | None = None, sfb: ScaleFactorTensor | None = None,
             scale_type: str | None = None, cta_group: int = 1, ws: bool = False) -> MmaPlan | WgmmaPlan:
    """Plan ``D (+)= A B^T`` (A M x K in shared memory or TMEM, B N x K in shared memory) as one ``tcgen05.mma``
    per k-block. With ``cta_group=2`` the tensors are one CTA's of the pair: A its M/2 rows, B its N/2 rows (the
    even CTA's first), D its M/2 rows of the M x N accumulator, SFA its rows' SFs and SFB all N columns'. An A in
    TMEM (where ``make_tmem_operand`` says the data path reads it) is read with the ``[a-tmem]`` form; ``ws=True``
    plans the weight-stationary ``tcgen05.mma.ws`` (M 32 / 64 / 128, N 64 / 128 / 256; D where its data path puts
    it, which pycute knows for M 64). ``kind`` is inferred from the types (``mxf8f6f4`` / ``mxf4`` when SFs are
    given; name ``mxf4nvf4`` yourself); ``sfa`` / ``sfb`` are the SF tensors (scale_factor_tensor) of the
    block-scaled kinds. DescriptorError or PlanError names the rule a tensor breaks.

    With a register accumulator (``wgmma_accumulator``) it plans Hopper's ``wgmma.mma_async`` (``make_wgmma``)."""
    if isinstance(d, RegisterFragment):
        return _wgmma(d, a, b, kind=kind, sfa=sfa, sfb=sfb, scale_type=scale_type, cta_group=cta_group, ws=ws)
    if not (isinstance(d, TmemTensor) and isinstance(a, (SmemTensor, TmemTensor)) and isinstance(b, SmemTensor)):
        raise TypeError(f"make_mma: D is a TMEM tensor (mma_accumulator), A a shared tile or TMEM tensor, B a shared "
                        f"tile, got {type(d).__name__}, {type(a).__name__}, {type(b).__name__}")
    cta_group = check_cta_group(cta_group)
    if not isinstance(ws, bool):
        raise TypeError(f"make_mma: ws must be a bool, got {ws!r}")
    k = _kind(a, b, kind, sfa is not None or sfb is not None)
    scaled = MMA_KINDS[k].block_scaled
    if scaled != (sfa is not None and sfb is not None):
        raise PlanError(f"make_mma: kind::{k} {'takes' if scaled else 'takes no'} scale factors (sfa and sfb)")
    da, db = _operand_a(a, k, cta_group), make_umma_desc(b, kind=k)
    m, n = _check_shape(k, da, db, cta_group, ws)
    d_column = _check_d(d, k, m, n, cta_group, ws)
    if isinstance(da, TmemOperand):
        _check_tmem_a(da, d_column, n)
    vec = None
    if scaled:
        sfa = _check_sf(sfa, "sfa", k, da.mn, da.k_blocks, cta_group)     # each CTA: the SFs of its own rows of A
        sfb = _check_sf(sfb, "sfb", k, n, da.k_blocks, cta_group)         # and of all N columns of B
        if cta_group == 2 and m != 256:
            raise PlanError(f"make_mma: a block-scaled cta_group::2 MMA of M {m} reads SFB through the 2x2 data "
                            f"path, whose SF placement no source pins down (docs/mma.md); pycute plans M 256")
        if sfa.scale_vec != sfb.scale_vec:
            raise PlanError(f"make_mma: SFA has scale_vec::{sfa.scale_vec}X and SFB ::{sfb.scale_vec}X")
        vec, scale_type = sfa.scale_vec, scale_type or "ue8m0"

    def idesc(j: int | None) -> InstrDescriptor:
        return make_instr_desc(k, a.dtype, b.dtype, None if scaled else d.dtype, M=m, N=n, a_major=da.major,
                               b_major=db.major, cta_group=cta_group, scale_type=scale_type, scale_vec=vec, ws=ws,
                               sfa_id=sfa.sf_id(j) if sfa and j is not None else 0,
                               sfb_id=sfb.sf_id(j) if sfb and j is not None else 0)
    insts = tuple(MmaInstruction(j, da.k_offsets[j], db.k_offsets[j], idesc(j).value,
                                 sfa.column(j) if sfa else None, sfb.column(j) if sfb else None)
                  for j in range(da.k_blocks))
    atom = MmaAtom(k, cta_group, vec, a_tmem=isinstance(da, TmemOperand), ws=ws)
    return MmaPlan(atom, d, da, db, idesc(None), insts, d_column, sfa, sfb)
