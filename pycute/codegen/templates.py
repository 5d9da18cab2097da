"""The C++ templates shipped as package data (``pycute/codegen/templates``), filled with ``string.Template``.

Placeholders are ``${name}``; a missing value is an error, never an empty string. C++ and inline PTX use no
``$``, so the template text is the C++ as it compiles.
"""
from __future__ import annotations

import functools
import string
from importlib import resources

__all__ = ["render"]


@functools.lru_cache(maxsize=None)
def _template(name: str) -> string.Template:
    return string.Template(resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8"))


def render(template: str, /, **values: object) -> str:
    """The template file ``template`` with every ``${placeholder}`` replaced by ``values[placeholder]``."""
    return _template(template).substitute(values)
