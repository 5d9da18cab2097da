"""make_pipeline: the ring, the roles and the barriers of a producer / consumer pipeline from the producer's copy
plans and the consumers' description. Every barrier count, byte total and phase is derived; values a caller
states (``expect_tx=``, ``full_arrivals=``, ``empty_arrivals=``) are checked against the derived ones, and an
inconsistent pipeline is a PlanError that names the values."""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import attrs

from ..arch.sm100.smem import SMEM_MAX_BYTES as SM100_SMEM
from ..arch.sm100.targets import TCGEN05_TARGETS
from ..arch.sm90.bulk import MAX_CLUSTER
from ..arch.sm90.mbarrier import MAX_ARRIVALS, TX_LIMIT
from ..arch.sm90.smem import SMEM_MAX_BYTES as SM90_SMEM
from ..copy.bulk.plan import BulkPlan
from ..copy.cp_async.plan import CpAsyncPlan
from ..copy.dsmem.plan import DsmemPlan
from ..copy.tma.plan import TmaPlan
from ..errors import PlanError
from ..int_tuple import as_int
from .plan import BarrierInit, Consumer, PipelinePlan, Producer
from .rings import STAGE_INDEX, check_capacity, lay_out_rings, tile_bytes, tile_of

__all__ = ["make_pipeline", "smem_capacity", "STAGE_INDEX"]


#: Shared memory a CTA may use (static and dynamic together) per target.
_CAPACITY = {"sm_90a": SM90_SMEM, **{t: SM100_SMEM for t in TCGEN05_TARGETS}}
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LOADS = (TmaPlan, BulkPlan, CpAsyncPlan, DsmemPlan)


def smem_capacity(arch: str) -> int:
    """Bytes of shared memory one CTA may use on ``arch`` (227 KiB on sm_90a and the sm_100a family)."""
    if arch not in _CAPACITY:
        raise PlanError(f"make_pipeline: no shared-memory capacity is known for {arch!r} (one of "
                        f"{', '.join(_CAPACITY)})")
    return _CAPACITY[arch]


def _named(loads: Any) -> list[tuple[str, Any]]:
    if isinstance(loads, _LOADS):
        loads = (loads,)
    items = list(loads.items()) if isinstance(loads, Mapping) else [(f"load{k}", p) for k, p in enumerate(loads)]
    for name, plan in items:
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise PlanError(f"make_pipeline: load name {name!r} is not a C identifier (it names a generated function)")
        if not isinstance(plan, _LOADS):
            raise TypeError(f"make_pipeline: load {name!r} is a {type(plan).__name__}; a load is a TMA, bulk, cp.async "
                            f"or DSMEM plan (pc.make_tma_copy, ...)")
        direction = getattr(plan, "direction", "load")
        if direction != "load":
            raise PlanError(f"make_pipeline: load {name!r} is a {direction} plan; a pipeline's producer loads into "
                            f"shared memory")
    return items


def _kind(items: list[tuple[str, Any]]) -> str:
    kinds = {("tma" if isinstance(p, (TmaPlan, BulkPlan)) else "cp_async" if isinstance(p, CpAsyncPlan) else "dsmem")
             for _, p in items}
    if len(kinds) > 1:
        raise PlanError(f"make_pipeline: the loads complete in different ways ({', '.join(sorted(kinds))}): one "
                        f"producer's loads are all TMA / bulk (expect_tx), all cp.async (arrivals) or all DSMEM")
    kind = kinds.pop()
    if kind == "cp_async":
        threads = {p.threads for _, p in items}
        if any(p.completion != "arrive" for _, p in items):
            raise PlanError("make_pipeline: a cp.async load signals the stage's barrier only when planned with "
                            "completion='arrive' (cp.async.mbarrier.arrive.noinc); a 'group' completion signals none")
        if len(threads) > 1:
            raise PlanError(f"make_pipeline: the cp.async loads are planned for different thread counts "
                            f"{sorted(threads)}; the producer's threads call every one")
    return kind


def _producer(items: list[tuple[str, Any]], producer: Producer | None) -> Producer:
    if not items:
        if producer is None or producer.kind not in ("arrive", "commit"):
            raise PlanError("make_pipeline: without loads the producer is given: Producer('arrive', ...) (threads store "
                            "and arrive) or Producer('commit', ...) (tcgen05 operations and their commit)")
        return producer
    kind = _kind(items)
    derived = Producer(kind, "threads", items[0][1].threads) if kind == "cp_async" else Producer(kind)  # type: ignore
    if producer is None:
        return derived
    # a warp may stand for the elected thread of TMA / bulk loads: every lane waits, one arms and issues
    callers = ("elected", "warp") if derived.kind == "tma" else (derived.caller,)
    if (producer.kind, producer.count) != (derived.kind, derived.count) or producer.caller not in callers:
        raise PlanError(f"make_pipeline: producer {producer!r} does not issue these loads: they make it {derived!r}"
                        + (" (or its caller 'warp')" if len(callers) > 1 else ""))
    return producer


