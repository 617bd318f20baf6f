"""Second derivatives at torch's parity (``tests/parity/torch_gradgrad.py``): every OpInfo
of torch's op database that ember implements and torch twice-differentiates, and common
nn modules under a WGAN-GP penalty and a Hessian-vector product. Entries of ``KNOWN`` are
strict xfails (each with its reason)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

from . import torch_gradgrad as G  # noqa: E402
from . import torch_opdb as H  # noqa: E402

KNOWN = {
    "nn.functional.linear_cross_entropy.chunked":
        "by design: the chunked path computes its gradients in the forward pass and refuses "
        "create_graph with a RuntimeError naming the unchunked path",
    "linalg.norm.subgradients_at_zero":
        "at x = 0 torch's second derivative of the 2-norm is NaN (0/0 inside its formula); "
        "ember's masked formula gives 0",
    "weight_norm_linear.hvp":
        "torch's fused _weight_norm has a wrong double backward (its own gradgradcheck fails; "
        "torch's composite g * v / ||v|| and finite differences agree with ember)",
    "masked.logaddexp":
        "masked-out elements are logaddexp(-inf, -inf): torch's double backward multiplies "
        "the zero incoming gradient by NaN there; ember's gives 0",
}

try:
    OPS = G.gradgrad_ops()
except Exception as e:  # torch without its test internals
    pytest.skip(f"torch's op database is unavailable: {e}", allow_module_level=True)


def _param(obj, oid):
    marks = (pytest.mark.xfail(strict=True, reason=KNOWN[oid]),) if oid in KNOWN else ()
    return pytest.param(*obj if isinstance(obj, tuple) else (obj,), id=oid, marks=marks)


@pytest.mark.parametrize("op", [_param(op, H.op_id(op)) for op in OPS])
def test_op_gradgrad(op):
    r = G.check_gradgrad(op)
    if r.status == "nosamples":
        pytest.skip(r.reason)
    assert r.status == "pass", f"{r.id}: {r.reason}"


@pytest.mark.parametrize("entry,kind", [
    _param((e, k), f"{e.name}.{k}") for e in G.MODULES for k in ("wgan_gp", "hvp")])
def test_module_gradgrad(entry, kind):
    r = G.check_module(entry, kind)
    if r.status == "nosamples":
        pytest.skip(r.reason)
    assert r.status == "pass", f"{r.id}: {r.reason}"


@pytest.mark.parametrize("entry,kind", [
    _param((e, k), f"{e.name}.{k}") for e in G.MODULES if e.name in G.FLOAT32_MODULES
    for k in ("wgan_gp", "hvp")])
def test_module_gradgrad_float32(entry, kind):
    r = G.check_module(entry, kind, "float32")
    if r.status == "nosamples":
        pytest.skip(r.reason)
    assert r.status == "pass", f"{r.id} (float32): {r.reason}"


@pytest.mark.parametrize("entry", [
    _param(e, f"{e.name}.func_hessian") for e in G.MODULES if e.name in G.FUNC_HESSIAN_MODULES])
def test_module_func_hessian(entry):
    r = G.check_module(entry, "func_hessian")
    if r.status == "nosamples":
        pytest.skip(r.reason)
    assert r.status == "pass", f"{r.id}: {r.reason}"


def test_known_entries_exist():
    ids = {H.op_id(op) for op in OPS} | {f"{e.name}.{k}" for e in G.MODULES
                                         for k in ("wgan_gp", "hvp")}
    stale = sorted(k for k in KNOWN if k not in ids)
    assert not stale, f"KNOWN names nothing swept: {stale}"
    missing = sorted(set(G.FLOAT32_MODULES + G.FUNC_HESSIAN_MODULES) -
                     {e.name for e in G.MODULES})
    assert not missing, f"FLOAT32_MODULES names no module entry: {missing}"


# ------------------------------------------------------------ the harness checks itself

@pytest.fixture
def torch_as_ember(monkeypatch):
    monkeypatch.setattr(H, "ember", torch)
    monkeypatch.setattr(G, "ember", torch)
    monkeypatch.setattr(H, "_imported", [])
    return torch


def _ops_by_id():
    return {H.op_id(op): op for op in H.all_ops()}


def test_harness_passes_torch_against_itself(torch_as_ember):
    ops = _ops_by_id()
    bad = {}
    for oid in ("sin", "mul", "nn.functional.max_pool2d", "nn.functional.nll_loss", "cumsum"):
        r = G.check_gradgrad(ops[oid], max_samples=2)
        if r.status != "pass":
            bad[oid] = r.reason
    assert not bad, bad


def test_harness_catches_a_wrong_second_derivative(torch_as_ember, monkeypatch):
    """sin whose backward is right to first order: a constant (no graph), or with a wrong
    derivative of its own; both must fail."""
    import types

    def sin_with(backward_factor):
        class Sin(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin()

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * backward_factor(x)
        return Sin.apply

    fake = types.ModuleType("fake_ember")
    fake.__dict__.update({k: getattr(torch, k) for k in dir(torch) if not k.startswith("__")})
    monkeypatch.setattr(H, "ember", fake)
    monkeypatch.setattr(G, "ember", fake)
    sin = _ops_by_id()["sin"]
    fake.sin = sin_with(lambda x: x.detach().cos())
    r = G.check_gradgrad(sin, max_samples=2)
    assert r.status == "fail" and "does not require grad" in r.reason, r
    fake.sin = sin_with(lambda x: x.cos() + (x - x.detach()))
    r = G.check_gradgrad(sin, max_samples=2)
    assert r.status == "fail" and "second-order grad" in r.reason, r


# ------------------------------------------------------------------- the fixes, directly

def _penalty_grad(lib, f, x_np):
    x = lib.from_numpy(x_np.copy()).requires_grad_(True)
    g, = lib.autograd.grad(f(lib, x).sum(), x, create_graph=True)
    node = g.grad_fn.name() if g.grad_fn is not None else None
    h, = lib.autograd.grad((g * g).sum(), x)
    return node, H.torch_to_numpy(h) if lib is torch else h.numpy()


@pytest.mark.parametrize("name,f", [
    ("max_pool2d", lambda t, x: t.nn.functional.max_pool2d(x, 3, 2, 1)),
    ("max_pool3d", lambda t, x: t.nn.functional.max_pool3d(x[None], 2)),
    ("adaptive_max_pool2d", lambda t, x: t.nn.functional.adaptive_max_pool2d(x, 3)),
    ("avg_pool2d", lambda t, x: t.nn.functional.avg_pool2d(x, 2)),
    ("avg_pool2d_padded", lambda t, x: t.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True)),
    ("adaptive_avg_pool2d", lambda t, x: t.nn.functional.adaptive_avg_pool2d(x, (3, 2))),
    ("interpolate_area", lambda t, x: t.nn.functional.interpolate(x, (3, 4), mode="area")),
    ("nll_loss", lambda t, x: t.nn.functional.nll_loss(
        x.flatten(1)[:, :5], t.tensor([0, 3]))),
    ("norm_inf", lambda t, x: t.linalg.vector_norm(x, float("inf"))),
    ("norm_1", lambda t, x: x.norm(1)),
])
def test_first_order_gradient_depends_on_input(name, f):
    """torch's backward of these ops takes the input: under create_graph the gradient of
    the penalty through them is zeros (or values), not "does not require grad"."""
    x_np = np.random.default_rng(0).standard_normal((2, 3, 6, 6))
    t_node, t_h = _penalty_grad(torch, f, x_np)
    e_node, e_h = _penalty_grad(ember, f, x_np)
    np.testing.assert_allclose(e_h, t_h, rtol=1e-7, atol=1e-9)
    if t_node is not None and "BackwardBackward" in t_node:
        assert e_node == t_node


def test_plain_backward_builds_no_graph():
    """Without create_graph the first-order gradient is a plain tensor (no link node)."""
    x = ember.randn(2, 3, 6, 6, dtype=ember.float64, requires_grad=True)
    for y in (ember.nn.functional.max_pool2d(x, 2), ember.nn.functional.avg_pool2d(x, 3, 2, 1),
              ember.nn.functional.adaptive_avg_pool2d(x, 4)):
        g, = ember.autograd.grad(y.sum(), x)
        assert g.grad_fn is None and not g.requires_grad


def test_gradcheck_and_gradgradcheck_run_on_ember():
    F = ember.nn.functional
    gen = np.random.default_rng(1)
    x = ember.from_numpy(gen.standard_normal((1, 2, 4, 4))).requires_grad_(True)
    w = ember.from_numpy(gen.standard_normal((3, 2, 3, 3))).requires_grad_(True)
    fns = [lambda x: F.max_pool2d(x, 2), lambda x: F.avg_pool2d(x, 3, 2, 1),
           lambda x: F.adaptive_avg_pool2d(x, (3, 2)), lambda x: F.conv2d(x, w),
           lambda x: F.nll_loss(x.sum((2, 3)).log_softmax(1), ember.tensor([1])),
           lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
           lambda x: F.layer_norm(x, (4,)), lambda x: F.gelu(x)]
    for f in fns:
        assert ember.autograd.gradcheck(f, (x,), check_grad_dtypes=True)
        assert ember.autograd.gradgradcheck(f, (x,))


def _mlp_loss(lib, params, x):
    """A small conv + pool + MLP loss of flat parameters (conv 2x1x3x3, linear 4x2)."""
    F = lib.nn.functional
    w = params[:18].reshape(2, 1, 3, 3)
    v = params[18:26].reshape(4, 2)
    h = F.max_pool2d(F.softplus(F.conv2d(x, w)), 2)
    h = F.adaptive_avg_pool2d(h, 1).flatten(1)
    return F.cross_entropy(h @ v.t(), lib.tensor([1, 3]))


@pytest.mark.parametrize("api", ["autograd.functional.hessian", "func.hessian",
                                 "autograd.functional.hvp", "func.jacrev(jacrev)"])
def test_hessian_apis_match_torch(api):
    gen = np.random.default_rng(2)
    p_np, x_np = gen.standard_normal(26), gen.standard_normal((2, 1, 6, 6))
    v_np = gen.standard_normal(26)

    def run(lib):
        p, x, v = (lib.from_numpy(a.copy()) for a in (p_np, x_np, v_np))
        f = lambda q: _mlp_loss(lib, q, x)      # noqa: E731
        if api == "autograd.functional.hessian":
            return lib.autograd.functional.hessian(f, p)
        if api == "func.hessian":
            return lib.func.hessian(f)(p)
        if api == "autograd.functional.hvp":
            return lib.autograd.functional.hvp(f, p, v)[1]
        return lib.func.jacrev(lib.func.jacrev(f))(p)

    expected = H.torch_to_numpy(run(torch))
    np.testing.assert_allclose(run(ember).numpy(), expected, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("name,call", [
    ("native_layer_norm", lambda t, x: t.native_layer_norm(x, (4,), None, None, 1e-5)),
    ("native_group_norm", lambda t, x: t.native_group_norm(x, None, None, 3, 2, 4, 1, 1e-5)),
    ("native_batch_norm", lambda t, x: t.native_batch_norm(x, None, None, None, None, True,
                                                           0.1, 1e-5)),
])
def test_native_norm_statistics_differentiable_as_torch(name, call):
    """torch's native layer/batch norm statistics carry no gradient (their Hessian through
    the saved rstd is zero); group norm's do."""
    x_np = np.random.default_rng(3).standard_normal((3, 2, 4))
    got = [o.requires_grad for o in call(ember, ember.from_numpy(x_np).requires_grad_(True))]
    want = [o.requires_grad for o in call(torch, torch.from_numpy(x_np).requires_grad_(True))]
    assert got == want


