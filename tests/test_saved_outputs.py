"""Note [saved outputs] (ember/autograd/graph.py): a node holds the outputs its backward
reads weakly, so a graph that never runs backward is freed by reference counting (no cycle
left for the garbage collector), and the backward still sees the values, the version
checks and the double-backward links it saw before. Values against torch."""
import gc

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _tensors_in_cycles_after(fn):
    """How many ember Tensors ``fn`` left in reference cycles (other garbage of the process,
    a test run's own, does not count)."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        fn()
        gc.collect()
        return sum(isinstance(o, ember.Tensor) for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def test_forward_without_backward_leaves_no_reference_cycle():
    lin = ember.nn.Linear(8, 8)
    x = ember.randn(4, 8)

    def forward():
        y = lin(x).tanh().softmax(-1).exp().sigmoid()
        ember.nn.functional.cross_entropy(y, ember.tensor([0, 1, 2, 3]))

    forward()                                   # first-call caches
    assert _tensors_in_cycles_after(forward) == 0


@pytest.mark.parametrize("op", ["tanh", "exp", "sigmoid", "sqrt"])
def test_backward_after_the_saved_output_is_gone(op):
    v = np.random.default_rng(0).random((3, 4)) + 0.5
    xs = [lib.tensor(v, requires_grad=True) for lib in (ember, torch)]
    for lib, x in zip((ember, torch), xs):
        y = getattr(x, op)()
        z = (y * y).sum()
        del y
        (g,) = lib.autograd.grad(z, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        x.grad_pair = (g.detach().numpy(), gg.numpy())
    np.testing.assert_allclose(xs[0].grad_pair[0], xs[1].grad_pair[0], rtol=1e-12)
    np.testing.assert_allclose(xs[0].grad_pair[1], xs[1].grad_pair[1], rtol=1e-12, atol=1e-12)


def test_in_place_change_of_a_saved_output_still_raises():
    x = ember.randn(3, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*output 0 of Exp,"):
        y.sum().backward()
    x = ember.randn(3, requires_grad=True)
    y = x.exp()
    v = y[1:]                      # a view keeps its base (and so the output) alive
    loss = y.sum()
    del y
    v.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_saved_result_attribute_and_retain_graph():
    x = ember.tensor([0.5, 1.0], requires_grad=True)
    y = x.tanh()
    assert y.grad_fn._saved_result is y
    loss = y.sum()
    del y
    r = loss.grad_fn.next_functions[0][0]._saved_result
    np.testing.assert_allclose(r.detach().numpy(), np.tanh([0.5, 1.0]))
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (1 - np.tanh([0.5, 1.0]) ** 2), rtol=1e-6)


def test_saved_number_operands_and_unneeded_saves_as_torch():
    """``grad_fn._saved_<arg>``: a number operand of mul/div is a 0-d tensor of the number's
    type (int64, float64, bool, complex128) as torch's, and a tensor saved only for another
    input's gradient that no input needs reads None."""
    torch = pytest.importorskip("torch")

    def seen(lib):
        a = lib.ones(3, requires_grad=True)
        b = lib.full((3,), 2.0)
        out = []
        for y in (a * 2, a * 2.5, a * True, a / 2, a / 2.5, a.div(2, rounding_mode="floor"),
                  a * b, b * a, a / b, b / a, a * (1 + 2j)):
            for n in ("_saved_self", "_saved_other"):
                v = getattr(y.grad_fn, n)
                out.append(None if v is None else (str(v.dtype), v.shape,
                                                   v.detach().numpy().tolist()))
        return out
    assert seen(ember) == seen(torch)
