"""``ember.ops.profiler._record_function_enter`` / ``_record_function_exit``: torch's
profiler ops, over ``record_function``; the FX profiling tracer of torch's examples."""
import pytest

import ember
from ember.fx import Tracer, GraphModule

torch = pytest.importorskip("torch")


def test_enter_exit_records_a_range():
    ops = ember.ops.profiler
    with ember.profiler.profile() as prof:
        handle = ops._record_function_enter("my_range", "arg")
        ember.ones(2) + 1
        ops._record_function_exit.default(handle)
    names = [e.name for e in prof.events()]
    assert names[0] == "my_range" and "aten::add" in names
    assert handle.dtype == ember.uint8 and handle.dim() == 1
    assert ops._record_function_enter("x", None) is not None   # outside any profiler


def test_exit_with_a_closed_handle_raises():
    handle = ember.ops.profiler._record_function_enter("once")
    ember.ops.profiler._record_function_exit(handle)
    with pytest.raises(RuntimeError):
        ember.ops.profiler._record_function_exit(handle)


class ProfilerTracer(Tracer):
    """torch's FX example: record_function ranges traced as the profiler ops."""

    def trace(self, root, concrete_args=None):
        record_function = ember.autograd.profiler.record_function
        enter, exit_ = record_function.__enter__, record_function.__exit__
        tracer = self

        def fake_enter(rf):
            rf._fx_ctx = tracer.create_proxy("call_function",
                                             ember.ops.profiler._record_function_enter,
                                             (rf.name,), {})
            return rf._fx_ctx

        def fake_exit(rf, *exc):
            ember.ops.profiler._record_function_exit(rf._fx_ctx)

        record_function.__enter__, record_function.__exit__ = fake_enter, fake_exit
        try:
            return super().trace(root, concrete_args)
        finally:
            record_function.__enter__, record_function.__exit__ = enter, exit_


class Foo(ember.nn.Module):
    def forward(self, x):
        with ember.autograd.profiler.record_function("foo"):
            return ember.relu(x)


def test_fx_profiling_tracer():
    module = Foo()
    graph = ProfilerTracer().trace(module)
    targets = [n.target for n in graph.nodes if n.op == "call_function"]
    assert ember.ops.profiler._record_function_enter in targets
    assert ember.ops.profiler._record_function_exit in targets
    traced = GraphModule(module, graph)
    x = ember.randn(3)
    with ember.profiler.profile() as prof:
        out = traced(x)
    assert ember.equal(out, ember.relu(x))
    assert "foo" in [e.name for e in prof.events()]
