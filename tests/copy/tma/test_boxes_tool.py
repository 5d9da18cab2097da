"""The GPU run of issue 43's boxes (tools/tma_boxes.py) works the first time: on the CPU its kernels run whole
through the PTX interpreter in place of the GPU (``--dry``) and leave what the emulator says, the forced store
overwriting the bytes past each row as the emulator models it; the run covers every case of cases_legal.py."""
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from .cases_legal import LEGAL

ROOT = Path(__file__).resolve().parents[3]
TOOL = importlib.import_module("tools.tma_boxes")


def test_the_run_covers_every_case_once_and_the_forced_stores():
    names = TOOL.case_names()
    assert len(names) == len(set(names)) == len(LEGAL) + len(TOOL.OVERWRITE)
    assert {n.split("/")[0] for n in names} == set(TOOL.GROUPS) | {"overwrite"}


def test_a_case_runs_whole_on_the_cpu_and_leaves_the_emulators_image_and_array():
    verdict = TOOL.one("merged/u8-8B-rows", dry=True)
    assert verdict["ok"] and [t["stored"] for t in verdict["tiles"]] == [True, True]


def test_a_forced_store_over_the_partial_unit_overwrites_the_bytes_past_each_row_as_the_emulator_models():
    verdict = TOOL.one("overwrite/u32-min-box-over-the-partial-unit", dry=True)
    assert verdict["ok"] and verdict["rows_overwritten"] == verdict["emulator_rows_overwritten"] == 32
    assert "c = 16 breaks c <= 12" in verdict["refused"]


def test_the_command_writes_a_line_per_case_and_a_table(tmp_path):
    run = subprocess.run([sys.executable, "-m", "tools", "tma_boxes", "--dry", "--only", "nested/u8-nested-rows"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "OUT": str(tmp_path)})
    assert run.returncode == 0, run.stdout + run.stderr
    lines = (tmp_path / "tma_boxes.jsonl").read_text().splitlines()
    assert [json.loads(x)["case"] for x in lines] == ["nested/u8-nested-rows-8B-apart"]
    assert "nested/u8-nested-rows-8B-apart  yes  3 tiles equal (3 stored)" in run.stdout
