"""Ops on an UninitializedParameter / UninitializedBuffer (a lazy module before its first
forward) raise torch's ValueError; the lazy modules' own use of them still works."""
import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402

OPS = {
    "add": lambda L, p: L.add(p, 1),
    "mul": lambda L, p: p * 2,
    "rmul": lambda L, p: 2 * p,
    "sum": lambda L, p: p.sum(),
    "linear": lambda L, p: L.nn.functional.linear(L.ones(2, 3), p),
    "clone": lambda L, p: p.clone(),
    "zero_": lambda L, p: p.zero_(),
    "numel": lambda L, p: p.numel(),
    "len": lambda L, p: len(p),
    "cat": lambda L, p: L.cat([L.ones(2), p]),
    "stack": lambda L, p: L.stack([p, p]),
}
KINDS = ("UninitializedParameter", "UninitializedBuffer")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op", OPS)
def test_op_on_uninitialized_raises_torch_value_error(op, kind):
    messages = []
    for L in (torch, ember):
        p = getattr(L.nn.parameter, kind)()
        with pytest.raises(ValueError) as err:
            OPS[op](L, p)
        messages.append(str(err.value))
    head = "Attempted to use an uninitialized parameter in "
    tail = messages[0].split(">", 1)[1]          # after torch's (object-specific) function repr
    assert messages[1].startswith(head) and messages[1].endswith(tail)


def test_not_a_fast_path_type():
    """The op fronts' fast path takes exact plain types only; an uninitialized parameter must
    keep going through ``__torch_function__``."""
    from ember._dispatch import PLAIN_TENSOR_TYPES
    p = ember.nn.UninitializedParameter()
    for op in OPS.values():
        with pytest.raises(ValueError):
            op(ember, p)
    assert ember.nn.UninitializedParameter not in PLAIN_TENSOR_TYPES
    assert ember.nn.parameter.UninitializedBuffer not in PLAIN_TENSOR_TYPES


ALLOWED = {
    "dtype": lambda L, p: str(p.dtype).split(".")[1],
    "requires_grad": lambda L, p: p.requires_grad,
    "size": lambda L, p: tuple(p.size()),
    "is_floating_point": lambda L, p: p.is_floating_point(),
    "to": lambda L, p: str(p.to(L.float64).dtype).split(".")[1],
    "repr": lambda L, p: repr(p),
}


@pytest.mark.parametrize("name", ALLOWED)
def test_allowed_uses_match_torch(name):
    got = [ALLOWED[name](L, L.nn.UninitializedParameter()) for L in (torch, ember)]
    assert got[1] == got[0]


@pytest.mark.parametrize("make", [lambda L: L.nn.LazyLinear(4),
                                  lambda L: L.nn.LazyBatchNorm1d()])
def test_lazy_module_forward_then_ops(make):
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    outs = []
    for L in (torch, ember):
        L.manual_seed(0)
        m = make(L)
        assert len(m.state_dict()) >= 1
        y = m(L.from_numpy(x))
        w = m.weight
        z = (w * 2 + 1).sum() + y.sum()
        z.backward()
        outs.append((tuple(y.shape), tuple(w.shape), type(w).__name__, w.grad is not None))
    assert outs[1] == outs[0]


def test_deepcopy_of_lazy_linear_stays_lazy():
    got = []
    for L in (torch, ember):
        c = copy.deepcopy(L.nn.LazyLinear(4))
        got.append((type(c.weight).__name__, c.weight.requires_grad, str(c.weight.dtype)[-7:]))
    assert got[1] == got[0]
