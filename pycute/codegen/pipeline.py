"""CUDA C++ for pipeline plans: the loads' issuing functions, the pipeline's constants and state type, and its
``init`` / ``producer_acquire`` / ``producer_commit`` / ``consumer_wait`` / ``consumer_release`` / ``relay``
functions, each under its calling-convention line; and the header part ``pycute/pipeline.cuh`` (the state type).

Every count, byte total and parity in the text is the plan's: the barriers' counts per CTA rank, the bytes the
arm expects, the CTAs a release reaches. The functions take the barriers' shared address (``full[stages]`` then
``empty[stages]``, 8 bytes each) and the role's ``<name>_state``; the phase bit a wait uses is the state's.
"""
from __future__ import annotations

from ..arch.sm90.mbarrier import MBARRIER_BYTES
from ..errors import CompileError
from ..pipeline.plan import caller_threads
from ..pipeline.plan import PipelineFunction, PipelinePlan
from ..views import provides
from .common import ABI_VERSION, check_function_name
from .templates import render

__all__ = ["emit_pipeline", "pipeline_header", "per_rank"]


def pipeline_header() -> str:
    """The text of ``pycute/pipeline.cuh``."""
    return render("header_pipeline.cuh", abi=ABI_VERSION)


def per_rank(values: list[int]) -> str:
    """A C expression of ``rank`` (the CTA's rank in the cluster) taking ``values[rank]``: a constant when every
    rank's is the same, a pair's even / odd choice when they repeat every two ranks."""
    if len(set(values)) == 1:
        return f"{values[0]}u"
    if all(v == values[k % 2] for k, v in enumerate(values)):
        return f"((rank & 1u) ? {values[1]}u : {values[0]}u)"
    expr = f"{values[-1]}u"
    for k in range(len(values) - 2, -1, -1):
        expr = f"(rank == {k}u ? {values[k]}u : {expr})"
    return expr


def _rank_line(*exprs: str) -> list[str]:
    return ["  const unsigned rank = pycute_cluster_ctarank();"] if any("rank" in e for e in exprs) else []


def _barrier(plan: PipelinePlan, which: str) -> str:
    s = plan.stages
    return f"bars + st.index * {MBARRIER_BYTES}u" if which == "full" else \
        f"bars + ({s}u + st.index) * {MBARRIER_BYTES}u"


def _targets(plan: PipelinePlan, targets, what: str) -> str:
    """How a role reaches the CTAs ``targets(rank)`` names: ``self``, ``all`` (every rank), ``leader`` (the pair's
    even CTA) or ``peer-<k>`` (rank - k, a DSMEM ring's sender)."""
    n = plan.ctas
    ranks = [tuple(targets(r)) for r in range(n)]
    for kind, want in (("self", lambda r: (r,)), ("all", lambda r: tuple(range(n))), ("leader", lambda r: (r & ~1,)),
                       ("pair", lambda r: (r & ~1, (r & ~1) + 1))):
        if all(ranks[r] == want(r) for r in range(n) if ranks[r]):
            return kind
    if plan.producer.kind == "dsmem":
        return f"peer-{plan.producer.peer}"
    raise CompileError(f"pipeline {plan.name!r}: {what} reaches CTAs {ranks} per rank, a pattern the generator has "
                       f"no code for")


def _arrive(plan: PipelinePlan, barrier: str, reach: str, release: bool = False) -> list[str]:
    """Arrivals on the barrier at ``barrier`` of the CTAs ``reach`` names; ``release``: a consumer giving a stage
    back (it only read the stage: CTA-scope release, pycute/pipeline.cuh)."""
    local, remote = (("pycute_pipeline_release_local", "pycute_pipeline_release") if release else
                     ("pycute_mbarrier_arrive", "pycute_mbarrier_arrive_remote"))
    if reach == "self":
        return [f"{local}({barrier});"]
    if reach == "all":
        return [f"{remote}({barrier}, {r}u);" for r in range(plan.ctas)]
    if reach == "leader":
        return [f"{remote}({barrier}, pycute_cluster_ctarank() & ~1u);"]
    if reach.startswith("peer-"):
        k = int(reach[5:])
        return [f"{remote}({barrier}, (pycute_cluster_ctarank() + {plan.ctas - k}u) % {plan.ctas}u);"]
    raise CompileError(f"pipeline {plan.name!r}: arrivals cannot reach {reach!r} CTAs")


