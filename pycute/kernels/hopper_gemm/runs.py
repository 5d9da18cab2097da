"""What a Hopper GEMM configuration's launches share: its tensor-map specs (the per-call shortcut to the plans' maps)
and the launches of the problems seen: the grid, the partition (split-K / stream-K) and its workspace."""
from __future__ import annotations

import attrs

from ...pipeline.split_k import KSplit
from ..tensor_maps import TensorMapSpec
from .config import HopperGemm

__all__ = ["GemmRun", "Launch", "gemm_run"]


@attrs.frozen
class Launch:
    """What a launch of a configuration on a problem needs besides its tensors: the grid, the partition (split-K /
    stream-K: a ``KSplit``), the workspace bytes of the partials and the fixup's counters (zero when whole)."""

    grid: int
    split: KSplit
    workspace_bytes: int
    counters: int


@attrs.frozen(eq=False)
class GemmRun:
    """What a configuration's launches share: its tensor-map specs, its scheduler and the grids of the problems
    seen (a dictionary: the scheduler's model is asked once per tile count)."""

    config: HopperGemm
    map_a: TensorMapSpec
    map_b: TensorMapSpec
    map_d: TensorMapSpec
    _grids: dict = attrs.field(factory=dict)
    _launches: dict = attrs.field(factory=dict)

    def grid(self, M: int, N: int, ctas: int) -> int:
        """CTAs to launch for ``M x N`` in whole tiles on ``ctas`` SMs x CTAs per SM (whole clusters, no more than
        the work)."""
        g = self.config
        key = (-(-M // g.BM), -(-N // g.BN), ctas)
        found = self._grids.get(key)
        if found is None:
            found = self._grids[key] = g.plans.sched.at(key[:2], 1).grid(ctas)
        return found

    def whole(self, M: int, N: int) -> tuple[int, int, int, int, int, int]:
        """The kernel's arguments between ``scale`` and the epilogue's for whole tiles and no fp8 scales: no
        workspace, no counters, every unit whole, no workers, no scales."""
        g = self.config
        return 0, 0, g.plans.sched.at((-(-M // g.BM), -(-N // g.BN)), 1).units, 0, 0, 0

    def launch(self, M: int, N: int, K: int, split: KSplit, ctas: int) -> Launch:
        """The launch of ``M x N x K`` shared as ``split`` on ``ctas`` SMs x CTAs per SM."""
        g = self.config
        key = (M, N, K, split, ctas)
        found = self._launches.get(key)
        if found is None:
            model = g.plans.sched.at((-(-M // g.BM), -(-N // g.BN)), -(-K // g.BK), split)
            found = self._launches[key] = Launch(model.grid(ctas), split, model.workspace_bytes, model.counters)
        return found


_runs: dict[HopperGemm, GemmRun] = {}


def gemm_run(config: HopperGemm) -> GemmRun:
    """The configuration's ``GemmRun`` (made once)."""
    run = _runs.get(config)
    if run is None:
        a, b, d = (TensorMapSpec.of(m) for m in config.plans.maps())
        run = _runs[config] = GemmRun(config, a, b, d)
    return run
