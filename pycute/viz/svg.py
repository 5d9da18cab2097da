"""A small SVG writer: rectangles, text and lines, written by pycute (no drawing dependency).

Cells carry ``data-*`` attributes (their coordinates, their value, the instruction that writes them) so that a
test, or a reader with a browser's inspector, can check a picture against the layouts and the emulator. Styles are
classes in one ``<style>`` (short names in order of first use, renamed when a picture is placed in another), not
attributes repeated on every cell; a cell of uniform size takes its width and height from its class (SVG 2 geometry
properties), and a grid row is one translated ``<g>`` carrying the row's data, its cells in column order: a 128x64
grid is a third of the bytes.
"""
from __future__ import annotations

import colorsys
import os
import re
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

__all__ = ["Svg", "color", "text_width", "CELL", "FONT"]

CELL = 22           # a labelled cell's side, px
FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"
_CLASS = re.compile(r'class="(c[0-9a-f]+)"')


def color(key: int) -> str:
    """A light colour for ``key``: hues spaced by the golden angle, so neighbouring keys differ clearly."""
    hue = (key * 0.618033988749895) % 1.0
    r, g, b = colorsys.hls_to_rgb(hue, 0.78, 0.62)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def text_width(text: str, size: float) -> float:
    """About how wide ``text`` is in the monospace font at ``size`` px (0.6 em per character)."""
    return 0.6 * size * len(text)


def _attrs(**kw) -> str:
    out = []
    for k, v in kw.items():
        if v is None:
            continue
        out.append(f"{k.rstrip('_').replace('_', '-')}={quoteattr(str(v))}")
    return " ".join(out)


class Svg:
    """An SVG document built element by element; ``str()`` is the document, and Jupyter shows it as a picture."""

    def __init__(self, width: float, height: float, title: str = ""):
        self.width, self.height, self.title = width, height, title
        self.defs: list[str] = []
        self.items: list[str] = []
        self.styles: dict[str, str] = {}          # class name -> CSS declarations
        self._names: dict[str, str] = {}          # CSS declarations -> class name

    def style(self, rule: str) -> str:
        """The class of the CSS declarations ``rule`` (one short name per distinct rule)."""
        name = self._names.get(rule)
        if name is None:
            name = self._names[rule] = f"c{len(self._names):x}"
            self.styles[name] = rule
        return name

    def rect(self, x: float, y: float | None, w: float, h: float, fill: str = "none", stroke: str = "#555",
             stroke_width: float = 0.5, sized: bool = False, **data: object) -> None:
        """A rectangle; ``sized`` puts its width and height in its class (for the many equal cells of a grid), and
        a ``y`` of None leaves it to the enclosing group."""
        rule = f"fill:{fill};stroke:{stroke};stroke-width:{stroke_width}"
        if sized:
            cls = self.style(f"{rule};width:{_n(w)}px;height:{_n(h)}px")
            geometry = dict(x=_n(x), y=None if y is None else _n(y))
        else:
            cls = self.style(rule)
            geometry = dict(x=_n(x), y=None if y is None else _n(y), width=_n(w), height=_n(h))
        self.items.append(f"<rect {_attrs(**geometry, class_=cls, **_data(data))}/>")

    def group(self, x: float = 0, y: float = 0, **data: object) -> None:
        """Open a group translated by (x, y) whose ``data-*`` its children inherit; ``end`` closes it."""
        self.items.append(f'<g {_attrs(transform=f"translate({_n(x)},{_n(y)})", **_data(data))}>')

    def end(self) -> None:
        self.items.append("</g>")

    def text(self, x: float, y: float, s: object, size: float = 9, anchor: str = "middle", weight: str | None = None,
             fill: str = "#222") -> None:
        cls = self.style(f"font-size:{size}px;text-anchor:{anchor};fill:{fill}"
                         + (f";font-weight:{weight}" if weight else ""))
        self.items.append(f"<text {_attrs(x=_n(x), y=_n(y), class_=cls)}>{escape(str(s))}</text>")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#222", stroke_width: float = 1.0,
             dash: str | None = None) -> None:
        self.items.append(f"<line {_attrs(x1=_n(x1), y1=_n(y1), x2=_n(x2), y2=_n(y2), stroke=stroke, stroke_width=stroke_width, stroke_dasharray=dash)}/>")

    def hatch(self, name: str = "replica") -> str:
        """A diagonal hatch pattern (for replicated cells); returns its ``url(#...)``."""
        self.defs.append(f'<pattern id="{name}" width="6" height="6" patternUnits="userSpaceOnUse" '
                         f'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#333" '
                         f'stroke-width="1.2"/></pattern>')
        return f"url(#{name})"

    def place(self, other: "Svg", x: float, y: float) -> None:
        """Draw ``other`` with its origin at ``(x, y)``."""
        self.defs.extend(d for d in other.defs if d not in self.defs)
        rename = {name: self.style(rule) for name, rule in other.styles.items()}
        self.items.append(f'<g transform="translate({_n(x)},{_n(y)})">')
        self.items.extend(_CLASS.sub(lambda m: f'class="{rename[m.group(1)]}"', item) for item in other.items)
        self.items.append("</g>")

    def __str__(self) -> str:
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(self.width)}" height="{_n(self.height)}" '
                f'viewBox="0 0 {_n(self.width)} {_n(self.height)}">')
        title = [f"<title>{escape(self.title)}</title>"] if self.title else []
        css = [f"text{{dominant-baseline:central;font-family:{FONT}}}"]
        css += [f".{name}{{{rule}}}" for name, rule in sorted(self.styles.items())]
        defs = [f"<defs>{''.join(self.defs)}</defs>"] if self.defs else []
        defs.append("<style>" + "\n".join(css) + "</style>")
        body = ['<rect width="100%" height="100%" fill="white"/>']
        return "\n".join([head] + title + defs + body + self.items + ["</svg>"]) + "\n"

    def _repr_svg_(self) -> str:
        return str(self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the document to ``path`` (``.svg``); returns the path."""
        path = Path(path)
        path.write_text(str(self), encoding="utf-8")
        return path


def _n(x) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if isinstance(x, float) else str(x)


def _data(data: dict) -> dict:
    return {f"data_{k}": v for k, v in data.items()}