def _by_caller(caller: str, body: list[str]) -> list[str]:
    """``body`` run once per arrival the caller makes: by every thread (``threads``), by the elected caller, or by
    one elected lane of each warp once every lane has reached it (``warp``, ``warpgroup``)."""
    if caller in ("warp", "warpgroup"):
        return ["  __syncwarp();", "  if (pycute_elect_one_sync()) {", *(f"    {b}" for b in body), "  }"]
    return [f"  {b}" for b in body]


def _commit(plan: PipelinePlan, caller: str, barrier: str, cta_group: int) -> list[str]:
    call = f"pycute_tcgen05_commit<{cta_group}>({barrier});"
    if caller == "warp":
        return [f"  if (pycute_elect_one_sync()) {call}   // the lane that issued the tcgen05 operations",
                "  __syncwarp();"]
    return [f"  {call}"]


def _function(f: PipelineFunction, ret: str, params: str, body: list[str], notes: tuple[str, ...] | list[str] = ()
              ) -> list[str]:
    return ["", f.convention.comment(), f"// {f.does[0].upper()}{f.does[1:]}.", *(f"// {n}" for n in notes),
            f"__device__ __forceinline__ {ret} {f.name}({params}) {{", *body, "}"]


def _summary(plan: PipelinePlan) -> list[str]:
    lines = [f"// pipeline {plan.name}: generated by pycute (C ABI {ABI_VERSION}); plan.explain():"]
    lines += ["//   " + line for line in plan.explain().splitlines() if not line.startswith("    ")
              and "functions" not in line]
    return lines


def _init(plan: PipelinePlan, f: PipelineFunction) -> list[str]:
    s = plan.stages
    full_counts, empty_counts = [b.arrivals for b in plan.full], [b.arrivals for b in plan.empty]
    full_n, empty_n = per_rank(full_counts), per_rank(empty_counts) if plan.empty else ""
    body = _rank_line(full_n, empty_n) + [f"  for (unsigned s = 0; s < {s}u; ++s) {{"]
    for at, count, counts in (("bars + s", full_n, full_counts), (f"bars + ({s}u + s)", empty_n, empty_counts)):
        if counts:
            call = f"pycute_mbarrier_init({at} * {MBARRIER_BYTES}u, {count});"
            body.append(f"    if ({count}) {call}" if 0 in counts else f"    {call}")
    body.append("  }")
    sync = "a cluster barrier (pycute_cluster_sync)" if plan.ctas > 1 else "a CTA barrier (__syncthreads)"
    return _function(f, "void", "unsigned bars", body, [f"`bars`: the shared address of {plan.name}_barrier_words "
                                                        f"8-byte-aligned words. Then {sync} before any role runs."])


