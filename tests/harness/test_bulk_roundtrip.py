"""The bulk round trip's kernel orders its shared-memory accesses as the PTX memory model and compute-sanitizer
racecheck both need, read from the compiled kernel's PTX interpreted thread by thread (the issuing thread 0 and
another): every thread's generic stores, then its fence.proxy.async, then a CTA barrier, then the bulk load; every
read of the tile after a barrier that follows the load (racecheck counts the load's writes as thread 0's and sees
no order from the mbarrier wait alone: issue 34's 21 warnings); the bulk store after a barrier, then its wait."""
import pytest

import pycute as pc
from pycute.harness.bulk import BulkRoundTrip
from pycute.interp.stream import trace_entry

from tests.copy.flat_cases import BULK

PARAMS = {0: 0x7000_0000_0000, 1: 0x7100_0000_0000, 2: 0x7200_0000_0000, 3: 0x7300_0000_0000, 4: 0, 5: 0}
SYMBOLS = {"raw": 0x410, "mbar": 0x400}
LOAD = "cp.async.bulk.shared::cluster.global"
STORE = "cp.async.bulk.global.shared::cta"


@pytest.fixture(scope="module")
def events():
    """Per thread (0 issues, 5 does not): its trace as (barrier epoch, op), the epoch counting its bar.syncs."""
    _, g, s, _ = BULK[0]
    ptx = BulkRoundTrip(pc.make_bulk_copy(s, g), pc.make_bulk_copy(g, s)).compile().ptx
    out = {}
    for tid in (0, 5):
        epoch, seq = 0, []
        for entry in trace_entry(ptx, PARAMS, SYMBOLS, "bulk_roundtrip", tid=tid).trace:
            op = entry[0]
            epoch += op == "bar.sync"
            seq.append((epoch, op))
        out[tid] = seq
    return out


def epochs(seq, prefix):
    return [e for e, op in seq if op.startswith(prefix)]


def test_every_generic_store_is_fenced_for_the_async_proxy_before_the_barrier_the_load_follows(events):
    load_epoch = epochs(events[0], LOAD)
    assert len(load_epoch) == 1
    for seq in events.values():
        ops = [op for _, op in seq]
        last_store = max(i for i, op in enumerate(ops) if op.startswith("st.shared"))
        fence = ops.index("fence.proxy.async.shared::cta", last_store)
        barrier = ops.index("bar.sync", fence)
        assert seq[barrier][0] == load_epoch[0]                   # the load's thread passed this very barrier


def test_every_read_of_the_tile_follows_a_barrier_after_the_load(events):
    load_epoch = epochs(events[0], LOAD)[0]
    for seq in events.values():
        reads = epochs(seq, "ld.shared")
        assert reads and min(reads) > load_epoch


def test_the_store_follows_a_barrier_after_the_reads_and_is_waited_for(events):
    store_epoch = epochs(events[0], STORE)
    assert len(store_epoch) == 1
    for seq in events.values():
        assert max(epochs(seq, "ld.shared")) < store_epoch[0]
    ops = [op for _, op in events[0]]
    assert ops[ops.index(next(o for o in ops if o.startswith(STORE))):][1:] == \
        ["cp.async.bulk.commit_group", "cp.async.bulk.wait_group"]
