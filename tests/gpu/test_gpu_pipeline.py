"""Pipelines and schedulers on the GPU: every streaming harness on its pipeline (TMA copy and cp.async copy bit for
bit, the load-only stream by its position checksum, the DSMEM ring of 2 and 4 CTAs), the static tile scheduler's
generated code against its Python model for every CTA, and the GEMM feed's verification checksum for each consumer
shape with and without A multicast. Each case runs in a child process (``python -m tools pipelines --one``) with a
time limit: a wrong protocol hangs, and a hang fails its case, not the suite. The feed *rate* is measured by
``python -m tools pipelines``, ``python -m perf.report --gpu`` and perf/test_bench_gpu_stream.py."""
import json
import pathlib
import subprocess
import sys

import pytest

from pycute.compile import runtime
from tools import pipelines

INFO = runtime.device_info()
REASON = None if INFO is not None and INFO[1][0] >= 9 else "pipelines need a CUDA GPU of compute capability 9.0+"
ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.skipif(REASON is not None, reason=REASON or ""), pytest.mark.gpu]


@pytest.mark.parametrize("case", pipelines.CHECKS)
def test_the_case_runs_to_the_end_and_every_result_is_exact(case):
    try:
        run = subprocess.run([sys.executable, "-m", "tools", "pipelines", "--one", case],
                             capture_output=True, text=True, cwd=ROOT, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: no result within 240 s (a hang)")
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert rows and all(r["ok"] for r in rows), rows
