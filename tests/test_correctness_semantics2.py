"""Tensor and autograd semantics as torch has them (issue 14, remainders): ``_base`` and
``_is_view()`` of every view kind, grad_fn names of in-place ops and indexing, int-list
argument checks, bool operands of elementwise ops, meta tensor strides and sizes. Every
case runs on ember and on torch and compares the outcomes."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="torch is the oracle")


def _outcome(fn, *args):
    """The value of ``fn(*args)``, or the class of the exception it raised."""
    try:
        return fn(*args)
    except Exception as e:          # noqa: BLE001  (the class is the outcome)
        return type(e).__name__


# ---------------------------------------------------------------- _base and _is_view

def _x(lib):
    return lib.arange(12.).reshape(3, 4).clone()


def _z(lib):
    return lib.zeros(3, dtype=lib.complex64)


class _Sub:
    pass


# name -> (source maker, view maker); the view's _base must be the source, another tensor
# or None exactly as in torch
VIEW_KINDS = {
    "slice": (_x, lambda lib, x: x[1:]),
    "int": (_x, lambda lib, x: x[0]),
    "view": (_x, lambda lib, x: x.view(12)),
    "reshape_view": (_x, lambda lib, x: x.reshape(2, 6)),
    "reshape_copy": (_x, lambda lib, x: x.t().reshape(12)),
    "flatten_copy": (_x, lambda lib, x: x.t().flatten()),
    "t": (_x, lambda lib, x: x.t()),
    "transpose": (_x, lambda lib, x: x.transpose(0, 1)),
    "permute": (_x, lambda lib, x: x.permute(1, 0)),
    "detach": (_x, lambda lib, x: x.detach()),
    "data": (_x, lambda lib, x: x.data),
    "unbind": (_x, lambda lib, x: x.unbind()[1]),
    "split": (_x, lambda lib, x: x.split(2)[1]),
    "chunk": (_x, lambda lib, x: x.chunk(2)[0]),
    "expand": (_x, lambda lib, x: x[:1].expand(3, 4)),
    "diagonal": (_x, lambda lib, x: x.diagonal()),
    "as_strided": (_x, lambda lib, x: x.as_strided((2,), (1,))),
    "real": (_z, lambda lib, z: z.real),
    "imag": (_z, lambda lib, z: z.imag),
    "view_as_real": (_z, lambda lib, z: lib.view_as_real(z)),
    "view_of_view": (_x, lambda lib, x: x[1:][0]),
    "detach_of_view": (_x, lambda lib, x: x[1:].detach()),
    "data_of_view": (_x, lambda lib, x: x[1:].data),
    "view_of_detach": (_x, lambda lib, x: x.detach()[0]),
    "view_dtype": (_x, lambda lib, x: x.view(lib.int32)),
    "view_of_view_dtype": (_x, lambda lib, x: x.view(lib.int32)[1:]),
    "unsqueeze": (_x, lambda lib, x: x.unsqueeze(0)),
    "none_index": (_x, lambda lib, x: x[None]),
    "ellipsis": (_x, lambda lib, x: x[...]),
    "advanced": (_x, lambda lib, x: x[[0, 1]]),
    "mask": (_x, lambda lib, x: x[x > 3]),
    "contiguous": (_x, lambda lib, x: x.contiguous()),
    "from_numpy": (_x, lambda lib, x: lib.from_numpy(x.numpy())),
    "as_subclass": (_x, lambda lib, x: x.as_subclass(lib.Tensor)),
    "mT": (_x, lambda lib, x: x.mT),
    "unfold": (_x, lambda lib, x: x.unfold(1, 2, 1)),
}


def _base_outcome(lib, kind):
    make_src, make_view = VIEW_KINDS[kind]
    src = make_src(lib)
    v = make_view(lib, src)
    b = v._base
    who = None if b is None else "source" if b is src else "other"
    return v._is_view(), who


@pytest.mark.parametrize("kind", sorted(VIEW_KINDS))
def test_base_and_is_view_match_torch(kind):
    assert _base_outcome(ember, kind) == _base_outcome(torch, kind)


@pytest.mark.parametrize("lib", ["ember", "torch"])
def test_detach_shares_memory_and_version_but_is_no_view(lib):
    L = ember if lib == "ember" else torch
    x = L.zeros(3)
    d = x.detach()
    d[1] = 5.0
    assert x[1].item() == 5.0 and x._version == d._version == 1
    assert d._base is None and not d._is_view()


def test_detach_of_grad_leaf_is_writable():
    for L in (ember, torch):
        q = L.zeros(3, requires_grad=True)
        dq = q.detach()
        dq[1] = 42.0
        assert q[1].item() == 42.0 and dq._base is None


def test_reshape_copy_is_unsafe_view():
    out = []
    for L in (ember, torch):
        x = L.arange(12., requires_grad=True)
        y = x.view(3, 4).t().reshape(12)
        y.pow(2).sum().backward()
        nf = [type(n).__name__ for n, _ in y.grad_fn.next_functions]
        out.append((y.grad_fn.name(), nf, y._is_view(), x.grad.tolist()))
    assert out[0] == out[1]


def test_as_subclass_is_an_alias_view():
    res = []
    for L in (ember, torch):
        class Sub(L.Tensor):
            pass
        x = L.randn(3, requires_grad=True)
        c = x.clone()
        s = c.as_subclass(Sub)
        r = [type(s.grad_fn).__name__, s._base is c, s.is_leaf]
        s.mul_(2)
        r.append(c.grad_fn.name())
        r.append(type((x.as_subclass(Sub) * 2).grad_fn).__name__)
        res.append(r)
    assert res[0] == res[1]


# ---------------------------------------------------------------- grad_fn names


def _setitem(lib, b, value):
    c = b.clone()
    c[0] = value(lib)
    return c


def _act(name, **kw):
    return lambda lib, b: getattr(lib.nn.functional, name)(b.clone(), **kw)


GRAD_FN_CASES = {
    "elu_inplace": _act("elu", inplace=True),
    "elu_": _act("elu_"),
    "relu_inplace": _act("relu", inplace=True),
    "relu_": lambda lib, b: b.clone().relu_(),
    "torch.relu_": lambda lib, b: lib.relu_(b.clone()),
    "leaky_relu_inplace": _act("leaky_relu", inplace=True),
    "leaky_relu_": _act("leaky_relu_"),
    "hardtanh_inplace": _act("hardtanh", inplace=True),
    "hardtanh_": _act("hardtanh_"),
    "relu6_inplace": _act("relu6", inplace=True),
    "threshold_inplace": lambda lib, b: lib.nn.functional.threshold(b.clone(), 0.1, 0.,
                                                                    inplace=True),
    "threshold_": lambda lib, b: lib.nn.functional.threshold_(b.clone(), 0.1, 0.),
    "celu_inplace": _act("celu", inplace=True),
    "celu_": _act("celu_"),
    "selu_inplace": _act("selu", inplace=True),
    "selu_": _act("selu_"),
    "rrelu_inplace": _act("rrelu", inplace=True),
    "rrelu_": _act("rrelu_"),
    "rrelu_train_inplace": _act("rrelu", training=True, inplace=True),
    "rrelu_train": _act("rrelu", training=True),
    "silu_inplace": _act("silu", inplace=True),
    "hardsigmoid_inplace": _act("hardsigmoid", inplace=True),
    "hardswish_inplace": _act("hardswish", inplace=True),
    "mish_inplace": _act("mish", inplace=True),
    "add_": lambda lib, b: b.clone().add_(1),
    "add_tensor": lambda lib, b: b.clone().add_(b),
    "mul_": lambda lib, b: b.clone().mul_(2),
    "mul_tensor": lambda lib, b: b.clone().mul_(b),
    "sub_": lambda lib, b: b.clone().sub_(1),
    "div_": lambda lib, b: b.clone().div_(2),
    "clamp_": lambda lib, b: b.clone().clamp_(0, 1),
    "clamp_min_": lambda lib, b: b.clone().clamp_min_(0),
    "clamp_max_": lambda lib, b: b.clone().clamp_max_(0),
    "clamp_min_tensor": lambda lib, b: b.clone().clamp_min_(lib.tensor(0.)),
    "clamp_min": lambda lib, b: b.clamp_min(0),
    "clamp_max": lambda lib, b: b.clamp_max(0),
    "pow_": lambda lib, b: b.clone().pow_(2),
    "exp_": lambda lib, b: b.clone().exp_(),
    "zero_": lambda lib, b: b.clone().zero_(),
    "torch.zero_": lambda lib, b: lib.zero_(b.clone()),
    "fill_": lambda lib, b: b.clone().fill_(1.),
    "fill_tensor": lambda lib, b: b.clone().fill_(lib.tensor(1.)),
    "copy_": lambda lib, b: b.clone().copy_(b),
    "masked_fill_": lambda lib, b: b.clone().masked_fill_(b > 0, 0.),
    "lerp_": lambda lib, b: b.clone().lerp_(b, 0.5),
    "b[None, 0]": lambda lib, b: b[None, 0],
    "b[0, None]": lambda lib, b: b[0, None],
    "b[..., 0]": lambda lib, b: b[..., 0],
    "b[None]": lambda lib, b: b[None],
    "b[...]": lambda lib, b: b[...],
    "b[:, None, 1:]": lambda lib, b: b[:, None, 1:],
    "b[1, None, 1:, None, 2]": lambda lib, b: b.view(4, 3, 1)[1, None, 1:, None, 0],
    "b[[0, 1]]": lambda lib, b: b[[0, 1]],
    "b[mask]": lambda lib, b: b[b > 0],
    "b[0]": lambda lib, b: b[0],
    "b[1:]": lambda lib, b: b[1:],
    "b[::2]": lambda lib, b: b[::2],
    "b[0, 1]": lambda lib, b: b[0, 1],
    "b[0, 1:]": lambda lib, b: b[0, 1:],
    "b[tensor]": lambda lib, b: b[lib.tensor([0, 2])],
    "b[0] = v": lambda lib, b: _setitem(lib, b, lambda L: L.ones(3)),
    "b[0] = 0.": lambda lib, b: _setitem(lib, b, lambda L: 0.),
    "reshape_copy": lambda lib, b: b.t().reshape(12),
    "x[mask] = v": lambda lib, b: _write(b, lambda c: c.__setitem__(c > 0, 1.)),
    "x[idx] = v": lambda lib, b: _write(b, lambda c: c.__setitem__(lib.tensor([0, 2]), 1.)),
    "x[0, 1] = v": lambda lib, b: _write(b, lambda c: c.__setitem__((0, 1), 1.)),
    "x[:, 0] = t": lambda lib, b: _write(b, lambda c: c.__setitem__((slice(None), 0), b[:, 1])),
    "index_add_": lambda lib, b: b.clone().index_add_(0, lib.tensor([0, 2]), b[:2]),
    "index_put_acc": lambda lib, b: b.clone().index_put_((lib.tensor([0, 2]),), b[:2],
                                                         accumulate=True),
    "masked_scatter_": lambda lib, b: b.clone().masked_scatter_(b > 0, b),
    "addmm_": lambda lib, b: b.clone().addmm_(b, b.t()[:, :3]),
    "t_": lambda lib, b: b.clone().t_(),
    "transpose_": lambda lib, b: b.clone().transpose_(0, 1),
    "swapaxes_": lambda lib, b: b.clone().swapaxes_(0, 1),
    "unsqueeze_": lambda lib, b: b.clone().unsqueeze_(0),
    "squeeze_()": lambda lib, b: b[None].clone().squeeze_(),
    "squeeze_(0)": lambda lib, b: b[None].clone().squeeze_(0),
    "squeeze_((0,))": lambda lib, b: b[None].clone().squeeze_((0,)),
    "squeeze()": lambda lib, b: b[None].squeeze(),
    "squeeze(0)": lambda lib, b: b[None].squeeze(0),
    "squeeze((0,))": lambda lib, b: b[None].squeeze((0,)),
    "as_strided_": lambda lib, b: b.clone().as_strided_((2,), (1,)),
    "renorm": lambda lib, b: b.renorm(2, 0, 1.),
    "renorm_": lambda lib, b: b.clone().renorm_(2, 0, 1.),
    "fill_diagonal_": lambda lib, b: b.clone().fill_diagonal_(1.),
    "copy_broadcast": lambda lib, b: b.clone().copy_(b[0]),
    "div_floor_": lambda lib, b: b.clone().div_(2, rounding_mode="floor"),
}


def _write(b, f):
    c = b.clone()
    f(c)
    return c


@pytest.mark.parametrize("shape,wrap", [((7, 3), True), ((7, 3), False), ((3, 7), True),
                                        ((2, 2, 2), False), ((3,), False), ((2, 3, 2), False)])
def test_fill_diagonal_matches_torch(shape, wrap):
    def run(L):
        x = L.zeros(*shape)
        try:
            x.fill_diagonal_(5., wrap=wrap)
        except RuntimeError as e:
            return str(e)
        return x.tolist()
    assert run(ember) == run(torch)


def _grad_fn(lib, case):
    b = lib.randn(4, 3, requires_grad=True) * 1
    y = GRAD_FN_CASES[case](lib, b)
    return type(y.grad_fn).__name__, y.grad_fn.name()


@pytest.mark.parametrize("case", list(GRAD_FN_CASES))
def test_grad_fn_name_matches_torch(case):
    assert _grad_fn(ember, case) == _grad_fn(torch, case)


INPLACE_ACTS = {
    "elu": _act("elu", inplace=True), "leaky_relu": _act("leaky_relu", inplace=True),
    "hardtanh": _act("hardtanh", inplace=True),
    "threshold": lambda lib, t: lib.nn.functional.threshold(t, 0.1, 0., inplace=True),
    "celu": _act("celu", inplace=True), "selu": _act("selu", inplace=True),
    "silu": _act("silu", inplace=True), "hardswish": _act("hardswish", inplace=True),
    "mish": _act("mish", inplace=True), "relu": _act("relu", inplace=True),
}


def _inplace_act(lib, name):
    """Gradient and second gradient through an in-place activation, whether a later write
    into its result breaks backward, and the base's node after one on a view."""
    f = INPLACE_ACTS[name]
    x = lib.tensor([-1.5, -0.5, 0.05, 0.5, 2.], dtype=lib.float64, requires_grad=True)
    y = f(lib, x * 1)
    g, = lib.autograd.grad(y.sum(), x, create_graph=True)
    gg = lib.autograd.grad(g.sum(), x, allow_unused=True)[0] if g.requires_grad else None
    y = f(lib, x * 1)
    y.mul_(2)
    later = _outcome(lambda: y.sum().backward())
    v = x * 1
    f(lib, v[1:])
    return np.round(g.tolist(), 9).tolist(), \
        None if gg is None else np.round(gg.tolist(), 9).tolist(), later, v.grad_fn.name()


