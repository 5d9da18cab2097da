"""TMA im2col (issue 32, item 5): the emulator follows the PTX ISA's im2col mode (the bounding box of filter bases,
the traversal that wraps rows, planes and images, the tap's offsets, the fill), every plan's tile equals numpy's
im2col of the same activations, the generated code issues the plan's loads (PTX interpreter, SASS), and what the
map or the instruction cannot hold is refused naming the rule. sm_100a's im2col::w and gather4 / scatter4 are
planned, compiled and emulated (not run: no Blackwell GPU)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pycute as pc
from pycute import ComposedLayout, Layout, Swizzle
from pycute.arch.sm90.tma import TMA_SWIZZLES
from pycute.compile import compile_cuda
from pycute.copy.tma.im2col import Im2colMapParams
from pycute.sim.emulator import Sm90Emulator
from pycute.interp.stream import trace_entry

from .cases_im2col import IM2COL, activations

ids = [c[0] for c in IM2COL]


def _tutorial_load(images, lower, upper, coords, offsets):
    """One im2col load of 16 pixels x 32 f32 channels from images of 4 x 4 pixels whose value is the pixel's
    number from 1 (the cases of Triton's TMA im2col tutorial, asserted there on Hopper GPUs); the value of each
    loaded pixel."""
    x = np.repeat(np.arange(1, images * 16 + 1, dtype=np.float32)[:, None], 32, axis=1)
    params = Im2colMapParams("f32", 7, (32, 4, 4, images), (128, 512, 2048), lower, upper, 32, 16, (1, 1, 1, 1),
                             TMA_SWIZZLES[3])
    emu = Sm90Emulator(smem_bytes=2048)
    assert emu.tma_load_im2col(params, x.view(np.uint8).reshape(-1), coords, offsets, 0) == 16 * 32 * 4
    image = emu.ctas[0].smem.view(np.float32).reshape(16, 32)
    return [float(image[p, (p % 8) * 4]) for p in range(16)]   # channel 0 of pixel p: 16-B unit 0 XOR (p % 8)


@pytest.mark.parametrize("images,lower,upper,coords,offsets,want", [
    (1, (0, 0), (0, 0), (0, 0, 0, 0), (0, 0), list(range(1, 17))),
    (1, (-1, -1), (-1, -1), (0, -1, -1, 0), (0, 0), [0, 0, 0, 0, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11]),
    (1, (-1, -1), (-1, -1), (0, -1, -1, 0), (1, 1), list(range(1, 17))),
    (2, (0, 0), (0, 0), (0, 3, 1, 0), (0, 0), list(range(8, 24))),
    (2, (-1, -1), (-1, -1), (0, 2, 1, 0), (0, 0), [7, 0, 9, 10, 11, 0, 0, 0, 0, 0, 17, 18, 19, 0, 21, 22]),
], ids=["basic", "padded", "offsets", "across-images", "across-images-padded"])
def test_an_im2col_load_reads_the_pixels_the_hardware_does(images, lower, upper, coords, offsets, want):
    assert _tutorial_load(images, lower, upper, coords, offsets) == want


def test_a_first_pixel_outside_the_box_is_an_error():
    with pytest.raises(pc.EmulationError, match="is not a position of the box"):
        _tutorial_load(1, (-1, -1), (-1, -1), (0, 3, 0, 0), (0, 0))


@pytest.mark.parametrize("name,g,s,conv,tiles", IM2COL, ids=ids)
def test_every_im2col_tile_equals_numpys_im2col(name, g, s, conv, tiles):
    pc.make_im2col_copy(s, g, conv).verify(seed=5)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3), h=st.integers(1, 9), w=st.integers(1, 9), r=st.integers(1, 3), s=st.integers(1, 3),
       pad=st.integers(0, 2), stride=st.integers(1, 3), dilation=st.integers(1, 2), rows=st.sampled_from([16, 64]))
def test_any_2d_convolution_tile_equals_numpys_im2col(n, h, w, r, s, pad, stride, dilation, rows):
    try:
        conv = pc.ConvProblem(n, (h, w), 16, (r, s), padding=pad, stride=stride, dilation=dilation)
    except pc.PlanError:
        return                                    # the filter does not fit the padded image
    tile = pc.make_smem_tensor(pc.bf16, ComposedLayout(Swizzle(1, 3, 3), 0, Layout((rows, 16), (16, 1))))
    pc.make_im2col_copy(tile, activations(pc.bf16, conv), conv).verify(seed=n * h * w)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 3), h=st.integers(1, 6), w=st.integers(1, 6), c=st.integers(1, 3), r=st.integers(1, 3),
       s=st.integers(1, 3), pad=st.integers(0, 2), stride=st.integers(1, 2), dilation=st.integers(1, 2))
def test_numpys_im2col_is_the_convolutions_sum_of_taps(n, h, w, c, r, s, pad, stride, dilation):
    """The reference against the definition, element by element."""
    try:
        conv = pc.ConvProblem(n, (h, w), c, (r, s), padding=pad, stride=stride, dilation=dilation)
    except pc.PlanError:
        return
    x = np.random.default_rng(0).integers(1, 100, (n, h, w, c))
    a = pc.im2col_reference(conv, x)
    for m in range(conv.m):
        b, (p, q) = conv.pixel(m)
        for k in range(conv.k):
            (fr, fs), ch = conv.tap(k // c), k % c
            y, x_ = p * stride - pad + fr * dilation, q * stride - pad + fs * dilation
            assert a[m, k] == (x[b, y, x_, ch] if 0 <= y < h and 0 <= x_ < w else 0)


def test_the_map_holds_the_boxes_of_filter_bases_and_the_traversal_stride():
    _, g, s, conv, _ = IM2COL[1]
    m = pc.make_im2col_copy(s, g, conv).tensor_map
    assert (m.global_dims, m.lower, m.upper, m.element_strides) == ((128, 13, 11, 2), (-1, -1), (-1, -1), (1, 2, 2, 1))
    assert (m.pixels, m.channels, m.swizzle.name) == (64, 64, "128B")


def test_a_tile_index_becomes_the_first_pixels_base_and_the_taps_offsets():
    _, g, s, conv, _ = IM2COL[0]
    plan = pc.make_im2col_copy(s, g, conv)
    # m tile 1 starts at pixel 128 = image 1, row 0, column 8; k tile 5 is tap (1, 2)
    assert plan.coords(1, 5) == [((0, 7, -1, 1), (2, 1))]


@pytest.fixture(scope="module")
def compiled():
    plans = [pc.make_im2col_copy(s, g, conv) for _, g, s, conv, _ in IM2COL]
    source = '#include "pycute/tma.cuh"\n' + "".join(
        p.cuda(f"f{k}").replace('#include "pycute/tma.cuh"\n', "") +
        f'extern "C" __global__ void k{k}(const void* map, unsigned s, unsigned b, int mt, int kt) '
        f'{{ f{k}(map, s, b, mt, kt); }}\n' for k, p in enumerate(plans))
    return plans, compile_cuda(source, arch="sm_90a")


def test_the_generated_code_issues_the_plans_loads(compiled):
    plans, code = compiled
    for k, (plan, (name, *_, tiles)) in enumerate(zip(plans, IM2COL)):
        for mt, kt in tiles:
            thread = trace_entry(code.ptx, {0: 0x7000_0000_0000, 1: 0x400, 2: 8, 3: mt, 4: kt}, {}, f"k{k}")
            assert thread.tma == plan.stream(0x400, mt, kt), (name, mt, kt)


def test_each_load_assembles_to_one_im2col_utmaldg(compiled):
    plans, code = compiled
    hist = code.histogram()
    for rank in (3, 4, 5):
        assert hist.get(f"UTMALDG.{rank}D.IM2COL", 0) == sum(len(p.instructions) for p in plans
                                                                if p.tensor_map.rank == rank)


BF16 = activations(pc.bf16, pc.ConvProblem(2, (8, 8), 64, (3, 3), padding=1))


@pytest.mark.parametrize("tile,conv,match", [
    (pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), pc.ConvProblem(2, (8, 8), 48, (3, 3), padding=1),
     "the activations' extents are"),
    (pc.kmajor_smem_tensor(pc.bf16, 64, 128, "128B"), pc.ConvProblem(2, (8, 8), 64, (3, 3), padding=1),
     "A has 576 columns .9 taps x 64.; the tile's 128 must divide them"),
    (pc.make_smem_tensor(pc.bf16, Layout((64, 64), (1, 64))), pc.ConvProblem(2, (8, 8), 64, (3, 3), padding=1),
     "are not 64 rows of 64 contiguous elements"),
    (pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), pc.ConvProblem(2, (8, 8), 64, (3, 3), padding=1, stride=9),
     "a traversal stride is at most 8"),
])
def test_a_tile_or_problem_im2col_cannot_load_is_refused(tile, conv, match):
    with pytest.raises(pc.PlanError, match=match):
        pc.make_im2col_copy(tile, BF16, conv)


def test_a_tile_past_a_ctas_shared_memory_is_refused():
    conv = pc.ConvProblem(1, (64, 64), 64, (1, 2))
    tile = pc.make_smem_tensor(pc.bf16, Layout((1024, (64, 2)), (64, (1, 65536))))   # two 128 KiB column blocks
    with pytest.raises(pc.PlanError, match="a CTA has at most 232448 B"):
        pc.make_im2col_copy(tile, activations(pc.bf16, conv), conv)


def test_corners_outside_the_maps_range_are_refused():
    conv = pc.ConvProblem(1, (40, 40, 40), 16, (3, 3, 3), padding=20)
    tile = pc.make_smem_tensor(pc.f32, Layout((64, 16), (16, 1)))
    with pytest.raises(pc.PlanError, match=r"lie outside \[-16, 15\], the range a 5-D map holds"):
        pc.make_im2col_copy(tile, activations(pc.f32, conv), conv)


def test_a_k_tile_straddling_taps_is_refused():
    conv = pc.ConvProblem(1, (8, 8), 48, (2, 2))
    with pytest.raises(pc.PlanError, match="neither lie inside one tap's 48 channels nor cover whole taps"):
        pc.make_im2col_copy(pc.kmajor_smem_tensor(pc.bf16, 64, 32, "64B"), activations(pc.bf16, conv), conv)


# --- sm_100a: im2col::w and gather4 / scatter4 ---------------------------------------------------------------------

W_CONV = pc.ConvProblem(2, (5, 150), 64, (3, 3), padding=1)
W_ACT = activations(pc.bf16, W_CONV)


@pytest.mark.parametrize("mode,rows,halo,offset", [("w", 136, 8, 0), ("w", 64, 0, 2), ("w128", 160, 8, 1)])
def test_an_im2col_w_load_reads_the_row_and_its_halo_as_the_model_says(mode, rows, halo, offset):
    plan = pc.make_im2col_w_copy(pc.kmajor_smem_tensor(pc.bf16, rows, 64, "128B"), W_ACT, W_CONV, mode, halo, offset)
    assert plan.rows == rows and plan.expect_tx == rows * 128
    plan.verify()


@pytest.mark.parametrize("kwargs,match", [(dict(mode="w", w_halo=512), "wHalo 512 in \\[0, 512\\)"),
                                          (dict(mode="w128", w_halo=32), "wHalo 32 in \\[0, 32\\)"),
                                          (dict(mode="w", w_offset=32), "wOffset 32 in \\[0, 32\\)")])
def test_an_im2col_w_halo_or_offset_outside_the_ptx_ranges_is_refused(kwargs, match):
    with pytest.raises(pc.PlanError, match=match):
        pc.make_im2col_w_copy(pc.kmajor_smem_tensor(pc.bf16, 64, 64, "128B"), W_ACT, W_CONV, **kwargs)


def test_the_w_modes_need_a_64B_or_128B_swizzle():
    with pytest.raises(pc.PlanError, match="the W modes need the 64B or 128B swizzle, not 32B"):
        pc.make_im2col_w_copy(pc.kmajor_smem_tensor(pc.bf16, 64, 16, "32B"), activations(
            pc.bf16, pc.ConvProblem(1, (4, 64), 16, (3, 3), padding=1)), pc.ConvProblem(1, (4, 64), 16, (3, 3),
                                                                                      padding=1))


GATHER_ARRAY = pc.make_global_tensor(pc.f32, Layout((100, 64), (64, 1)))
GATHER_TILE = pc.make_smem_tensor(pc.f32, ComposedLayout(Swizzle(3, 2, 3), 0, Layout((4, 32), (32, 1))))


@pytest.mark.parametrize("direction", ["load", "store"])
def test_gather4_and_scatter4_move_the_four_named_rows(direction):
    plan = pc.make_tma_gather4(GATHER_TILE, GATHER_ARRAY) if direction == "load" else \
        pc.make_tma_gather4(GATHER_ARRAY, GATHER_TILE)
    assert plan.tensor_map.box == (32, 1) and plan.expect_tx == (512 if direction == "load" else 0)
    plan.verify()


def test_the_sm100a_modes_assemble_there_and_are_refused_on_sm90a():
    w = pc.make_im2col_w_copy(pc.kmajor_smem_tensor(pc.bf16, 136, 64, "128B"), W_ACT, W_CONV, "w", 8, 0)
    w128 = pc.make_im2col_w_copy(pc.kmajor_smem_tensor(pc.bf16, 160, 64, "128B"), W_ACT, W_CONV, "w128", 8, 1)
    gather, scatter = pc.make_tma_gather4(GATHER_TILE, GATHER_ARRAY), pc.make_tma_gather4(GATHER_ARRAY, GATHER_TILE)
    strip = '#include "pycute/tma.cuh"\n'
    source = (w.cuda("fw") + w128.cuda("fw2").replace(strip, "") + gather.cuda("fg").replace(strip, "") +
              scatter.cuda("fs").replace(strip, "") +
              'extern "C" __global__ void k(const void* m, unsigned s, unsigned b, int c, int x, int y, int n) '
              '{ fw(m, s, b, c, x, y, n); fw2(m, s, b, c, x, y, n); fg(m, s, b, c, x, y, n, 3); '
              'fs(m, s, c, x, y, n, 3); }')
    code = compile_cuda(source, arch="sm_100a")
    hist = code.histogram()
    assert (hist["UTMALDG.4D.W"], hist["UTMALDG.4D.W128"], hist["UTMALDG.2D.GATHER4"],
            hist["UTMASTG.2D.SCATTER4"]) == (1, 1, 1, 1)
    thread = trace_entry(code.ptx, {0: 0x7000_0000_0000, 1: 0x400, 2: 8, 3: 0, 4: -1, 5: 2, 6: 1}, {}, "k")
    assert thread.tma == (w.stream(0x400, 0, -1, 2, 1) + w128.stream(0x400, 0, -1, 2, 1) +
                          gather.stream(0x400, 0, -1, 2, 1, 3) + scatter.stream(0x400, 0, -1, 2, 1, 3))
    with pytest.raises(pc.CompileError, match="not supported on .target 'sm_90a'"):
        compile_cuda(source, arch="sm_90a")
