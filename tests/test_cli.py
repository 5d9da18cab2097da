import io
import json
import subprocess
import sys

import pytest

from pycute.cli import main

DEMO_FLAGS = ["--src-dtype", "u8", "--src", "(32,16):(16,1)", "--dst", "(32,16):(1@TLane,1@TCol)",
              "--replica", "4:32@TLane", "--columns", "32"]


def run(*argv):
    out = io.StringIO()
    rc = main(list(argv), out=out)
    return rc, out.getvalue()


def test_demo_runs_as_a_user_runs_it():
    r = subprocess.run([sys.executable, "-m", "pycute", "demo"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "tcgen05.cp.cta_group::1.32x128b.warpx4" in r.stdout
    table = r.stdout.split("PTX stream")[1].split("Checks:")[0]
    assert table.count(" ok ") + table.count(" ok\n") >= 28 and "FAILED" not in table and "MISMATCH" not in table
    assert "__device__ __forceinline__ void copy_scale_factors(" in r.stdout


def test_explain_from_flags():
    rc, text = run("explain", *DEMO_FLAGS)
    assert rc == 0 and "32x128b.warpx4" in text and "SBO 128 B" in text


def test_emit_prints_cuda_ptx_and_sass():
    rc, text = run("emit", *DEMO_FLAGS, "--name", "copy_sf", "--ptx", "--sass")
    assert rc == 0
    assert "void copy_sf(const void* smem_buffer, unsigned tmem_base)" in text
    assert "tcgen05.cp.cta_group::1.32x128b.warpx4 [%r" in text          # the PTX
    assert "UTCCP.T.S.4x32dp128bit" in text                               # the SASS


def test_spec_files(tmp_path):
    spec = {"src": {"dtype": "bf16", "layout": "Sw<3,3,3> o (128,64):(64,1)", "region": "0:128,0:32"},
            "dst": {"layout": "(128,32):(1@TLane,1@TCol)", "columns": 32}, "cta_group": 2}
    (tmp_path / "copy.json").write_text(json.dumps(spec))
    rc, text = run("explain", str(tmp_path / "copy.json"))
    assert rc == 0 and "tcgen05.cp.cta_group::2.128x256b" in text and "2 instructions" in text
    (tmp_path / "copy.toml").write_text('cta_group = 1\n[src]\ndtype = "u8"\nlayout = "(32,16):(16,1)"\n'
                                        '[dst]\nlayout = "(32,16):(1@TLane,1@TCol)"\nreplica = "4:32@TLane"\n'
                                        'columns = 32\n')
    if sys.version_info >= (3, 11):
        rc, text = run("explain", str(tmp_path / "copy.toml"))
        assert rc == 0 and "32x128b.warpx4" in text


def test_errors_are_one_line_and_exit_2(capsys):
    rc, _ = run("explain", *DEMO_FLAGS[:-2], "--columns", "48")
    assert rc == 2 and "allocation of 48 columns is illegal" in capsys.readouterr().err
    rc, _ = run("explain", "--src", "(32,16):(16,1)")
    assert rc == 2 and "the copy description lacks src.dtype" in capsys.readouterr().err


GOOD = {"src": {"dtype": "u8", "layout": "(32,16):(16,1)"},
        "dst": {"layout": "(32,16):(1@TLane,1@TCol)", "replica": "4:32@TLane", "columns": 32}}


def with_field(part, key, value):
    spec = json.loads(json.dumps(GOOD))
    (spec[part] if part else spec)[key] = value
    return json.dumps(spec)


# (file contents or None for no file, extra arguments, a fragment of the one error line)
MALFORMED = {
    "missing file": (None, ["missing.json"], "cannot read the copy description"),
    "a directory": (None, ["."], "cannot read the copy description"),
    "empty file": ("", [], "not valid JSON"),
    "invalid JSON": ("{src:", [], "not valid JSON"),
    "a JSON list": ("[1, 2]", [], "must be an object"),
    "JSON null": ("null", [], "must be an object"),
    "not UTF-8": (b"\xff\xfe{}", [], "not UTF-8"),
    "nested JSON": ("[" * 100000 + "]" * 100000, [], "nested too deeply"),
    "float columns": (with_field("dst", "columns", 32.7), [], "'columns' must be an integer"),
    "integral float columns": (with_field("dst", "columns", 32.0), [], "'columns' must be an integer"),
    "float cta_group": (with_field(None, "cta_group", 1.9), [], "'cta_group' must be an integer"),
    "bool cta_group": (with_field(None, "cta_group", True), [], "'cta_group' must be an integer"),
    "cta_group 3": (with_field(None, "cta_group", 3), [], "cta_group must be 1 or 2"),
    "layout as a number": (with_field("src", "layout", 5), [], "'layout' must be a string"),
    "src as a string": (with_field(None, "src", "u8"), [], "'src' must be an object"),
    "unknown field": (with_field("dst", "colums", 32), [], "unknown field 'colums'"),
    "unknown dtype": (with_field("src", "dtype", "u7"), [], "unknown dtype 'u7'"),
    "layout text trailing": (with_field("src", "layout", "(32,16) (16,1)"), [], "unexpected text after"),
    "layout unbalanced": (with_field("src", "layout", "4,8)"), [], "unexpected text after"),
    "layout nested 500": (with_field("src", "layout", "(" * 500 + "2" + ")" * 500), [], "nested deeper"),
    "basis in a shape": (with_field("src", "layout", "(1@TLane,16):(16,1)"), [], "shape entry must be an integer"),
    "region a:b": (with_field("src", "region", "a:b"), [], "is not an index or a slice"),
    "region with a step": (with_field("src", "region", "0:32:2"), [], "is not an index or a slice"),
    "region out of range": (with_field("src", "region", "0:64"), [], "outside its extent 32"),
    "bad function name": (json.dumps(GOOD), ["--name", "int"], "is not a C identifier"),
    "bad arch": (json.dumps(GOOD), ["--arch", "sm_42"], "unsupported arch"),
    "bad TOML": ("x = [", ["--toml"], "not valid TOML"),
    "unknown option": (json.dumps(GOOD), ["--colour"], "unrecognized arguments"),
    "non-int flag": (json.dumps(GOOD), ["--columns", "x"], "invalid int value"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_call_prints_one_error_line_and_exits_2(case, tmp_path, capsys, monkeypatch):
    content, extra, fragment = MALFORMED[case]
    monkeypatch.chdir(tmp_path)
    argv = ["emit"]
    if content is not None:
        name = "copy.toml" if "--toml" in extra else "copy.json"
        (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
        argv.append(name)
    argv += [a for a in extra if a != "--toml"]
    try:
        rc = main(argv, out=io.StringIO())
    except SystemExit as e:              # argparse's own usage errors
        rc = e.code
    err = capsys.readouterr().err
    if case == "bad TOML" and sys.version_info < (3, 11):
        fragment = "need Python 3.11"
    assert rc == 2 and fragment in err and err.startswith("error: ") and "Traceback" not in err


def test_a_malformed_call_shows_no_traceback_to_a_user(tmp_path):
    (tmp_path / "copy.json").write_text("[1, 2]")
    r = subprocess.run([sys.executable, "-m", "pycute", "explain", str(tmp_path / "copy.json")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr


def test_help_describes_the_spec_format():
    with pytest.raises(SystemExit):
        main(["explain", "--help"], out=io.StringIO())


def test_show_prints_cutes_grid():
    rc, text = run("show", "(2,3):(1,2)")
    assert rc == 0 and text.splitlines()[:4] == ["(2,3):(1,2)", "      0   1   2 ", "    +---+---+---+",
                                                   " 0  | 0 | 2 | 4 |"]


def test_show_explain_and_demo_write_pictures(tmp_path):
    rc, text = run("show", "Sw<3,3,3> o (8,64):(64,1)", "--svg", str(tmp_path / "sw.svg"))
    assert rc == 0 and (tmp_path / "sw.svg").read_text().startswith("<svg")
    rc, text = run("explain", *DEMO_FLAGS, "--svg", str(tmp_path / "plan.svg"))
    assert rc == 0 and "data-instr" in (tmp_path / "plan.svg").read_text()
    rc, text = run("demo", "--quick", "--svg", str(tmp_path / "demo"))
    assert rc == 0 and len(list((tmp_path / "demo").glob("*.svg"))) == 14


def test_a_picture_that_cannot_be_written_is_an_error_line(tmp_path, capsys):
    rc, _ = run("show", "(4,8):(1,4)", "--svg", str(tmp_path / "missing" / "x.svg"))
    assert rc == 2 and capsys.readouterr().err.startswith("error: cannot write")


def test_a_json_file_with_a_byte_order_mark_is_read(tmp_path, capsys):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    assert main(["explain", str(path)]) == 0
    assert "32x128b.warpx4" in capsys.readouterr().out