def _ctas(items: list[tuple[str, Any]], producer: Producer, consumer: Consumer, ctas: int | None) -> int:
    multicast = {p.multicast.ctas for _, p in items if isinstance(p, TmaPlan) and p.multicast is not None}
    pair = any(isinstance(p, TmaPlan) and p.atom.pair for _, p in items) or \
        (producer.kind == "commit" and producer.cta_group == 2) or \
        (consumer.release == "commit" and consumer.cta_group == 2)
    if len(multicast) > 1:
        raise PlanError(f"make_pipeline: the loads multicast to clusters of different sizes {sorted(multicast)}")
    need = next(iter(multicast)) if multicast else 2 if pair else 1
    if ctas is None:
        if producer.kind == "dsmem":
            raise PlanError("make_pipeline: a DSMEM producer needs the cluster's size (ctas=)")
        return need
    ctas = as_int(ctas, "make_pipeline: ctas")
    if not 1 <= ctas <= MAX_CLUSTER or (multicast and ctas != need) or (pair and ctas % 2):
        raise PlanError(f"make_pipeline: ctas={ctas}: a cluster of 1 to {MAX_CLUSTER} CTAs"
                        + (f", the {need} the loads multicast to" if multicast else "")
                        + (", whole CTA pairs" if pair else ""))
    if producer.kind == "dsmem" and ctas < 2:
        raise PlanError("make_pipeline: a DSMEM producer sends to another CTA of the cluster: ctas >= 2")
    return ctas


def _check_roles(producer: Producer, consumer: Consumer, arch: str) -> None:
    if consumer.release not in ("arrive", "commit", "sync"):
        raise PlanError(f"make_pipeline: consumer release {consumer.release!r} is 'arrive', 'commit' or 'sync'")
    if consumer.caller not in ("elected", "warp", "warpgroup", "threads"):
        raise PlanError(f"make_pipeline: consumer caller {consumer.caller!r} is 'elected', 'warp', 'warpgroup' or "
                        f"'threads'")
    if as_int(consumer.count, "Consumer.count") < 1 or as_int(producer.count, "Producer.count") < 1:
        raise PlanError(f"make_pipeline: a role has at least one caller ({producer!r}, {consumer!r})")
    if consumer.release == "commit" and consumer.caller not in ("elected", "warp"):
        raise PlanError(f"make_pipeline: a commit release is issued by the MMA's thread: caller 'elected' or 'warp', "
                        f"not {consumer.caller!r}")
    if producer.kind == "commit" and producer.caller not in ("elected", "warp"):
        raise PlanError(f"make_pipeline: a commit producer is the MMA's thread: caller 'elected' or 'warp', not "
                        f"{producer.caller!r}")
    if producer.kind == "arrive" and producer.caller not in ("elected", "warp", "warpgroup", "threads"):
        raise PlanError(f"make_pipeline: an arriving producer's caller is 'elected', 'warp', 'warpgroup' or "
                        f"'threads', not {producer.caller!r}")
    for role in (producer, consumer):
        if role.cta_group not in (1, 2):
            raise PlanError(f"make_pipeline: cta_group is 1 or 2, not {role.cta_group!r}")
    tcgen05 = consumer.release == "commit" or producer.kind == "commit"
    if tcgen05 and arch not in TCGEN05_TARGETS:
        raise PlanError(f"make_pipeline: tcgen05.commit exists on {', '.join(TCGEN05_TARGETS)}, not {arch}")


def _barriers(plan: PipelinePlan) -> tuple[tuple[BarrierInit, ...], tuple[BarrierInit, ...], bool]:
    """The full and empty barriers of every CTA rank, and whether the odd CTA of a pair relays."""
    n, producer, consumer = plan.ctas, plan.producer, plan.consumer
    tx, arrivals = [0] * n, [0] * n
    for r in plan.producer_ctas():
        for _, _, barrier, nbytes in plan.deliveries(r):
            tx[barrier] += nbytes
        if producer.kind in ("cp_async", "arrive", "commit"):
            for t in plan.commit_targets(r):
                arrivals[t] += producer.arrivals
    # a pair's MMA reads both CTAs' stages: what completes on the odd CTA's own barrier is relayed to the even one's
    own = {r for r in range(1, n, 2) for _, _, barrier, _ in plan.deliveries(r) if barrier == r}
    relay = consumer.release == "commit" and consumer.cta_group == 2 and producer.kind != "commit" and bool(own)
    for t in range(n):
        arrivals[t] += int(plan.arms and tx[t] > 0) + int(relay and t % 2 == 0)
    empty = [0] * n
    for c in plan.consumer_ctas():
        for t in plan.release_targets(c):
            empty[t] += consumer.arrivals
    full_inits = tuple(BarrierInit(a, b) for a, b in zip(arrivals, tx))
    empty_inits = tuple(BarrierInit(a) for a in empty) if consumer.release != "sync" else ()
    return full_inits, empty_inits, relay


