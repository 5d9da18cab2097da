"""``python -m tools``: the questions, each with its module; ``python -m tools <question> [args]`` runs one (its
``main(argv)``, whose return is the exit status); ``python -m tools --readme`` writes tools/README.md's list."""
from __future__ import annotations

import importlib
import sys

import tools


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print(tools.listing())
        return 0
    if argv[0] == "--readme":
        path = tools.HERE / "README.md"
        path.write_text(tools.readme(path.read_text()))
        print(f"wrote {path}")
        return 0
    try:
        question = tools.find(argv[0])
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    rc: int = importlib.import_module(f"tools.{question.name}").main(argv[1:])
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
