"""``python -m tools tma_coordinates`` works first time on the H200: on the CPU every case builds up to its launch (plans,
sm_90a kernels), the probe's own reference model equals the emulator on every coordinate case pycute plans, each
case runs in its own child process under its exact name (run 1 split names at their commas), and the verdicts
tell what pycute refuses (run 2's faults: off the 16-byte unit) from what it promises (equal, no fault)."""
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
#: Run 2's coordinate and NaN-fill cases on the H200: (name, whether it faulted).
def _coordinate_cases(name: str) -> list[tuple[str, bool]]:
    """(case, faulted) of a recorded run's loads, stores, reductions, prefetches and NaN-filling loads."""
    return [(r["case"], bool(r.get("fault")))
            for r in map(json.loads, (ROOT / "docs" / "runs" / "tma" / name).read_text().splitlines())
            if r["case"].startswith(("coord/", "nan/"))]


RUN2 = _coordinate_cases("tma-h200-coords.jsonl")
RUN3 = _coordinate_cases("tma-h200-coords-run3.jsonl")


@pytest.fixture(scope="module")
def probe():
    from tools import tma_coordinates
    return tma_coordinates


def test_every_h200_case_builds_and_its_reference_model_equals_the_emulator(probe, capsys):
    probe.check_on_cpu()
    assert "the reference model equals the emulator" in capsys.readouterr().out
    assert len(set(probe.cases())) == len(probe.cases())


def test_cases_with_commas_in_their_names_run_in_their_own_children_in_parallel(probe, tmp_path):
    names = ["coord/load/f32/77,3", "coord/store/f32/-5,0", "nan/f32/neg-col"]
    rows = probe.run_all(tmp_path / "out.jsonl", names, jobs=3, cpu=True)
    assert [r["case"] for r in rows] == names
    assert all(r["cpu"].startswith("built up to its") for r in rows), rows
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 3


FAULT = {"fault": True, "rc": 1, "error": "CUDA_ERROR_ILLEGAL_INSTRUCTION"}


@pytest.mark.parametrize("name", ["coord/load/f32/77,3", "coord/store/bf16sw128/77,3", "coord/reduce/u32/77,3",
                                  "coord/prefetch/f32/-5,-3", "nan/f32/neg-col"])
def test_a_case_off_the_16_byte_unit_is_outside_pycutes_promises(probe, name):
    """Run 2 faulted on each of these; the planner now refuses them, naming the rule."""
    planned, refused = probe.promise(name)
    assert planned is False and "off a 16-byte unit" in refused and "illegal-instruction" in refused


@pytest.mark.parametrize("name", ["nan/f32/neg-unit-col", "nan/f64/neg-unit-col", "nan/bf16/neg-unit"])
def test_a_nan_fill_at_a_negative_column_on_the_unit_is_within_pycutes_promises(probe, name):
    """Run 3 loaded these as the layouts say (NaN in the columns before the array)."""
    assert probe.promise(name) == (True, None)


@pytest.mark.parametrize("name", ["coord/load/f32/-64,-32", "coord/load/f32/0,2147483632", "coord/load/u8/-1000,16",
                                  "coord/store/f32/5,16", "coord/reduce/u32/3,4", "coord/prefetch/f32/-5,-8",
                                  "nan/f32/neg-row", "nan/bf16/neg-one-row"])
def test_a_case_on_the_16_byte_unit_is_within_pycutes_promises(probe, name):
    assert probe.promise(name) == (True, None)


def test_pycute_refuses_exactly_the_coordinate_cases_the_h200_faulted_on_in_run_2(probe):
    """93 loads, stores, reductions, prefetches and NaN-filling loads: every fault is refused by the planner's
    rules now, and every case that ran is planned."""
    assert len(RUN2) == 93
    assert [name for name, fault in RUN2 if probe.promise(name)[0] is fault] == []


