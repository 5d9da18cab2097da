"""TVM's ``tcgen05.cp`` planner, timed on the same copy in the same report run as pycute's.

apache-tvm (whose TIRx CUDA backend holds the planner pycute's design comes from) is about 100 MB and no
dependency of pycute: it is installed once into a virtual environment of its own under pycute's cache folder, or
``PYCUTE_TVM_PYTHON`` names an interpreter that has it, and ``perf/tvm_demo_plan.py`` runs there. Nothing of TVM
is copied into this repository.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

from pycute.compile.cache import default_cache_dir

VERSION = "0.27.0.post1"
ROOT = pathlib.Path(__file__).resolve().parent.parent


def tvm_python(timeout: float = 600.0) -> tuple[str | None, str | None]:
    """``(interpreter, None)`` for a Python that imports apache-tvm, or ``(None, reason)``."""
    named = os.environ.get("PYCUTE_TVM_PYTHON")
    if named:
        return named, None
    venv = default_cache_dir() / f"tvm-{VERSION}"
    python = venv / "bin" / "python"
    done = venv / "installed"
    if not done.exists():
        try:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True,
                           timeout=timeout)
            r = subprocess.run([str(python), "-m", "pip", "install", "-q", f"apache-tvm=={VERSION}"],
                               capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.SubprocessError) as e:
            return None, f"could not make a virtual environment with apache-tvm=={VERSION} ({e})"
        if r.returncode:
            return None, f"could not install apache-tvm=={VERSION} ({(r.stderr or r.stdout).strip()[-200:]})"
        done.write_text(VERSION)
    return str(python), None


def time_tvm_demo_plan(timeout: float = 600.0) -> tuple[dict | None, str | None]:
    """TVM's median ``_build_plan`` time on the demo copy and the plan it made (``perf.tvm_demo_plan``), or
    ``(None, reason)``."""
    python, why = tvm_python(timeout)
    if python is None:
        return None, why
    try:
        r = subprocess.run([python, "-m", "perf.tvm_demo_plan"], cwd=ROOT, capture_output=True, text=True,
                           timeout=timeout)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"could not run TVM's planner ({e})"
    if r.returncode:
        return None, f"TVM's planner did not run ({r.stderr.strip()[-300:]})"
    return json.loads(r.stdout), None
