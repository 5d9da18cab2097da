"""``python -m pycute demo``: show the layout algebra (later: plan, compile and verify tcgen05.cp copies)."""
from __future__ import annotations

import argparse
import sys


def _demo_algebra(out) -> None:
    import pycute as pc
    rows = [
        ("make_layout((4,8))", pc.make_layout((4, 8))),
        ("composition((6,2):(8,2), (4,3):(3,1))", pc.composition(pc.Layout((6, 2), (8, 2)),
                                                                 pc.Layout((4, 3), (3, 1)))),
        ("complement(4:2, 24)", pc.complement(pc.Layout(4, 2), 24)),
        ("logical_divide((4,2,3):(2,1,8), 4:2)", pc.logical_divide(pc.Layout((4, 2, 3), (2, 1, 8)),
                                                                   pc.Layout(4, 2))),
        ("blocked_product((2,2):(1,2), (2,3):(3,1))", pc.blocked_product(pc.Layout((2, 2), (1, 2)),
                                                                         pc.Layout((2, 3), (3, 1)))),
        ("raked_product((2,2):(1,2), (2,3):(3,1))", pc.raked_product(pc.Layout((2, 2), (1, 2)),
                                                                     pc.Layout((2, 3), (3, 1)))),
        ("Sw<3,4,3> o (8,64):(64,1)", pc.composition(pc.Swizzle(3, 4, 3), pc.Layout((8, 64), (64, 1)))),
    ]
    print("Layout algebra", file=out)
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  =  {value!r}", file=out)


def _demo_plans(out) -> None:
    import pycute as pc
    from pycute.atoms import cp_candidates
    from pycute.copy.canonical import atom_tmem_tensor, kmajor_smem_tensor
    src = pc.make_smem_tensor(pc.u8, pc.Layout((32, 16), (16, 1)))
    dst = pc.make_tmem_tensor(pc.u8, pc.Layout((32, 16), (pc.TLane, pc.TCol)), replica=pc.Layout(4, 32 * pc.TLane),
                              columns=32)
    print("\nThe article's demo: 32x16 uint8, TMEM replicated to all four warp quadrants, shape inferred", file=out)
    plan = pc.make_tiled_copy(dst[0:32, 0:16], src[0:32, 0:16], cta_group=1)
    pc.verify_plan(plan)
    print(plan.explain(), file=out)
    for atom in cp_candidates(1):
        k = 4 * atom.bits // 16
        src = kmajor_smem_tensor(pc.bf16, atom.rows, k, "128B")[0:atom.rows, 0:k]
        dst = atom_tmem_tensor(pc.bf16, atom, k)
        plan = pc.make_tiled_copy(dst, src, shape=atom.shape, multicast=atom.multicast or None)
        pc.verify_plan(plan)
        print(f"\nOne copy per atom: {atom.name}, bf16, 128B swizzle, 4 middle steps", file=out)
        print(plan.explain(), file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pycute", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="show the algebra, plan/compile/verify one copy per tcgen05.cp atom")
    args = parser.parse_args(argv)
    if args.command == "demo":
        _demo_algebra(sys.stdout)
        _demo_plans(sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