def _acquire(plan: PipelinePlan, f: PipelineFunction) -> list[str]:
    body = []
    warp = plan.producer.caller == "warp" and plan.arms
    if plan.empty:
        body.append(f"  pycute_pipeline_wait({_barrier(plan, 'empty')}, st.phase);")
    body.append(f"  const unsigned full = {_barrier(plan, 'full')};")
    if plan.arms:
        tx = per_rank([b.tx for b in plan.full])
        body = _rank_line(tx) + body
        arm = f"pycute_mbarrier_arrive_expect_tx(full, {tx});"
        arm = f"if ({tx}) {arm}" if 0 in [b.tx for b in plan.full] else arm
        body.append(f"  if (pycute_elect_one_sync()) {arm}" if warp else f"  {arm}")
    body.append("  return full;")
    notes = [] if plan.empty else ["No wait: the kernel's CTA / cluster barrier after the consumers' reads orders the "
                                   "refill."]
    if warp:
        # measured on the H200 (docs/pipelines.md section 5): one elected lane waiting while the other lanes of its
        # warp sit at a __syncwarp costs the feed 5% at 8192 x 8192 x 4096; a converged wait costs nothing
        notes.append("Every lane waits (the warp stays converged) and one arms; then issue the stage's loads from one "
                     "lane: if (pycute_elect_one_sync()) { ... }.")
    if plan.producer.kind == "dsmem":
        notes.append("The receiving CTA calls it for its own stage; its peer's DSMEM copy completes the bytes.")
    return _function(f, "unsigned", f"unsigned bars, {plan.name}_state st", body, notes)


def _fill(plan: PipelinePlan, fn: dict[str, PipelineFunction]) -> list[str]:
    """``<name>_fill``: acquire, every load's issue from one lane, advance -- each load's map and tile coordinates
    its parameters (``map_<load>``, ``<load>_<coordinate>``)."""
    if "fill" not in fn:
        return []
    n = plan.name
    params, calls = [f"unsigned bars, {n}_state& st, unsigned smem"], []
    for load, lp in plan.loads:
        coords = [f"{load}_{c}" for c in lp.coordinate_names]
        params.append(", ".join([f"const void* map_{load}"] + [f"int {c}" for c in coords]))
        calls.append(f"{n}_{load}(map_{load}, smem, full, {', '.join(coords + ['st.index'])});")
    warp = plan.producer.caller == "warp"
    body = [f"  const unsigned full = {n}_producer_acquire(bars, st);"]
    body += ["  if (pycute_elect_one_sync()) {", *(f"    {c}" for c in calls), "  }"] if warp else \
        [f"  {c}" for c in calls]
    body.append("  st.advance();")
    return _function(fn["fill"], "void", ", ".join(params), body)


def _signals(plan: PipelinePlan, fn: dict[str, PipelineFunction]) -> list[str]:
    """The producer's commit, the consumers' release and the relay, where the plan has them."""
    p, c, state = plan.producer, plan.consumer, f"unsigned bars, {plan.name}_state st"
    out = []
    if "producer_commit" in fn:
        full = _barrier(plan, "full")
        if p.kind == "arrive":
            body = ["  pycute_fence_proxy_async_shared();   // the stores, before async-proxy readers (TMA, tcgen05)"]
            body += _by_caller(p.caller, _arrive(plan, full, _targets(plan, plan.commit_targets, "a commit")))
        else:
            body = _commit(plan, p.caller, full, p.cta_group)
        out += _function(fn["producer_commit"], "void", state, body)
    # threads' stores that another CTA arrives for need the cluster-scope acquire; everything else is delivered
    # by the async proxy or by this CTA (pycute/pipeline.cuh)
    crossing = p.kind == "arrive" and any(t != (r,) for r, t in
                                          ((r, tuple(plan.commit_targets(r))) for r in range(plan.ctas)))
    wait = "pycute_mbarrier_wait_parity" if crossing else "pycute_pipeline_wait"
    out += _function(fn["consumer_wait"], "void", state, [f"  {wait}({_barrier(plan, 'full')}, st.phase);"])
    if "consumer_release" in fn:
        empty = _barrier(plan, "empty")
        if c.release == "commit":
            body = _commit(plan, c.caller, empty, c.cta_group)
        else:
            reach = _targets(plan, lambda r: plan.release_targets(r) if r in plan.consumer_ctas() else (),
                             "a release")
            body = _by_caller(c.caller, [f"const unsigned empty = {empty};", *_arrive(plan, "empty", reach, True)])
        out += _function(fn["consumer_release"], "void", state, body)
        out += _function(fn["consumer_advance"], "void", f"unsigned bars, {plan.name}_state& st",
                         [f"  {plan.name}_consumer_release(bars, st);", "  st.advance();"])
    if "relay" in fn:           # called as the consumer is (the odd CTA's MMA warp): every caller waits, one arrives
        out += _function(fn["relay"], "void", state,
                         [f"  const unsigned full = {_barrier(plan, 'full')};",
                          "  pycute_mbarrier_wait_parity(full, st.phase);",
                          *_by_caller(c.caller,
                                      ["pycute_mbarrier_arrive_remote(full, pycute_cluster_ctarank() & ~1u);"])])
    return out


