"""The ``python -m pycute`` command line: ``demo``, ``explain``, ``emit`` and ``show``."""
from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn, TextIO

import argparse
import json
import re
import sys

from .errors import PycuteError

if TYPE_CHECKING:
    from .copy.tcgen05_cp.plan import Tcgen05CpPlan
    from .layout import Layout

SPEC_HELP = """A copy is described by flags or by a JSON/TOML file with the same fields, e.g.
{"src": {"dtype": "u8", "layout": "(32,16):(16,1)"},
 "dst": {"dtype": "u8", "layout": "(32,16):(1@TLane,1@TCol)", "replica": "4:32@TLane", "columns": 32},
 "cta_group": 1}
Layouts use cuTe notation as pycute prints them ("Sw<3,3,3> o (128,64):(64,1)" for a swizzled buffer);
regions are slices like "0:32,8:24"."""


_REGION_PART = re.compile(r"^\s*(?:(-?\d+)|(-?\d+)?\s*:\s*(-?\d+)?)\s*$")


def _region(text: str):
    """``"0:32,8:24"`` as slices (``"5"`` an index); anything else is an error naming the part."""
    out = []
    for part in text.split(","):
        m = _REGION_PART.match(part)
        if not m:
            raise PycuteError(f"region {text!r}: {part.strip()!r} is not an index or a slice 'start:stop' "
                              f"(no steps)")
        index, lo, hi = m.groups()
        out.append(int(index) if index is not None else
                   slice(int(lo) if lo is not None else None, int(hi) if hi is not None else None))
    return tuple(out)


# The fields of a copy description and their types; anything else is refused, so a typo is not ignored.
_FIELDS = {
    None: {"src": dict, "dst": dict, "cta_group": int, "shape": str, "multicast": str, "name": str},
    "src": {"dtype": str, "layout": str, "region": str, "base_align": int},
    "dst": {"dtype": str, "layout": str, "region": str, "replica": str, "columns": int},
}
_TYPE_NAMES = {dict: "an object", int: "an integer", str: "a string"}


def _check_fields(spec, part=None) -> None:
    where = f"{part!r}" if part else "the copy description"
    if not isinstance(spec, dict):
        raise PycuteError(f"{where} must be {_TYPE_NAMES[dict]}, got {json.dumps(spec)[:60]}")
    for key, value in spec.items():
        want = _FIELDS[part].get(key)
        if want is None:
            raise PycuteError(f"{where} has an unknown field {key!r}; the fields are {', '.join(_FIELDS[part])}")
        if type(value) is not want:       # exactly: a bool is no integer, 32.0 no column count
            raise PycuteError(f"field {key!r} must be {_TYPE_NAMES[want]}, got {json.dumps(value)[:60]}")
        if want is dict:
            _check_fields(value, key)


