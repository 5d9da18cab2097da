"""A single-thread interpreter for the PTX that NVRTC emits around generated issue code: what one thread of a kernel
issues (the old, cheap check of generated *code* against its plan). ``pycute.interp.run_kernel`` runs whole kernels.

It runs one thread (a lane of a full warp) through one ``.entry`` of any kernel (performance directives such as
``.maxntid``, ``.reqntid``, ``.reqnctapercluster``, ``.explicitcluster``, ``.minnctapersm`` are accepted) --
integer and floating-point arithmetic, conversions, moves, ``cvta``, addresses of shared symbols, predicates and
branches, braces blocks with their scoped registers, ``elect.sync`` and the instruction families of
``ISSUE_DECODERS`` -- and returns the stream it would issue. Barriers, fences, ``mbarrier.init`` / ``arrive`` and
``tcgen05.commit`` / ``fence`` / ``wait`` change no register of the thread and are recorded in order
(``clusterlaunchcontrol.query_cancel`` decodes a response register; ``vprintf`` and ``trap`` are recorded)
(``trace_entry``); ``mbarrier.try_wait`` succeeds at once and loads from memory read 0 (this model has one thread,
no memory and no asynchrony). ``elect.sync`` elects the lowest lane of its member mask (PTX only promises the same
lane every time; which one does not change what is issued). The stream can be compared with the plan and fed to the
emulator. An instruction outside the subset is a CompileError, never skipped; so are parameters, symbols or a
thread the entry does not have.
"""
from __future__ import annotations

import re
from typing import Callable

from .translate import emit_inline
from .front import Entry, Instr, demangle, parse_entry
from .operands import Ctx

from ..codegen.probe import PROBE_SHARED_SYMBOL, probe_entry
from ..errors import CompileError
from ..sim.executors import REGISTER_VALUES, clc, cp_async, mma, smem_ldst, tcgen05_cp, tcgen05_ldst, tma, wgmma
from ..sim.executors import bulk
from .printf import format_printf, string_symbols

#: PTX opcode prefix -> the executor's decoder of its issued instructions (pycute.sim.executors).
ISSUE_DECODERS = {"tcgen05.cp": tcgen05_cp.decode, "tcgen05.ld": tcgen05_ldst.decode, "tcgen05.st": tcgen05_ldst.decode,
                  "cp.async.bulk.tensor": tma.decode, "cp.async.bulk.prefetch.tensor": tma.decode,
                  "cp.async.ca": cp_async.decode, "cp.async.cg": cp_async.decode,
                  "cp.async.bulk.shared::cluster": bulk.decode, "cp.async.bulk.global": bulk.decode,
                  "tcgen05.mma": mma.decode, "wgmma.mma_async": wgmma.decode, "stmatrix": smem_ldst.decode,
                  "ldmatrix": smem_ldst.decode, "st.shared": smem_ldst.decode, "ld.shared": smem_ldst.decode,
                  "tensormap.replace": tma.decode_replace, "tensormap.cp_fenceproxy": tma.decode_publish,
                  "clusterlaunchcontrol.try_cancel": clc.decode}
#: Which of a thread's lists each family's records go to.
_RECORDS = {"tcgen05.cp": "issued", "tcgen05.ld": "ldst", "tcgen05.st": "ldst", "cp.async.bulk.tensor": "tma",
            "cp.async.bulk.prefetch.tensor": "tma", "cp.async.ca": "cp_async", "cp.async.cg": "cp_async",
            "cp.async.bulk.shared::cluster": "bulk", "cp.async.bulk.global": "bulk", "tcgen05.mma": "mma",
            "wgmma.mma_async": "mma", "stmatrix": "smem", "ldmatrix": "smem", "st.shared": "smem", "ld.shared": "smem",
            "tensormap.replace": "tensormap", "tensormap.cp_fenceproxy": "tensormap",
            "clusterlaunchcontrol.try_cancel": "clc"}
#: The families whose instruction writes the registers of its first operand (the model holds no data: zeros).
_LOADS = ("tcgen05.ld", "ldmatrix", "ld.shared")