@provides("cuda", PipelinePlan)
def emit_pipeline(plan: PipelinePlan) -> str:
    """The loads' functions (``<name>_<load>``), the constants (``<name>_stages``, ``_smem_bytes``,
    ``_barrier_words``), the state type ``<name>_state`` and the pipeline's functions."""
    n, s = plan.name, plan.stages
    check_function_name(n)
    tcgen05 = plan.producer.kind == "commit" or plan.consumer.release == "commit"
    out = [f'#include "pycute/{"sm100" if tcgen05 else "pipeline"}.cuh"']
    for load, lp in plan.loads:
        out += ["", lp.cuda(f"{n}_{load}").rstrip("\n")]
    out += ["", *_summary(plan),
            f"constexpr unsigned {n}_stages = {s}u;",
            f"constexpr unsigned {n}_smem_bytes = {plan.smem_bytes}u;   // the rings, from the 1024-byte aligned "
            f"buffer base",
            f"constexpr unsigned {n}_barrier_words = {plan.barrier_words}u;   // __shared__ __align__(8) unsigned long "
            f"long bars[{n}_barrier_words]: full[{s}]" + (f" then empty[{s}]" if plan.empty else ""),
            f"typedef pycute_pipeline_state<{s}u> {n}_state;"]
    fn = {f.name[len(n) + 1:]: f for f in plan.functions}
    out += _function(fn["producer_start"], f"{n}_state", "", [f"  return {n}_state{{0u, {plan.producer_start}u}};"],
                     ["Phase bit 1 names the phase before a fresh barrier's first, which counts as completed."])
    out += _function(fn["consumer_start"], f"{n}_state", "", [f"  return {n}_state{{0u, {plan.consumer_start}u}};"])
    out += _init(plan, fn["init"]) + _acquire(plan, fn["producer_acquire"]) + _fill(plan, fn) + _signals(plan, fn) \
        + _turns(plan, fn)
    return "\n".join(out) + "\n"


def _turns(plan: PipelinePlan, fn: dict[str, PipelineFunction]) -> list[str]:
    """Consumer groups taking turns: named barrier ``turn_barrier + g`` hands the turn to group ``g`` (bar.arrive by
    the passing group's threads, bar.sync by the waiting group's: both groups' threads counted, PTX ISA
    #parallel-synchronization-and-communication-instructions-bar)."""
    c = plan.consumer
    if c.turns < 2:
        return []
    threads = 2 * caller_threads(c.caller, c.count)
    return (_function(fn["turn_wait"], "void", "unsigned group",
                      [f"  asm volatile(\"bar.sync %0, {threads};\" :: \"r\"({c.turn_barrier}u + group) : \"memory\");"],
                      ["Call before the first consumer_wait of every tile but the CTA's first; `group` in [0, "
                       f"{c.turns})."])
            + _function(fn["turn_pass"], "void", "unsigned group",
                        [f"  asm volatile(\"bar.arrive %0, {threads};\" :: \"r\"({c.turn_barrier}u + (group + 1u) % "
                         f"{c.turns}u) : \"memory\");"],
                        ["Call once the group has waited for its tile's last stage, when the next group has a tile."]))
