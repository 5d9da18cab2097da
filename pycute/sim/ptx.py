"""A small interpreter for the PTX that NVRTC emits around generated tcgen05.cp issue code.

It runs one thread (a lane of a full warp) through one ``.entry`` of any kernel (performance directives such as
``.maxntid``, ``.reqntid``, ``.reqnctapercluster``, ``.explicitcluster``, ``.minnctapersm`` are accepted) --
integer moves and arithmetic, shifts, logic, conversions, ``cvta``, addresses of shared symbols, predicates and
branches, ``elect.sync``, ``tcgen05.cp`` -- and returns the ``(opcode, taddr, descriptor)`` stream it would issue
(and every other family ``ISSUE_DECODERS`` names, ``clusterlaunchcontrol.try_cancel`` included; ``query_cancel``
decodes a response register).
Barriers, fences, ``mbarrier.init`` / ``arrive`` and ``tcgen05.commit`` / ``fence`` / ``wait`` change no register
of the thread and are recorded in order (``trace_entry``); ``mbarrier.try_wait`` succeeds at once (this model has
one thread and no asynchrony). ``elect.sync`` elects the lowest lane of its
member mask (PTX only promises the same lane every time; which one does not change what is issued). This checks the generated *code*, not only the plan: the stream can be
compared with the plan and fed to the emulator. An instruction outside the subset is a CompileError, never skipped.
"""
from __future__ import annotations

import re

import numpy as np

from ..codegen.probe import PROBE_SHARED_SYMBOL, probe_entry
from ..errors import CompileError
from .convert import pack_pair
from .executors import REGISTER_VALUES, bulk, clc, cp_async, mma, smem_ldst, tcgen05_cp, tcgen05_ldst, tma, wgmma
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
#: cvt's packing destination types -> the element format ``sim.convert`` models.
_PACKS = {"bf16x2": "bf16", "f16x2": "f16", "e4m3x2": "f8e4m3", "e5m2x2": "f8e5m2"}


def _family(op: str) -> str | None:
    """The ISSUE_DECODERS key ``op`` starts with (``cp.async.bulk.tensor.2d...`` -> ``cp.async.bulk.tensor``)."""
    return next((k for k in ISSUE_DECODERS if op == k or op.startswith(k + ".")), None)

__all__ = ["run_entry", "trace_entry", "probe_stream", "ldst_stream", "GENERIC_SHARED_WINDOW", "SPECIAL_DEFAULTS"]

#: Where this model places the shared window in the generic address space (cvta.shared adds it).
GENERIC_SHARED_WINDOW = 0x7F00_0000_0000

_MASK = {8: 0xFF, 16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}
_ENTRY = re.compile(r"\.entry\s+(\w+)\s*(?:\((.*?)\))?([^{]*)\{(.*?)\n\}", re.S)
# Entry directives between the parameter list and the body (PTX ISA "Performance-Tuning Directives", clusters).
_ENTRY_DIRECTIVE = re.compile(r"\.(?:maxntid|reqntid|minnctapersm|maxnctapersm|reqnctapercluster|explicitcluster|"
                              r"maxclusterrank|blocksareclusters|noreturn|pragma)\b[^.]*")
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
_SKIP = re.compile(r"^(?:\.reg|\.local|\.shared|\.param|\.pragma|\.loc|\.maxntid|\.reqntid|\.minnctapersm|//|\{|\})")

_LABEL = re.compile(r"^([\w$]+):$")


def _width(type_suffix: str) -> int:
    m = re.search(r"(\d+)$", type_suffix)
    return int(m.group(1)) if m else 32


def _signed(v: int, bits: int) -> int:
    v &= _MASK[bits]
    return v - (1 << bits) if v >> (bits - 1) else v