@pytest.mark.parametrize("name,f", [
    ("svdvals", lambda t, A, w: (t.linalg.svdvals(A) * w[0]).sum()),
    ("svd_U", lambda t, A, w: (t.linalg.svd(A)[0] * w).sum()),
    ("matrix_norm_nuc", lambda t, A, w: t.linalg.matrix_norm(A, "nuc")),
    ("cond", lambda t, A, w: t.linalg.cond(A)),
    ("eigvalsh", lambda t, A, w: (t.linalg.eigvalsh(A + A.mT) * w[0]).sum()),
])
@pytest.mark.parametrize("how", ["jacrev(jacrev)", "hessian"])
def test_func_hessian_through_svd_and_eigh(name, f, how):
    """The svd/eigh backward skips the terms of a zero gradient of U / V: under vmap
    (jacrev over jacrev) and forward-mode AD (hessian) that zero is a placeholder or the
    very thing differentiated, so those terms must stay."""
    gen = np.random.default_rng(4)
    a_np, w_np = gen.standard_normal((3, 3)), gen.standard_normal((3, 3))

    def run(t):
        w = t.from_numpy(w_np.copy())
        g = (lambda A: f(t, A, w))
        tf = t.func
        h = tf.jacrev(tf.jacrev(g)) if how == "jacrev(jacrev)" else tf.hessian(g)
        return h(t.from_numpy(a_np.copy()))

    np.testing.assert_allclose(run(ember).numpy(), H.torch_to_numpy(run(torch)),
                               rtol=1e-7, atol=1e-9)


def test_func_hessian_of_addmm_with_a_broadcast_self():
    """vmap's addmm rule with only ``self`` batched (func.hessian's tangents): the product
    gets the batch dim too (raised a broadcast error)."""
    gen = np.random.default_rng(5)
    m, n, b = gen.standard_normal((2, 2)), gen.standard_normal((2, 2)), gen.standard_normal(1)

    def run(t):
        M, N = t.from_numpy(m.copy()), t.from_numpy(n.copy())
        f = (lambda s: (t.addmm(s, M, N, beta=0.5) ** 2).sum())
        return t.func.hessian(f)(t.from_numpy(b.copy()))

    np.testing.assert_allclose(run(ember).numpy(), H.torch_to_numpy(run(torch)), rtol=1e-9)
