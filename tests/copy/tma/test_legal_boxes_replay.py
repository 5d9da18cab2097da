"""The H100's run of issue 43's boxes (docs/runs/tma/tma-h100-legal-boxes.jsonl, ``python -m tools tma_boxes``,
docs/tma.md section 8) still replays: every case it copied is planned again as it ran (the same load and store
plans, the same tiles, the store issued at the same ones), and at the forced stores over a row's partial unit the
emulator overwrites past as many rows as the GPU did.

The expectations are the GPU's recorded values; nothing here is taken from the code under test."""
import json
from pathlib import Path

import pytest

import pycute as pc
from pycute.harness.tma import TmaRoundTrip
from tools import tma_boxes

from . import cases_legal

RUN = Path(__file__).resolve().parents[3] / "docs" / "runs" / "tma" / "tma-h100-legal-boxes.jsonl"
RECORDS = [json.loads(line) for line in RUN.read_text().splitlines()]
COPIED = [r for r in RECORDS if not r["case"].startswith("overwrite/")]
FORCED = [r for r in RECORDS if r["case"].startswith("overwrite/")]


def test_the_record_is_the_h100_run_every_case_equal_to_the_emulator_on_the_gpu():
    assert len(RECORDS) == 20 and len(FORCED) == 2
    assert {r["device"] for r in RECORDS} == {"NVIDIA H100 80GB HBM3"} and all(r["ok"] for r in RECORDS)
    assert set(r["case"] for r in RECORDS) <= set(tma_boxes.case_names())


@pytest.mark.parametrize("record", COPIED, ids=[r["case"] for r in COPIED])
def test_every_copied_case_is_planned_again_as_it_ran_on_the_gpu(record):
    group, _, name = record["case"].partition("/")
    _, g, s, tiles, load_options, store_options = next(
        c for c in getattr(cases_legal, tma_boxes.GROUPS[group]) if c[0] == name)
    load = pc.make_tma_copy(s, g, **load_options)
    store = None if store_options is None else pc.make_tma_copy(g, s, **store_options)
    assert repr(load) == record["plan"]
    assert (None if store is None else repr(store)) == record["store"]
    assert [list(t) for t in tiles] == [t["tile"] for t in record["tiles"]]
    for tile, ran in zip(tiles, record["tiles"]):
        values = dict(zip(load.coordinate_names, tile))
        stores = store is not None and all(p.holds(values[p.name]) for p in store.preconditions)
        assert stores == ran["stored"], tile
        assert ran["smem"] is None and ran["array"] is None and ran["spins"] == 0   # the GPU equal to the emulator


@pytest.mark.parametrize("record", FORCED, ids=[r["case"] for r in FORCED])
def test_a_forced_store_is_still_refused_and_the_emulator_overwrites_the_rows_the_gpu_did(record):
    load, forced, tile, refused = tma_boxes.forced_store(record["case"].partition("/")[2])
    assert list(tile) == record["tile"]
    assert refused is not None and refused.split(";")[0] == record["refused"].split(";")[0]
    rt = TmaRoundTrip(load, forced)
    _, array = rt.emulate(tile, 0)
    _, before = rt.arrays(0)
    assert tma_boxes._rows_overwritten(load, array, before) == record["rows_overwritten"]    # 63 and 32 on the H100
