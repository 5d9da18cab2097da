"""The bank model against ncu on the H200: every plan the recorded runs profiled (docs/epilogue.md section 8) is
planned again as it was (the same instructions, the same predicted wavefronts) and its predicted wavefronts and
conflicts equal what ncu counted for the plan's own operation (``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st``
/ ``_ld``, ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st`` / ``_ld``)."""
import collections
import json
import pathlib

import pytest

from tests.gpu.epilogue_probe import bank_plan

RUNS_DIR = pathlib.Path(__file__).resolve().parents[3] / "docs" / "runs" / "epilogue"
RUNS = ["epilogue-bank-h200.jsonl", "epilogue-bank-ld-h200.jsonl"]
RECORDS = [(name, r) for name in RUNS for r in map(json.loads, (RUNS_DIR / name).read_text().splitlines())
           if r.get("section") == "bank"]


@pytest.mark.parametrize("run,record", RECORDS, ids=[f"{n.split('-h200')[0]}:{r['plan']}" for n, r in RECORDS])
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
