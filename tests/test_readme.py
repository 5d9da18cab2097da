"""The README runs as written: its Python snippets, executed in order in one namespace (each section continues the
names the first one defines), raise nothing."""
import contextlib
import io
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_its_snippets():
    assert len(BLOCKS) >= 8


def test_every_snippet_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                    # a snippet saves a picture
    namespace: dict = {}
    for k, block in enumerate(BLOCKS):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(block, f"README.md python block {k}", "exec"), namespace)
            except Exception as e:                 # noqa: BLE001  the snippet and the error are the report
                pytest.fail(f"README python block {k} raises {type(e).__name__}: {e}\n{block}")
