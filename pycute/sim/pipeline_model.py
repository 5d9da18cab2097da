"""The model a pipeline plan's protocol is checked on (``pycute.sim.pipeline.check_pipeline``): the roles as
processes over a number of fills, the barriers with their phase, pending arrivals and tx-count
(``pycute.arch.sm90.mbarrier``'s rules), what every fill delivers to which stage, and the asynchronous completions
(copies landing, tcgen05 commits) as events that may happen at any later time. A transition that breaks the
protocol raises a ``PipelineError`` naming the barrier, the CTA, the stage and the fill."""
from __future__ import annotations

from typing import Any, Iterator

import attrs

from ..arch.sm90.mbarrier import TX_LIMIT, phase_completes, wait_passes
from ..copy.cp_async.plan import CpAsyncPlan
from ..errors import EmulationError
from ..pipeline.plan import PipelinePlan

__all__ = ["PipelineError", "Model", "Checker", "State"]


class PipelineError(EmulationError):
    """A protocol failure the model found: ``what`` (``deadlock``, ``early read``, ``overwrite``, ``barrier``), the
    barrier (``full`` / ``empty``), CTA, stage and fill it concerns, and the events that led to it."""

    def __init__(self, message: str, what: str, barrier: str | None = None, cta: int | None = None,
                 stage: int | None = None, fill: int | None = None, trace: tuple[str, ...] = ()):
        tail = "\n  after: " + "\n         ".join(trace[-10:]) if trace else ""
        super().__init__(message + tail)
        self.what, self.barrier, self.cta, self.stage, self.fill, self.trace = what, barrier, cta, stage, fill, trace


@attrs.frozen
class _Proc:
    """A process: ``role`` (producer / consumer / relay) in CTA ``cta``, standing for ``weight`` callers, in group
    ``group`` (processes of one group are interchangeable)."""

    name: str
    role: str
    cta: int
    weight: int
    group: int
    steps: tuple[str, ...]


class Model:
    """The plan's static facts: processes, barrier slots, what each fill must deliver where."""

    def __init__(self, plan: PipelinePlan, fills: int, group: int):
        self.plan, self.fills, self.n, self.s = plan, fills, plan.ctas, plan.stages
        self.procs: list[_Proc] = []
        p, c = plan.producer, plan.consumer
        for cta in plan.producer_ctas():
            # the generated acquire arms only a barrier the plan gives bytes (a pair's odd CTA arms none)
            steps = ("acquire", "arm" if plan.arms and plan.full[cta].tx else "", "issue" if plan.loads else "write",
                     "commit" if p.kind in ("arrive", "commit") else "")
            self._add("producer", cta, p.arrivals if p.kind in ("cp_async", "arrive") else 1,
                      tuple(x for x in steps if x), group)
        for cta in plan.consumer_ctas():
            total = 1 if c.release == "commit" else c.arrivals if c.release == "arrive" else c.count
            self._add("consumer", cta, total, ("wait", "release"), group)
        if plan.relay:
            for cta in range(1, self.n, 2):
                self._add("relay", cta, 1, ("wait", "relay"), 1)
        # what lands in CTA t's stage per fill: one key per contribution
        self.expected: list[frozenset] = [frozenset() for _ in range(self.n)]
        for k, proc in enumerate(self.procs):
            if proc.role != "producer":
                continue
            for key, data_cta, _, _ in self.contributions(k):
                self.expected[data_cta] = self.expected[data_cta] | {key}

    def _add(self, role: str, cta: int, total: int, steps: tuple[str, ...], group: int) -> None:
        parts = max(1, min(group, total))
        gid = len({(q.role, q.cta) for q in self.procs})
        for k in range(parts):
            weight = total // parts + (1 if k < total % parts else 0)
            self.procs.append(_Proc(f"{role} {k} of CTA {cta}" if parts > 1 else f"{role} of CTA {cta}", role, cta,
                                    weight, gid, steps))

    def contributions(self, k: int) -> list[tuple[Any, int, int, int]]:
        """``(key, data CTA, barrier CTA, bytes)`` per contribution producer process ``k`` makes to a fill (bytes 0:
        an arrival-signalled contribution)."""
        proc, plan = self.procs[k], self.plan
        if plan.producer.kind in ("arrive", "commit"):
            return [(("write", k, t), t, t, 0) for t in plan.commit_targets(proc.cta)]
        return [((("cp", k, i) if isinstance(plan.loads[i][1], CpAsyncPlan) else ("load", i, proc.cta)), data, barrier,
                 nbytes) for i, data, barrier, nbytes in plan.deliveries(proc.cta)]

    def barrier(self, cta: int, kind: str, stage: int) -> int:
        return (cta * 2 + (kind == "empty")) * self.s + stage

    def describe(self, b: int) -> tuple[str, int, int]:
        cta, rest = divmod(b, 2 * self.s)
        kind, stage = divmod(rest, self.s)
        return ("empty" if kind else "full"), cta, stage

    def count(self, b: int) -> int:
        kind, cta, _ = self.describe(b)
        inits = self.plan.full if kind == "full" else self.plan.empty
        return inits[cta].arrivals if inits else 0


