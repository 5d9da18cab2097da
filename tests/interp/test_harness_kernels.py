"""pycute's own generated kernels run whole on the CPU and leave what the emulator (or numpy) says: the TMA round trip
(by pointer and __grid_constant__, multicast, reduce), the bulk and DSMEM round trips, cp.async with groups and with
an mbarrier, the DSMEM ring stream, and the load-only stream's checksum over a small array."""
import numpy as np
import pytest

import pycute as pc
from pycute import Layout
from pycute.harness.bulk import BulkRoundTrip, DsmemRoundTrip
from pycute.harness.cp_async import CpAsyncRoundTrip
from pycute.harness.stream_dsmem import DsmemRing
from pycute.harness.stream_load import CONSUMERS, TmaLoadStream, position_checksum
from pycute.harness.tma import TmaRoundTrip
from pycute.interp import run_kernel, tensor_map

from tests.copy.flat_cases import BULK, CP_ASYNC, DSMEM
from tests.copy.tma.cases import CASES, MULTICAST, REDUCE


def case(cases, name):
    return next(c for c in cases if c[0] == name)


def tma_roundtrip(rt, tile, load, store, ctas=1):
    a, b = rt.arrays(0)
    dump, status = np.zeros(ctas * rt.smem_bytes, dtype=np.uint8), np.zeros(ctas, dtype=np.uint32)
    run_kernel(rt.compile(), grid=ctas, block=128, cluster=ctas, smem=rt.smem_bytes + 1024,
               args=[tensor_map(load, a), tensor_map(store, b), dump, status, *tile])
    return dump, b


@pytest.mark.parametrize("grid_constant", [False, True])
def test_the_tma_round_trip_leaves_the_emulators_image_and_array(grid_constant):
    _, g, s, tiles = case(CASES, "bf16-kmajor-128B")
    load, store = pc.make_tma_copy(s, g), pc.make_tma_copy(g, s)
    rt = TmaRoundTrip(load, store, grid_constant)
    image, array = tma_roundtrip(rt, tiles[-1], load, store)
    want_image, want_array = rt.emulate(tiles[-1], 0)
    assert np.array_equal(image, want_image) and np.array_equal(array, want_array)


def test_a_multicast_load_fills_every_cta_of_the_cluster():
    _, g, s, ctas, tiles = case(MULTICAST, "bf16-kmajor-128B-x2")
    load = pc.make_tma_copy(s, g, multicast=ctas)
    rt = TmaRoundTrip(load, None)
    image, _ = tma_roundtrip(rt, tiles[-1], load, load, ctas)
    assert np.array_equal(image, rt.emulate(tiles[-1], 0)[0])


def test_a_tma_reduction_combines_into_the_array():
    _, g, s, op, tiles = case(REDUCE, "u32-add")
    load, store = pc.make_tma_copy(s, g), pc.make_tma_copy(g, s, reduce=op)
    rt = TmaRoundTrip(load, store)
    _, array = tma_roundtrip(rt, tiles[0], load, store)
    assert np.array_equal(array, rt.emulate(tiles[0], 0)[1])


def test_the_bulk_round_trip_leaves_the_emulators_image_and_array():
    _, g, s, tiles = case(BULK, "u8-kmajor-128B-swizzled")
    rt = BulkRoundTrip(pc.make_bulk_copy(s, g), pc.make_bulk_copy(g, s))
    a, b = rt.arrays(0)
    dump, status = np.zeros(rt.smem_bytes, dtype=np.uint8), np.zeros(1, dtype=np.uint32)
    run_kernel(rt.compile(), block=128, smem=rt.smem_bytes + 1024, args=[a, b, dump, status, *tiles[-1]])
    image, array = rt.emulate(tiles[-1], 0)
    assert np.array_equal(dump, image) and np.array_equal(b, array)


@pytest.mark.parametrize("ctas", [2, 4])
def test_the_dsmem_ring_rotates_every_ctas_tile(ctas):
    _, src, dst, _ = case(DSMEM, "bf16-128B-to-plain")
    rt = DsmemRoundTrip(pc.make_dsmem_copy(dst, src), ctas)
    dump, status = np.zeros(ctas * rt.region, dtype=np.uint8), np.zeros(ctas, dtype=np.uint32)
    run_kernel(rt.compile(), grid=ctas, block=128, cluster=ctas, smem=rt.region + 1024,
               args=[rt.images(0), dump, status])
    assert np.array_equal(dump, rt.emulate(0))


@pytest.mark.parametrize("name", ["bf16-kmajor-128B", "f32-stride-37-transposed-arrive"])
def test_cp_async_by_groups_and_by_mbarrier_leaves_the_emulators_image(name):
    _, g, s, options, tiles = case(CP_ASYNC, name)
    rt = CpAsyncRoundTrip(pc.make_cp_async_copy(s, g, **options))
    dump, status = np.zeros(rt.smem_bytes, dtype=np.uint8), np.zeros(1, dtype=np.uint32)
    run_kernel(rt.compile(), block=rt.block, smem=rt.smem_bytes + 1024, args=[rt.array(0), dump, status, *tiles[1]])
    assert np.array_equal(dump, rt.emulate(tiles[1], 0))


@pytest.mark.parametrize("ctas, rounds", [(2, 3), (4, 2)])
def test_the_dsmem_ring_stream_rotates_each_clusters_tiles_once_per_round(ctas, rounds):
    ring = pc.make_smem_tensor(pc.f32, Layout((256, 2), (1, 256)))
    r = DsmemRing(pc.make_dsmem_copy(ring[:, pc.dynamic("recv")], ring[:, pc.dynamic("send")]), ctas)
    init = np.random.default_rng(5).integers(0, 256, 2 * ctas * r.stage_bytes, dtype=np.uint8)   # two clusters
    out = np.zeros_like(init)
    run_kernel(r.compile(), grid=2 * ctas, block=128, cluster=ctas, smem=2 * r.stage_bytes + 1024,
               args=[init, out, rounds])
    assert np.array_equal(out, r.expected(init, 2, rounds))


def test_the_load_only_stream_checksums_every_word_of_a_small_array():
    array = pc.make_global_tensor(pc.f32, Layout((64, 64), (64, 1)))
    stream = TmaLoadStream(pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((16, 64), (64, 1))), array), 2)
    words = np.random.default_rng(3).integers(0, 1 << 32, 64 * 64, dtype=np.uint64).astype(np.uint32)
    checksum = np.zeros(1, dtype=np.uint64)
    run_kernel(stream.compile(), grid=2, block=CONSUMERS + 32, smem=2 * stream.tile_bytes + 1024,
               args=[tensor_map(stream.load, words), checksum, *stream.tiles])
    assert int(checksum[0]) == position_checksum(words)