def _check_barriers(plan: PipelinePlan) -> None:
    """Every waited barrier receives arrivals, none over the counts' and tx-count's ranges, every load's bytes
    are its tile's, and a commit reaches every CTA it must release."""
    waited_full = set(plan.consumer_ctas()) | ({c for c in range(1, plan.ctas, 2)} if plan.relay else set())
    for c in sorted(waited_full):
        if plan.full[c].arrivals == 0:
            raise PlanError(f"make_pipeline: CTA {c}'s consumers wait on its full barriers, which nothing signals "
                            f"(the loads complete on CTA(s) {sorted({b for _, _, b, _ in plan.deliveries(c)})}); a "
                            f"pair's loads are read by "
                            f"the pair's MMA (Consumer(release='commit', cta_group=2))")
    for c in plan.producer_ctas():
        if plan.empty and plan.empty[c].arrivals == 0:
            raise PlanError(f"make_pipeline: CTA {c}'s producer waits on its empty barriers, which no consumer "
                            f"releases")
    for what, inits in (("full", plan.full), ("empty", plan.empty)):
        for rank, b in enumerate(inits):
            if b.arrivals > MAX_ARRIVALS or b.tx > TX_LIMIT:
                raise PlanError(f"make_pipeline: CTA {rank}'s {what} barrier would count {b.arrivals} arrivals and "
                                f"{b.tx} B per phase; an mbarrier counts at most {MAX_ARRIVALS} of each")
    for name, load in plan.loads:
        if isinstance(load, CpAsyncPlan):
            continue
        tile = tile_of(load)
        want = tile_bytes(tile) * (2 if isinstance(load, TmaPlan) and load.atom.pair else 1)
        if load.expect_tx != want:
            raise PlanError(f"make_pipeline: load {name!r} completes {load.expect_tx} B per stage on its barrier, but "
                            f"the tile it fills holds {want} B ({tile!r})")
    if plan.consumer.release == "commit":
        reach = {c: set(range(c, c + plan.consumer.cta_group)) for c in plan.consumer_ctas()}
        for c, targets in reach.items():
            if not set(plan.release_targets(c)) <= targets:
                raise PlanError(f"make_pipeline: CTA {c}'s commit signals CTAs {sorted(targets)}, but the stages it "
                                f"read are written by CTAs {list(plan.release_targets(c))} (a multicast beyond the "
                                f"pair): release with arrivals")


def _check_stated(plan: PipelinePlan, expect_tx: int | None, full_arrivals: int | None,
                  empty_arrivals: int | None) -> None:
    """Values the caller stated, against the derived ones."""
    if expect_tx is not None and as_int(expect_tx, "expect_tx") != plan.full[0].tx:
        parts = " + ".join(f"{n} {p.expect_tx} B" for n, p in plan.loads if not isinstance(p, CpAsyncPlan)) or "none"
        raise PlanError(f"make_pipeline: expect_tx={expect_tx} B, but the stage's copies deliver {plan.full[0].tx} B "
                        f"to CTA 0's full barrier per phase ({parts})")
    if full_arrivals is not None and as_int(full_arrivals, "full_arrivals") != plan.full[0].arrivals:
        raise PlanError(f"make_pipeline: full_arrivals={full_arrivals}, but the roles arrive {plan.full[0].arrivals} "
                        f"time(s) per phase on CTA 0's full barrier ({_full_why(plan)})")
    if empty_arrivals is not None:
        got = plan.empty[0].arrivals if plan.empty else 0
        if as_int(empty_arrivals, "empty_arrivals") != got:
            raise PlanError(f"make_pipeline: empty_arrivals={empty_arrivals}, but the consumers arrive {got} time(s) "
                            f"per phase on CTA 0's empty barrier ({plan.consumer.arrivals} per CTA x "
                            f"{sum(0 in plan.release_targets(c) for c in plan.consumer_ctas())} releasing CTA(s))")


def _full_why(plan: PipelinePlan) -> str:
    parts = []
    if plan.arms and plan.full[0].tx:
        parts.append("1 arm with expect_tx")
    if plan.producer.arrivals:
        parts.append(f"{plan.producer.arrivals} {plan.producer.kind} arrival(s)")
    if plan.relay:
        parts.append("1 relay from the odd CTA")
    return " + ".join(parts) or "none"


