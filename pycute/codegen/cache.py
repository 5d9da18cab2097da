"""CUDA C++ for L2 cache policies: the statement that makes a plan's ``CachePolicy`` (``createpolicy``, PTX ISA
#data-movement-and-conversion-instructions-createpolicy) into the 64-bit operand of the ``.L2::cache_hint`` forms."""
from __future__ import annotations

from ..arch.sm80.cache import CachePolicy

__all__ = ["createpolicy_statement"]


def createpolicy_statement(policy: CachePolicy, var: str = "policy") -> str:
    """``const unsigned long long var = <policy>;`` as one createpolicy (its fraction an exact float literal)."""
    return (f"  unsigned long long {var};\n"
            f'  asm volatile("{policy.ptx} %0, {policy.fraction_literal};" : "=l"({var}));   // {policy}')
