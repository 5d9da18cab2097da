"""Algebra inputs timed against CUTLASS's pure-Python pycute: only functions both libraries have, with the same
arguments. Run as a script it prints ``{case: microseconds}`` for whichever ``pycute`` is importable, which is how
the report times CUTLASS's copy in a separate process (both libraries are imported as ``pycute``)."""
import gc
import json
import statistics
import sys
import time


def cases():
    from pycute import Layout as L, coalesce, complement, composition, logical_divide, logical_product, \
        right_inverse, zipped_divide
    return {
        "composition_rank2": (composition, (L((6, 2), (8, 2)), L((4, 3), (3, 1)))),
        "composition_rank3_hier": (composition, (L((12, (4, 8)), (59, (13, 1))), (L(3, 4), L(8, 1)))),
        "coalesce_rank2": (coalesce, (L((4, 8), (1, 4)),)),
        "coalesce_hier": (coalesce, (L((2, (1, 6), (4, 2)), (1, (6, 2), (12, 48))),)),
        "complement": (complement, (L(4, 2), 24)),
        "logical_divide_rank2": (logical_divide, (L((8, 8), (1, 8)), L(4, 2))),
        "logical_divide_rank3": (logical_divide, (L((4, 2, 3), (2, 1, 8)), L(4, 2))),
        "zipped_divide_hier": (zipped_divide, (L((9, (4, 8)), (59, (13, 1))), (L(3, 3), L((2, 4), (1, 8))))),
        "logical_product": (logical_product, (L((2, 2), (1, 2)), L((2, 3), (3, 1)))),
        "right_inverse": (right_inverse, (L((4, (2, 4)), (8, (1, 2))),)),
    }


def time_cases(batch: int = 400, repeats: int = 9) -> dict:
    """Median microseconds per call, garbage collection paused as ``timeit`` does; for pycute-tcgen05 every
    algebra cache is cleared before each call (and that clearing's own time subtracted)."""
    gc.disable()
    try:
        return _time_cases(batch, repeats)
    finally:
        gc.enable()


def _time_cases(batch, repeats):
    try:
        from pycute.layout import clear_caches
    except ImportError:
        clear_caches = None
    out = {}
    for name, (fn, args) in cases().items():
        samples = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(batch):
                if clear_caches is not None:
                    clear_caches()
                fn(*args)
            samples.append(time.perf_counter() - t0)
        if clear_caches is not None:
            t0 = time.perf_counter()
            for _ in range(batch * repeats):
                clear_caches()
            overhead = (time.perf_counter() - t0) / repeats
            samples = [s - overhead for s in samples]
        out[name] = statistics.median(samples) / batch * 1e6
    return out


if __name__ == "__main__":
    json.dump(time_cases(), sys.stdout)
