"""Compile a register <-> shared plan's generated function into a probe kernel, and run the compiled code through
the PTX interpreter for every thread, the emulator executing what each warp issues (the registers' values
included): the CPU's check that the code does what the plan says, data and all."""
from __future__ import annotations

import numpy as np

from pycute.compile.nvrtc import compile_cuda
from pycute.sim.emulator import Sm90Emulator
from pycute.interp.stream import trace_entry

SEED = 0x3F81_2345
SMEM = 0x800                 # the tile's shared address: aligned to every swizzle period the cases use (2 KiB)


def fragment_value(thread, value):
    """The f32 bits (or register bits) the probe gives (thread, value): a hash with NaNs, infinities and
    subnormals among its values."""
    return (SEED ^ ((thread * 2654435761 + value * 40503) & 0xFFFFFFFF)) & 0xFFFFFFFF


def probe_source(plan) -> str:
    kind = "float" if plan.fragment.dtype.name == "f32" else "unsigned"
    n = plan.values if kind == "float" else plan.values * plan.fragment.dtype.bits // 32
    cast = "__uint_as_float" if kind == "float" else ""
    stages = "".join(f", {s.name}" for s in plan.stages)
    stage_params = "".join(f", unsigned {s.name}" for s in plan.stages)
    if plan.op == "st":
        body = (f"  {kind} v[{n}];\n  for (int i = 0; i < {n}; ++i) v[i] = {cast}(seed ^ (threadIdx.x * 2654435761u + "
                f"i * 40503u));\n  copy(smem, threadIdx.x, v{stages});")
    else:
        body = (f"  {kind} v[{n}];\n  copy(smem, threadIdx.x, v{stages});\n"
                f"  for (int i = 0; i < {n}; ++i) out[i * blockDim.x + threadIdx.x] = v[i];")
    return plan.cuda("copy") + f"""
extern "C" __global__ void probe(unsigned smem, unsigned seed, {kind}* out{stage_params}) {{
{body}
}}
"""


def compile_probe(plan, arch: str = "sm_90a"):
    return compile_cuda(probe_source(plan), arch=arch)


def thread_issues(plan, code, **values) -> list[list]:
    """Every thread's register <-> shared issues from the compiled probe (``trace_entry(...).smem``)."""
    params = {0: SMEM, 1: SEED, 2: 0, **{3 + k: v for k, v in enumerate(values.values())}}
    return [trace_entry(code.ptx, params, {}, "probe", tid=t).smem for t in range(plan.threads)]


def run_compiled_store(plan, issues, nbytes: int, image: np.ndarray) -> np.ndarray:
    """The shared image the compiled stores leave in the emulator (each warp's k-th issue executed together)."""
    emu = Sm90Emulator(smem_bytes=nbytes, smem_base=0)
    emu.write_smem(0, image)
    for k, move in enumerate(plan.moves):
        for w in range(plan.warps):
            lanes = [issues[32 * w + lane][k] for lane in range(32)]
            emu.smem_store(move.atom, np.array([i.address for i in lanes]),
                           np.array([i.data for i in lanes], dtype=np.uint32))
    return emu.ctas[0].smem
