"""tcgen05.ld/st round trips: in the emulator everywhere (so the harness's expectation is itself checked in CI), and
on a GPU with clusters through the soft-tcgen05 build of the same kernels (the real build needs an sm_100 device)."""
import pytest

from pycute.compile import runtime

from . import compare
from .ldst_cases import CASES, emulate

IDS = [name for name, _ in CASES]
SOFT_REASON = None if runtime.device_info() is not None and runtime.device_info()[1][0] >= 9 else (
    "the soft-model runtime check needs a CUDA GPU with thread-block clusters (sm_90 or newer)")


def assert_same(got, want):
    compare.assert_same(got, want, "registers", ("cta", "thread", "reg"))


@pytest.mark.parametrize("name,rt", CASES, ids=IDS)
def test_the_round_trip_in_the_emulator_returns_what_the_fragments_say(name, rt):
    assert_same(*emulate(rt, seed=3))


@pytest.mark.parametrize("name,rt", CASES[:4], ids=IDS[:4])
def test_the_round_trip_kernels_build_for_sm_100a_and_soft_sm_90a(name, rt):
    assert any(op.startswith("LDTM") for op in rt.compile().histogram())
    rt.compile("sm_90a", soft=True)


@pytest.fixture(scope="module")
def gpu():
    return runtime.Gpu()


@pytest.mark.gpu
@pytest.mark.skipif(runtime.skip_reason() is not None, reason=runtime.skip_reason() or "")
@pytest.mark.parametrize("name,rt", CASES, ids=IDS)
def test_ldst_round_trip_on_sm100(gpu, name, rt):
    arch = "sm_100a" if runtime.device_info()[1][0] == 10 else "sm_110a"
    assert_same(*rt.run(gpu, arch=arch, soft=False, seed=3))


@pytest.mark.gpu
@pytest.mark.skipif(SOFT_REASON is not None, reason=SOFT_REASON or "")
@pytest.mark.parametrize("name,rt", CASES, ids=IDS)
def test_ldst_round_trip_with_tcgen05_compiled_out(gpu, name, rt):
    major, minor = runtime.device_info()[1]
    assert_same(*rt.run(gpu, arch=f"sm_{major}{minor}a", soft=True, seed=3))