@pytest.mark.parametrize("name", ["elu", "celu", "selu", "silu", "hardswish", "mish"])
def test_inplace_activation_graph_matches_torch(name):
    assert _inplace_act(ember, name) == _inplace_act(torch, name)


@pytest.mark.parametrize("name", ["leaky_relu", "hardtanh", "threshold", "relu"])
def test_inplace_activation_first_grad_and_saved_result(name):
    e, t = _inplace_act(ember, name), _inplace_act(torch, name)
    assert (e[0], e[2], e[3]) == (t[0], t[2], t[3])


def test_inplace_activation_on_leaf_refused():
    for L in (ember, torch):
        x = L.randn(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            L.nn.functional.elu(x, inplace=True)
        with pytest.raises(RuntimeError, match="view of a leaf Variable"):
            L.nn.functional.elu(x[1:], inplace=True)


# ---------------------------------------------------------------- unsqueeze / None strides

@pytest.mark.parametrize("index", [(None, 0), (0, None), (None,), (None, None, 1),
                                   (Ellipsis, None), (None, Ellipsis, None),
                                   (1, None, slice(1, None), None, 2),
                                   (slice(None), None, -1), (None, slice(None, None, 2)),
                                   (None, 1, Ellipsis), (Ellipsis, None, 0),
                                   (0, Ellipsis, None, 1)])
def test_none_index_shapes_strides_values(index):
    xt = torch.arange(24.).reshape(2, 3, 4)
    xe = ember.arange(24.).reshape(2, 3, 4)
    a, b = xt[index], xe[index]
    assert tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    b.fill_(-1.)
    assert (xe == -1).sum().item() == b.numel()


def test_unsqueeze_strides_match_torch():
    xt, xe = torch.arange(24.).reshape(2, 3, 4), ember.arange(24.).reshape(2, 3, 4)
    for d in range(-4, 4):
        for f in (lambda x: x, lambda x: x[1:], lambda x: x[:, ::2], lambda x: x.mT,
                  lambda x: x[:, :1]):
            assert f(xt).unsqueeze(d).stride() == f(xe).unsqueeze(d).stride(), d


# ---------------------------------------------------------------- int-list arguments

# every element of an int[] argument is checked, in generated and hand-written fronts
INT_LIST_CASES = [
    "x.sum((0, 1.5))", "x.sum([0, 'a'])", "x.mean((0, None))", "x.mean([0, 1.5])",
    "x.permute(0, 1.0)", "x.permute((0, 1.0))", "x.permute([0, 'a'])", "x.view(2, 1.5)",
    "x.view((2, 1.5))", "x.view(-1, 1.0)", "x.reshape((2, '3'))", "x.reshape(2, '3')",
    "x.flip((0, 1.5))", "x.flip(0, 1.5)", "x.amax((0, 1.5))", "x.amax((0, 1.5), True)",
    "x.amin([0, 1.5])", "x.std((0, 1.5))", "x.var([0, 'a'])", "L.sum(x, (0, 1.5))",
    "x.sum(dim=(0, 1.5))", "x.sum((0, 1.5), dtype=L.float64)", "x.sum((0, 1.5, 2))",
    "x.sum((0, L.tensor(1.)))", "x.sum((0, np.float64(1)))", "x.sum((0, 1 + 0j))",
    "x.expand(2, 3.0)", "x.repeat(1, 1.5)", "x.tile((1, 1.5))", "L.zeros((2, 1.5))",
    "L.ones(2, 1.5)", "x.new_zeros((2, 1.5))", "x.roll((1, 1.5), (0, 1))",
    "x.roll(1, (0, 1.5))", "x.logsumexp((0, 1.5))", "x.norm(dim=(0, 1.5))",
    "x.movedim((0, 1.5), (1, 0))", "x.squeeze((0, 1.5))", "x.nansum((0, 1.5))",
    "x.count_nonzero((0, 1.5))", "L.nn.functional.pad(x, (1, 1.5))",
    "x.unflatten(1, (3, 1.5))", "x.as_strided((2, 1.5), (1, 1))",
    "x.as_strided((2, 3), (1, 1.5))", "x.split((1, 0.5))", "x.split(1.5)",
    "L.empty((2, 1.5))", "L.randn(2, 1.5)", "L.full((2, 1.5), 1.)", "x.std_mean((0, 1.5))",
    "x[::0]", "x[::-1]", "L.tensordot(x, x, dims=([0, 1.5], [0, 1]))",
    "x.clone().resize_((2, 1.5))", "L.fft.fftn(x, s=(2, 1.5))", "L.fft.fftn(x, dim=(0, 1.5))",
    "L.fft.rfft2(x, s=(2, 1.5))", "L.linalg.norm(x, dim=(0, 1.5))",
    "L.linalg.vector_norm(x, dim=(0, 1.5))", "L.linalg.matrix_norm(x, dim=(0, 1.5))",
    "x.tensor_split((1, 1.5))", "L.hsplit(x, (1, 1.5))",
]
# ...and the elements torch accepts
INT_LIST_OK = ["x.sum((0, True))", "x.view(2, True, 3)", "x.permute(0, L.tensor(1))",
               "x.sum((0, L.tensor(1)))", "x.sum((0, L.tensor([1])))",
               "x.sum((0, np.int64(1)))", "x.view(2, L.tensor(3))", "x.sum([0, 1])",
               "x.permute(L.Size([1, 0]))", "x.view(L.Size([3, 2]))"]


def _eval_outcome(lib, code):
    x = lib.randn(2, 3)
    try:
        r = eval(code, {"x": x, "L": lib, "np": np})
        return "ok", tuple(r.shape)
    except Exception as e:          # noqa: BLE001
        return type(e).__name__, str(e).split("\n")[0]


@pytest.mark.parametrize("code", INT_LIST_CASES)
def test_int_list_elements_refused_as_torch(code):
    assert _eval_outcome(ember, code) == _eval_outcome(torch, code)


@pytest.mark.parametrize("code", INT_LIST_OK)
def test_int_list_elements_accepted_as_torch(code):
    assert _eval_outcome(ember, code) == _eval_outcome(torch, code)


# ---------------------------------------------------------------- bool operands

def _bool_cases():
    """(name, arity, kind of the second operand) of every op record whose required
    arguments are (Tensor), (Tensor, Tensor) or (Tensor, Scalar)."""
    from ember._ops.registry import OPS
    cases = set()
    for op in list(OPS.values()):
        if op.is_inplace or op.public_name.startswith("_"):
            continue
        types = [a.type for a in op.schema.args if not a.has_default and not a.optional]
        if types in (["Tensor"], ["Tensor", "Tensor"], ["Tensor", "Scalar"]):
            cases.add((op.public_name, len(types), types[-1]))
    return sorted(cases)


def _bool_outcome(lib, name, n, kind, inplace):
    b = lib.tensor([True, False, True])
    o = lib.tensor([True, True, False]) if kind == "Tensor" else True
    f = getattr(b, name + "_", None) if inplace else getattr(lib, name, None)
    if f is None:
        f = getattr(b, name, None)
        if f is None:
            return "absent"
        args = () if n == 1 else (o,)
    else:
        args = () if inplace and n == 1 else (o,) if inplace else (b,) if n == 1 else (b, o)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = f(*args)
        except Exception as e:      # noqa: BLE001
            return type(e).__name__
    return str(r.dtype).split(".")[-1] if isinstance(r, lib.Tensor) else type(r).__name__


@pytest.mark.parametrize("inplace", [False, True], ids=["out_of_place", "inplace"])
def test_every_elementwise_op_on_bool_matches_torch(inplace):
    diffs = []
    for name, n, kind in _bool_cases():
        if inplace and not hasattr(torch.Tensor, name + "_"):
            continue
        t = _bool_outcome(torch, name, n, kind, inplace)
        if t in ("absent", "TypeError"):        # no such call in torch (argument parsing)
            continue
        e = _bool_outcome(ember, name, n, kind, inplace)
        if e != t and e != "absent":            # (a missing front is no bool question)
            diffs.append((name, n, kind, t, e))
    assert diffs == []


BOOL_CASES = ["L.sub(b, b)", "b - b", "b.clone().sub_(b)", "L.sub(b, 1)", "1 - b", "b - 1",
              "L.rsub(b, b)", "L.rsub(b, 1)", "L.sub(b.int(), b)", "L.dist(b, b)",
              "L.dist(b.float(), b)", "L.mvlgamma(b, 1)", "b.clone().mvlgamma_(1)",
              "L.special.multigammaln(b, 1)", "L.mvlgamma(L.tensor([2, 3]), 1)",
              "b.clone().square_()", "L.square(b)", "L.tensor([2, 3]).square_()", "L.neg(b)",
              "-b", "b.clone().neg_()", "L.igamma(b, b)", "L.igamma(b, b.float())",
              "L.igamma(L.tensor([1, 2]), L.tensor([1, 2]))", "b.clone().igamma_(b)",
              "b.clone().igamma_(b.float())", "L.igammac(b, b)", "L.median(b)",
              "L.nanmedian(b)", "L.median(b, 0)", "L.searchsorted(b, b)",
              "L.searchsorted(b, b.float())", "L.bucketize(b, b)", "L.bucketize(b.int(), b)",
              "b.clone().log_normal_()", "L.zeros(2, dtype=L.int32).log_normal_()",
              "b.clone().geometric_(0.5)", "L.zeros(2, dtype=L.int32).geometric_(0.5)",
              "L.softmax(b, 0)", "L.softmax(b.view(1, 3), 0)", "L.log_softmax(b, -1)",
              "L.trace(b)", "L.trace(b.view(1, 3))", "L.pow(b, 2)", "b / b", "b // b"]


@pytest.mark.parametrize("code", BOOL_CASES)
def test_bool_operand_outcome_matches_torch(code):
    def run(L):
        try:
            r = eval(code, {"L": L, "b": L.tensor([True, False, True])})
            return "ok", str(r.dtype)
        except Exception as e:      # noqa: BLE001
            return type(e).__name__, str(e)
    assert run(ember) == run(torch)


# ---------------------------------------------------------------- meta tensors

def _m(L, *shape):
    return L.empty(*shape, device="meta")


META_LAYOUTS = {
    "t": lambda L: _m(L, 2, 3).t(),
    "transpose": lambda L: _m(L, 2, 3, 4).transpose(0, 2),
    "permute": lambda L: _m(L, 2, 3, 4).permute(2, 0, 1),
    "expand": lambda L: _m(L, 3, 1).expand(3, 4),
    "expand_new_dim": lambda L: _m(L, 3).expand(2, 3),
    "as_strided": lambda L: _m(L, 10).as_strided((2, 3), (1, 2)),
    "as_strided_offset": lambda L: _m(L, 10).as_strided((2, 2), (2, 1), 3),
    "contiguous": lambda L: _m(L, 2, 3).t().contiguous(),
    "slice": lambda L: _m(L, 4, 5)[1:, ::2],
    "select": lambda L: _m(L, 4, 5)[:, 1],
    "select_int": lambda L: _m(L, 4, 5)[2],
    "none_index": lambda L: _m(L, 4, 5)[None, :, 1],
    "view": lambda L: _m(L, 2, 3).view(3, 2),
    "unsqueeze": lambda L: _m(L, 2, 3).t().unsqueeze(0),
    "diagonal": lambda L: _m(L, 3, 3).diagonal(),
    "mT": lambda L: _m(L, 2, 3, 4).mT,
    "unfold": lambda L: _m(L, 10).unfold(0, 3, 2),
    "narrow": lambda L: _m(L, 4, 5).narrow(1, 1, 2),
    "movedim": lambda L: _m(L, 2, 3, 4).movedim(0, 2),
    "unbind": lambda L: _m(L, 2, 3).unbind(1)[0],
    "split": lambda L: _m(L, 4, 3).split(2)[1],
    "reshape_of_t": lambda L: _m(L, 2, 3).t().reshape(6),
    "flatten": lambda L: _m(L, 2, 3, 4).flatten(1),
    "add": lambda L: _m(L, 2, 3) + 1,
    "add_t": lambda L: _m(L, 2, 3).t() + 1,
    "add_t_first": lambda L: _m(L, 3, 2).t() + _m(L, 2, 3),
    "add_t_second": lambda L: _m(L, 2, 3) + _m(L, 3, 2).t(),
    "add_broadcast_first": lambda L: _m(L, 1, 3) + _m(L, 3, 2).t(),
    "exp_sliced": lambda L: _m(L, 3, 2)[::2].exp(),
    "exp_t_sliced": lambda L: _m(L, 4, 3).t()[:, ::2].exp(),
    "exp_permuted": lambda L: _m(L, 3, 1, 4).permute(2, 1, 0) * 2,
    "exp_expanded": lambda L: _m(L, 3, 1).expand(3, 4).exp(),
    "where": lambda L: L.where(_m(L, 3, 2).t() > 0, _m(L, 2, 3), 0.),
    "mm": lambda L: _m(L, 3, 3).t() @ _m(L, 3, 3),
    "sum": lambda L: _m(L, 2, 3).t().sum(0),
    "clone_t": lambda L: _m(L, 2, 3).t().clone(),
    "clone_contiguous": lambda L: _m(L, 2, 3).t().clone(memory_format=L.contiguous_format),
    "channels_last": lambda L: _m(L, 2, 3, 4, 5).contiguous(memory_format=L.channels_last),
    "channels_last_exp": lambda L: _m(L, 2, 3, 4, 5).contiguous(
        memory_format=L.channels_last).exp(),
    "empty_like_t": lambda L: L.empty_like(_m(L, 2, 3).t()),
    "zeros_like_sliced": lambda L: L.zeros_like(_m(L, 4, 3).t()[:, ::2]),
    "to_double": lambda L: _m(L, 2, 3).t().double(),
    "cpu_to_meta": lambda L: L.empty(2, 3).t().to("meta"),
    "empty_strided": lambda L: L.empty_strided((2, 3), (1, 2), device="meta"),
    "cat": lambda L: L.cat([_m(L, 2, 3), _m(L, 2, 3)]),
    "view_as_complex": lambda L: L.view_as_complex(_m(L, 3, 4, 2)[1:]),
    "view_as_real_t": lambda L: L.view_as_real(
        L.empty(4, 3, dtype=L.complex64, device="meta").t()[1:]),
    "view_dtype_narrower": lambda L: _m(L, 4, 6)[:, :2].view(L.int16),
    "diagonal_3d": lambda L: _m(L, 3, 4, 5).permute(2, 0, 1).diagonal(0, 1, 2),
    "unfold_t": lambda L: _m(L, 6, 8).t().unfold(1, 3, 2),
    "as_strided_of_t": lambda L: _m(L, 6, 8).t().as_strided((3, 3), (2, 1), 5),
    "index_mixed": lambda L: _m(L, 4, 5, 6).permute(2, 0, 1)[1:, None, ::2, 3],
    "nested_slices": lambda L: _m(L, 10, 10)[2:][::3, 1:][1],
    "reshape_copy": lambda L: _m(L, 4, 6)[:, ::2].reshape(12),
}


def _meta_layout(L, name):
    t = META_LAYOUTS[name](L)
    cl = t.dim() == 4 and t.is_contiguous(memory_format=L.channels_last)
    return tuple(t.shape), t.stride(), t.storage_offset(), t.is_contiguous(), cl, t.device.type


@pytest.mark.parametrize("name", list(META_LAYOUTS))
def test_meta_layout_matches_torch(name):
    assert _meta_layout(ember, name) == _meta_layout(torch, name)


def test_channels_last_contiguous_on_cpu():
    x = ember.empty(2, 3, 4, 5).contiguous(memory_format=ember.channels_last)
    assert x.stride() == (60, 1, 15, 3)


HUGE_META = {
    "add": lambda L: _m(L, 2 ** 40) + 1,
    "exp": lambda L: _m(L, 2 ** 40).exp(),
    "sum": lambda L: _m(L, 2 ** 40).sum(),
    "sum_dim": lambda L: _m(L, 2 ** 20, 2 ** 20).sum(0),
    "mean_keepdim": lambda L: _m(L, 2 ** 20, 2 ** 20).mean(1, keepdim=True),
    "argmax": lambda L: _m(L, 2 ** 40).argmax(),
    "matmul": lambda L: _m(L, 2 ** 20, 2 ** 20) @ _m(L, 2 ** 20, 2 ** 20),
    "mv": lambda L: _m(L, 2 ** 20, 2 ** 20) @ _m(L, 2 ** 20),
    "softmax": lambda L: _m(L, 2 ** 20, 2 ** 20).softmax(-1),
    "where": lambda L: L.where(_m(L, 2 ** 40) > 0, _m(L, 2 ** 40), 0.),
    "cumsum_t": lambda L: _m(L, 2 ** 20, 2 ** 20).t().cumsum(0),
    "clone_t": lambda L: _m(L, 2 ** 20, 2 ** 20).t().clone(),
    "linear": lambda L: L.nn.Linear(100000, 100000, device="meta")(_m(L, 8, 100000)),
    "linear_3d": lambda L: L.nn.Linear(100000, 50000, device="meta")(_m(L, 2, 7, 100000)),
    "cat": lambda L: L.cat([_m(L, 2 ** 40), _m(L, 3), _m(L, 2 ** 40)]),
    "stack": lambda L: L.stack([_m(L, 2 ** 30, 5)] * 3, 1),
    "pad": lambda L: L.nn.functional.pad(_m(L, 2 ** 30, 2 ** 20), (1, 2)),
    "conv2d": lambda L: L.nn.functional.conv2d(_m(L, 8, 64, 2 ** 12, 2 ** 12),
                                               _m(L, 32, 64, 3, 3), padding=1),
}


@pytest.mark.parametrize("name", list(HUGE_META))
def test_huge_meta_ops_allocate_nothing(name):
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    e, t = HUGE_META[name](ember), HUGE_META[name](torch)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert (tuple(e.shape), str(e.dtype), e.stride(), e.device.type) == \
        (tuple(t.shape), str(t.dtype), t.stride(), t.device.type)
    assert grown_mb < 256


def test_huge_meta_backward_keeps_grads_on_meta():
    out = []
    for L in (ember, torch):
        lin = L.nn.Linear(100000, 100000, device="meta")
        lin(_m(L, 8, 100000)).sum().backward()
        out.append((tuple(lin.weight.grad.shape), lin.weight.grad.device.type,
                    tuple(lin.bias.grad.shape)))
    assert out[0] == out[1]


def test_huge_meta_error_names_real_sizes():
    with pytest.raises(RuntimeError, match="1099511627776"):
        _m(ember, 2 ** 40) + _m(ember, 2 ** 40 + 1)


def test_huge_meta_shape_it_cannot_infer_is_refused():
    with pytest.raises(NotImplementedError, match="cannot infer the output shape"):
        ember.nn.functional.conv2d(_m(ember, 8, 64, 2 ** 12, 2 ** 12), _m(ember, 32, 64, 3, 3),
                                   stride=2)


# ---------------------------------------------------------------- CopySlices wraps the op

def _copy_slices(L, kind):
    x = L.tensor([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], dtype=L.float64, requires_grad=True)
    w = L.tensor([0.2, -0.4, 1.1], dtype=L.float64, requires_grad=True)
    y = x * 1
    if kind == "setitem_tensor":
        y[0] = w * 2
    elif kind == "setitem_const":
        y[0] = L.ones(3, dtype=L.float64)
    elif kind == "mul_view":
        y[1].mul_(w)
    elif kind == "addcmul_view":
        y[:, 1:].addcmul_(x[:, :2], x[:, :2])
    elif kind == "elu_view":
        L.nn.functional.elu(y[1], inplace=True)
    nf = [type(n).__name__ for n, _ in y.grad_fn.next_functions]
    loss = (y * y).sum()
    gx, gw = L.autograd.grad(loss, (x, w), create_graph=True, allow_unused=True)
    ggx = L.autograd.grad((gx * gx).sum(), x, allow_unused=True)[0]
    fmt = (lambda t: None if t is None else np.round(t.tolist(), 10).tolist())
    return y.grad_fn.name(), nf, fmt(gx), fmt(gw), fmt(ggx)


@pytest.mark.parametrize("kind", ["setitem_tensor", "setitem_const", "mul_view",
                                  "addcmul_view", "elu_view"])
def test_copy_slices_edges_and_gradients_match_torch(kind):
    assert _copy_slices(ember, kind) == _copy_slices(torch, kind)


# ---------------------------------------------------------------- int-list arguments of nn.functional

_NN_INT_LISTS = [
    ("max_pool2d", lambda L, x: L.nn.functional.max_pool2d(x, (2, 1.5))),
    ("avg_pool2d", lambda L, x: L.nn.functional.avg_pool2d(x, 2, 1.5)),
    ("max_pool2d_scalar", lambda L, x: L.nn.functional.max_pool2d(x, 2.0)),
    ("conv2d", lambda L, x: L.nn.functional.conv2d(x, L.ones(1, 1, 2, 2), None, (1, 1.5))),
    ("conv2d_scalar", lambda L, x: L.nn.functional.conv2d(x, L.ones(1, 1, 2, 2), None, 1.5)),
    ("adaptive_avg_pool2d", lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, (2, 1.5))),
    ("adaptive_max_pool2d_none", lambda L, x: L.nn.functional.adaptive_max_pool2d(x, (None, 2))),
]


@pytest.mark.parametrize("name,call", _NN_INT_LISTS, ids=[c[0] for c in _NN_INT_LISTS])
def test_nn_functional_int_list_arguments_as_torch(name, call):
    outcome = {}
    for lib_name, lib in (("torch", torch), ("ember", ember)):
        try:
            r = call(lib, lib.ones(1, 1, 4, 4))
            outcome[lib_name] = ("ok", tuple(r.shape))
        except Exception as e:      # noqa: BLE001 - compared below
            outcome[lib_name] = (type(e).__name__, str(e).split(" - ")[0][:40])
    assert outcome["ember"][0] == outcome["torch"][0]
    if outcome["torch"][0] == "ok":
        assert outcome["ember"] == outcome["torch"]
    elif "received an invalid combination" not in outcome["torch"][1]:
        assert outcome["ember"][1] == outcome["torch"][1]
