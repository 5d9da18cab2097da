"""tools/tma_coords_h200.py works first time on the H200: on the CPU every case builds up to its launch (plans,
sm_90a kernels), the probe's own reference model equals the emulator on every coordinate case pycute plans, and
each case runs in its own child process under its exact name (run 1 split names at their commas)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

TOOL = Path(__file__).resolve().parents[3] / "tools" / "tma_coords_h200.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("tma_coords_h200", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def test_a_fault_outside_pycutes_promises_is_reported_as_refused(probe):
    planned, refused = probe.promise("nan/f32/negative")
    assert planned is False and "NaN-filling map" in refused
    row = {"case": "nan/f32/negative", "fault": True, "rc": 1, "error": "CUDA_ERROR_ILLEGAL_INSTRUCTION",
           "planned": planned}
    assert probe.verdict(row) == "FAULT rc=1 CUDA_ERROR_ILLEGAL_INSTRUCTION (outside pycute's promises: refused)"
    assert probe.promise("coord/load/f32/-5,-3") == (True, None)
    assert probe.verdict({**row, "case": "coord/load/f32/-5,-3", "planned": True}) == \
        "FAULT rc=1 CUDA_ERROR_ILLEGAL_INSTRUCTION"


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


@pytest.mark.parametrize("name", ["coord/load/f32/-5,-3", "coord/load/bf16sw128/77,3", "coord/store/bf16sw128/77,8",
                                  "coord/reduce/u32/77,8", "nan/tf32/rows-inside-unit", "nan/f32/outside"])
def test_a_device_that_copies_as_the_emulator_gets_the_verdict_equal(probe, name, monkeypatch):
    """The verdict path after the launch, with the launch replaced by the emulator: every comparison agrees."""
    def launch(rt, gpu, tile, seed=0, arch="sm_90a", checked=False):
        a, b = rt.arrays(seed)
        image, after = rt.emulate(tile, seed)
        return {"smem": image, "array": after, "a": a, "b": b, "spins": 0}

    monkeypatch.setattr(probe.TmaRoundTrip, "launch", launch)
    row = {"case": name, **probe.run_case(name, gpu=None)}
    assert row["planned"] and probe.verdict(row) == "equal", row
