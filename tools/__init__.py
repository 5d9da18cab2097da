"""pycute's GPU experiments, one question per module: ``PYTHONPATH=. python -m tools <question> [args]``.

A question is a module ``tools/<question>.py`` (snake_case, named by what it answers, never after a GPU) whose
docstring's first line is the question and which defines ``main(argv: list[str]) -> int``; it edits no
``sys.path`` (it runs from the repository root), writes JSON lines to ``$OUT/<question>.jsonl`` and takes ``--dry``
for a run on the CPU where that makes sense. ``tools/_common.py`` holds what questions share. Modules whose name
starts with ``_`` are not questions; ``SCRIPTS`` names the ones not yet in the convention. tools/README.md says the
convention and lists the questions (``python -m tools --readme`` writes its list)."""
from __future__ import annotations

import ast
import pathlib
import re

import attrs

HERE = pathlib.Path(__file__).resolve().parent
#: Scripts not yet in the convention, run as ``python tools/<name>.py`` (none now).
SCRIPTS: frozenset[str] = frozenset()
#: Names a question may not carry: it is named by what it answers, not by the GPU it first ran on.
DEVICE_NAME = re.compile(r"(^|_)(h100|h200|h800|h20|a100|b100|b200|gb200)(_|$)")


@attrs.frozen
class Question:
    """One experiment: ``python -m tools <name>`` runs ``tools/<name>.py``, which answers ``question``."""

    name: str
    question: str

    @property
    def module(self) -> str:
        return f"tools/{self.name}.py"


def module_names() -> list[str]:
    """Every module of the package that is a question or a script (not ``_*``), sorted."""
    return sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def convention_breaks(name: str) -> list[str]:
    """What keeps ``tools/<name>.py`` from being a question (empty when it is one), read from its source alone:
    nothing is imported, so a module that needs a GPU or torch is checked on any machine."""
    source = (HERE / f"{name}.py").read_text()
    tree = ast.parse(source)
    doc = ast.get_docstring(tree) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    out = []
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        out.append(f"{name}: a question's name is snake_case")
    if DEVICE_NAME.search(name):
        out.append(f"{name}: named after a device; name it by the question it answers")
    if not first.endswith("?"):
        out.append(f"{name}: the docstring's first line is not a question: {first!r}")
    mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    if len(mains) != 1 or [a.arg for a in mains[0].args.args] != ["argv"] or mains[0].args.defaults:
        out.append(f"{name}: no main(argv: list[str]) -> int")
    if re.search(r"\bsys\.path\b", source):
        out.append(f"{name}: edits sys.path (it runs as `PYTHONPATH=. python -m tools {name}`)")
    return out


def questions() -> tuple[Question, ...]:
    """Every question, by name."""
    out = []
    for name in module_names():
        if name in SCRIPTS or convention_breaks(name):
            continue
        doc = ast.get_docstring(ast.parse((HERE / f"{name}.py").read_text())) or ""
        out.append(Question(name, doc.strip().splitlines()[0]))
    return tuple(out)


def find(name: str) -> Question:
    """The question ``name`` (``-`` and ``_`` alike); a KeyError names the questions there are."""
    wanted = name.replace("-", "_")
    for q in questions():
        if q.name == wanted:
            return q
    have = ", ".join(q.name for q in questions())
    raise KeyError(f"no question {name!r} in tools/ (there are: {have}); `python -m tools` lists them")


def listing() -> str:
    """What ``python -m tools`` prints: each question, its module, then the scripts not yet in the convention."""
    lines = ["PYTHONPATH=. python -m tools <question> [args]   (tools/README.md)", ""]
    for q in questions():
        lines += [f"{q.name}  ({q.module})", f"    {q.question}"]
    left = [n for n in module_names() if n in SCRIPTS]
    if left:
        lines += ["", "scripts, run as `PYTHONPATH=. python tools/<name>.py`: " + ", ".join(left)]
    broken = [b for n in module_names() if n not in SCRIPTS for b in convention_breaks(n)]
    if broken:
        lines += ["", "not questions until mended (tools/README.md):", *(f"    {b}" for b in broken)]
    return "\n".join(lines)


BEGIN, END = "<!-- questions: written by `python -m tools --readme` -->", "<!-- end of questions -->"


def readme_table() -> str:
    """The questions' table of tools/README.md."""
    rows = ["| question | `python -m tools ...` |", "|---|---|"]
    rows += [f"| {q.question} | [`{q.name}`]({q.name}.py) |" for q in questions()]
    return "\n".join(rows)


def readme(text: str) -> str:
    """``text`` (tools/README.md) with its questions' table written anew between the markers."""
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{readme_table()}\n{END}{tail}"
