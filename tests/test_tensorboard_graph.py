"""SummaryWriter.add_graph: trace a model, write its GraphDef, read it back with
tensorboard's own EventAccumulator; torch's add_graph is the oracle for the scopes."""
import re
import warnings

import numpy as np
import pytest

import ember

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402
from tensorboard.compat.proto import types_pb2  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402
from ember.utils.tensorboard._graph import trace_model  # noqa: E402


# ------------------------------------------------------------------ models (ember or torch)
def make_mlp(T):
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = T.nn.Linear(4, 8)
            self.act = T.nn.ReLU()
            self.fc2 = T.nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))
    return Net(), (T.randn(2, 4),)


def make_cnn(T):
    class Block(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = T.nn.Conv2d(3, 3, 3, padding=1)
            self.bn = T.nn.BatchNorm2d(3)

        def forward(self, x):
            return T.relu(self.bn(self.conv(x)) + x)

    class CNN(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = T.nn.Conv2d(1, 3, 3, padding=1)
            self.block = Block()
            self.head = T.nn.Linear(3 * 6 * 6, 2)

        def forward(self, x):
            return self.head(self.block(self.stem(x)).flatten(1))
    return CNN(), (T.randn(2, 1, 6, 6),)


def make_pair(T):
    class Pair(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.left = T.nn.Linear(3, 5)
            self.right = T.nn.Sequential(T.nn.Linear(2, 5), T.nn.Tanh())

        def forward(self, a, b):
            return self.left(a) * self.right(b), a.sum()
    return Pair(), (T.randn(4, 3), T.randn(4, 2))


# ------------------------------------------------------------------ helpers
def _graph(logdir):
    acc = ea.EventAccumulator(str(logdir))
    acc.Reload()
    assert acc.Tags()["graph"] is True
    return acc, acc.Graph()


def _write(tmp_path, model, inputs, **kw):
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, inputs, **kw)
    return _graph(tmp_path)


def _by_name(g):
    return {n.name: n for n in g.node}


# nn.Linear runs as one ``linear`` op, or as ``t`` + ``addmm`` (the composite lowering)
LINEAR = ("aten::linear", "aten::addmm")


def _main_ops(g):
    """The op nodes in run order, less the weight transposes of the addmm lowering."""
    return [n for n in g.node if n.op.startswith("aten::") and n.op != "aten::t"]


def _sources(nodes, node):
    """The nodes ``node`` reads, looking through a transpose (``t``) to what it reads."""
    found = set()
    for ref in node.input:
        src = nodes[_src(ref)]
        found.add(_src(src.input[0]) if src.op == "aten::t" else src.name)
    return found


def _shapes(node):
    return [tuple(d.size for d in s.dim) for s in node.attr["_output_shapes"].list.shape]


def _src(ref):
    return ref.split(":")[0]


def _scopes(g):
    """Every module scope a node sits in: the root and the ``Class[attr]`` parts after it."""
    found = set()
    for n in g.node:
        parts = n.name.split("/")[:-1]
        if not parts or parts[0] in ("input", "output"):
            continue
        path = [parts[0]]
        found.add(parts[0])
        for p in parts[1:]:
            if not re.fullmatch(r"\w+\[[^\]]+\]", p):
                break
            path.append(p)
            found.add("/".join(path))
    return found


def _torch_scopes(tmp_path, make):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    torch.manual_seed(0)
    model, inputs = make(torch)
    d = tmp_path / "torch"
    with TorchWriter(str(d)) as w, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # torch.jit.trace's notice
        w.add_graph(model, inputs if len(inputs) > 1 else inputs[0])
    return _scopes(_graph(d)[1])


# ------------------------------------------------------------------ tests
def test_mlp_graph(tmp_path):
    model, (x,) = make_mlp(ember)
    acc, g = _write(tmp_path / "ember", model, x)
    nodes = _by_name(g)
    ops = _main_ops(g)
    assert [n.op in LINEAR for n in ops] == [True, False, True]
    fc1, relu, fc2 = ops
    assert relu.op == "aten::relu"
    # scopes name the submodules (the weight transpose of addmm's lowering too)
    for n in g.node:
        if n.op == "aten::t":
            assert re.match(r"Net/Linear\[fc[12]\]/", n.name)
    assert fc1.name.startswith("Net/Linear[fc1]/")
    assert relu.name.startswith("Net/ReLU[act]/")
    assert fc2.name.startswith("Net/Linear[fc2]/")
    # edges: input -> linear(x, weight, bias) -> relu -> linear -> output
    assert nodes["input/x"].op == "IO Node"
    assert _sources(nodes, fc1) == {"input/x", "Net/Linear[fc1]/weight", "Net/Linear[fc1]/bias"}
    assert nodes["Net/Linear[fc1]/weight"].op == "prim::GetAttr"
    assert list(relu.input) == [fc1.name]
    assert _sources(nodes, fc2) == {relu.name, "Net/Linear[fc2]/weight", "Net/Linear[fc2]/bias"}
    assert list(nodes["output/output.1"].input) == [fc2.name]
    # shapes and dtypes are the real ones
    assert _shapes(nodes["input/x"]) == [(2, 4)]
    assert _shapes(nodes["Net/Linear[fc1]/weight"]) == [(8, 4)]
    assert _shapes(fc1) == _shapes(relu) == [(2, 8)]
    assert _shapes(fc2) == _shapes(nodes["output/output.1"]) == [(2, 3)]
    assert list(relu.attr["dtype"].list.type) == [types_pb2.DT_FLOAT]
    assert relu.attr["ember_op"].s == b"relu"
    assert relu.attr["attr"].s == b"{}"
    # every input names a node of the graph
    assert all(_src(i) in nodes for n in g.node for i in n.input)
    # run metadata, as torch writes it (tag step1), with per-op stats
    rm = acc.RunMetadata("step1")
    stats = rm.step_stats.dev_stats[0]
    assert stats.device == "/device:CPU:0"
    assert [s.node_name for s in stats.node_stats] == \
        [n.name for n in g.node if n.op.startswith("aten::")]
    relu_stats = next(s for s in stats.node_stats if s.node_name == relu.name)
    assert [d.size for d in relu_stats.output[0].tensor_description.shape.dim] == [2, 8]
    assert _scopes(g) == _torch_scopes(tmp_path, make_mlp) == \
        {"Net", "Net/Linear[fc1]", "Net/ReLU[act]", "Net/Linear[fc2]"}


def test_cnn_batchnorm_residual(tmp_path):
    model, (x,) = make_cnn(ember)
    model.train()
    before = model.block.bn.running_mean.numpy().copy()
    acc, g = _write(tmp_path / "ember", model, x)
    # traced in eval mode, training flags restored, running stats untouched
    assert model.training and model.block.bn.training
    np.testing.assert_array_equal(model.block.bn.running_mean.numpy(), before)
    nodes = _by_name(g)
    ops = _main_ops(g)
    names = [n.op for n in ops]
    conv_i = [i for i, o in enumerate(names) if o == "aten::convolution"]
    bn_i = next(i for i, o in enumerate(names) if "batch_norm" in o)
    add_i = names.index("aten::add")
    head_i = max(i for i, o in enumerate(names) if o in LINEAR)
    assert len(conv_i) == 2 and conv_i[1] < bn_i < add_i < names.index("aten::relu") < head_i
    assert ops[head_i].name.startswith("CNN/Linear[head]/") and _shapes(ops[head_i]) == [(2, 2)]
    stem, conv, bn, add = ops[conv_i[0]], ops[conv_i[1]], ops[bn_i], ops[add_i]
    assert stem.name.startswith("CNN/Conv2d[stem]/")
    assert conv.name.startswith("CNN/Block[block]/Conv2d[conv]/")
    assert bn.name.startswith("CNN/Block[block]/BatchNorm2d[bn]/")
    assert add.name.startswith("CNN/Block[block]/") and add.name.count("/") == 2
    # the residual add reads the batch norm and the block's input (the stem's output)
    assert [_src(i) for i in add.input] == [bn.name, stem.name]
    assert list(conv.input)[0] == stem.name and list(stem.input)[0] == "input/x"
    bn_in = [_src(i) for i in bn.input]
    assert bn_in[0] == conv.name
    for p in ("weight", "bias", "running_mean", "running_var"):
        ref = f"CNN/Block[block]/BatchNorm2d[bn]/{p}"
        assert ref in bn_in and nodes[ref].op == "prim::GetAttr"
        assert _shapes(nodes[ref]) == [(3,)]
    assert b"buffer" in nodes["CNN/Block[block]/BatchNorm2d[bn]/running_var"].attr["attr"].s
    assert _shapes(stem) == _shapes(conv) == _shapes(add) == [(2, 3, 6, 6)]
    assert _shapes(bn)[0] == (2, 3, 6, 6)
    assert _shapes(nodes["output/output.1"]) == [(2, 2)]
    flat = next(n for n in ops if n.op == "aten::flatten")
    assert flat.name.startswith("CNN/flatten") and _shapes(flat) == [(2, 108)]
    assert _scopes(g) == _torch_scopes(tmp_path, make_cnn)
    assert {"CNN/Block[block]/BatchNorm2d[bn]", "CNN/Conv2d[stem]"} <= _scopes(g)


def test_tuple_input_and_output(tmp_path):
    model, inputs = make_pair(ember)
    acc, g = _write(tmp_path / "ember", model, inputs)
    nodes = _by_name(g)
    assert _shapes(nodes["input/a"]) == [(4, 3)] and _shapes(nodes["input/b"]) == [(4, 2)]
    ops = _main_ops(g)
    assert [n.op in LINEAR for n in ops] == [True, True, False, False, False]
    assert [n.op for n in ops[2:]] == ["aten::tanh", "aten::mul", "aten::sum"]
    left, right, tanh, mul, total = ops
    assert left.name.startswith("Pair/Linear[left]/")
    assert right.name.startswith("Pair/Sequential[right]/Linear[0]/")
    assert tanh.name.startswith("Pair/Sequential[right]/Tanh[1]/")
    assert "input/a" in _sources(nodes, left) and "input/b" in _sources(nodes, right)
    assert list(mul.input) == [left.name, tanh.name]
    assert list(total.input) == ["input/a"] and _shapes(total) == [()]
    assert list(nodes["output/output.1"].input) == [mul.name]
    assert list(nodes["output/output.2"].input) == [total.name]
    assert _shapes(nodes["output/output.1"]) == [(4, 5)]
    assert _scopes(g) == _torch_scopes(tmp_path, make_pair)


def test_input_required(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(RuntimeError, match="input_to_model"):
            w.add_graph(ember.nn.Linear(2, 2))
        with pytest.raises(RuntimeError, match="2 input"):
            w.add_graph(ember.nn.Linear(2, 2), (ember.ones(1, 2), ember.ones(1, 2)))


def test_no_input_constants_inplace_and_verbose(tmp_path, capsys):
    class Gen(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = ember.nn.Parameter(ember.ones(3))
            self.act = ember.nn.ReLU(inplace=True)

        def forward(self):
            c = ember.from_numpy(np.arange(3, dtype=np.float32))   # made outside the ops
            y = self.p * 2 + c
            return self.act(y)

    _, g = _write(tmp_path, Gen(), None, verbose=True)
    printed = capsys.readouterr().out
    nodes = _by_name(g)
    const = next(n for n in g.node if n.op == "prim::Constant")
    assert _shapes(const) == [(3,)] and const.name.startswith("Gen/")
    mul = next(n for n in g.node if n.op == "aten::mul")
    assert list(mul.input) == ["Gen/p"]
    add = next(n for n in g.node if n.op == "aten::add")
    assert list(add.input) == [mul.name, const.name]
    relu = next(n for n in g.node if n.op.startswith("aten::relu"))
    assert relu.name.startswith("Gen/ReLU[act]/") and list(relu.input) == [add.name]
    # the in-place result is the relu node's value
    assert list(nodes["output/output.1"].input) == [relu.name]
    assert "Gen/p = prim::GetAttr" in printed and relu.name in printed


def test_tracer_leaves_model_and_modes_clean(tmp_path):
    from ember._state import state
    model, (x,) = make_mlp(ember)
    modes = state.modes
    before = model(x).detach().numpy()
    trace = trace_model(model, x)
    assert state.modes == modes
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    np.testing.assert_array_equal(model(x).detach().numpy(), before)
    assert "Net/ReLU[act]/relu" in str(trace)


def test_forward_error_restores(tmp_path):
    class Bad(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = ember.nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(x) @ ember.ones(5, 5)

    from ember._state import state
    model = Bad()
    modes = state.modes
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(RuntimeError):
            w.add_graph(model, ember.ones(1, 2))
    assert state.modes == modes and model.training
    assert not model.fc._forward_hooks and not model.fc._forward_pre_hooks
