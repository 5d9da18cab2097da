"""What a Hopper GEMM configuration's launches share: its tensor-map specs (the per-call shortcut to the plans' maps)
and the grids of the problems seen."""
from __future__ import annotations

import attrs

from ..tensor_maps import TensorMapSpec
from .config import HopperGemm

__all__ = ["GemmRun", "gemm_run"]


@attrs.frozen(eq=False)
class GemmRun:
    """What a configuration's launches share: its tensor-map specs, its scheduler and the grids of the problems
    seen (a dictionary: the scheduler's model is asked once per tile count)."""

    config: HopperGemm
    map_a: TensorMapSpec
    map_b: TensorMapSpec
    map_d: TensorMapSpec
    _grids: dict = attrs.field(factory=dict)

    def grid(self, M: int, N: int, ctas: int) -> int:
        """CTAs to launch for ``M x N`` on ``ctas`` SMs x CTAs per SM (whole clusters, no more than the work)."""
        g = self.config
        key = (-(-M // g.BM), -(-N // g.BN), ctas)
        found = self._grids.get(key)
        if found is None:
            found = self._grids[key] = g.plans.sched.at(key[:2]).grid(ctas)
        return found


_runs: dict[HopperGemm, GemmRun] = {}


def gemm_run(config: HopperGemm) -> GemmRun:
    """The configuration's ``GemmRun`` (made once)."""
    run = _runs.get(config)
    if run is None:
        a, b, d = (TensorMapSpec.of(m) for m in config.plans.maps())
        run = _runs[config] = GemmRun(config, a, b, d)
    return run
