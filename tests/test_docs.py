"""The API reference builds: ``mkdocs build --strict`` (warnings are errors) renders docs/ and every name of
``pycute.__all__`` from its docstring. MkDocs and mkdocstrings are in the test extras."""
import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

import pycute as pc

ROOT = pathlib.Path(__file__).resolve().parents[1]
needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None,
    reason="mkdocs and mkdocstrings[python] are in the test extras: pip install '.[test]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


@needs_mkdocs
def test_the_reference_builds_with_warnings_as_errors(site):
    assert (site / "api" / "index.html").is_file() and (site / "index.html").is_file()


@needs_mkdocs
def test_every_exported_name_is_in_the_reference(site):
    html = (site / "api" / "index.html").read_text()
    ids = set(re.findall(r'id="pycute\.([A-Za-z_0-9.]+)"', html))
    code = set(re.findall(r"<code>([A-Za-z_0-9]+)</code>", html))
    documented = ids | {i.rsplit(".", 1)[-1] for i in ids} | code
    assert [n for n in pc.__all__ if n not in documented] == []


@needs_mkdocs
def test_the_notes_are_pages_of_the_site(site):
    for note in ("ptx-tcgen05", "tcgen05-ld-st", "tcgen05-mma-operands", "tcgen05-cp-decompression",
                 "toolchain-cpu-only"):
        assert (site / note / "index.html").is_file(), note
