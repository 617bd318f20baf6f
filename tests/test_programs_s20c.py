"""Regressions of round 14c (session 20): training utilities as users write them
(optimizers, LR schedulers, swa_utils, nn.utils, the Module API, AMP on CPU), each
difference checked against torch."""
import warnings

import pytest

import ember

torch = pytest.importorskip("torch")


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(x.category, str(x.message), x.filename) for x in w]


# ---------------------------------------------------------------- deprecation warnings

def test_stateless_functional_call_warns_like_torch():
    def run(L):
        m = L.nn.Linear(2, 2)
        out = []
        ws = _warnings_of(lambda: out.append(L.nn.utils.stateless.functional_call(
            m, {"bias": L.ones(2) * 5, "weight": L.eye(2)}, L.ones(1, 2))))
        return [(c, msg, f == __file__) for c, msg, f in ws], out[0].tolist()
    assert run(ember) == run(torch)
    # torch.func.functional_call itself does not warn
    assert _warnings_of(lambda: ember.func.functional_call(
        ember.nn.Linear(2, 2), {}, (ember.ones(1, 2),))) == []


def test_old_weight_norm_warning_points_into_the_library():
    # torch reports the FutureWarning from its own file, so the default filter shows it once
    def run(L):
        ws = _warnings_of(lambda: L.nn.utils.weight_norm(L.nn.Linear(3, 2)))
        return [(c, msg, f == __file__) for c, msg, f in ws]
    assert run(ember) == run(torch)
    assert len(run(ember)) == 1


def test_autocast_disabling_warnings_point_at_the_callers_line():
    def run(L):
        def body():
            with L.autocast("cpu", dtype=L.int32):
                pass
            with L.autocast("cuda"):
                pass
        return [(c, msg, f == __file__) for c, msg, f in _warnings_of(body)]
    got = run(ember)
    assert got == run(torch)
    assert [f for _, _, f in got] == [True, True]


# ---------------------------------------------------------------- fused SGD / Adagrad

def _fused_run(L, cls, **kw):
    L.manual_seed(0)
    m = L.nn.Linear(3, 2)
    o = cls(m.parameters(), fused=True, **kw)
    for _ in range(3):
        o.zero_grad()
        m(L.ones(2, 3)).pow(2).sum().backward()
        o.step()
    st = o.state[m.weight]
    return (m.weight.detach().numpy().copy(), o.state_dict()["param_groups"][0]["fused"],
            sorted(st), [str(v.dtype) for v in st.values()])


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.01)), ("SGD", dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.01)), ("Adagrad", dict(lr=0.05, lr_decay=0.01, weight_decay=0.1))])
def test_fused_sgd_and_adagrad_run_as_torch(name, kw):
    import numpy as np
    e = _fused_run(ember, getattr(ember.optim, name), **kw)
    t = _fused_run(torch, getattr(torch.optim, name), **kw)
    np.testing.assert_allclose(e[0], t[0], rtol=1e-6, atol=1e-7)
    assert e[1:] == t[1:]


def _fused_errors(L):
    out = []

    def attempt(fn):
        try:
            fn()
            out.append("ok")
        except Exception as ex:  # noqa: BLE001
            out.append((type(ex).__name__, str(ex)))
    for cls in (L.optim.SGD, L.optim.Adagrad, L.optim.Adam):
        p = L.nn.Parameter(L.ones(2, dtype=L.complex64))
        p.grad = L.ones(2, dtype=L.complex64)
        attempt(lambda: cls([p], lr=0.1, fused=True).step())
        q = L.nn.Parameter(L.ones(2, dtype=L.complex64))       # no grad: not checked
        attempt(lambda: cls([q], lr=0.1, fused=True).step())
        attempt(lambda: cls([q], lr=0.1, fused=True, foreach=True))
        attempt(lambda: cls([q], lr=0.1, fused=True, differentiable=True))
        emb = L.nn.Embedding(4, 2, sparse=True)
        emb(L.tensor([1])).sum().backward()
        w0 = emb.weight.detach().clone()
        attempt(lambda: cls(emb.parameters(), lr=0.1, fused=True).step())
        out.append(bool(L.equal(w0, emb.weight)))
    return out


def test_fused_optimizer_errors_match_torch():
    assert _fused_errors(ember) == _fused_errors(torch)


# ---------------------------------------------------------------- clip_grad_norm_ dtypes

@pytest.mark.parametrize("dts", [("float32", "float64"), ("float64", "float32"),
                                 ("float16", "float32"), ("bfloat16", "float16")])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
def test_total_norm_of_mixed_dtypes_promotes_as_torch(dts, norm_type):
    def run(L):
        ps = [L.nn.Parameter(L.zeros(2, dtype=getattr(L, d))) for d in dts]
        for p in ps:
            p.grad = L.tensor([3.0, 4.0], dtype=p.dtype)
        total = L.nn.utils.clip_grad_norm_(ps, 1.0, norm_type)
        tn = L.nn.utils.get_total_norm([L.tensor([3.0, 4.0], dtype=getattr(L, d)) for d in dts],
                                       norm_type)
        grads = [p.grad.double().tolist() for p in ps if p.dtype != L.bfloat16]
        return str(total.dtype), round(total.item(), 4), str(tn.dtype), grads
    assert run(ember) == run(torch)


# ---------------------------------------------------------------- Module.to's parsing

_MODULE_TO_CALLS = [
    ((1, 2, 3, 4), {}), (("cpu", "x"), {}), ((), {"foo": 1}), (("float32", 3), {}),
    ((), {"dtype": 3}), (("cpu",), {"foo": 1, "dtype": "float32"}),
    (("float32",), {"memory_format": 3}), ((), {"foo": 1, "bar": 2, "dtype": "float64"}),
    ((), {"copy": False}), (("cpu", None, False, True), {}), (("float64", False, False), {}),
    ((True,), {}), ((float,), {}), ((int,), {}), ((complex,), {}), (("cpu", float), {}),
    (("cpu", True), {}), (("cpu", "float64", True), {}), ((None, float), {}),
    ((0,), {}), ((), {"dtype": "float64", "device": "cpu", "non_blocking": True}),
]


def _module_to(L):
    out = []
    for args, kw in _MODULE_TO_CALLS:
        conv = lambda v: getattr(L, v) if v in ("float32", "float64") else v  # noqa: E731
        args = tuple(conv(a) for a in args)
        kw = {k: conv(v) for k, v in kw.items()}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out.append(str(L.nn.Linear(1, 1).to(*args, **kw).weight.dtype))
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e)))
    return out


def test_module_to_parses_its_arguments_as_torch():
    assert _module_to(ember) == _module_to(torch)
