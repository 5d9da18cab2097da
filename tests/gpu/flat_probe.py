"""Run one cp.async, bulk or DSMEM case of tests/copy/flat_cases.py on the GPU in this (child) process and print a
JSON verdict: ``python -m tests.gpu.flat_probe NAME``. A faulting case kills only this process's CUDA context."""
import json
import sys

from pycute.compile import runtime
from pycute.copy.bulk import make_bulk_copy
from pycute.copy.cp_async import make_cp_async_copy
from pycute.copy.dsmem import make_dsmem_copy
from pycute.harness.bulk import BulkRoundTrip, DsmemRoundTrip
from pycute.harness.cp_async import CpAsyncRoundTrip

from tests.copy.flat_cases import BULK, CP_ASYNC, DSMEM
from tests.gpu.tma_probe import first_difference


def main(name: str) -> dict:
    gpu = runtime.Gpu()
    out: dict = {"case": name, "runs": []}
    if any(c[0] == name for c in CP_ASYNC):
        _, gm, sm, options, tiles = next(c for c in CP_ASYNC if c[0] == name)
        rt = CpAsyncRoundTrip(make_cp_async_copy(sm, gm, **options))
        for k, tile in enumerate(tiles):
            r = rt.run(gpu, tile, seed=k)
            out["runs"].append({"tile": list(tile), "spins": r["spins"], "smem": first_difference(*r["smem"])})
    elif any(c[0] == name for c in BULK):
        _, gm, sm, tiles = next(c for c in BULK if c[0] == name)
        rt = BulkRoundTrip(make_bulk_copy(sm, gm), make_bulk_copy(gm, sm))
        for k, tile in enumerate(tiles):
            r = rt.run(gpu, tile, seed=k)
            out["runs"].append({"tile": list(tile), "spins": r["spins"], "smem": first_difference(*r["smem"]),
                                "array": first_difference(*r["array"])})
    else:
        _, src, dst, clusters = next(c for c in DSMEM if c[0] == name)
        plan = make_dsmem_copy(dst, src)
        for k, ctas in enumerate(clusters):
            r = DsmemRoundTrip(plan, ctas).run(gpu, seed=k)
            out["runs"].append({"ctas": ctas, "spins": r["spins"], "smem": first_difference(*r["smem"])})
    return out



def dsmem_to_self() -> dict:
    """Evidence for the refusal of a DSMEM copy to the issuing CTA itself (PTX: the destination is another CTA):
    what the H200 does when a kernel does it anyway."""
    plan = make_dsmem_copy(DSMEM[0][2], DSMEM[0][1])
    rt = DsmemRoundTrip(plan, 2)
    source = rt.source().replace("(rank + 1u) % 2u", "rank").replace("1u << 26", "1u << 22")
    from pycute.compile.nvrtc import compile_cuda
    import numpy as np
    gpu = runtime.Gpu()
    d_img = gpu.upload(rt.images(0))
    d_dump = gpu.upload(np.zeros(2 * rt.region, dtype=np.uint8))
    d_status = gpu.upload(np.zeros(2, dtype=np.uint32))
    kernel = gpu.kernel(compile_cuda(source, arch="sm_90a"), "dsmem_roundtrip")
    gpu.launch(kernel, d_img, d_dump, d_status, grid=2, block=128, cluster=2, dynamic_smem=rt.region + 1024)
    dump, images = gpu.download(d_dump, np.uint8, 2 * rt.region), rt.images(0)
    copied = all(np.array_equal(dump[c * rt.region + rt.src_bytes:c * rt.region + rt.src_bytes + 8192],
                                images[c * rt.region:c * rt.region + 8192]) for c in range(2))
    return {"case": "dsmem-to-self", "spins": gpu.download(d_status, np.uint32, 2).tolist(), "copied": copied}


if __name__ == "__main__":
    print(json.dumps(dsmem_to_self() if sys.argv[1] == "dsmem-to-self" else main(sys.argv[1])))
