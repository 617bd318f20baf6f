"""Note [fast path]: the op fronts run the kernel themselves for plain tensors of one dtype.

Every feature layered on the dispatcher must still see each op (modes, __torch_function__,
call layers, determinism, anomaly mode, saved-tensor hooks), and results, dtypes and
gradients must be those of the dispatcher's path, i.e. torch's.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember._dispatch import Mode
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="torch is the oracle")

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64"]


def _pair(dtype, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.integers(1, 5, size=(2, 3)).astype(np.float64)
    t = torch.from_numpy(v).to(getattr(torch, dtype))
    return ember.from_numpy(t.to(torch.float64).numpy()).to(getattr(ember, dtype)), t


def _same(e, t):
    assert str(e.dtype) == str(t.dtype), (e.dtype, t.dtype)
    np.testing.assert_allclose(e.double().numpy() if not e.is_complex() else
                               e.to(ember.complex128).numpy(),
                               t.to(torch.complex128 if t.is_complex() else torch.float64)
                               .numpy(), rtol=1e-2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("other", ["same", 2, 2.5, True, "float64"])
@pytest.mark.parametrize("fn", [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b,
                                lambda a, b: a / b, lambda a, b: a == b,
                                lambda a, b: a.maximum(b) if not isinstance(b, (int, float))
                                else a.clamp(max=b)],
                         ids=["add", "mul", "sub", "div", "eq", "max"])
def test_binary_ops_match_torch_in_value_and_dtype(fn, dtype, other):
    e, t = _pair(dtype)
    if other == "same":
        eo, to = _pair(dtype, seed=1)
    elif other == "float64":
        eo, to = _pair("float64", seed=1)
    else:
        eo = to = other
    try:
        want = fn(t, to)
    except (RuntimeError, TypeError) as err:
        with pytest.raises(type(err)):
            fn(e, eo)
        return
    _same(fn(e, eo), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [lambda a: a.exp(), lambda a: a.relu(), lambda a: a.sum(),
                                lambda a: a.t(), lambda a: -a, lambda a: a.abs()],
                         ids=["exp", "relu", "sum", "t", "neg", "abs"])
def test_unary_ops_match_torch_in_value_and_dtype(fn, dtype):
    e, t = _pair(dtype)
    try:
        want = fn(t)
    except (RuntimeError, TypeError) as err:
        with pytest.raises(type(err)):
            fn(e)
        return
    _same(fn(e), want)


def test_a_view_made_on_the_fast_path_shares_memory_and_version():
    a = ember.zeros(2, 3)
    v = a.t()
    assert v._base is a and v.data_ptr() == a.data_ptr()
    a.add_(1)
    assert v._version == a._version == 1
    np.testing.assert_array_equal(v.numpy(), np.ones((3, 2)))


class _Log(Mode):
    def __init__(self):
        self.calls = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.calls.append(op.name)
        return op(*args, **kwargs)


def test_a_mode_sees_a_plus_b():
    a, b = ember.ones(4, 4), ember.ones(4, 4)
    with _Log() as m:
        a + b
        a.t()
    assert m.calls == ["add.Tensor", "t"]


def test_the_profiler_records_a_plus_b():
    a, b = ember.ones(4, 4), ember.ones(4, 4)
    with ember.profiler.profile() as prof:
        a + b
    assert "aten::add" in [e.name for e in prof.events()]


def test_vmap_over_a_plus_b():
    x, y = ember.randn(5, 3), ember.randn(3)
    r = ember.func.vmap(lambda a: a + y)(x)
    np.testing.assert_allclose(r.numpy(), x.numpy() + y.numpy(), rtol=1e-6)
    r = ember.func.vmap(lambda a, b: a * b)(x, x)
    np.testing.assert_allclose(r.numpy(), x.numpy() ** 2, rtol=1e-6)


def test_torch_function_subclass_intercepts_a_plus_b():
    seen = []

    class Traced(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})

    a = ember.ones(2).as_subclass(Traced)
    r = a + ember.ones(2)
    assert seen == ["add"] and type(r) is Traced      # (torch names it add too)
    np.testing.assert_array_equal(r.numpy(), [2.0, 2.0])


def test_parameters_take_the_fast_path_and_give_plain_tensors():
    p = ember.nn.Parameter(ember.ones(2, 2))
    r = p * 3
    assert type(r) is ember.Tensor and r.grad_fn.name() == "MulBackward0"
    r.sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.full((2, 2), 3.0))


def test_autocast_sees_matmul():
    a = ember.ones(2, 2)
    with ember.autocast("cpu"):
        assert (a @ a).dtype is ember.bfloat16
    assert (a @ a).dtype is ember.float32


def test_meta_tensors_still_route_through_their_layer():
    m = ember.ones(2, 3, device="meta")
    assert (m + m).is_meta and m.t().is_meta and (m * 2).shape == (2, 3)


def test_an_op_changed_after_import_is_seen_by_its_fronts():
    """The fronts' tables follow the record: marked nondeterministic, ``add`` alerts."""
    from ember._ops.core import add
    a = ember.ones(2)
    add.nondeterministic = True
    ember.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError, match="deterministic"):
            a + a
    finally:
        ember.use_deterministic_algorithms(False)
        add.nondeterministic = False
    np.testing.assert_array_equal((a + a).numpy(), [2.0, 2.0])


