"""GPU round trips. Real tcgen05 runs need an sm_100-family device; the soft-model runs need any GPU with clusters
(sm_90+) and prove everything but the tcgen05 instructions: module load, launch (2-CTA clusters included), the
fill through the source layout, the mbarrier protocol, DSMEM for the CTA pair, and the readback."""
import numpy as np
import pytest

import pycute as pc
from pycute.atoms import cp_candidates
from pycute.compile import runtime
from pycute.atoms.tcgen05_cp import atom_tmem_tensor
from pycute.tensor.canonical import kmajor_smem_buffer
from pycute.harness.tcgen05_cp import RoundTrip

from . import compare

REASON = runtime.skip_reason()


def plans():
    out = []
    for g in (1, 2):
        src = pc.make_smem_tensor(pc.u8, pc.Layout((32, 16), (16, 1)))
        dst = pc.make_tmem_tensor(pc.u8, pc.Layout((32, 16), (pc.TLane, pc.TCol)),
                                  replica=pc.Layout(4, 32 * pc.TLane), columns=32)
        out.append((f"demo-g{g}", pc.make_tiled_copy(dst, src, cta_group=g)))
        for atom in cp_candidates(g):
            for swizzle, dtype in (("128B", pc.bf16), ("none", pc.f32), ("32B", pc.u8)):
                k = 4 * atom.bits // dtype.bits
                s = kmajor_smem_buffer(dtype, atom.rows, k, swizzle)[0:atom.rows, 0:k]
                d = atom_tmem_tensor(dtype, atom, k, columns=64)
                out.append((f"{atom.name}-g{g}-{swizzle}-{dtype.name}",
                            pc.make_tiled_copy(d, s, cta_group=g, shape=atom.shape, multicast=atom.multicast or None)))
    return out


PLANS = plans()


@pytest.fixture(scope="module")
def gpu():
    return runtime.Gpu()


def assert_same(got, want):
    compare.assert_same(got, want, "words", ("cta", "lane", "col"))


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("name,plan", PLANS, ids=[n for n, _ in PLANS])
def test_tcgen05_round_trip_on_sm100(gpu, name, plan):
    arch = "sm_100a" if runtime.device_info()[1][0] == 10 else "sm_110a"
    assert_same(*RoundTrip(plan, "rt").run(gpu, arch=arch, seed=5))


SOFT_REASON = None if runtime.device_info() is not None and runtime.device_info()[1][0] >= 9 else (
    "the soft-model runtime check needs a CUDA GPU with thread-block clusters (sm_90 or newer)")


@pytest.mark.gpu
@pytest.mark.skipif(SOFT_REASON is not None, reason=SOFT_REASON or "")
@pytest.mark.parametrize("name,plan", PLANS, ids=[n for n, _ in PLANS])
def test_runtime_path_with_tcgen05_compiled_out(gpu, name, plan):
    major, minor = runtime.device_info()[1]
    assert_same(*RoundTrip(plan, "rt").run(gpu, arch=f"sm_{major}{minor}a", soft=True, seed=5))


@pytest.mark.gpu
@pytest.mark.skipif(SOFT_REASON is not None, reason=SOFT_REASON or "")
@pytest.mark.parametrize("name,plan", [PLANS[0], PLANS[20]], ids=[PLANS[0][0], PLANS[20][0]])
def test_timing_plumbing_with_tcgen05_compiled_out(gpu, name, plan):
    """clock64 around issue -> completion and CUDA events around the launch (of the software copy here)."""
    major, minor = runtime.device_info()[1]
    got, want, timing = RoundTrip(plan, "rt").run(gpu, arch=f"sm_{major}{minor}a", soft=True, seed=5, timed=True)
    assert_same(got, want)
    assert len(timing.copy_cycles) == plan.cta_group and all(c > 0 for c in timing.copy_cycles)
    assert timing.launch_ms > 0


@pytest.mark.gpu
@pytest.mark.skipif(SOFT_REASON is not None, reason=SOFT_REASON or "")
@pytest.mark.parametrize("name,plan", [PLANS[1], PLANS[21]], ids=[PLANS[1][0], PLANS[21][0]])
def test_a_corrupted_plan_fails_the_round_trip(gpu, name, plan):
    """Negative control: the same harness must notice a wrong copy (two instructions' TMEM columns swapped)."""
    import attrs
    first, second, *rest = plan.instructions
    swapped = (attrs.evolve(first, tmem_offset=second.tmem_offset), attrs.evolve(second, tmem_offset=first.tmem_offset))
    major, minor = runtime.device_info()[1]
    got, want = RoundTrip(attrs.evolve(plan, instructions=swapped + tuple(rest)), "rt").run(
        gpu, arch=f"sm_{major}{minor}a", soft=True, seed=5)
    assert not np.array_equal(got, want)