@attrs.define
class _Work:
    """A step's mutable copy of the state's barriers, stages, pending completions and releases."""

    barriers: list
    stages: list
    ops: list
    released: list


@attrs.frozen
class State:
    pcs: tuple          # per process: (fill, step index)
    released: tuple     # per process: fills its releases have reached (a commit's: when it fires)
    barriers: tuple     # per barrier: (completed phases, pending arrivals, tx-count)
    stages: tuple       # per (cta, stage): (fill, frozenset of landed contributions)
    ops: tuple          # pending asynchronous completions, sorted


class Checker:
    def __init__(self, model: Model):
        self.m = model
        self.trace: list[str] = []

    def initial(self) -> State:
        m = self.m
        barriers = tuple((0, m.count(b), 0) for b in range(2 * m.n * m.s))
        return State(tuple((0, 0) for _ in m.procs), tuple(0 for _ in m.procs), barriers,
                      tuple((-1, frozenset()) for _ in range(m.n * m.s)), ())

    def canonical(self, st: State) -> tuple:
        groups: dict[int, list] = {}
        for k, proc in enumerate(self.m.procs):
            groups.setdefault(proc.group, []).append((st.pcs[k], st.released[k], proc.weight))
        return (tuple(tuple(sorted(v)) for _, v in sorted(groups.items())), st.barriers, st.stages, st.ops)

    # -- barriers ---------------------------------------------------------------------------------------------
    def _fail(self, message: str, what: str, b: int | None = None, fill: int | None = None) -> PipelineError:
        kind, cta, stage = self.m.describe(b) if b is not None else (None, None, None)
        return PipelineError(message, what, kind, cta, stage, fill, tuple(self.trace))

    def _name(self, b: int) -> str:
        kind, cta, stage = self.m.describe(b)
        return f"{kind}[{stage}] of CTA {cta}"

    def _signal(self, barriers: list, b: int, arrivals: int, tx: int, who: str, fill: int) -> None:
        count = self.m.count(b)
        if count == 0:
            raise self._fail(f"{who} signals {self._name(b)} (fill {fill}), a barrier the plan never initialises "
                             f"(count 0)", "barrier", b, fill)
        done, pending, bytes_ = barriers[b]
        bytes_ += tx
        if abs(bytes_) > TX_LIMIT:
            raise self._fail(f"{who}: {self._name(b)}'s tx-count reaches {bytes_}, past the +-{TX_LIMIT} an mbarrier "
                             f"holds", "barrier", b, fill)
        for _ in range(arrivals):
            if pending == 0:
                raise self._fail(f"{who} arrives on {self._name(b)} (fill {fill}) after its {count} arrivals, while "
                                 f"the phase waits for {bytes_} more bytes: the arrival count or expect_tx is wrong",
                                 "barrier", b, fill)
            pending -= 1
            if phase_completes(pending, bytes_):
                done, pending, bytes_ = done + 1, count, 0
        if phase_completes(pending, bytes_):
            done, pending, bytes_ = done + 1, count, 0
        barriers[b] = (done, pending, bytes_)

    # -- the processes' steps -------------------------------------------------------------------------------
    def _parity(self, proc: _Proc, fill: int) -> int:
        start = self.m.plan.producer_start if proc.role == "producer" else self.m.plan.consumer_start
        return start ^ ((fill // self.m.s) & 1)

    def _wait_barrier(self, proc: _Proc, step: str, fill: int) -> int | None:
        m, s = self.m, fill % self.m.s
        if proc.role == "producer" and step == "acquire":
            return m.barrier(proc.cta, "empty", s) if m.plan.empty else None
        if step == "wait":
            return m.barrier(proc.cta, "full", s)
        return None

    def enabled(self, st: State, k: int) -> bool:
        proc = self.m.procs[k]
        fill, step_i = st.pcs[k]
        if fill >= self.m.fills:
            return False
        step = proc.steps[step_i]
        b = self._wait_barrier(proc, step, fill)
        if b is not None:
            if self.m.count(b) == 0:
                return True            # fires, and reports the uninitialised barrier
            return wait_passes(st.barriers[b][0], self._parity(proc, fill))
        if proc.role == "producer" and step == "acquire" and fill >= 1:
            # a sync release: the kernel's CTA / cluster barrier after every fill's reads, which the producer
            # passes too, so fill f starts once every consumer of the cluster has released fill f - 1
            return all(st.released[j] >= fill for j, q in enumerate(self.m.procs) if q.role == "consumer")
        return True

    def step(self, st: State, k: int) -> State:
        m, proc = self.m, self.m.procs[k]
        fill, step_i = st.pcs[k]
        step, s = proc.steps[step_i], fill % m.s
        work = _Work(list(st.barriers), list(st.stages), list(st.ops), list(st.released))
        b = self._wait_barrier(proc, step, fill)
        if b is not None and m.count(b) == 0:
            raise self._fail(f"the {proc.name} waits on {self._name(b)} (fill {fill}), a barrier the plan never "
                             f"initialises", "barrier", b, fill)
        if proc.role == "producer":
            self._produce(st, work, k, step, fill)
        elif step == "wait" and proc.role == "consumer":
            self._read(st, proc, fill)
        elif step == "release":
            if m.plan.consumer.release == "commit":
                work.ops += [("release", k, t, m.barrier(t, "empty", s), 0, fill, 1)
                             for t in m.plan.release_targets(proc.cta)]
            else:
                work.released[k] = fill + 1
                for t in m.plan.release_targets(proc.cta):
                    self._signal(work.barriers, m.barrier(t, "empty", s), proc.weight, 0, f"the {proc.name}", fill)
        elif step == "relay":
            self._signal(work.barriers, m.barrier(proc.cta & ~1, "full", s), 1, 0, f"the {proc.name}", fill)
        nxt = (fill, step_i + 1) if step_i + 1 < len(proc.steps) else (fill + 1, 0)
        self.trace.append(f"{proc.name}: {step} (fill {fill}, stage {s})")
        return State(st.pcs[:k] + (nxt,) + st.pcs[k + 1:], tuple(work.released), tuple(work.barriers),
                      tuple(work.stages), tuple(sorted(work.ops, key=repr)))

    def _produce(self, st: State, work: "_Work", k: int, step: str, fill: int) -> None:
        m, proc = self.m, self.m.procs[k]
        s, who = fill % m.s, f"the {proc.name}"
        if step == "acquire":                          # the stage is the producer's from here on
            for _, data_cta, _, _ in m.contributions(k):
                self._overwrite(st, proc.cta, data_cta, s, fill, who)
        elif step == "arm":
            self._signal(work.barriers, m.barrier(proc.cta, "full", s), 1, m.plan.full[proc.cta].tx, who, fill)
        elif step in ("issue", "write"):
            # one completion per (data CTA, barrier): the copies of one issue landing in one CTA together
            landing: dict[tuple[int, int], list] = {}
            for key, data_cta, bar_cta, nbytes in m.contributions(k):
                slot = data_cta * m.s + s
                if work.stages[slot][0] != fill:
                    work.stages[slot] = (fill, frozenset())
                group = landing.setdefault((data_cta, m.barrier(bar_cta, "full", s)), [frozenset(), 0, 0])
                group[0] |= {key}
                group[1] += nbytes
                group[2] += proc.weight if key[0] == "cp" else 0
            if step == "issue":
                work.ops += [("land", keys, data_cta, b, nbytes, fill, arrivals)
                             for (data_cta, b), (keys, nbytes, arrivals) in landing.items()]
        elif step == "commit":
            for key, data_cta, bar_cta, _ in m.contributions(k):
                full = m.barrier(bar_cta, "full", s)
                if m.plan.producer.kind == "commit":
                    work.ops.append(("land", frozenset({key}), data_cta, full, 0, fill, 1))
                else:
                    slot = data_cta * m.s + s
                    work.stages[slot] = (fill, work.stages[slot][1] | {key})
                    self._signal(work.barriers, full, proc.weight, 0, who, fill)

    def _read(self, st: State, proc: _Proc, fill: int) -> None:
        """A consumer past its wait: every stage it reads holds all of fill ``fill``."""
        m, s = self.m, fill % self.m.s
        for r in m.plan.readers(proc.cta):
            have_fill, landed = st.stages[r * m.s + s]
            missing = m.expected[r] - landed if have_fill == fill else m.expected[r]
            if missing:
                full = m.barrier(proc.cta, "full", s)
                why = (f"its phase {fill // m.s} had not completed: the wait's parity is wrong"
                       if st.barriers[full][0] <= fill // m.s else
                       "the barrier's count or expect_tx let the phase complete first")
                raise self._fail(f"early read: the {proc.name} passed {self._name(full)} for fill {fill} before "
                                 f"{len(missing)} of {len(m.expected[r])} contribution(s) to CTA {r}'s stage {s} "
                                 f"landed: {why}", "early read", full, fill)

    def _overwrite(self, st: State, producer: int, cta: int, s: int, fill: int, who: str) -> None:
        """A refill of CTA ``cta``'s stage ``s`` by CTA ``producer``'s producer, checked against every consumer that
        reads that stage: each must have released the fill it held."""
        if fill < self.m.s:
            return
        for j, q in enumerate(self.m.procs):
            if q.role == "consumer" and cta in self.m.plan.readers(q.cta) and st.released[j] <= fill - self.m.s:
                if not self.m.plan.empty:
                    raise self._fail(f"overwrite: {who} refills CTA {cta}'s stage {s} with fill {fill} before the "
                                     f"{q.name} released fill {fill - self.m.s}", "overwrite", None, fill)
                b = self.m.barrier(producer, "empty", s)
                why = ("its wait's parity is wrong" if st.barriers[b][0] < fill // self.m.s else
                       "its count let the phase complete before every release")
                raise self._fail(f"overwrite: {who} passed {self._name(b)} and refills CTA {cta}'s stage {s} with "
                                 f"fill {fill} before the {q.name} released fill {fill - self.m.s}: {why}",
                                 "overwrite", b, fill)

    def complete(self, st: State, i: int) -> State:
        op = st.ops[i]
        ops = st.ops[:i] + st.ops[i + 1:]
        barriers, stages, released = list(st.barriers), list(st.stages), list(st.released)
        kind, key, cta, b, nbytes, fill, arrivals = op
        if kind == "land":
            slot = cta * self.m.s + fill % self.m.s
            if stages[slot][0] == fill:
                stages[slot] = (fill, stages[slot][1] | key)
            self._signal(barriers, b, arrivals, -nbytes, f"the fill {fill} copy {key}", fill)
            self.trace.append(f"landed: {', '.join(map(str, sorted(key)))} in CTA {cta} (fill {fill}), " +
                              (f"{nbytes} B on " if nbytes else f"{arrivals} arrival(s) on ") + self._name(b))
        else:
            released[key] = max(released[key], fill + 1)
            self._signal(barriers, b, 1, 0, f"the commit of the {self.m.procs[key].name}", fill)
            self.trace.append(f"committed: the {self.m.procs[key].name}'s release of fill {fill} on {self._name(b)}")
        return State(st.pcs, tuple(released), tuple(barriers), tuple(stages), ops)

    def moves(self, st: State) -> Iterator[tuple[str, int]]:
        for k in range(len(self.m.procs)):
            if self.enabled(st, k):
                yield "step", k
        for i in range(len(st.ops)):
            yield "op", i

    def apply(self, st: State, move: tuple[str, int]) -> State:
        return self.step(st, move[1]) if move[0] == "step" else self.complete(st, move[1])

    def finished(self, st: State) -> bool:
        return all(pc[0] >= self.m.fills for pc in st.pcs) and not st.ops

    def settle(self, st: State) -> None:
        """After the last fill every barrier has completed one phase per fill of its stage, with no arrival or byte
        left over: otherwise its count or expect_tx differs from what the roles deliver."""
        m = self.m
        for b, (done, pending, tx) in enumerate(st.barriers):
            count = m.count(b)
            if count == 0:
                continue
            kind, cta, stage = m.describe(b)
            want = len(range(stage, m.fills, m.s)) * (self._signalled(kind, cta) > 0)
            if (done, pending, tx) != (want, count, 0):
                raise self._fail(f"after {m.fills} fills {kind}[{stage}] of CTA {cta} has completed {done} phase(s) "
                                 f"with {count - pending} of its {count} arrivals and {tx} B left over; the roles "
                                 f"signal it {self._signalled(kind, cta)} arrival(s) per fill and complete {want} "
                                 f"phase(s): its count or expect_tx is wrong", "barrier", b, m.fills)

    def _signalled(self, kind: str, cta: int) -> int:
        """Arrivals the roles make on CTA ``cta``'s ``kind`` barrier of a stage per fill."""
        m, plan = self.m, self.m.plan
        if kind == "empty":
            return sum(q.weight if plan.consumer.release != "commit" else 1 for q in m.procs
                       if q.role == "consumer" and cta in plan.release_targets(q.cta))
        total = sum(1 for q in m.procs if q.role == "relay" and q.cta & ~1 == cta)
        for k, q in enumerate(m.procs):
            if q.role != "producer":
                continue
            total += int(plan.arms and q.cta == cta and plan.full[cta].tx > 0)
            total += sum(q.weight if key[0] == "cp" else 0 for key, _, b, _ in m.contributions(k) if b == cta)
            if plan.producer.kind in ("arrive", "commit"):
                total += sum(q.weight for _, _, b, _ in m.contributions(k) if b == cta)
        return total

    def deadlock(self, st: State) -> PipelineError:
        """The blocked waits, naming first a barrier that received part of a phase (its count or expect_tx is
        wrong), then a producer's wait (its first pass must find every stage free: a wrong parity)."""
        blocked: list[tuple[tuple[int, int], int | None, int, str]] = []
        for k, proc in enumerate(self.m.procs):
            fill, step_i = st.pcs[k]
            if fill >= self.m.fills:
                continue
            step = proc.steps[step_i]
            b = self._wait_barrier(proc, step, fill)
            if b is None:
                blocked.append(((2, k), None, fill, f"the {proc.name} waits at {step} of fill {fill} for the "
                                                    f"consumers' CTA barrier"))
                continue
            done, pending, tx = st.barriers[b]
            partial = (pending, tx) != (self.m.count(b), 0)
            blocked.append(((0 if partial else 1 if proc.role == "producer" else 2, k), b, fill,
                            f"the {proc.name} waits on {self._name(b)} for parity {self._parity(proc, fill)} (fill "
                            f"{fill}); the barrier has completed {done} phase(s), with {self.m.count(b) - pending} of "
                            f"its {self.m.count(b)} arrivals and {tx} B outstanding"))
        blocked.sort(key=lambda x: x[0])
        _, b, fill, _ = blocked[0]
        return self._fail("deadlock: " + "; ".join(line for *_, line in blocked), "deadlock", b, fill)
