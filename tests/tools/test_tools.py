"""The GPU experiments' one entry point: every module of tools/ is a question in the convention (named by what it
answers, its docstring's first line the question, ``main(argv) -> int``, no ``sys.path`` edits) or one of the named
scripts; ``python -m tools`` lists them; tools/README.md's table is the modules'; the shared helpers behave."""
import json
import subprocess
import sys

import pytest

import tools
from tools import _common
from tools.__main__ import main

ROOT = tools.HERE.parent


@pytest.mark.parametrize("name", [n for n in tools.module_names() if n not in tools.SCRIPTS])
def test_every_module_is_a_question_in_the_convention(name):
    assert tools.convention_breaks(name) == []


def test_every_named_script_is_still_there():
    assert sorted(tools.SCRIPTS - set(tools.module_names())) == [], "a converted script leaves tools.SCRIPTS"


def test_no_shell_scripts_beside_the_questions():
    assert sorted(p.name for p in tools.HERE.iterdir() if p.suffix == ".sh") == []


def test_the_readme_lists_exactly_the_questions():
    text = (tools.HERE / "README.md").read_text()
    assert tools.readme(text) == text, "run `PYTHONPATH=. python -m tools --readme`"
    assert all(f"[`{q.name}`]({q.name}.py)" in text for q in tools.questions())


def test_the_listing_gives_each_question_and_its_module(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for q in tools.questions():
        assert f"{q.name}  (tools/{q.name}.py)\n    {q.question}" in out


def test_a_question_is_found_with_dashes_or_underscores():
    assert tools.find("interpreter-floats") == tools.find("interpreter_floats")
    assert tools.find("interpreter_floats").module == "tools/interpreter_floats.py"


def test_an_unknown_question_is_an_error_that_names_the_questions(capsys):
    assert main(["no-such-question"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no question 'no-such-question' in tools/ (there are: ") and "wgmma" in err


@pytest.mark.parametrize("source, name, broken", [
    ('"""Does it?"""\ndef main(argv: list[str]) -> int:\n    return 0\n', "fine_question", None),
    ('"""It does."""\ndef main(argv: list[str]) -> int:\n    return 0\n', "no_question", "is not a question"),
    ('"""Does it?"""\ndef main(path: str) -> int:\n    return 0\n', "wrong_main", "no main(argv"),
    ('"""Does it?"""\ndef main(argv=None) -> int:\n    return 0\n', "default_argv", "no main(argv"),
    ('"""Does it?"""\nimport sys\nsys.path.insert(0, ".")\ndef main(argv: list[str]) -> int:\n    return 0\n',
     "path_edit", "edits sys.path"),
    ('"""Does it?"""\ndef main(argv: list[str]) -> int:\n    return 0\n', "speed_h200", "named after a device"),
])
def test_each_break_of_the_convention_is_named(tmp_path, monkeypatch, source, name, broken):
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.setattr(tools, "HERE", tmp_path)
    found = tools.convention_breaks(name)
    assert found == [] if broken is None else any(broken in b for b in found), found


def test_out_path_is_out_then_here_and_an_argument_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    assert _common.out_path("q") == tmp_path / "out" / "q.jsonl" and (tmp_path / "out").is_dir()
    assert _common.out_path("q", tmp_path / "x.jsonl") == tmp_path / "x.jsonl"
    monkeypatch.delenv("OUT")
    assert str(_common.out_path("q")) == "q.jsonl"


def test_json_lines_are_written_as_they_come(tmp_path):
    path = tmp_path / "rows.jsonl"
    with _common.JsonLines(path) as out:
        out.write({"case": "a", "ok": True})
        assert json.loads(path.read_text()) == {"case": "a", "ok": True}
        out.extend([{"case": "b"}])
    assert [r["case"] for r in map(json.loads, path.read_text().splitlines())] == ["a", "b"] == \
        [r["case"] for r in out.rows]


def test_a_child_past_its_limit_is_killed_and_says_so():
    child = _common.run_child(["-c", "import time; print('{\"started\": 1}', flush=True); time.sleep(30)"], 2)
    assert child.rc is None and not child.ok and child.error().startswith("timed out after")


def test_a_failed_child_reports_its_status_and_output_and_a_good_one_its_last_json_line():
    bad = _common.run_child(["-c", "import sys; sys.exit('broken here')"], 30)
    assert bad.rc == 1 and bad.error() == "exit 1: broken here"
    good = _common.run_child(["-c", "print('{\"a\": 1}'); print('noise'); print('{\"a\": 2}')"], 30)
    assert good.ok and _common.last_json(good.stdout) == {"a": 2} and len(_common.json_rows(good.stdout)) == 2


def test_interleaved_rounds_time_each_kernel_in_turn():
    order: list[str] = []
    times = _common.interleaved(2, {"a": lambda: order.append("a") or 1.0, "b": lambda: order.append("b") or 2.0})
    assert order == ["a", "b", "a", "b"] and times == {"a": [1.0, 1.0], "b": [2.0, 2.0]}
    assert _common.rates([2.0, 1.0, 4.0], 10**9) == {"ms_rounds": [2.0, 1.0, 4.0], "TBps_best": 1.0,
                                                    "TBps_median": 0.5}


def test_ncu_csv_rows_become_kernel_metric_values():
    text = ('==PROF== noise\n"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
            '"0","bank_st(int)","l1tex__x.sum","","1,024"\n"1","bank_st(int)","l1tex__y.sum","","n/a"\n')
    assert _common.parse_ncu(text) == {"bank_st": {"l1tex__x.sum": 1024.0}}


def test_python_m_tools_runs_a_question_in_its_own_process():
    run = subprocess.run([sys.executable, "-m", "tools", "interpreter_floats", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert run.returncode == 0 and "Where do the CPU interpreter's floating-point" in run.stdout


@pytest.mark.parametrize("question", ["interpreter_floats", "wgmma"])
def test_the_dry_runs_pass_on_the_cpu(question, capsys):
    assert main([question, "--dry"]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("question, args", [("epilogue", ["--only", "convert,bank", "--bank-every", "16"]),
                                            ("flat_copies", ["--only", "u8"]),
                                            ("pipelines", ["--only", "minimal"]),
                                            ("feed_gap", ["--waits", "--jobs", "2"]),
                                            ("tma_every_box", ["--only", "torch/"]),
                                            ("fragments_roundtrip", ["--only", "coords,reduce"]),
                                            ("gemm_shapes", ["--part", "fp8"]),
                                            ("smem_wavefronts", ["--only", "bank"]),
                                            ("fp8_accumulation", ["--only", "acc_f8e5m2_f8e4m3_f32_k32"]),
                                            ("checked_message", [])])
def test_each_questions_dry_run_builds_what_it_launches(question, args, capsys):
    assert main([question, "--dry", *args]) == 0, capsys.readouterr().out
