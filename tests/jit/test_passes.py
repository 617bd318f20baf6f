"""Graph passes and freezing: constant propagation, CSE, peephole, DCE, ``jit.freeze``
(attributes inlined, batch norm folded, dropout removed, preserved and mutated attributes
kept) and ``optimize_for_inference`` — outputs equal eager, as torch's do."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def _kinds(g):
    return [n.kind for n in g.all_nodes()]


def folds(x):
    a = 2 * 3 + 1
    if a > 5:
        b = x + a
    else:
        b = x - a
    return b


def test_constant_propagation_resolves_constant_branches():
    s = ember.jit.script(folds)
    kinds = _kinds(s.graph)
    assert "prim::If" not in kinds and "aten::mul" not in kinds
    assert s(ember.ones(2)).tolist() == [8.0, 8.0]


def repeated(x):
    return x.sin() + x.sin()


def test_cse_reuses_equal_pure_nodes():
    s = ember.jit.script(repeated)
    assert _kinds(s.graph).count("aten::sin") == 1
    x = ember.randn(3)
    assert ember.allclose(s(x), 2 * x.sin())


def randoms(x):
    return ember.rand(3) + ember.rand(3) + x


def test_random_ops_are_neither_folded_nor_shared():
    s = ember.jit.script(randoms)
    assert _kinds(s.graph).count("aten::rand") == 2


def squared(x):
    return x ** 2


def test_peephole_pow_two_is_a_product():
    s = ember.jit.script(squared)
    kinds = _kinds(s.graph)
    assert "aten::mul" in kinds and "aten::pow" not in kinds
    x = ember.randn(4)
    assert ember.equal(s(x), x * x)


def dead(x):
    unused = x.cos() * 3
    return x + 1


def test_dce_removes_unused_pure_nodes():
    assert "aten::cos" not in _kinds(ember.jit.script(dead).graph)


class FunctionalBN(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(ember.rand(n) + 0.5)
        self.bias = nn.Parameter(ember.randn(n))
        self.register_buffer("running_mean", ember.randn(n))
        self.register_buffer("running_var", ember.rand(n) + 0.5)

    def forward(self, x):
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            False, 0.1, 1e-5)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 8)
        self.bn = FunctionalBN(8)
        self.drop = nn.Dropout(0.3)
        self.l2 = nn.Linear(8, 2)
        self.calls = 0
        self.scale = 2.0

    def forward(self, x):
        self.calls += 1
        return self.l2(self.drop(ember.relu(self.bn(self.l1(x))))) * self.scale

    @ember.jit.export
    def twice(self, x):
        return self.forward(x) * 2


def _net():
    ember.manual_seed(0)
    return Net().eval()


def test_freeze_inlines_folds_and_keeps_mutated_attributes():
    m = _net()
    frozen = ember.jit.freeze(ember.jit.script(m))
    kinds = _kinds(frozen.graph)
    assert "prim::CallMethod" not in kinds
    assert not any("batch_norm" in k or "dropout" in k for k in kinds)
    assert kinds.count("aten::linear") == 2
    assert list(frozen.named_parameters()) == []
    x = ember.randn(5, 4)
    np.testing.assert_allclose(frozen(x).numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert frozen.calls == 1          # written by forward: still an attribute
    frozen.scale = 100.0              # folded: changing it has no effect
    np.testing.assert_allclose(frozen(x).numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_freeze_preserved_attrs_and_methods():
    m = _net()
    frozen = ember.jit.freeze(ember.jit.script(m), preserved_attrs=["scale", "twice"])
    x = ember.randn(2, 4)
    frozen.scale = 3.0
    m.scale = 3.0
    np.testing.assert_allclose(frozen(x).numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(frozen.twice(x).numpy(), (2 * m(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_freeze_refuses_training_modules_and_eager_modules():
    torch = pytest.importorskip("torch")
    s = ember.jit.script(Net())
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        ember.jit.freeze(s)
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule"):
        ember.jit.freeze(Net().eval())
    t = torch.jit.script(torch.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        torch.jit.freeze(t)


def test_optimize_for_inference_matches_eager():
    m = _net()
    opt = ember.jit.optimize_for_inference(ember.jit.script(m))
    x = ember.randn(3, 4)
    with ember.no_grad():
        np.testing.assert_allclose(opt(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)


def test_frozen_linear_matches_torch_frozen():
    torch = pytest.importorskip("torch")
    e = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)).eval()
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)).eval()
    t.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in e.state_dict().items()})
    fe = ember.jit.freeze(ember.jit.script(e))
    ft = torch.jit.freeze(torch.jit.script(t))
    x = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    np.testing.assert_allclose(fe(ember.from_numpy(x)).numpy(),
                               ft(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert list(fe.named_parameters()) == list(ft.named_parameters()) == []


class CloneThenMutate(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.ELU(inplace=True)
        self.b = nn.Identity()

    def forward(self, x):
        return self.a(x.clone()) + self.b(x.clone())


def mutate_between(x):
    a = x.sin()
    x.add_(1)
    return a + x.sin()


def test_cse_keeps_tensor_ops_apart_when_something_writes():
    m = CloneThenMutate()
    x = ember.randn(2, 3)
    assert ember.allclose(ember.jit.script(m)(x), m(x))
    s = ember.jit.script(mutate_between)
    assert _kinds(s.graph).count("aten::sin") == 2
    assert ember.allclose(s(ember.ones(3)), mutate_between(ember.ones(3)))
