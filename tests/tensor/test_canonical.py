"""kmajor_smem_tensor gives exactly the tile asked for or refuses (naming the atom width and the narrower swizzles
that fit); kmajor_smem_buffer gives the whole-atom buffer a smaller tile is sliced from."""
import pytest

import pycute as pc


@pytest.mark.parametrize("dtype, rows, k, swizzle", [(pc.bf16, 128, 64, "128B"), ("f8e4m3", 128, 128, "128B"),
                                                      ("f8e4m3", 128, 32, "32B"), (pc.f32, 8, 4, "none"),
                                                      ("f4e2m1", 64, 256, "128B")])
def test_the_tile_is_exactly_the_one_asked_for(dtype, rows, k, swizzle):
    t = pc.kmajor_smem_tensor(dtype, rows, k, swizzle)
    assert (t.layout[0].size(), t.layout[1].size()) == (rows, k)


@pytest.mark.parametrize("args, match", [
    (("f8e4m3", 128, 64, "128B"), r"a '128B' K-major row holds 128 f8e4m3 elements; 64 is not a multiple \(the "
                                  r"tile would be 128 wide\). Ask for a multiple of 128, or use '64B' \(64 per row\)"),
    (("f8e4m3", 128, 16, "32B"), r"'32B' K-major row holds 32 .* or use 'none' \(16 per row\)"),
    ((pc.bf16, 4, 64, "128B"), "whole 8-row core groups; 4 rows given"),
])
def test_a_tile_that_is_not_whole_atoms_is_refused(args, match):
    with pytest.raises(pc.PlanError, match=match):
        pc.kmajor_smem_tensor(*args)


def test_the_buffer_rounds_up_to_whole_atoms_for_slicing():
    buf = pc.kmajor_smem_buffer(pc.bf16, 4, 32, "128B")
    assert (buf.layout[0].size(), buf.layout[1].size()) == (8, 64)
    assert buf[0:4, 0:32].layout[0].size() == 4
    assert pc.kmajor_smem_buffer(pc.bf16, 128, 64, "128B") == pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")
