"""CUDA C++ for an epilogue plan: the register -> shared function and the TMA store function of its two plans, and
the function that joins them (store, proxy fence, named barrier, one thread's TMA store) with its wait."""
from __future__ import annotations

from ..copy.smem_ldst.epilogue import EpiloguePlan
from ..tensor.region import Dynamic
from ..views import provides
from .common import ABI_VERSION, check_function_name
from .smem_ldst import _fragment_param, emit_smem_copy
from .tma import emit_tma_copy

__all__ = ["emit_epilogue"]


@provides("cuda", EpiloguePlan)
def emit_epilogue(plan: EpiloguePlan, name: str = "pycute_epilogue") -> str:
    """``name(map, smem, thread, frag, c0, ..., stage...)``, ``name_wait(thread)`` and ``name_drain(thread)``."""
    check_function_name(name)
    kind, n = _fragment_param(plan.store)
    const = "const " if plan.store.op == "st" else ""
    modes = len(plan.tile_shape)
    stages = [s.name for s in plan.store.stages]
    params = ", ".join([f"int c{k}" for k in range(modes)] + [f"unsigned {s}" for s in stages])
    tma_args = ", ".join([f"c{k} / {e}" for k, e in enumerate(plan.tile_shape)] + stages)
    stage_args = "".join(f", {s}" for s in stages)
    threads = plan.threads
    runtime_bar = isinstance(plan.barrier_id, Dynamic)
    bar = plan.barrier_id.name if isinstance(plan.barrier_id, Dynamic) else f"{plan.barrier_id}u"
    if runtime_bar:
        params += f", unsigned {bar}"
    wait_param = f", unsigned {bar}" if runtime_bar else ""
    return "\n".join([
        emit_smem_copy(plan.store, f"{name}_store"), emit_tma_copy(plan.tma, f"{name}_tma"),
        f"// {plan!r}",
        f"// pycute C ABI {ABI_VERSION}. Every thread t of the fragment's {threads} (whole warps) calls it with "
        "thread = t:",
        "// registers -> (convert) -> the swizzled shared tile -> fence.proxy.async.shared::cta -> bar.sync over the",
        "// fragment's threads -> thread 0 issues the TMA store of the tile as one bulk group. `map` is the store's",
        "// tensor map (plan.tma.tensor_map), `smem` the tile's shared address, c<i> the output tile's first element",
        f"// along array mode i (a multiple of the tile's extent {plan.tile_shape}).",
        f"__device__ __forceinline__ void {name}(const void* map, unsigned smem, unsigned thread, "
        f"{const}{kind} (&frag)[{n}], {params}) {{",
        f"  {name}_store(smem, thread, frag{stage_args});",
        "  pycute_fence_proxy_async_shared();",
        f"  pycute_named_barrier_sync({bar}, {threads}u);",
        f"  if (thread == 0u) {name}_tma(map, smem, {tma_args});",
        "}",
        "// Before a tile is written again: thread 0 waits until the TMA store that last read it has (the ring's "
        f"{plan.in_flight + 1}",
        "// slot(s) written in turn), then the barrier.",
        f"__device__ __forceinline__ void {name}_wait(unsigned thread{wait_param}) {{",
        f"  if (thread == 0u) pycute_bulk_wait_group_read<{plan.in_flight}>();",
        f"  pycute_named_barrier_sync({bar}, {threads}u);",
        "}",
        "// Before the tile's bytes are given back (a pipeline stage the tile lives in, released to its producer):",
        "// thread 0 waits until every TMA store it issued has read its tile, then the barrier.",
        f"__device__ __forceinline__ void {name}_drain(unsigned thread{wait_param}) {{",
        "  if (thread == 0u) pycute_bulk_wait_group_read<0>();",
        f"  pycute_named_barrier_sync({bar}, {threads}u);",
        "}", ""])