def test_pycute_refuses_exactly_the_coordinate_cases_the_h200_faulted_on_in_run_3(probe):
    """125 cases, run 2's and the NaN fill at negative columns on the unit (which loaded as the layouts say)."""
    assert len(RUN3) == 125 and sum(fault for _, fault in RUN3) == 40
    assert [name for name, fault in RUN3 if probe.promise(name)[0] is fault] == []


def test_a_fault_outside_pycutes_promises_is_reported_as_refused(probe):
    row = {"case": "coord/load/f32/77,3", **FAULT, "planned": False}
    assert probe.verdict(row) == "FAULT rc=1 CUDA_ERROR_ILLEGAL_INSTRUCTION (outside pycute's promises: refused)"


def test_a_fault_within_pycutes_promises_is_reported_and_counted(probe):
    rows = [{"case": "coord/load/f32/-64,-32", **FAULT, "planned": True},
            {"case": "coord/load/f32/77,3", **FAULT, "planned": False},
            {"case": "coord/load/f32/0,0", "planned": True, "smem_vs_emulator": None}]
    assert probe.verdict(rows[0]) == "FAULT rc=1 CUDA_ERROR_ILLEGAL_INSTRUCTION (within pycute's promises)"
    assert probe.within_promises(rows) == ["coord/load/f32/-64,-32"]


def test_a_box_the_driver_encodes_but_no_cta_can_land_is_agreement(probe):
    """Run 2: the driver took a 228 KiB box; pycute refuses over a CTA's 227 KiB of shared memory."""
    row = {"case": "encode", "box 256x228 f32 (228 KiB)": {"driver": True, "planner": "the box is 233472 B",
                                                           "box_bytes": 233472},
           "box 256x64 f32 (64 KiB)": {"driver": True, "planner": True, "box_bytes": 65536},
           "every planned map": {"driver": True, "maps": 35}}
    assert probe.verdict(row) == "driver and planner agree (pycute alone refuses 1 box over a CTA's shared memory)"
    small = {**row, "box 256x64 f32 (64 KiB)": {"driver": True, "planner": "refused", "box_bytes": 65536}}
    assert probe.verdict(small) == "DISAGREE on ['box 256x64 f32 (64 KiB)']"


def test_a_checked_case_that_trapped_with_its_message_says_so(probe):
    row = {"case": "checked/split-k", "trapped": True, "error": "CUDA_ERROR_LAUNCH_FAILED",
           "message": ["pycute: rt_load: c = 65 breaks c % 64 == 0: ..."]}
    assert probe.verdict(row) == "trapped (CUDA_ERROR_LAUNCH_FAILED), message seen"


def test_every_differing_element_is_listed_with_the_input_it_loaded(probe):
    want = np.zeros(16, np.uint8)
    got = want.copy()
    got[4:8] = [0x00, 0xE0, 0xFF, 0x7F]
    d = probe.differences(got, want, 4, {4: "7fc00fff"})
    assert (d["count"], d["elements"], d["first"]) == (3, 1, 5)
    assert d["each"] == [{"at": 4, "got": "7fffe000", "want": "00000000", "input": "7fc00fff"}]


@pytest.mark.parametrize("name", ["coord/load/f32/-5,-8", "coord/load/bf16sw128/77,8", "coord/store/bf16sw128/77,8",
                                  "coord/reduce/u32/77,8", "nan/tf32/rows-inside-unit", "nan/f32/outside",
                                  "nan/bf16/neg-row"])
def test_a_device_that_copies_as_the_emulator_gets_the_verdict_equal(probe, name, monkeypatch):
    """The verdict path after the launch, with the launch replaced by the emulator: every comparison agrees."""
    def launch(rt, gpu, tile, seed=0, arch="sm_90a", checked=False):
        a, b = rt.arrays(seed)
        image, after = rt.emulate(tile, seed)
        return {"smem": image, "array": after, "a": a, "b": b, "spins": 0}

    monkeypatch.setattr(probe.TmaRoundTrip, "launch", launch)
    row = {"case": name, **probe.run_case(name, gpu=None)}
    assert row["planned"] and probe.verdict(row) == "equal", row
