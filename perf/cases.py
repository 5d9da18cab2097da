"""Copies the benchmarks and the report time: the article's demo and a 128-row tile per atom."""
import pycute as pc
from pycute.arch.sm100 import alloc_columns_for
from pycute import Layout, TCol, TLane, make_smem_tensor, make_tmem_tensor
from pycute.atoms import TCGEN05_CP_ATOMS
from pycute.atoms.tcgen05_cp import atom_tmem_tensor
from pycute.tensor.canonical import kmajor_smem_buffer, kmajor_smem_tensor


def demo_copy():
    """The article's demo: a 32x16 uint8 shared tile into a warpx4-replicated TMEM tensor (16 columns used)."""
    src = make_smem_tensor(pc.u8, Layout((32, 16), (16, 1)))
    dst = make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    return dst[0:32, 0:16], src[0:32, 0:16]


def atom_copy(atom, middle=4, dtype=pc.bf16, swizzle="128B"):
    """A K-major copy that ``atom`` plans in ``middle`` instructions."""
    k = middle * atom.bits // dtype.bits
    columns = alloc_columns_for(max(k * dtype.bits // 32, 1))
    src = kmajor_smem_buffer(dtype, atom.rows, k, swizzle)[0:atom.rows, 0:k]
    return atom_tmem_tensor(dtype, atom, k, columns=columns), src


ATOMS = {f"{a.name}-g{a.cta_group}": a for a in TCGEN05_CP_ATOMS}


def failing_plan():
    """A zero-argument call that plans an illegal copy (TMEM columns step by 2) and expects a PlanError."""
    _, src = demo_copy()
    bad = make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, 2 * TCol)), columns=32)

    def attempt():
        try:
            pc.make_tiled_copy(bad, src)
        except pc.PlanError:
            return
        raise AssertionError("planned an illegal copy")
    return attempt


def compile_overhead(plan, directory):
    """A zero-argument call doing everything compile_cuda does besides NVRTC on a cache miss: emit the source,
    derive the key, look the entry up and store one of about a small cubin's size."""
    from pycute.compile import CompileCache
    from pycute.compile.nvrtc import cache_key
    from pycute.codegen.probe import probe_source

    def overhead():
        source = probe_source(plan, "cold")
        key = cache_key(source, "sm_100a", ("-std=c++17",))
        cache = CompileCache(directory)
        cache.get(key)
        cache.put(key, {"cubin": b"x" * 20000, "ptx": source.encode(), "log": b""})
    return overhead


#: The copies the code-generation issue compared with the CuTe DSL (nvidia-cutlass-dsl 4.8.1), and the CuTe DSL's
#: non-UTCCP SASS per copy for a warp-uniform call as measured there. Reference data from that measurement, not
#: from pycute; the same harness reproduces that issue's figures for pycute's earlier code exactly.
CUTE_DSL_ISSUE_COST = {
    "bf16 SW128 128x64, 128x256b": 4.75,
    "bf16 SW128 128x64, 128x128b": 3.88,
    "NVFP4 scale factors (SFB, N=256), 32x128b.warpx4": 3.88,
    "MXF8 scale factors (SFB, 2-CTA)": 6.5,
    "f32 4x256b": 10.0,
}


def cute_comparison_copies():
    """``[(label, plan)]`` for the labels of ``CUTE_DSL_ISSUE_COST``."""
    q = kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
    d = make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=64)
    sf = [make_smem_tensor(pc.u32, Layout((32, 4, n), (4, 1, 128))) for n in (8, 2)]
    sf_t = [make_tmem_tensor(pc.u32, Layout((32, 4, n), (TLane, TCol, 4 * TCol)), replica=Layout(4, 32 * TLane),
                             columns=32) for n in (8, 2)]
    f32 = kmajor_smem_buffer(pc.f32, 4, 8, "none")[0:4, 0:8]
    return list(zip(CUTE_DSL_ISSUE_COST, [
        pc.make_tiled_copy(d, q), pc.make_tiled_copy(d, q, shape="128x128b"), pc.make_tiled_copy(sf_t[0], sf[0]),
        pc.make_tiled_copy(sf_t[1], sf[1], cta_group=2),
        pc.make_tiled_copy(make_tmem_tensor(pc.f32, Layout((4, 8), (32 * TLane, TCol)), columns=32), f32)]))