def _family(op: str) -> str | None:
    """The ISSUE_DECODERS key ``op`` starts with (``cp.async.bulk.tensor.2d...`` -> ``cp.async.bulk.tensor``)."""
    return next((k for k in ISSUE_DECODERS if op == k or op.startswith(k + ".")), None)


# TMA reductions decode as TMA stores (their reduction is in the opcode).
ISSUE_DECODERS["cp.reduce.async.bulk.tensor"] = tma.decode
_RECORDS["cp.reduce.async.bulk.tensor"] = "tma"

__all__ = ["run_entry", "trace_entry", "probe_stream", "ldst_stream", "GENERIC_SHARED_WINDOW", "SPECIAL_DEFAULTS"]

#: Where this model places the shared window in the generic address space (cvta.shared adds it).
GENERIC_SHARED_WINDOW = 0x7F00_0000_0000

_MASK = {8: 0xFF, 16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}
# Statements that order or signal but write no register of the thread.
_SYNC_OPS = ("bar", "barrier", "fence", "membar")
_SYNC_TCGEN05 = ("commit", "fence::before_thread_sync", "fence::after_thread_sync", "wait::ld", "wait::st", "alloc",
                 "dealloc", "relinquish_alloc_permit")
#: The special registers of the grid and the cluster a thread may read, and their values when the caller gives none
#: (PTX ISA "Special Registers"): one CTA of 128 threads, alone in its cluster.
SPECIAL_DEFAULTS = {"%ctaid.x": 0, "%ctaid.y": 0, "%ctaid.z": 0, "%nctaid.x": 1, "%nctaid.y": 1, "%nctaid.z": 1,
                    "%ntid.x": 128, "%ntid.y": 1, "%ntid.z": 1, "%cluster_ctarank": 0, "%cluster_nctarank": 1,
                    "%cluster_ctaid.x": 0, "%cluster_ctaid.y": 0, "%cluster_ctaid.z": 0, "%cluster_nctaid.x": 1,
                    "%cluster_nctaid.y": 1, "%cluster_nctaid.z": 1, "%clusterid.x": 0, "%clusterid.y": 0,
                    "%clusterid.z": 0, "%nclusterid.x": 1, "%nclusterid.y": 1, "%nclusterid.z": 1}
_SYNC_BULK = ("cp.async.bulk.commit_group", "cp.async.bulk.wait_group", "cp.async.commit_group", "cp.async.wait_group",
              "cp.async.wait_all", "cp.async.mbarrier.arrive")


def _width(type_suffix: str) -> int:
    m = re.search(r"(\d+)$", type_suffix)
    return int(m.group(1)) if m else 32


class _TraceCtx(Ctx):
    """Registers as entries of the thread's dict (a missing one was never written); special registers and symbols
    read through the thread."""

    def __init__(self, entry: Entry):
        super().__init__()
        self.entry = entry

    def reg(self, name: str) -> str:
        return f"R[{name!r}]"

    def special(self, name: str) -> str:
        return f"th.value({name!r})"

    def symbol(self, name: str) -> str:
        return f"th.value({name!r})"

    def reg_bits(self, name: str) -> int | None:
        from .front import REG_WIDTH
        t = self.entry.reg_type(name)
        return REG_WIDTH[t] if t is not None else None


_COMPILED: dict[tuple, Callable] = {}


def _compile_alu(ins: Instr, entry: Entry) -> Callable | None:
    """The statement as a function of (registers, thread), decoded once (None: not arithmetic, logic or a move)."""
    key = (ins.op, ins.args, ins.guard is not None, id(entry))
    if key not in _COMPILED:
        ctx = _TraceCtx(entry)
        lines = emit_inline(ins, ctx)
        if lines is None:
            return None
        source = "def _f(R, th):\n" + "".join(f"    {line}\n" for line in lines)
        scope = dict(ctx.namespace)
        exec(compile(source, f"<ptx line {ins.line}>", "exec"), scope)   # noqa: S102  generated from the PTX
        _COMPILED[key] = scope["_f"]
    return _COMPILED[key]


