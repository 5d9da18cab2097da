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


def median_us(fn, batch: int = 50, repeats: int = 15, setup=None) -> float:
    """Median over ``repeats`` of the mean time of ``batch`` calls of ``fn``, in microseconds, with garbage
    collection paused as ``timeit`` does; a ``setup`` called before each call has its own time subtracted."""
    gc.disable()
    try:
        samples = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(batch):
                if setup is not None:
                    setup()
                fn()
            samples.append((time.perf_counter() - t0) / batch)
        if setup is not None:
            t0 = time.perf_counter()
            for _ in range(batch * repeats):
                setup()
            overhead = (time.perf_counter() - t0) / (batch * repeats)
            samples = [t - overhead for t in samples]
    finally:
        gc.enable()
    return statistics.median(samples) * 1e6


def time_cases(batch: int = 400, repeats: int = 9) -> dict:
    """``{case: median microseconds}``; for pycute-tcgen05 every algebra cache is cleared before each call."""
    try:
        from pycute.layout import clear_caches
    except ImportError:            # CUTLASS's pycute has no caches
        clear_caches = None
    return {name: median_us(lambda fn=fn, args=args: fn(*args), batch, repeats, clear_caches)
            for name, (fn, args) in cases().items()}


if __name__ == "__main__":
    json.dump(time_cases(), sys.stdout)
