"""``copy_async(dst, src, **config)``: the copy family's one operator. The memory spaces of the two tensors pick the
variants that can copy between them (``VARIANTS``, an explicit table: no variant registers itself by being
imported); they are tried in priority order and the first plan wins. When none fits, one error lists every
variant tried and the rule it broke; ``variant=`` forces one.

A new variant adds its planner in its own sub-package and a row here; it edits no other variant.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Literal

import attrs

from ..arch.sm100.targets import TCGEN05_TARGETS
from ..arch.sm80.cp_async import CP_ASYNC_TARGETS, CpAsyncCache, L2Prefetch
from ..arch.sm90.shared import SHARED_TARGETS
from ..arch.sm90.tma import TMA_TARGETS
from ..errors import PlanError
from ..tensor.region import MemorySpace
from ..tensor.gmem import GlobalTensor
from ..tensor.rmem import RegisterFragment
from .bulk.planner import make_bulk_copy
from .cp_async.planner import make_cp_async_copy
from .dsmem.planner import make_dsmem_copy
from .protocol import Completion, Plan, Rejection
from .tcgen05_cp.planner import make_tiled_copy
from .tma.planner import make_tma_copy
from .tcgen05_ldst.planner import make_tmem_copy
from .smem_ldst.planner import make_smem_copy

__all__ = ["CopyVariant", "VARIANTS", "VariantName", "copy_async"]

VariantName = Literal["tma_load", "tma_store", "bulk_load", "bulk_store", "cp_async", "dsmem", "tcgen05_cp",
                      "tcgen05_ld", "tcgen05_st", "smem_st", "smem_ld"]


@attrs.frozen
class CopyVariant:
    """One row of the dispatch table: a variant, the (source, destination) memory pair it copies, the targets that
    have its instruction, its priority among the variants of the pair (lower first), its planner adapter and the
    options the adapter takes."""

    name: VariantName
    src: MemorySpace
    dst: MemorySpace
    targets: tuple[str, ...]
    priority: int
    plan: Callable[..., Plan] = attrs.field(repr=False)

    @property
    def options(self) -> frozenset[str]:
        """The keyword options ``copy_async`` passes on to this variant."""
        return _options(self.plan)


@functools.lru_cache(maxsize=None)
def _options(plan: Callable[..., Plan]) -> frozenset[str]:
    """A planner's keyword options (its parameters but the two tensors), read once from its signature."""
    return frozenset(p for p in inspect.signature(plan).parameters if p not in ("dst", "src"))


def _check_dtypes(dst, src, name: str) -> None:
    if dst.dtype != src.dtype:
        raise PlanError(f"{name} moves values unchanged: source {src.dtype.name}, destination {dst.dtype.name}")


def _completes(name: str, has: str, asked: Completion | None) -> None:
    """The caller's completion is the variant's, or a PlanError (a variant never drops a completion it was asked
    for: the caller's wait would hang, or pass before the bytes land)."""
    if asked is not None and asked != has:
        raise PlanError(f"{name} completes by {has!r}, not the {asked!r} asked for")


# The global <-> shared variants take ``threads`` (how many threads call: cp.async spreads over them; TMA and bulk
# copies are issued by one elected thread of them) and ``completion`` (what the caller waits on).
def _tma(dst, src, multicast: int | None = None, reduce: str | None = None, oob_fill: str = "zero",
         cta_group: int = 1, threads: int | None = None, completion: Completion | None = None,
         origin: Any = "tile", ftz: bool = False) -> Plan:
    _completes("a TMA " + ("load" if isinstance(src, GlobalTensor) else "store"),
               "expect_tx" if isinstance(src, GlobalTensor) else "group", completion)
    return make_tma_copy(dst, src, multicast, reduce, oob_fill, cta_group,  # type: ignore[arg-type]
                         origin=origin, ftz=ftz)


def _bulk(dst, src, threads: int | None = None, completion: Completion | None = None) -> Plan:
    _completes("a bulk " + ("load" if isinstance(src, GlobalTensor) else "store"),
               "expect_tx" if isinstance(src, GlobalTensor) else "group", completion)
    return make_bulk_copy(dst, src)