def _before(after: Any, arch: str) -> tuple[PipelinePlan, ...]:
    """The pipelines ``after`` names, checked: plans of the same target."""
    plans = (after,) if isinstance(after, PipelinePlan) else tuple(after)
    for p in plans:
        if not isinstance(p, PipelinePlan):
            raise TypeError(f"make_pipeline: after= takes pipeline plans, got {type(p).__name__}")
        if p.arch != arch:
            raise PlanError(f"make_pipeline: pipeline {p.name!r} is planned for {p.arch}, this one for {arch}; one "
                            f"kernel's pipelines share a target")
    return plans


def make_pipeline(loads: Any = (), *, consumer: Consumer, producer: Producer | None = None,
                  stages: int | None = None, name: str = "pipeline", arch: str = "sm_90a", reserve: int = 0,
                  ctas: int | None = None, expect_tx: int | None = None, full_arrivals: int | None = None,
                  empty_arrivals: int | None = None, after: PipelinePlan | Sequence[PipelinePlan] = ()
                  ) -> PipelinePlan:
    """Plan a pipeline whose producer issues ``loads`` (a plan, a sequence of plans named ``load0``, ... or a
    mapping of names to plans: TMA and bulk loads, cp.async loads completing by ``arrive``, or a DSMEM copy) into a
    ring of stages that ``consumer`` drains. Loads planned for one tile are re-planned over a ring the pipeline lays
    out (its stage count, when not given, as many as ``arch``'s shared memory holds after ``reserve`` bytes the
    kernel uses otherwise); loads already over a ring (one run-time index) keep it. Without loads, ``producer``
    says how stages fill (``Producer('commit', ...)``: tcgen05 operations, e.g. an MMA filling accumulators;
    ``Producer('arrive', ...)``: threads' stores). ``ctas`` is the cluster's size where the loads do not say it.
    ``expect_tx``, ``full_arrivals`` and ``empty_arrivals``, when given, must equal what the roles derive.
    ``after``: pipelines of the same kernel whose rings come first in the same buffer (an attention kernel's Q ring,
    then its K and V rings): these rings begin where theirs end, and their barriers count against the capacity."""
    if not isinstance(consumer, Consumer):
        raise TypeError(f"make_pipeline: consumer is a pc.Consumer, got {type(consumer).__name__}")
    if not 1 <= consumer.turns or not 1 <= consumer.turn_barrier <= 16 - consumer.turns:
        raise PlanError(f"make_pipeline: Consumer(turns={consumer.turns}, turn_barrier={consumer.turn_barrier}): the "
                        f"turns' named barriers turn_barrier .. turn_barrier + turns - 1 lie in 1..15 (0 is "
                        f"__syncthreads')")
    if producer is not None and not isinstance(producer, Producer):
        raise TypeError(f"make_pipeline: producer is a pc.Producer, got {type(producer).__name__}")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise PlanError(f"make_pipeline: name {name!r} is not a C identifier (it prefixes the generated functions)")
    capacity = smem_capacity(arch)
    reserve = as_int(reserve, "make_pipeline: reserve")
    if stages is not None and as_int(stages, "make_pipeline: stages") < 1:
        raise PlanError(f"make_pipeline: stages={stages}: at least one stage")
    before = _before(after, arch)
    start = max((p.smem_bytes for p in before), default=0)
    held = reserve + sum(p.barrier_bytes for p in before)      # the earlier pipelines' barriers live elsewhere
    items = _named(loads)
    producer = _producer(items, producer)
    _check_roles(producer, consumer, arch)
    for n, p in items:
        if isinstance(p, TmaPlan) and arch not in p.targets:
            raise PlanError(f"make_pipeline: load {n!r} ({p!r}) exists on {', '.join(p.targets)}, not {arch}")
    per_stage = 1 if consumer.release == "sync" else 2
    if items:
        staged, stages, layout, ring_bytes, chosen, rings = lay_out_rings(items, stages, capacity, held, per_stage,
                                                                          arch, start)
    elif stages is None:
        raise PlanError("make_pipeline: without loads the stage count is given (stages=): nothing in shared memory "
                        "sizes it")
    else:
        staged, layout, ring_bytes, chosen, rings = [], [], start, "given", []
    check_capacity(stages, ring_bytes, per_stage, held, capacity, arch, start)
    plan = PipelinePlan(name=name, arch=arch, stages=stages, ctas=_ctas(items, producer, consumer, ctas),
                        producer=producer, consumer=consumer, loads=tuple(staged), full=(), empty=(), relay=False,
                        producer_start=1, consumer_start=0, smem_bytes=ring_bytes,
                        stage_bytes=tuple(layout), reserve=reserve, capacity=capacity, chosen=chosen,
                        rings=tuple(rings), start=start, before=held - reserve)
    full, empty, relay = _barriers(plan)
    plan = attrs.evolve(plan, full=full, empty=empty, relay=relay)
    _check_barriers(plan)
    _check_stated(plan, expect_tx, full_arrivals, empty_arrivals)
    return plan