def _load_spec(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise PycuteError(f"cannot read the copy description {path!r}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8-sig")        # a byte-order mark is no part of the description
    except UnicodeDecodeError as e:
        raise PycuteError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        if path.endswith(".toml"):
            try:
                import tomllib
            except ImportError:   # Python 3.10
                raise PycuteError("TOML specs need Python 3.11 or newer; use JSON") from None
            return tomllib.loads(text)
        return json.loads(text)
    except RecursionError:
        raise PycuteError(f"{path}: nested too deeply") from None
    except ValueError as e:            # json.JSONDecodeError, tomllib.TOMLDecodeError
        raise PycuteError(f"{path}: not valid {'TOML' if path.endswith('.toml') else 'JSON'}: {e}") from None


def _spec_from_args(args) -> dict:
    spec = _load_spec(args.spec) if args.spec else {"src": {}, "dst": {}}
    _check_fields(spec)
    src, dst = spec.setdefault("src", {}), spec.setdefault("dst", {})
    for key, value in (("dtype", args.src_dtype), ("layout", args.src), ("region", args.src_region)):
        if value is not None:
            src[key] = value
    for key, value in (("dtype", args.dst_dtype), ("layout", args.dst), ("region", args.dst_region),
                       ("replica", args.replica), ("columns", args.columns)):
        if value is not None:
            dst[key] = value
    for key in ("cta_group", "shape", "multicast", "name"):
        if getattr(args, key) is not None:
            spec[key] = getattr(args, key)
    return spec


def _plain_layout(text: str, what: str) -> "Layout":
    """A TMEM layout or replica: cuTe notation without a swizzle (TMEM addresses are not swizzled)."""
    from .layout import Layout
    from .parse import parse_layout
    layout = parse_layout(text)
    if not isinstance(layout, Layout):
        raise PycuteError(f"{what} {text!r}: a TMEM layout has no swizzle")
    return layout


def plan_from_spec(spec: dict) -> Tcgen05CpPlan:
    """Build the tensors a spec describes and plan the copy; every problem with the description is a
    PycuteError."""
    import pycute as pc
    from .parse import parse_layout
    _check_fields(spec)
    src, dst = spec.get("src", {}), spec.get("dst", {})
    for part, fields, key in (("src", src, "dtype"), ("src", src, "layout"), ("dst", dst, "layout")):
        if key not in fields:
            raise PycuteError(f"the copy description lacks {part}.{key}\n{SPEC_HELP}")
    try:
        s = pc.make_smem_tensor(src["dtype"], parse_layout(src["layout"]), src.get("base_align", 1024))
        d = pc.make_tmem_tensor(dst.get("dtype", src["dtype"]), _plain_layout(dst["layout"], "dst.layout"),
                                replica=_plain_layout(dst["replica"], "dst.replica") if dst.get("replica") else None,
                                columns=dst.get("columns"))
        if src.get("region"):
            s = s[_region(src["region"])]
        if dst.get("region"):
            d = d[_region(dst["region"])]
        return pc.make_tiled_copy(d, s, cta_group=spec.get("cta_group", 1), shape=spec.get("shape"),
                                  multicast=spec.get("multicast"))
    except TypeError as e:             # a layout where a shape belongs, a dtype that is no name, ...
        raise PycuteError(str(e)) from None


def _add_spec_args(p):
    p.add_argument("spec", nargs="?", help="a JSON or TOML file describing the copy")
    p.add_argument("--src-dtype")
    p.add_argument("--src", help="shared-memory layout, e.g. '(32,16):(16,1)' or 'Sw<3,3,3> o (128,64):(64,1)'")
    p.add_argument("--src-region", help="slices of the source, e.g. '0:32,0:16'")
    p.add_argument("--dst-dtype")
    p.add_argument("--dst", help="TMEM layout, e.g. '(32,16):(1@TLane,1@TCol)'")
    p.add_argument("--dst-region")
    p.add_argument("--replica", help="multicast replica on TLane, e.g. '4:32@TLane'")
    p.add_argument("--columns", type=int, help="TMEM allocation in 32-bit columns")
    p.add_argument("--cta-group", dest="cta_group", type=int)
    p.add_argument("--shape")
    p.add_argument("--multicast")
    p.add_argument("--name", help="name of the generated device function")


def _save(picture, path: str, out) -> None:
    try:
        picture.save(path)
    except OSError as e:
        raise PycuteError(f"cannot write {path!r}: {e.strerror or e}") from None
    print(f"wrote {path}", file=out)


def _cmd_explain(args, out):
    plan = plan_from_spec(_spec_from_args(args))
    print(plan.explain(), file=out)
    if args.svg:
        _save(plan.draw(), args.svg, out)


def _cmd_show(args, out):
    from .parse import parse_layout
    from .viz import draw_layout, layout_grid
    layout = parse_layout(args.layout)
    if args.svg:
        _save(draw_layout(layout, color_by=args.color), args.svg, out)
    else:
        print(layout_grid(layout), end="", file=out)


def _cmd_emit(args, out):
    from .codegen import probe_source
    from .compile import compile_cuda
    from .compile.nvrtc import ARCHES
    if args.arch not in ARCHES:
        raise PycuteError(f"unsupported arch {args.arch!r}; one of {', '.join(ARCHES)}")
    spec = _spec_from_args(args)
    plan = plan_from_spec(spec)
    name = spec.get("name") or "pycute_tcgen05_cp"
    print(plan.cuda(name=name), file=out)
    if args.ptx or args.sass:
        compiled = compile_cuda(probe_source(plan, name), arch=args.arch)
        if args.ptx:
            print(f"// ---- PTX ({args.arch}) of the issue-only probe kernel ----", file=out)
            print(compiled.ptx, file=out)
        if args.sass:
            print(f"// ---- SASS ({args.arch}) of the issue-only probe kernel ----", file=out)
            print("\n".join(compiled.instructions()), file=out)


def _cmd_include_dir(args, out):
    from .compile.nvrtc import include_dir
    print(include_dir(), file=out)


def _cmd_header(args, out):
    from .codegen.header import sm100_header, write_header
    if args.write:
        print(f"wrote {write_header()}", file=out)
    else:
        print(sm100_header(), end="", file=out)


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors in the command line's one-line form: ``error: ...`` and exit status 2."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = _Parser(prog="python -m pycute", description="cuTe layouts and tcgen05.cp planning",
                     epilog=SPEC_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    demo = sub.add_parser("demo", help="plan, compile for sm_100a and verify the article's demo and one copy per atom")
    demo.add_argument("--quick", action="store_true", help="plan and emulate only (no NVRTC)")
    demo.add_argument("--svg", metavar="DIR", help="also write each demo plan's picture into DIR")
    p_show = sub.add_parser("show", help="print a layout as CuTe's print_layout grid, or draw it (--svg)")
    p_show.add_argument("layout", help="a layout in cuTe notation, e.g. '(4,8):(1,4)' or 'Sw<3,4,3> o (8,64):(64,1)'")
    p_show.add_argument("--svg", metavar="FILE", help="write the picture to FILE instead of printing the grid")
    p_show.add_argument("--color", default="index", choices=("index", "row", "col", "bank", "chunk"),
                        help="what a cell's colour shows (default: its value)")
    p_explain = sub.add_parser("explain", help="plan a copy and explain the plan", epilog=SPEC_HELP,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_spec_args(p_explain)
    p_explain.add_argument("--svg", metavar="FILE", help="also write the plan's picture to FILE")
    p_emit = sub.add_parser("emit", help="plan a copy and print its CUDA (optionally PTX and SASS)", epilog=SPEC_HELP,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_spec_args(p_emit)
    p_emit.add_argument("--ptx", action="store_true")
    p_emit.add_argument("--sass", action="store_true")
    p_emit.add_argument("--arch", default="sm_100a")
    sub.add_parser("include-dir", help="print the directory to pass to nvcc -I for pycute/sm100.cuh")
    p_header = sub.add_parser("header", help="print pycute/sm100.cuh as generated from pycute.arch.sm100")
    p_header.add_argument("--write", action="store_true", help="rewrite the shipped header (for developers)")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from .demo import run_demo
            return run_demo(out, compile_kernels=not args.quick, svg_dir=args.svg)
        {"explain": _cmd_explain, "emit": _cmd_emit, "show": _cmd_show, "include-dir": _cmd_include_dir,
         "header": _cmd_header}[args.command](args, out)
    except PycuteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0
