"""Does a checked build's precondition message reach the host when a warp-level function traps?

examples/grouped_tma.py compiled with ``checked=True`` and one work item whose group has 0 rows: warp 0 calls the
retarget function, whose every lane finds ``rows < 1``. The generated code takes a warp vote, lets the lowest lane
print, meets the warp (``__syncwarp``) and only then traps. The run before that change -- one elected lane prints
while its siblings trap at once -- is rebuilt from the same source for comparison. Each launch runs in a child
process (a trap ends the CUDA context); the message must be in its output. One JSON line per launch, a table last.

    PYTHONPATH=. python -m tools checked_message            # on the GPU: $OUT/checked_message.jsonl
    PYTHONPATH=. python -m tools checked_message --dry      # the CPU: both builds through run_kernel
"""
from __future__ import annotations

import argparse

from tools._common import JsonLines, out_path, run_question

QUESTION = "checked_message"
MESSAGE = "pycute: retarget_a: rows = 0 breaks rows >= 1"
LAUNCHES = 5
#: The checks as the generator wrote them before the vote: the elected lane prints, every lane traps at once.
_OLD = ("    if (lane_ == __ffs(bad_) - 1u) printf(", "    __syncwarp();\n    __trap();")


def source(variant: str) -> str:
    """The checked kernel's source: ``vote`` (as generated) or ``elected`` (the earlier form)."""
    from examples.grouped_tma import GroupedTma
    src = GroupedTma().source()
    if variant == "elected":
        src = src.replace(_OLD[0], "    if (pycute_elect_one_sync()) printf(").replace(_OLD[1], "    __trap();")
    return src


def child(variant: str) -> None:
    """One launch on the GPU (its output is the parent's evidence)."""
    import numpy as np
    from examples.grouped_tma import SMEM, TILE_BYTES, GroupedTma, Work
    from pycute.compile import compile_cuda, runtime
    from pycute.compile.runtime import tensor_map_bytes
    ex = GroupedTma()
    gpu = runtime.Gpu()
    kernel = gpu.kernel(compile_cuda(source(variant), arch="sm_90a", checked=True), "grouped")
    a, c = ex.arrays(0)
    d_a, d_c = gpu.upload(a), gpu.upload(c)
    maps = [gpu.upload(np.frombuffer(tensor_map_bytes(p.tensor_map.encode(int(d.handle))), np.uint8))
            for p, d in ((ex.load, d_a), (ex.store, d_c))]
    w = Work(0, 0, 0, 0)
    items = gpu.upload(np.array([w.row0, w.rows, w.i, w.j], np.int32))
    dumps = [gpu.upload(np.zeros(TILE_BYTES, np.uint8)) for _ in range(2)]
    gpu.launch(kernel, *maps, gpu.upload(np.zeros(256, np.uint8)), d_a, d_c, items, *dumps, grid=1, block=128,
               dynamic_smem=SMEM + 1024)


def dry() -> list[dict]:
    """Both builds through run_kernel: the error must carry the message."""
    import numpy as np
    from examples.grouped_tma import SMEM, TILE_BYTES, GroupedTma
    from pycute.compile import compile_cuda
    from pycute.errors import EmulationError
    from pycute.interp import run_kernel, tensor_map
    ex = GroupedTma()
    rows = []
    for variant in ("vote", "elected"):
        a, c = ex.arrays(0)
        try:
            run_kernel(compile_cuda(source(variant), arch="sm_90a", checked=True), "grouped", grid=1, block=128,
                       smem=SMEM + 1024, args=[tensor_map(ex.load, a), tensor_map(ex.store, c),
                                               np.zeros(256, np.uint8), a, c, np.array([0, 0, 0, 0], np.int32),
                                               np.zeros(TILE_BYTES, np.uint8), np.zeros(TILE_BYTES, np.uint8)])
            rows.append({"variant": variant, "device": "CPU", "trapped": False, "message": False})
        except EmulationError as e:
            rows.append({"variant": variant, "device": "CPU", "trapped": "traps" in str(e), "message": MESSAGE in str(e)})
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m tools {QUESTION}", description=__doc__.splitlines()[0])
    ap.add_argument("--dry", action="store_true", help="both builds through run_kernel on the CPU")
    ap.add_argument("--out", help=f"the JSON lines file (default $OUT/{QUESTION}.jsonl)")
    ap.add_argument("--child", choices=("vote", "elected"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    if args.dry:
        rows = dry()
    else:
        rows = []
        for variant in ("vote", "elected"):
            for k in range(LAUNCHES):
                run = run_question(QUESTION, ["--child", variant], timeout=300)
                out = run.stdout + run.stderr
                rows.append({"variant": variant, "launch": k, "returncode": run.rc, "trapped": run.rc != 0,
                             "message": MESSAGE in out, "tail": out[-600:]})
    if not args.dry or args.out:
        with JsonLines(out_path(QUESTION, args.out)) as lines:
            lines.extend(rows)
    for variant in ("vote", "elected"):
        mine = [r for r in rows if r["variant"] == variant]
        print(f"{variant:8} launches {len(mine)}  trapped {sum(r['trapped'] for r in mine)}  "
              f"message out {sum(r['message'] for r in mine)}")
    return 0
