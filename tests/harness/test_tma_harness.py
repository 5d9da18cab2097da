"""The TMA round trip refuses, before anything reaches the driver, a launch whose arguments the kernel would read
past (a host-side fault otherwise: the first H200 run of the coordinate probe, ``python -m tools tma_coordinates``,
lost every load case to it)."""
import pytest

import pycute as pc
from pycute import Layout
from pycute.compile.runtime import Gpu, _ptx_parameter_count
from pycute.harness.tma import TmaRoundTrip


class _NoDevice(Gpu):
    """A Gpu that was never opened: the checks under test must raise before it is used."""

    def __init__(self) -> None:
        pass


@pytest.mark.parametrize("origin", [(0,), (0, 0, 0)], ids=["too-few", "too-many"])
def test_a_round_trip_launch_with_the_wrong_number_of_coordinates_is_refused(origin):
    g = pc.make_global_tensor(pc.f32, Layout((40, 32), (32, 1)))
    load = pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((64, 32), (32, 1))), g,
                            origin=(pc.dynamic("r"), pc.dynamic("c")))
    with pytest.raises(pc.PlanError, match=rf"{len(origin)} coordinates .* given; the kernel takes 2 \(r, c\)"):
        TmaRoundTrip(load, None).launch(_NoDevice(), origin)


def test_a_kernels_parameter_count_is_read_from_its_ptx_not_asked_of_the_driver():
    # the driver's cuKernelGetParamInfo answers "invalid value" past the last parameter: compute-sanitizer reported
    # that API error in every launch of the H200 sanitizer run that counted parameters through it
    ptx = ".visible .entry k(\n .param .u64 k_param_0,\n .param .align 64 .b8 k_param_1[128],\n .param .u32 p2\n)\n{ ret; }"
    assert _ptx_parameter_count(ptx, "k") == 3
    assert _ptx_parameter_count(".entry z()\n{ ret; }", "z") == 0
    assert _ptx_parameter_count("", "k") is None
