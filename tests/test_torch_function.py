"""The ``__torch_function__`` protocol: tensor-likes, Tensor subclasses, the helpers in
``ember.overrides`` and ``TorchFunctionMode``; behaviour compared with torch where the
two can be run side by side."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import overrides
from helpers import torch

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")


def tensor_like_class(lib):
    """A NumPy-backed tensor-like that is not a Tensor (torch's ScalarTensor example)."""
    HANDLED = {}

    class Diagonal:
        def __init__(self, n, value):
            self.n, self.value = n, value
            self.calls = []

        def dense(self):
            return self.value * lib.eye(self.n)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            for a in args:
                if isinstance(a, Diagonal):
                    a.calls.append((func, types, args, dict(kwargs)))
            if func not in HANDLED or not all(issubclass(t, (lib.Tensor, Diagonal))
                                              for t in types):
                return NotImplemented
            return HANDLED[func](*args, **kwargs)

    def implements(f):
        def deco(impl):
            HANDLED[f] = impl
            return impl
        return deco

    @implements(lib.add)
    def add(input, other, alpha=1):
        a = input.dense() if isinstance(input, Diagonal) else input
        b = other.dense() if isinstance(other, Diagonal) else other
        return lib.add(a, b, alpha=alpha)

    @implements(lib.sum)
    def sum_(input, dim=None, keepdim=False, dtype=None):
        return input.n * input.value if dim is None else lib.sum(input.dense(), dim, keepdim)

    @implements(lib.mean)
    def mean(input, *args, **kwargs):
        return float(input.value) / input.n

    Diagonal.HANDLED = HANDLED
    return Diagonal


@pytest.fixture
def Diagonal():
    return tensor_like_class(ember)


# ------------------------------------------------------------------------------ tensor-likes

def test_tensor_like_intercepts_functions(Diagonal):
    d = Diagonal(3, 2.0)
    assert ember.sum(d) == 6.0
    func, types, args, kwargs = d.calls[-1]
    assert func is ember.sum and types == (Diagonal,) and args == (d,) and kwargs == {}
    r = ember.add(d, ember.ones(3, 3))
    assert isinstance(r, ember.Tensor) and r.tolist() == [[3, 1, 1], [1, 3, 1], [1, 1, 3]]
    func, types, args, kwargs = d.calls[-1]
    assert func is ember.add and args[0] is d and kwargs == {}
    # the tensor-like in second position, with a keyword argument
    r = ember.add(ember.zeros(3, 3), d, alpha=2)
    assert r.diagonal().tolist() == [4, 4, 4] if hasattr(r, "diagonal") else r[0, 0].item() == 4
    assert d.calls[-1][3] == {"alpha": 2}
    assert ember.mean(d) == 2.0 / 3
    assert ember.sum(d, 0).tolist() == [2.0, 2.0, 2.0]


@needs_torch
def test_tensor_like_matches_torch():
    TD = tensor_like_class(torch)
    ED = tensor_like_class(ember)
    for f in [lambda m, d: m.sum(d), lambda m, d: m.add(d, m.ones(2, 2)),
              lambda m, d: m.add(m.ones(2, 2), d, alpha=3), lambda m, d: m.mean(d)]:
        td, ed = TD(2, 5.0), ED(2, 5.0)
        tr, er = f(torch, td), f(ember, ed)
        if isinstance(tr, torch.Tensor):
            np.testing.assert_array_equal(er.numpy(), tr.numpy())
        else:
            assert er == tr
        (tf, tt, ta, tk), (ef, et, ea, ek) = td.calls[-1], ed.calls[-1]
        assert ef.__name__ == tf.__name__ and len(ea) == len(ta) and ek == tk


def test_not_implemented_raises_type_error(Diagonal):
    d = Diagonal(2, 1.0)
    with pytest.raises(TypeError, match="Multiple dispatch failed for 'torch.mul'; all "
                                        "__torch_function__ handlers returned NotImplemented"):
        ember.mul(d, 2)
    assert d.calls[-1][0] is ember.mul


@needs_torch
def test_not_implemented_message_like_torch():
    class T:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    msgs = []
    for lib in (torch, ember):
        with pytest.raises(TypeError) as info:
            lib.mul(T(), 2)
        msgs.append(str(info.value).replace("torch", "lib"))
    assert msgs[0] == msgs[1]


def test_tensor_like_in_tensor_list():
    seen = []

    class TL:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return "handled"
    x = ember.ones(2)
    assert ember.cat([x, TL()]) == "handled"
    assert seen == [ember.cat]
    assert ember.stack((TL(), x)) == "handled"


def test_plain_method_handler_warns():
    class PM:
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return ("pm", self)
    p = PM()
    with pytest.warns(UserWarning, match="as a plain method is deprecated"):
        r = ember.add(p, 1)
    assert r[0] == "pm" and r[1] is p


# ------------------------------------------------------------------------------ subclasses

class Logged(ember.Tensor):
    """A subclass that records every call and wraps tensor results back into itself."""
    log = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.log.append((func, types, args, dict(kwargs or {})))
        r = super().__torch_function__(func, types, args, kwargs)
        return cls._wrap(r)

    @classmethod
    def _wrap(cls, r):
        if isinstance(r, ember.Tensor) and not isinstance(r, cls):
            return cls(r)            # shares the data
        if isinstance(r, (tuple, list)):
            return type(r)(cls._wrap(x) for x in r)
        return r


@pytest.fixture
def logged():
    Logged.log = []
    return Logged(np.array([1.0, 2.0, 3.0]))


def test_subclass_sees_public_functions_and_methods(logged):
    r = ember.add(logged, ember.ones(3), alpha=2)
    func, types, args, kwargs = Logged.log[-1]
    assert func is ember.add and types == (Logged,) and kwargs == {"alpha": 2}
    assert type(r) is Logged and r.tolist() == [3.0, 4.0, 5.0]
    r = logged.add(1)
    assert Logged.log[-1][0] is ember.Tensor.add and Logged.log[-1][2][0] is logged
    r = logged + 1
    assert Logged.log[-1][0] is ember.Tensor.add and type(r) is Logged
    assert r.tolist() == [2.0, 3.0, 4.0]
    s = logged.sum()
    assert Logged.log[-1][0] is ember.Tensor.sum and type(s) is Logged and s.item() == 6.0
    r = ember.mul(ember.ones(3), logged)
    assert Logged.log[-1][0] is ember.mul and type(r) is Logged
    assert logged.add_(1) is logged and logged.tolist() == [2.0, 3.0, 4.0]


@needs_torch
def test_subclass_calls_match_torch():
    class TLogged(torch.Tensor):
        log = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.log.append((func, kwargs or {}))
            return super().__torch_function__(func, types, args, kwargs)
    t = torch.ones(3).as_subclass(TLogged)
    e = Logged(np.ones(3))
    Logged.log = []
    for f in [lambda m, x: m.add(x, 1, alpha=2), lambda m, x: x.add(x), lambda m, x: x.mul(2)]:
        f(torch, t)
        f(ember, e)
        (tf, tk), (ef, _, _, ek) = TLogged.log[-1], Logged.log[-1]
        assert tf.__name__ == ef.__name__ and tk == ek
        assert (tf is torch.Tensor.add or tf is torch.Tensor.mul) == \
            (ef is ember.Tensor.add or ef is ember.Tensor.mul)


def test_subclass_ordering_subclasses_first():
    order = []

    class Parent(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("parent")
            return NotImplemented

    class Child(Parent):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            order.append("child")
            assert types == (Child, Parent)
            return "child"

    p, c = Parent(np.ones(2)), Child(np.ones(2))
    assert ember.add(p, c) == "child"
    assert order == ["child"]


def test_default_handler_declines_foreign_types():
    """A plain subclass next to an unrelated overriding type: the default Tensor handler
    returns NotImplemented (as torch's does) and the other type handles the call."""
    class Plain(ember.Tensor):
        pass

    class Other:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "other"
    assert ember.add(Plain(np.ones(2)), Other()) == "other"


def test_disabled_inside_handler():
    depth = []

    class Reentrant(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            depth.append(func)
            with overrides._disabled_torch_function():
                return func(*args, **(kwargs or {}))
    r = Reentrant(np.ones(2)) * 3
    assert depth == [ember.Tensor.mul] and type(r) is ember.Tensor and r.tolist() == [3, 3]


def test_opting_out_with_disabled_impl():
    class Opt(ember.Tensor):
        __torch_function__ = overrides._disabled_torch_function_impl
    assert (Opt(np.ones(2)) + 1).tolist() == [2, 2]


def test_subclass_with_plain_method_handler():
    class PM(ember.Tensor):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return "pm"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = PM(np.ones(2)) + 1
    assert r == "pm" and any("plain method is deprecated" in str(w.message) for w in caught)


# ------------------------------------------------------------------------------ helpers

def test_has_torch_function(Diagonal):
    x = ember.ones(2)
    assert not overrides.has_torch_function((x, 1, "a", None))
    assert overrides.has_torch_function((x, Diagonal(1, 1.0)))
    assert overrides.has_torch_function((Logged(np.ones(1)),))
    assert overrides.has_torch_function_unary(Diagonal(1, 1.0))
    assert not overrides.has_torch_function_unary(x)
    assert overrides.has_torch_function_variadic(x, Diagonal(1, 1.0))
    with overrides._disabled_torch_function():
        assert not overrides.has_torch_function((Diagonal(1, 1.0),))
    assert overrides.is_tensor_like(x) and overrides.is_tensor_like(Diagonal(1, 1.0))
    assert not overrides.is_tensor_like(1) and not overrides.is_tensor_like([x])


@needs_torch
def test_has_torch_function_matches_torch():
    class TL:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return None

    class TSub(torch.Tensor):
        pass
    for e_args, t_args in [((ember.ones(1),), (torch.ones(1),)), ((TL(),), (TL(),)),
                           ((1, 2.0), (1, 2.0)),
                           ((Logged(np.ones(1)),), (torch.ones(1).as_subclass(TSub),))]:
        assert overrides.has_torch_function(e_args) == \
            torch.overrides.has_torch_function(t_args)


def my_func(x, y=None, scale=1.0):
    """A user function made overridable the torch way."""
    if overrides.has_torch_function((x, y)):
        return overrides.handle_torch_function(my_func, (x, y), x, y, scale=scale)
    return x * scale


def test_handle_torch_function(Diagonal):
    Diagonal.HANDLED[my_func] = lambda x, y=None, scale=1.0: ("mine", x.n, scale)
    d = Diagonal(4, 1.0)
    assert my_func(d, scale=2.0) == ("mine", 4, 2.0)
    func, types, args, kwargs = d.calls[-1]
    assert func is my_func and args == (d, None) and kwargs == {"scale": 2.0}
    assert my_func(ember.ones(2), scale=3.0).tolist() == [3.0, 3.0]
    del Diagonal.HANDLED[my_func]
    with pytest.raises(TypeError, match="no implementation found for "
                                        "'test_torch_function.my_func' on types that implement "
                                        "__torch_function__"):
        my_func(d)


def test_wrap_torch_function(Diagonal):
    @overrides.wrap_torch_function(lambda x, k=1: (x,))
    def shift(x, k=1):
        return x + k
    Diagonal.HANDLED[shift] = lambda x, k=1: f"shift {x.n} {k}"
    assert shift(Diagonal(2, 1.0), k=5) == "shift 2 5"
    assert shift(ember.zeros(1), k=5).tolist() == [5.0]


def test_overridable_and_ignored_functions():
    funcs = overrides.get_overridable_functions()
    assert ember.add in funcs[ember] and ember.Tensor.add in funcs[ember.Tensor]
    ignored = overrides.get_ignored_functions()
    assert ember.zeros in ignored and ember.tensor in ignored and ember.add not in ignored
    assert overrides.is_tensor_method_or_property(ember.Tensor.add)
    assert not overrides.is_tensor_method_or_property(ember.zeros)
    assert overrides.resolve_name(ember.add) == "torch.add"


# ------------------------------------------------------------------------------ modes

class Recorder(overrides.TorchFunctionMode):
    def __init__(self):
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append((func, types, len(args), dict(kwargs or {})))
        return func(*args, **(kwargs or {}))


def test_torch_function_mode_sees_calls():
    x = ember.ones(2)
    with Recorder() as rec:
        ember.add(x, x, alpha=2)
        x.add(x)
        x + 1
        ember.zeros(2)
        x.sum()
    funcs = [c[0] for c in rec.calls]
    assert funcs == [ember.add, ember.Tensor.add, ember.Tensor.add, ember.zeros, ember.Tensor.sum]
    assert rec.calls[0][3] == {"alpha": 2} and rec.calls[0][1] == ()
    assert ember.add(x, x).tolist() == [2, 2]            # inactive after exit
    assert len(rec.calls) == 5


@needs_torch
def test_torch_function_mode_like_torch():
    class TRecorder(torch.overrides.TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls.append((func.__name__, types, kwargs or {}))
            return func(*args, **(kwargs or {}))
    tx, ex = torch.ones(2), ember.ones(2)
    with TRecorder() as trec:
        torch.add(tx, tx, alpha=2)
        tx.mul(tx)
    with Recorder() as erec:
        ember.add(ex, ex, alpha=2)
        ex.mul(ex)
    assert [(c[0], c[2]) for c in trec.calls] == [(c[0].__name__, c[3]) for c in erec.calls]


def test_mode_can_replace_results_and_is_popped_inside():
    class Doubler(overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            r = func(*args, **(kwargs or {}))     # runs below the mode: not intercepted again
            return r * 2 if func is ember.add else r
    with Doubler():
        assert ember.add(ember.ones(1), 1).tolist() == [4.0]
        assert ember.mul(ember.ones(1), 3).tolist() == [3.0]


def test_mode_before_subclass_handlers(logged):
    with Recorder() as rec:
        logged + 1
    assert rec.calls[0][0] is ember.Tensor.add and rec.calls[0][1] == (Logged,)
    assert Logged.log and Logged.log[-1][0] is ember.Tensor.add


def test_mode_with_handle_torch_function():
    seen = []

    class M(overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return "mode"
    x = ember.ones(1)
    with M():
        assert overrides.has_torch_function((x,))
        assert my_func(x) == "mode"
        assert ember.ones(1) == "mode"          # factories are intercepted too, as in torch
    assert seen == [my_func, ember.ones]
