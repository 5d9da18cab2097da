"""CUTLASS's pure-Python pycute (from the nvidia-cutlass wheel), timed beside pycute in the same process.

Its package is also named ``pycute``, so it is loaded from its extracted folder under the name ``cutlass_pycute``
(its modules import one another relatively). The wheel is fetched once with pip into pycute's cache folder; nothing
of it is copied into this repository.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile

from pycute.compile.cache import default_cache_dir

VERSION = "4.2.0.0"
NAME = "cutlass_pycute"


def load_cutlass_pycute(timeout: float = 120.0):
    """``(module, None)`` or ``(None, reason)``."""
    if NAME in sys.modules:
        return sys.modules[NAME], None
    root = default_cache_dir() / f"cutlass-pycute-{VERSION}"
    folder = root / "ext" / "pycute"
    if not (folder / "layout.py").exists():
        try:
            root.mkdir(parents=True, exist_ok=True)
            r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(root),
                                f"nvidia-cutlass=={VERSION}"], capture_output=True, text=True, timeout=timeout)
            wheels = list(root.glob("nvidia_cutlass-*.whl"))
            if r.returncode or not wheels:
                return None, f"could not fetch nvidia-cutlass=={VERSION} ({(r.stderr or r.stdout).strip()[-200:]})"
            with zipfile.ZipFile(wheels[0]) as z:
                z.extractall(root / "ext", [n for n in z.namelist() if n.startswith("pycute/")])
        except (OSError, subprocess.SubprocessError, zipfile.BadZipFile) as e:
            return None, f"could not fetch nvidia-cutlass=={VERSION} ({e})"
    spec = importlib.util.spec_from_file_location(NAME, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    spec.loader.exec_module(module)
    return module, None
