"""CUDA C++ for bulk and DSMEM plans: the issuing ``__device__`` functions (called by one elected thread) and the
header part ``pycute/bulk.cuh`` (the flat load / store / DSMEM wrappers, ``mapa``, remote arrivals), rendered from
``arch.sm90.bulk``."""
from __future__ import annotations

from ..arch.sm90.bulk import BULK_ALIGN, bulk_ptx
from ..copy.bulk.plan import BulkPlan
from ..copy.dsmem.plan import DsmemPlan
from ..views import provides
from .cache import createpolicy_statement
from .common import ABI_VERSION, check_function_name
from .templates import render

__all__ = ["bulk_header", "emit_bulk_copy", "emit_dsmem_copy"]


def bulk_header() -> str:
    """The text of ``pycute/bulk.cuh``."""
    return render("header_bulk.cuh", abi=ABI_VERSION, align=BULK_ALIGN, load=bulk_ptx("load"),
                  store=bulk_ptx("store"), dsmem=bulk_ptx("dsmem"), load_hint=bulk_ptx("load", True),
                  store_hint=bulk_ptx("store", True))


def _stage_terms(stages) -> str:
    return "".join(f" + {s.name} * {s.smem_step}u" for s in stages)


@provides("cuda", BulkPlan)
def emit_bulk_copy(plan: BulkPlan, name: str = "pycute_bulk_copy") -> str:
    """The issuing function of ``plan`` (and ``<name>_expect_tx`` for a load)."""
    check_function_name(name)
    modes = plan.array_modes
    tiles = ", ".join([f"int t{k}" for k in range(len(modes))] + [f"unsigned {s.name}" for s in plan.stages])
    load = plan.direction == "load"
    origin = " + ".join(f"(long long)t{k} * {plan.tile_shape[k] * d * plan.elem_bytes}LL"
                        for k, (_, d) in enumerate(modes))
    head = [plan.convention.comment(), f"// {len(plan.instructions)} x {plan.atom.ptx}, pycute C ABI {ABI_VERSION}",
            f"// tile {plan.tile_shape} of {plan.gmem!r}, shared {plan.smem!r}",
            "// Call from one thread (elected): `gmem` is the array's base, `smem` the tile's shared address",
            f"// ({plan.smem.base_align}-byte aligned), t<i> the tile index along array mode i, in [0, {plan.tiles}[i])"
            f" (no bounds check)."]
    head.append(f"// Arm `mbar` with pycute_mbarrier_arrive_expect_tx(mbar, {name}_expect_tx) in the same phase; the "
                f"tile is\n// readable after a wait on it (compute-sanitizer racecheck also wants a barrier after "
                f"the waits when\n// other threads read it: it counts the copy's writes as the calling thread's; "
                f"docs/sanitizer.md)."
                if load else "// After pycute_fence_proxy_async_shared() and a barrier; the chunks form one bulk "
                             "group (then wait_group.read / wait_group).")
    body = [f"  {'const ' if load else ''}unsigned char* tile = static_cast<{'const ' if load else ''}unsigned char*>"
            f"(gmem) + ({origin});"]
    hint, policy = ("_hint", ", policy") if plan.cache_hint is not None else ("", "")
    if plan.cache_hint is not None:
        head.append(f"// Every chunk carries the L2 policy {plan.cache_hint} (createpolicy, .L2::cache_hint).")
        body.append(createpolicy_statement(plan.cache_hint))
    if plan.stages:
        body.append(f"  smem = smem{_stage_terms(plan.stages)};")
    for c in plan.instructions:
        if load:
            body.append(f"  pycute_bulk_load{hint}(smem + {c.dst}u, tile + {c.src}, {c.size}u, mbar{policy});")
        else:
            body.append(f"  pycute_bulk_store{hint}(tile + {c.dst}, smem + {c.src}u, {c.size}u{policy});")
    if not load:
        body.append("  pycute_bulk_commit_group();")
    sig = f"const void* gmem, unsigned smem, unsigned mbar, {tiles}" if load else f"void* gmem, unsigned smem, {tiles}"
    lines = ['#include "pycute/bulk.cuh"', "", *head]
    if load:
        lines.append(f"constexpr unsigned {name}_expect_tx = {plan.expect_tx}u;")
    lines += [f"__device__ __forceinline__ void {name}({sig}) {{", *body, "}"]
    return "\n".join(lines) + "\n"


@provides("cuda", DsmemPlan)
def emit_dsmem_copy(plan: DsmemPlan, name: str = "pycute_dsmem_copy") -> str:
    """The sending function of ``plan`` and ``<name>_expect_tx`` (what the peer arms its mbarrier with)."""
    check_function_name(name)
    stages = "".join(f", unsigned {s.name}" for s in plan.stages)
    head = [plan.convention.comment(), f"// {len(plan.instructions)} x {plan.atom.ptx}, pycute C ABI {ABI_VERSION}",
            f"// from {plan.src!r} to the peer's {plan.dst!r}",
            "// Call from one thread (elected) of the sending CTA: `dst` and `mbar` are the CTA-local shared addresses",
            "// of the destination tile and the receiver's mbarrier (the same in every CTA), `peer` the receiving",
            "// CTA's rank in the cluster (not the caller's own). The peer arms `mbar` with",
            f"// pycute_mbarrier_arrive_expect_tx(mbar, {name}_expect_tx) before a cluster barrier, then waits on it.",
            "// The sender's generic writes to `src` need pycute_fence_proxy_async_shared() and a barrier first."]
    body = [f"  const unsigned remote = pycute_mapa(dst{_stage_terms(plan.dst_stages)}, peer);",
            "  const unsigned remote_mbar = pycute_mapa(mbar, peer);"]
    if plan.src_stages:
        body.append(f"  src = src{_stage_terms(plan.src_stages)};")
    body += [f"  pycute_dsmem_copy(remote + {c.dst}u, src + {c.src}u, {c.size}u, remote_mbar);"
             for c in plan.instructions]
    return "\n".join(['#include "pycute/bulk.cuh"', "", *head, f"constexpr unsigned {name}_expect_tx = "
                      f"{plan.expect_tx}u;",
                      f"__device__ __forceinline__ void {name}(unsigned dst, unsigned src, unsigned mbar, "
                      f"unsigned peer{stages}) {{", *body, "}"]) + "\n"