def _cp_async(dst, src, threads: int = 128, cache: CpAsyncCache | None = None, l2_prefetch: L2Prefetch | None = None,
              completion: Completion | None = None) -> Plan:
    if completion == "expect_tx":
        raise PlanError("cp.async completes by a group or one mbarrier arrival per thread ('group' or 'arrive'), "
                        "not by transaction bytes ('expect_tx')")
    return make_cp_async_copy(dst, src, threads, cache, l2_prefetch, completion or "group")


def _dsmem(dst, src, completion: Completion | None = None) -> Plan:
    _completes("a DSMEM copy", "expect_tx", completion)
    return make_dsmem_copy(dst, src)


def _tcgen05_cp(dst, src, cta_group: int = 1, shape: str | None = None, multicast: str | None = None,
                decompress: str | None = None) -> Plan:
    return make_tiled_copy(dst, src, cta_group, shape=shape, multicast=multicast, decompress=decompress)


def _tcgen05_ld(dst: RegisterFragment, src, max_registers: int = 32, shape: str | None = None,
                num: int | None = None, pack: bool | None = None) -> Plan:
    _check_dtypes(dst, src, "tcgen05.ld")
    return make_tmem_copy(src, "ld", dst.warps, max_registers, shape, num, pack, fragment=dst.layout)


def _tcgen05_st(dst, src: RegisterFragment, max_registers: int = 32, shape: str | None = None,
                num: int | None = None, pack: bool | None = None) -> Plan:
    _check_dtypes(dst, src, "tcgen05.st")
    return make_tmem_copy(dst, "st", src.warps, max_registers, shape, num, pack, fragment=src.layout)


# Registers <-> shared memory: stmatrix / ldmatrix or ld/st.shared, the fewest bank-conflict wavefronts; a store
# converts f32 registers to the tile's type. ``arch`` (copy_async's own) adds a later target's forms; ``form``
# pins the instruction (make_smem_copy's).
def _smem_st(dst, src: RegisterFragment, arch: str | None = None, satfinite: bool | None = None,
             form: str | None = None) -> Plan:
    return make_smem_copy(dst, src, arch, satfinite, form)


def _smem_ld(dst: RegisterFragment, src, arch: str | None = None, form: str | None = None) -> Plan:
    return make_smem_copy(dst, src, arch, form=form)


#: The copy family, by memory pair. Global -> shared tries TMA (one thread, the fewest instructions, bounds checked),
#: then a flat bulk copy (no tensor map; whole tiles of contiguous runs), then cp.async (any thread count, 4-byte
#: alignment, sm_80): each refuses a completion it cannot give, so none is picked that would drop the caller's.
VARIANTS: tuple[CopyVariant, ...] = (
    CopyVariant("tma_load", "global", "shared", TMA_TARGETS, 0, _tma),
    CopyVariant("bulk_load", "global", "shared", TMA_TARGETS, 1, _bulk),
    CopyVariant("cp_async", "global", "shared", CP_ASYNC_TARGETS, 2, _cp_async),
    CopyVariant("tma_store", "shared", "global", TMA_TARGETS, 0, _tma),
    CopyVariant("bulk_store", "shared", "global", TMA_TARGETS, 1, _bulk),
    CopyVariant("dsmem", "shared", "shared", TMA_TARGETS, 0, _dsmem),
    CopyVariant("tcgen05_cp", "shared", "tmem", TCGEN05_TARGETS, 0, _tcgen05_cp),
    CopyVariant("tcgen05_ld", "tmem", "register", TCGEN05_TARGETS, 0, _tcgen05_ld),
    CopyVariant("tcgen05_st", "register", "tmem", TCGEN05_TARGETS, 0, _tcgen05_st),
    CopyVariant("smem_st", "register", "shared", SHARED_TARGETS, 0, _smem_st),
    CopyVariant("smem_ld", "shared", "register", SHARED_TARGETS, 0, _smem_ld),
)


