"""ember.func against torch.func (the oracle) on the same inputs."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as enn
import ember.nn.functional as EF
from ember.func import (vmap, grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian,
                        linearize, functional_call, stack_module_state)

torch = pytest.importorskip("torch")
tf = torch.func


def E(a):
    return ember.tensor(np.asarray(a))


def T(a):
    return torch.tensor(np.asarray(a))


def close(e, t, tol=1e-10):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            close(a, b, tol)
        return
    if isinstance(t, dict):
        for k in t:
            close(e[k], t[k], tol)
        return
    ea = e.detach().numpy() if isinstance(e, ember.Tensor) else np.asarray(e)
    ta = t.detach().numpy()
    assert ea.shape == ta.shape, (ea.shape, ta.shape)
    np.testing.assert_allclose(ea, ta, rtol=tol, atol=tol)


R = np.random.default_rng(0)
X = R.standard_normal((5, 3))
W = R.standard_normal((3, 4))
V = R.standard_normal(3)


# ------------------------------------------------------------------------ vmap

def test_vmap_basic_and_in_out_dims():
    f_e = lambda x, w: (x @ w).sin().sum(-1)
    f_t = lambda x, w: (x @ w).sin().sum(-1)
    close(vmap(f_e, in_dims=(0, None))(E(X), E(W)), tf.vmap(f_t, in_dims=(0, None))(T(X), T(W)))
    close(vmap(f_e, in_dims=(1, None))(E(X.T), E(W)), tf.vmap(f_t, in_dims=(1, None))(T(X.T), T(W)))
    g_e = lambda x: x * 2
    close(vmap(g_e, out_dims=1)(E(X)), tf.vmap(g_e, out_dims=1)(T(X)))
    # unbatched output gets expanded
    close(vmap(lambda x: E(W), in_dims=0)(E(X)), tf.vmap(lambda x: T(W))(T(X)))


def test_vmap_nested_and_pytrees():
    A = R.standard_normal((2, 3, 4))
    f = lambda x, y: x * y + x.sum()
    close(vmap(vmap(f))(E(A), E(A)), tf.vmap(tf.vmap(f))(T(A), T(A)))
    close(vmap(vmap(f, in_dims=(0, None)), in_dims=(None, 0))(E(A[0]), E(A[:, 0])),
          tf.vmap(tf.vmap(f, in_dims=(0, None)), in_dims=(None, 0))(T(A[0]), T(A[:, 0])))

    def g(d, t):
        return {"a": d["x"] @ d["w"], "b": (t[0] + t[1]).exp()}
    inp_e = ({"x": E(X), "w": E(W)}, (E(X), E(X)))
    inp_t = ({"x": T(X), "w": T(W)}, (T(X), T(X)))
    dims = ({"x": 0, "w": None}, 0)
    close(vmap(g, in_dims=dims)(*inp_e), tf.vmap(g, in_dims=dims)(*inp_t))
    close(vmap(g, in_dims=dims, out_dims={"a": 1, "b": 0})(*inp_e),
          tf.vmap(g, in_dims=dims, out_dims={"a": 1, "b": 0})(*inp_t))


def test_vmap_chunk_size():
    f = lambda x: x.softmax(-1) @ E(W).T.T[:3, :3]
    ft = lambda x: x.softmax(-1) @ T(W).T.T[:3, :3]
    for cs in (1, 2, 7):
        close(vmap(f, chunk_size=cs)(E(X)), tf.vmap(ft, chunk_size=cs)(T(X)))


def test_vmap_families():
    A = R.standard_normal((4, 3, 5))
    fns = [
        lambda x: x.sum(), lambda x: x.mean(0), lambda x: x.amax(-1), lambda x: x.softmax(0),
        lambda x: x.log_softmax(-1), lambda x: x.transpose(0, 1), lambda x: x.permute(1, 0),
        lambda x: x.unsqueeze(1).expand(3, 2, 5), lambda x: x.reshape(15), lambda x: x.view(5, 3),
        lambda x: x[1:, ::2], lambda x: x[None, ..., 0], lambda x: x.squeeze(),
        lambda x: x.clone(), lambda x: x.to(torch.float32 if isinstance(x, torch.Tensor) else ember.float32),
        lambda x: (x[0] @ x.T), lambda x: x.T @ x, lambda x: x[0].dot(x[1]),
        lambda x: x.max(dim=1)[0], lambda x: x.var(1), lambda x: x.cumsum(1),
        lambda x: x.flatten(), lambda x: x.t(), lambda x: x.unbind(1)[2],
    ]
    for f in fns:
        close(vmap(f)(E(A)), tf.vmap(f)(T(A)))
    g = lambda x, y: x.where(x > 0, y)
    close(vmap(g)(E(A), E(A * 2)), tf.vmap(g)(T(A), T(A * 2)))
    close(vmap(lambda x, y: ember.cat([x, y], 1), in_dims=(0, None))(E(A), E(A[0])),
          tf.vmap(lambda x, y: torch.cat([x, y], 1), in_dims=(0, None))(T(A), T(A[0])))
    close(vmap(lambda x, y: ember.stack([x, y], -1))(E(A), E(A)),
          tf.vmap(lambda x, y: torch.stack([x, y], -1))(T(A), T(A)))
    M = R.standard_normal((4, 3, 3))
    close(vmap(lambda b, m: ember.addmm(b, m, m))(E(M[:, 0]), E(M)),
          tf.vmap(lambda b, m: torch.addmm(b, m, m))(T(M[:, 0]), T(M)))
    close(vmap(lambda m: ember.bmm(m[None], m[None]))(E(M)),
          tf.vmap(lambda m: torch.bmm(m[None], m[None]))(T(M)))


def test_vmap_conv_and_linear_modules():
    ember.manual_seed(0)
    conv = enn.Conv2d(2, 3, 3, padding=1).double()
    tconv = torch.nn.Conv2d(2, 3, 3, padding=1).double()
    with torch.no_grad():
        tconv.weight.copy_(T(conv.weight.detach().numpy()))
        tconv.bias.copy_(T(conv.bias.detach().numpy()))
    x = R.standard_normal((4, 1, 2, 5, 5))
    close(vmap(conv)(E(x)), tf.vmap(tconv)(T(x)), 1e-9)


def test_vmap_randomness():
    with pytest.raises(RuntimeError, match="randomness"):
        vmap(lambda x: x + ember.rand(3))(E(X))
    with pytest.raises(RuntimeError, match="randomness"):
        vmap(lambda x: ember.rand_like(x))(E(X))
    r = vmap(lambda x: ember.rand_like(x), randomness="different")(E(X))
    assert not np.allclose(r[0].numpy(), r[1].numpy())
    r = vmap(lambda x: ember.rand_like(x), randomness="same")(E(X))
    np.testing.assert_array_equal(r[0].numpy(), r[1].numpy())
    r = vmap(lambda x: x * 0 + ember.rand(3), randomness="same")(E(X))
    np.testing.assert_array_equal(r[0].numpy(), r[1].numpy())
    r = vmap(lambda x: x * 0 + ember.rand(3), randomness="different")(E(X))
    assert not np.allclose(r[0].numpy(), r[1].numpy())
    r = vmap(lambda x: EF.dropout(x, 0.5), randomness="different")(E(np.ones((4, 50))))
    assert not np.allclose(r[0].numpy(), r[1].numpy())


def test_vmap_inplace():
    x = E(X.copy())
    vmap(lambda a: a.mul_(2))(x)
    np.testing.assert_allclose(x.numpy(), X * 2)

    def f(a, b):
        return a.add_(b)
    def f2(a, b):
        return a.mul_(b)
    msg = "vmap: inplace arithmetic\\(self, \\*extra_args\\) is not possible"
    with pytest.raises(RuntimeError, match=msg):
        vmap(f2, in_dims=(None, 0))(E(V.copy()), E(X))
    with pytest.raises(RuntimeError, match=msg):
        tf.vmap(f2, in_dims=(None, 0))(T(V.copy()), T(X))
    with pytest.raises(RuntimeError):
        vmap(f, in_dims=(None, 0))(E(V.copy()), E(X))
    y = E(X.copy())
    vmap(f, in_dims=(0, None))(y, E(V))
    np.testing.assert_allclose(y.numpy(), X + V)


def test_vmap_errors():
    with pytest.raises(ValueError):
        vmap(lambda x, y: x + y)(E(X), E(X[:2]))
    with pytest.raises(ValueError):
        vmap(lambda x: x, in_dims=(0, 0))(E(X))
    with pytest.raises(RuntimeError, match="item"):
        vmap(lambda x: x.sum().item())(E(X))


# ------------------------------------------------------------------------ autodiff

def f_e(x, w):
    return ((x @ w).tanh() * x.sum()).sum()


def f_t(x, w):
    return ((x @ w).tanh() * x.sum()).sum()


def test_grad_variants():
    close(grad(f_e)(E(X), E(W)), tf.grad(f_t)(T(X), T(W)))
    close(grad(f_e, argnums=(0, 1))(E(X), E(W)), tf.grad(f_t, argnums=(0, 1))(T(X), T(W)))
    close(grad_and_value(f_e, argnums=1)(E(X), E(W)),
          tf.grad_and_value(f_t, argnums=1)(T(X), T(W)))
    aux_e = lambda x: (x.sin().sum(), x.cos())
    aux_t = lambda x: (x.sin().sum(), x.cos())
    close(grad(aux_e, has_aux=True)(E(V)), tf.grad(aux_t, has_aux=True)(T(V)))
    r = grad(lambda x: (x ** 2).sum())(E(V))
    assert not r.requires_grad
    with pytest.raises(RuntimeError, match="scalar"):
        grad(lambda x: x * 2)(E(V))


def test_vjp_jvp_linearize():
    fe = lambda x, w: (x @ w).sin()
    o, fn = vjp(fe, E(X), E(W))
    ot, fnt = tf.vjp(fe, T(X), T(W))
    ct = R.standard_normal((5, 4))
    close(o, ot)
    close(fn(E(ct)), fnt(T(ct)))
    tx, tw = R.standard_normal(X.shape), R.standard_normal(W.shape)
    close(jvp(fe, (E(X), E(W)), (E(tx), E(tw))), tf.jvp(fe, (T(X), T(W)), (T(tx), T(tw))))
    o, lin = linearize(lambda x: x.exp() * x, E(V))
    ot, lint = tf.linearize(lambda x: x.exp() * x, T(V))
    close(lin(E(V * 3)), lint(T(V * 3)))
    close(jvp(lambda x: (x.cos(), x.sum()), (E(V),), (E(V),)),
          tf.jvp(lambda x: (x.cos(), x.sum()), (T(V),), (T(V),)))


def test_jacobians_and_hessian():
    fe = lambda x: (x.sin() @ E(W)).exp()
    ft = lambda x: (x.sin() @ T(W)).exp()
    close(jacrev(fe)(E(V)), tf.jacrev(ft)(T(V)))
    close(jacfwd(fe)(E(V)), tf.jacfwd(ft)(T(V)))
    close(jacrev(f_e, argnums=(0, 1))(E(X), E(W)), tf.jacrev(f_t, argnums=(0, 1))(T(X), T(W)))
    close(jacfwd(f_e, argnums=1)(E(X), E(W)), tf.jacfwd(f_t, argnums=1)(T(X), T(W)))
    h = lambda x: (x.sin() * x.exp()).sum() * x.prod()
    close(hessian(h)(E(V)), tf.hessian(h)(T(V)))
    close(jacrev(jacrev(h))(E(V)), tf.jacrev(tf.jacrev(h))(T(V)))
    close(jacfwd(jacrev(h))(E(V)), tf.jacfwd(tf.jacrev(h))(T(V)))
    close(jacfwd(jacfwd(h))(E(V)), tf.jacfwd(tf.jacfwd(h))(T(V)))
    close(jacrev(jacfwd(h))(E(V)), tf.jacrev(tf.jacfwd(h))(T(V)))


def test_nested_compositions():
    h = lambda x: (x.sin() * x.exp()).sum() * x.prod()
    close(vmap(grad(h))(E(X)), tf.vmap(tf.grad(h))(T(X)))
    close(vmap(hessian(h))(E(X)), tf.vmap(tf.hessian(h))(T(X)))
    close(vmap(jacrev(jacrev(h)))(E(X)), tf.vmap(tf.jacrev(tf.jacrev(h)))(T(X)))
    close(grad(grad(lambda x: x.sin().sum() * 1))(E(V[0])) if False else
          grad(lambda x: grad(lambda y: (y.sin() * x).sum())(x).sum())(E(V)),
          tf.grad(lambda x: tf.grad(lambda y: (y.sin() * x).sum())(x).sum())(T(V)))
    close(grad(lambda x: vmap(h)(x).sum())(E(X)), tf.grad(lambda x: tf.vmap(h)(x).sum())(T(X)))
    tx = R.standard_normal(X.shape)
    close(vmap(lambda x, t: jvp(h, (x,), (t,)))(E(X), E(tx)),
          tf.vmap(lambda x, t: tf.jvp(h, (x,), (t,)))(T(X), T(tx)))
    close(vmap(jacfwd(lambda x: x.sin() * x.sum()))(E(X)),
          tf.vmap(tf.jacfwd(lambda x: x.sin() * x.sum()))(T(X)))
    # vjp computed outside, called under vmap (batched cotangents)
    o, fn = vjp(lambda x: x.sin() @ E(W), E(V))
    ot, fnt = tf.vjp(lambda x: x.sin() @ T(W), T(V))
    ct = R.standard_normal((6, 4))
    close(vmap(fn)(E(ct)), tf.vmap(fnt)(T(ct)))
    # per-sample grads w.r.t. unbatched weights
    g = lambda w, x: ((x @ w).tanh()).sum()
    close(vmap(grad(g), in_dims=(None, 0))(E(W), E(X)),
          tf.vmap(tf.grad(g), in_dims=(None, 0))(T(W), T(X)))
    # nested vmap with grad in between
    A = R.standard_normal((2, 3, 4))
    gg = lambda x: (x.sin() * x).sum()
    close(vmap(grad(lambda x: vmap(gg)(x).sum()))(E(A)),
          tf.vmap(tf.grad(lambda x: tf.vmap(gg)(x).sum()))(T(A)))


def test_grad_composes_with_regular_autograd():
    x = E(V).requires_grad_()
    g = grad(lambda y: (y ** 3).sum())(x)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * V)


# ------------------------------------------------------------------------ use cases

def _copy_params(em, tm):
    with torch.no_grad():
        for (n, p), (tn, tp) in zip(em.named_parameters(), tm.named_parameters()):
            tp.copy_(T(p.detach().numpy()))


def test_per_sample_grads_cnn():
    ember.manual_seed(0)

    class Net(enn.Module):
        def __init__(self):
            super().__init__()
            self.conv = enn.Conv2d(1, 2, 3)
            self.fc = enn.Linear(2 * 4 * 4, 3)

        def forward(self, x):
            x = EF.relu(self.conv(x))
            return self.fc(x.flatten(1))

    net = Net().double()
    data = E(R.standard_normal((4, 1, 6, 6)))
    target = E(np.array([0, 2, 1, 1]))
    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss(p, x, y):
        out = functional_call(net, p, (x.unsqueeze(0),))
        return EF.cross_entropy(out, y.unsqueeze(0))

    psg = vmap(grad(loss), in_dims=(None, 0, 0))(params, data, target)
    for i in range(4):
        net.zero_grad()
        loss(dict(net.named_parameters()), data[i], target[i]).backward()
        for k, p in net.named_parameters():
            np.testing.assert_allclose(psg[k][i].numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_model_ensembling():
    ember.manual_seed(0)
    models = [enn.Sequential(enn.Linear(3, 5), enn.Tanh(), enn.Linear(5, 2)).double()
              for _ in range(4)]
    params, buffers = stack_module_state(models)
    assert params["0.weight"].shape == (4, 5, 3) and params["0.weight"].requires_grad
    base = models[0]

    def call(p, b, x):
        return functional_call(base, (p, b), (x,))
    x = E(R.standard_normal((6, 3)))
    out = vmap(call, in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-12)
    xs = E(R.standard_normal((4, 6, 3)))
    out = vmap(call)(params, buffers, xs)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(xs[i]).detach().numpy(),
                                   rtol=1e-12)


def test_maml_inner_loop():
    def model(p, x):
        return (x @ p["w"] + p["b"]).tanh()

    def inner_loss(p, x, y):
        return ((model(p, x) - y) ** 2).mean()

    def adapt_then_loss(p, x, y, mod, G):
        for _ in range(2):
            g = G(inner_loss)(p, x, y)
            p = {k: p[k] - 0.1 * g[k] for k in p}
        return inner_loss(p, x, y)

    pw, pb = R.standard_normal((3, 2)), R.standard_normal(2)
    xs, ys = R.standard_normal((4, 5, 3)), R.standard_normal((4, 5, 2))
    pe = {"w": E(pw), "b": E(pb)}
    pt = {"w": T(pw), "b": T(pb)}
    ge = grad(lambda p: vmap(lambda x, y: adapt_then_loss(p, x, y, ember, grad))(E(xs), E(ys)).mean())(pe)
    gt = tf.grad(lambda p: tf.vmap(lambda x, y: adapt_then_loss(p, x, y, torch, tf.grad))(T(xs), T(ys)).mean())(pt)
    close(ge, gt, 1e-9)


def test_batched_jacobians_hessians():
    f = lambda x: x.sin() * x.cos().sum()
    close(vmap(jacrev(f))(E(X)), tf.vmap(tf.jacrev(f))(T(X)))
    close(vmap(jacfwd(f))(E(X)), tf.vmap(tf.jacfwd(f))(T(X)))
    h = lambda x: (x.exp() * x).sum()
    close(vmap(hessian(h))(E(X)), tf.vmap(tf.hessian(h))(T(X)))


# ------------------------------------------------------------------------ op database

def _opdb_pairs():
    from tests.opdb import OP_DB
    for info in OP_DB:
        if "float64" not in info.dtypes or not info.function:
            continue
        yield info


def _to_e(x):
    return ember.tensor(x) if isinstance(x, np.ndarray) else x


# ops vmap cannot support (torch's vmap rejects them too): data-dependent output shapes or
# Python scalars read from tensor values; random ops are covered by test_vmap_randomness
UNSUPPORTED = {"allclose", "equal", "masked_select", "quantile", "nanquantile", "nonzero",
               "argwhere", "unique", "unique_consecutive", "bincount", "histc", "as_strided",
               "as_strided_copy"}
KNOWN_FAILURES = {}


def test_vmap_every_op_against_loop(capsys):
    from ember.func import FALLBACK_COUNTS, RULE_COUNTS, DECOMPOSED_COUNTS
    ok, skipped, failed = [], [], []
    used = {"rule": set(), "decomposed": set(), "fallback": set()}
    for info in _opdb_pairs():
        fn = getattr(ember, info.name, None)
        recs = [ember._ops.registry.OPS.get(r) for r in info.op_records]
        if fn is None or info.name in UNSUPPORTED or info.name in KNOWN_FAILURES or any(
                r is not None and "generator" in r.argnames for r in recs):
            skipped.append(info.name)
            continue
        try:
            s0 = info.sample_inputs("float64", np.random.default_rng(0))[:3]
            s1 = info.sample_inputs("float64", np.random.default_rng(1))[:3]
        except Exception:
            skipped.append(info.name)
            continue
        for a, b in zip(s0, s1):
            if isinstance(a.input, list) or any(isinstance(x, (list, tuple)) and x and
                                                isinstance(x[0], np.ndarray) for x in a.args):
                continue
            items_a = [a.input] + list(a.args)
            items_b = [b.input] + list(b.args)
            if len(items_a) != len(items_b) or any(
                    isinstance(p, np.ndarray) != isinstance(q, np.ndarray) or
                    (isinstance(p, np.ndarray) and p.shape != q.shape) or
                    (not isinstance(p, np.ndarray) and not (p is q or p == q))
                    for p, q in zip(items_a, items_b)):
                continue
            kw = {k: _to_e(v) for k, v in a.kwargs.items()}
            try:
                r0 = fn(*[_to_e(x) for x in items_a], **kw)
                r1 = fn(*[_to_e(x) for x in items_b], **kw)
            except Exception:
                continue
            tens = [isinstance(x, np.ndarray) for x in items_a]
            if not any(tens):
                continue
            batched = [ember.tensor(np.stack([p, q])) if t else p
                       for p, q, t in zip(items_a, items_b, tens)]
            dims = tuple(0 if t else None for t in tens)

            def call(*xs):
                return fn(*xs, **kw)
            before = (dict(RULE_COUNTS), dict(DECOMPOSED_COUNTS), dict(FALLBACK_COUNTS))
            try:
                rv = vmap(call, in_dims=dims)(*batched)
            except Exception as e:   # noqa: BLE001
                failed.append((info.name, repr(e)[:200]))
                break
            for key, cnt, old in (("rule", RULE_COUNTS, before[0]),
                                  ("decomposed", DECOMPOSED_COUNTS, before[1]),
                                  ("fallback", FALLBACK_COUNTS, before[2])):
                if any(cnt[k] != old.get(k, 0) for k in cnt):
                    used[key].add(info.name)
            outs0 = r0 if isinstance(r0, (tuple, list)) else (r0,)
            outs1 = r1 if isinstance(r1, (tuple, list)) else (r1,)
            outsv = rv if isinstance(rv, (tuple, list)) else (rv,)
            good = len(outsv) == len(outs0)
            for p, q, v in zip(outs0, outs1, outsv):
                if not isinstance(p, ember.Tensor):
                    continue
                exp = np.stack([p.detach().numpy(), q.detach().numpy()])
                got = v.detach().numpy()
                if exp.shape != got.shape or exp.dtype != got.dtype or not np.allclose(
                        got, exp, rtol=1e-7, atol=1e-9, equal_nan=True):
                    good = False
            if not good:
                failed.append((info.name, "mismatch"))
                break
        else:
            ok.append(info.name)
    only_fallback = used["fallback"] - used["rule"] - used["decomposed"]
    with capsys.disabled():
        print(f"\nvmap vs loop over the op database: {len(ok)} ops agree, {len(failed)} fail, "
              f"{len(skipped)} skipped; ops using a batch rule: {len(used['rule'])}, "
              f"decomposed: {len(used['decomposed'])}, loop fallback only: "
              f"{len(only_fallback)}")
        for f in failed:
            print("  FAIL", f)
    assert not failed


@pytest.mark.parametrize("create_graph", [False, True])
def test_autograd_grad_is_grads_batched_matches_torch(create_graph):
    torch = pytest.importorskip("torch")
    R = np.random.default_rng(5)
    x, w = R.standard_normal((3, 4)), R.standard_normal((4, 5))
    go = R.standard_normal((6, 3, 5))
    unused = R.standard_normal(2)

    def run(lib):
        a = lib.tensor(x, requires_grad=True)
        b = lib.tensor(w, requires_grad=True)
        c = lib.tensor(unused, requires_grad=True)
        y = (a @ b).tanh()
        ga, gb, gc = lib.autograd.grad(y, (a, b, c), lib.tensor(go), is_grads_batched=True,
                                       create_graph=create_graph, allow_unused=True)
        assert gc is None
        assert ga.requires_grad == create_graph
        if create_graph:
            (h,) = lib.autograd.grad(ga.sum() + gb.pow(2).sum(), a)
            return ga, gb, h
        return ga, gb

    for e, t in zip(run(ember), run(torch)):
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)


def test_top_level_vmap_is_func_vmap():
    assert ember.vmap is ember.func.vmap
    np.testing.assert_array_equal(ember.vmap(lambda x: x.sum())(ember.ones(3, 4)).numpy(),
                                  np.full(3, 4.0))


def test_functional_call_keeps_parameter_order():
    """Swapped-in parameters are put back where they were registered (as torch does)."""
    names = {}
    for lib in (ember, torch):
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Linear(4, 2))
        params = {k: v.detach() for k, v in net.named_parameters()}
        lib.func.functional_call(net, params, (lib.ones(1, 3),))
        names[lib] = [k for k, _ in net.named_parameters()] + list(net.state_dict())
    assert names[ember] == names[torch]


@pytest.mark.parametrize("args", [(), (1,), (0, 1), (-2, -1)])
@pytest.mark.parametrize("in_dim", [0, 2])
def test_vmap_flatten_has_a_batch_rule(args, in_dim):
    from ember.func import FALLBACK_COUNTS
    x = np.random.default_rng(0).standard_normal((4, 2, 3, 5)).astype(np.float32)
    FALLBACK_COUNTS.clear()
    e = vmap(lambda t: t.flatten(*args), in_dims=in_dim)(E(x))
    t = tf.vmap(lambda t: t.flatten(*args), in_dims=in_dim)(torch.tensor(x))
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert not FALLBACK_COUNTS


@pytest.mark.parametrize("is_causal", [False, True])
def test_vmap_scaled_dot_product_attention(is_causal):
    """A Python-level function that checks the torch-function protocol (sdpa) under vmap:
    BatchedTensor's handler runs it with the protocol off (it recursed for ever)."""
    q = np.random.default_rng(0).standard_normal((3, 2, 5, 4)).astype(np.float32)
    e = vmap(lambda a: EF.scaled_dot_product_attention(a, a, a, is_causal=is_causal))(E(q))
    t = tf.vmap(lambda a: torch.nn.functional.scaled_dot_product_attention(
        a, a, a, is_causal=is_causal))(torch.tensor(q))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("with_bias,bias_batched", [(False, False), (True, False), (True, True)])
def test_vmap_conv2d_shared_input_batched_weight(with_bias, bias_batched):
    """A shared input against a batch of weights (groups=1): the batch goes into the output
    channels (no copies of the input)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((5, 4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal((5, 4) if bias_batched else (4,)).astype(np.float32)
    res = []
    for lib, vm in ((ember, vmap), (torch, tf.vmap)):
        X, W, Bv = lib.tensor(x), lib.tensor(w), lib.tensor(b)
        if not with_bias:
            f = vm(lambda w_: lib.nn.functional.conv2d(X, w_, None, 1, 1))
            res.append(f(W).numpy())
        elif bias_batched:
            f = vm(lambda w_, b_: lib.nn.functional.conv2d(X, w_, b_, 1, 1))
            res.append(f(W, Bv).numpy())
        else:
            f = vm(lambda w_: lib.nn.functional.conv2d(X, w_, Bv, 1, 1))
            res.append(f(W).numpy())
    assert res[0].shape == res[1].shape
    np.testing.assert_allclose(res[0], res[1], rtol=1e-4, atol=1e-4)
