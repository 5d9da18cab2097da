"""Which tensor maps does the driver encode? One line of JSON per case (run on a machine with a GPU)."""
import json

import numpy as np

from pycute.compile import runtime
from pycute.arch.sm90.tma import TMA_SWIZZLES
from pycute.copy.tma.plan import TensorMapParams

gpu = runtime.Gpu()
buf = gpu.upload(np.zeros(1 << 22, dtype=np.uint8))
cases = []
for rank, dims, strides, box in [(1, (1000,), (), (b,)) for b in (8, 16, 32, 64, 128, 256)] + \
        [(2, (1000, 4), (4096,), (b, 2)) for b in (32, 64, 128, 256)] + [(1, (4096,), (), (256,))]:
    for dtype, code, elem in (("f32", 7, 4), ("u8", 0, 1)):
        p = TensorMapParams(dtype, code, dims, strides, box, (1,) * rank, TMA_SWIZZLES[0])
        try:
            p.encode(int(buf.handle))
            ok = True
        except Exception as e:
            ok = str(e).split(":")[0]
        cases.append({"rank": rank, "dtype": dtype, "box": box, "inner_bytes": box[0] * elem, "encoded": ok is True})
for c in cases:
    print(json.dumps(c))
