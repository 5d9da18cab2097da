"""Warp-collective instructions (PTX ISA #parallel-synchronization-and-communication-instructions-elect-sync,
#data-movement-and-conversion-instructions-shfl-sync, -vote-sync, -match-sync, -redux-sync, -bar-warp-sync, and the
``.sync.aligned`` tcgen05 instructions): a lane that reaches one waits until every live lane of its member mask
has reached one with the same mask, then all of them complete it together. A lane outside its own member mask,
lanes meeting at different collectives, and a shuffle from a lane that is not a member are errors (undefined in
PTX). ``elect.sync`` elects the lowest member lane (PTX promises only that the choice is the same every time)."""
from __future__ import annotations

from .ctabase import CtaBase
import numpy as np

from ..errors import EmulationError
from .numeric import minmax
from .operands import MASK

__all__ = ["Warp", "WarpMixin"]

_FULL = MASK[32]


class Warp:
    """A warp's live lanes and the collectives its lanes have reached, by member mask."""

    def __init__(self, cta, index: int):
        self.cta, self.index = cta, index
        self.lanes: dict[int, object] = {}
        self.live = 0
        self.pending: dict[int, dict] = {}

    def add(self, th) -> None:
        self.lanes[th.lane] = th
        self.live |= 1 << th.lane

    def on_exit(self, th) -> None:
        self.live &= ~(1 << th.lane)
        for mask in list(self.pending):
            self.cta.try_collective(self, mask, None)


def _member_mask(site, values: tuple, warp: Warp) -> int:
    index = {"warpsync": 0, "elect": 0, "shfl": 3, "vote": 1, "match": 1, "redux": 1}.get(site.kind)
    return values[index] & _FULL if index is not None else warp.live


def _shfl(mode: str, lane: int, b: int, c: int) -> tuple[int, bool]:
    bval, cval, seg = b & 31, c & 31, (c >> 8) & 31
    max_lane = (lane & seg) | (cval & ~seg & 31)
    min_lane = lane & seg
    if mode == "up":
        j = lane - bval
        ok = j >= max_lane
    elif mode == "down":
        j = lane + bval
        ok = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval
        ok = j <= max_lane
    else:
        j = min_lane | (bval & ~seg & 31)
        ok = j <= max_lane
    return (j if ok else lane), ok


def _redux(mods: tuple, values: list[int]) -> int:
    t = mods[-1]
    if t == "f32":
        op = "min" if "min" in mods else "max"
        fn = minmax(op, "f32", False, "NaN" in mods, "abs" in mods)
        out = values[0]
        for v in values[1:]:
            out = fn(out, v)
        return out
    op = next(m for m in mods if m in ("add", "min", "max", "and", "or", "xor"))
    xs = [((v ^ 0x80000000) - 0x80000000) if t == "s32" else v for v in values]
    if op == "add":
        return sum(xs) & _FULL
    if op in ("min", "max"):
        return (min(xs) if op == "min" else max(xs)) & _FULL
    out = 0 if op != "and" else _FULL
    for v in xs:
        out = out & v if op == "and" else (out | v if op == "or" else out ^ v)
    return out


def _lanes(lanes) -> str:
    from .report import _ranges
    return _ranges(sorted(lanes))


def _join(threads: list) -> None:
    """The lanes that complete a warp-collective instruction together are ordered after what each did before it
    (``bar.warp.sync`` guarantees this, PTX ISA #parallel-synchronization-and-communication-instructions-bar-warp-
    sync; the model extends it to every ``.sync`` warp instruction, as an elected lane's arrival after the warp's
    reads relies on)."""
    if len(threads) < 2:
        return
    acc = np.maximum.reduce([th.vc for th in threads])
    for th in threads:
        np.maximum(th.vc, acc, out=th.vc)
        th.tick()


def _set(th, slot: int | None, value) -> None:
    if slot is not None:
        th.R[slot] = value


