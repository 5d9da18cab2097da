"""GPU throughput of the round-trip kernel's copy phase: runs only on an sm_100-family device, skipped elsewhere.

Measured: clock64 cycles from the issue to the mbarrier completion of the copy (the kernel's PYCUTE_TIME_COPY
variant), as bytes per cycle on one SM; CUDA events around the launch; and the wall time of whole round trips."""
import pytest

import pycute as pc
from pycute.compile import runtime
from pycute.harness.tcgen05_cp import RoundTrip

from .cases import ATOMS, atom_copy

REASON = runtime.skip_reason()


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_round_trip_kernel_time(benchmark):
    atom = ATOMS["128x256b-g1"]
    plan = pc.make_tiled_copy(*atom_copy(atom, 4))
    gpu = runtime.Gpu()
    rt = RoundTrip(plan, "bench")
    benchmark.group = "gpu"
    got, want, timing = rt.run(gpu, timed=True)
    assert (got == want).all() and timing.copy_cycles[0] > 0
    benchmark.extra_info["copy_cycles"] = timing.copy_cycles[0]
    benchmark.extra_info["bytes_per_cycle_per_sm"] = round(plan.bytes / timing.copy_cycles[0], 2)
    benchmark.extra_info["launch_ms_cuda_events"] = timing.launch_ms
    benchmark(rt.run, gpu)
