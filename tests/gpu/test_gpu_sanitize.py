"""The two kernels of issue 34's first compute-sanitizer run, under the tool that reported them (docs/sanitizer.md):
the cp.async round trip whose last vector read past its array (memcheck) and the bulk round trips whose dump
racecheck reported, each in its own process through tools/sanitizer.py. Needs a GPU of compute capability 9.0
or newer and compute-sanitizer; `python -m tools sanitizer` runs every kernel under every tool."""
import pytest

from pycute.compile import runtime
from tools import sanitizer as tool

INFO = runtime.device_info()
SANITIZER = tool.find_sanitizer()
REASON = ("needs a CUDA GPU of compute capability 9.0 or newer" if INFO is None or INFO[1][0] < 9 else
          "needs compute-sanitizer (CUDA toolkit) on PATH or under /usr/local" if SANITIZER is None else None)


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("name, tool_name", [
    ("cp-async/bf16-kmajor-128B", "memcheck"),          # the 16-B copy with src-size 8 at the array's end
    ("cp-async/bf16-1d-odd-residue", "memcheck"),        # a residue: 2 bytes past the last 4-byte word
    ("cp-async/u8-rows-45B-arrive-residue", "memcheck"),
    ("bulk/bf16-whole-tile-1-chunk", "racecheck"),       # the dump after the bulk load's mbarrier wait
    ("bulk/u8-kmajor-128B-swizzled", "racecheck"),
])
def test_the_kernel_is_clean_and_right_under_the_tool_that_reported_it(name, tool_name):
    case = next(c for c in tool.registry() if c.name == name)
    record = tool.run_one(case, tool_name, SANITIZER)
    assert not record["timed_out"] and record["ok"] is True, record
    assert (record["errors"], record["warnings"]) == (0, 0), record
