"""Conversions and odd corners of the quantized activations, the functional modules and the
QAT fused conv/linear + batch norm modules, each against torch: ``from_float`` /
``from_reference`` / ``to_float``, their error messages, scripting, state_dict loading,
and the QAT forward of the 1d/3d variants."""
import io

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.ao.quantization as TQ  # noqa: E402

import ember  # noqa: E402
import ember.ao.quantization as EQ  # noqa: E402
from tests.quantization.conftest import assert_same_q, to_ember  # noqa: E402

LIBS = ((torch, TQ), (ember, EQ))


def _observed(lib, Q, mod, x):
    """``mod`` with an output observer that has seen ``x`` (not ``mod(x)``: float rounding
    of the two libraries' activations is not under test here)."""
    mod.activation_post_process = Q.MinMaxObserver()
    mod.activation_post_process(lib.from_numpy(x))
    return mod


ACTIVATIONS = {"Hardswish": lambda nn: nn.Hardswish(), "ELU": lambda nn: nn.ELU(0.7),
               "LeakyReLU": lambda nn: nn.LeakyReLU(0.3), "Sigmoid": lambda nn: nn.Sigmoid(),
               "Softmax": lambda nn: nn.Softmax(1)}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_from_float_and_from_reference_equal_torch(name):
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32) * 2
    tx = torch.quantize_per_tensor(torch.from_numpy(x), 0.04, 60, torch.quint8)
    got = []
    for lib, Q in LIBS:
        float_mod = _observed(lib, Q, ACTIVATIONS[name](lib.nn), x)
        q = getattr(lib.ao.nn.quantized, name).from_float(float_mod)
        cls = getattr(lib.ao.nn.quantized, name)
        # (torch's Sigmoid has no from_reference; ember's does)
        r = cls.from_reference(float_mod, 0.02, 7) if name != "Sigmoid" else q
        got.append((q, r))
    (tq, tr), (eq, er) = got
    for e, t in ((eq, tq), (er, tr)):
        assert repr(e) == repr(t)
        assert {k: float(v) for k, v in e.state_dict().items()} == \
            {k: float(v) for k, v in t.state_dict().items()}
        assert_same_q(e(to_ember(tx)), t(tx))


def test_relu6_from_float_keeps_inplace():
    t = torch.ao.nn.quantized.ReLU6.from_float(torch.nn.ReLU6(True))
    e = ember.ao.nn.quantized.ReLU6.from_float(ember.nn.ReLU6(True))
    assert repr(e) == repr(t) == "QuantizedReLU6(inplace=True)"
    assert isinstance(e, ember.nn.ReLU)


@pytest.mark.parametrize("make", [
    lambda q: q.ReLU6(), lambda q: q.Hardswish(0.03, 40), lambda q: q.ELU(0.04, 70, 0.5),
    lambda q: q.LeakyReLU(0.03, 30, 0.2), lambda q: q.Sigmoid(1 / 256, 0),
    lambda q: q.Softmax(1, 1 / 256, 0), lambda q: q.Softmax(None, 1 / 256, 0)])
@pytest.mark.parametrize("rank", [3, 4])
def test_scripted_activation_equals_torch(make, rank):
    x = np.random.default_rng(rank).standard_normal((2, 3, 4, 2)[:rank]).astype(np.float32)
    tx = torch.quantize_per_tensor(torch.from_numpy(x), 0.05, 64, torch.quint8)
    want = torch.jit.script(make(torch.ao.nn.quantized))(tx)
    scripted = ember.jit.script(make(ember.ao.nn.quantized))
    assert_same_q(scripted(to_ember(tx)), want)
    buf = io.BytesIO()
    ember.jit.save(scripted, buf)
    buf.seek(0)
    assert_same_q(ember.jit.load(buf)(to_ember(tx)), want)


FLOAT_FUNCTIONAL_CALLS = [lambda f, a, b: f.add(a, b), lambda f, a, b: f.add_scalar(a, 0.5),
                          lambda f, a, b: f.mul(a, b), lambda f, a, b: f.mul_scalar(a, -2.0),
                          lambda f, a, b: f.cat([a, b], 1), lambda f, a, b: f.add_relu(a, b),
                          lambda f, a, b: f.matmul(a, b.t())]


