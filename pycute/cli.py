"""The ``python -m pycute`` command line: ``demo``, ``explain`` and ``emit``."""
from __future__ import annotations

import argparse
import json
import sys

from .errors import PycuteError

SPEC_HELP = """A copy is described by flags or by a JSON/TOML file with the same fields, e.g.
{"src": {"dtype": "u8", "layout": "(32,16):(16,1)"},
 "dst": {"dtype": "u8", "layout": "(32,16):(1@TLane,1@TCol)", "replica": "4:32@TLane", "columns": 32},
 "cta_group": 1}
Layouts use cuTe notation as pycute prints them ("Sw<3,3,3> o (128,64):(64,1)" for a swizzled buffer);
regions are slices like "0:32,8:24"."""


def _region(text):
    if not text:
        return None
    out = []
    for part in str(text).split(","):
        lo, _, hi = part.partition(":")
        out.append(slice(int(lo) if lo.strip() else None, int(hi) if hi.strip() else None))
    return tuple(out)


def _load_spec(path: str) -> dict:
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".toml"):
        try:
            import tomllib
        except ImportError:   # Python 3.10
            raise PycuteError("TOML specs need Python 3.11 or newer; use JSON") from None
        return tomllib.loads(data.decode())
    return json.loads(data)


def _spec_from_args(args) -> dict:
    spec = _load_spec(args.spec) if args.spec else {"src": {}, "dst": {}}
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


def plan_from_spec(spec: dict):
    """Build the tensors a spec describes and plan the copy."""
    import pycute as pc
    from .parse import parse_layout
    try:
        src, dst = spec["src"], spec["dst"]
        src_dtype = src["dtype"]
        s = pc.make_smem_tensor(src_dtype, parse_layout(src["layout"]), src.get("base_align", 1024))
        d = pc.make_tmem_tensor(dst.get("dtype", src_dtype), parse_layout(dst["layout"]),
                                replica=parse_layout(dst["replica"]) if dst.get("replica") else None,
                                columns=int(dst["columns"]) if dst.get("columns") is not None else None)
    except KeyError as e:
        raise PycuteError(f"the copy description lacks {e.args[0]!r}\n{SPEC_HELP}") from None
    if src.get("region"):
        s = s[_region(src["region"])]
    if dst.get("region"):
        d = d[_region(dst["region"])]
    return pc.make_tiled_copy(d, s, cta_group=int(spec.get("cta_group", 1)), shape=spec.get("shape"),
                              multicast=spec.get("multicast"))


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


def _cmd_explain(args, out):
    print(plan_from_spec(_spec_from_args(args)).explain(), file=out)


def _cmd_emit(args, out):
    from .codegen import probe_source
    from .compile import compile_cuda
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


def main(argv=None, out=None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="python -m pycute", description="cuTe layouts and tcgen05.cp planning",
                                     epilog=SPEC_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="plan, compile for sm_100a and verify the article's demo and one copy per atom")
    demo.add_argument("--quick", action="store_true", help="plan and emulate only (no NVRTC)")
    p_explain = sub.add_parser("explain", help="plan a copy and explain the plan", epilog=SPEC_HELP,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_spec_args(p_explain)
    p_emit = sub.add_parser("emit", help="plan a copy and print its CUDA (optionally PTX and SASS)", epilog=SPEC_HELP,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_spec_args(p_emit)
    p_emit.add_argument("--ptx", action="store_true")
    p_emit.add_argument("--sass", action="store_true")
    p_emit.add_argument("--arch", default="sm_100a")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from .demo import run_demo
            return run_demo(out, compile_kernels=not args.quick)
        if args.command == "explain":
            _cmd_explain(args, out)
        else:
            _cmd_emit(args, out)
    except PycuteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0
