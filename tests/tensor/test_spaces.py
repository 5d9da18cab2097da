"""Memory space is a property of every tensor: global, shared, TMEM and register fragments."""
import pytest

import pycute as pc
from pycute import Layout, TCol, TLane


def test_every_tensor_kind_names_its_memory_space():
    g = pc.make_global_tensor(pc.f16, Layout((64, 32), (32, 1)))
    s = pc.make_smem_tensor(pc.f16, Layout((64, 32), (32, 1)))
    t = pc.make_tmem_tensor(pc.f16, Layout((64, 32), (TLane, TCol)), columns=32)
    r = pc.make_fragment(pc.f16, 64)
    assert [x.space for x in (g, s, t, r)] == ["global", "shared", "tmem", "register"]


def test_a_global_tensor_slices_into_regions_that_keep_their_offset():
    g = pc.make_global_tensor(pc.f32, Layout((64, 32), (32, 1)), base_align=128)
    sub = g[8:16, 4:12]
    assert sub.offset == 8 * 32 + 4 and sub.layout == Layout((8, 8), (32, 1)) and sub.base_align == 128
    assert repr(sub) == "gmem<f32>[260 o (8,8):(32,1)]"
    staged = pc.make_global_tensor(pc.f32, Layout((4, 8, 3), (8, 1, 32)))[:, :, pc.dynamic("k")]
    assert staged.at(k=2).offset == 64


@pytest.mark.parametrize("args,error,match", [
    ((pc.f32, Layout(4, 1), 24), pc.PlanError, "base_align 24 is not a power of two"),
    ((pc.f32, Layout(4, pc.TLane)), pc.PlanError, "has a non-integer stride"),
    ((pc.f32, "4:1"), TypeError, "the layout must be a Layout, got str"),
])
def test_bad_global_tensors_are_refused_naming_the_value(args, error, match):
    with pytest.raises(error, match=match):
        pc.make_global_tensor(*args)


def test_a_fragment_is_whole_warps_of_threads():
    assert pc.make_fragment(pc.f32, 256).warps == 8
    assert repr(pc.make_fragment(pc.f32, 32)) == "rmem<f32>[32 threads]"
    with pytest.raises(pc.PlanError, match="make_fragment: 48 threads are not whole warps"):
        pc.make_fragment(pc.f32, 48)
    with pytest.raises(TypeError, match="make_fragment: the layout must be a"):
        pc.make_fragment(pc.f32, 32, "x")


class _CudaArray:
    """What CuPy, Numba or PyTorch offer: the CUDA array interface (version 3)."""

    def __init__(self, shape, typestr, address, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (address, False),
                                         "strides": strides, "version": 3}


def test_a_cuda_array_becomes_a_global_tensor_with_its_layout_alignment_and_address():
    g = pc.global_tensor_from(_CudaArray((300, 96), "<f4", 0x7F00_0000_0200))
    assert (g.dtype, g.layout, g.base_align, g.address) == (pc.f32, Layout((300, 96), (96, 1)), 512, 0x7F00_0000_0200)
    padded = pc.global_tensor_from(_CudaArray((64, 100), "<f2", 0x1000, strides=(224, 2)))
    assert padded.layout == Layout((64, 100), (112, 1)) and padded.base_align == 1024
    plan = pc.make_tma_copy(pc.make_smem_tensor(pc.f32, Layout((64, 32), (32, 1))), g)
    assert plan.tensor_map.global_dims == (96, 300) and plan.gmem.address == 0x7F00_0000_0200


def test_a_dlpack_array_is_read_through_its_capsule_and_a_host_array_is_refused():
    np = pytest.importorskip("numpy")
    from pycute.tensor.gmem import dlpack_fields
    host = np.zeros((4, 6), dtype=np.float32)[:, 1:5]
    name, shape, strides, address, device = dlpack_fields(host)
    assert (name, shape, strides, device) == ("f32", (4, 4), (6, 1), 1) and address == host.ctypes.data
    with pytest.raises(pc.PlanError, match="DLPack device type 1, not a CUDA device"):
        pc.global_tensor_from(host)


@pytest.mark.parametrize("array,error,match", [
    (object(), TypeError, "expected an object with __cuda_array_interface__ or __dlpack__, got object"),
    (_CudaArray((4,), "<c8", 16), pc.PlanError, "typestr '<c8' has no pycute dtype"),
    (_CudaArray((4, 4), "<f4", 16, strides=(18, 4)), pc.PlanError, "byte strides"),
])
def test_an_array_pycute_cannot_describe_is_refused(array, error, match):
    with pytest.raises(error, match=match):
        pc.global_tensor_from(array)
