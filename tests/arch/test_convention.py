"""The calling convention as data: who calls a generated function and how many threads, its comment line and the
line read back."""
import pytest
from hypothesis import given, strategies as st

import pycute as pc
from pycute.arch.convention import Convention, parse_convention

CONVENTIONS = st.one_of(
    st.builds(Convention, st.sampled_from(["any", "elected"]), st.just(1), st.sampled_from(["address", "none"])),
    st.builds(Convention, st.just("warp"), st.just(32), st.sampled_from(["address", "none"])),
    st.builds(Convention, st.just("warpgroup"), st.just(128), st.sampled_from(["address", "none"])),
    st.builds(Convention, st.just("warps"), st.integers(1, 32).map(lambda w: 32 * w), st.sampled_from(["address", "none"])),
    st.builds(Convention, st.just("threads"), st.integers(1, 1024), st.sampled_from(["address", "none"])))


@given(CONVENTIONS)
def test_a_convention_line_reads_back_as_the_convention(convention):
    assert parse_convention(convention.comment()) == convention


@pytest.mark.parametrize("convention, line", [
    (Convention("elected", 1), "// pycute: called by one elected thread; shared operands are 32-bit shared addresses"),
    (Convention("warp", 32), "// pycute: called by all 32 lanes of a warp; shared operands are 32-bit shared addresses"),
    (Convention("warpgroup", 128, "none"), "// pycute: called by all 128 threads of a warpgroup; no shared operands"),
    (Convention("warps", 128, "none"), "// pycute: called by all 32 lanes of each of 4 warps; no shared operands"),
    (Convention("threads", 96), "// pycute: called by each of 96 threads; shared operands are 32-bit shared addresses"),
])
def test_the_line_says_who_calls_in_words(convention, line):
    assert convention.comment() == line


@pytest.mark.parametrize("caller, threads, message", [("warp", 31, "a 'warp' call is made by 32 thread"),
                                                      ("elected", 2, "a 'elected' call is made by 1 thread"),
                                                      ("warps", 48, "whole warps, not 48 threads"),
                                                      ("threads", 0, "at least one thread, not 0")])
def test_a_thread_count_the_caller_cannot_have_is_refused(caller, threads, message):
    with pytest.raises(pc.PlanError, match=message):
        Convention(caller, threads)


def test_a_line_that_is_not_a_convention_is_refused():
    with pytest.raises(pc.PlanError, match="not a pycute convention line"):
        parse_convention("// called by anyone")
    with pytest.raises(pc.PlanError, match="the caller or the shared operands are not one pycute states"):
        parse_convention("// pycute: called by a warp; shared operands are pointers")