def test_float_functionals_compute_and_observe_like_torch():
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    seen = []
    for lib, Q in LIBS:
        nnq = lib.ao.nn.quantized
        ta, tb = lib.from_numpy(a), lib.from_numpy(b)
        fx = [call(nnq.FXFloatFunctional(), ta, tb) for call in FLOAT_FUNCTIONAL_CALLS]
        ff = nnq.FloatFunctional()
        ranges = []
        for call, want in zip(FLOAT_FUNCTIONAL_CALLS, fx):     # a fresh observer per op
            ff.activation_post_process = Q.MinMaxObserver()
            np.testing.assert_array_equal(call(ff, ta, tb).numpy(), want.numpy())
            obs = ff.activation_post_process
            lo, hi = float(obs.min_val), float(obs.max_val)
            ranges.append(None if lo == float("inf") else (lo, hi))    # inf: saw nothing
        seen.append(([o.numpy() for o in fx], ranges))
        with pytest.raises(RuntimeError, match="FloatFunctional is not intended"):
            nnq.FXFloatFunctional()(ta)
    for e, t in zip(seen[1][0], seen[0][0]):
        np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.array([r or (0, 0) for r in seen[1][1]]),
                               np.array([r or (0, 0) for r in seen[0][1]]), rtol=1e-6)
    assert [r is None for r in seen[1][1]] == [r is None for r in seen[0][1]]
    assert seen[0][1][1] is None and seen[0][1][3] is None   # scalar ops: not observed


def test_qfunctional_from_float_and_loading_equal_torch():
    x = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    got = []
    for lib, Q in LIBS:
        nnq = lib.ao.nn.quantized
        ff = nnq.FloatFunctional()
        ff.activation_post_process = Q.MinMaxObserver()
        ff.add(lib.from_numpy(x), lib.from_numpy(x))
        q = nnq.QFunctional.from_float(ff)
        with pytest.raises(AssertionError) as err:
            nnq.QFunctional.from_float(lib.nn.Identity())
        with pytest.raises(RuntimeError) as fwd:
            q(lib.ones(1))
        sd = dict(q.state_dict(), extra=lib.tensor(1.0))
        fresh = nnq.QFunctional()
        missing = fresh.load_state_dict(sd)
        got.append((repr(q), type(q.scale), type(q.zero_point), str(err.value),
                    str(fwd.value), repr(fresh), list(missing.unexpected_keys)))
    assert got[1] == got[0]


def _fused_float(lib, kind):
    nn, nni = lib.nn, lib.ao.nn.intrinsic
    return {"ConvBn1d": lambda: nni.ConvBn1d(nn.Conv1d(2, 3, 3), nn.BatchNorm1d(3)),
            "ConvBnReLU3d": lambda: nni.ConvBnReLU3d(nn.Conv3d(2, 3, 2, bias=False),
                                                     nn.BatchNorm3d(3), nn.ReLU()),
            "ConvBn2d": lambda: nni.ConvBn2d(nn.Conv2d(2, 3, 3, padding=1, stride=2),
                                             nn.BatchNorm2d(3)),
            "ConvReLU2d": lambda: nni.ConvReLU2d(nn.Conv2d(2, 3, 3), nn.ReLU()),
            "ConvReLU1d": lambda: nni.ConvReLU1d(nn.Conv1d(2, 3, 2), nn.ReLU()),
            "LinearBn1d": lambda: nni.LinearBn1d(nn.Linear(4, 3), nn.BatchNorm1d(3))}[kind]()


FUSED_INPUT = {"ConvBn1d": (4, 2, 7), "ConvBnReLU3d": (2, 2, 3, 4, 3), "ConvBn2d": (2, 2, 6, 5),
               "ConvReLU2d": (2, 2, 5, 5), "ConvReLU1d": (3, 2, 6), "LinearBn1d": (5, 4)}


def _copy_state(dst, src):
    dst.load_state_dict({k: ember.from_numpy(v.detach().clone().numpy().copy())
                         for k, v in src.state_dict().items()})