def test_gradients_through_the_fast_path_match_torch():
    v = np.array([0.5, -1.5, 2.0])
    x, tx = ember.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    w, tw = ember.tensor(v[::-1].copy()), torch.tensor(v[::-1].copy())
    for f in (lambda a, b: (a * b * 3 - a / 2 + 1).exp().sum(),
              lambda a, b: (a.relu() * a + b).t().sum() if a.ndim == 2 else (a * a + b).sum(),
              lambda a, b: (2 - a).abs().mean()):
        x.grad = None
        tx.grad = None
        f(x, w).backward()
        f(tx, tw).backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_in_place_change_of_a_saved_tensor_is_detected():
    x = ember.ones(3, requires_grad=True)
    z = x * 1
    w = z * z
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()


def test_saved_tensor_hooks_see_fast_path_ops():
    packed = []
    x = ember.ones(3, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t,
                                                  lambda t: t):
        y = (x * x).sum()
    assert len(packed) == 2
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_anomaly_mode_sees_fast_path_ops():
    x = ember.zeros(1, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ember.autograd.detect_anomaly():
            y = x / x
            with pytest.raises(RuntimeError, match="returned nan values"):
                y.backward()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("other", ["same", 3, 2.5, "row"])
@pytest.mark.parametrize("fn", [lambda a, b: a.add_(b), lambda a, b: a.sub_(b, alpha=2),
                                lambda a, b: a.mul_(b), lambda a, b: a.div_(b),
                                lambda a, b: a.__iadd__(b)],
                         ids=["add_", "sub_alpha", "mul_", "div_", "iadd"])
def test_in_place_ops_match_torch(fn, dtype, other):
    e, t = _pair(dtype)
    if other == "same":
        eo, to = _pair(dtype, seed=1)
    elif other == "row":                        # broadcast: the dispatcher's path
        eo, to = _pair(dtype, seed=1)
        eo, to = eo[:1], to[:1]
    else:
        eo = to = other
    try:
        fn(t, to)
    except (RuntimeError, TypeError) as err:
        with pytest.raises(type(err)):
            fn(e, eo)
        return
    r = fn(e, eo)
    assert r is e and e._version == 1
    _same(e, t)


def test_in_place_fast_path_keeps_autograd_rules():
    leaf = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.add_(1)
    with ember.no_grad():
        leaf.add_(1)                            # an optimizer's step
    assert leaf.grad_fn is None and leaf._version == 1
    y = ember.ones(2)
    y.mul_(leaf)                                # recorded: the other operand requires grad
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [1.0, 1.0])
    view = ember.ones(3)[1:]
    view.add_(1)                                # a view: the dispatcher bumps its root
    assert view._version == 1
    with pytest.raises(RuntimeError):
        ember.ones(1).expand(3).add_(1)         # read-only memory


@pytest.mark.parametrize("fn", [lambda a: a + a, lambda a: a * a, lambda a: a - a * 2],
                         ids=["add", "mul", "sub"])
def test_an_input_given_twice_shares_its_edge(fn):
    shared, grads = [], []
    for lib in (ember, torch):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = fn(x)
        first, second = y.grad_fn.next_functions
        shared.append((first[0] is second[0], first[0] is None))
        y.sum().backward()
        grads.append(x.grad.numpy())
    assert shared[0] == shared[1]
    np.testing.assert_allclose(grads[0], grads[1])


def test_nodes_that_save_nothing_and_nodes_of_several_outputs():
    x, tx = ember.tensor([1.0, 2.0, 4.0], requires_grad=True), \
        torch.tensor([1.0, 2.0, 4.0], requires_grad=True)
    y, ty = x + 1, tx + 1                       # saves nothing: alpha only
    assert y.grad_fn._saved_alpha == ty.grad_fn._saved_alpha == 1
    y.retain_grad()
    ty.retain_grad()
    (y * 3).sum().backward(retain_graph=True)
    (ty * 3).sum().backward(retain_graph=True)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy())
    (s, m), (ts, tm) = ember.std_mean(x), torch.std_mean(tx)
    assert s.grad_fn is m.grad_fn and s.grad_fn._num_outputs == 2
    x.grad, tx.grad = None, None
    m.backward()                                # no gradient reaches std: zeros stand in
    tm.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
