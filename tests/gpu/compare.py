"""The GPU tests' comparison of a read-back array with the expected one."""
import numpy as np


def assert_same(got, want, what: str, axes: tuple) -> None:
    """``got == want`` elementwise, else an AssertionError counting the differing ``what`` and naming up to four
    by their coordinates on ``axes`` (e.g. ``("cta", "lane", "col")``)."""
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)[:4]
        raise AssertionError(f"{int((got != want).sum())} {what} differ, e.g. " + ", ".join(
            " ".join(f"{a} {i}" for a, i in zip(axes, idx)) + f": {got[tuple(idx)]:#x} != {want[tuple(idx)]:#x}"
            for idx in bad))
