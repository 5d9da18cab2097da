"""``run_kernel``: a compiled kernel run on the CPU, every CTA and thread of a small grid (docs/interpreter.md).

Arguments bind as a launch's would: a numpy array to a pointer parameter (the kernel reads and writes it in place),
``tensor_map(plan, array)`` to a tensor-map parameter (by pointer or ``__grid_constant__``), Python numbers to
scalar parameters, given in order or by the kernel's C parameter names (read from ``Compiled.source``).
"""
from __future__ import annotations

import functools
import random
import re
from typing import Any, Mapping, Sequence

import attrs
import numpy as np

from ..compile.elf import kernel_resources
from ..errors import CompileError, EmulationError
from ..sim.emulator import Sm100Emulator
from ..sim.executors.wgmma import WgmmaExecutor
from . import (asyncops, calls, clc, matrix, regpool, rtemit, rtemit_sync, tensorcore, tensormaps,  # noqa: F401
               warpgroup)
from .translate import Program, compile_entry
from .conventions import attribute, check_conventions
from .front import Entry, Module, Param, Variable, demangle, parse_entry
from .memory import TENSOR_MAP_MAGIC as _MAGIC, GlobalMemory
from .operands import MASK
from .params import StructArg
from .schedules import ScheduleError, run_schedules
from .scheduler import UNLAUNCHED, Cluster, Cta, Thread, World, run
from .warp import Warp

__all__ = ["run_kernel", "KernelRun", "TensorMapArg", "tensor_map", "StructArg", "SHARED_START", "MAX_SHARED",
           "ScheduleError"]

#: The shared-window address of a CTA's first variable: the model leaves the first KiB unused, so that no variable
#: sits at address 0 (CUDA reserves 1 KiB of shared memory per block, cudaDevAttrReservedSharedMemoryPerBlock).
SHARED_START = 0x400
#: The most shared memory a CTA of sm_90 / sm_100 may use (static plus dynamic, in bytes).
MAX_SHARED = 227 * 1024


@attrs.frozen(eq=False)
class TensorMapArg:
    """A tensor map argument: a plan's ``TensorMapParams`` and the array it describes (read and written in place
    by TMA), from byte ``offset`` (a map retargeted on the device: ``tensormap.replace``)."""

    params: Any
    array: np.ndarray
    offset: int = 0


def tensor_map(plan: Any, array: np.ndarray) -> TensorMapArg:
    """The tensor map of a TMA plan (``TmaPlan``, ``Im2colPlan``, ``Gather4Plan``; or its map parameters) over
    ``array``, as a kernel argument."""
    params = getattr(plan, "tensor_map", plan)
    if not (hasattr(params, "encode") and hasattr(params, "box_bytes")) or not isinstance(array, np.ndarray):
        raise TypeError(f"tensor_map: a TMA plan (or its map parameters) and a numpy array, got {type(plan).__name__}, "
                        f"{type(array).__name__}")
    return TensorMapArg(params, _bytes_of(array, "tensor_map"))


