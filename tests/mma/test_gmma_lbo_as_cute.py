"""The LBO and SBO pycute's make_gmma_desc writes are the ones CuTe's make_gmma_desc
(cute/atom/mma_traits_sm90_gmma.hpp) derives for the same operand: CuTe recasts the tile to 16-byte units,
logical_divides it by the swizzle atom (W units along MN, 8 along K for MN-major; 8 rows and 2 units for K-major)
and reads the fields off the divided layout's strides; the same algebra runs here on pycute's layouts (CuTe's exact
answers). Where an operand has one atom along MN, the atom mode of the division has size 1 and stride 0, so CuTe
writes LBO 0, as pycute does (docs/wgmma.md)."""
import pytest

import pycute as pc
from pycute import Layout

ATOM_UNITS = {"none": 1, "32B": 2, "64B": 4, "128B": 8}      # CuTe's W: the swizzle atom's width in 16-byte units


def cute_fields(tensor, major: str, swizzle: str) -> tuple[int, int]:
    """(LBO, SBO) in bytes by CuTe's make_gmma_desc<major> on ``tensor`` (one k-step of the operand)."""
    u128 = pc.recast(tensor.layout, tensor.dtype.bits, 128)
    w = ATOM_UNITS[swizzle]
    if major == "MN":
        canonical = pc.logical_divide(u128, (Layout(w, 1), Layout(8, 1)))
        s01, s11 = canonical.stride[0][1], canonical.stride[1][1]
        lbo, sbo = (s11, s01) if swizzle == "none" else (s01, s11)
    else:
        canonical = pc.logical_divide(u128, (Layout(8, 1), Layout(2, 1)))
        lbo, sbo = canonical.stride[1][0], canonical.stride[0][1]
    return 16 * lbo, 16 * sbo


@pytest.mark.parametrize("mn, swizzle", [(64, "128B"), (128, "128B"), (32, "64B"), (64, "64B"), (16, "32B"),
                                         (64, "none")])
def test_an_mn_major_operand_gets_cutes_lbo_and_sbo(mn, swizzle):
    tensor = pc.mnmajor_smem_tensor(pc.bf16, mn, 16, swizzle)
    desc = pc.make_gmma_desc(tensor).descriptor
    assert (desc.lbo, desc.sbo) == cute_fields(tensor, "MN", swizzle)


def test_one_atom_along_mn_is_lbo_0_in_both():
    tensor = pc.mnmajor_smem_tensor(pc.bf16, 64, 16, "128B")
    assert pc.make_gmma_desc(tensor).descriptor.lbo == cute_fields(tensor, "MN", "128B")[0] == 0


@pytest.mark.parametrize("mn, swizzle", [(64, "32B"), (128, "none")])
def test_a_k_major_operand_gets_cutes_lbo_and_sbo(mn, swizzle):
    tensor = pc.kmajor_smem_tensor(pc.bf16, mn, 16, swizzle)
    desc = pc.make_gmma_desc(tensor).descriptor
    assert (desc.lbo, desc.sbo) == cute_fields(tensor, "K", swizzle)
