import pytest

from pycute.layout import clear_caches


@pytest.fixture
def cold():
    """Call ``fn`` with every algebra cache cleared first, so the benchmark times the computation."""
    def run(fn):
        def call():
            clear_caches()
            return fn()
        return call
    return run
