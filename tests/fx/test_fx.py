"""ember.fx against torch.fx: the same modules traced by both give the same graphs
(node by node), the same generated code, and GraphModules that compute (and
differentiate) like eager mode."""
import copy
import math
import operator
import pickle

import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.fx as efx


def build(lib):
    """The test modules, written once against ``lib`` (torch or ember)."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)
            self.p = nn.Parameter(lib.ones(3))
            self.seq = nn.Sequential(nn.ReLU(), nn.Linear(3, 3))
            self.register_buffer("scale", lib.full((3,), 0.5))

        def forward(self, x, y=None):
            a = self.lin(x) + self.p
            b = F.relu(a) * 2 - self.scale
            c = lib.add(b, 1, alpha=2).relu()
            n = x.shape[0]
            d = c.view(n, -1).sum(dim=1, keepdim=True)
            e = lib.cat([d, d], 1)[:, 0]
            f = self.seq(c)
            return {"e": e, "f": f, "s": x.size(1)}

    class Conv(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4, 5)

        def forward(self, x):
            x = F.max_pool2d(self.bn(self.conv(x)), 2)
            x = F.dropout(x, 0.0, training=self.training)
            x = lib.flatten(F.adaptive_avg_pool2d(x, 1), 1)
            return F.log_softmax(self.fc(x), dim=1), -x, 2 ** x, x @ x.t()

    class Nested(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.w = nn.Parameter(lib.ones(3, 3))

        def forward(self, x):
            out = self.block(x)
            return lib.matmul(out["f"], self.w).tanh() + out["e"].unsqueeze(1)

    return {"block": Block, "conv": Conv, "nested": Nested}


def _same_weights(tm, em):
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _pair(name):
    torch.manual_seed(0)
    tm = build(torch)[name]()
    em = build(ember)[name]()
    _same_weights(tm, em)
    return tm, em


INPUTS = {"block": lambda: np.random.RandomState(0).randn(2, 4).astype(np.float32),
          "conv": lambda: np.random.RandomState(1).randn(2, 2, 6, 6).astype(np.float32),
          "nested": lambda: np.random.RandomState(2).randn(2, 4).astype(np.float32)}


def _target_name(node):
    if node.op == "call_function":
        t = node.target
        if t.__module__ in ("_operator", "operator") or t is getattr:
            return f"{t.__module__}.{t.__name__}"
        return efx.node._qualified_name(t) if isinstance(node, efx.Node) \
            else _torch_spelling(torch.fx.node._get_qualified_name(t))
    return node.target


def _describe(graph):
    rows = []
    for n in graph.nodes:
        args = efx.map_arg(n.args, lambda a: ("node", a.name)) if isinstance(n, efx.Node) \
            else torch.fx.map_arg(n.args, lambda a: ("node", a.name))
        kwargs = efx.map_arg(n.kwargs, lambda a: ("node", a.name)) \
            if isinstance(n, efx.Node) else torch.fx.map_arg(n.kwargs, lambda a: ("node", a.name))
        rows.append((n.op, n.name, _target_name(n), repr(args), repr(kwargs), len(n.users)))
    return rows


def _torch_spelling(text):
    """torch names its C-implemented functionals torch._C._nn.X; so does ember (its
    ``ember._C._nn`` holds them for the generated code)."""
    return text


def _to_np(x):
    if isinstance(x, dict):
        return {k: _to_np(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(_to_np(v) for v in x)
    return x.detach().numpy() if hasattr(x, "detach") else x


def _close(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
    else:
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- tracing

@pytest.mark.parametrize("name", ["block", "conv", "nested"])
def test_graph_and_code_match_torch(name):
    tm, em = _pair(name)
    tg, eg = torch.fx.symbolic_trace(tm), efx.symbolic_trace(em)
    assert _describe(eg.graph) == _describe(tg.graph)
    assert str(eg.graph) == _torch_spelling(str(tg.graph))
    assert eg.code == _torch_spelling(tg.code)
    assert type(eg).__name__ == type(tg).__name__


@pytest.mark.parametrize("name", ["block", "conv", "nested"])
def test_outputs_and_gradients_equal_eager(name):
    tm, em = _pair(name)
    tm.eval(), em.eval()
    gm = efx.symbolic_trace(em)
    x = INPUTS[name]()
    _close(_to_np(gm(ember.tensor(x))), _to_np(em(ember.tensor(x))))
    _close(_to_np(gm(ember.tensor(x))), _to_np(torch.fx.symbolic_trace(tm)(torch.tensor(x))))

    def loss(mod, t, lib):
        out = mod(t)
        out = out["f"] if isinstance(out, dict) else out[0] if isinstance(out, tuple) else out
        return (out * out).sum()
    xe = ember.tensor(x, requires_grad=True)
    loss(gm, xe, ember).backward()
    xt = torch.tensor(x, requires_grad=True)
    loss(tm, xt, torch).backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (k, p), (_, q) in zip(sorted(gm.named_parameters()), sorted(tm.named_parameters())):
        if p.grad is not None or q.grad is not None:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)


def _both(fn_src, **kw):
    """Trace the same function source with torch and with ember."""
    out = []
    for lib, fx in ((torch, torch.fx), (ember, efx)):
        scope = {"torch": lib, "F": lib.nn.functional, "math": math, "operator": operator}
        exec(fn_src, scope)
        out.append(fx.symbolic_trace(scope["f"], **kw))
    return out


FUNCTIONS = {
    "operators": "def f(x, y):\n    return -x, ~(x > y), 2 - x, x / 3, x // 2, x % 2, x ** 2, "
                 "x @ y.t(), x == y, x != 1, x <= y",
    "methods": "def f(x):\n    return x.relu().view(-1).sum(0), x.T, x.size(), x.ndim, x.dtype",
    "indexing": "def f(x):\n    return x[0], x[:, 1:], x[..., None], x[0, ::2]",
    "functions": "def f(x):\n    return torch.stack([x, x], dim=0), torch.where(x > 0, x, 0.0), "
                 "torch.zeros(2, dtype=torch.float64), x.to(torch.float64)",
    "functional": "def f(x, w):\n    return F.linear(x, w), F.softmax(x, dim=1), "
                  "F.gelu(x), F.layer_norm(x, (3,)), F.mse_loss(x, w), F.pad(x, (1, 1))",
    "unpack": "def f(x):\n    a, b = x\n    return a + b",
    "varargs": "def f(x, *args):\n    return x + args[0]",
    "defaults": "def f(x, y=2, z=None):\n    return x * y",
    "math": "def f(x):\n    return math.sqrt(x.size(0)) * x",
}


@pytest.mark.parametrize("key", sorted(FUNCTIONS))
def test_functions_match_torch(key):
    tg, eg = _both(FUNCTIONS[key])
    assert _describe(eg.graph) == _describe(tg.graph)
    assert eg.code == _torch_spelling(tg.code)


def _specialized(x, b=None, c=3):
    return x if b is None else x + c


def test_concrete_args():
    tg = torch.fx.symbolic_trace(_specialized, concrete_args={"b": None, "c": 3})
    eg = efx.symbolic_trace(_specialized, concrete_args={"b": None, "c": 3})
    assert eg.code == tg.code and str(eg.graph) == str(tg.graph)
    x = ember.ones(2)
    assert eg(x).tolist() == [1.0, 1.0]
    with pytest.raises(AssertionError, match="b has been specialized"):
        eg(x, 1)
    tg = torch.fx.symbolic_trace(_specialized, concrete_args={"c": torch.fx.PH})
    eg = efx.symbolic_trace(_specialized, concrete_args={"c": efx.PH})
    assert eg.code == tg.code


def test_trace_errors():
    def loop(x):
        for _ in x:
            pass

    def branch(x):
        if x.sum() > 0:
            return x

    def length(x):
        return len(x)
    with pytest.raises(efx.proxy.TraceError, match="cannot be iterated"):
        efx.symbolic_trace(loop)
    with pytest.raises(efx.proxy.TraceError, match="cannot be used as inputs to control flow"):
        efx.symbolic_trace(branch)
    with pytest.raises(RuntimeError, match="'len' is not supported"):
        efx.symbolic_trace(length)


def _my_helper(x, k):
    return x * k


efx.wrap("_my_helper")


@efx.wrap
def _my_decorated(x):
    return x + 1


def test_wrap():
    def f(x):
        return _my_decorated(_my_helper(x, int(2)))
    gm = efx.symbolic_trace(f)
    kinds = [(n.op, n.target) for n in gm.graph.nodes]
    assert ("call_function", _my_helper) in kinds and ("call_function", _my_decorated) in kinds
    assert 'torch.fx._symbolic_trace.wrap("' in gm.code
    assert gm(ember.ones(2)).tolist() == [3.0, 3.0]


def test_tracer_hooks():
    nn = ember.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x).relu() + self.lin.weight.shape[0]

    class AllTraced(efx.Tracer):
        def is_leaf_module(self, m, qualname):
            return False
    g = AllTraced().trace(M())
    targets = [n.target for n in g.nodes if n.op == "call_function"]
    assert ember.nn.functional.linear in targets
    assert not any(n.op == "call_module" for n in g.nodes)
    assert efx.Tracer().is_leaf_module(nn.Linear(2, 2), "lin")
    assert not efx.Tracer().is_leaf_module(nn.Sequential(), "seq")
    g = efx.Tracer(param_shapes_constant=True).trace(M())
    add = [n for n in g.nodes if n.target is operator.add][0]
    assert add.args[1] == 3                  # the weight's shape is read, not traced

    class Counting(efx.Tracer):
        calls = 0

        def create_proxy(self, *a, **k):
            Counting.calls += 1
            return super().create_proxy(*a, **k)
    Counting().trace(M())
    assert Counting.calls > 0
    assert efx.Tracer().create_arg((1, [2.0], {"a": None}, slice(1, 2))) == \
        (1, [2.0], {"a": None}, slice(1, 2))
    with pytest.raises(NotImplementedError, match="argument of type"):
        efx.Tracer().create_arg(object())


def _summed(x):
    return x.sum()


def _uses_summed(x):
    return _summed(x) * 2


def test_autowrap_functions():
    gm = efx.GraphModule(ember.nn.Module(),
                         efx.Tracer(autowrap_functions=(_summed,)).trace(_uses_summed))
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"][0] is _summed
    assert gm(ember.ones(3)).item() == 6.0


def test_tensor_constant_becomes_get_attr():
    t = ember.arange(3.0)

    def f(x):
        return x + t
    gm = efx.symbolic_trace(f)
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "get_attr", "call_function",
                                               "output"]
    assert hasattr(gm, "_tensor_constant0")
    assert gm(ember.ones(3)).tolist() == [1.0, 2.0, 3.0]


# ----------------------------------------------------------------------------- Graph / Node

def _manual(fx):
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(operator.add, (x, 1))
    z = g.call_method("relu", (y,))
    g.output(z)
    return g, x, y, z


def test_graph_construction_matches_torch():
    (tg, *_), (eg, *_) = _manual(torch.fx), _manual(efx)
    assert str(eg) == str(tg)
    assert eg.python_code("self").src == tg.python_code("self").src
    assert [n.format_node() for n in eg.nodes] == [n.format_node() for n in tg.nodes]


def test_node_links_and_editing():
    g, x, y, z = _manual(efx)
    assert x.next is y and y.prev is x and z.next.op == "output"
    assert z.next.next.op == "root" and x.prev.op == "root"
    assert list(y.users) == [z] and z.args == (y,) and z.all_input_nodes == [y]
    with g.inserting_after(y):
        w = g.call_function(operator.mul, (y, 2))
    assert y.next is w
    with g.inserting_before(y):
        v = g.call_function(operator.neg, (x,))
    assert v.next is y
    assert z.replace_input_with(y, w) is None and z.args == (w,)
    assert y.replace_all_uses_with(v) == [w] and w.args == (v, 2)
    g.erase_node(y)
    assert y not in list(g.nodes)
    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(v)
    g.lint()
    unused = g.call_function(operator.sub, (x, 1))
    unused.prepend(g.call_function(operator.abs, (x,)))
    assert len(g.nodes) == 7 and list(g.nodes)[-1] is unused
    assert g.eliminate_dead_code()
    assert [n.name for n in g.nodes] == ["x", "neg", "mul", "relu", "output"]
    z.meta["k"] = 1
    z.update_arg(0, x)
    assert z.args == (x,) and "k" in z.meta
    z.update_kwarg("inplace", False)
    assert z.kwargs == {"inplace": False}
    assert efx.map_arg((x, [z], {"a": 1}), lambda n: n.name) == ("x", ["relu"], {"a": 1})


def test_lint_catches_use_before_definition():
    g, x, y, z = _manual(efx)
    y.prepend(z)
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()


def test_graph_copy_and_node_copy():
    g, x, y, z = _manual(efx)
    g2 = efx.Graph()
    val_map = {}
    out = g2.graph_copy(g, val_map)
    g2.output(out)
    assert str(g2) == str(g)
    g3 = copy.deepcopy(g)
    assert str(g3) == str(g)
    g4 = efx.Graph()
    a = g4.placeholder("a")
    b = g4.node_copy(y, lambda n: a)
    assert b.args == (a, 1) and b.target is operator.add


def test_print_tabular(capsys):
    g, *_ = _manual(efx)
    g.print_tabular()
    text = capsys.readouterr().out
    assert "opcode" in text and "call_method" in text
    assert "operator.add" in text or "<built-in function add>" in text   # tabulate or not


# ----------------------------------------------------------------------------- GraphModule

def test_graph_module_from_dict_and_recompile():
    g = efx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("sub.w")
    g.output(g.call_module("lin", (g.call_function(operator.mul, (x, w)),)))
    lin = ember.nn.Linear(2, 2)
    gm = efx.GraphModule({"sub.w": ember.full((2,), 2.0), "lin": lin}, g, "Custom")
    assert type(gm).__name__ == "Custom"
    x = ember.ones(1, 2)
    np.testing.assert_allclose(gm(x).detach().numpy(), lin(x * 2).detach().numpy())
    out = [n for n in gm.graph.nodes if n.op == "output"][0]
    with gm.graph.inserting_before(out):
        r = gm.graph.call_function(ember.relu, (out.args[0],))
    out.args = (r,)
    gm.recompile()
    assert "torch.relu(lin)" in gm.code
    assert (gm(x).detach().numpy() >= 0).all()
    text = gm.print_readable(print_output=False)
    assert text.startswith("class Custom(torch.nn.Module):") and "def forward" in text


def test_deepcopy_and_pickle():
    _, em = _pair("block")
    gm = efx.symbolic_trace(em)
    x = ember.tensor(INPUTS["block"]())
    for other in (copy.deepcopy(gm), pickle.loads(pickle.dumps(gm))):
        assert other.code == gm.code
        _close(_to_np(other(x)), _to_np(gm(x)))
        other.lin.weight.data.zero_()
        assert gm.lin.weight.abs().sum().item() > 0


def test_submodule_management():
    _, em = _pair("block")
    gm = efx.symbolic_trace(em)
    assert gm.add_submodule("extra.deep", ember.nn.ReLU())
    assert isinstance(gm.extra.deep, ember.nn.ReLU)
    assert gm.delete_submodule("extra.deep") and not gm.delete_submodule("extra.deep")
    gm.add_submodule("unused", ember.nn.Tanh())
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "unused") and not hasattr(gm, "extra")
    assert hasattr(gm, "lin") and hasattr(gm.seq, "1")


def test_to_folder(tmp_path):
    import importlib.util
    import sys
    _, em = _pair("block")
    gm = efx.symbolic_trace(em)
    gm.to_folder(tmp_path / "pkg", "Saved")
    spec = importlib.util.spec_from_file_location("saved_fx_pkg.module",
                                                  tmp_path / "pkg" / "module.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["torch"], saved = ember, sys.modules.get("torch")
    try:
        spec.loader.exec_module(module)
        loaded = module.Saved()
    finally:
        sys.modules["torch"] = saved
    x = ember.tensor(INPUTS["block"]())
    _close(_to_np(loaded(x)), _to_np(gm(x)))


# ----------------------------------------------------------------------------- passes

def test_interpreter_and_overrides():
    _, em = _pair("conv")
    em.eval()
    gm = efx.symbolic_trace(em)
    x = ember.tensor(INPUTS["conv"]())
    _close(_to_np(efx.Interpreter(gm).run(x)), _to_np(gm(x)))

    class NegRelu(efx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target is ember.nn.functional.log_softmax:
                return ember.zeros(2, 5)
            return super().call_function(target, args, kwargs)
    assert NegRelu(gm).run(x)[0].abs().sum().item() == 0


def test_transformer():
    nn = ember.nn

    class M(nn.Module):
        def forward(self, x):
            return ember.relu(x) + 1

    class Swap(efx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is ember.relu:
                target = ember.sigmoid
            return super().call_function(target, args, kwargs)
    gm = Swap(efx.symbolic_trace(M())).transform()
    assert "torch.sigmoid(x)" in gm.code
    x = ember.tensor([-1.0, 2.0])
    np.testing.assert_allclose(gm(x).numpy(), (ember.sigmoid(x) + 1).numpy())


def test_replace_pattern_matches_torch():
    outs = []
    for lib, fx in ((torch, torch.fx), (ember, efx)):
        class M(lib.nn.Module):
            def forward(self, x, w1, w2):
                a = lib.cat([w1, w2]).sum()
                b = lib.cat([w1, w2]).sum()
                return x + lib.max(a) + lib.max(b)

        def pattern(w1, w2):
            return lib.cat([w1, w2]).sum()

        def replacement(w1, w2):
            return lib.stack([w1, w2])
        gm = fx.symbolic_trace(M())
        matches = fx.subgraph_rewriter.replace_pattern(gm, pattern, replacement)
        outs.append((gm, [(m.anchor.name, sorted((k.name, v.name) for k, v in
                                                  m.nodes_map.items())) for m in matches]))
    (tg, tm), (eg, em) = outs
    assert len(em) == 2 and em == tm
    assert eg.code == tg.code
    args = [np.random.RandomState(3).randn(2).astype(np.float32) for _ in range(3)]
    _close(_to_np(eg(*map(ember.tensor, args))), _to_np(tg(*map(torch.tensor, args))))


def test_shape_prop():
    from ember.fx.passes.shape_prop import ShapeProp, TensorMetadata
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp
    tm, em = _pair("conv")
    tm.eval(), em.eval()
    tg, eg = torch.fx.symbolic_trace(tm), efx.symbolic_trace(em)
    x = INPUTS["conv"]()
    TShapeProp(tg).propagate(torch.tensor(x))
    ShapeProp(eg).propagate(ember.tensor(x))
    assert TensorMetadata._fields == torch.fx.passes.shape_prop.TensorMetadata._fields
    for tn, en in zip(tg.graph.nodes, eg.graph.nodes):
        if "tensor_meta" not in tn.meta or tn.op == "output":
            continue
        tmeta, emeta = tn.meta["tensor_meta"], en.meta["tensor_meta"]
        assert tuple(emeta.shape) == tuple(tmeta.shape), en.name
        assert str(emeta.dtype) == str(tmeta.dtype)
        assert emeta.stride == tmeta.stride and emeta.requires_grad == tmeta.requires_grad


def test_graph_module_inlines_into_a_graph_being_built():
    """Calling a GraphModule with Proxies records its nodes (pytorch/examples'
    wrap_output_dynamically)."""
    gm = efx.symbolic_trace(ember.nn.LeakyReLU())
    g = efx.Graph()
    x = efx.Proxy(g.placeholder("x"))
    out = gm(x)
    g.output(out.node)
    assert [n.target for n in g.nodes][1] is ember.nn.functional.leaky_relu


def test_run_maps_torch_fx():
    import subprocess
    import sys
    code = "import torch.fx, ember.fx; assert torch.fx is ember.fx; print('ok')"
    src = "/tmp/_ember_fx_run_check.py"
    with open(src, "w") as f:
        f.write(code)
    r = subprocess.run([sys.executable, "-m", "ember.run", src], capture_output=True,
                       text=True, cwd=str(__import__("pathlib").Path(__file__).parents[2]))
    assert r.stdout.strip() == "ok", r.stderr


def _annotated(x: torch.Tensor, n: int) -> torch.Tensor:
    return x.add(1) + n, torch.nn.functional.elu(x), x.new_zeros(2), torch.ones_like(x)


def test_annotations_and_str_match_torch():
    scope = dict(_annotated.__globals__, torch=ember)
    fn = type(_annotated)(_annotated.__code__, scope, "_annotated")
    fn.__annotations__ = {"x": ember.Tensor, "n": int, "return": ember.Tensor}
    tg, eg = torch.fx.symbolic_trace(_annotated), efx.symbolic_trace(fn)
    assert eg.code == tg.code
    assert str(eg.graph) == str(tg.graph)
    assert str(eg) == str(tg)
    x = ember.ones(2)
    assert eg(x, 2)[0].tolist() == [4.0, 4.0]


def test_names_bound_before_tracing_reach_the_torch_function_protocol():
    """``from torch import sigmoid`` bypasses the tracer's patches; the op still sees the
    Proxy through ``__torch_function__`` and records the public function."""
    graphs = []
    for lib, fx in ((torch, torch.fx), (ember, efx)):
        sigmoid, cat = lib.sigmoid, lib.cat

        def f(x):
            # (a trailing argument equal to its default, cat(..., 0), would be dropped:
            # the protocol in ember/overrides.py passes defaults as omitted)
            return cat([sigmoid(x), x], 1)
        graphs.append(fx.symbolic_trace(f))
    tg, eg = graphs
    assert _describe(eg.graph) == _describe(tg.graph)


@pytest.mark.parametrize("nested", [False, True])
def test_graph_modules_trace_again(nested):
    results = []
    for lib, fx in ((torch, torch.fx), (ember, efx)):
        gm = fx.symbolic_trace(lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.ReLU()))
        if nested:
            class W(lib.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.inner = gm

                def forward(self, x):
                    return self.inner(x) * 2
            results.append(fx.symbolic_trace(W()))
        else:
            results.append(fx.symbolic_trace(gm))
    assert results[1].code == results[0].code
    assert str(results[1].graph) == str(results[0].graph)


def test_transformer_with_modules_matches_torch():
    outs = []
    for lib, fx in ((torch, torch.fx), (ember, efx)):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = lib.nn.Conv2d(1, 2, 3)
                self.seq = lib.nn.Sequential(lib.nn.ReLU())

            def forward(self, x):
                return self.seq(self.conv(x)).relu() + self.conv.weight.sum()

        class T(fx.Transformer):
            def call_method(self, target, args, kwargs):
                return super().call_method("sigmoid" if target == "relu" else target,
                                           args, kwargs)
        new = T(fx.symbolic_trace(M())).transform()
        outs.append((new.code, str(new.graph), new.print_readable(print_output=False)))
    assert outs[1] == outs[0]


FUNCTIONAL_CALLS = [
    "F.relu(x)", "F.relu6(x)", "F.elu(x)", "F.leaky_relu(x, 0.2)", "F.hardtanh(x)", "F.silu(x)",
    "F.mish(x)", "F.hardswish(x)", "F.hardsigmoid(x)", "F.sigmoid(x)", "F.tanh(x)",
    "F.softmax(x, 1)", "F.log_softmax(x, dim=1)", "F.softmin(x, 1)", "F.glu(x)", "F.normalize(x)",
    "F.dropout(x)", "F.dropout2d(x)", "F.alpha_dropout(x)", "F.max_pool1d(x, 2)",
    "F.max_pool2d(x, 2, 1)", "F.avg_pool2d(x, 2)", "F.adaptive_max_pool2d(x, 1)",
    "F.adaptive_avg_pool2d(x, 1)", "F.interpolate(x, scale_factor=2)", "F.pad(x, (1, 1))",
    "F.batch_norm(x, w, w)", "F.instance_norm(x)", "F.layer_norm(x, (3,))", "F.group_norm(x, 1)",
    "F.embedding(x, w)", "F.mse_loss(x, w)", "F.cross_entropy(x, w)", "F.nll_loss(x, w)",
    "F.binary_cross_entropy(x, w)", "F.binary_cross_entropy_with_logits(x, w)", "F.kl_div(x, w)",
    "F.smooth_l1_loss(x, w)", "F.huber_loss(x, w)", "F.celu(x)", "F.selu(x)", "F.softsign(x)",
    "F.tanhshrink(x)", "F.gumbel_softmax(x)", "F.linear(x, w)", "F.conv2d(x, w)",
    "F.unfold(x, 2)", "F.fold(x, 4, 2)", "F.grid_sample(x, w)", "F.affine_grid(x, (1, 1, 2, 2))",
    "F.pixel_shuffle(x, 2)", "F.cosine_similarity(x, w)", "F.triplet_margin_loss(x, w, w)",
    "F.margin_ranking_loss(x, w, w)", "F.hinge_embedding_loss(x, w)", "F.soft_margin_loss(x, w)",
    "F.multilabel_soft_margin_loss(x, w)", "F.poisson_nll_loss(x, w)",
    "F.gaussian_nll_loss(x, w, w)", "F.multi_margin_loss(x, w)", "F.local_response_norm(x, 2)",
    "F.embedding_bag(x, w)", "F.one_hot(x)", "F.rrelu(x)", "F.softplus(x)", "F.hardshrink(x)",
    "F.lp_pool2d(x, 2, 2)", "F.max_unpool2d(x, w, 2)", "F.ctc_loss(x, w, w, w)"]


@pytest.mark.parametrize("call", FUNCTIONAL_CALLS)
def test_functional_calls_record_as_torch(call):
    """nn.functional calls record torch's node: its argument split (leading tensors
    positional, the rest by keyword with defaults) or the user's arguments for torch's
    C functions, and call_method for F.sigmoid/F.tanh."""
    tg, eg = _both(f"def f(x, w):\n    return {call}")
    assert _describe(eg.graph) == _describe(tg.graph)


def test_has_side_effect_keeps_nodes_through_dead_code_elimination():
    def build(fx, lib):
        def log(x):
            return x
        fx.node.has_side_effect(log)
        g = fx.Graph()
        x = g.placeholder("x")
        g.call_function(log, (x,))          # result unused, kept
        g.call_function(lib.relu, (x,))     # result unused, removed
        g.output(x)
        g.eliminate_dead_code()
        return [n.op for n in g.nodes]
    import ember.fx
    assert build(ember.fx, ember) == build(torch.fx, torch) == \
        ["placeholder", "call_function", "output"]


def test_aliases_are_functions_of_their_own_name():
    """torch.arctan is not torch.atan: FX names nodes (and jit builtins) by the alias."""
    torch = pytest.importorskip("torch")
    for name in ("arctan", "arcsin", "absolute", "clip", "negative", "greater", "divide"):
        assert getattr(ember, name).__name__ == getattr(torch, name).__name__ == name
        assert getattr(ember, name) is not getattr(ember, {"arctan": "atan", "arcsin": "asin",
                                                           "absolute": "abs", "clip": "clamp",
                                                           "negative": "neg", "greater": "gt",
                                                           "divide": "div"}[name])

    def f(x):
        return ember.arctan(ember.log(x))
    gm = ember.fx.symbolic_trace(f)
    assert "torch.arctan(log)" in gm.code
