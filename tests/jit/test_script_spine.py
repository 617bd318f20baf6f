"""The compiler's spine end to end: scripted functions, modules and classes give eager's
results (values and gradients); graphs print in torch's form."""
from __future__ import annotations

import math
from typing import Dict, List, NamedTuple, Optional, Tuple

import pytest

import ember as torch
import ember.nn as nn


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    return a == b


def loops(x, n: int):
    acc = torch.zeros_like(x)
    for i in range(n):
        if i == 3:
            continue
        if i > 6:
            break
        acc = acc + x * i
    k = 0
    while k < 5:
        k += 1
        if k == 4:
            break
    return acc + k


def lists(x):
    xs: List[torch.Tensor] = []
    for i in range(3):
        xs.append(x * i)
    ys = [t.sum() for t in xs if t.sum() > 0]
    d: Dict[str, int] = {"a": 1}
    d["b"] = 2
    tot = 0
    for k, v in d.items():
        tot += v
    return torch.stack(ys).sum() + tot + len(xs)


def strings(x: int) -> str:
    s = f"value {x} and {x * 2:.1f}"
    return s + "!" + "{}-{}".format(x, "y")


def early(x, flag: bool):
    if flag:
        return x * 2
    y = x + 1
    if y.sum() > 100:
        return y
    return y * 3


def tuples(x) -> Tuple[torch.Tensor, int]:
    a, b = x.max(0)
    v, i = torch.max(x, dim=0)
    return a + v, int(b) + int(i)


class Pair(NamedTuple):
    a: torch.Tensor
    b: int


def named(x):
    p = Pair(x, 3)
    return p.a * p.b + p[0]


def mathy(x: float) -> float:
    return math.sqrt(x) + math.floor(x) + math.pi + abs(-x) + min(x, 2.0) + max([1.0, x])


def indexing(x):
    y = x[0] + x[:, 1].sum() + x[..., -1].mean() + x[None, 0, 1:].sum()
    x[0, 0] = 5.0
    x[1] += 1
    return y + x


def optional(x, y: Optional[int] = None):
    if y is None:
        y = 2
    return x * y


CASES = [(loops, lambda: (torch.ones(3), 10)), (lists, lambda: (torch.ones(3),)),
         (strings, lambda: (5,)), (early, lambda: (torch.ones(2), True)),
         (early, lambda: (torch.ones(2), False)), (tuples, lambda: (torch.tensor([1., 5., 2.]),)),
         (named, lambda: (torch.ones(2),)), (mathy, lambda: (7.5,)),
         (indexing, lambda: (torch.arange(12.).reshape(3, 4),)),
         (optional, lambda: (torch.ones(2),)), (optional, lambda: (torch.ones(2), 5))]


@pytest.mark.parametrize("fn,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_function_matches_eager(fn, make):
    scripted = torch.jit.script(fn)
    a, b = fn(*make()), scripted(*make())
    if isinstance(a, tuple):
        assert all(_same(x, y) for x, y in zip(a, b))
    else:
        assert _same(a, b)


class Block(nn.Module):
    __constants__ = ["scale"]

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Dropout(0.1))
        self.scale = 2.0
        self.count = 0
        self.d = nn.ModuleDict({"a": nn.Tanh(), "b": nn.Sigmoid()})

    def helper(self, x):
        return x * self.scale

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x) + i
        x = self.seq(x)
        x = self.layers[0](x)
        for k, m in self.d.items():
            x = m(x)
        self.count += 1
        if self.training:
            x = x + 1
        return self.helper(x)


def test_module_matches_eager_and_mutates_attributes():
    torch.manual_seed(0)
    m = Block().eval()
    s = torch.jit.script(m)
    x = torch.randn(2, 4)
    assert torch.allclose(m(x), s(x))
    assert s.count == 1
    assert isinstance(s, torch.jit.ScriptModule)
    assert "prim::CallMethod" in str(s.graph)
    assert "aten::linear" in str(s.inlined_graph)


def test_gradients_flow_through_scripted_module():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1))
    s = torch.jit.script(m)
    x = torch.randn(4, 3)
    s(x).sum().backward()
    scripted = [p.grad.clone() for p in m.parameters()]
    for p in m.parameters():
        p.grad = None
    m(x).sum().backward()
    for g, p in zip(scripted, m.parameters()):
        assert torch.allclose(g, p.grad)
    assert list(s.state_dict()) == list(m.state_dict())


@torch.jit.script
class Counter:
    def __init__(self, start: int):
        self.n = start

    def inc(self, k: int) -> int:
        self.n += k
        return self.n


def test_scripted_class():
    def use(x: int) -> int:
        c = Counter(x)
        c.inc(2)
        return c.inc(3)
    assert torch.jit.script(use)(1) == 6


def test_raise_becomes_jit_error_with_scripted_line():
    def f(x):
        if x.sum() > 0:
            raise ValueError("positive")
        return x
    s = torch.jit.script(f)
    with pytest.raises(torch.jit.Error, match="builtins.ValueError: positive") as info:
        s(torch.ones(2))
    assert 'raise ValueError("positive")' in str(info.value)


def test_unsupported_construct_points_at_source():
    def f(x):
        try:
            return x
        except Exception:
            return x
    with pytest.raises(torch.jit.frontend.NotSupportedError, match="try blocks aren't supported"):
        torch.jit.script(f)


def int_lists(x):
    return x.roll(1, 1) + x.view(3, 2).t() + x.permute(1, 0).t() + x.flip(0, 1)


def int_power(n: int):
    return n ** 2, 2 ** 3, n ** -1


def test_varargs_int_lists_only_where_torch_packs_them():
    x = torch.arange(6.).reshape(2, 3)
    assert torch.equal(torch.jit.script(int_lists)(x), int_lists(x))


def test_int_power_is_a_float_as_in_torchscript():
    real = pytest.importorskip("torch")
    ours = torch.jit.script(int_power)(3)
    theirs = real.jit.script(int_power)(3)
    assert ours == theirs and [type(v) for v in ours] == [type(v) for v in theirs] == [float] * 3


class _HookSub(nn.Module):
    def forward(self, x):
        return x + 1


class _HookTop(nn.Module):
    def __init__(self):
        super().__init__()
        self.s = _HookSub()

    def forward(self, x):
        return self.s(x) * 2


def test_forward_hooks_registered_before_scripting_run():
    m = _HookTop()
    m.s.register_forward_pre_hook(lambda mod, inp: (inp[0] * 10,))
    m.register_forward_hook(lambda mod, inp, out: out + 100)
    s = torch.jit.script(m)
    x = torch.ones(1)
    assert s(x).tolist() == m(x).tolist() == [122.0]
    with torch.no_grad():
        assert s(x).tolist() == [122.0]
    import io
    with pytest.raises(NotImplementedError, match="forward hooks"):
        torch.jit.save(s, io.BytesIO())