class WarpMixin(CtaBase):
    """``collective``: a lane reaching a warp-collective instruction (mixed into ``scheduler.Cta``)."""

    def collective(self, th, site, values: tuple, nxt: int) -> int:
        warp = self.warps[th.warp]
        mask = _member_mask(site, values, warp)
        if not mask >> th.lane & 1:
            raise EmulationError(f"{th!r} executes {site.text!r} with member mask {mask:#x}, which leaves its own "
                                 f"lane out (undefined in PTX)")
        group = warp.pending.setdefault(mask, {})
        group[th.lane] = (th, site, values, nxt)
        if self.try_collective(warp, mask, th):
            return nxt
        return self.suspend(th, nxt, ("warp", self, warp, mask))

    def try_collective(self, warp: Warp, mask: int, current) -> bool:
        group = warp.pending.get(mask, {})
        members = mask & warp.live
        arrived = sum(1 << lane for lane in group)
        if not group or arrived & members != members:
            return False
        del warp.pending[mask]
        if self.world.conventions:
            self._whole_warp_calls(warp, group)
        if len({site.kind for _, site, _, _ in group.values()}) > 1:
            sites = sorted({(site.line, site.text) for _, site, _, _ in group.values()})
            where = "; ".join(f"{_lanes(lane for lane, g in group.items() if g[1].line == line)} at PTX line {line} "
                              f"({text!r}){self.world.convention_note(line)}" for line, text in sites)
            raise EmulationError(f"the lanes of warp {warp.index} of {self.name} meet at different warp-collective "
                                 f"instructions: lanes {where}")
        self.execute_collective(warp, group)
        _join([th for th, _, _, _ in group.values()])
        for th, _, _, nxt in group.values():
            if th is not current:
                self.wake(th, nxt)
        return True

    def _whole_warp_calls(self, warp: Warp, group: dict) -> None:
        """Lanes that complete a warp-collective instruction of a function called by whole warps must all be in
        that function (a lane elsewhere means the warp did not call it together)."""
        owners = {lane: self.world.owner_at(site.line) for lane, (_, site, _, _) in group.items()}
        for name in set(owners.values()):
            conv = self.world.conventions.get(name)
            lanes = {lane for lane, o in owners.items() if o == name}
            if conv is not None and conv.caller in ("warp", "warps", "warpgroup") and lanes != set(group):
                from .conventions import ConventionError
                raise ConventionError(f"{name} (its convention: called by {conv.caller}) is called by lanes "
                                      f"{_lanes(lanes)} of warp {warp.index} of {self.name}; lanes "
                                      f"{_lanes(set(group) - lanes)} meet its warp-collective instructions from "
                                      f"elsewhere")

    def execute_collective(self, warp: Warp, group: dict) -> None:
        site = next(iter(group.values()))[1]
        kind = site.kind
        if kind == "warpsync":
            return
        if kind.startswith("tcgen05.") and not hasattr(site, "decode"):     # alloc / dealloc
            self.tc_collective(warp, site, group)
            return
        if hasattr(site, "decode"):                                      # a decoded family's warp instruction
            from .rtemit_sync import KERNEL_EXECUTORS
            KERNEL_EXECUTORS[kind][0](self, warp, site, group)
            return
        lanes = sorted(group)
        if kind == "elect":
            leader = lanes[0]
            for lane, (th, s, _, _) in group.items():
                _set(th, s.dests[0], leader)
                _set(th, s.dests[-1], lane == leader)
        elif kind == "shfl":
            self._shuffle(warp, group)
        elif kind == "vote":
            self._vote(group)
        elif kind == "match":
            self._match(group)
        else:
            result = _redux(site.mods, [group[lane][2][0] for lane in lanes])
            for th, s, _, _ in group.values():
                _set(th, s.dests[0], result)

    def _shuffle(self, warp: Warp, group: dict) -> None:
        for lane, (th, s, values, _) in group.items():
            mode = next(m for m in s.mods if m in ("up", "down", "bfly", "idx"))
            j, ok = _shfl(mode, lane, values[1], values[2])
            if j not in group:
                raise EmulationError(f"{th!r}: {s.text!r} reads lane {j}, which is not in the member mask "
                                     f"(undefined in PTX)")
            _set(th, s.dests[0], group[j][2][0])
            if len(s.dests) > 1:
                _set(th, s.dests[1], ok)

    def _vote(self, group: dict) -> None:
        preds = {lane: bool(v[0]) for lane, (_, _, v, _) in group.items()}
        ballot = sum(1 << lane for lane, p in preds.items() if p)
        for th, s, _, _ in group.values():
            mode = next(m for m in s.mods if m in ("all", "any", "uni", "ballot"))
            value = {"all": all(preds.values()), "any": any(preds.values()),
                     "uni": len(set(preds.values())) == 1, "ballot": ballot}[mode]
            _set(th, s.dests[0], value)

    def _match(self, group: dict) -> None:
        values = {lane: v[0] for lane, (_, _, v, _) in group.items()}
        members = sum(1 << lane for lane in values)
        same = len(set(values.values())) == 1
        for lane, (th, s, _, _) in group.items():
            if "any" in s.mods:
                _set(th, s.dests[0], sum(1 << k for k, v in values.items() if v == values[lane]))
            else:
                _set(th, s.dests[0], members if same else 0)
                if len(s.dests) > 1:
                    _set(th, s.dests[1], same)

    def activemask(self, th) -> int:
        return self.warps[th.warp].live

