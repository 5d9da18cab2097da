"""The GEMM questions run dry on the CPU: gemm_op (every configuration compiled with the launch layout the launcher
reads, the op run whole through the interpreter against the float64 product), gemm_load_warp (both forms of the load
warp compiled) and blockscaled_gemm_soft (a small case run whole)."""
import json

import pytest

pytest.importorskip("torch")
from tools.__main__ import main  # noqa: E402


def test_the_gemm_op_dry_run_passes(tmp_path, capsys):
    out = tmp_path / "gemm_op.jsonl"
    assert main(["gemm_op", "--dry", str(out)]) == 0, capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum("config" in r for r in rows) == 10 and all(r["ok"] for r in rows)


@pytest.mark.parametrize("question", ["gemm_load_warp", "blockscaled_gemm_soft"])
def test_the_converted_gemm_questions_run_dry(question, capsys):
    assert main([question, "--dry"]) == 0, capsys.readouterr().out
