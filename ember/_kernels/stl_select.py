"""The order in which torch's CPU ``topk`` returns tied elements.

torch selects with the C++ standard library (libstdc++): ``partial_sort`` when
``k * 64 <= n``, else ``nth_element`` at ``k - 1`` followed (for ``sorted=True``) by a
``sort`` of the first ``k - 1``. None of these is stable, so among equal values the
indices come out in an order only a replay of the same steps reproduces. This module
replays them on a Python list of ``(value, index)`` pairs compared by value alone; the
caller uses it just for rows where ties decide the result (it is a Python loop).

Every function works in place on ``a[lo:hi]`` with ``less(x, y)`` the strict order.
"""
from __future__ import annotations

import math

_SORT_THRESHOLD = 16            # introsort hands ranges this small to insertion sort


def topk_order(pairs, k, less, sorted_=True):
    """Rearrange ``pairs`` as torch's topk does; its first ``k`` are the answer."""
    n = len(pairs)
    if k * 64 <= n:
        _partial_sort(pairs, 0, k, n, less)
    else:
        _nth_element(pairs, 0, k - 1, n, less)
        if sorted_ and k > 1:
            _sort(pairs, 0, k - 1, less)
    return pairs[:k]


# ---------------------------------------------------------------- selection

def _nth_element(a, lo, nth, hi, less):
    if lo == hi or nth == hi:
        return
    depth = 2 * (int(math.log2(hi - lo)))
    while hi - lo > 3:
        if depth == 0:
            _heap_select(a, lo, nth + 1, hi, less)
            a[lo], a[nth] = a[nth], a[lo]
            return
        depth -= 1
        cut = _partition_pivot(a, lo, hi, less)
        if cut <= nth:
            lo = cut
        else:
            hi = cut
    _insertion_sort(a, lo, hi, less)


def _partition_pivot(a, lo, hi, less):
    mid = lo + (hi - lo) // 2
    _median_to_first(a, lo, lo + 1, mid, hi - 1, less)
    return _unguarded_partition(a, lo + 1, hi, lo, less)


def _median_to_first(a, result, x, y, z, less):
    """Swap the median of positions ``x, y, z`` into ``result``."""
    if less(a[x], a[y]):
        if less(a[y], a[z]):
            pick = y
        elif less(a[x], a[z]):
            pick = z
        else:
            pick = x
    elif less(a[x], a[z]):
        pick = x
    elif less(a[y], a[z]):
        pick = z
    else:
        pick = y
    a[result], a[pick] = a[pick], a[result]


def _unguarded_partition(a, first, last, pivot, less):
    while True:
        while less(a[first], a[pivot]):
            first += 1
        last -= 1
        while less(a[pivot], a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


# ---------------------------------------------------------------- sorting

def _sort(a, lo, hi, less):
    if hi - lo < 2:
        return
    _introsort_loop(a, lo, hi, 2 * int(math.log2(hi - lo)), less)
    if hi - lo > _SORT_THRESHOLD:
        _insertion_sort(a, lo, lo + _SORT_THRESHOLD, less)
        for i in range(lo + _SORT_THRESHOLD, hi):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, lo, hi, less)


def _introsort_loop(a, lo, hi, depth, less):
    while hi - lo > _SORT_THRESHOLD:
        if depth == 0:
            _partial_sort(a, lo, hi, hi, less)
            return
        depth -= 1
        cut = _partition_pivot(a, lo, hi, less)
        _introsort_loop(a, cut, hi, depth, less)
        hi = cut


def _insertion_sort(a, lo, hi, less):
    for i in range(lo + 1, hi):
        if less(a[i], a[lo]):
            v = a[i]
            a[lo + 1:i + 1] = a[lo:i]
            a[lo] = v
        else:
            _linear_insert(a, i, less)


def _linear_insert(a, last, less):
    v = a[last]
    j = last - 1
    while less(v, a[j]):
        a[last] = a[j]
        last = j
        j -= 1
    a[last] = v


# ---------------------------------------------------------------- heaps

def _partial_sort(a, lo, mid, hi, less):
    _heap_select(a, lo, mid, hi, less)
    while mid - lo > 1:                      # sort_heap
        mid -= 1
        _pop_heap(a, lo, mid, mid, less)


def _heap_select(a, lo, mid, hi, less):
    _make_heap(a, lo, mid, less)
    for i in range(mid, hi):
        if less(a[i], a[lo]):
            _pop_heap(a, lo, mid, i, less)


def _make_heap(a, lo, hi, less):
    n = hi - lo
    if n < 2:
        return
    parent = (n - 2) // 2
    while True:
        _adjust_heap(a, lo, parent, n, a[lo + parent], less)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(a, lo, hi, result, less):
    v = a[result]
    a[result] = a[lo]
    _adjust_heap(a, lo, 0, hi - lo, v, less)


def _adjust_heap(a, lo, hole, n, v, less):
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if less(a[lo + child], a[lo + child - 1]):
            child -= 1
        a[lo + hole] = a[lo + child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        a[lo + hole] = a[lo + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2                 # push_heap
    while hole > top and less(a[lo + parent], v):
        a[lo + hole] = a[lo + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[lo + hole] = v
