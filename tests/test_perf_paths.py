"""Fast paths added for speed give torch's values: the float32 GELU kernels (forward, fused
backward, double backward) and pow with the scalar exponents 3 and -2 (bit for bit)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _x(dtype, inf=True):
    x = np.concatenate([np.linspace(-12, 12, 4001), [0.0, -0.0, np.inf if inf else 1.0,
                                                      -np.inf, np.nan, 1e-30,
                                                      -1e-30, 200.0, -200.0]])
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(4010,), (2, 2005), ()])
def test_gelu_forward_backward_double_backward(dtype, shape):
    x = _x(dtype, inf=False)        # gelu(+inf): float32 torch gives nan, float64 torch inf
    x = x[5:9] if shape == () else x[:4010].reshape(shape)
    if shape == ():
        x = x[0].reshape(())
    res = {}
    for lib in (ember, torch):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.gelu(t)
        g, = lib.autograd.grad(y.sum(), t, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), t)
        res[lib] = [v.detach().numpy().astype(np.float64) for v in (y, g, gg)]
    tol = {"float32": 2e-6, "float64": 1e-12, "float16": 4e-3}[dtype]
    for e, t in zip(res[ember], res[torch]):
        np.testing.assert_allclose(e, t, rtol=tol, atol=tol)


def test_gelu_float32_is_as_accurate_as_torch():
    """Against float64's exact GELU the float32 kernel errs no more than torch's does."""
    x = np.linspace(-12, 12, 200001).astype(np.float32)
    exact = torch.nn.functional.gelu(torch.tensor(x, dtype=torch.float64)).numpy()
    ours = ember.nn.functional.gelu(ember.tensor(x)).numpy()
    theirs = torch.nn.functional.gelu(torch.tensor(x)).numpy()
    assert np.abs(ours - exact).max() <= max(np.abs(theirs - exact).max(), 1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("exponent", [3.0, 3, -2.0, -2, 2.0])
def test_pow_small_integer_scalar_exponent_matches_torch_bitwise(dtype, exponent):
    x = _x(dtype)
    e = ember.pow(ember.tensor(x), exponent).numpy()
    t = torch.pow(torch.tensor(x), exponent).numpy()
    assert e.dtype == t.dtype
    np.testing.assert_array_equal(e, t)
    np.testing.assert_array_equal((ember.tensor(x) ** exponent).numpy(),
                                  (torch.tensor(x) ** exponent).numpy())
    e0 = ember.pow(ember.tensor(x[7]), exponent).numpy()            # 0-d
    np.testing.assert_array_equal(e0, torch.pow(torch.tensor(x[7]), exponent).numpy())


@pytest.mark.parametrize("L,S", [(5, 5), (3, 6), (6, 3), (1, 4)])
def test_causal_attention_values_and_gradients(L, S):
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal(s).astype(np.float32)
                  for s in ((2, 3, L, 4), (2, 3, S, 4), (2, 3, S, 4), (2, 3, L, 4)))
    res = {}
    for lib in (ember, torch):
        Q, K, V = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
        o = lib.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=True)
        res[lib] = [o.detach().numpy()] + [t.numpy() for t in
                                           lib.autograd.grad(o, (Q, K, V), lib.tensor(g))]
    for e, t in zip(res[ember], res[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("compiled_on", [True, False])
@pytest.mark.parametrize("shape,normalized,affine", [((8, 16, 32), (32,), True),
                                                      ((4, 5, 6), (5, 6), True),
                                                      ((7, 3), (3,), False)])
def test_layer_norm_both_paths_match_torch(compiled_on, shape, normalized, affine):
    """The compiled (numba) layer-norm kernels and the NumPy ones give torch's values."""
    from ember._kernels import compiled
    rng = np.random.default_rng(1)
    x, g = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    w = rng.standard_normal(normalized).astype(np.float32)
    res = {}
    was_on = compiled.switched_on()
    (compiled.enable if compiled_on else compiled.disable)()
    try:
        for lib in (ember, torch):
            m = lib.nn.LayerNorm(normalized, elementwise_affine=affine)
            if affine:
                with lib.no_grad():
                    m.weight.copy_(lib.tensor(w))
                    m.bias.fill_(0.25)
            X = lib.tensor(x, requires_grad=True)
            y = m(X)
            grads = lib.autograd.grad(y, [X] + list(m.parameters()), lib.tensor(g))
            res[lib] = [y.detach().numpy()] + [t.numpy() for t in grads]
    finally:
        (compiled.enable if was_on else compiled.disable)()
    for e, t in zip(res[ember], res[torch]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=2e-5)


def test_gelu_training_step_backward_is_torchs():
    """The training path (value and derivative from one evaluation) in a plain backward,
    twice with retain_graph, and through nn.GELU inside a model."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((6, 40)) * 3).astype(np.float32)
    w = rng.standard_normal((40, 40)).astype(np.float32)
    res = {}
    for lib in (ember, torch):
        X, W = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = (lib.nn.GELU()(X @ W) * lib.tensor(x)).sum()
        y.backward(retain_graph=True)
        first = [X.grad.numpy().copy(), W.grad.numpy().copy()]
        y.backward()
        res[lib] = first + [X.grad.numpy(), W.grad.numpy()]
    for e, t in zip(res[ember], res[torch]):
        np.testing.assert_allclose(e, t, rtol=2e-5, atol=2e-5)