@attrs.frozen(eq=False)
class KernelRun:
    """What a run left: each CTA's shared memory and TMEM image (by linear CTA index), the blocks of statements
    run, the seconds it took, and what the kernel printed (``printf``, in order). The argument arrays were written
    in place."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int]
    smem: tuple
    tmem: tuple
    steps: int
    seconds: float
    printed: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return (f"KernelRun(grid {self.grid}, block {self.block}, cluster {self.cluster}: {self.steps} blocks of "
                f"statements in {self.seconds:.2f} s)")


def _dims(value: Any, what: str) -> tuple[int, int, int]:
    v = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(v) <= 3 or not all(isinstance(x, (int, np.integer)) and x >= 1 for x in v):
        raise EmulationError(f"run_kernel: {what} is 1 to 3 positive integers, got {value!r}")
    return tuple(int(x) for x in v) + (1,) * (3 - len(v))        # type: ignore[return-value]


def _bytes_of(array: np.ndarray, what: str) -> np.ndarray:
    if not array.flags.c_contiguous:
        raise EmulationError(f"{what}: the array must be C-contiguous (the kernel addresses its bytes)")
    return array.reshape(-1).view(np.uint8)


def _align(n: int, a: int) -> int:
    return -(-n // max(a, 1)) * max(a, 1)


@attrs.frozen(eq=False)
class _Layout:
    symbols: dict
    names: list
    static: int
    dynamic_at: int
    local: int
    params: tuple


def _layout(module: Module, entry: Entry, gmem: GlobalMemory) -> _Layout:
    """Addresses of the shared variables (static ones first, the extern array last), global variables, parameters
    and local variables."""
    symbols: dict[str, int] = {}
    names: list = []
    at, dynamic_at = SHARED_START, None
    shared = [v for v in module.variables + entry.variables if v.space == "shared"]
    for var in [v for v in shared if not v.extern] + [v for v in shared if v.extern]:
        at = _align(at, var.align)
        symbols[var.name] = at
        names.append((at, var.size, var.align, demangle(var.name), var.extern))
        dynamic_at = at if var.extern else dynamic_at
        at += var.size
    for var in module.variables:
        if var.space in ("global", "const"):
            data = np.frombuffer(bytearray(var.init or bytes(var.size)), dtype=np.uint8).copy()
            symbols[var.name] = gmem.add(var.name, data).address
    offset = 0
    placed = []
    for p in entry.params:
        offset = _align(offset, p.align)
        symbols[p.name] = offset
        placed.append((p, offset))
        offset += p.size
    local = 0
    frames: dict[str, Variable] = {}                    # a call's .param variables, by name, the largest of each
    for var in entry.variables:
        if var.space == "param" and var.size > getattr(frames.get(var.name), "size", -1):
            frames[var.name] = var
    for var in [v for v in entry.variables if v.space == "local"] + list(frames.values()):
        local = _align(local, var.align)
        symbols[var.name] = local
        local += var.size
    return _Layout(symbols, names, at, dynamic_at if dynamic_at is not None else at, local, tuple(placed))


@functools.lru_cache(maxsize=16)
def _compiled(ptx: str, name: str | None, tracked: tuple[str, ...]) -> tuple[Module, Entry, Program, list]:
    """The entry decoded once per PTX text (its variables' addresses do not depend on the launch), recording calls
    of the ``tracked`` generated functions; and which function each instruction belongs to."""
    module, entry = parse_entry(ptx, name)
    owners: list = [None] * len(entry.instrs)
    if tracked:
        owners = attribute(entry, list(tracked))
    calls = {i: tracked.index(o) for i, o in enumerate(owners) if o is not None}
    return module, entry, compile_entry(entry, _layout(module, entry, GlobalMemory()).symbols, calls), owners


def _c_names(source: str | None, entry: Entry) -> list[str] | None:
    """The kernel's C parameter names, in order (None when the source does not show them)."""
    if not source:
        return None
    m = re.search(rf"__global__[^;{{]*?\b{re.escape(entry.name)}\s*\(", source)
    if m is None:
        return None
    depth, i = 1, m.end()
    while i < len(source) and depth:
        depth += {"(": 1, ")": -1}.get(source[i], 0)
        i += 1
    text = source[m.end():i - 1]
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += {"(": 1, "<": 1, ")": -1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    names = [re.findall(r"[A-Za-z_]\w*", p.split("=")[0].split("[")[0])[-1] for p in parts if p.strip()]
    return names if len(names) == len(entry.params) else None


def _scalar(p: Param, value: Any) -> bytes:
    if isinstance(value, bytes):
        if len(value) != p.size:
            raise EmulationError(f"parameter {p.name}: {len(value)} bytes for a {p.size}-byte parameter")
        return value
    if isinstance(value, (float, np.floating)):
        if p.type not in ("f32", "f64"):
            raise TypeError(f"parameter {p.name} (.{p.type}) takes an integer, got the float {value!r}")
        return np.array(value, dtype=np.float32 if p.type == "f32" else np.float64).tobytes()
    if not isinstance(value, (int, np.integer, bool)):
        raise TypeError(f"parameter {p.name} (.{p.type}, {p.size} B) takes a number, an array or a tensor map, "
                        f"got {type(value).__name__}")
    v = int(value)
    if not -(1 << (8 * p.size - 1)) <= v < (1 << (8 * p.size)):
        raise EmulationError(f"parameter {p.name}: {v} does not fit its {p.size} bytes")
    return (v & MASK[8 * p.size]).to_bytes(p.size, "little")


def _bind(entry: Entry, layout: _Layout, args: Any, names: list[str] | None, gmem: GlobalMemory,
          maps: dict) -> bytearray:
    """The parameter bytes of a launch; arrays and tensor maps placed in global memory."""
    params = list(entry.params)
    if isinstance(args, Mapping):
        known = {p.name: p for p in params} | ({n: p for n, p in zip(names, params)} if names else {})
        unknown = sorted(set(args) - set(known))
        if unknown:
            raise EmulationError(f"run_kernel: {entry.name} has no parameter {', '.join(map(repr, unknown))} (its "
                                 f"parameters: {', '.join(names or [p.name for p in params])})")
        given = {known[k].name: v for k, v in args.items()}
    else:
        if len(args) != len(params):
            raise EmulationError(f"run_kernel: {entry.name} takes {len(params)} arguments, got {len(args)}")
        given = {p.name: v for p, v in zip(params, args)}
    missing = [(names[k] if names else p.name) for k, p in enumerate(params) if p.name not in given]
    if missing:
        raise EmulationError(f"run_kernel: no value for {entry.name}'s parameter(s) {', '.join(missing)}")
    out = bytearray(max([off + p.size for p, off in layout.params], default=0))
    for k, (p, off) in enumerate(layout.params):
        label = names[k] if names else p.name
        out[off:off + p.size] = _argument(p, given[p.name], label, gmem, maps)
    return out


def _argument(p: Param, value: Any, label: str, gmem: GlobalMemory, maps: dict) -> bytes:
    if isinstance(value, TensorMapArg):
        maps[len(maps)] = value
        image = _MAGIC + (len(maps) - 1).to_bytes(4, "little") + bytes(128 - len(_MAGIC) - 4)
        if p.size == 128:
            return image
        value = np.frombuffer(image, dtype=np.uint8).copy()
        label = f"the tensor map of {label}"
    if isinstance(value, StructArg):
        return value.image(p.size, label, lambda k, v: gmem.add(f"{label}.{k}", _bytes_of(v, f"argument {label}")))
    if isinstance(value, np.ndarray):
        if p.size != 8:
            raise EmulationError(f"parameter {label} (.{p.type}) is not a pointer: an array cannot bind to it")
        return gmem.add(label, _bytes_of(value, f"argument {label}")).address.to_bytes(8, "little")
    return _scalar(p, value)


class _ClusterMachine(Sm100Emulator, WgmmaExecutor):
    """The emulator of one cluster's CTAs (shared memory, TMEM, the executors, Hopper's wgmma)."""

    MAX_CTAS = 16
    CTAS_WHY = "a cluster of up to 16 CTAs"


def _launch_registers(kernel: Any, name: str) -> int | None:
    """Registers per thread the compiled entry launches with (None without a cubin: PTX text)."""
    cubin = getattr(kernel, "cubin", None)
    if not cubin:
        return None
    count = kernel_resources(cubin).get(name, {}).get("registers")
    return int(count) if count else None


def _check_launch(entry: Entry, grid: tuple, block: tuple, cluster: tuple | None) -> tuple[int, int, int]:
    threads = block[0] * block[1] * block[2]
    d = entry.directives
    if threads > 1024:
        raise EmulationError(f"run_kernel: a block of {threads} threads; a CTA has at most 1024")
    if "maxntid" in d and threads > int(np.prod(d["maxntid"])):
        raise EmulationError(f"run_kernel: {entry.name} declares at most {int(np.prod(d['maxntid']))} threads "
                             f"(.maxntid / __launch_bounds__); the block has {threads}")
    if "reqntid" in d and tuple(d["reqntid"]) + (1,) * (3 - len(d["reqntid"])) != block:
        raise EmulationError(f"run_kernel: {entry.name} requires a block of {d['reqntid']} (.reqntid), not {block}")
    want = tuple(d["reqnctapercluster"]) + (1,) * (3 - len(d["reqnctapercluster"])) \
        if "reqnctapercluster" in d else None
    if cluster is None:
        cluster = want or (1, 1, 1)
    elif want is not None and cluster != want:
        raise EmulationError(f"run_kernel: {entry.name} is compiled for clusters of {want} (__cluster_dims__), "
                             f"not {cluster}")
    if any(g % c for g, c in zip(grid, cluster)) or int(np.prod(cluster)) > 16:
        raise EmulationError(f"run_kernel: clusters of {cluster} must tile the grid {grid} and hold at most 16 CTAs")
    return cluster


def _specials(names: dict, grid: tuple, block: tuple, cluster: tuple, ctaid: tuple, tid: tuple, rank: int,
              linear: int, smem: int, explicit: bool) -> dict[int, int]:
    values = {"%laneid": linear % 32, "%warpid": linear // 32, "%nwarpid": -(-int(np.prod(block)) // 32),
              "%smid": 0, "%nsmid": 1, "%gridid": 0, "%cluster_ctarank": rank,
              "%cluster_nctarank": int(np.prod(cluster)), "%is_explicit_cluster": int(explicit),
              "%dynamic_smem_size": smem, "%total_smem_size": smem, "%aggr_smem_size": smem}
    lane = linear % 32
    values |= {"%lanemask_eq": 1 << lane, "%lanemask_lt": (1 << lane) - 1, "%lanemask_le": (2 << lane) - 1,
               "%lanemask_gt": MASK[32] & ~((2 << lane) - 1), "%lanemask_ge": MASK[32] & ~((1 << lane) - 1)}
    for k, c in enumerate("xyz"):
        values |= {f"%tid.{c}": tid[k], f"%ntid.{c}": block[k], f"%ctaid.{c}": ctaid[k], f"%nctaid.{c}": grid[k],
                   f"%cluster_ctaid.{c}": ctaid[k] % cluster[k], f"%cluster_nctaid.{c}": cluster[k],
                   f"%clusterid.{c}": ctaid[k] // cluster[k], f"%nclusterid.{c}": grid[k] // cluster[k]}
    return {slot: values[name] for name, slot in names.items()}


def _xyz(i: int, dims: tuple) -> tuple[int, int, int]:
    return i % dims[0], (i // dims[0]) % dims[1], i // (dims[0] * dims[1])


def _populate(world: World, grid: tuple, block: tuple, cluster: tuple, smem_bytes: int, dynamic: int,
              explicit: bool) -> None:
    program = world.program
    nthreads, size = int(np.prod(block)), int(np.prod(cluster))
    nclusters = tuple(g // c for g, c in zip(grid, cluster))
    for ci in range(int(np.prod(nclusters))):
        cid = _xyz(ci, nclusters)
        group = Cluster(ci, _ClusterMachine(smem_bytes=smem_bytes, ctas=size), size * nthreads)
        world.clusters.append(group)
        for rank in range(size):
            local = _xyz(rank, cluster)
            ctaid = (cid[0] * cluster[0] + local[0], cid[1] * cluster[1] + local[1], cid[2] * cluster[2] + local[2])
            linear = ctaid[0] + grid[0] * (ctaid[1] + grid[1] * ctaid[2])
            cta = Cta(world, group, rank, ctaid, linear)
            group.ctas.append(cta)
            world.ctas.append(cta)
            cta.warps = [Warp(cta, w) for w in range(-(-nthreads // 32))]
            for t in range(nthreads):
                slot = rank * nthreads + t
                th = Thread(cta, _xyz(t, block), t, slot, group.clocks.vector(), len(program.slots))
                for s, v in _specials(program.specials, grid, block, cluster, ctaid, th.tid, rank, t, dynamic,
                                      explicit).items():
                    th.R[s] = v
                group.clocks.names[slot] = repr(th)
                cta.threads.append(th)
                cta.warps[th.warp].add(th)
                world.threads.append(th)
            cta.live = nthreads
            group.live += nthreads
    world.ctas.sort(key=lambda c: c.linear)


def _hold_back(world: World, resident: int | None) -> None:
    """Clusters past the first ``resident`` wait to launch."""
    if resident is None:
        return
    if isinstance(resident, bool) or not isinstance(resident, (int, np.integer)) or resident < 1:
        raise EmulationError(f"run_kernel: resident is a number of clusters (at least 1), got {resident!r}")
    for group in world.clusters[int(resident):]:
        world.pending.append(group)
        for cta in group.ctas:
            for th in cta.threads:
                th.state = UNLAUNCHED


def run_kernel(kernel: Any, entry: str | None = None, *, grid: Any = 1, block: Any = 128, cluster: Any = None,
               args: Sequence[Any] | Mapping[str, Any] = (), smem: int = 0, check_unwritten: bool = True,
               max_steps: int = 20_000_000, conventions: Mapping[str, Any] | None = None,
               barriers: Mapping[str, Sequence[str]] | None = None, resident: int | None = None,
               schedules: int = 1, seed: int = 0) -> KernelRun:
    """Run ``kernel`` (a ``Compiled`` from ``pycute.compile.compile_cuda``, or PTX text) on the CPU: every thread
    of ``grid`` x ``block`` (clusters of ``cluster``; default the entry's ``__cluster_dims__``) with ``smem``
    bytes of dynamic shared memory. Global arrays in ``args`` are read and written in place. Raises
    ``DeadlockError`` / ``RaceError`` / ``BarrierError`` (all EmulationErrors) naming barriers, phases and bytes,
    and CompileError for an instruction outside the interpreted subset (docs/interpreter.md). With
    ``conventions`` (generated function name -> its ``Convention``; the kernel compiled with ``-lineinfo``) every
    call is checked against its function's convention (ConventionError). ``barriers`` names the 8-byte words of
    shared arrays in reports (``{"bars": pipeline.barrier_names()}``: ``mainloop.full[0]`` rather than
    ``bars[0]``). With ``resident`` only that many clusters run at once, the others launching in grid order as
    clusters exit (what ``clusterlaunchcontrol.try_cancel`` cancels). With ``schedules`` k > 1 it runs k times,
    k - 1 of them under orders seeded from ``seed``: an array left differently is a ``ScheduleError`` (schedules)."""
    launch = functools.partial(_run_kernel, kernel, entry, grid, block, cluster, args, smem, check_unwritten,
                               max_steps, conventions, barriers, resident)
    return run_schedules(launch, args, schedules, seed)


def _run_kernel(kernel: Any, entry: str | None, grid: Any, block: Any, cluster: Any,
                args: Sequence[Any] | Mapping[str, Any], smem: int, check_unwritten: bool, max_steps: int,
                conventions: Mapping[str, Any] | None, barriers: Mapping[str, Sequence[str]] | None,
                resident: int | None, order: random.Random | None) -> KernelRun:
    ptx, source = (kernel.ptx, getattr(kernel, "source", None)) if hasattr(kernel, "ptx") else (kernel, None)
    if not isinstance(ptx, str):
        raise TypeError(f"run_kernel: a Compiled kernel or PTX text, got {type(kernel).__name__}")
    if isinstance(smem, bool) or not isinstance(smem, (int, np.integer)) or smem < 0:
        raise EmulationError(f"run_kernel: smem is a number of bytes, got {smem!r}")
    tracked = tuple(conventions or ())
    module, ent, program, owners = _compiled(ptx, entry, tracked)
    gmem = GlobalMemory()
    layout = _layout(module, ent, gmem)
    grid3, block3 = _dims(grid, "grid"), _dims(block, "block")
    cluster3 = _check_launch(ent, grid3, block3, None if cluster is None else _dims(cluster, "cluster"))
    total = max(layout.static, layout.dynamic_at + int(smem))
    if total - SHARED_START > MAX_SHARED:
        raise EmulationError(f"run_kernel: {total - SHARED_START} B of shared memory per CTA; at most {MAX_SHARED}")
    maps: dict = {}
    params = _bind(ent, layout, args, _c_names(source, ent), gmem, maps)
    world = World(program, gmem, params, layout.local, check_unwritten, max_steps, layout.names)
    world.tensor_maps, world.owners = maps, owners
    world.registers = _launch_registers(kernel, ent.name)
    world.conventions = dict(conventions or {})
    world.barrier_names = {k: tuple(v) for k, v in (barriers or {}).items()}
    _populate(world, grid3, block3, cluster3, _align(total, 16), int(smem),
              "explicitcluster" in ent.directives or cluster is not None)
    _hold_back(world, resident)
    world.order = order
    try:
        run(world)
    finally:
        print("".join(world.printed), end="")                   # a GPU flushes printf's buffer at the kernel's end
    check_conventions(world, world.conventions)
    return KernelRun(grid3, block3, cluster3, tuple(c.smem.copy() for c in world.ctas),
                     tuple(c.cluster.machine.ctas[c.rank].tmem.copy() for c in world.ctas), world.steps, world.seconds,
                     tuple(world.printed))
