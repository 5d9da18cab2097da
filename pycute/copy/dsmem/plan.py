"""The result of make_dsmem_copy: the chunks from this CTA's shared tile to the same-shaped tile of a peer CTA, and
the bytes the peer's mbarrier must expect."""
from __future__ import annotations

from typing import ClassVar

import attrs

from ...arch.convention import Convention
from ...atoms.bulk import BulkAtom, BulkIssue
from ...errors import PlanError
from ...int_tuple import as_int
from ...tensor.smem import SmemTensor
from ...views import view
from ..bulk.plan import BulkChunk, chunk_lines
from ..protocol import Rejection
from ...tensor.stages import SmemStage, stage_offset

__all__ = ["DsmemPlan"]


@attrs.frozen(repr=False)
class DsmemPlan:
    """A validated copy of a shared tile (``src``, this CTA) into a shared tile of another CTA of the cluster
    (``dst``, at the same CTA-local address in the peer): one bulk copy per chunk to the address ``mapa`` gives,
    completing on the peer's mbarrier (which expects ``expect_tx`` bytes; the sender learns nothing)."""

    atom: BulkAtom
    src: SmemTensor
    dst: SmemTensor
    instructions: tuple[BulkChunk, ...]
    src_stages: tuple[SmemStage, ...] = ()
    dst_stages: tuple[SmemStage, ...] = ()
    rejected: tuple[Rejection, ...] = attrs.field(default=(), eq=False)

    VARIANT: ClassVar[str] = "dsmem"

    @property
    def completion(self) -> str:
        """The receiver's mbarrier counts the bytes."""
        return "expect_tx"

    @property
    def stages(self) -> tuple[SmemStage, ...]:
        return self.src_stages + self.dst_stages

    @property
    def expect_tx(self) -> int:
        """Bytes the peer's mbarrier receives."""
        return sum(c.size for c in self.instructions)

    @property
    def lower_bound(self) -> int:
        return 1

    def stream(self, dst_base: int, src_base: int, peer: int, cta: int = 0, **values: int) -> list[BulkIssue]:
        """``BulkIssue(ptx, dst, src, size, peer)`` per chunk when CTA ``cta`` copies its buffer at ``src_base``
        into CTA ``peer``'s buffer at ``dst_base`` (both CTA-local shared addresses)."""
        dst_base, src_base = as_int(dst_base, "stream: dst_base"), as_int(src_base, "stream: src_base")
        peer, cta = as_int(peer, "stream: peer"), as_int(cta, "stream: cta")
        if peer == cta:
            raise PlanError(f"stream: CTA {cta} copies to itself; a DSMEM copy's destination is another CTA of the "
                            f"cluster (PTX ISA, cp.async.bulk.shared::cluster.shared::cta)")
        for base, t in ((dst_base, self.dst), (src_base, self.src)):
            if base % t.base_align:
                raise PlanError(f"stream: base {base:#x} is not aligned to the {t.base_align} B the plan assumes")
        names = {s.name for s in self.src_stages}
        src_shift = stage_offset(self.src_stages, {k: v for k, v in values.items() if k in names}, "DSMEM plan: ")
        dst_shift = stage_offset(self.dst_stages, {k: v for k, v in values.items() if k not in names},
                                 "DSMEM plan: ")
        return [BulkIssue(self.atom.ptx, dst_base + dst_shift + c.dst, src_base + src_shift + c.src, c.size, peer)
                for c in self.instructions]

    @property
    def convention(self) -> Convention:
        """Who calls the generated function: one elected thread of the sending CTA."""
        return Convention("elected", 1)

    def cuda(self, name: str = "pycute_dsmem_copy") -> str:
        """A ``__device__`` function one (elected) thread of the sending CTA calls: ``name(unsigned dst, unsigned
        src, unsigned mbar, unsigned peer)``, ``dst`` and ``mbar`` the CTA-local addresses of the peer's tile and
        mbarrier (the same offsets in every CTA)."""
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        """Emulate the chunks between two CTAs and compare with the two layouts alone."""
        view("verify", self, seed=seed)

    def explain(self) -> str:
        n = len(self.instructions)
        lines = [f"DSMEM plan: {self.src!r} -> peer CTA's {self.dst!r}",
                 f"  instruction {self.atom.ptx} (peer addresses from mapa.shared::cluster.u32)",
                 f"  count       {n} chunk{'s' if n != 1 else ''} (16-byte aligned runs, whole 16-byte units); lower "
                 f"bound {self.lower_bound}",
                 f"  completion  the peer's mbarrier expects {self.expect_tx} B (it arms its own; the sender needs a "
                 f"signal back before reusing the source)"]
        lines += [f"  run-time    {s.name} in [0, {s.extent}): +{s.smem_step} B" for s in self.stages]
        return "\n".join(lines + ["  chunks:"] + chunk_lines(self.instructions, "shared", "peer"))

    def __repr__(self) -> str:
        return f"DsmemPlan({len(self.instructions)} chunks, expect_tx {self.expect_tx} B)"
