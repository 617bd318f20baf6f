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
