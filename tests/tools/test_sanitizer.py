"""tools/sanitizer.py, without a GPU: its registry covers every kernel the harnesses, the kernels and the examples
launch, every case runs on the host up to the launch (checked for a few here; ``--dry`` runs them all), the runs' reports are
read into errors and warnings, and the runner keeps each run in its own process with a time limit, one JSON line
each, and a table."""
import importlib
import inspect
import json
import pathlib
import pkgutil
import sys

import pytest

import pycute as pc
import pycute.harness

import pycute.kernels
from tools import sanitizer as tool

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = tool.registry()


def _launching_classes(package_name: str, modules) -> set[str]:
    out = set()
    for name in modules:
        module = importlib.import_module(f"{package_name}.{name}")
        out |= {f"{module.__name__}.{n}" for n, cls in inspect.getmembers(module, inspect.isclass)
                if cls.__module__ == module.__name__ and callable(getattr(cls, "run", None))}
    return out


def test_every_kernel_the_harnesses_kernels_and_examples_launch_has_a_case():
    harnesses = _launching_classes("pycute.harness", [m.name for m in pkgutil.iter_modules(pycute.harness.__path__)])
    kernels = _launching_classes("pycute.kernels", [f"{m.name}.config" for m in
                                                    pkgutil.iter_modules(pycute.kernels.__path__) if m.ispkg])
    examples = _launching_classes("examples", [p.stem for p in (ROOT / "examples").glob("*.py") if p.stem != "__init__"])
    missing = (harnesses | kernels | examples) - {c.kernel for c in CASES}
    assert not missing, f"append rows to tools/sanitizer.py's registry() for {sorted(missing)}"


def test_case_names_are_unique_and_name_their_family():
    names = [c.name for c in CASES]
    assert len(set(names)) == len(names)
    assert {n.split("/")[0] for n in names} == {"cp-async", "bulk", "dsmem", "tma", "tcgen05-cp-soft",
                                                 "tcgen05-ldst-soft", "mma-soft", "chain-soft", "stream", "example",
                                                 "wgmma", "epilogue", "fragments"}


def test_the_two_findings_of_issue_34_are_cases():
    names = {c.name for c in CASES}
    assert {"cp-async/bf16-kmajor-128B", "bulk/bf16-whole-tile-1-chunk"} <= names


@pytest.mark.parametrize("name, entries", [
    ("cp-async/u8-rows-45B-arrive-residue", [("cp_async_roundtrip", 5)] * 3),
    ("bulk/u16-padded-rows", [("bulk_roundtrip", 6)] * 2),
    ("tma/f32-2d-plain/grid-constant", [("tma_roundtrip", 6)] * 3),
    ("stream/dsmem-ring-x2", [("dsmem_ring", 3)] * 2),
])
def test_a_case_runs_on_the_host_up_to_its_launches(name, entries):
    assert tool.dry_run(next(c for c in CASES if c.name == name)) == entries


def test_the_host_only_gpu_counts_a_launchs_arguments():
    case = next(c for c in CASES if c.name == "bulk/f32-1d")
    gpu = tool.host_only_gpu()
    kernel = gpu.kernel(case.build(tool.BUILD_ARCH), "bulk_roundtrip")
    with pytest.raises(pc.CompileError, match="launch of bulk_roundtrip: 2 arguments for 5 parameters"):
        gpu.launch(kernel, 1, 2)                   # a, b, dump, status and one tile index (a 1-D array)
    with pytest.raises(pc.CompileError, match="the module has no kernel 'bulk_round_trip'"):
        gpu.kernel(case.build(tool.BUILD_ARCH), "bulk_round_trip")


