"""The top level is the kernel author's tour: what they reach for is there, the CUTLASS-pycute helpers are
importable but out of ``__all__``, and ``pycute.compat`` gives CUTLASS pycute's whole namespace."""
import pytest

import pycute as pc

KERNEL_AUTHOR = ["kmajor_smem_tensor", "atom_tmem_tensor", "alloc_columns_for", "TmemAllocation", "CopyAtom",
                 "Tcgen05CpAtom", "TmemLoadAtom", "TmemStoreAtom", "include_dir", "header_path", "commit_asm",
                 "probe_source", "make_tiled_copy", "make_tmem_copy", "make_umma_desc", "make_instr_desc",
                 "make_pipeline", "Consumer", "Producer", "check_pipeline", "make_tile_scheduler", "make_clc_scheduler"]


@pytest.mark.parametrize("name", KERNEL_AUTHOR)
def test_what_a_kernel_author_reaches_for_is_in_the_tour(name):
    assert name in pc.__all__ and getattr(pc, name) is not None


@pytest.mark.parametrize("name", pc.COMPAT_NAMES)
def test_cutlass_helpers_are_importable_but_out_of_the_tour(name):
    assert name not in pc.__all__ and callable(getattr(pc, name))


def test_compat_star_import_is_cutlass_pycutes_namespace():
    namespace: dict = {}
    exec("from pycute.compat import *", namespace)
    for name in (*pc.COMPAT_NAMES, "Integer", "LayoutBase", "Layout", "composition", "product", "shape_div"):
        assert name in namespace, name
    assert namespace["signum"](-3) == -1 and isinstance(7, namespace["Integer"])


def test_every_tour_name_resolves():
    assert [n for n in pc.__all__ if not hasattr(pc, n)] == []


def test_the_header_path_is_the_shipped_header():
    assert pc.header_path() == pc.include_dir() / "pycute" / "sm100.cuh" and pc.header_path().is_file()


def test_canonical_tile_by_swizzle_name_plans_the_widest_atom_once_per_256_bits_of_row():
    """64 bf16 per row are 1024 bits: four 128x256b copies, the widest form (PTX ISA tcgen05.cp shapes)."""
    from pycute.atoms import Cp128x256b
    atom = Cp128x256b(cta_group=1)
    plan = pc.make_tiled_copy(pc.atom_tmem_tensor(pc.bf16, atom, 64), pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"))
    assert plan.atom == atom and len(plan.instructions) == 64 * 16 // 256