@pytest.mark.parametrize("kind", list(FUSED_INPUT))
def test_qat_fused_from_float_train_and_to_float_equal_torch(kind):
    import torch.ao.nn.intrinsic.qat as tiq
    import ember.ao.nn.intrinsic.qat as eiq
    torch.manual_seed(0)
    tf, ef = _fused_float(torch, kind), _fused_float(ember, kind)
    _copy_state(ef, tf)
    tf.qconfig, ef.qconfig = TQ.default_qat_qconfig, EQ.default_qat_qconfig
    tf[0].qconfig, ef[0].qconfig = tf.qconfig, ef.qconfig     # as prepare leaves them
    tq, eq = getattr(tiq, kind).from_float(tf.train()), getattr(eiq, kind).from_float(ef.train())
    assert repr(eq) == repr(tq)
    assert eq.weight is ef[0].weight
    if hasattr(eq, "bn"):
        assert eq.bn.running_var is ef[1].running_var
    x = np.random.default_rng(4).standard_normal(FUSED_INPUT[kind]).astype(np.float32)
    for _ in range(2):                       # second step: observers and statistics moved
        to, eo = tq(torch.from_numpy(x)), eq(ember.from_numpy(x))
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5,
                                   atol=1e-5)
    for (n, bt), be in zip(tq.named_buffers(), eq.buffers()):
        np.testing.assert_allclose(be.numpy(), bt.numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
    tb, eb = tq.to_float(), eq.to_float()
    assert repr(eb) == repr(tb) and eb.training == tb.training
    for (n, pt), pe in zip(tb.named_parameters(), eb.parameters()):
        np.testing.assert_allclose(pe.detach().numpy(), pt.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=n)


@pytest.mark.parametrize("kind", ["ConvBn2d", "ConvBnReLU3d", "LinearBn1d"])
def test_qat_fused_from_float_errors_equal_torch(kind):
    msgs = []
    for lib, Q in LIBS:
        cls = getattr(lib.ao.nn.intrinsic.qat, kind)
        wrong = lib.nn.Linear(2, 2) if kind != "LinearBn1d" else lib.nn.Conv1d(2, 2, 1)
        wrong.qconfig = Q.default_qat_qconfig
        bare, empty = _fused_float(lib, kind), _fused_float(lib, kind)
        empty.qconfig = None
        row = []
        for mod in (wrong, bare, empty):
            with pytest.raises(AssertionError) as err:
                cls.from_float(mod)
            row.append(str(err.value))
        with pytest.raises(AssertionError) as err:
            cls(*{"LinearBn1d": (2, 3)}.get(kind, (2, 3, 1)))
        msgs.append(row + [str(err.value)])
    assert msgs[1] == msgs[0]


def test_bn_stat_switches_follow_torch():
    import torch.ao.nn.intrinsic.qat as tiq
    import ember.ao.nn.intrinsic.qat as eiq
    states = []
    for lib, Q, iq in ((torch, TQ, tiq), (ember, EQ, eiq)):
        m = lib.nn.Sequential(iq.ConvBn2d(2, 3, 1, qconfig=Q.default_qat_qconfig),
                              iq.LinearBn1d(2, 3, qconfig=Q.default_qat_qconfig))
        row = []
        for step in (lambda: m.apply(iq.freeze_bn_stats), lambda: m.train(),
                     lambda: m.eval(), lambda: m.train(), lambda: m.apply(iq.update_bn_stats),
                     lambda: m.eval(), lambda: m.train()):
            step()
            row.append([(c.freeze_bn, c.training, c.bn.training) for c in m])
        states.append(row)
    assert states[1] == states[0]


@pytest.mark.parametrize("kind", ["qat.Conv1d", "qat.Conv2d", "qat.Conv3d", "intrinsic.qat.ConvReLU1d",
                                  "intrinsic.qat.ConvReLU2d", "intrinsic.qat.ConvReLU3d",
                                  "qat.Linear", "intrinsic.qat.LinearReLU"])
def test_qat_from_float_wrong_type_names_it_like_torch(kind):
    """Given the wrong float module type, torch's message ends with the type it got."""
    msgs = []
    for lib, Q in LIBS:
        cls = lib.ao.nn
        for part in kind.split("."):
            cls = getattr(cls, part)
        wrong = lib.nn.Conv2d(1, 1, 1) if kind == "qat.Linear" else lib.nn.Linear(2, 2)
        wrong.qconfig = Q.default_qat_qconfig
        with pytest.raises(AssertionError) as err:
            cls.from_float(wrong)
        msgs.append(str(err.value))
    assert msgs[1] == msgs[0]