class _Thread:
    """One thread's registers while it runs an entry's statements; ``issued`` collects its ``tcgen05.cp``."""

    def __init__(self, params: dict, symbols: dict, lane: int, tid: int, specials: dict | None = None):
        self.params, self.symbols, self.lane = params, symbols, lane
        unknown = sorted(set(specials or {}) - set(SPECIAL_DEFAULTS))
        if unknown:
            raise CompileError(f"special registers {', '.join(unknown)} are not modelled (one of "
                               f"{', '.join(SPECIAL_DEFAULTS)})")
        self.specials = {**SPECIAL_DEFAULTS, **(specials or {}), "%tid.x": tid, "%tid.y": 0, "%tid.z": 0,
                         "%laneid": lane, "%warpid": tid // 32}
        self.regs: dict[str, int] = {}
        self.cc = 0
        self.issued: list = []
        self.ldst: list = []
        self.tma: list = []
        self.cp_async: list = []
        self.bulk: list = []
        self.mma: list = []
        self.smem: list = []
        self.tensormap: list = []
        self.clc: list = []
        self.trace: list = []
        self.local: dict[int, int] = {}         # local memory by byte address (printf's argument buffer)
        self.call_params: dict[str, int] = {}   # a call's .param operands
        self.printed: list[str] = []            # what vprintf would print; trap: the last line, when it trapped
        self.trap: str | None = None
        self.symbols_text: dict[int, str] = {}  # printf format strings by address

    def value(self, tok: str, bits: int = 64) -> int:
        tok = tok.strip()
        if tok in self.regs:
            return self.regs[tok]
        if tok in self.specials:
            return self.specials[tok]
        if tok.startswith("%"):
            raise CompileError(f"PTX reads register {tok} before writing it")
        if tok in self.symbols:
            return self.symbols[tok]
        if tok in self.params:             # a by-value parameter whose address is taken (a __grid_constant__ tensor
            return self.params[tok]        # map): the value given for it is that address
        if tok.startswith("__local_depot"):   # the thread's local frame, at local address 0 in this model
            return 0
        if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", tok):          # an f32 immediate, by its bits
            return int(tok[2:], 16)
        if tok.startswith("_Z"):           # a function's static __shared__ array: _ZZ<fn>E<len><name>
            name = demangle(tok)
            if name in self.symbols:
                return self.symbols[name]
        if re.fullmatch(r"-?0[xX][0-9a-fA-F]+[U]?", tok):
            return int(tok.rstrip("U"), 16) & ((1 << bits) - 1)
        if re.fullmatch(r"-?\d+[U]?", tok):
            return int(tok.rstrip("U")) & ((1 << bits) - 1)
        raise CompileError(f"PTX operand {tok!r} is not a register, symbol or integer (symbols given: "
                           f"{', '.join(self.symbols) or 'none'})")

    def _issue(self, family: str, op: str, args: list) -> None:
        """An instruction of a family the executors model: decoded by its executor into the record a plan streams
        (``issued`` for tcgen05.cp, ``ldst`` for tcgen05.ld/st, ``tma`` for TMA), an ld's destination registers set."""
        record = ISSUE_DECODERS[family](op, args, self.value)
        getattr(self, _RECORDS[family]).append(record)
        self.trace.append(record)
        if family in _LOADS:
            for reg in args[0].strip("{}").split(","):
                self.regs[reg.strip()] = 0

    def guard_passes(self, pred: str) -> bool:
        p = self.regs.get(pred.lstrip("!"))
        if p is None:
            raise CompileError(f"PTX predicate {pred} read before it is set")
        return bool(p) != pred.startswith("!")

    def execute(self, op: str, args: list, ins: Instr, entry: Entry) -> None:
        """Run one statement that is not control flow."""
        parts = op.split(".")
        base = parts[0]
        bits = _width(parts[-1]) if len(parts) > 1 else 32
        if base in _SYNC_OPS or (base == "tcgen05" and parts[1] in _SYNC_TCGEN05) or \
                (base == "mbarrier" and parts[1] in ("init", "arrive")) or op.startswith(_SYNC_BULK) or \
                op.startswith(wgmma.SYNC_PREFIXES):
            if base == "mbarrier" and parts[1] == "arrive" and args and args[0] != "_":
                self.regs[args[0]] = 0                       # the arrival's state token
            self.trace.append((op, [self.value(a.strip("[]")) if a.strip("[]") in self.regs else a for a in args]))
        elif base == "mbarrier" and parts[1] in ("try_wait", "test_wait"):
            self.regs[args[0]] = 1                           # the phase has completed (no asynchrony here)
        elif (family := _family(op)) is not None:
            self._issue(family, op, args)
        elif op.startswith("clusterlaunchcontrol.query_cancel"):
            self.regs.update(clc.query(op, args, self.value))
        elif base in REGISTER_VALUES:                        # mapa, createpolicy: this model's values of them
            self.regs[args[0]] = REGISTER_VALUES[base](op, args, self.value)
        elif base == "st" and "param" in parts:            # a call's argument
            self.call_params[args[0].strip("[]").split("+")[0].strip()] = self.value(args[1], bits)
        elif base in ("ld", "st") and "local" in parts:
            self._local(base, bits, args)
        elif base == "call":
            self._call(ins.text)
        elif base == "shfl":
            # The one thread modelled stands for its warp: shfl.sync returns its own value, which is the source
            # lane's for warp-uniform operands (what pycute_warp_index() shuffles).
            self.regs[args[0].split("|")[0].strip()] = self.value(args[1], 32)
        elif base == "vote":                               # likewise: every member lane holds this predicate
            pred = self.guard_passes(args[1].strip())
            mask = self.value(args[2], 32) if len(args) > 2 else 0xFFFFFFFF
            self.regs[args[0]] = (mask if pred else 0) if "ballot" in parts else int(pred or "uni" in parts)
        elif base in ("ld", "st") and "param" not in parts:
            if base == "ld":                                 # data from memory this model does not hold
                for reg in args[0].strip("{}").split(","):
                    self.regs[reg.strip()] = 0
            self.trace.append((op, args))
        elif base == "elect":
            self._elect(args, ins)
        elif base == "cvta":                                 # only the shared window moves (interp.memory)
            window = GENERIC_SHARED_WINDOW if any(p.startswith("shared") for p in parts) else 0
            a = self.value(args[1])
            self.regs[args[0]] = (a - window if "to" in parts else a + window) & ((1 << int(parts[-1][1:])) - 1)
        elif base == "ld" and "param" in parts:
            m = re.fullmatch(r"\[(\w+)(?:\+(\d+))?\]", args[1])
            if m and m.group(1).startswith("retval"):        # a call's return value (vprintf's count)
                self.regs[args[0]] = 0
                return
            if not m or m.group(1) not in self.params:
                raise CompileError(f"ld.param from {args[1]!r}: no value given for that parameter")
            self.regs[args[0]] = self.params[m.group(1)] & ((1 << 64) - 1)
        else:
            self._alu(ins, entry)

    def _local(self, base: str, bits: int, args: list) -> None:
        """``st.local`` / ``ld.local`` on this thread's local bytes (the printf argument buffer)."""
        m = re.fullmatch(r"\[\s*([^\]+\s]+)\s*(?:\+\s*(-?\d+))?\s*\]", (args[0] if base == "st" else args[1]).strip())
        if m is None:
            raise CompileError(f"{base}.local address {args!r} is not [reg] or [reg+imm]")
        address = self.value(m.group(1)) + int(m.group(2) or 0)
        if base == "ld":
            self.regs[args[0]] = sum(self.local.get(address + k, 0) << (8 * k) for k in range(bits // 8))
            return
        value = self.value(args[1], bits)
        self.local.update({address + k: value >> (8 * k) & 0xFF for k in range(bits // 8)})
        self.trace.append(("st.local", [address, value]))

    def _call(self, stmt: str) -> None:
        """``call (retval), vprintf, (format, arguments)``: the line is recorded (other callees are refused)."""
        m = re.fullmatch(r"call(?:\.uni)?\s*(?:\(\s*\w+\s*\)\s*,)?\s*(\w+)\s*,\s*\(([^)]*)\)\s*;?", stmt.strip())
        if m is None or m.group(1) != "vprintf":
            raise CompileError(f"PTX call outside the interpreted subset (vprintf only): {stmt!r}")
        fmt_param, args_param = (a.strip() for a in m.group(2).split(","))
        text = format_printf(self.symbols_text.get(self.call_params[fmt_param], ""), self.local,
                             self.call_params[args_param])
        self.printed.append(text)
        self.trace.append(("vprintf", text))

    def _elect(self, args: list, ins: Instr) -> None:
        dest, pred = (t.strip() for t in args[0].split("|"))
        mask = self.value(args[1], 32)
        if not mask >> self.lane & 1:
            raise CompileError(f"{ins.text!r}: lane {self.lane} is not in the member mask {mask:#x} (undefined)")
        leader = (mask & -mask).bit_length() - 1
        self.regs[pred] = int(self.lane == leader)
        if dest != "_":
            self.regs[dest] = leader

    def _alu(self, ins: Instr, entry: Entry) -> None:
        fn = _compile_alu(ins, entry)
        if fn is None:
            raise CompileError(f"PTX instruction outside the interpreted subset: {ins.text!r}")
        try:
            fn(self.regs, self)
        except KeyError as e:
            raise CompileError(f"PTX reads register {e.args[0]} before writing it") from None


def run_entry(ptx: str, params: dict, symbols: dict, entry: str | None = None, max_steps: int = 100_000,
              lane: int = 0) -> list:
    """Run ``entry`` for lane ``lane`` of a full warp. ``params`` maps parameter index or name to its value;
    ``symbols`` maps shared-symbol names to their shared-window addresses. Returns the list of ``tcgen05.cp``
    issues."""
    return trace_entry(ptx, params, symbols, entry, max_steps, lane).issued


def _check_inputs(entry: Entry, params: dict, symbols: dict, ptx: str) -> dict:
    """Parameter values by PTX name; a parameter index or name, or a symbol, the entry does not have is an error."""
    names = [p.name for p in entry.params]
    unknown = [k for k in params if not ((isinstance(k, int) and 0 <= k < len(names)) or k in names)]
    if unknown:
        raise CompileError(f"entry {entry.name!r} has no parameter {', '.join(map(repr, unknown))} (it has "
                           f"{len(names)}: indices 0..{len(names) - 1} or names {', '.join(names)})")
    declared = {v.name for v in entry.variables} | set(re.findall(r"\.shared\s+[^;]*?([\w$]+)\s*(?:\[\d*\])?\s*;", ptx))
    known = declared | {demangle(n) for n in declared}
    missing = sorted(set(symbols) - known)
    if missing:
        raise CompileError(f"symbols {', '.join(missing)} are not shared variables of the PTX (it declares "
                           f"{', '.join(sorted({demangle(n) for n in declared})) or 'none'})")
    return {n: params[k] if k in params else params[n] for k, n in enumerate(names) if k in params or n in params}


def _thread_ids(lane: int | None, tid: int | None, specials: dict | None) -> tuple[int, int]:
    """``(lane, tid)``: the lane follows %tid.x unless given, and they must agree."""
    if tid is None:
        tid = 0 if lane is None else lane
    if lane is None:
        lane = tid % 32
    if lane != tid % 32:
        raise CompileError(f"lane {lane} and tid {tid} disagree: thread {tid} is lane {tid % 32} of its warp")
    block = (specials or {}).get("%ntid.x", SPECIAL_DEFAULTS["%ntid.x"])
    if not 0 <= tid < block:
        raise CompileError(f"thread {tid} is outside the block of {block} threads (%ntid.x; pass specials)")
    return lane, tid


def trace_entry(ptx: str, params: dict, symbols: dict, entry: str | None = None, max_steps: int = 100_000,
                lane: int | None = None, tid: int | None = None, specials: dict | None = None) -> _Thread:
    """As ``run_entry`` for thread ``tid`` (``%tid.x``; lane ``tid % 32``), returning the thread: ``.issued`` (the
    ``tcgen05.cp`` stream), ``.ldst`` (``(op, taddr, immHalfSplitoff, registers)`` per ``tcgen05.ld/st``), ``.tma``,
    ``.cp_async``, ``.bulk``, ``.mma``, ``.smem`` (stmatrix / ldmatrix / ld-st.shared: the address, and a store's
    register values), ``.tensormap`` (``tensormap.replace`` edits and ``cp_fenceproxy`` publishes), ``.clc`` and
    ``.trace`` (every issue, commit, fence, barrier, alloc, mbarrier and memory statement in program order);
    ``.printed`` holds what ``vprintf`` would print and ``.trap`` the last printed line when the thread executed
    ``trap`` (a checked build's failed precondition), where it stopped. ``specials`` sets the grid's and cluster's
    special registers
    (``{"%ctaid.y": 3, "%cluster_ctarank": 1}``; ``SPECIAL_DEFAULTS`` otherwise)."""
    if not isinstance(ptx, str):
        raise TypeError(f"run_entry: the PTX must be text, got {type(ptx).__name__}")
    _, ent = parse_entry(ptx, entry)
    values = _check_inputs(ent, params, symbols, ptx)
    lane, tid = _thread_ids(lane, tid, specials)
    where, texts = string_symbols(ptx)
    thread = _Thread(values, {**where, **symbols}, lane, tid, specials)
    thread.symbols_text = texts
    program, labels = ent.instrs, ent.labels
    pc = steps = 0
    while pc < len(program):
        steps += 1
        if steps > max_steps:
            raise CompileError(f"PTX interpretation exceeded {max_steps} steps (an unbounded loop?)")
        ins = program[pc]
        pc += 1
        if ins.guard is not None and not thread.guard_passes(ins.guard):
            continue
        op, args = ins.op, list(ins.args)
        if op in ("ret", "exit"):
            break
        if op == "trap":
            thread.trap = thread.printed[-1].rstrip("\n") if thread.printed else "trap"
            thread.trace.append(("trap", thread.trap))
            break
        if op.split(".")[0] == "bra":
            if args[0] not in labels:
                raise CompileError(f"PTX branch to unknown label {args[0]!r}")
            pc = labels[args[0]]
            continue
        try:
            thread.execute(op, args, ins, ent)
        except (IndexError, KeyError, ValueError) as e:
            if isinstance(e, CompileError):
                raise
            raise CompileError(f"PTX statement {ins.text!r} is malformed for the interpreter ({type(e).__name__}: "
                               f"{e})") from None
    return thread


def ldst_stream(ptx: str, name: str, tmem_base: int, warp: int) -> list:
    """``(op, taddr, immHalfSplitoff, registers)`` that warp ``warp`` issues in the compiled ld/st probe kernel of
    ``name`` (``pycute.codegen.kernels.ldst_probe_source``) for the allocation at ``tmem_base``."""
    return trace_entry(ptx, {0: tmem_base, 1: 0}, {}, probe_entry(name), tid=32 * warp).ldst


def probe_stream(ptx: str, name: str, smem_base: int, tmem_base: int, lane: int = 0, **values: int) -> list:
    """The ``(opcode, taddr, descriptor)`` stream lane ``lane`` issues in the compiled probe kernel of ``name`` (a
    warp calls the generated function; its PTX interpreted for that lane) when the shared buffer is at
    ``smem_base``, the TMEM allocation at ``tmem_base`` and the run-time coordinates (the probe kernel's further
    parameters, in the plan's order) at ``values``. Lane 0 is the one elect.sync elects."""
    params = {0: tmem_base, **{k + 1: v for k, v in enumerate(values.values())}}
    return run_entry(ptx, params, {PROBE_SHARED_SYMBOL: smem_base}, probe_entry(name), lane=lane)
