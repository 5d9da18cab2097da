"""The other throughput kernels: the load-only TMA stream, the cp.async copy and the DSMEM ring compile to the
planned copies and nothing else that moves the tile (and no local memory), refuse plans they cannot run, the ring's
expected result is a rotation within each cluster, and every stream's pipeline passes the model checker. The H200 numbers are in docs/throughput.md (python -m perf.report --gpu)."""
import numpy as np
import pytest

import pycute as pc
from pycute import Layout
from pycute.harness.stream import TmaStream
from pycute.harness.stream_cp_async import CpAsyncStream
from pycute.harness.stream_dsmem import DsmemRing
from pycute.harness.stream_load import TmaLoadStream, position_checksum

ARRAY = pc.make_global_tensor(pc.f32, Layout((1024, 512), (512, 1)))


def staged(rows, cols, stages):
    return pc.make_smem_tensor(pc.f32, Layout((rows, cols, stages), (cols, 1, rows * cols)))[:, :, pc.dynamic("stage")]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_the_load_only_stream_issues_one_tma_load_site_and_no_store(arch):
    h = TmaLoadStream(pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((128, 64), (64, 1))), ARRAY), 4) \
        .compile(arch).histogram()
    assert h["UTMALDG.2D"] == 1 and not any(op.startswith(("UTMASTG", "STG", "LDL", "STL")) for op in h)


def test_the_load_only_stream_reads_a_plain_row_major_tile():
    with pytest.raises(pc.CompileError, match="plain row-major"):
        TmaLoadStream(pc.make_tma_copy(pc.kmajor_smem_tensor(pc.f32, 128, 32, "128B"), ARRAY))


def test_the_checksum_weighs_every_word_by_its_place():
    words = np.array([1, 2, 3], dtype=np.uint32)
    assert position_checksum(words) == (1 ^ 0) + (2 ^ 1) + (3 ^ 2) == 5
    assert position_checksum(words[::-1].copy()) != position_checksum(words)


@pytest.mark.parametrize("threads", [128, 256])
def test_the_cp_async_stream_issues_the_planned_copies_and_one_tma_store(threads):
    buf = staged(128, 64, 4)
    load = pc.make_cp_async_copy(buf, ARRAY, threads=threads, completion="arrive")
    h = CpAsyncStream(load, pc.make_tma_copy(ARRAY, buf)).compile().histogram()
    # the loop's one call site, the plan's copies (ptxas may unroll it)
    copies = h["LDGSTS.E.BYPASS.128.ZFILL"]
    assert copies % len(load.instructions) == 0 and copies >= len(load.instructions)
    assert h["UTMASTG.2D"] == 1 and "STG.E" not in h and not any(op.startswith(("LDL", "STL")) for op in h)


def test_the_cp_async_stream_needs_the_same_stage_index_on_both_plans():
    buf = staged(64, 64, 3)
    other = pc.make_smem_tensor(pc.f32, Layout((64, 64, 2), (64, 1, 4096)))[:, :, pc.dynamic("stage")]
    with pytest.raises(pc.CompileError, match="the same one run-time index"):
        CpAsyncStream(pc.make_cp_async_copy(buf, ARRAY, completion="arrive"), pc.make_tma_copy(ARRAY, other))


def test_the_dsmem_ring_sends_one_chunk_per_round_and_rotates_each_cluster():
    ring = pc.make_smem_tensor(pc.f32, Layout((4096, 2), (1, 4096)))
    plan = pc.make_dsmem_copy(ring[:, pc.dynamic("recv")], ring[:, pc.dynamic("send")])
    r = DsmemRing(plan, 4)
    h = r.compile().histogram()
    assert h["UBLKCP.S.S"] == 1 and r.stage_bytes == 16384 and not any(op.startswith(("LDL", "STL")) for op in h)
    init = np.repeat(np.arange(8, dtype=np.uint8), r.stage_bytes)            # two clusters of four
    got = r.expected(init, 2, 1)[::r.stage_bytes]
    assert got.tolist() == [3, 0, 1, 2, 7, 4, 5, 6]                          # CTA r holds what r - 1 started with


def test_the_dsmem_ring_takes_a_send_and_a_recv_stage():
    a = pc.make_smem_tensor(pc.f32, Layout((64, 64), (64, 1)))
    with pytest.raises(pc.CompileError, match="stage 'send' and stage 'recv'"):
        DsmemRing(pc.make_dsmem_copy(a, a), 2)


@pytest.mark.parametrize("make", [
    lambda: TmaStream(pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((128, 64), (64, 1))), ARRAY),
                      pc.make_tma_copy(ARRAY, pc.make_smem_tensor(pc.f32, Layout((128, 64), (64, 1)))), 3),
    lambda: TmaLoadStream(pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((128, 64), (64, 1))), ARRAY), 4),
    lambda: CpAsyncStream(pc.make_cp_async_copy(staged(128, 64, 4), ARRAY, completion="arrive"),
                          pc.make_tma_copy(ARRAY, staged(128, 64, 4))),
    lambda: DsmemRing(pc.make_dsmem_copy(*(pc.make_smem_tensor(pc.f32, Layout((4096, 2), (1, 4096)))[:, pc.dynamic(n)]
                                           for n in ("recv", "send"))), 4),
], ids=["copy", "load-only", "cp.async", "dsmem"])
def test_every_streams_pipeline_passes_the_model_checker(make):
    from pycute.sim import check_pipeline
    assert check_pipeline(make().pipeline).exhaustive
