"""Time CUTLASS's pure-Python pycute (from the nvidia-cutlass wheel) on the same inputs, in a subprocess.

Its module is also named ``pycute``, so it runs in a separate interpreter with only its extracted ``pycute/``
folder on the path. The wheel is fetched once with pip into pycute's cache folder; nothing of it is copied into
this repository. Returns None (with a reason) when it cannot be fetched.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from pycute.compile.cache import default_cache_dir

VERSION = "4.2.0.0"


def cutlass_pycute_times(timeout: float = 120.0):
    """``({case: us}, None)`` or ``(None, reason)``."""
    root = default_cache_dir() / f"cutlass-pycute-{VERSION}"
    ext = root / "ext"
    if not (ext / "pycute" / "layout.py").exists():
        try:
            root.mkdir(parents=True, exist_ok=True)
            r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(root),
                                f"nvidia-cutlass=={VERSION}"], capture_output=True, text=True, timeout=timeout)
            wheels = list(root.glob("nvidia_cutlass-*.whl"))
            if r.returncode or not wheels:
                return None, f"could not fetch nvidia-cutlass=={VERSION} ({(r.stderr or r.stdout).strip()[-200:]})"
            with zipfile.ZipFile(wheels[0]) as z:
                z.extractall(ext, [n for n in z.namelist() if n.startswith("pycute/")])
        except (OSError, subprocess.SubprocessError, zipfile.BadZipFile) as e:
            return None, f"could not fetch nvidia-cutlass=={VERSION} ({e})"
    script = Path(__file__).with_name("algebra_cases.py")
    env = dict(os.environ, PYTHONPATH=str(ext))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=timeout,
                       cwd=str(root))
    if r.returncode:
        return None, f"CUTLASS pycute timing failed: {r.stderr.strip()[-200:]}"
    return json.loads(r.stdout), None