def _parse_entry(ptx: str, name: str | None):
    """``(parameter names, statements, labels)`` of an entry: statements without declarations, labels mapped to
    the index of the statement they precede."""
    entries = {m.group(1): m for m in _ENTRY.finditer(ptx)}
    if not entries:
        raise CompileError("no .entry in the PTX")
    if name is None:
        if len(entries) != 1:
            raise CompileError(f"several entries in the PTX ({', '.join(entries)}); name one")
        name = next(iter(entries))
    if name not in entries:
        raise CompileError(f"no .entry {name!r} in the PTX (have {', '.join(entries)})")
    m = entries[name]
    directives = _ENTRY_DIRECTIVE.sub("", m.group(3)).strip()
    if directives:
        raise CompileError(f"entry {name!r}: directives outside the interpreted subset: {directives!r}")
    program: list = []
    labels: dict[str, int] = {}
    pending = ""                     # a statement NVRTC spread over several lines (a call's operand list)
    for raw in m.group(4).splitlines():
        line = raw.split("//")[0].strip()
        if not line or (not pending and _SKIP.match(line)):
            continue
        label = _LABEL.match(line)
        if label and not pending:
            labels[label.group(1)] = len(program)
            continue
        pending += " " + line
        *done, pending = pending.split(";")
        program += [d.strip() for d in done if d.strip()]
    params = [re.findall(r"\w+", decl)[-1] for decl in (m.group(2) or "").split(",") if decl.strip()]
    return params, program, labels


def _split_args(rest: str):
    out, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


# Two-operand integer operations on (x, y, bits, signed); results are masked to the width by the caller.
_BINARY = {
    "add": lambda x, y, b, s: x + y,
    "sub": lambda x, y, b, s: x - y,
    "and": lambda x, y, b, s: x & y,
    "or": lambda x, y, b, s: x | y,
    "xor": lambda x, y, b, s: x ^ y,
    "shl": lambda x, y, b, s: x << min(y, b),
    "shr": lambda x, y, b, s: (_signed(x, b) if s else x) >> min(y, b),
    "min": lambda x, y, b, s: min(_signed(x, b), _signed(y, b)) if s else min(x, y),
    "max": lambda x, y, b, s: max(_signed(x, b), _signed(y, b)) if s else max(x, y),
}
_COMPARE = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
            "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y,
            "lo": lambda x, y: x < y, "ls": lambda x, y: x <= y, "hi": lambda x, y: x > y, "hs": lambda x, y: x >= y}

_ALU_OPS = set(_BINARY) | {"mul", "div", "rem", "mov", "not", "neg", "mad", "cvt", "cvta", "setp", "selp", "bfi", "bfe"}


