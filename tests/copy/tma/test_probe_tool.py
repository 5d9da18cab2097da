"""tools/tma_coords_h200.py works first time on the H200: on the CPU every case builds up to its launch (plans,
sm_90a kernels), and the probe's own reference model equals the emulator on every coordinate case pycute plans."""
import importlib.util
from pathlib import Path

TOOL = Path(__file__).resolve().parents[3] / "tools" / "tma_coords_h200.py"


def test_every_h200_case_builds_and_its_reference_model_equals_the_emulator(capsys):
    spec = importlib.util.spec_from_file_location("tma_coords_h200", TOOL)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    probe.check_on_cpu()
    assert "the reference model equals the emulator" in capsys.readouterr().out
    batches = probe._batches()
    assert sorted(sum(batches, [])) == sorted(probe.cases()) and all(len(b) == 1 for b in batches[1:])
