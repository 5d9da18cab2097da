"""CUDA C++ for the MMA's descriptors: an operand's shared-memory descriptor as a ``__device__`` function of the
buffer address, the k-block and the run-time stages, and an instruction descriptor as a constant (the values come
from ``pycute.mma``; the start-address field from the header's ``pycute_smem_desc_at``)."""
from __future__ import annotations

from ..mma.instr import InstrDescriptor
from ..mma.operand import UmmaDescriptor
from ..views import provides
from .common import ABI_VERSION, check_function_name

__all__ = ["emit_umma_desc", "emit_instr_desc"]


def _k_offset(desc: UmmaDescriptor) -> tuple[list[str], str]:
    """Declarations and the expression of k-block ``k``'s byte offset: ``k * step`` when the blocks are evenly
    spaced, else a table."""
    offsets = list(desc.k_offsets)
    step = offsets[1] - offsets[0] if len(offsets) > 1 else 0
    if all(o == offsets[0] + j * step for j, o in enumerate(offsets)):
        expr = f"k * {step}u" if step else "0u"
        return [], expr if not offsets[0] else f"{offsets[0]}u + {expr}"
    table = ", ".join(f"{o}u" for o in offsets)
    return [f"  constexpr unsigned offsets[{len(offsets)}] = {{{table}}};"], "offsets[k]"


@provides("cuda", UmmaDescriptor)
def emit_umma_desc(desc: UmmaDescriptor, name: str = "pycute_umma_desc") -> str:
    check_function_name(name)
    stages = "".join(f", unsigned {s.name}" for s in desc.stages)
    decls, k_expr = _k_offset(desc)
    terms = [f"{desc.start_offset}u"] if desc.start_offset else []
    terms += [k_expr] + [f"{s.name} * {s.smem_step}u" for s in desc.stages]
    return "\n".join([
        '#include "pycute/sm100.cuh"', "",
        f"// {desc!r}, pycute C ABI {ABI_VERSION}",
        f"// `smem`: the buffer's shared-window address ({desc.tensor.base_align}-byte aligned); k: the k-block in "
        f"[0, {desc.k_blocks}) ({desc.k_per_mma} elements each).",
        f"__device__ __forceinline__ unsigned long long {name}(unsigned smem, unsigned k{stages}) {{",
        *decls,
        f"  return pycute_smem_desc_at({desc.descriptor.encode():#018x}ull, smem + {' + '.join(terms)});",
        "}"]) + "\n"


@provides("cuda", InstrDescriptor)
def emit_instr_desc(desc: InstrDescriptor, name: str = "pycute_idesc") -> str:
    check_function_name(name)
    return f"// {desc!r}\nconstexpr unsigned {name} = {desc.value:#010x}u;\n"
