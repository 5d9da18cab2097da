"""Triton's tensor-descriptor (TMA) copy of a 2-D f32 array, timed with CUDA events in the run that times pycute's
kernels: the reference ``python -m perf.report --gpu`` holds pycute's TMA copy against. Imported only where Triton
and PyTorch are; every figure it returns comes with the copy checked bit for bit."""
from __future__ import annotations


def triton_tma_copy(rows: int, cols: int, block: tuple[int, int] = (128, 64), repeats: int = 5) -> dict:
    """``{"ms", "exact", "block", "api"}`` for Triton's descriptor load + store copy of a ``rows x cols`` f32
    array, one program per SM walking the tiles (persistent)."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def copy_kernel(src_desc, dst_desc, tiles0, tiles1, BM: tl.constexpr, BN: tl.constexpr):
        for g in range(tl.program_id(0), tiles0 * tiles1, tl.num_programs(0)):
            m, n = (g // tiles1) * BM, (g % tiles1) * BN
            dst_desc.store([m, n], src_desc.load([m, n]))

    src = torch.randint(-(1 << 30), 1 << 30, (rows, cols), dtype=torch.int32, device="cuda").view(torch.float32)
    dst = torch.zeros_like(src)
    from triton.tools.tensor_descriptor import TensorDescriptor
    src_desc, dst_desc = (TensorDescriptor.from_tensor(t, list(block)) for t in (src, dst))
    grid = (torch.cuda.get_device_properties(0).multi_processor_count,)
    args = (src_desc, dst_desc, rows // block[0], cols // block[1])
    copy_kernel[grid](*args, BM=block[0], BN=block[1])
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        copy_kernel[grid](*args, BM=block[0], BN=block[1])
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    exact = bool(torch.equal(src.view(torch.int32), dst.view(torch.int32)))
    return {"ms": min(times), "exact": exact, "block": list(block), "api": f"triton {triton.__version__} "
            f"TensorDescriptor (host-encoded tensor map)"}