class _Thread:
    """One thread's registers while it runs an entry's statements; ``issued`` collects its ``tcgen05.cp``."""

    def __init__(self, params: dict, symbols: dict, lane: int, tid: int, specials: dict | None = None):
        self.params, self.symbols, self.lane = params, symbols, lane
        unknown = sorted(set(specials or {}) - set(SPECIAL_DEFAULTS))
        if unknown:
            raise CompileError(f"special registers {', '.join(unknown)} are not modelled (one of "
                               f"{', '.join(SPECIAL_DEFAULTS)})")
        self.specials = {**SPECIAL_DEFAULTS, **(specials or {}), "%tid.x": tid, "%tid.y": 0, "%tid.z": 0,
                         "%laneid": lane}
        self.regs: dict[str, int] = {}
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
            if tok not in self.regs:
                raise CompileError(f"PTX reads register {tok} before writing it")
            return self.regs[tok]
        if tok in self.symbols:
            return self.symbols[tok]
        if tok.startswith("__local_depot"):   # the thread's local frame, at local address 0 in this model
            return 0
        if tok.startswith("_Z"):           # a function's static __shared__ array: _ZZ<fn>E<len><name>
            for name, address in self.symbols.items():
                if tok.endswith(f"E{len(name)}{name}"):
                    return address
        if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", tok):          # an f32 immediate, by its bits
            return int(tok[2:], 16)
        if re.fullmatch(r"-?0[xX][0-9a-fA-F]+[U]?", tok):
            return int(tok.rstrip("U"), 16) & _MASK[bits]
        if re.fullmatch(r"-?\d+[U]?", tok):
            return int(tok.rstrip("U")) & _MASK[bits]
        raise CompileError(f"PTX operand {tok!r} is not a register, symbol or integer")

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
        p = self.regs.get(pred.lstrip("@!"))
        if p is None:
            raise CompileError(f"PTX predicate {pred} read before it is set")
        return bool(p) != pred.startswith("@!")

    def execute(self, op: str, args: list, stmt: str) -> None:
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
        elif base == "shfl":
            # The one thread modelled stands for its warp: shfl.sync returns its own value, which is the source
            # lane's for warp-uniform operands (what pycute_warp_index() shuffles).
            self.regs[args[0].split("|")[0].strip()] = self.value(args[1], 32)
        elif base == "st" and "param" in parts:            # a call's argument
            self.call_params[args[0].strip("[]").split("+")[0].strip()] = self.value(args[1], bits)
        elif base in ("ld", "st") and "local" in parts:
            self._local(base, bits, args)
        elif base == "call":
            self._call(stmt)
        elif base in ("ld", "st") and "param" not in parts:
            if base == "ld":                                 # data from memory this model does not hold
                for reg in args[0].strip("{}").split(","):
                    self.regs[reg.strip()] = 0
            self.trace.append((op, args))
        elif base == "elect":
            dest, pred = (t.strip() for t in args[0].split("|"))
            mask = self.value(args[1], 32)
            if not mask >> self.lane & 1:
                raise CompileError(f"{stmt!r}: lane {self.lane} is not in the member mask {mask:#x} (undefined)")
            leader = (mask & -mask).bit_length() - 1
            self.regs[pred] = int(self.lane == leader)
            if dest != "_":
                self.regs[dest] = leader
        elif base == "mov" and args[0].startswith("{"):     # unpack: the register's parts, lowest first
            names = [r.strip() for r in args[0].strip("{}").split(",")]
            x, width = self.value(args[1], bits), bits // len(names)
            for k, name in enumerate(names):
                self.regs[name] = (x >> (k * width)) & _MASK[width]
        elif base == "ld" and "param" in parts:
            m = re.fullmatch(r"\[(\w+)(?:\+(\d+))?\]", args[1])
            if m and m.group(1).startswith("retval"):        # a call's return value (vprintf's count)
                self.regs[args[0]] = 0
                return
            if not m or m.group(1) not in self.params:
                raise CompileError(f"ld.param from {args[1]!r}: no value given for that parameter")
            self.regs[args[0]] = self.params[m.group(1)] & _MASK[bits]
        else:
            self.regs[args[0]] = self._alu(base, parts, bits, args, stmt)

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
        m = re.fullmatch(r"call(?:\.uni)?\s*(?:\(\s*\w+\s*\)\s*,)?\s*(\w+)\s*,\s*\(([^)]*)\)", stmt)
        if m is None or m.group(1) != "vprintf":
            raise CompileError(f"PTX call outside the interpreted subset (vprintf only): {stmt!r}")
        fmt_param, args_param = (a.strip() for a in m.group(2).split(","))
        text = format_printf(self.symbols_text.get(self.call_params[fmt_param], ""), self.local,
                             self.call_params[args_param])
        self.printed.append(text)
        self.trace.append(("vprintf", text))

    def _alu(self, base: str, parts: list, bits: int, args: list, stmt: str) -> int:
        if base not in _ALU_OPS:
            raise CompileError(f"PTX instruction outside the interpreted subset: {stmt!r}")
        mask = _MASK.get(bits, _MASK[64])
        signed = parts[-1].startswith("s")
        if base == "mov" and args[1].startswith("{"):        # pack: parts, lowest first
            names = [r.strip() for r in args[1].strip("{}").split(",")]
            width = bits // len(names)
            return sum((self.value(n, width) & _MASK[width]) << (k * width) for k, n in enumerate(names)) & mask
        if base == "cvt" and parts[-2] in _PACKS and parts[-1] == "f32":
            return int(pack_pair(np.array(self.value(args[1], 32)), np.array(self.value(args[2], 32)),
                                 _PACKS[parts[-2]], "satfinite" in parts))
        a = [self.value(t, bits) for t in args[1:]] if base != "cvt" else []
        if base in _BINARY:
            return _BINARY[base](a[0], a[1], bits, signed) & mask
        if base == "mul":
            if "wide" in parts:
                return (a[0] * a[1]) & _MASK[2 * bits]
            return ((a[0] * a[1]) >> bits if "hi" in parts else a[0] * a[1]) & mask
        if base in ("div", "rem"):
            if a[1] == 0:
                raise CompileError(f"PTX division by zero in {stmt!r}")
            return (a[0] // a[1] if base == "div" else a[0] % a[1]) & mask
        if base == "bfi":                                # insert a's low len bits into b at pos
            pos, length = a[2] & 0xFF, a[3] & 0xFF
            field = ((1 << length) - 1) << pos
            return ((a[1] & ~field) | ((a[0] << pos) & field)) & mask
        if base == "bfe":                                # extract len bits at pos (sign-extended for .s)
            pos, length = a[1] & 0xFF, a[2] & 0xFF
            x = (a[0] >> pos) & ((1 << length) - 1) if length else 0
            return (_signed(x, length) if signed and length else x) & mask
        if base in ("mov", "not", "neg", "mad"):
            return {"mov": lambda: a[0], "not": lambda: ~a[0], "neg": lambda: -a[0],
                    "mad": lambda: a[0] * a[1] + a[2]}[base]() & mask
        if base == "cvt":
            dst_bits, src_t = _width(parts[-2]), parts[-1]
            x = self.value(args[1], _width(src_t))
            return (_signed(x, _width(src_t)) if src_t.startswith("s") else x) & _MASK[dst_bits]
        if base == "cvta":
            window = GENERIC_SHARED_WINDOW if "shared" in parts else 0
            return (a[0] - window if "to" in parts else a[0] + window) & mask
        if base == "setp":
            x, y = (_signed(a[0], bits), _signed(a[1], bits)) if signed else (a[0], a[1])
            return int(_COMPARE[parts[1]](x, y))
        return a[0] if self.value(args[3]) else a[1]        # selp


def run_entry(ptx: str, params: dict, symbols: dict, entry: str | None = None, max_steps: int = 100_000,
              lane: int = 0) -> list:
    """Run ``entry`` for lane ``lane`` of a full warp. ``params`` maps parameter index or name to its value;
    ``symbols`` maps shared-symbol names to their shared-window addresses. Returns the list of ``tcgen05.cp``
    issues."""
    return trace_entry(ptx, params, symbols, entry, max_steps, lane).issued


def trace_entry(ptx: str, params: dict, symbols: dict, entry: str | None = None, max_steps: int = 100_000,
                lane: int = 0, tid: int | None = None, specials: dict | None = None) -> _Thread:
    """As ``run_entry`` for thread ``tid`` (``%tid.x``; default ``lane``), returning the thread: ``.issued`` (the
    ``tcgen05.cp`` stream), ``.ldst`` (``(op, taddr, immHalfSplitoff, registers)`` per ``tcgen05.ld/st``), ``.tma``,
    ``.cp_async``, ``.bulk``, ``.mma``, ``.smem`` (stmatrix / ldmatrix / ld-st.shared: the address, and a store's
    register values), ``.tensormap`` (``tensormap.replace`` edits and ``cp_fenceproxy`` publishes) and ``.trace``
    (every issue, commit, fence, barrier, alloc, mbarrier and memory statement in program order); ``.printed`` holds
    what ``vprintf`` would print and ``.trap`` the last printed line when the thread executed ``trap`` (a checked
    build's failed precondition), where it stopped. ``specials`` sets the grid's and cluster's special registers
    (``{"%ctaid.y": 3, "%cluster_ctarank": 1}``; ``SPECIAL_DEFAULTS`` otherwise)."""
    if not isinstance(ptx, str):
        raise TypeError(f"run_entry: the PTX must be text, got {type(ptx).__name__}")
    names, program, labels = _parse_entry(ptx, entry)
    values = {n: params[k] if k in params else params[n] for k, n in enumerate(names) if k in params or n in params}
    where, texts = string_symbols(ptx)
    thread = _Thread(values, {**where, **symbols}, lane, lane if tid is None else tid, specials)
    thread.symbols_text = texts
    pc = steps = 0
    while pc < len(program):
        steps += 1
        if steps > max_steps:
            raise CompileError(f"PTX interpretation exceeded {max_steps} steps (an unbounded loop?)")
        stmt = program[pc]
        pc += 1
        pred = None
        if stmt.startswith("@"):
            pred, stmt = stmt.split(None, 1)
        op, _, rest = stmt.partition(" ")
        args = [a.strip() for a in _split_args(rest)]
        if pred is not None and not thread.guard_passes(pred):
            continue
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
            thread.execute(op, args, stmt)
        except (IndexError, KeyError, ValueError) as e:
            if isinstance(e, CompileError):
                raise
            raise CompileError(f"PTX statement {stmt!r} is malformed for the interpreter ({type(e).__name__}: {e})") \
                from None
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
