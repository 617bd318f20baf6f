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
        if r.is_floating_point():              # to float32's digits
            return str(r.dtype).split(".")[-1], np.round(r.double().numpy(), 6).tolist()
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


_M = [[1., 5., 2.], [3., 4., 0.]]


@pytest.mark.parametrize("call", [
    lambda L, t: t.sum(axis=0), lambda L, t: L.sum(t, axis=1, keepdims=True),
    lambda L, t: t.mean(axis=1), lambda L, t: t.amax(axis=0, keepdims=True),
    lambda L, t: t.argmax(axis=1), lambda L, t: L.all(t > 0, axis=0),
    lambda L, t: t.max(axis=0), lambda L, t: L.min(t, axis=1, keepdims=True),
    lambda L, t: t.prod(axis=1), lambda L, t: t.std(axis=0), lambda L, t: L.var(t, axis=1),
    lambda L, t: t.median(axis=0), lambda L, t: L.cat([t, t], axis=1),
    lambda L, t: L.stack([t, t], axis=1), lambda L, t: t.unbind(axis=1),
    lambda L, t: t.cumsum(axis=1), lambda L, t: t.softmax(axis=0),
    lambda L, t: t.logsumexp(axis=1, keepdims=True), lambda L, t: t.sort(axis=0),
    lambda L, t: t.index_select(axis=0, index=L.tensor([1])),
    lambda L, t: t.gather(axis=1, index=L.tensor([[1], [0]])),
    lambda L, t: L.diff(t, axis=0), lambda L, t: t.unsqueeze(axis=0),
    lambda L, t: t.sum(0, axis=1), lambda L, t: t.sum(dim=0, axis=1),     # both: refused
    lambda L, t: t.sum(0, keepdim=True, keepdims=False),
], ids=range(26))
def test_numpy_keyword_names_axis_and_keepdims(call):
    _same(lambda L: call(L, L.tensor(_M)))


def test_numpy_keyword_names_leave_required_arguments_required():
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'dim'"):
        ember.ones(2, 2).gather(index=ember.tensor([[0]]))
    with pytest.raises(TypeError, match="arguments: 'dim' and 'index'"):
        ember.ones(2, 2).index_select()
