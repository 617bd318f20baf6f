"""Regressions found diffing tensor-API programs (round 5b, session 10) run under torch and
under ``python -m ember.run``; each checked against torch."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(lib, fn):
    """``fn(lib)``'s result as values, or its exception's type name and message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(lib)
    except Exception as e:
        return type(e).__name__, str(e)
    if isinstance(r, lib.Tensor):
        return str(r.dtype).split(".")[-1], r.tolist()
    if isinstance(r, (tuple, list)):
        return type(r).__name__, [_outcome(lib, lambda _, x=x: x) for x in r]
    return type(r).__name__, r


def _same(fn):
    assert _outcome(ember, fn) == _outcome(torch, fn)


@pytest.mark.parametrize("make", [
    lambda L: L.tensor([L.tensor([1, 2]), L.tensor([3, 4])]),          # __index__ of 2 elements
    lambda L: L.tensor([L.tensor([1.5, 2.]), L.tensor([3., 4.])]),     # item() of 2 elements
    lambda L: L.tensor([L.tensor([1]), L.tensor([3])]),
    lambda L: L.tensor([L.tensor(1.5), 2], dtype=L.int64),
    lambda L: L.tensor([L.tensor(1.5), 2], dtype=L.bool),
    lambda L: L.tensor([L.tensor([1, 2]), L.tensor([3, 4])], dtype=L.float32),
    lambda L: L.tensor([L.tensor(True), 2]),
    lambda L: L.tensor([L.tensor(3), 2.5], dtype=L.uint8),
    lambda L: L.tensor([np.array(1.0), np.array(2.0)]),               # 0-d array first: len()
    lambda L: L.tensor([2, np.array(1.0)]),
    lambda L: L.tensor([np.array([1, 2]), np.array(3)]),
    lambda L: L.tensor(["a", "b"]),
    lambda L: L.tensor([[1], "ab"]),
    lambda L: L.tensor("a"),
    lambda L: L.tensor([1, "a"]),
], ids=range(15))
def test_tensor_from_lists_of_tensors_arrays_and_strings(make):
    _same(make)


def test_tensor_from_list_warnings_name_the_callers_line():
    def warned(lib, make):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            make(lib)
        return [(x.category.__name__, str(x.message).split(" (Triggered")[0],
                 x.filename == __file__) for x in w]
    a = np.array([1.0])
    for make in (lambda L: L.tensor([np.array([1.0]), np.array([2.0])]),   # one per array
                 lambda L: L.tensor([[a, a], [a, a]]),
                 lambda L: L.tensor([np.array([[1.0]])]),                  # and per row
                 lambda L: L.tensor([1, np.array(2.0)]),
                 lambda L: L.tensor([L.tensor(1.5, requires_grad=True), 2])):
        try:                          # both are once-a-process warnings
            ember.set_warn_always(True), torch.set_warn_always(True)
            assert warned(ember, make) == warned(torch, make)
        finally:
            ember.set_warn_always(False), torch.set_warn_always(False)
