"""The TMA streaming copy: its kernel is pycute's plans and header helpers, the data moving only through TMA; the
H200 numbers are in docs/throughput.md (python -m perf.gpu_stream)."""
import pytest

import pycute as pc
from pycute import Layout
from pycute.harness.stream import TmaStream

ARRAY = pc.make_global_tensor(pc.f32, Layout((1000, 512), (512, 1)))


@pytest.mark.parametrize("tile", [pc.make_smem_tensor(pc.f32, Layout((128, 64), (64, 1))),
                                  pc.kmajor_smem_tensor(pc.f32, 128, 32, "128B")], ids=["plain", "SW128"])
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_the_stream_kernel_issues_the_planned_tma_and_no_other_copy(tile, arch):
    stream = TmaStream(pc.make_tma_copy(tile, ARRAY), pc.make_tma_copy(ARRAY, tile), stages=3)
    h = stream.compile(arch).histogram()
    rank = stream.load.tensor_map.rank
    # two load sites (the prologue's and the refill's; ptxas may peel the loop and copy one) and one store site
    assert h[f"UTMALDG.{rank}D"] >= 2 and h[f"UTMASTG.{rank}D"] == 1
    assert not any(op.startswith(("LDG", "STG", "LDS", "STS")) for op in h)  # the data never passes a register
    assert not any(op.startswith(("LDL", "STL")) for op in h)               # nor local memory
    assert stream.tiles == (8, 512 // stream.load.tile_shape[1]) and stream.tile_bytes % 1024 == 0


def test_the_stream_takes_a_load_and_a_store_of_one_tile():
    tile = pc.make_smem_tensor(pc.f32, Layout((128, 64), (64, 1)))
    with pytest.raises(pc.CompileError, match="a load plan and a store plan of the same shared tile"):
        TmaStream(pc.make_tma_copy(tile, ARRAY), pc.make_tma_copy(tile, ARRAY))
