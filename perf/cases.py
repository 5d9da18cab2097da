"""Copies the benchmarks and the report time: the article's demo and a 128-row tile per atom."""
import pycute as pc
from pycute.arch.sm100 import alloc_columns_for
from pycute import Layout, TCol, TLane, make_smem_tensor, make_tmem_tensor
from pycute.atoms import TCGEN05_CP_ATOMS
from pycute.copy.canonical import atom_tmem_tensor, kmajor_smem_tensor


def demo_copy():
    """The article's demo: a 32x16 uint8 shared tile into a warpx4-replicated TMEM tensor (16 columns used)."""
    src = make_smem_tensor(pc.u8, Layout((32, 16), (16, 1)))
    dst = make_tmem_tensor(pc.u8, Layout((32, 16), (TLane, TCol)), replica=Layout(4, 32 * TLane), columns=32)
    return dst[0:32, 0:16], src[0:32, 0:16]


def atom_copy(atom, middle=4, dtype=pc.bf16, swizzle="128B"):
    """A K-major copy that ``atom`` plans in ``middle`` instructions."""
    k = middle * atom.bits // dtype.bits
    columns = alloc_columns_for(max(k * dtype.bits // 32, 1))
    src = kmajor_smem_tensor(dtype, atom.rows, k, swizzle)[0:atom.rows, 0:k]
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
    from pycute.codegen.kernels import probe_source

    def overhead():
        source = probe_source(plan, "cold")
        key = cache_key(source, "sm_100a", ("-std=c++17",))
        cache = CompileCache(directory)
        cache.get(key)
        cache.put(key, b"x" * 20000)
    return overhead
