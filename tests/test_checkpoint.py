"""``ember.utils.checkpoint``: recomputation in backward, same gradients as without it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.utils.checkpoint as C
from ember import autograd

from test_autograd import same, T, A, B, V  # noqa: F401

torch = pytest.importorskip("torch")
import torch.utils.checkpoint  # noqa: E402

MODES = [True, False]


def ckpt_of(m):
    return C if m is ember else torch.utils.checkpoint


def block(x, w):
    h = (x @ w).exp()
    return (h * h) @ w.transpose(0, 1) - x


def run_model(m, use_reentrant, *, checkpointed=True):
    x = T(m, A, True)
    w = T(m, np.eye(4)[:, :2] * 0.3 + 0.1, True)
    if checkpointed:
        y = ckpt_of(m).checkpoint(block, x, w, use_reentrant=use_reentrant)
        y = ckpt_of(m).checkpoint(block, y, w, use_reentrant=use_reentrant)
    else:
        y = block(block(x, w), w)
    (y * y).sum().backward()
    return y, x.grad, w.grad


@pytest.mark.parametrize("use_reentrant", MODES)
def test_same_gradients_as_without_checkpoint(use_reentrant):
    plain = run_model(ember, None, checkpointed=False)
    ck = run_model(ember, use_reentrant)
    for a, b in zip(plain, ck):
        np.testing.assert_allclose(a.detach()._data, b.detach()._data, rtol=1e-12)
    same(lambda m: run_model(m, use_reentrant))


@pytest.mark.parametrize("use_reentrant", MODES)
def test_forward_is_recomputed_in_backward(use_reentrant):
    def f(m):
        calls = []

        def fn(x):
            calls.append(m.is_grad_enabled())
            return (x * x).exp()
        x = T(m, V, True)
        y = ckpt_of(m).checkpoint(fn, x, use_reentrant=use_reentrant)
        n_fwd = len(calls)
        y.sum().backward()
        return n_fwd, calls, x.grad
    r = same(f)
    assert r[1][0] == 1 and len(r[1][1]) == 2


@pytest.mark.parametrize("use_reentrant", MODES)
def test_intermediates_are_not_kept(use_reentrant):
    """The checkpointed region's nodes hold no saved tensors (non-reentrant: placeholders;
    reentrant: the region ran under no_grad and made no nodes)."""
    from ember.autograd.graph import OpNode, _Packed
    x = ember.tensor(V, requires_grad=True)
    y = C.checkpoint(lambda a: (a * a).exp(), x, use_reentrant=use_reentrant)
    nodes, stack = [], [y.grad_fn]
    while stack:
        n = stack.pop()
        if n is not None:
            nodes.append(n)
            stack.extend(nx for nx, _ in n.next_functions)
    op_nodes = [n for n in nodes if isinstance(n, OpNode)]
    if use_reentrant:
        assert not op_nodes and y.grad_fn.name() == "CheckpointFunctionBackward"
    else:
        assert op_nodes
        for n in op_nodes:
            assert not n.saved_versions
            assert all(not isinstance(a, ember.Tensor) for a in n.args if a is not None)
            assert n.result is None or isinstance(n.result, _Packed)


def test_non_reentrant_with_autograd_grad_and_kwargs():
    def f(m):
        x = T(m, A, True)
        w = T(m, B, True)
        y = ckpt_of(m).checkpoint(lambda a, b, scale=1.0: (a @ b).exp() * scale, x, w,
                                  use_reentrant=False, scale=3.0)
        return m.autograd.grad(y.sum(), (x, w))
    same(f)


def test_reentrant_rejects_grad_and_inputs():
    def f(m):
        x = T(m, V, True)
        y = ckpt_of(m).checkpoint(lambda a: a.exp(), x, use_reentrant=True)
        return m.autograd.grad(y.sum(), x)
    same(f)

    def g(m):
        x = T(m, V, True)
        y = ckpt_of(m).checkpoint(lambda a: a.exp(), x, use_reentrant=True)
        y.sum().backward(inputs=[x])
    same(g)


def test_argument_errors():
    same(lambda m: ckpt_of(m).checkpoint(lambda a, k=1: a * k, T(m, V, True), k=2,
                                         use_reentrant=True))
    same(lambda m: ckpt_of(m).checkpoint(lambda a: a, T(m, V, True), use_reentrant=True,
                                         debug=True))
    same(lambda m: ckpt_of(m).checkpoint(lambda a: a, T(m, V, True), use_reentrant=False,
                                         determinism_check="bad"))


def test_use_reentrant_default_warns():
    for m in (ember, torch):
        with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
            y = ckpt_of(m).checkpoint(lambda a: a * 2, T(m, V, True))
        y.sum().backward()


@pytest.mark.parametrize("use_reentrant", MODES)
def test_parameters_captured_by_closure_get_gradients(use_reentrant):
    def f(m):
        w = T(m, B, True)
        x = T(m, A, True)
        y = ckpt_of(m).checkpoint(lambda a: (a @ w).exp(), x, use_reentrant=use_reentrant)
        y.sum().backward()
        return x.grad, w.grad
    same(f)


@pytest.mark.parametrize("use_reentrant", MODES)
def test_non_tensor_args_and_multiple_outputs(use_reentrant):
    def f(m):
        x = T(m, V, True)

        def fn(a, k, name):
            return a * k, (a * a).sum(), name
        a, s, name = ckpt_of(m).checkpoint(fn, x, 3.0, "n", use_reentrant=use_reentrant)
        (a.sum() + s).backward()
        return a, s, name, x.grad
    same(f)


def test_no_input_requires_grad_warns():
    for m in (ember, torch):
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            ckpt_of(m).checkpoint(lambda a: a * 2, T(m, V), use_reentrant=True)


@pytest.mark.parametrize("use_reentrant", MODES)
def test_checkpoint_under_no_grad(use_reentrant):
    def f(m):
        x = T(m, V, True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with m.no_grad():
                y = ckpt_of(m).checkpoint(lambda a: a * 2, x, use_reentrant=use_reentrant)
        return y, y.requires_grad
    same(f)


@pytest.mark.parametrize("use_reentrant", MODES)
def test_retain_graph_and_double_backward_call(use_reentrant):
    def f(m):
        x = T(m, V, True)
        y = ckpt_of(m).checkpoint(lambda a: (a * a).exp(), x, use_reentrant=use_reentrant)
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        return x.grad
    same(f)


def test_non_reentrant_determinism_check():
    calls = [0]

    def fn(a):
        calls[0] += 1
        return (a * a).exp() if calls[0] == 1 else a.exp()
    x = ember.tensor(V, requires_grad=True)
    y = C.checkpoint(fn, x, use_reentrant=False)
    with pytest.raises(C.CheckpointError, match="A different number of tensors was saved"):
        y.sum().backward()

    def fn2(a):
        calls[0] += 1
        b = a if calls[0] == 1 else a.reshape(2, 2)
        return (b * b).sum()
    calls[0] = 0
    y = C.checkpoint(fn2, x, use_reentrant=False)
    with pytest.raises(C.CheckpointError, match="different metadata than during the forward"):
        y.backward()


def test_rng_state_is_restored_when_recomputing():
    for use_reentrant in MODES:
        x = ember.tensor(V, requires_grad=True)
        noise = []

        def fn(a):
            r = ember.rand(4, dtype=a.dtype)
            noise.append(r.clone())
            return a * r * a
        y = C.checkpoint(fn, x, use_reentrant=use_reentrant)
        y.sum().backward()
        np.testing.assert_array_equal(noise[0]._data, noise[1]._data)
        np.testing.assert_allclose(x.grad._data, 2 * V * noise[0]._data)


@pytest.mark.parametrize("use_reentrant", MODES)
def test_checkpoint_sequential(use_reentrant):
    def f(m):
        x = T(m, V, True)
        w = T(m, np.ones(4) * 0.5, True)
        fs = [lambda a: a * w, lambda a: a.exp(), lambda a: a * a, lambda a: a - 1,
              lambda a: a * w]
        y = ckpt_of(m).checkpoint_sequential(fs, 2, x, use_reentrant=use_reentrant)
        y.sum().backward()
        return y, x.grad, w.grad
    same(f)
    same(lambda m: ckpt_of(m).checkpoint_sequential([lambda a: a], 1, T(m, V, True),
                                                    use_reentrant=use_reentrant, bad=1))


def test_nested_non_reentrant_checkpoint():
    def f(m):
        x = T(m, V, True)
        ck = ckpt_of(m).checkpoint

        def inner(a):
            return (a * a).exp()

        def outer(a):
            return ck(inner, a * 2, use_reentrant=False) * a
        y = ck(outer, x, use_reentrant=False)
        y.sum().backward()
        return x.grad
    same(f)


def test_importable_like_torch():
    import ember.utils
    from ember.utils.checkpoint import checkpoint, checkpoint_sequential  # noqa: F401
    assert ember.utils.checkpoint is C
    with pytest.raises(AttributeError):
        ember.utils.no_such_module
    assert autograd._is_checkpoint_valid()
