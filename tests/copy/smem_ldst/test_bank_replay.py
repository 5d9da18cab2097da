"""The bank model against ncu: every plan the recorded runs profiled (the H200's store and load plans, docs/epilogue.md
section 8; the H100's searched ``.trans`` pairings and pinned forms, ``python -m tools smem_wavefronts``) is
planned again as it was (the same instructions, the same predicted wavefronts) and its predicted wavefronts and
conflicts equal what ncu counted for the plan's own operation (``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st``
/ ``_ld``, ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st`` / ``_ld``)."""
import collections
import json
import pathlib

import pytest

from tests.gpu.epilogue_probe import bank_plan, roundtrip

RUNS_DIR = pathlib.Path(__file__).resolve().parents[3] / "docs" / "runs" / "epilogue"
RUNS = ["epilogue-bank-h200.jsonl", "epilogue-bank-ld-h200.jsonl", "smem-wavefronts-h100.jsonl"]
RECORDS = [(name, r) for name in RUNS for r in map(json.loads, (RUNS_DIR / name).read_text().splitlines())
           if r.get("section") == "bank"]


@pytest.mark.parametrize("run,record", RECORDS, ids=[f"{n.rsplit('-h', 1)[0]}:{r['plan']}" for n, r in RECORDS])
def test_every_recorded_plan_is_planned_again_and_its_prediction_equals_ncus_count(run, record):
    plan = bank_plan(record["plan"])
    op = record["plan"].split(":")[0]
    sass = collections.Counter({m.atom.sass: 0 for m in plan.moves})
    for m in plan.moves:
        sass[m.atom.sass] += plan.warps
    assert dict(sass) == record["planned_instructions"] and repr(plan) == record["repr"]
    measured = record["measured"]
    assert plan.wavefronts == measured[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"]
    conflicts = measured[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"]
    assert plan.wavefronts - plan.ideal_wavefronts == conflicts


ROUNDTRIPS = [r for r in map(json.loads, (RUNS_DIR / "smem-wavefronts-h100.jsonl").read_text().splitlines())
              if r.get("section") == "roundtrip"]


@pytest.mark.parametrize("record", ROUNDTRIPS, ids=[r["case"] for r in ROUNDTRIPS])
def test_every_round_trip_the_h100_ran_bit_for_bit_is_planned_again_as_it_ran(record):
    """The 4 TMA round trips of the new store plans (registers -> shared -> global and back) the H100 ran bit for
    bit: the same store, load and TMA plans."""
    assert not any(record[k] for k in ("smem", "array", "loaded")) and "error" not in record
    rt = roundtrip(record["case"])
    assert (repr(rt.epilogue.store), repr(rt.load), repr(rt.epilogue.tma)) == (
        record["store"], record["load"], record["tma"])
