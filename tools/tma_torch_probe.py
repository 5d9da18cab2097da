"""TMA on arrays PyTorch made: global_tensor_from reads bf16 and f32 tensors (through DLPack, which PyTorch offers
beside the CUDA array interface that calls bf16 '<V2'); the round-trip kernel loads each tile of one and stores it
into the other. One JSON line per case."""
import json

import numpy as np
import torch

import pycute as pc
from pycute.compile import runtime
from pycute.harness.tma import TmaRoundTrip

gpu = runtime.Gpu()
for name, make, tile in (
        ("bf16 via DLPack", lambda: torch.randn(300, 128, device="cuda").to(torch.bfloat16),
         pc.kmajor_smem_tensor(pc.bf16, 128, 64, "128B")),
        ("f32 via DLPack", lambda: torch.randn(300, 96, device="cuda"),
         pc.make_smem_tensor(pc.f32, pc.Layout((64, 32), (32, 1))))):
    x = make()
    y = torch.zeros_like(x)
    gx, gy = pc.global_tensor_from(x), pc.global_tensor_from(y)
    load, store = pc.make_tma_copy(tile, gx), pc.make_tma_copy(gy, tile)
    rt = TmaRoundTrip(load, store)
    maps = [gpu.upload(np.frombuffer(runtime.tensor_map_bytes(p.tensor_map.encode(g.address)), dtype=np.uint8))
            for p, g in ((load, gx), (store, gy))]
    dump = gpu.upload(np.zeros(rt.smem_bytes, dtype=np.uint8))
    status = gpu.upload(np.zeros(1, dtype=np.uint32))
    kernel = gpu.kernel(rt.compile(), "tma_roundtrip")
    tiles = [(t0, t1) for t0 in range(-(-x.shape[0] // load.tile_shape[0]))
             for t1 in range(-(-x.shape[1] // load.tile_shape[1]))]
    for t in tiles:
        gpu.launch(kernel, maps[0], maps[1], dump, status, *(np.int32(v) for v in t), grid=1, block=128,
                   cluster=1, dynamic_smem=rt.smem_bytes + 1024)
    torch.cuda.synchronize()
    print(json.dumps({"case": name, "dtype": gx.dtype.name, "layout": repr(gx.layout), "base_align": gx.base_align,
                      "tiles": len(tiles), "copied_exactly": bool(torch.equal(x, y))}))
