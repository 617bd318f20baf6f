"""Regressions found by differential fuzzing of the autograd engine against torch 2.13:
hook return validation, post-accumulate hook results, freed saved results, batched grad
shape errors, grad_outputs type checks, set_grad_enabled argument type, vmap of a Function
without a vmap rule."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import autograd

torch = pytest.importorskip("torch")


def _x(m, shape=(3,)):
    return m.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape), dtype=m.float64,
                    requires_grad=True)


def _err(fn, m):
    with pytest.raises(Exception) as ei:
        fn(m)
    return type(ei.value), str(ei.value)


def _both(fn):
    return _err(fn, torch), _err(fn, ember)


def test_tensor_hook_changing_dtype_raises():
    def myhook(g):
        return g.float()

    def f(m):
        x = _x(m)
        x.register_hook(myhook)
        (x * 3).sum().backward()
    (tc, tm), (ec, em) = _both(f)
    assert ec is tc is RuntimeError
    assert em == tm == ("hook 'myhook' has changed the type of value (was torch.DoubleTensor "
                        "got torch.FloatTensor)")


@pytest.mark.parametrize("leaf", [True, False])
def test_tensor_hook_changing_size_raises(leaf):
    def f(m):
        x = _x(m)
        y = x if leaf else x * 2
        y.register_hook(lambda g: g[:2])
        (y * 3).sum().backward()
    (tc, tm), (ec, em) = _both(f)
    assert ec is tc is RuntimeError
    assert em == tm == "hook '<lambda>' has changed the size of value"


def test_tensor_hook_returning_non_tensor_raises_type_error():
    def f(m):
        x = _x(m)
        x.register_hook(lambda g: 3)
        (x * 3).sum().backward()
    (tc, tm), (ec, em) = _both(f)
    assert ec is tc is TypeError
    assert em == tm


def test_node_hooks_return_checks():
    def wrong_count(m):
        x = _x(m)
        y = x * 2
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10,))
        y.sum().backward()

    def not_tuple(m):
        x = _x(m)
        y = x * 2
        y.grad_fn.register_prehook(lambda go: go[0])
        y.sum().backward()

    def pre_size(m):
        x = _x(m)
        y = x * 2
        y.grad_fn.register_prehook(lambda go: (go[0][:2],))
        y.sum().backward()
    for fn in (wrong_count, not_tuple, pre_size):
        (tc, tm), (ec, em) = _both(fn)
        assert ec is tc
        assert em == tm


def test_node_post_hook_valid_replacement_still_works():
    for m in (torch, ember):
        x = _x(m)
        y = x * 2
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10, None))
        y.sum().backward()
        np.testing.assert_allclose(np.asarray(x.grad.tolist()), [20.0, 20.0, 20.0])


def test_post_accumulate_grad_hook_must_return_none():
    def f(m):
        x = _x(m)
        x.register_post_accumulate_grad_hook(lambda t: t.grad * 0)
        (x * 3).sum().backward()
    (tc, tm), (ec, em) = _both(f)
    assert ec is tc is RuntimeError
    assert em == tm == "Tensor post accumulate grad hooks should return None."


def test_saved_result_after_free_raises():
    def f(m):
        x = _x(m)
        y = x.exp()
        y.sum().backward()
        return y.grad_fn._saved_result
    (tc, tm), (ec, em) = _both(f)
    assert ec is tc is RuntimeError
    assert "Trying to backward through the graph a second time" in em


def test_saved_sym_sizes():
    x = _x(ember, (2, 3))
    y = x.sum(1, keepdim=True)
    assert y.grad_fn._saved_self_sym_sizes == (2, 3)


def test_grad_batched_shape_mismatch_message():
    def f(m):
        x = _x(m)
        m.autograd.grad(x * 2, x, m.ones(3, 2, dtype=m.float64), is_grads_batched=True)
    (tc, tm), (ec, em) = _both(f)
    assert ec is tc is RuntimeError
    assert em.startswith("If `is_grads_batched=True`, we interpret the first dimension")


def test_backward_non_tensor_gradient_list_type_error():
    def f(m):
        x = _x(m)
        (x * 2).backward([1.0, 2.0, 3.0])
    (tc, tm), (ec, em) = _both(f)
    assert ec is tc is TypeError
    assert em == tm == "gradients can be either Tensors or None, but got float"


def test_set_grad_enabled_requires_bool():
    def f(m):
        m.set_grad_enabled("yes")
    (tc, tm), (ec, em) = _both(f)
    assert ec is tc is TypeError
    assert em == tm
    assert ember.is_grad_enabled()


def test_vmap_function_without_vmap_rule_raises():
    def f(m):
        class F(m.autograd.Function):
            @staticmethod
            def forward(a):
                return a.sin()

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g
        m.func.vmap(F.apply)(_x(m, (2, 3)))
    (tc, tm), (ec, em) = _both(f)
    assert ec is tc is RuntimeError
    assert em == tm


def test_vmap_function_with_generated_rule_works():
    class F(autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(a):
            return a.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g
    x = ember.tensor(np.ones((2, 3)))
    np.testing.assert_allclose(ember.func.vmap(F.apply)(x).numpy(), np.sin(np.ones((2, 3))))
