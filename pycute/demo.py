"""``python -m pycute demo``: the article's demo and one copy per atom, planned, compiled for sm_100a and checked.

Checks per copy (none of them is a Blackwell GPU run; there is none here):
  * UTCCP in SASS: ptxas accepted the round-trip kernel's cubin and the SASS has exactly the planned UTCCPs;
  * PTX stream: interpreting the compiled issue code yields exactly the plan's (opcode, taddr, descriptor) stream;
  * emulator: that interpreted stream, run through the bit-exact emulator, leaves TMEM as the layouts say.
"""
from __future__ import annotations

import os
from typing import TextIO

import pycute as pc

from .atoms import TCGEN05_CP_ATOMS
from .atoms.tcgen05_cp import atom_tmem_tensor
from .tensor.canonical import kmajor_smem_buffer
from .copy.tcgen05_cp.plan import Tcgen05CpPlan

__all__ = ["run_demo", "demo_copies"]


def demo_copies() -> list[tuple[str, Tcgen05CpPlan]]:
    """``[(label, plan)]``: the article's demo, a bf16 128B-swizzled 4-middle copy per atom and cta_group (atom
    forced), and one 128x128b-shaped copy left to inference (it widens to 128x256b)."""
    src = pc.make_smem_tensor(pc.u8, pc.Layout((32, 16), (16, 1)))
    dst = pc.make_tmem_tensor(pc.u8, pc.Layout((32, 16), (pc.TLane, pc.TCol)), replica=pc.Layout(4, 32 * pc.TLane),
                              columns=32)
    out = [("article demo 32x16 u8", pc.make_tiled_copy(dst[0:32, 0:16], src[0:32, 0:16], cta_group=1))]
    for atom in TCGEN05_CP_ATOMS:
        k = 4 * atom.bits // 16
        s = kmajor_smem_buffer(pc.bf16, atom.rows, k, "128B")[0:atom.rows, 0:k]
        out.append((f"{atom.rows}x{k} bf16 SW128", pc.make_tiled_copy(
            atom_tmem_tensor(pc.bf16, atom, k), s, cta_group=atom.cta_group, shape=atom.shape,
            multicast=atom.multicast or None)))
    atom = TCGEN05_CP_ATOMS[2]
    s = kmajor_smem_buffer(pc.bf16, 128, 32, "128B")[0:128, 0:32]
    out.append(("128x32 bf16, inferred", pc.make_tiled_copy(atom_tmem_tensor(pc.bf16, atom, 32), s)))
    return out


def _checks(plan):
    from .harness import RoundTrip
    from .codegen import probe_source
    from .compile import compile_cuda, utccp_instructions
    from .interp import probe_stream
    sass = utccp_instructions(RoundTrip(plan, "demo").compile("sm_100a").instructions())
    sass_ok = sass == [plan.atom.sass] * len(plan.instructions)
    ptx = compile_cuda(probe_source(plan, "demo")).ptx

    def stream(smem_base: int, tmem_base: int) -> list:
        return probe_stream(ptx, "demo", smem_base, tmem_base)
    stream_ok = stream(0x400, 0) == plan.stream(0x400, 0)
    try:
        pc.verify_plan(plan, smem_base=0x400, stream=stream)
        emu_ok = True
    except pc.EmulationError:
        emu_ok = False
    return f"{len(sass)} x {sass[0] if sass else '-'}", sass_ok, stream_ok, emu_ok


def save_pictures(directory: str | os.PathLike[str]) -> list:
    """Each demo plan's picture as ``<directory>/<copy>.svg``; returns the paths written."""
    import re
    from pathlib import Path
    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise pc.PycuteError(f"cannot create the picture folder {str(folder)!r}: {e.strerror or e}") from None
    paths = []
    for k, (label, plan) in enumerate(demo_copies()):
        slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{k:02d} {label} {plan.atom.name} cg{plan.cta_group}").strip("-")
        try:
            paths.append(plan.draw().save(folder / f"{slug}.svg"))
        except OSError as e:
            raise pc.PycuteError(f"cannot write {str(folder / slug)}.svg: {e.strerror or e}") from None
    return paths


def run_demo(out: TextIO, compile_kernels: bool = True, svg_dir: str | os.PathLike[str] | None = None) -> int:
    L = pc.Layout
    print("pycute demo\n\nLayout algebra (cuTe semantics)", file=out)
    for text, value in [
        ("composition((6,2):(8,2), (4,3):(3,1))", pc.composition(L((6, 2), (8, 2)), L((4, 3), (3, 1)))),
        ("complement(4:2, 24)", pc.complement(L(4, 2), 24)),
        ("logical_divide((4,2,3):(2,1,8), 4:2)", pc.logical_divide(L((4, 2, 3), (2, 1, 8)), L(4, 2))),
        ("blocked_product((2,2):(1,2), (2,3):(3,1))", pc.blocked_product(L((2, 2), (1, 2)), L((2, 3), (3, 1)))),
        ("Sw<3,4,3> o (8,64):(64,1)", pc.composition(pc.Swizzle(3, 4, 3), L((8, 64), (64, 1)))),
    ]:
        print(f"  {text:<42} = {value!r}", file=out)
    copies = demo_copies()
    print("\nThe article's demo (shape inferred):", file=out)
    print(copies[0][1].explain(), file=out)
    header = f"{'copy':<24} {'atom':<46} {'planned':>7}  {'UTCCP in SASS (sm_100a)':<42} {'PTX stream':<10} emulator"
    print("\n" + header + "\n" + "-" * len(header), file=out)
    failures = 0
    for label, plan in copies:
        if compile_kernels:
            sass, sass_ok, stream_ok, emu_ok = _checks(plan)
        else:
            pc.verify_plan(plan)
            sass, sass_ok, stream_ok, emu_ok = "(not compiled: --quick)", True, None, True
        failures += not (sass_ok and stream_ok is not False and emu_ok)
        mark = {True: "ok", False: "FAILED", None: "-"}
        print(f"{label:<24} {plan.atom.ptx:<46} {len(plan.instructions):>7}  "
              f"{sass + ('' if sass_ok else ' MISMATCH'):<42} {mark[stream_ok]:<10} {mark[emu_ok]}", file=out)
    print("\nChecks: cubin compiled by NVRTC/ptxas for sm_100a; SASS UTCCP count and variant; the compiled PTX "
          "interpreted\nfor the issuing thread; that stream run through the bit-exact emulator. No Blackwell GPU "
          "ran these copies.", file=out)
    print("\nGenerated device function for the article's demo:\n", file=out)
    print(copies[0][1].cuda(name="copy_scale_factors"), file=out)
    if svg_dir is not None:
        paths = save_pictures(svg_dir)
        print(f"\nWrote {len(paths)} plan pictures to {svg_dir}/ (TMEM cells coloured by instruction).", file=out)
    return 1 if failures else 0
