"""Convolutions whose implicit-GEMM A tiles pycute loads with TMA im2col (issue 32, item 5): 1-, 2- and 3-D, every
swizzle, narrow channel rows, padding, stride, dilation, asymmetric padding, tiles that span images and K tiles of
one tap or of whole taps. Each case: a name, the activations, the shared tile, the problem and the (m, k) tiles to
run. The CPU tests hold the emulator to numpy's im2col; python -m tools tma_every_box runs every one on the H200."""
import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle
from pycute.copy.tma.conv import ConvProblem


def activations(dtype, conv: ConvProblem, pad_channels: int = 0):
    """NHWC (NWC, NDHWC) activations, channels contiguous; ``pad_channels`` unused channels per pixel."""
    shape = (conv.batch, *conv.spatial, conv.channels)
    strides, p = [], 1
    for k, n in enumerate(reversed(shape)):
        strides.append(p)
        p *= n + (pad_channels if k == 0 else 0)
    return pc.make_global_tensor(dtype, Layout(shape, tuple(reversed(strides))))


def case(name, dtype, conv, tile, tiles, pad_channels=0):
    return name, activations(dtype, conv, pad_channels), tile, conv, tiles


IM2COL = [
    case("bf16-3x3-pad1-128B", pc.bf16, ConvProblem(2, (10, 12), 64, (3, 3), padding=1),
         pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B"), [(0, 0), (1, 4), (1, 8), (2, 0)]),
    case("bf16-3x3-stride2-two-boxes-per-tile", pc.bf16, ConvProblem(2, (11, 13), 128, (3, 3), padding=1, stride=2),
         pc.kmajor_smem_tensor(pc.bf16, 64, 128, "128B"), [(0, 0), (1, 3), (1, 8)]),
    case("bf16-64B-channel-rows-in-128B-dilation", pc.bf16,
         ConvProblem(3, (9, 11), 32, (3, 2), padding=(2, 0), stride=(1, 2), dilation=(2, 1)),
         pc.kmajor_smem_buffer(pc.bf16, 64, 64, "128B")[:, 0:32], [(0, 0), (1, 2), (2, 5)]),
    case("bf16-two-taps-per-k-tile-64B", pc.bf16, ConvProblem(2, (7, 9), 32, (2, 2), padding=1, stride=2),
         pc.kmajor_smem_tensor(pc.bf16, 64, 64, "64B"), [(0, 0), (0, 1)]),
    case("f32-3d-conv", pc.f32, ConvProblem(2, (6, 5, 7), 16, (2, 3, 3), padding=1, stride=(1, 2, 1)),
         pc.make_smem_tensor(pc.f32, Layout((64, 16), (16, 1))), [(0, 0), (2, 7), (3, 17)]),
    case("u8-1d-conv-dilation3-32B", pc.u8, ConvProblem(4, (50,), 32, (5,), padding=2, dilation=3),
         pc.make_smem_tensor(pc.u8, ComposedLayout(Swizzle(1, 4, 3), 0, Layout((128, 32), (32, 1)))),
         [(0, 0), (1, 4)]),
    case("f16-5x5-tile-spans-images", pc.f16, ConvProblem(6, (5, 5), 16, (5, 5), padding=2),
         pc.make_smem_tensor(pc.f16, ComposedLayout(Swizzle(1, 3, 3), 0, Layout((128, 16), (16, 1)))),
         [(0, 0), (1, 12), (1, 24)]),
    case("bf16-valid-3x3-no-padding", pc.bf16, ConvProblem(1, (12, 12), 64, (3, 3)),
         pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), [(0, 0), (1, 8)]),
    case("bf16-1x1-stride2", pc.bf16, ConvProblem(2, (9, 9), 64, (1, 1), stride=2),
         pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), [(0, 0)]),
    case("bf16-padding-h2-w0", pc.bf16, ConvProblem(2, (6, 10), 64, (5, 3), padding=(2, 0)),
         pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), [(0, 0), (1, 7), (1, 14)]),
    case("bf16-padded-pixels-in-memory", pc.bf16, ConvProblem(2, (8, 8), 64, (3, 3), padding=1),
         pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), [(0, 4), (1, 8)], pad_channels=8),
    case("f32-1024-pixels-one-box", pc.f32, ConvProblem(1, (40, 40), 4, (3, 3), padding=1),
         pc.make_smem_tensor(pc.f32, Layout((1024, 4), (4, 1))), [(0, 0), (1, 8)]),
]
