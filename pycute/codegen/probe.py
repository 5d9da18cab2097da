"""Standalone probe kernels: a plan's device function and a kernel that only calls it, the text that SASS checks
and the PTX interpreter read (the round-trip kernels that run and check a copy are ``pycute.harness``'s)."""
from __future__ import annotations


from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from .tcgen05_cp import emit_device_function
from .templates import render
from ..copy.tcgen05_ldst.plan import Tcgen05LdStPlan

__all__ = ["probe_source", "ldst_probe_source", "no_call_probe_source", "PROBE_SHARED_SYMBOL", "probe_entry"]

PROBE_SHARED_SYMBOL = "pycute_probe_smem"


def probe_entry(name: str) -> str:
    """The kernel name of ``probe_source(plan, name)``."""
    return f"{name}_probe"


def probe_source(plan: Tcgen05CpPlan, name: str = "pycute_copy") -> str:
    """The device function and a kernel that only calls it: what SASS and PTX checks compile. The kernel takes
    ``tmem_base`` and then each run-time coordinate, and passes them on."""
    if not isinstance(plan, Tcgen05CpPlan):
        raise TypeError(f"probe_source: expected a Tcgen05CpPlan (pycute.make_tiled_copy), got {type(plan).__name__}")
    names = [c.name for c in plan.dynamic]
    return render("probe.cu", function=emit_device_function(plan, name), name=name,
                  shared_symbol=PROBE_SHARED_SYMBOL, params="".join(f", unsigned {n}" for n in names),
                  call=f"{name}({', '.join([PROBE_SHARED_SYMBOL, 'tmem_base', *names])});")


def ldst_probe_source(plan: Tcgen05LdStPlan, name: str = "pycute_ldst") -> str:
    """A tcgen05.ld/st plan's function and a kernel ``<name>_probe(unsigned tmem_base, unsigned* data)`` whose
    threads call it: an ld's registers are stored to ``data`` (ptxas deletes a tcgen05.ld whose result is unused),
    an st's come from it."""
    n = plan.registers
    move = (f"  {name}(tmem_base, regs);\n  for (unsigned i = 0; i < {n}u; ++i) data[threadIdx.x * {n}u + i] = regs[i];"
            if plan.op == "ld" else
            f"  for (unsigned i = 0; i < {n}u; ++i) regs[i] = data[threadIdx.x * {n}u + i];\n  {name}(tmem_base, regs);")
    return (plan.cuda(name) + f"\nextern \"C\" __global__ void __launch_bounds__({32 * plan.warps}, 1) "
            f"{probe_entry(name)}(unsigned tmem_base, unsigned* data) {{\n  unsigned regs[{n}];\n{move}\n}}\n")


def no_call_probe_source(name: str = "pycute_no_call") -> str:
    """The probe kernel without the call: the baseline that issue costs are measured against."""
    return render("probe.cu", function="", name=name, shared_symbol=PROBE_SHARED_SYMBOL, params="", call="")


