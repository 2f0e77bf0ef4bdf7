"""`std::sort` and `std::partial_sort` as libstdc++ runs them, for the order MXNet gives ties.

MXNet 1.9.1 sorts on the CPU (topk, sort, argsort: ordering_op-inl.h, TopKSort) by calling
``std::sort`` on the indices of each row - or ``std::partial_sort`` when it keeps fewer
than an eighth of them - comparing their values. Neither is stable: equal values come out
in the order libstdc++'s introsort (median-of-three quicksort, heapsort past a depth
limit, insertion sort for the last runs of 16) or its heap selection leaves them. Without
ties every sort agrees; with ties only the same steps give the same order, so these are
those steps, on Python lists (`less(i, j)` compares the values at indices i and j).
"""
from __future__ import annotations

from collections.abc import Callable

Less = Callable[[int, int], bool]

_THRESHOLD = 16  # libstdc++'s _S_threshold: runs this short are left to insertion sort


def std_sort(a: list[int], less: Less) -> None:
    """Sort `a` in place as libstdc++'s ``std::sort(a.begin(), a.end(), less)`` does."""
    if len(a) > 1:
        _introsort_loop(a, 0, len(a), 2 * (len(a).bit_length() - 1), less)
        _final_insertion_sort(a, 0, len(a), less)


def std_partial_sort(a: list[int], middle: int, less: Less) -> None:
    """Put the `middle` smallest of `a` first, sorted, as ``std::partial_sort`` does."""
    _heap_select(a, 0, middle, len(a), less)
    _sort_heap(a, 0, middle, less)


def _introsort_loop(a: list[int], first: int, last: int, depth: int, less: Less) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:  # quicksort went too deep: heapsort the rest
            _heap_select(a, first, last, last, less)
            _sort_heap(a, first, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def _partition_pivot(a: list[int], first: int, last: int, less: Less) -> int:
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, less)
    return _unguarded_partition(a, first + 1, last, first, less)


def _move_median_to_first(a: list[int], result: int, x: int, y: int, z: int,
                          less: Less) -> None:
    if less(a[x], a[y]):
        median = y if less(a[y], a[z]) else z if less(a[x], a[z]) else x
    else:
        median = x if less(a[x], a[z]) else z if less(a[y], a[z]) else y
    a[result], a[median] = a[median], a[result]


def _unguarded_partition(a: list[int], first: int, last: int, pivot: int,
                         less: Less) -> int:
    while True:
        while less(a[first], a[pivot]):
            first += 1
        last -= 1
        while less(a[pivot], a[last]):
            last -= 1
        if first >= last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _final_insertion_sort(a: list[int], first: int, last: int, less: Less) -> None:
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _insertion_sort(a: list[int], first: int, last: int, less: Less) -> None:
    for i in range(first + 1, last):
        if less(a[i], a[first]):
            a[first:i + 1] = [a[i]] + a[first:i]
        else:
            _linear_insert(a, i, less)


def _linear_insert(a: list[int], last: int, less: Less) -> None:
    value = a[last]
    while less(value, a[last - 1]):
        a[last] = a[last - 1]
        last -= 1
    a[last] = value


def _heap_select(a: list[int], first: int, middle: int, last: int, less: Less) -> None:
    _make_heap(a, first, middle, less)
    for i in range(middle, last):
        if less(a[i], a[first]):
            _pop_heap(a, first, middle, i, less)


def _sort_heap(a: list[int], first: int, last: int, less: Less) -> None:
    while last - first > 1:
        last -= 1
        _pop_heap(a, first, last, last, less)


def _make_heap(a: list[int], first: int, last: int, less: Less) -> None:
    length = last - first
    for parent in range((length - 2) // 2, -1, -1) if length >= 2 else ():
        _adjust_heap(a, first, parent, length, a[first + parent], less)


def _pop_heap(a: list[int], first: int, last: int, result: int, less: Less) -> None:
    value = a[result]
    a[result] = a[first]
    _adjust_heap(a, first, 0, last - first, value, less)


def _adjust_heap(a: list[int], first: int, hole: int, length: int, value: int,
                 less: Less) -> None:
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    # push_heap: bubble the value up from the hole
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value
