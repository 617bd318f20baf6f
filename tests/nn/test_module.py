"""nn.Module / Parameter / containers against torch 2.13."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember import nn


def _np(t):
    return t.detach().numpy()


def copy_weights(em, tm):
    with torch.no_grad():
        for (n1, p1), (n2, p2) in zip(em.named_parameters(), tm.named_parameters()):
            assert n1 == n2
            p2.copy_(torch.from_numpy(_np(p1).copy()))


def pair(builder_e, builder_t):
    e, t = builder_e(), builder_t()
    copy_weights(e, t)
    return e, t


class Net:
    """The same network in both libraries."""
    @staticmethod
    def make(lib):
        class N(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = lib.nn.Linear(4, 5)
                self.seq = lib.nn.Sequential(lib.nn.Linear(5, 5), lib.nn.Identity(),
                                             lib.nn.Linear(5, 3, bias=False))
                self.register_buffer("running", lib.zeros(3))
                self.register_buffer("tmp", lib.ones(2), persistent=False)
                self.scale = lib.nn.Parameter(lib.ones(1))

            def forward(self, x):
                return self.seq(self.fc1(x)) * self.scale + self.running
        return N()


def test_registration_and_state_dict_order():
    e, t = Net.make(ember), Net.make(torch)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert list(e.state_dict().keys()) == list(t.state_dict().keys())
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert isinstance(e.state_dict(), OrderedDict)
    assert repr(e) == repr(t)
    assert [n for n, _ in e.named_parameters(prefix="m", recurse=False)] == \
        [n for n, _ in t.named_parameters(prefix="m", recurse=False)]


def test_forward_backward_matches_torch():
    e, t = Net.make(ember), Net.make(torch)
    copy_weights(e, t)
    x = np.random.RandomState(0).randn(6, 4).astype(np.float32)
    ye, yt = e(ember.from_numpy(x)), t(torch.from_numpy(x))
    np.testing.assert_allclose(_np(ye), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    ye.sum().backward()
    yt.sum().backward()
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(_np(pe.grad), pt.grad.numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=n)


def test_setattr_errors():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.ones(1))
    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Bad()

    class BadM(nn.Module):
        def __init__(self):
            self.m = nn.Linear(1, 1)
    with pytest.raises(AttributeError, match="cannot assign module before"):
        BadM()
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError) as ee:
        m.weight = ember.ones(2, 2)
    with pytest.raises(TypeError) as et:
        torch.nn.Linear(2, 2).weight = torch.ones(2, 2)
    assert str(ee.value) == str(et.value)
    m.weight = None
    assert m.weight is None and "weight" in m._parameters
    with pytest.raises(KeyError, match="attribute 'bias' already exists"):
        m.register_buffer("bias", ember.ones(1))
    with pytest.raises(AttributeError) as ee:
        m.nothing
    assert str(ee.value) == "'Linear' object has no attribute 'nothing'"
    del m.bias
    assert "bias" not in m._parameters


def test_get_submodule_parameter_buffer():
    e, t = Net.make(ember), Net.make(torch)
    assert e.get_submodule("seq.0") is e.seq[0]
    assert e.get_parameter("seq.2.weight") is e.seq[2].weight
    assert e.get_buffer("running") is e.running
    for fn, arg in [("get_submodule", "seq.7"), ("get_parameter", "seq.0.nope"),
                    ("get_buffer", "scale")]:
        with pytest.raises(AttributeError) as ee:
            getattr(e, fn)(arg)
        with pytest.raises(AttributeError) as et:
            getattr(t, fn)(arg)
        assert str(ee.value) == str(et.value)


def test_load_state_dict_errors_and_incompatible_keys():
    e, t = Net.make(ember), Net.make(torch)
    sd_e, sd_t = e.state_dict(), t.state_dict()
    del sd_e["scale"], sd_t["scale"]
    sd_e["extra"] = ember.ones(1)
    sd_t["extra"] = torch.ones(1)
    r_e = e.load_state_dict(sd_e, strict=False)
    r_t = t.load_state_dict(sd_t, strict=False)
    assert r_e.missing_keys == r_t.missing_keys and r_e.unexpected_keys == r_t.unexpected_keys
    assert repr(r_e) == repr(r_t)
    assert repr(e.load_state_dict(e.state_dict())) == "<All keys matched successfully>"
    sd_e["fc1.weight"] = ember.zeros(3, 3)
    sd_t["fc1.weight"] = torch.zeros(3, 3)
    with pytest.raises(RuntimeError) as ee:
        e.load_state_dict(sd_e)
    with pytest.raises(RuntimeError) as et:
        t.load_state_dict(sd_t)
    assert str(ee.value).replace("ember", "torch") == str(et.value).replace("N", "N")


def test_load_state_dict_copies_and_assign():
    a, b = nn.Linear(3, 2), nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    assert ember.equal(a.weight, b.weight) and a.weight is not b.weight
    sd = {"weight": ember.ones(2, 3), "bias": ember.zeros(2)}
    b.load_state_dict(sd, assign=True)
    assert isinstance(b.weight, nn.Parameter) and b.weight.requires_grad
    assert b.weight._data is sd["weight"]._data


def test_state_dict_keep_vars_and_prefix():
    m = nn.Linear(2, 2)
    assert m.state_dict(keep_vars=True)["weight"] is m.weight
    assert not m.state_dict()["weight"].requires_grad
    assert list(m.state_dict(prefix="x.").keys()) == ["x.weight", "x.bias"]


def test_hooks_order_and_kwargs():
    for lib in (ember, torch):
        log = []
        m = lib.nn.Linear(2, 2)
        m.register_forward_pre_hook(lambda mod, a: log.append("pre1"))
        m.register_forward_pre_hook(lambda mod, a: log.append("pre0"), prepend=True)
        m.register_forward_pre_hook(lambda mod, a, k: log.append(("prek", tuple(k))),
                                    with_kwargs=True)
        h = m.register_forward_hook(lambda mod, a, o: log.append("post"))
        m.register_forward_hook(lambda mod, a, k, o: o * 2, with_kwargs=True)
        x = lib.ones(1, 2)
        y = m(x)
        h.remove()
        m(x)
        if lib is ember:
            log_e, y_e = log, y
        else:
            log_t, y_t = log, y
    assert log_e == log_t


def test_always_call_hook_runs_on_error():
    for lib in (ember, torch):
        log = []

        class Boom(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")
        m = Boom()
        m.register_forward_hook(lambda mod, a, o: log.append("always"), always_call=True)
        with pytest.raises(ValueError):
            m(lib.ones(1))
        assert log == ["always"]


def test_full_backward_hooks_match_torch():
    res = {}
    for lib in (ember, torch):
        log = []
        m = lib.nn.Linear(3, 2)
        with torch.no_grad() if lib is torch else ember.no_grad():
            m.weight.copy_(lib.arange(6.).reshape(2, 3))
            m.bias.fill_(0.5)
        m.register_full_backward_pre_hook(
            lambda mod, go: log.append(("pre", [tuple(g.shape) for g in go])))
        m.register_full_backward_hook(
            lambda mod, gi, go: (log.append(("bw", [tuple(g.shape) for g in gi],
                                                 [g.detach().numpy().tolist() for g in go])),
                                 (gi[0] * 3,))[1])
        x = lib.ones(4, 3, requires_grad=True)
        m(x).sum().backward()
        res[lib] = (log, x.grad.numpy().tolist())
    assert res[ember] == res[torch]


def test_train_eval_requires_grad_zero_grad_apply():
    e = Net.make(ember)
    e.eval()
    assert not e.training and not e.seq[0].training
    e.train()
    assert e.seq[2].training
    e.requires_grad_(False)
    assert not any(p.requires_grad for p in e.parameters())
    e.requires_grad_(True)
    e(ember.ones(1, 4)).sum().backward()
    assert e.fc1.weight.grad is not None
    e.zero_grad()
    assert e.fc1.weight.grad is None
    names = []
    e.apply(lambda m: names.append(type(m).__name__))
    assert names == ["Linear", "Linear", "Identity", "Linear", "Sequential", "N"]


def test_dtype_conversion():
    e = Net.make(ember)
    e.double()
    assert e.fc1.weight.dtype == ember.float64 and isinstance(e.fc1.weight, nn.Parameter)
    assert e.running.dtype == ember.float64
    e.to(ember.float32)
    assert e.fc1.weight.dtype == ember.float32
    e.half()
    assert e.fc1.weight.dtype == ember.float16
    e.float()
    e.to("cpu")
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        e.to(ember.int64)
    with pytest.raises(Exception):
        e.cuda()


def test_parameter_basics():
    p = nn.Parameter(ember.ones(2))
    assert p.requires_grad and isinstance(p, ember.Tensor)
    assert repr(p) == repr(torch.nn.Parameter(torch.ones(2)))
    assert type(p * 2) is ember.Tensor
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q is not p and ember.equal(p, q)
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is nn.Parameter and ember.equal(p, r)
    assert not nn.Parameter(ember.ones(1), requires_grad=False).requires_grad
    b = nn.Buffer(ember.ones(2))
    m = nn.Module()
    m.buf = b
    assert "buf" in m._buffers
    m.nb = nn.Buffer(ember.ones(1), persistent=False)
    assert list(m.state_dict()) == ["buf"]


def test_deepcopy_and_pickle_module():
    e = Net.make(ember)
    e2 = copy.deepcopy(e)
    assert e2.fc1.weight is not e.fc1.weight
    assert ember.equal(e2.fc1.weight, e.fc1.weight)


def test_sequential_ops_and_repr():
    def mk(lib):
        return lib.nn.Sequential(lib.nn.Linear(1, 2), lib.nn.Identity(), lib.nn.Linear(2, 3))
    e, t = mk(ember), mk(torch)
    assert repr(e[1:]) == repr(t[1:])
    assert len(e) == 3 and isinstance(e[-1], nn.Linear)
    e.append(nn.Identity())
    t.append(torch.nn.Identity())
    e.insert(0, nn.Identity())
    t.insert(0, torch.nn.Identity())
    e.extend([nn.Identity()])
    t.extend([torch.nn.Identity()])
    assert repr(e) == repr(t)
    assert type(e.pop(0)).__name__ == type(t.pop(0)).__name__
    assert repr(e + e) == repr(t + t)
    del e[0]
    del t[0]
    assert repr(e) == repr(t)
    o = nn.Sequential(OrderedDict([("a", nn.Identity()), ("b", nn.Linear(1, 1))]))
    assert repr(o) == repr(torch.nn.Sequential(OrderedDict([("a", torch.nn.Identity()),
                                                           ("b", torch.nn.Linear(1, 1))])))


def test_modulelist_moduledict_paramlist_paramdict_reprs():
    def mk(lib):
        m = lib.nn.Module()
        m.l = lib.nn.ModuleList([lib.nn.Linear(2, 2) for _ in range(3)] + [lib.nn.Identity()])
        m.d = lib.nn.ModuleDict({"x": lib.nn.Linear(1, 1), "y": lib.nn.Identity()})
        m.pl = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2, 3)), lib.ones(1)])
        m.pd = lib.nn.ParameterDict({"a": lib.nn.Parameter(lib.ones(2))})
        return m
    e, t = mk(ember), mk(torch)
    assert repr(e) == repr(t)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert list(e.d.keys()) == ["x", "y"] and len(e.l) == 4


def test_dir_and_extra_repr():
    m = nn.Linear(2, 3)
    d = dir(m)
    assert "weight" in d and "forward" in d and "in_features" in d
    assert m.extra_repr() == torch.nn.Linear(2, 3).extra_repr()


def test_state_dict_hooks():
    for lib in (ember, torch):
        m = lib.nn.Linear(2, 2)
        log = []
        m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append("pre"))
        m.register_load_state_dict_post_hook(lambda mod, keys: log.append(("post", keys.missing_keys)))
        m._register_state_dict_hook(lambda mod, sd, prefix, meta: log.append("sdhook"))
        m.load_state_dict(m.state_dict())
        assert log == ["pre", "sdhook", ("post", [])]


def test_missing_forward():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(1)


def _container_story(lib):
    """Sequential / ModuleList / ParameterList edits; returns the layouts seen."""
    nn_ = lib.nn
    seen = []
    seq = nn_.Sequential(nn_.ReLU(), nn_.Tanh())
    seq.insert(1, nn_.Sigmoid()).insert(-1, nn_.ELU()).insert(0, nn_.GELU()).append(nn_.Identity())
    seq.extend([nn_.Softsign()])
    seen.append([type(m).__name__ for m in seq])
    seen.append(type(seq.pop(2)).__name__)
    seen.append(list(seq._modules))
    for bad in (lambda: seq.insert(10, nn_.ReLU()), lambda: seq.insert(0, "x")):
        try:
            bad()
        except Exception as e:  # noqa: BLE001 (the class is what is compared)
            seen.append(type(e).__name__)
    x = lib.tensor([[-1.0, 0.5]])
    seen.append([round(v, 5) for v in seq(x).flatten().tolist()])
    ml = nn_.ModuleList([nn_.ReLU(), nn_.Tanh()])
    ml.insert(1, nn_.Sigmoid())
    ml.insert(3, nn_.ELU())
    ml.append(nn_.GELU())
    seen.append([type(m).__name__ for m in ml] + [type(ml.pop(0)).__name__, list(ml._modules)])
    pl = nn_.ParameterList([nn_.Parameter(lib.ones(2))])
    pl.append(lib.zeros(3)).extend([lib.ones(1)])
    seen.append([tuple(p.shape) for p in pl] + [type(pl[1]).__name__])
    try:
        pl.extend(lib.ones(2))
    except TypeError as e:
        seen.append(str(e))
    return seen


def test_container_edits_match_torch():
    assert _container_story(ember) == _container_story(torch)
