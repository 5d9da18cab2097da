"""The Hopper GEMM's plans for one problem: the mainloop pipeline (TMA loads of A and B, B multicast over the
cluster), the wgmma, the epilogue's store of D and the persistent tile scheduler."""
from __future__ import annotations

from typing import Literal, Protocol

import attrs

from ...copy.smem_ldst.epilogue import EpiloguePlan, make_epilogue
from ...copy.tma.params import TensorMapParams
from ...copy.tma.planner import make_tma_copy
from ...dtypes import DType, bf16, dtype, f8e4m3, f32
from ...layout import Layout
from ...mma import WgmmaPlan, make_mma, wgmma_accumulator
from ...pipeline import Consumer, PipelinePlan, Producer, SplitKScheduler, make_pipeline, make_split_k_scheduler
from ...tensor import dynamic, kmajor_smem_tensor, make_global_tensor, make_stages

__all__ = ["GemmPlans", "Tiling", "Dtype", "Mode", "DTYPES", "CHUNK", "TEMPLATE", "D_TEMPLATE_PAD"]

Dtype = Literal["bf16", "e4m3"]
Mode = Literal["cooperative", "pingpong"]
DTYPES: dict[str, DType] = {"bf16": bf16, "e4m3": f8e4m3}
#: The plans compiled into a configuration's kernel are made for arrays this large; the kernel text does not depend
#: on the problem (the tile counts are run-time arguments and the tensor maps are encoded per call). D's template
#: has 16 more columns: no multiple of a wide box, so that its store is planned in the form every N takes (an f32
#: chunk's two 32-column boxes, not one box of a 3-d map that only a multiple of 32 columns allows).
TEMPLATE = 2 ** 16
D_TEMPLATE_PAD = 16
CHUNK = 64          # columns of D per epilogue store: one 128-byte swizzle row of bf16


class Tiling(Protocol):
    """What the plans read of a configuration (``HopperGemm``)."""

    @property
    def dtype(self) -> Dtype: ...

    @property
    def BN(self) -> int: ...

    @property
    def consumers(self) -> int: ...

    @property
    def mode(self) -> Mode: ...

    @property
    def stages(self) -> int | None: ...

    @property
    def cluster(self) -> int: ...

    @property
    def group(self) -> int: ...

    @property
    def split_k(self) -> bool: ...

    @property
    def BM(self) -> int: ...

    @property
    def BK(self) -> int: ...

    @property
    def wg_rows(self) -> int: ...

    @property
    def epilogue_bytes(self) -> int: ...

    @property
    def out(self) -> str: ...


@attrs.frozen
class GemmPlans:
    """The plans of one configuration for one problem (``M x K`` A, ``N x K`` B, ``M x N`` D)."""

    mainloop: PipelinePlan
    mma: WgmmaPlan
    store_d: EpiloguePlan
    sched: SplitKScheduler

    @classmethod
    def of(cls, g: Tiling, M: int, N: int, K: int, lda: int | None = None, ldb: int | None = None,
           ldd: int | None = None) -> "GemmPlans":
        """``ld*``: the arrays' row pitches in elements (their rows' bytes must be whole 16-byte units: TMA)."""
        dt = DTYPES[g.dtype]
        a = make_global_tensor(dt, Layout((M, K), (lda or K, 1)))
        b = make_global_tensor(dt, Layout((N, K), (ldb or K, 1)))
        out = dtype(g.out)
        d = make_global_tensor(out, Layout((M, N), (ldd or N, 1)))
        load_a = make_tma_copy(kmajor_smem_tensor(dt, g.BM, g.BK, "128B"), a)
        load_b = make_tma_copy(kmajor_smem_tensor(dt, g.BN, g.BK, "128B"), b,
                               multicast=g.cluster if g.cluster > 1 else None)
        # cooperative: every consumer warpgroup reads each stage; ping-pong: one does, the warpgroups taking turns
        consumer = Consumer("warpgroup", g.consumers) if g.mode == "cooperative" else \
            Consumer("warpgroup", 1, turns=g.consumers)
        mainloop = make_pipeline({"a": load_a, "b": load_b}, consumer=consumer, producer=Producer("tma", "warp"),
                                 stages=g.stages, reserve=g.epilogue_bytes + 1024, name="mainloop")
        acc_rows = g.BM if g.mode == "cooperative" else g.wg_rows
        mma = make_mma(wgmma_accumulator(f32, acc_rows, g.BN), mainloop.ring("a"), mainloop.ring("b"))
        ring_d = make_stages(kmajor_smem_tensor(out, 64, CHUNK, "64B" if out.bits == 8 else "128B"), 2)[:, :,
                                                                                                dynamic("slot")]
        store_d = make_epilogue(wgmma_accumulator(f32, 64, CHUNK), ring_d, d, barrier_id=dynamic("bar"))
        # whole tiles, or (split_k) tiles shared by pieces of their k-blocks, each consumer warpgroup's rows reduced
        # by their own part
        sched = make_split_k_scheduler(registers=g.wg_rows // 64 * g.BN // 2,
                                       parts=g.consumers if g.mode == "cooperative" else 1,
                                       cluster=(g.cluster, 1), swizzle=g.group, shared=g.split_k, name="sched")
        assert isinstance(mma, WgmmaPlan)
        return cls(mainloop, mma, store_d, sched)

    def maps(self) -> tuple[TensorMapParams, TensorMapParams, TensorMapParams]:
        """The tensor-map parameters of A, B and D (``TensorMapParams``: ``.encode(address)``)."""
        loads = dict(self.mainloop.loads)
        return loads["a"].tensor_map, loads["b"].tensor_map, self.store_d.tma.tensor_map

    def issues_as(self, kernel: "GemmPlans") -> bool:
        """Whether these plans issue what ``kernel``'s (the compiled kernel's) do: the same boxes, swizzles and
        instructions, so that their tensor maps drive that kernel."""
        def shape(m: TensorMapParams) -> tuple:
            return (m.dtype, m.box, m.swizzle, m.element_strides)
        loads, kernel_loads = dict(self.mainloop.loads), dict(kernel.mainloop.loads)
        return all(shape(x) == shape(y) for x, y in zip(self.maps(), kernel.maps())) and all(
            [i.coords for i in loads[n].instructions] == [i.coords for i in kernel_loads[n].instructions]
            for n in loads) and [i.coords for i in self.store_d.tma.instructions] == \
            [i.coords for i in kernel.store_d.tma.instructions]
