"""TMA's im2col mode (PTX ISA #tensor-im2col-mode, sm_90): a convolution's activations (NWC, NHWC or NDHWC, rank 3
to 5) read as the implicit GEMM's A matrix. The map (CUDA driver API ``cuTensorMapEncodeIm2col``) holds a bounding
box in the spatial dimensions (its lower and upper corners, relative to the tensor's start and end), the traversal
stride per spatial dimension (the convolution's stride), the channels per pixel and the pixels per column; an
instruction names the first pixel's box position and the filter tap's offsets (``.im2col``, one 16-bit offset per
spatial dimension). docs/im2col.md records what the H200 showed."""
from __future__ import annotations

from ..sm80.cache import CACHE_HINT

__all__ = ["IM2COL_RANKS", "CORNER_RANGE", "OFFSET_BITS", "OFFSET_LIMIT", "MAX_CHANNELS", "MAX_PIXELS", "MAX_TRAVERSAL_STRIDE",
           "im2col_ptx", "IM2COL_SASS"]

#: Tensor ranks im2col takes (NWC, NHWC, NDHWC).
IM2COL_RANKS = (3, 4, 5)
#: The corners' range per rank (signed: [-2^15, 2^15) for 3-D maps, [-2^7, 2^7) for 4-D, [-2^4, 2^4) for 5-D).
CORNER_RANGE = {3: (-(1 << 15), (1 << 15) - 1), 4: (-(1 << 7), (1 << 7) - 1), 5: (-(1 << 4), (1 << 4) - 1)}
#: The bits of an im2col offset register (.u16) and the largest offset per rank (16, 8 and 5 bits of it).
OFFSET_BITS = 16
OFFSET_LIMIT = {3: 2 ** OFFSET_BITS - 1, 4: 2 ** 8 - 1, 5: 2 ** 5 - 1}
MAX_CHANNELS = 256            # channelsPerPixel
MAX_PIXELS = 1024             # pixelsPerColumn
MAX_TRAVERSAL_STRIDE = 8      # elementStrides[i], the spatial dimensions' traversal strides


def im2col_ptx(rank: int, cache_hint: bool = False) -> str:
    """The im2col load: ``[dst], [map, {c, w[, h[, d]], n}], [mbar], {offsets, innermost spatial first}``."""
    return (f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
            + (CACHE_HINT if cache_hint else ""))


#: ptxas 13 on sm_90a and sm_100a.
IM2COL_SASS = "UTMALDG.{rank}D.IM2COL"
