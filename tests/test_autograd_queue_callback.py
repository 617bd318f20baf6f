"""Variable._execution_engine.queue_callback: final callbacks of a backward call, as torch."""
import pytest

import ember

torch = pytest.importorskip("torch")


def _trace(lib):
    engine = lib.autograd.Variable._execution_engine
    x = lib.ones(2, requires_grad=True)
    order = []

    def hook(g):
        order.append("hook")
        engine.queue_callback(lambda: (order.append(("cb1", x.grad is None)),
                                       engine.queue_callback(lambda: order.append("cb2"))))
        return g
    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    order.append(x.grad.tolist())
    return order


def test_callbacks_run_after_the_graph_and_may_queue_more():
    assert _trace(ember) == _trace(torch) == ["hook", ("cb1", False), "cb2", [2.0, 2.0]]


def test_outside_backward_is_refused():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="Final callbacks can only be installed during "
                                               "backward pass."):
            lib.autograd.Variable._execution_engine.queue_callback(lambda: None)


def test_a_failing_callback_fails_backward():
    def boom():
        raise ValueError("boom")
    x = ember.ones(2, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: ember.autograd.Variable._execution_engine.queue_callback(boom))
    with pytest.raises(ValueError, match="boom"):
        y.sum().backward()
