"""The package type-checks: mypy at its default strictness over all of ``pycute`` (``[tool.mypy]`` in
pyproject.toml), and ``py.typed`` ships so that downstream checkers read the annotations."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is in the test extras: pip install '.[test]'")
def test_mypy_finds_no_errors():
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--config-file",
                          str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout


def test_py_typed_marker_ships_as_package_data():
    assert (ROOT / "pycute" / "py.typed").is_file()
    assert "py.typed" in (ROOT / "pyproject.toml").read_text()


def public_callables():
    import inspect

    import pycute as pc
    for name in pc.__all__:
        obj = getattr(pc, name)
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj):
            for attr, fn in vars(obj).items():
                if inspect.isfunction(fn) and fn.__module__.startswith("pycute") and \
                        (not attr.startswith("_") or attr in ("__init__", "__call__")):
                    yield f"{name}.{attr}", fn


def test_every_public_parameter_is_annotated():
    import inspect
    bare = [f"{name}({p.name})" for name, fn in public_callables()
            for p in inspect.signature(fn).parameters.values()
            if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
    assert bare == []