def issue_matrix(counts=(1, 2, 4, 8), swizzles=("none", "32B", "64B", "128B")):
    """``[(label, plan)]``: every atom x cta_group x swizzle x copy count, bf16, K-major, the atom forced."""
    out = []
    for name, atom in ATOMS.items():
        for swizzle in swizzles:
            for n in counts:
                d, s = atom_copy(atom, n, swizzle=swizzle)
                out.append((f"{name} {swizzle} x{n}", pc.make_tiled_copy(d, s, cta_group=atom.cta_group,
                                                                          shape=atom.shape,
                                                                          multicast=atom.multicast or None)))
    return out


def staged_copies():
    """``[(label, staged plan, the same copy at stage 0 as a static plan)]``: pipelines that copy stage ``kb % S``.

    Scale factors as DeepGEMM lays them out (``32x128b.warpx4``; a stage holds 128 rows x 4 UE8M0 = 512 B for SFA,
    1 KiB for SFB), a bf16 128x64 SW128 Q tile in 16 KiB stages, and SFs double-buffered in TMEM as well (the TMEM
    step folds into the address)."""
    out = []
    for g in (1, 2):
        for rows, label in ((128, "SFA"), (256, "SFB")):
            src = pc.make_smem_tensor(pc.u8, Layout(((32, 4, rows // 128), 4, 4), ((16, 4, 512), 1, rows * 4)))
            dst = pc.make_tmem_tensor(pc.u8, Layout(((32, 4, rows // 128), 4), ((TLane, 4 * TCol, 16 * TCol), TCol)),
                                      replica=Layout(4, 32 * TLane), columns=32)
            staged = src[:, :, pc.dynamic("stage")]
            out.append((f"{label} 4 stages, cta_group {g}", pc.make_tiled_copy(dst, staged, cta_group=g),
                        pc.make_tiled_copy(dst, staged.at(stage=0), cta_group=g)))
    q = kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
    stages = make_smem_tensor(pc.bf16, pc.ComposedLayout(q.swizzle, 0, pc.make_layout(q.layout[0], q.layout[1],
                                                                                      Layout(4, 128 * 64))))
    qdst = make_tmem_tensor(pc.bf16, Layout((128, 64), (TLane, TCol)), columns=32)
    staged = stages[:, :, pc.dynamic("stage")]
    out.append(("Q bf16 SW128 128x64, 4 stages", pc.make_tiled_copy(qdst, staged),
                pc.make_tiled_copy(qdst, staged.at(stage=0))))
    src = pc.make_smem_tensor(pc.u8, Layout(((32, 4), 4, 2), ((16, 4), 1, 512)))
    dst = pc.make_tmem_tensor(pc.u8, Layout(((32, 4), 4, 2), ((TLane, 4 * TCol), TCol, 16 * TCol)),
                              replica=Layout(4, 32 * TLane), columns=32)
    both = (src[:, :, pc.dynamic("stage")], dst[:, :, pc.dynamic("stage")])
    out.append(("SFA 2 stages in shared memory and TMEM", pc.make_tiled_copy(both[1], both[0]),
                pc.make_tiled_copy(both[1].at(stage=0), both[0].at(stage=0))))
    return out


def ldst_plans():
    """``[(label, TmemCopyPlan)]``: epilogue loads of every accumulator layout, the 24- and 160-wide splits,
    16-bit packed loads, stores, a tight register cap and a forced .16x32bx2."""
    out = []
    for m, g, ws, n in ((128, 1, False, 256), (64, 1, False, 64), (256, 2, False, 256)):
        acc = pc.mma_accumulator(pc.f32, m, n, cta_group=g, ws=ws)
        out.append((f"ld f32 M{m} cg{g} N{n}, 32-column slice", pc.make_tmem_copy(acc[:, 0:32])))
    for m, g, ws, n in ((128, 2, False, 64), (64, 1, True, 64)):     # column halves folded over lanes +64
        out.append((f"ld f32 M{m} cg{g}{' ws' if ws else ''} N{n}, whole",
                    pc.make_tmem_copy(pc.mma_accumulator(pc.f32, m, n, cta_group=g, ws=ws))))
    d = pc.mma_accumulator(pc.f32, 128, 256)
    out += [("ld f32 M128 width 24", pc.make_tmem_copy(d[:, 0:24])),
            ("ld f32 M128 width 160", pc.make_tmem_copy(d[:, 0:160])),
            ("ld f16 M128 width 64, pack", pc.make_tmem_copy(pc.mma_accumulator(pc.f16, 128, 64))),
            ("st f32 M128 width 32", pc.make_tmem_copy(d[:, 0:32], op="st")),
            ("ld f32 M128 width 32, cap 8", pc.make_tmem_copy(d[:, 0:32], max_registers=8)),
            ("ld f32 M64 width 32, 16x32bx2", pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 64, 32),
                                                               shape="16x32bx2"))]
    return out


def _scaled(kind, dtype, k, vec, g=1, scale_type=None):
    return lambda: pc.make_mma(pc.mma_accumulator(pc.f32, 128 * g, 256, g), kmajor_smem_tensor(dtype, 128, k),
                               kmajor_smem_tensor(dtype, 256 // g, k), kind=kind, scale_type=scale_type, cta_group=g,
                               sfa=pc.scale_factor_tensor(kind, 128, 4, vec, cta_group=g),
                               sfb=pc.scale_factor_tensor(kind, 256, 4, vec, cta_group=g))


def mma_plans() -> dict:
    """label -> a zero-argument maker of an MMA plan: the dense, block-scaled, pair and .ws forms."""
    return {"bf16 M128 N256 K64": lambda: pc.make_mma(pc.mma_accumulator(pc.f32, 128, 256),
                                                      kmajor_smem_tensor(pc.bf16, 128, 64),
                                                      kmajor_smem_tensor(pc.bf16, 256, 64)),
            "mxf8 M128 N256 K128": _scaled("mxf8f6f4", "f8e4m3", 128, 1),
            "nvfp4 pair M256 N256 K256": _scaled("mxf4nvf4", "f4e2m1", 256, 4, 2, "ue4m3"),
            "bf16 .ws M64 N128 K64": lambda: pc.make_mma(pc.mma_accumulator(pc.f32, 64, 128, ws=True),
                                                         kmajor_smem_tensor(pc.bf16, 64, 64),
                                                         kmajor_smem_tensor(pc.bf16, 128, 64), ws=True)}


def mma_probe(plan) -> str:
    """A kernel whose one thread calls the plan's function ``mma`` (arguments from the kernel's parameters)."""
    scaled = plan.sfa is not None
    params = ["unsigned sa", "unsigned sb", "unsigned t"] + (["unsigned sfa", "unsigned sfb"] if scaled else [])
    args = ["sa", "sb", "t"] + (["sfa", "sfb"] if scaled else []) + ["acc"]
    cluster = " __cluster_dims__(2, 1, 1)" if plan.atom.cta_group == 2 else ""
    return (f'extern "C" __global__ void{cluster} probe({", ".join(params)}, unsigned acc) '
            f'{{ if (threadIdx.x == 0) mma({", ".join(args)}); }}\n')


def smem_copies() -> dict:
    """``label -> (dst, src, arch)``: register <-> shared plans the epilogues make (make_smem_copy), among them the
    transposed tcgen05 stores whose value pairing the search decides."""
    from tests.copy.smem_ldst.cases import fragment, tile, wgmma_layout
    wgmma = pc.make_fragment(pc.f32, 128, wgmma_layout(256))
    gemm = kmajor_smem_tensor(pc.bf16, 64, 256, "128B")
    t16 = tile("tmem16x128b", "bf16", "col", "128B")
    return {"wgmma 64x256 bf16 128B st": (gemm, wgmma, None),
            "wgmma 64x256 bf16 128B ld": (pc.make_fragment(pc.bf16, 128, wgmma_layout(256)), gemm, None),
            "tmem32 128x32 bf16 64B st": (tile("tmem32", "bf16", "row", "64B"), fragment("tmem32"), None),
            "tmem16x128b 128x32 bf16 128B col st": (t16, fragment("tmem16x128b"), None),
            "tmem16x64b 128x32 bf16 Sw<3,4,3> col st": (tile("tmem16x64b", "bf16", "col", "Sw<3,4,3>"),
                                                        fragment("tmem16x64b"), None),
            "tmem16x128b 128x32 e4m3 128B col st": (tile("tmem16x128b", "e4m3", "col", "128B"),
                                                    fragment("tmem16x128b"), "sm_100a")}
