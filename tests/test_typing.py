"""The package type-checks: mypy at its default strictness over all of ``pycute`` (``[tool.mypy]`` in
pyproject.toml), and ``py.typed`` ships so that downstream checkers read the annotations."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is in the test extras: pip install '.[test]'")
def test_mypy_finds_no_errors():
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--config-file",
                          str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout


def test_py_typed_marker_ships_as_package_data():
    assert (ROOT / "pycute" / "py.typed").is_file()
    assert "py.typed" in (ROOT / "pyproject.toml").read_text()
