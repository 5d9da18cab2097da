"""The memo tables: equal operands hit, memory stays bounded by what the entries hold, mutable operands are never
remembered."""
import pycute as pc
from pycute import Layout
from pycute.memo import MAX_ENTRIES, MAX_WEIGHT, last_call, memo, weight


def test_weight_counts_the_integers_an_entry_holds():
    assert weight(7) == 1
    assert weight((1, (2, 3))) == 1 + 1 + (1 + 2)
    assert weight(Layout((4, (2, 8)), (1, (4, 8)))) == 2 * (1 + 1 + 3)


def test_equal_operands_return_the_remembered_result():
    first = pc.logical_divide(Layout((8, 8), (1, 8)), Layout(4, 2))
    assert pc.logical_divide(Layout((8, 8), (1, 8)), Layout(4, 2)) is first


def test_many_large_layouts_stay_within_the_weight_bound():
    calls = []

    @memo
    def op(layout):
        calls.append(1)
        return layout
    for k in range(3000):                            # 3000 distinct 64-mode layouts: 768k integers if all kept
        op(Layout((2,) * 63 + (k + 1,)))
    info = op.cache_info()
    assert info.weight <= MAX_WEIGHT and info.entries < 3000 and len(calls) == 3000


def test_entries_are_bounded_and_the_oldest_go_first():
    @memo
    def op(n):
        return n
    for n in range(MAX_ENTRIES + 100):
        op(n)
    assert op.cache_info().entries == MAX_ENTRIES


def test_a_single_huge_entry_is_not_kept():
    @memo
    def op(layout):
        return layout
    op(Layout((2,) * (MAX_WEIGHT // 4)))
    assert op.cache_info().entries == 0


def test_lists_are_never_remembered_by_last_call():
    @last_call
    def total(xs):
        return sum(xs)
    xs = [1, 2]
    assert total(xs) == 3
    xs.append(4)
    assert total(xs) == 7


def test_clear_caches_empties_every_table():
    pc.composition(Layout((4, 8), (8, 1)), Layout(4, 2))
    pc.clear_caches()
    assert pc.composition.cache_info().entries == 0
