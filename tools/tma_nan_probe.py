"""What a load with CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA writes for out-of-bounds elements, per float
type: one JSON line per type with the distinct byte patterns found where the tile lies past the array."""
import json

import attrs
import numpy as np

import pycute as pc
from pycute import Layout
from pycute.compile import runtime
from pycute.harness.tma import TmaRoundTrip

gpu = runtime.Gpu()
for dtype in (pc.f32, pc.f16, pc.bf16, pc.f64, pc.tf32):
    g = pc.make_global_tensor(dtype, Layout((40, 64), (64, 1)))
    s = pc.make_smem_tensor(dtype, Layout((64, 32), (32, 1)))
    load = pc.make_tma_copy(s, g)
    load = attrs.evolve(load, tensor_map=attrs.evolve(load.tensor_map, oob_fill=1))
    rt = TmaRoundTrip(load, None)
    got, _ = rt.run(gpu, (0, 1))["smem"]
    elem = dtype.bits // 8
    rows = got[: 64 * 32 * elem].reshape(64, 32 * elem)
    oob = rows[40:]                                   # rows past the array's 40
    patterns = sorted({bytes(oob[r, c:c + elem]).hex() for r in range(oob.shape[0]) for c in range(0, 32 * elem, elem)})
    print(json.dumps({"dtype": dtype.name, "oob_patterns": patterns}))
