"""tools/gemm_op.py runs dry on the CPU: every configuration compiled with the launch layout the launcher reads,
and the op run whole through the interpreter against the float64 product."""
import json

import pytest

pytest.importorskip("torch")
from tools.__main__ import main  # noqa: E402


def test_the_gemm_op_dry_run_passes(tmp_path, capsys):
    out = tmp_path / "gemm_op.jsonl"
    assert main(["gemm_op", "--dry", str(out)]) == 0, capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum("config" in r for r in rows) == 10 and all(r["ok"] for r in rows)
