"""The dispatcher: modes, promotion through ops, out=, in-place checks, per-thread state."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
from ember._dispatch import Mode
from helpers import torch


class LoggingMode(Mode):
    def __init__(self):
        self.calls = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.calls.append(op.name)
        return op(*args, **kwargs)


def test_mode_sees_every_op_including_backward():
    x = ember.ones(3, requires_grad=True)
    with LoggingMode() as m:
        y = (x * 2).exp().sum()
        y.backward()
    assert m.calls[:3] == ["mul.Tensor", "exp", "sum"]
    # the backward rules run through the dispatcher too
    assert len(m.calls) > 3
    np.testing.assert_allclose(x.grad._data, 2 * np.exp(2 * np.ones(3)), rtol=1e-6)


def test_modes_nest_and_the_active_mode_is_popped_inside_its_handler():
    outer, inner = LoggingMode(), LoggingMode()
    a = ember.ones(2)
    with outer:
        with inner:
            a + a
    assert inner.calls == ["add.Tensor"]
    assert outer.calls == ["add.Tensor"]     # re-dispatched by inner to the next layer
    assert ember._state.state.modes == ()


def test_mode_can_change_results():
    class Doubling(Mode):
        def __ember_dispatch__(self, op, args, kwargs):
            r = op(*args, **kwargs)
            return r * 2 if op.name == "add.Tensor" else r
    with Doubling():
        r = ember.ones(2) + ember.ones(2)
    np.testing.assert_array_equal(r._data, [4.0, 4.0])


def test_modes_and_grad_mode_are_per_thread():
    seen = {}

    def worker():
        seen["grad"] = ember.is_grad_enabled()
        seen["modes"] = ember._state.state.modes
    with ember.no_grad(), LoggingMode():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen == {"grad": True, "modes": ()}


@pytest.mark.skipif(torch is None, reason="torch oracle not installed")
@pytest.mark.parametrize("lhs,rhs", [
    (("float32", (3,)), ("float64", ())),      # 0-dim tensor does not upcast
    (("int32", (3,)), ("int64", ())),
    (("int64", (3,)), ("float64", ())),        # higher category wins: default dtype
    (("uint8", (3,)), ("int8", (3,))),
    (("bool", (3,)), ("bool", (3,))),
    (("float16", (3,)), ("float32", (3,))),
    (("int16", (3,)), 2.5),
    (("uint8", (3,)), 3),
    (("bool", (3,)), 3),
    (("float32", (3,)), 2),
    (("float64", (3,)), 1j),
    (("int32", ()), ("int8", (3,))),
])
def test_binary_promotion_matches_torch(lhs, rhs):
    def make(spec, lib):
        if not isinstance(spec, tuple):
            return spec
        dt, shape = spec
        arr = np.ones(shape, dtype=dt)
        return ember.from_numpy(arr) if lib is ember else torch.from_numpy(arr)
    for op in ("add", "mul"):
        e = getattr(ember, op)(make(lhs, ember), make(rhs, ember))
        t = getattr(torch, op)(make(lhs, torch), make(rhs, torch))
        assert str(e.dtype) == str(t.dtype), (op, lhs, rhs)
    e = ember.div(make(lhs, ember), make(rhs, ember))
    t = torch.div(make(lhs, torch), make(rhs, torch))
    assert str(e.dtype) == str(t.dtype), ("div", lhs, rhs)


def test_out_argument_resizes_and_casts():
    out = ember.empty(0, dtype=ember.float64)
    r = ember.add(ember.ones(2, 3), ember.ones(3), out=out)
    assert r is out and out.shape == (2, 3) and out.dtype is ember.float64
    np.testing.assert_array_equal(out._data, 2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.add(ember.ones(2), ember.ones(2), out=ember.empty(2, dtype=ember.int64))


def test_out_argument_refuses_autograd():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
        ember.mul(x, 2.0, out=ember.empty(2))


def test_inplace_cast_and_shape_checks():
    i = ember.ones(3, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        i.add_(1.5)
    a = ember.ones(3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        a.add_(ember.ones(2, 3))
    a.add_(ember.ones(3))
    assert a._version == 1
    np.testing.assert_array_equal(a._data, 2)


def test_inplace_on_expanded_tensor_is_refused():
    e = ember.ones(1, 3).expand(4, 3)
    with pytest.raises(RuntimeError):
        e.add_(1)


def test_bad_argument_types_raise_type_error():
    with pytest.raises(TypeError, match="add"):
        ember.add(ember.ones(2), "x")


def test_numpy_arrays_are_accepted_as_constants():
    r = ember.ones(3) + np.arange(3, dtype=np.float32)
    assert isinstance(r, ember.Tensor)
    np.testing.assert_array_equal(r._data, [1, 2, 3])


def test_fast_and_general_paths_agree():
    x = ember.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    a = x * x                                   # fast path
    b = ember.mul(x, x.double()).float()        # general path (mixed dtypes)
    np.testing.assert_array_equal(a._data, b._data)
    assert (x * 2).dtype is ember.float32 and (x * 2.5).dtype is ember.float32
    xi = ember.from_numpy(np.arange(3))
    assert (xi * 2).dtype is ember.int64 and (xi * 2.5).dtype is ember.float32
