"""Canonical test tensors: K-major shared-memory tiles (PTX canonical layouts) and TMEM tensors shaped per atom."""
from pycute import ComposedLayout, Layout, Swizzle, TCol, make_layout, make_smem_tensor, make_tmem_tensor

SWIZZLE_PITCH = {"none": 16, "32B": 32, "64B": 64, "128B": 128}
SWIZZLE_BITS = {"32B": 1, "64B": 2, "128B": 3}


def kmajor_smem(dtype, rows, k, swizzle):
    """A K-major tile of ``rows`` x ``k`` elements: 8-row core groups of the swizzle's row pitch, row groups
    stacked first, then K blocks (cuTe's tile_to_shape of the swizzle atom, column-major)."""
    pitch = SWIZZLE_PITCH[swizzle]
    pe = pitch * 8 // dtype.bits                      # elements in one swizzle row
    rows_t = max(rows, 8)
    k_t = -(-max(k, pe) // pe) * pe
    inner = Layout(((8, rows_t // 8), (pe, k_t // pe)), ((pe, 8 * pe), (1, rows_t * pe)))
    if swizzle == "none":
        return make_smem_tensor(dtype, inner)
    m = (128 // dtype.bits).bit_length() - 1
    return make_smem_tensor(dtype, ComposedLayout(Swizzle(SWIZZLE_BITS[swizzle], m, 3), 0, inner))


def atom_tmem(dtype, atom, k, columns=64):
    """A TMEM tensor whose rows follow ``atom``'s lane pattern and whose ``k`` columns are contiguous."""
    return make_tmem_tensor(dtype, make_layout(atom.lane_pattern, Layout(k, TCol)), replica=atom.replica,
                            columns=columns)
