"""The algebra inputs timed against CUTLASS's pure-Python pycute, and the timing helper.

Only operations both libraries have, called with the same arguments (CUTLASS pycute's argument order), on inputs
both answer alike. ``cases(lib)`` builds them from either library's module.
"""
import gc
import statistics
import time


def cases(lib):
    """``{name: (function, args)}`` for ``lib`` (pycute, or CUTLASS's pycute loaded under another name)."""
    L = lib.Layout
    hier = L((12, (4, 8)), (59, (13, 1)))
    return {
        "composition_rank2": (lib.composition, (L((6, 2), (8, 2)), L((4, 3), (3, 1)))),
        "composition_rank3_hier": (lib.composition, (hier, (L(3, 4), L(8, 1)))),
        "coalesce_rank2": (lib.coalesce, (L((4, 8), (1, 4)),)),
        "coalesce_hier": (lib.coalesce, (L((2, (1, 6), (4, 2)), (1, (6, 2), (12, 48))),)),
        "filter": (lib.filter, (L((4, (2, 3), 8), (1, (0, 4), 12)),)),
        "complement": (lib.complement, (L(4, 2), 24)),
        "right_inverse": (lib.right_inverse, (L((4, (2, 4)), (8, (1, 2))),)),
        "left_inverse": (lib.left_inverse, (L((4, (2, 4)), (8, (1, 2))),)),
        "logical_divide_rank2": (lib.logical_divide, (L((8, 8), (1, 8)), L(4, 2))),
        "logical_divide_rank3": (lib.logical_divide, (L((4, 2, 3), (2, 1, 8)), L(4, 2))),
        "zipped_divide_hier": (lib.zipped_divide, (L((9, (4, 8)), (59, (13, 1))), (L(3, 3), L((2, 4), (1, 8))))),
        "tiled_divide": (lib.tiled_divide, (L((16, 8), (1, 16)), (L(4, 1), L(2, 1)))),
        "logical_product": (lib.logical_product, (L((2, 2), (1, 2)), L((2, 3), (3, 1)))),
        "zipped_product": (lib.zipped_product, (L((2, 2), (1, 2)), (L(3, 1), L(2, 1)))),
        "tiled_product": (lib.tiled_product, (L((4, 2), (2, 1)), (L(2, 1), L(3, 1)))),
        "slice_and_offset": (lib.slice_and_offset, ((None, (2, None)), hier)),
        "crd2idx_hier": (lib.crd2idx, ((7, (3, 5)), hier.shape, hier.stride)),
        "idx2crd_hier": (lib.idx2crd, (300, hier.shape)),
        "crd2crd": (lib.crd2crd, ((1, 5), (2, (2, 3)), (2, 6))),
    }


QUICK = False   # ``perf.report --quick``: one short sample each, for checking the report's tables, not its numbers


def median_us(fn, batch: int = 50, repeats: int = 15, setup=None) -> float:
    """Median over ``repeats`` of the mean time of ``batch`` calls of ``fn``, in microseconds, with garbage
    collection paused as ``timeit`` does. A ``setup`` (clearing the caches for a cold time) runs before each call
    outside the timed region, so every sample is a measurement of ``fn`` alone and never negative."""
    if QUICK:
        batch, repeats = max(1, batch // 50), 1
    gc.disable()
    try:
        samples = []
        for _ in range(repeats):
            if setup is None:
                t0 = time.perf_counter()
                for _ in range(batch):
                    fn()
                samples.append((time.perf_counter() - t0) / batch)
                continue
            total = 0.0
            for _ in range(batch):
                setup()
                t0 = time.perf_counter()
                fn()
                total += time.perf_counter() - t0
            samples.append(total / batch)
    finally:
        gc.enable()
    return statistics.median(samples) * 1e6
