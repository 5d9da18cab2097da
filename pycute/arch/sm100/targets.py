"""The compilation targets that have tcgen05 (PTX ISA, "Tensor Core 5th Generation Family Instructions": the
``sm_100a``/``sm_100f`` family and its ``sm_103``/``sm_110`` relatives)."""
from __future__ import annotations

__all__ = ["TCGEN05_TARGETS"]

TCGEN05_TARGETS = ("sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f")
