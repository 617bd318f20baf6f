"""jit.trace / trace_module against torch.jit.trace on the same code: graph structure
(node kinds in order, module hierarchy), outputs and gradients equal eager, TracerWarning,
check_trace, strict, keyword inputs, errors."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
# torch 2.13 marks jit as deprecated on every call
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def kinds(graph):
    return [n.kind() if callable(n.kind) else n.kind for n in graph.nodes()]


def op_kinds(graph):
    """Node kinds without constants and list construction (ember's op schemas spell some
    defaults out where torch's do not)."""
    return [k for k in kinds(graph) if k not in ("prim::Constant", "prim::ListConstruct")]


def t2e(t):
    return ember.tensor(t.detach().numpy())


def copy_weights(tmod, emod):
    emod.load_state_dict({k: t2e(v) for k, v in tmod.state_dict().items()})


def quiet_trace(lib, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.jit.trace(*args, **kwargs)


# --------------------------------------------------------------------------- models

def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))


def cnn(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)

        def forward(self, x):
            return lib.relu(self.bn(self.conv(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.pool = nn.MaxPool2d(2)
            self.head = nn.Sequential(nn.Linear(64, 10), nn.ReLU(), nn.Linear(10, 3))

        def forward(self, x):
            y = self.pool(self.block(x))
            return self.head(lib.flatten(y, 1))
    return Net().eval()


def with_params(lib):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(3, 4)
            self.fc2 = nn.Linear(4, 2)
            self.register_buffer("scale", lib.ones(2) * 3)

        def forward(self, x):
            return self.fc2(lib.relu(self.fc1(x))) * self.scale + self.fc1.bias.sum()
    return M()


def shared(lib):
    nn = lib.nn

    class S(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            return self.lin(x), self.lin(x * 2)

        def other(self, x):
            return self.lin(x) - 1
    return S()


# --------------------------------------------------------------------------- functions

def fn_ops(lib):
    def f(x, y):
        z = x * 2 + y
        return z.sum(0), lib.cat([x, y]).relu()
    return f


def test_trace_function_graph_and_outputs():
    a, b = np.random.randn(3, 2).astype("float32"), np.random.randn(3, 2).astype("float32")
    tf = quiet_trace(torch, fn_ops(torch), (torch.tensor(a), torch.tensor(b)))
    ef = ember.jit.trace(fn_ops(ember), (ember.tensor(a), ember.tensor(b)))
    assert isinstance(ef, ember.jit.ScriptFunction)
    assert op_kinds(ef.graph) == op_kinds(tf.graph)
    assert [str(v.type).split("(")[0] for v in ef.graph.inputs()] == ["Float", "Float"]
    # new inputs run the recorded graph (not the example values)
    a2, b2 = np.random.randn(3, 2).astype("float32"), np.random.randn(3, 2).astype("float32")
    for got, want in zip(ef(ember.tensor(a2), ember.tensor(b2)),
                         fn_ops(ember)(ember.tensor(a2), ember.tensor(b2))):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_trace_function_gradients_equal_eager():
    def f(x, w):
        return (x @ w).tanh().sum()
    x0, w0 = np.random.randn(4, 3), np.random.randn(3, 2)
    tf = ember.jit.trace(f, (ember.tensor(x0), ember.tensor(w0)))
    xs = [ember.tensor(x0, requires_grad=True) for _ in range(2)]
    ws = [ember.tensor(w0, requires_grad=True) for _ in range(2)]
    tf(xs[0], ws[0]).backward()
    f(xs[1], ws[1]).backward()
    np.testing.assert_allclose(xs[0].grad.numpy(), xs[1].grad.numpy())
    np.testing.assert_allclose(ws[0].grad.numpy(), ws[1].grad.numpy())


def test_mlp_outputs_and_parameter_gradients():
    tm, em = mlp(torch), mlp(ember)
    copy_weights(tm, em)
    x = np.random.randn(4, 5).astype("float32")
    et = ember.jit.trace(em, ember.tensor(x))
    tt = quiet_trace(torch, tm, torch.tensor(x))
    assert type(et).__name__ == "TopLevelTracedModule"
    assert isinstance(et, ember.jit.ScriptModule)
    assert kinds(et.graph) == kinds(tt.graph)
    assert kinds(getattr(et, "0").graph) == kinds(getattr(tt, "0").graph)
    # parameters are shared with the original
    assert getattr(et, "0").weight is em[0].weight
    x2 = np.random.randn(6, 5).astype("float32")
    out = et(ember.tensor(x2))
    np.testing.assert_allclose(out.detach().numpy(), tm(torch.tensor(x2)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    out.pow(2).sum().backward()
    g_traced = [p.grad.numpy().copy() for p in em.parameters()]
    em.zero_grad()
    em(ember.tensor(x2)).pow(2).sum().backward()
    for g, p in zip(g_traced, em.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6)
    assert set(et.state_dict()) == set(em.state_dict())


def test_cnn_module_hierarchy_matches_torch():
    tm, em = cnn(torch), cnn(ember)
    copy_weights(tm, em)
    x = np.random.randn(2, 3, 8, 8).astype("float32")
    tt = quiet_trace(torch, tm, torch.tensor(x))
    et = ember.jit.trace(em, ember.tensor(x))
    assert kinds(et.graph) == kinds(tt.graph)            # GetAttr x3, CallMethod ... flatten
    assert kinds(et.block.graph) == kinds(tt.block.graph)
    assert kinds(et.head.graph) == kinds(tt.head.graph)
    assert [n.attrs.get("name") for n in et.graph.nodes() if n.kind == "prim::GetAttr"] == \
        [n.s("name") for n in tt.graph.nodes() if n.kind() == "prim::GetAttr"]
    assert "aten::linear" in op_kinds(et.inlined_graph)
    assert "prim::CallMethod" not in kinds(et.inlined_graph)
    x2 = np.random.randn(3, 3, 8, 8).astype("float32")
    np.testing.assert_allclose(et(ember.tensor(x2)).detach().numpy(),
                               tm(torch.tensor(x2)).detach().numpy(), rtol=1e-4, atol=1e-5)
    assert repr(et) .startswith("Net(\n  original_name=Net\n  (block): Block(")


def test_parameter_getattrs_and_buffers_like_torch():
    tm, em = with_params(torch), with_params(ember)
    copy_weights(tm, em)
    x = np.random.randn(2, 3).astype("float32")
    tt = quiet_trace(torch, tm, torch.tensor(x))
    et = ember.jit.trace(em, ember.tensor(x))
    assert op_kinds(et.graph) == op_kinds(tt.graph)
    assert [n.attrs.get("name") for n in et.graph.nodes() if n.kind == "prim::GetAttr"] == \
        [n.s("name") for n in tt.graph.nodes() if n.kind() == "prim::GetAttr"]
    assert kinds(et.fc1.graph) == kinds(tt.fc1.graph)
    np.testing.assert_allclose(et(ember.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5)
    # a buffer changed in place is read at run time (a GetAttr, not a constant)
    em.scale.fill_(1.0)
    np.testing.assert_allclose(et(ember.tensor(x)).detach().numpy(),
                               em(ember.tensor(x)).detach().numpy(), rtol=1e-6)


def test_submodule_called_twice_gets_forward1_and_trace_module():
    tm, em = shared(torch), shared(ember)
    copy_weights(tm, em)
    x = np.random.randn(1, 2).astype("float32")
    tt = quiet_trace(torch, tm, torch.tensor(x))
    et = ember.jit.trace(em, ember.tensor(x))
    names = [n.attrs["name"] for n in et.graph.nodes() if n.kind == "prim::CallMethod"]
    assert names == [n.s("name") for n in tt.graph.nodes() if n.kind() == "prim::CallMethod"]
    assert names == ["forward", "forward1"]
    assert op_kinds(et.graph) == op_kinds(tt.graph)
    for got, want in zip(et(ember.tensor(x)), tm(torch.tensor(x))):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    em2 = shared(ember)
    mt = ember.jit.trace_module(em2, {"forward": ember.tensor(x), "other": ember.tensor(x)})
    np.testing.assert_allclose(mt.other(ember.tensor(x)).detach().numpy(),
                               em2.other(ember.tensor(x)).detach().numpy())
    assert "prim::CallMethod" in kinds(mt.other.graph)


# --------------------------------------------------------------------------- warnings

CONVERSIONS = {
    "item": lambda x: x * x.sum().item(),
    "bool": lambda x: x * 2 if x.sum() > 0 else x,
    "int": lambda x: x * int(x[0]),
    "float": lambda x: x * float(x[0]),
    "tolist": lambda x: x * x.tolist()[0],
    "numpy": lambda x: x * x.numpy()[0],
}


def _tracer_warnings(lib, fn, x):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lib.jit.trace(fn, x, check_trace=False)
    return [str(m.message) for m in w if m.category.__name__ == "TracerWarning"]


@pytest.mark.parametrize("how", sorted(CONVERSIONS))
def test_tracer_warning_on_python_values(how):
    fn = CONVERSIONS[how]
    want = _tracer_warnings(torch, fn, torch.ones(3))
    got = _tracer_warnings(ember, fn, ember.ones(3))
    assert got == want and len(got) == 1


def test_tracer_warning_names_the_users_line():
    def f(x):
        if x.sum().item() > 0:       # the line the warning points at
            return x * 2
        return x - 1
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ember.jit.trace(f, ember.ones(2))
    ms = [m for m in w if m.category is ember.jit.TracerWarning]
    assert len(ms) == 2                          # the trace and check_trace's re-trace (torch)
    for m in ms:
        assert m.filename == __file__
        assert m.lineno == f.__code__.co_firstlineno + 1


def test_no_warning_for_untraced_tensors_and_none_outside_tracing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", DeprecationWarning)     # torch.jit.* are deprecated
        assert ember.ones(1).item() == 1.0
        assert bool(ember.ones(1))
        c = ember.tensor(3.0)                      # made before tracing: not traced
        ember.jit.trace(lambda x: x * c.item(), ember.ones(2))


def test_nondeterministic_trace_warns_like_torch():
    def r(x):
        return x + lib.rand_like(x)
    got = []
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.jit.trace(r, lib.ones(2))
        got.append([str(m.message).split("\n")[0] for m in w
                    if m.category.__name__ == "TracerWarning"])
    assert got[0] == got[1] and len(got[0]) == 2


# --------------------------------------------------------------------------- check_trace

def data_dependent(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def test_check_trace_fails_on_data_dependent_function():
    for lib, err in ((torch, torch.jit.TracingCheckError),
                     (ember, ember.jit._trace.TracingCheckError)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.jit.trace(data_dependent, lib.ones(2))          # same branch: passes
            with pytest.raises(err, match="Graphs differed across invocations"):
                lib.jit.trace(data_dependent, lib.ones(2), check_inputs=[(-lib.ones(2),)])


def test_check_trace_baked_branch_and_module_check_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = ember.jit.trace(data_dependent, ember.ones(2), check_trace=False)
    # the branch is baked in: a negative input still takes the positive branch
    np.testing.assert_allclose(f(-ember.ones(2)).numpy(), [-2.0, -2.0])
    em = mlp(ember)
    ember.jit.trace(em, ember.ones(1, 5), check_inputs=[ember.ones(3, 5)])


# --------------------------------------------------------------------------- inputs/outputs

def test_example_kwarg_inputs_follow_the_signature():
    def kw(x, y):
        return x - y
    t_in = {"y": torch.ones(2), "x": torch.zeros(2)}
    tt = quiet_trace(torch, kw, example_kwarg_inputs=t_in)
    et = ember.jit.trace(kw, example_kwarg_inputs={"y": ember.ones(2), "x": ember.zeros(2)})
    assert [v.debug_name for v in et.graph.inputs()] == \
        [v.debugName() for v in tt.graph.inputs()] == ["x", "y"]
    np.testing.assert_allclose(et(y=ember.ones(2), x=ember.full((2,), 5.0)).numpy(),
                               [4.0, 4.0])
    em = mlp(ember)
    mt = ember.jit.trace(em, example_kwarg_inputs={"input": ember.ones(2, 5)})
    np.testing.assert_allclose(mt(input=ember.ones(2, 5)).detach().numpy(),
                               em(ember.ones(2, 5)).detach().numpy())


def test_tuple_inputs_and_container_outputs():
    def f(pair):
        return pair[0] + pair[1]
    et = ember.jit.trace(f, ((ember.ones(2), ember.ones(2)),))
    assert kinds(et.graph)[0] == "prim::TupleUnpack"
    np.testing.assert_allclose(et((ember.ones(2), ember.full((2,), 2.0))).numpy(), [3.0, 3.0])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lt = ember.jit.trace(lambda x: [x, x * 2], ember.ones(2))
    assert any("Encountering a list at the output" in str(m.message) for m in w)
    assert [t.tolist() for t in lt(ember.ones(2))] == [[1.0, 1.0], [2.0, 2.0]]
    with pytest.raises(RuntimeError, match="Encountering a dict at the output"):
        ember.jit.trace(lambda x: {"a": x}, ember.ones(2))
    dt = ember.jit.trace(lambda x: {"a": x, "b": x * 2}, ember.ones(2), strict=False)
    assert dt(ember.ones(2))["b"].tolist() == [2.0, 2.0]
    assert kinds(dt.graph)[-1] == "prim::DictConstruct"


def _error(lib, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as info:
            lib.jit.trace(*args, **kwargs)
    return str(info.value).split("\nTensor:")[0]


def test_errors_match_torch():
    for make in (lambda lib: ((lambda x, n: x * n), (lib.ones(2), 3)),
                 lambda lib: ((lambda x: (x, 3)), lib.ones(2))):
        assert _error(ember, *make(ember)) == _error(torch, *make(torch))
    tw, ew = torch.ones(2, requires_grad=True) * 2, ember.ones(2, requires_grad=True) * 2
    assert _error(ember, lambda x: x + ew, ember.ones(2)) == \
        _error(torch, lambda x: x + tw, torch.ones(2))


def test_tensor_made_inside_is_a_constant():
    def f(x):
        return x + ember.tensor([1.0, 2.0])
    with pytest.warns(ember.jit.TracerWarning, match="torch.tensor results are registered"):
        et = ember.jit.trace(f, ember.ones(2))
    (const,) = [n for n in et.graph.nodes() if n.kind == "prim::Constant"
                and isinstance(n.attrs.get("value"), ember.Tensor)]
    assert str(const.outputs[0].type) == "Float(2, strides=[1], requires_grad=0, device=cpu)"
    np.testing.assert_allclose(et(ember.zeros(2)).numpy(), [1.0, 2.0])


def test_is_tracing_and_script_if_tracing():
    seen = []

    @ember.jit.script_if_tracing
    def helper(x):
        return x + 1

    def f(x):
        seen.append(ember.jit.is_tracing())
        return helper(x) * 2
    assert not ember.jit.is_tracing()
    f(ember.ones(1))
    assert seen == [False]
    seen.clear()
    et = ember.jit.trace(f, ember.ones(1), check_trace=False)
    assert seen == [True]
    np.testing.assert_allclose(et(ember.ones(1)).numpy(), [4.0])
    assert not ember.jit.is_tracing()


def test_tracing_a_script_module_is_a_no_op():
    sm = ember.jit.script(mlp(ember))
    with pytest.warns(UserWarning, match="already a ScriptModule"):
        assert ember.jit.trace(sm, ember.ones(1, 5)) is sm


def test_traced_code_runs_under_no_grad_and_profiler():
    em = mlp(ember)
    et = ember.jit.trace(em, ember.ones(2, 5))
    with ember.no_grad():
        assert et(ember.ones(2, 5)).grad_fn is None
    from ember.autograd import profiler
    with profiler.profile() as prof:
        et(ember.ones(2, 5))
    names = {e.name for e in prof.function_events}
    assert "aten::linear" in names and "aten::tanh" in names


# --------------------------------------------------------------------------- compiled code

def scripted_branch(lib):
    @lib.jit.script
    def sfn(x):
        if bool(x.sum() > 0):
            return x + 1
        return x - 1
    return sfn


def gated(lib):
    nn = lib.nn

    class Gate(nn.Module):
        def forward(self, x):
            if bool(x.sum() > 0):
                return x.relu()
            return -x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.gate = lib.jit.script(Gate())

        def forward(self, x):
            return self.gate(self.lin(x))
    return Net()


def test_scripted_function_called_while_tracing_keeps_its_control_flow():
    graphs = []
    for lib in (torch, ember):
        sfn = scripted_branch(lib)
        traced = quiet_trace(lib, lambda x: sfn(x) * 2, lib.ones(2))
        graphs.append(op_kinds(traced.graph))
        # traced with a positive input; a negative one still takes the other branch
        assert traced(-lib.ones(2)).tolist() == [-4.0, -4.0]
    assert graphs[0] == graphs[1] == ["prim::CallFunction", "aten::mul"]


def test_scripted_submodule_is_called_not_traced():
    tm, em = gated(torch), gated(ember)
    copy_weights(tm, em)
    tt = quiet_trace(torch, tm, torch.ones(1, 2))
    et = ember.jit.trace(em, ember.ones(1, 2))
    assert kinds(et.graph) == kinds(tt.graph)
    assert et.gate is em.gate                   # the scripted child is kept as it is
    x = np.full((1, 2), -100.0, dtype="float32")
    np.testing.assert_allclose(et(ember.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5)


def test_script_if_tracing_keeps_control_flow():
    for lib in (torch, ember):
        @lib.jit.script_if_tracing
        def helper(x):
            if bool(x.sum() > 0):
                return x * 10
            return x
        traced = quiet_trace(lib, lambda x: helper(x) + 1, lib.ones(2))
        assert "prim::CallFunction" in op_kinds(traced.graph)
        assert traced(-lib.ones(2)).tolist() == [0.0, 0.0]


def test_tensor_constructor_warns_like_torch():
    got = []
    for lib in (torch, ember):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.jit.trace(lambda x: x + lib.tensor([1.0, 2.0]), lib.ones(2), check_trace=False)
        got.append([str(m.message) for m in w if m.category.__name__ == "TracerWarning"])
    assert got[0] == got[1] and len(got[0]) == 1


def residual(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(2, 4, 3, stride=2, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
            self.downsample = nn.Sequential(nn.Conv2d(2, 4, 1, stride=2, bias=False),
                                            nn.BatchNorm2d(4))

        def forward(self, x):
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.conv2(out)
            out += self.downsample(identity)
            return self.relu(out)
    return nn.Sequential(Block(), nn.Identity()).eval()


def test_residual_block_in_place_add_like_torch():
    tm, em = residual(torch), residual(ember)
    copy_weights(tm, em)
    x = np.random.randn(2, 2, 6, 6).astype("float32")
    tt = quiet_trace(torch, tm, torch.tensor(x))
    et = ember.jit.trace(em, ember.tensor(x))
    tb, eb = getattr(tt, "0"), getattr(et, "0")
    assert kinds(eb.graph) == kinds(tb.graph)
    assert "aten::add_" in kinds(eb.graph)
    assert kinds(et.graph) == kinds(tt.graph)
    assert kinds(eb.downsample.graph) == kinds(tb.downsample.graph)
    x2 = np.random.randn(1, 2, 6, 6).astype("float32")
    np.testing.assert_allclose(et(ember.tensor(x2)).detach().numpy(),
                               tm(torch.tensor(x2)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_sizes_stay_dynamic_like_torch():
    def f(lib):
        def fn(x):
            return x.view(x.size(0), -1) * x.shape[1]
        return fn
    tt = quiet_trace(torch, f(torch), torch.ones(2, 3, 4))
    et = ember.jit.trace(f(ember), ember.ones(2, 3, 4))
    assert kinds(et.graph) == kinds(tt.graph)        # aten::size, prim::NumToTensor, aten::Int
    x = np.random.randn(5, 3, 4).astype("float32")
    got = et(ember.tensor(x))
    assert tuple(got.shape) == (5, 12)
    np.testing.assert_allclose(got.numpy(), tt(torch.tensor(x)).numpy(), rtol=1e-6)


def _index_both(x, i):
    y = x.clone()
    y[i] = 0.0
    return x[i].sum() + x[x > 0].sum() + y


def test_detach_and_tensor_indices_stay_dynamic():
    """detach() results and index tensors are values of the trace, not constants."""
    t = ember.jit.trace(ember.nn.Hardsigmoid(), ember.tensor([-5., 0., 5.]))
    assert t(ember.tensor([5., 0., -5.])).tolist() == [1.0, 0.5, 0.0]
    assert "aten::detach" in str(t.graph)
    tf = ember.jit.trace(_index_both, (ember.arange(5.), ember.tensor([0, 1])))
    x, i = ember.arange(5.), ember.tensor([3, 4])
    assert ember.equal(tf(x, i), _index_both(x, i))


class _PairWithNone(ember.nn.Module):
    def forward(self, x):
        return x * 2, None


class _UsesPair(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.s = _PairWithNone()

    def forward(self, x):
        a, _ = self.s(x)
        return a + 1


def test_submodule_results_may_hold_none():
    t = ember.jit.trace(_UsesPair(), ember.ones(2))
    assert t(ember.full((2,), 3.0)).tolist() == [7.0, 7.0]
    enc = ember.nn.TransformerEncoder(
        ember.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 1, enable_nested_tensor=False).eval()
    x = ember.randn(3, 2, 8)
    assert ember.allclose(ember.jit.trace(enc, x)(x), enc(x), atol=1e-6)
    with pytest.raises(RuntimeError, match="Only tensors, lists, tuples of tensors"):
        ember.jit.trace(_PairWithNone(), ember.ones(2))
