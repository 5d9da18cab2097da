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


def test_the_generated_functions_signatures_are_the_ones_it_states():
    """"The generated function" names both overloads plan.cuda emits: the 32-bit shared address and C ABI 1's
    generic pointer."""
    import pycute as pc
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### The generated function"):text.index("## Composing into a kernel")]
    stated = re.findall(r"`((?:__device__ __forceinline__ void )?name\([^`]*\))`", section)
    src = pc.make_smem_tensor(pc.u8, pc.Layout((32, 16), (16, 1)))
    dst = pc.make_tmem_tensor(pc.u8, pc.Layout((32, 16), (pc.TLane, pc.TCol)), replica=pc.Layout(4, 32 * pc.TLane),
                              columns=32)
    code = pc.make_tiled_copy(dst, src).cuda("name")
    assert len(stated) == 2 and "const void* smem_buffer" in stated[1]
    assert [s for s in stated if s.replace(", ...)", ")") not in code] == []
