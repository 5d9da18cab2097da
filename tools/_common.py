"""What the questions share: where their JSON lines go, running a case in a child process (a fault or a hang loses
that case, never the run), interleaved timing rounds, and ncu's metrics."""
from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Iterable

import attrs

ROOT = pathlib.Path(__file__).resolve().parents[1]


def out_path(question: str, given: str | os.PathLike | None = None) -> pathlib.Path:
    """``given``, else ``$OUT/<question>.jsonl``, else ``./<question>.jsonl``; its folder is made."""
    path = pathlib.Path(given) if given else pathlib.Path(os.environ.get("OUT") or ".") / f"{question}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


class JsonLines:
    """A JSON lines file written as the rows come (each flushed, so a killed run keeps what it finished), and the
    rows kept: ``with JsonLines(path) as out: out.write(row)``; ``echo`` prints each line too."""

    def __init__(self, path: pathlib.Path, echo: bool = False) -> None:
        self.path, self.echo, self.rows = path, echo, []
        self._file = path.open("w")

    def write(self, row: dict) -> None:
        line = json.dumps(row, default=str)
        self._file.write(line + "\n")
        self._file.flush()
        self.rows.append(row)
        if self.echo:
            print(line[:400], flush=True)

    def extend(self, rows: Iterable[dict]) -> None:
        for row in rows:
            self.write(row)

    def __enter__(self) -> "JsonLines":
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()


@attrs.frozen
class Child:
    """A finished child process: its exit status (None when it ran past its limit), output and wall time."""

    rc: int | None
    stdout: str
    stderr: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.rc == 0

    def error(self, limit: int = 1500) -> str:
        """Why it failed, for a JSON line: the limit it ran past, or the end of its output."""
        if self.rc is None:
            return f"timed out after {self.seconds:.0f} s (a hang or a fault)"
        return f"exit {self.rc}: " + (self.stderr or self.stdout).strip()[-limit:]


def _text(x: object) -> str:
    return x.decode(errors="replace") if isinstance(x, bytes) else str(x or "")


def run_child(args: list[str], timeout: float, prefix: tuple[str, ...] = ()) -> Child:
    """``python args...`` (after ``prefix``: ncu, compute-sanitizer) from the repository root, with the root on
    ``PYTHONPATH``; a child past ``timeout`` seconds is killed and reads ``rc=None``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    start = time.monotonic()
    try:
        run = subprocess.run([*prefix, sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=timeout)
        return Child(run.returncode, run.stdout, run.stderr, time.monotonic() - start)
    except subprocess.TimeoutExpired as e:
        return Child(None, _text(e.stdout), _text(e.stderr), time.monotonic() - start)


def run_question(question: str, args: list[str], timeout: float, prefix: tuple[str, ...] = ()) -> Child:
    """``python -m tools <question> args...`` in a child process (what a question runs each risky case as)."""
    return run_child(["-m", "tools", question, *args], timeout, prefix)


def json_rows(text: str) -> list[dict]:
    """Every line of ``text`` that is a JSON object."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def last_json(text: str) -> dict | None:
    """The last JSON object line of ``text`` (a child's verdict), or None."""
    rows = json_rows(text)
    return rows[-1] if rows else None


def interleaved(rounds: int, kernels: dict[str, Callable[[], float]]) -> dict[str, list[float]]:
    """Each kernel's milliseconds per round, the kernels timed in turn within every round, so that drift in the
    GPU's clocks or L2 falls on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in kernels}
    for _ in range(rounds):
        for name, run in kernels.items():
            times[name].append(run())
    return times


def rates(ms_rounds: list[float], nbytes: int) -> dict[str, Any]:
    """The rounds and the best and median rate in TB/s of ``nbytes`` moved per run."""
    return {"ms_rounds": ms_rounds, "TBps_best": nbytes / min(ms_rounds) / 1e9,
            "TBps_median": nbytes / statistics.median(ms_rounds) / 1e9}


def ncu_path() -> str | None:
    """Nsight Compute's command line (PATH, then CUDA's and Nsight's usual homes), or None."""
    return shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")
                                        if os.path.exists(p)), None)


def ncu_metrics(ncu: str) -> set[str]:
    """The metric base names this ncu knows (``ncu --query-metrics``; empty when it cannot list them)."""
    try:
        listing = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {line.split()[0] for line in listing.splitlines() if line.split()}


def parse_ncu(text: str) -> dict[str, dict[str, float]]:
    """Kernel name -> metric -> value from ``ncu --csv`` (one row per kernel and metric; a kernel launched more
    than once keeps its last launch's values)."""
    rows = [line for line in text.splitlines() if line.startswith('"')]
    out: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        name, metric, value = row.get("Kernel Name", ""), row.get("Metric Name", ""), row.get("Metric Value", "")
        try:
            out.setdefault(name.split("(")[0], {})[metric] = float(value.replace(",", ""))
        except ValueError:
            continue
    return out
