"""``setmaxnreg`` in a whole-kernel run (PTX ISA #miscellaneous-instructions-setmaxnreg): each warp holds a
per-thread register count, the launch's (ptxas's ``EIATTR_REGCOUNT`` of the compiled kernel) at first; ``.dec``
gives registers back to the CTA's pool, ``.inc`` takes them from it and blocks until the pool has enough -- a
kernel whose increases ask for more than its decreases released waits forever, reported as a deadlock naming the
pool. Every lane of the warp executes the instruction (``.sync.aligned``): the first lane to reach it makes the
warp's request, the others must reach the same one; the count is 24 to 256, a multiple of 8, and moves the way
the instruction says. Every warp of a warpgroup must execute the same ``setmaxnreg`` (checked when the CTA exits:
the warps' histories must agree). Without a cubin (PTX text) the launch's count is unknown and the pool is not
modelled."""
from __future__ import annotations

from ..arch.sm90.wgmma import MAXNREG_RANGE, WARPGROUP_WARPS
from ..errors import CompileError, EmulationError
from .translate import RUNTIME_EMITTERS, Code, KernelCtx
from .ctabase import CtaBase
from .front import Instr
from .operands import src

__all__ = ["RegisterRequest", "RegisterPoolMixin"]


class RegisterRequest:
    """A warp's ``setmaxnreg`` in progress: direction, count, the statement, the lanes that reached it, and
    whether the pool granted it."""

    def __init__(self, warp: int, inc: bool, count: int, line: int):
        self.warp, self.inc, self.count, self.line = warp, inc, count, line
        self.lanes: set[int] = set()
        self.granted = not inc
        self.waiters: list = []

    def describe(self, cta) -> str:
        held = cta.reg_held.get(self.warp)
        return (f"setmaxnreg.inc {self.count} of warp {self.warp} of {cta.name} (PTX line {self.line}): the warp holds "
                f"{held} registers per thread and needs {32 * (self.count - (held or 0))} more, the CTA's pool has "
                f"{cta.reg_free} free (launched with {cta.world.registers} per thread)")


class RegisterPoolMixin(CtaBase):
    """The CTA's register pool and its warps' counts (mixed into ``scheduler.Cta``)."""

    reg_free: int
    reg_held: dict
    reg_requests: dict
    reg_history: dict

    def setmaxnreg(self, th, inc: bool, count: int, line: int, nxt: int) -> int:
        """A lane reaches its next ``setmaxnreg``: the warp's request (made by its first lane there) must be the same
        instruction; the lane passes once the pool granted it."""
        key = (th.warp, th.reg_seq)
        th.reg_seq += 1
        req = self.reg_requests.get(key)
        if req is None:
            req = self.reg_requests[key] = RegisterRequest(th.warp, inc, count, line)
            self._request(req)
        elif (req.inc, req.count, req.line) != (inc, count, line):
            raise EmulationError(f"the lanes of warp {th.warp} of {self.name} execute different setmaxnreg "
                                 f"instructions (PTX lines {req.line} and {line}; .sync.aligned)")
        req.lanes.add(th.lane)
        if req.lanes >= {lane for lane in range(32) if self.warps[th.warp].live >> lane & 1}:
            del self.reg_requests[key]
        if req.granted:
            return nxt
        req.waiters.append((th, nxt))
        return self.suspend(th, nxt, ("setmaxnreg", self, req))

    def _request(self, req: RegisterRequest) -> None:
        launched = self.world.registers
        held = self.reg_held.setdefault(req.warp, launched)
        self.reg_history.setdefault(req.warp, []).append((req.inc, req.count))
        if held is not None and (req.count < held if req.inc else req.count > held):
            raise EmulationError(f"setmaxnreg.{'inc' if req.inc else 'dec'} {req.count} by warp {req.warp} of "
                                 f"{self.name}, which holds {held} registers per thread: .inc raises the count and "
                                 f".dec lowers it (PTX ISA #miscellaneous-instructions-setmaxnreg)")
        if held is None:                               # no cubin: the launch's count is unknown
            req.granted = True
            return
        if not req.inc:
            self.reg_free += 32 * (held - req.count)
            self.reg_held[req.warp] = req.count
            self._grant_waiting()
            return
        self._grant(req)

    def _grant(self, req: RegisterRequest) -> bool:
        need = 32 * (req.count - self.reg_held[req.warp])
        if need > self.reg_free:
            return False
        self.reg_free -= need
        self.reg_held[req.warp] = req.count
        req.granted = True
        for th, nxt in req.waiters:
            self.wake(th, nxt)
        req.waiters = []
        return True

    def _grant_waiting(self) -> None:
        for req in list(self.reg_requests.values()) + [w[2] for th in self.threads
                                                       if (w := th.waiting) and w[0] == "setmaxnreg"]:
            if req.inc and not req.granted:
                self._grant(req)

    def check_register_history(self) -> None:
        """Every warp of a warpgroup executed the same setmaxnreg instructions (PTX: all warps of the warpgroup)."""
        history = self.reg_history
        for warp in history:
            first = WARPGROUP_WARPS * (warp // WARPGROUP_WARPS)
            group = [history.get(w, []) for w in range(first, min(first + WARPGROUP_WARPS, len(self.warps)))]
            if any(h != group[0] for h in group):
                raise EmulationError(f"the warps of warpgroup {warp // WARPGROUP_WARPS} of {self.name} execute "
                                     f"different setmaxnreg sequences {group} (PTX ISA #miscellaneous-instructions-"
                                     f"setmaxnreg: every warp of the warpgroup executes the same one)")


def _setmaxnreg(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    if mods[0] not in ("inc", "dec") or len(ins.args) != 1:
        raise CompileError("setmaxnreg.{inc,dec}.sync.aligned.u32 count")
    count = int(src(ctx, ins.args[0], 32))
    if count not in MAXNREG_RANGE:
        raise CompileError(f"setmaxnreg count {count}: {MAXNREG_RANGE.start} to {MAXNREG_RANGE.stop - 1}, a multiple "
                           f"of {MAXNREG_RANGE.step} (PTX ISA #miscellaneous-instructions-setmaxnreg)")
    return Code((f"return m.setmaxnreg(th, {mods[0] == 'inc'}, {count}, {ins.line}, {{next}})",), "wait")


RUNTIME_EMITTERS["setmaxnreg"] = _setmaxnreg