MEMCHECK = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 16 bytes
=========     at cp_async_roundtrip+0x1b0
=========     by thread (92,0,0) in block (0,0,0)
=========     Address 0x7f3a2c00f3b8 is out of bounds
=========
{"sanitize_case": "cp-async/bf16-kmajor-128B", "ok": true}
========= ERROR SUMMARY: 1 error
"""
RACECHECK = """========= COMPUTE-SANITIZER
========= Warning: Race reported between Write access at bulk_roundtrip+0x3f0
=========     and Read access at bulk_roundtrip+0x5a0 [124 hazards]
=========
========= RACECHECK SUMMARY: 21 hazards displayed (0 errors, 21 warnings)
"""


@pytest.mark.parametrize("text, errors, warnings, summary, first", [
    (MEMCHECK, 1, 0, "========= ERROR SUMMARY: 1 error", "========= Invalid __global__ read of size 16 bytes"),
    (RACECHECK, 0, 21, "========= RACECHECK SUMMARY: 21 hazards displayed (0 errors, 21 warnings)",
     "========= Warning: Race reported between Write access at bulk_roundtrip+0x3f0"),
    ("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", 0, 0, "========= ERROR SUMMARY: 0 errors",
     None),
    ("Traceback (most recent call last):\n", None, None, None, None),
])
def test_a_report_is_read_into_its_counts_summary_and_findings(text, errors, warnings, summary, first):
    r = tool.parse_report(text)
    assert (r["errors"], r["warnings"], r["summary"]) == (errors, warnings, summary)
    assert (r["findings"][0] if r["findings"] else None) == first


def test_the_case_verdict_is_its_last_json_line():
    assert tool.verdict(MEMCHECK) is True
    assert tool.verdict("no verdict\n") is None


def test_a_case_runs_under_the_tool_and_follows_children_only_when_it_has_them():
    case = CASES[0]
    plain = tool.command(case, tool.PLAIN, "cs")
    assert plain[-2:] == ["--case", case.name] and "cs" not in plain
    assert tool.command(case, "racecheck", "cs")[:3] == ["cs", "--tool", "racecheck"]
    spawning = tool.SanitizeCase("x", "k", lambda a: None, lambda g, a: True, children=True)
    assert tool.command(spawning, "memcheck", "cs")[3:5] == ["--target-processes", "all"]


def test_a_cases_tool_options_go_to_that_tool_only():
    case = tool.SanitizeCase("x", "k", lambda a: None, lambda g, a: True,
                             tool_options={"synccheck": ("--num-cuda-barriers", "64")})
    assert tool.command(case, "synccheck", "cs")[3:5] == ["--num-cuda-barriers", "64"]
    assert "--num-cuda-barriers" not in tool.command(case, "racecheck", "cs")
    assert [c.name for c in CASES if c.tool_options] == ["tcgen05-cp-soft/demo-g2",
                                                         "tcgen05-cp-soft/128x256b-g2-128B-bf16"]


FAKE = """import sys, time
tool, name = sys.argv[2], sys.argv[-1]
if name == "hangs":
    time.sleep(60)
print("========= COMPUTE-SANITIZER")
print('{"sanitize_case": "%s", "ok": %s}' % (name, "false" if name == "wrong" else "true"))
print("========= RACECHECK SUMMARY: 2 hazards displayed (0 errors, 2 warnings)" if tool == "racecheck" and name == "racy"
      else "========= ERROR SUMMARY: 0 errors")
"""


def test_every_run_is_its_own_process_with_a_time_limit_and_one_json_line(tmp_path):
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(f"#!{sys.executable}\n" + FAKE)
    fake.chmod(0o755)
    cases = [tool.SanitizeCase(n, "k", lambda a: None, lambda g, a: True, timeout=3.0)
             for n in ("clean", "racy", "wrong", "hangs")]
    out = tmp_path / "runs.jsonl"
    records = tool.run_all(cases, ["memcheck", "racecheck"], str(fake), out, jobs=4)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines == records and len(lines) == 8
    cells = {(r["case"], r["tool"]): tool.cell(r) for r in records}
    assert cells == {("clean", "memcheck"): "clean", ("clean", "racecheck"): "clean",
                     ("racy", "memcheck"): "clean", ("racy", "racecheck"): "2 warn",
                     ("wrong", "memcheck"): "clean WRONG", ("wrong", "racecheck"): "clean WRONG",
                     ("hangs", "memcheck"): "T/O", ("hangs", "racecheck"): "T/O"}
    assert all(r["command"].startswith(f"{fake} --tool ") for r in records)
    table = tool.table(records, ["memcheck", "racecheck"])
    assert table.splitlines()[-1] == "4 cases, 8 runs: 5 not clean"
