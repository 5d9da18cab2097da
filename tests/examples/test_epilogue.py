"""examples/epilogue.py, the Blackwell epilogue from plans alone (TMA load -> tcgen05.cp -> tcgen05.ld -> scale,
bf16 -> swizzled shared -> TMA store), builds for sm_100a with exactly its planned SASS and for sm_90a soft; the
emulator runs its plans to the bytes the layouts say; the PTX interpreter reads back from the compiled kernel the
streams the plans give; on a GPU the soft build's output array equals the expected bytes."""
import collections

import numpy as np
import pytest

from examples.epilogue import Epilogue
from pycute.compile import runtime
from pycute.interp.stream import trace_entry

SOFT_REASON = None if runtime.device_info() is not None and runtime.device_info()[1][0] >= 9 else (
    "the soft build runs on a CUDA GPU of compute capability 9.0 or newer")
RAW, SLOT, BARS = 0x400, 0x100, 0x200


@pytest.fixture(scope="module")
def example():
    return Epilogue()


def _ops(code):
    return collections.Counter(i.split()[0] for i in code.instructions())


def test_the_sm100a_build_holds_exactly_the_planned_instructions(example):
    ops = _ops(example.compile("sm_100a"))
    words = example.ld.registers // 2
    assert ops["UTCCP.T.S"] == len(example.cp.instructions) == 4
    assert ops["LDTM.x32"] == len(example.ld.per_warp) == 1
    assert ops["STS.128"] == len(example.epilogue.store.moves) == 4
    assert ops["F2FP.BF16.F32.PACK_AB"] == words == 16
    assert ops["UTMALDG.2D"] == ops["UTMASTG.2D"] == 1


def test_the_sm90a_soft_build_holds_the_same_shared_stores_and_tma(example):
    ops = _ops(example.compile("sm_90a", soft=True))
    assert ops["STS.128"] == 4 and ops["UTMASTG.2D"] == 1 and not any(o.startswith("UTCCP") for o in ops)


def test_the_plans_emulate_to_the_bytes_the_layouts_say(example):
    x = example.inputs(3)
    out = np.random.default_rng(4).integers(0, 256, x.size * 2, dtype=np.uint8)
    origin = (384, 160)
    assert np.array_equal(example.emulate(x, 0.37, origin, out), example.expected(x, 0.37, origin, out))


def test_the_compiled_kernel_issues_the_plans_streams(example):
    code = example.compile("sm_100a")
    origin = (256, 96)
    params = {0: 0x7000_0000_0000, 1: 0x7000_0001_0000, 2: 0x3F000000, 3: origin[0], 4: origin[1]}
    symbols = {"raw": RAW, "tmem_slot": SLOT, "bars": BARS}
    base = (RAW + 1023) & ~1023
    out_smem = base + example.in_bytes
    for t in (0, 1, 33, 127):
        thread = trace_entry(code.ptx, params, symbols, "blackwell_epilogue", tid=t, lane=t % 32)
        assert [(i.address, i.ptx) for i in thread.smem if i.ptx.startswith("st")] == \
            [(i.address, i.ptx) for i in example.epilogue.store.stream(out_smem, thread=t)]
        assert thread.ldst == example.ld.stream(0, t // 32)
        if t == 0:
            load = example.load.stream(base, origin[0] // 128, origin[1] // 32)
            store = example.epilogue.tma.stream(out_smem, *example.epilogue.tma_arguments(origin))
            assert [(i.coords, i.smem) for i in thread.tma] == [(i.coords, i.smem) for i in load + store]
            assert [(op, taddr) for op, taddr, _ in thread.issued] == \
                [(op, taddr) for op, taddr, _ in example.cp.stream(base, 0)]


@pytest.mark.gpu
@pytest.mark.skipif(SOFT_REASON is not None, reason=SOFT_REASON or "")
def test_the_soft_build_writes_the_expected_bytes_on_the_gpu(example):
    info = runtime.device_info()
    got, want = example.run(runtime.Gpu(), f"sm_{info[1][0]}{info[1][1]}a", soft=info[1][0] < 10)
    assert np.array_equal(got, want), f"{int((got != want).sum())} bytes differ"
