"""Whole kernels on the CPU: every CTA and thread of a small grid runs a compiled kernel's PTX, with warps, barriers,
mbarrier phases, clusters and the asynchronous instructions pycute plans (copies, wgmma, tcgen05) executed by the
emulator's executors (``pycute.sim.run_kernel``; docs/interpreter.md).

The package is split by concern: ``front`` reads PTX (entries, declarations, braces scopes), ``operands`` and
``codegen`` turn statements into Python once, ``floats`` / ``numeric`` hold the arithmetic, ``memory`` and ``shadow``
the address spaces and the race checks, ``sync`` / ``warp`` / ``asyncops`` / ``tensormaps`` / ``matrix`` /
``warpgroup`` / ``tensorcore`` / ``regpool`` / ``clc`` the instructions that talk to other threads and agents,
``scheduler`` runs the threads and ``launch`` binds a launch's arguments. This module imports nothing, so the
single-thread interpreter (``pycute.sim.ptx``) can use the front end alone.
"""