def _space(tensor: Any, which: str) -> MemorySpace:
    space = getattr(tensor, "space", None)
    if not isinstance(space, str):
        raise TypeError(f"copy_async: {which} must be a pycute tensor (make_global_tensor, make_smem_tensor, "
                        f"make_tmem_tensor, make_fragment), got {type(tensor).__name__}")
    return space  # type: ignore[return-value]


def _candidates(src_space: str, dst_space: str, variant: str | None, arch: str | None) -> tuple[list, list]:
    """The rows to try, in priority order, and the rows set aside before planning (forced away, wrong target)."""
    pair = [v for v in VARIANTS if (v.src, v.dst) == (src_space, dst_space)]
    if not pair:
        covered = ", ".join(f"{v.name} {v.src}->{v.dst}" for v in VARIANTS)
        raise PlanError(f"copy_async: no variant copies {src_space} -> {dst_space} (the family covers {covered})")
    if variant is not None:
        named = [v for v in VARIANTS if v.name == variant]
        if not named:
            raise PlanError(f"copy_async: no variant is named {variant!r} (one of "
                            f"{', '.join(v.name for v in VARIANTS)})")
        if not any(v in pair for v in named):
            row = named[0]
            raise PlanError(f"copy_async: variant {variant!r} copies {row.src} -> {row.dst}, not {src_space} -> "
                            f"{dst_space}")
        pair = [v for v in pair if v.name == variant]
    skipped = [Rejection(v.name, f"not available on {arch} (needs one of {', '.join(v.targets)})")
               for v in pair if arch is not None and arch not in v.targets]
    tried = sorted((v for v in pair if arch is None or arch in v.targets), key=lambda v: v.priority)
    return tried, skipped


def copy_async(dst: Any, src: Any, *, variant: VariantName | None = None, arch: str | None = None,
               **config: Any) -> Plan:
    """Plan a copy from ``src`` to ``dst`` with the first variant, in priority order, that the two tensors' memory
    spaces select and that fits; ``variant=`` forces one, ``arch=`` keeps the variants that target has, and
    ``config`` goes to the variant's planner (``cta_group``, ``shape``, ``max_registers``, ``threads``,
    ``completion`` = ``"expect_tx"`` / ``"arrive"`` / ``"group"``: the wait the caller has written, ``form`` =
    ``"stmatrix.x4.trans"`` / ``"st.shared.v4.b32"`` / ``"ldmatrix"`` ...: a register <-> shared instruction). Raises
    ``PlanError`` with a variant x reason table when none fits, ``TypeError`` for an option no variant of the pair
    takes."""
    src_space, dst_space = _space(src, "src"), _space(dst, "dst")
    if variant is not None and not isinstance(variant, str):
        raise TypeError(f"copy_async: variant must be a string or None, got {variant!r}")
    if arch is not None and not isinstance(arch, str):
        raise TypeError(f"copy_async: arch must be a string or None, got {arch!r}")
    tried, rejected = _candidates(src_space, dst_space, variant, arch)
    unknown = sorted(set(config) - set().union(*(v.options for v in tried)))
    if tried and unknown:
        raise TypeError(f"copy_async: option {', '.join(unknown)} is taken by no variant of {src_space} -> "
                        f"{dst_space} ({', '.join(f'{v.name}: {sorted(v.options)}' for v in tried)})")
    for row in tried:
        extra = sorted(set(config) - row.options)
        if extra:
            rejected.append(Rejection(row.name, f"takes no option {', '.join(extra)}"))
            continue
        try:
            plan = row.plan(dst, src, **config, **({"arch": arch} if "arch" in row.options else {}))
        except PlanError as why:
            rejected.append(Rejection(row.name, why))
            continue
        targets = getattr(plan, "targets", row.targets)
        if arch is None or arch in targets:
            return plan
        rejected.append(Rejection(row.name, f"the plan's instruction ({plan.instructions[0].ptx}) needs one of "
                                            f"{', '.join(targets)}, not {arch}"))
    table = "\n".join(f"  {r.candidate:<12} " + str(r.reason).replace("\n", "\n" + " " * 15) for r in rejected)
    raise PlanError(f"copy_async: no variant copies {src!r} -> {dst!r}:\n{table}")
