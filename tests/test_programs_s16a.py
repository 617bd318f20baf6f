"""Regressions found diffing everyday programs (round 11a, session 16: reinforcement learning
and scientific computing as users write them: DQN/REINFORCE/PPO/SAC loops, physics-informed
networks, RK4 adjoints, LBFGS, Gaussian processes, flows, FFT filtering, Poisson solves) run
under torch and under ``python -m ember.run``; each checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:       # noqa: BLE001 - the class and text are compared
        return type(e).__name__, str(e)
    return "ok", tuple(r.shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_lu_det_and_slogdet_round_as_torch(dtype):
    # a normalising flow's logdet of its 2x2 mixing matrix (slogdet) and det/lu_factor of
    # float32 matrices missed torch's last bit in about half the matrices: SciPy's LAPACK
    # factors with other roundings than torch's for sides up to 16
    rng = np.random.default_rng(16)
    for _ in range(60):
        n = int(rng.integers(1, 17))
        a = rng.standard_normal((int(rng.integers(1, 3)), n, n)).astype(dtype)
        e, t = ember.tensor(a), torch.tensor(a)
        np.testing.assert_array_equal(_np(ember.linalg.det(e)), _np(torch.linalg.det(t)))
        for x, y in zip(ember.linalg.lu_factor(e), torch.linalg.lu_factor(t)):
            np.testing.assert_array_equal(_np(x), _np(y))
        es, el = ember.linalg.slogdet(e)
        ts, tl = torch.linalg.slogdet(t)
        np.testing.assert_array_equal(_np(es), _np(ts))
        if dtype == np.float64:      # (float32: torch's log of the diagonal is not NumPy's)
            np.testing.assert_array_equal(_np(el), _np(tl))
        else:
            np.testing.assert_allclose(_np(el), _np(tl), rtol=1e-6, atol=1e-6)
    # a float32 case whose factor differed (SciPy's LU gives 0.2557...; torch 0.2557... + 1ulp)
    a = np.array([[0.594074, -0.127117], [-0.728694, 0.721195]], np.float32)
    np.testing.assert_array_equal(_np(ember.linalg.det(ember.tensor(a))),
                                  _np(torch.linalg.det(torch.tensor(a))))
    for m in ([[0., 0.], [0., 0.]], [[1., 2.], [2., 4.]], [[0., 1.], [1., 0.]],
              [[1e-40, 0.], [0., 1.]], [[0., 1., 2.], [0., 3., 4.], [0., 5., 7.]]):
        e, t = ember.tensor(m, dtype=ember.float32), torch.tensor(m, dtype=torch.float32)
        for x, y in zip(ember.linalg.slogdet(e), torch.linalg.slogdet(t)):
            np.testing.assert_array_equal(_np(x), _np(y))
        for x, y in zip(ember.linalg.lu_factor_ex(e), torch.linalg.lu_factor_ex(t)):
            np.testing.assert_array_equal(_np(x), _np(y))


def test_window_overloads_need_periodic_before_beta_and_alpha():
    # kaiser_window(64, beta=8.0) ran in ember; torch has no overload taking beta without
    # periodic (nor hamming's beta without alpha, nor an argument too many)
    calls = [lambda L: L.kaiser_window(6, beta=8.0), lambda L: L.kaiser_window(6, True, beta=8.0),
             lambda L: L.kaiser_window(6, periodic=False, beta=5.0),
             lambda L: L.kaiser_window(6, False, 5.0, 3),
             lambda L: L.hamming_window(6, alpha=0.5), lambda L: L.hamming_window(6, False, 0.5),
             lambda L: L.hamming_window(6, False, beta=0.5),
             lambda L: L.hamming_window(6, True, 0.5, 0.4, 1),
             lambda L: L.hann_window(6, False, 3), lambda L: L.blackman_window(6, True, 1),
             lambda L: L.bartlett_window(6, periodic=False, dtype=L.float64),
             lambda L: L.kaiser_window(6, beta=8.0, periodic=True)]
    for c in calls:
        assert _outcome(lambda: c(ember)) == _outcome(lambda: c(torch))
    np.testing.assert_allclose(_np(ember.kaiser_window(7, False, 5.0)),
                               _np(torch.kaiser_window(7, False, 5.0)), rtol=1e-6)
    np.testing.assert_array_equal(_np(ember.hamming_window(7, True, 0.5, 0.5)),
                                  _np(torch.hamming_window(7, True, 0.5, 0.5)))


def test_solve_triangular_without_upper_is_torchs_parser_error():
    # a Gaussian-process program forgot `upper=`: torch's parser words it, not Python's
    calls = [lambda L, A, B: L.linalg.solve_triangular(A, B),
             lambda L, A, B: L.linalg.solve_triangular(A),
             lambda L, A, B: L.linalg.solve_triangular(A, B, True),
             lambda L, A, B: L.linalg.solve_triangular(A, B, True, False),
             lambda L, A, B: L.linalg.solve_triangular(A, upper=True),
             lambda L, A, B: L.linalg.solve_triangular(B=A, upper=True),
             lambda L, A, B: L.linalg.solve_triangular(A, B, left=False),
             lambda L, A, B: L.linalg.solve_triangular(A, B, upper=False, left=False)]
    for c in calls:
        assert _outcome(lambda: c(ember, ember.eye(2), ember.ones(2, 2))) == \
            _outcome(lambda: c(torch, torch.eye(2), torch.ones(2, 2)))


def test_pad_value_with_a_non_constant_mode_text_as_torch():
    # a heat-equation stencil padded circularly with a value: torch's text has no full stop
    for mode in ("reflect", "replicate", "circular"):
        for lib in (ember, torch):
            u = lib.zeros(1, 1, 4, 4)
            with pytest.raises(RuntimeError) as ei:
                lib.nn.functional.pad(u, (1, 1, 1, 1), mode=mode, value=1.0)
            if lib is torch:
                assert str(ei.value) == ember_text
            else:
                ember_text = str(ei.value)


@pytest.mark.parametrize("dim,seed", [(1, 0), (2, 7), (5, 123), (40, 3)])
def test_scrambled_sobol_points_are_torchs(dim, seed):
    # a quasi-Monte-Carlo estimate with SobolEngine(scramble=True, seed=7) differed from
    # torch's in the third digit: ember used SciPy's scrambling
    e = ember.quasirandom.SobolEngine(dim, scramble=True, seed=seed)
    t = torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed)
    for n, dt in ((1, "float64"), (6, "float32"), (9, "float64")):
        np.testing.assert_array_equal(_np(e.draw(n, dtype=getattr(ember, dt))),
                                      _np(t.draw(n, dtype=getattr(torch, dt))))
    e.fast_forward(17), t.fast_forward(17)
    np.testing.assert_array_equal(_np(e.draw(4)), _np(t.draw(4)))
    e.reset(), t.reset()        # the first point again: the shift rounded to float32
    np.testing.assert_array_equal(_np(e.draw(2, dtype=ember.float64)),
                                  _np(t.draw(2, dtype=torch.float64)))
    np.testing.assert_array_equal(_np(e.draw_base2(1)), _np(t.draw_base2(1)))


def test_unseeded_scrambled_sobol_draws_from_the_default_generator():
    ember.manual_seed(5), torch.manual_seed(5)
    e = ember.quasirandom.SobolEngine(3, scramble=True).draw(4)
    t = torch.quasirandom.SobolEngine(3, scramble=True).draw(4)
    np.testing.assert_array_equal(_np(e), _np(t))
    np.testing.assert_array_equal(_np(ember.rand(3)), _np(torch.rand(3)))
    assert _outcome(lambda: ember.quasirandom.SobolEngine(2, scramble=True, seed=1).draw(0)) == \
        _outcome(lambda: torch.quasirandom.SobolEngine(2, scramble=True, seed=1).draw(0))


def test_not_implemented_special_derivatives_are_not_implemented_errors():
    # torch.special.zeta's derivative in its first argument: torch raises NotImplementedError
    for name in ("zeta", "gammainc", "gammaincc"):
        outs = []
        for lib in (ember, torch):
            z = lib.tensor([1.5, 2.0], dtype=lib.float64, requires_grad=True)
            outs.append(_outcome(lambda: getattr(lib.special, name)(z, z).sum().backward()))
        assert outs[0] == outs[1]


@pytest.mark.parametrize("C", [2, 3, 5, 8, 13, 32])
def test_float32_softmax_rows_sum_in_torchs_order(C):
    # Categorical policies' log-probabilities and entropies missed torch's last digit:
    # NumPy's float32 exp, pairwise sums and division kept only 45-70% of log_softmax rows
    # (50% to 1% of softmax rows, 80-90% of logsumexp values) bit for bit torch's; the
    # row sums in torch's order (Note [float32 softmax rows]) and exp/log rounded once from
    # float64 bring them to 95% (the rest is torch's vectorised exp/log's own last bit)
    rng = np.random.default_rng(C)
    x = (rng.standard_normal((400, C)) * 2).astype(np.float32)    # (small arrays)
    e, t = ember.tensor(x), torch.tensor(x)

    def rows_equal(a, b):
        a, b = _np(a), _np(b)
        return float((a == b).all(-1).mean() if a.ndim > 1 else (a == b).mean())
    assert rows_equal(e.log_softmax(-1), t.log_softmax(-1)) > 0.93
    assert rows_equal(e.logsumexp(-1), t.logsumexp(-1)) > 0.95
    assert rows_equal(e.softmax(-1), t.softmax(-1)) > {2: 0.85, 3: 0.75, 5: 0.6, 8: 0.45,
                                                       13: 0.3, 32: 0.04}[C]
    d_e = ember.distributions.Categorical(logits=e[:, :C])
    d_t = torch.distributions.Categorical(logits=t[:, :C])
    assert rows_equal(d_e.logits, d_t.logits) > 0.93
    np.testing.assert_allclose(_np(d_e.entropy()), _np(d_t.entropy()), rtol=2e-6, atol=1e-6)
