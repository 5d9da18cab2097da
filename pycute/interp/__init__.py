"""The PTX interpreter: one thread's issue stream (``stream``: ``probe_stream``, ``run_entry``, the decoders that
read a compiled plan's issued instructions back) and whole kernels on the CPU (``run_kernel``): every CTA and
thread of a small grid, warps with their collectives, barriers and mbarrier phases, clusters, and the asynchronous
instructions pycute plans (copies, wgmma, tcgen05) executed by the emulator's executors (``pycute.sim``;
docs/interpreter.md).

Split by concern: ``front`` reads PTX (entries, declarations, brace scopes), ``operands`` and ``translate`` turn
statements into Python once, ``floats`` / ``numeric`` / ``cvt`` hold the arithmetic, ``memory`` and ``shadow`` the
address spaces and the race checks, ``sync`` / ``warp`` / ``asyncops`` / ``tensormaps`` / ``matrix`` /
``warpgroup`` / ``tensorcore`` / ``regpool`` / ``clc`` the instructions that talk to other threads and agents,
``scheduler`` runs the threads and ``launch`` binds a launch's arguments.
"""
from .stream import GENERIC_SHARED_WINDOW, ISSUE_DECODERS, probe_stream, run_entry, trace_entry
from .launch import KernelRun, ScheduleError, StructArg, TensorMapArg, run_kernel, tensor_map
from .report import DeadlockError
from .shadow import RaceError
from .sync import BarrierConflictError, BarrierError
from .conventions import ConventionError
from .warpgroup import WgmmaError

__all__ = ["GENERIC_SHARED_WINDOW", "ISSUE_DECODERS", "probe_stream", "run_entry", "trace_entry", "KernelRun",
           "StructArg", "TensorMapArg", "run_kernel", "tensor_map", "DeadlockError", "RaceError", "BarrierError",
           "BarrierConflictError", "ScheduleError", "ConventionError", "WgmmaError"]
