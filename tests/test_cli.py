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
    assert rc == 2 and "the copy description lacks 'dtype'" in capsys.readouterr().err


def test_help_describes_the_spec_format():
    with pytest.raises(SystemExit):
        main(["explain", "--help"], out=io.StringIO())
