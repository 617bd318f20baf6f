"""Batching rules (ember/func/_batch_rules.py) for indexing, scatter, embedding,
broadcast_tensors, einsum and shape ops: ember.func.vmap (and vmap(grad)) against
torch.func on the same inputs, with no per-sample loop fallback for the op."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.func as EFN

torch = pytest.importorskip("torch")
tf = torch.func

B = 5
rng = np.random.default_rng(16)


def rand(*shape):
    return rng.standard_normal(shape)


def ints(hi, *shape):
    return rng.integers(0, hi, shape)


def _conv(mod, a):
    if isinstance(a, np.ndarray):
        return mod.tensor(a)
    return a


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    return x.detach().numpy()


def _close(e, t, tol):
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(e) == len(t)
        for a, b in zip(e, t):
            _close(a, b, tol)
        return
    ea, ta = np.asarray(_np(e)), np.asarray(_np(t))
    assert ea.shape == ta.shape, (ea.shape, ta.shape)
    assert ea.dtype == ta.dtype, (ea.dtype, ta.dtype)
    np.testing.assert_allclose(ea, ta, rtol=tol, atol=tol)


def check(f, args, ops, in_dims=0, out_dims=0, grad=False, tol=1e-10, allow=()):
    """``f(mod, *args)`` under vmap (or vmap(grad) with ``grad``) in ember and torch: equal
    values, the rule of each of ``ops`` applied, and nothing looped per sample (but the
    op names in ``allow``)."""
    ea = [_conv(ember, a) for a in args]
    ta = [_conv(torch, a) for a in args]
    EFN.FALLBACK_COUNTS.clear()
    EFN.RULE_COUNTS.clear()

    def ef(*a):
        return f(ember, *a)

    def tfn(*a):
        return f(torch, *a)
    if grad == "jacrev":     # a backward run once for a batch of cotangents
        e = EFN.jacrev(ef)(*ea)
        t = tf.jacrev(tfn)(*ta)
    elif grad:
        e = EFN.vmap(EFN.grad(ef), in_dims=in_dims, out_dims=out_dims)(*ea)
        t = tf.vmap(tf.grad(tfn), in_dims=in_dims, out_dims=out_dims)(*ta)
    else:
        e = EFN.vmap(ef, in_dims=in_dims, out_dims=out_dims)(*ea)
        t = tf.vmap(tfn, in_dims=in_dims, out_dims=out_dims)(*ta)
    fb = {k: v for k, v in EFN.FALLBACK_COUNTS.items() if k not in allow}
    assert not fb, fb
    for op in ops:
        assert EFN.RULE_COUNTS[op] > 0, (op, dict(EFN.RULE_COUNTS))
    _close(e, t, tol)
    return e


# ------------------------------------------------------------------ embedding

def test_embedding_indices_batched():
    w = rand(10, 3)
    check(lambda m, i: m.nn.functional.embedding(i, m.tensor(w)), [ints(10, B, 4)],
          ["embedding"])
    check(lambda m, i: m.nn.functional.embedding(i, m.tensor(w)), [ints(10, 2, B, 3)],
          ["embedding"], in_dims=1, out_dims=2)
    check(lambda m, i: m.nn.functional.embedding(i, m.tensor(w)), [ints(10, B)],
          ["embedding"])


def test_embedding_weight_batched():
    idx = ints(7, 2, 3)
    check(lambda m, w: m.nn.functional.embedding(m.tensor(idx), w), [rand(B, 7, 4)],
          ["embedding"])
    check(lambda m, w, i: m.nn.functional.embedding(i, w), [rand(7, 4, B), ints(7, B, 6)],
          ["embedding"], in_dims=(2, 0), out_dims=1)
    check(lambda m, w, i: m.nn.functional.embedding(i, w), [rand(B, 7, 4), ints(7, 3, B)],
          ["embedding"], in_dims=(0, 1), out_dims=-1)
    check(lambda m, w, i: m.nn.functional.embedding(i, w),
          [rand(B, 7, 4), ints(7, B, 2).astype(np.int32)], ["embedding"])


def test_embedding_grad():
    w = rand(9, 3)
    # per-sample weight gradients: the backward's accumulation runs batched
    check(lambda m, w, i: (m.nn.functional.embedding(i, w) ** 2).sum(),
          [w, ints(9, B, 5)], ["embedding"], in_dims=(None, 0), grad=True)
    idx = ints(9, 2, 4)
    check(lambda m, w: m.nn.functional.embedding(m.tensor(idx), w), [w],
          ["_embedding_backward"], grad="jacrev")
    check(lambda m, w: m.nn.functional.embedding(m.tensor(idx[0]), w).sum(0), [w],
          ["_embedding_backward"], grad="jacrev")
    c = rand(2, 3)
    check(lambda m, w, i: (m.nn.functional.embedding(i, w) * m.tensor(c)).sum(),
          [rand(B, 9, 3), ints(9, 2)], ["embedding"], in_dims=(0, None), grad=True)


# ------------------------------------------------------------------ gather / scatter

def test_gather():
    x, i = rand(B, 4, 3), ints(3, B, 4, 2)
    check(lambda m, x, i: m.gather(x, 1, i), [x, i], ["gather"])
    check(lambda m, x, i: m.gather(x, -1, i), [x, i], ["gather"])
    check(lambda m, x, i: x.gather(0, i), [x, ints(4, 2, 2)], ["gather"], in_dims=(0, None))
    check(lambda m, x, i: x.gather(-2, i), [rand(4, 3), ints(4, 2, B, 3)], ["gather"],
          in_dims=(None, 1), out_dims=1)
    check(lambda m, x, i: x.gather(1, i), [rand(4, B, 3), ints(3, 4, 2, B)], ["gather"],
          in_dims=(1, 2), out_dims=(2))


def test_gather_grad():
    check(lambda m, x, i: (m.gather(x, 1, i) ** 2).sum(), [rand(B, 4, 3), ints(3, B, 4, 5)],
          ["gather"], grad=True)
    check(lambda m, x, i: (x.gather(-1, i).sin()).sum(), [rand(4, B, 3), ints(3, 4, 2)],
          ["gather"], in_dims=(1, None), grad=True)


@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_scatter_src(reduce):
    kw = {} if reduce is None else {"reduce": reduce}

    def f(m, x, i, s):
        return x.scatter(1, i, s, **kw)
    check(f, [rand(B, 4, 3), ints(3, B, 4, 2), rand(B, 4, 2)], ["scatter.src"])
    check(f, [rand(4, 3), ints(3, B, 4, 2), rand(4, 2)], ["scatter.src"],
          in_dims=(None, 0, None))
    check(f, [rand(B, 4, 3), ints(3, 4, 2), rand(4, 2, B)], ["scatter.src"],
          in_dims=(0, None, 2), out_dims=1)
    check(lambda m, x, i, s: m.scatter(x, -2, i, s, **kw),
          [rand(4, 3, B), ints(4, 2, 3), rand(B, 3, 3)], ["scatter.src"], in_dims=(2, None, 0))


def test_scatter_value():
    check(lambda m, x, i: x.scatter(1, i, 2.5), [rand(B, 4, 3), ints(3, B, 4, 2)],
          ["scatter.value"])
    check(lambda m, x, i: m.scatter(x, -1, i, -1.0), [rand(4, 3), ints(3, 2, B, 1)],
          ["scatter.value"], in_dims=(None, 1))
    check(lambda m, x, i: x.scatter(0, i, 7.0, reduce="add"), [rand(4, B, 3), ints(4, 2, 3)],
          ["scatter.value"], in_dims=(1, None), out_dims=-1)


def test_scatter_add_and_reduce():
    x, i, s = rand(B, 4, 3), ints(3, B, 4, 5), rand(B, 4, 5)
    check(lambda m, x, i, s: x.scatter_add(1, i, s), [x, i, s], ["scatter_add"])
    check(lambda m, x, i, s: m.scatter_add(x, -1, i, s), [rand(4, 3), i, rand(4, 5)],
          ["scatter_add"], in_dims=(None, 0, None))
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            check(lambda m, x, i, s: x.scatter_reduce(1, i, s, red, include_self=inc),
                  [x, i, s], ["scatter_reduce.two"])
    check(lambda m, x, i, s: x.scatter_reduce(0, i, s, "amax"),
          [rand(4, 3), ints(4, 3, 2, B), rand(3, 2)], ["scatter_reduce.two"],
          in_dims=(None, 2, None))


def test_scatter_grad():
    check(lambda m, x, s, i: (x.scatter(1, i, s) ** 2).sum(),
          [rand(B, 4, 6), rand(B, 4, 2), np.stack([np.stack([rng.permutation(6)[:2]
                                                              for _ in range(4)])
                                                    for _ in range(B)])],
          ["scatter.src"], grad=True)
    check(lambda m, x, i: (x.scatter(1, i, 3.0) * x).sum(), [rand(B, 4, 3), ints(3, B, 4, 2)],
          ["scatter.value"], grad=True)
    check(lambda m, x, s, i: (x.scatter_add(-1, i, s) ** 2).sum(),
          [rand(4, 3), rand(B, 4, 5), ints(3, 4, 5)], ["scatter_add"], in_dims=(None, 0, None),
          grad=True)
    check(lambda m, x, s, i: (x.scatter_reduce(1, i, s, "sum") ** 2).sum(),
          [rand(B, 4, 3), rand(B, 4, 5), ints(3, B, 4, 5)], ["scatter_reduce.two"], grad=True)


# ------------------------------------------------------------------ broadcast_tensors

def test_broadcast_tensors():
    def f(m, a, b):
        return m.broadcast_tensors(a, b)
    check(f, [rand(B, 3), rand(4, 1)], ["broadcast_tensors"], in_dims=(0, None))
    check(f, [rand(4, 1), rand(3, B)], ["broadcast_tensors"], in_dims=(None, 1))
    check(f, [rand(B, 2, 1, 3), rand(B, 4, 1)], ["broadcast_tensors"])
    check(lambda m, a, b, c: m.broadcast_tensors(a, b, c), [rand(B), rand(3, 1), rand(1, B, 2)],
          ["broadcast_tensors"], in_dims=(0, None, 1), out_dims=(1, 0, -1))


def test_mse_loss_and_linalg_cross_use_broadcast_rule():
    t = rand(4, 3)
    check(lambda m, a: m.nn.functional.mse_loss(a, m.tensor(t)), [rand(B, 4, 3)],
          ["broadcast_tensors"])
    check(lambda m, a, b: m.nn.functional.mse_loss(a, b, reduction="none"),
          [rand(B, 4, 3), rand(3, B)], ["broadcast_tensors"], in_dims=(0, 1))
    check(lambda m, a: m.linalg.cross(a, m.tensor(t)), [rand(B, 4, 3)],
          ["broadcast_tensors", "cross"])
    check(lambda m, a: m.nn.functional.mse_loss(a, m.tensor(t)), [rand(B, 4, 3)],
          ["broadcast_tensors"], grad=True)


# ------------------------------------------------------------------ einsum

def test_einsum():
    check(lambda m, a, b: m.einsum("ij,jk->ik", a, b), [rand(B, 2, 3), rand(3, 4)], ["einsum"],
          in_dims=(0, None))
    check(lambda m, a, b: m.einsum("ij,jk->ik", a, b), [rand(2, 3), rand(3, B, 4)], ["einsum"],
          in_dims=(None, 1), out_dims=-1)
    check(lambda m, a, b: m.einsum("ij,kj", a, b), [rand(B, 2, 3), rand(4, 3, B)], ["einsum"],
          in_dims=(0, 2))
    check(lambda m, a: m.einsum("ii", a), [rand(B, 3, 3)], ["einsum"])
    # (one operand: ember's einsum takes the diagonal itself)
    check(lambda m, a: m.einsum("ii->i", a), [rand(3, B, 3)], ["diagonal"], in_dims=1)
    check(lambda m, a, b: m.einsum("...ij,...j->...i", a, b), [rand(B, 2, 4, 3), rand(B, 3)],
          ["einsum"])
    check(lambda m, a, b: m.einsum("b i, b j -> b i j", a, b), [rand(2, B, 3), rand(2, 4)],
          ["einsum"], in_dims=(1, None))
    check(lambda m, a, b, c: m.einsum("ij,jk,kl->il", a, b, c),
          [rand(B, 2, 3), rand(3, 4), rand(B, 4, 2)], ["einsum"], in_dims=(0, None, 0))
    check(lambda m, a: m.einsum("Ab,bA", a, a), [rand(B, 3, 3)], ["einsum"])
    check(lambda m, a, b: m.einsum("bn,anm,bm->ba", a, b, a),
          [rand(B, 2, 3), rand(4, 3, 3)], ["einsum"], in_dims=(0, None))


def test_einsum_grad():
    check(lambda m, a, b: (m.einsum("ij,jk->ik", a, b) ** 2).sum(), [rand(B, 2, 3), rand(3, 4)],
          ["einsum"], in_dims=(0, None))
    check(lambda m, a, b: m.einsum("i,i", a, b).sin(), [rand(3), rand(B, 3)], ["einsum"],
          in_dims=(None, 0), grad=True)
    check(lambda m, a, b: (m.einsum("...ij,jk->...ik", a, b) ** 2).sum(),
          [rand(B, 2, 2, 3), rand(3, 4)], ["einsum"], in_dims=(0, None), grad=True)


# ------------------------------------------------------------------ shape ops

def test_unfold():
    check(lambda m, x: x.unfold(0, 2, 1), [rand(B, 5, 3)], ["unfold"])
    check(lambda m, x: x.unfold(-1, 3, 2), [rand(4, B, 7)], ["unfold"], in_dims=1, out_dims=2)
    check(lambda m, x: x.unfold(0, 2, 2), [rand(6, B)], ["unfold"], in_dims=-1, out_dims=-1)
    check(lambda m, x: (x.unfold(1, 2, 1) ** 2).sum(), [rand(B, 3, 5)], ["unfold"], grad=True)


def test_repeat_and_tile():
    check(lambda m, x: x.repeat(2, 1, 3), [rand(B, 4, 3)], ["repeat"])
    check(lambda m, x: x.repeat(2, 3), [rand(4, B)], ["repeat"], in_dims=1, out_dims=1)
    check(lambda m, x: x.repeat(2), [rand(B)], ["repeat"])
    check(lambda m, x: x.tile((2,)), [rand(B, 4, 3)], ["tile"])
    check(lambda m, x: m.tile(x, (3, 1, 2)), [rand(2, 3, B)], ["tile"], in_dims=2, out_dims=-1)
    check(lambda m, x: x.tile(()), [rand(B, 3)], ["tile"])
    check(lambda m, x: (x.repeat(2, 2) * x.tile((2, 2))).sum(), [rand(B, 2, 3)],
          ["repeat", "tile"], grad=True)


def test_unflatten():
    check(lambda m, x: x.unflatten(1, (3, 2)), [rand(B, 4, 6)], ["unflatten.int"])
    check(lambda m, x: x.unflatten(-1, (2, -1)), [rand(4, B, 6)], ["unflatten.int"], in_dims=1)
    check(lambda m, x: m.unflatten(x, 0, (2, 2)), [rand(4, B)], ["unflatten.int"],
          in_dims=1, out_dims=2)
    check(lambda m, x: x.unflatten(0, (2, 3)).sin().sum(), [rand(B, 6)], ["unflatten.int"],
          grad=True)


def test_cross():
    check(lambda m, a, b: m.cross(a, b, dim=1), [rand(B, 4, 3), rand(B, 4, 3)], ["cross"])
    check(lambda m, a, b: m.cross(a, b, dim=-1), [rand(4, B, 3), rand(4, 3)], ["cross"],
          in_dims=(1, None))
    check(lambda m, a, b: m.cross(a, b, dim=0), [rand(3, 2), rand(3, 2, B)], ["cross"],
          in_dims=(None, 2), out_dims=1)
    check(lambda m, a, b: m.linalg.cross(a, b), [rand(B, 1, 3), rand(B, 4, 3)], ["cross"])
    check(lambda m, a, b: m.cross(a, b), [rand(B, 2, 3, 4), rand(B, 2, 3, 4)], ["cross"])
    check(lambda m, a, b: (m.linalg.cross(a, b) ** 2).sum(), [rand(B, 4, 3), rand(4, 3)],
          ["cross"], in_dims=(0, None), grad=True)


def test_trace_diagonal_tril_triu():
    check(lambda m, x: m.trace(x), [rand(B, 3, 4)], ["trace"])
    check(lambda m, x: x.trace(), [rand(3, B, 3)], ["trace"], in_dims=1)
    check(lambda m, x: m.trace(x), [ints(9, B, 3, 3)], ["trace"])
    check(lambda m, x: m.trace(x).sin(), [rand(B, 3, 3)], ["trace"], grad=True)
    check(lambda m, x: m.diagonal(x), [rand(B, 3, 4)], ["diagonal"])
    check(lambda m, x: m.diagonal(x, 1, -1, 0), [rand(3, 4, B, 2)], ["diagonal"], in_dims=2,
          out_dims=-1)
    check(lambda m, x: x.diagonal(-1, 2, 1), [rand(2, 3, 4, B)], ["diagonal"], in_dims=-1,
          out_dims=1)
    check(lambda m, x: (m.diagonal(x, 1) ** 3).sum(), [rand(B, 3, 4)], ["diagonal"], grad=True)
    for fn in ("tril", "triu"):
        check(lambda m, x: getattr(m, fn)(x), [rand(B, 3, 4)], [fn])
        check(lambda m, x: getattr(m, fn)(x, 1), [rand(3, B, 4)], [fn], in_dims=1)
        check(lambda m, x: getattr(x, fn)(-1), [rand(2, 3, 4, B)], [fn], in_dims=3, out_dims=1)
        check(lambda m, x: (getattr(m, fn)(x, 1) ** 2).sum(), [rand(B, 3, 3)], [fn],
              grad=True)


def test_index_select():
    check(lambda m, x, i: x.index_select(1, i), [rand(B, 4, 3), ints(3, 5)], ["index_select"],
          in_dims=(0, None))
    check(lambda m, x, i: x.index_select(-1, i), [rand(4, 3), ints(3, B, 5)],
          ["index_select"], in_dims=(None, 0))
    check(lambda m, x, i: m.index_select(x, 0, i), [rand(4, 3), ints(4, 2, B)],
          ["index_select"], in_dims=(None, 1), out_dims=1)
    check(lambda m, x, i: x.index_select(-2, i), [rand(4, B, 3), ints(4, B, 6)],
          ["index_select"], in_dims=(1, 0))
    # a logical 0-d index keeps the dim (size 1), as torch per sample (torch.func.vmap
    # returns the whole dim here: compared with torch's per-sample loop instead)
    x, i = rand(B, 2, 4, 3), ints(4, B)
    EFN.FALLBACK_COUNTS.clear()
    e = EFN.vmap(lambda x, i: x.index_select(1, i))(ember.tensor(x), ember.tensor(i))
    assert not EFN.FALLBACK_COUNTS
    t = torch.stack([torch.tensor(x[k]).index_select(1, torch.tensor(i[k])) for k in range(B)])
    _close(e, t, 0)
    check(lambda m, x, i: x.index_select(0, i), [rand(B, 4), ints(4, B, 3).astype(np.int32)],
          ["index_select"])
    check(lambda m, x, i: (x.index_select(0, i) ** 2).sum(), [rand(B, 4, 3), ints(4, B, 6)],
          ["index_select"], grad=True)


def test_take_along_dim():
    check(lambda m, x, i: m.take_along_dim(x, i, 1), [rand(B, 4, 3), ints(3, B, 4, 2)],
          ["take_along_dim"])
    check(lambda m, x, i: m.take_along_dim(x, i, -2), [rand(4, 3), ints(4, 2, 3, B)],
          ["take_along_dim"], in_dims=(None, 2))
    check(lambda m, x, i: m.take_along_dim(x, i, 0), [rand(4, B, 3), ints(4, 2, 1)],
          ["take_along_dim"], in_dims=(1, None), out_dims=1)
    check(lambda m, x, i: m.take_along_dim(x, i), [rand(B, 4, 3), ints(12, B, 5)],
          ["take_along_dim"])
    check(lambda m, x, i: m.take_along_dim(x, i), [rand(4, 3), ints(12, 2, B)],
          ["take_along_dim"], in_dims=(None, 1))
    check(lambda m, x, i: x.take_along_dim(i), [rand(B, 4, 3), ints(12, 5)],
          ["take_along_dim"], in_dims=(0, None))
    check(lambda m, x, i: (m.take_along_dim(x, i, 1) ** 2).sum(),
          [rand(B, 4, 3), ints(3, B, 4, 5)], ["take_along_dim"], grad=True)


# ------------------------------------------------------------------ backward ops

def test_index_add_copy_fill():
    i = np.array([2, 0, 2])
    check(lambda m, x, s: x.index_add(1, m.tensor(i), s), [rand(B, 4, 3), rand(B, 4, 3)],
          ["index_add"])
    check(lambda m, x, s: x.index_add(-2, m.tensor(i), s, alpha=2.0),
          [rand(3, 4), rand(3, 4, B)], ["index_add"], in_dims=(None, 2), out_dims=1)
    check(lambda m, x, s: x.index_copy(0, m.tensor(i[:2]), s), [rand(B, 3, 2), rand(2, 2)],
          ["index_copy"], in_dims=(0, None))
    check(lambda m, x: x.index_fill(-1, m.tensor(i), -3.0), [rand(4, B, 3)],
          ["index_fill.int_Tensor"], in_dims=1)


def test_view_scatters():
    check(lambda m, x, s: m.diagonal_scatter(x, s), [rand(B, 3, 3), rand(B, 3)],
          ["diagonal_scatter"])
    check(lambda m, x, s: m.diagonal_scatter(x, s, 1, -1, 0), [rand(3, 4), rand(2, B)],
          ["diagonal_scatter"], in_dims=(None, 1))
    check(lambda m, x, s: m.select_scatter(x, s, -1, 1), [rand(4, 3, B), rand(4)],
          ["select_scatter"], in_dims=(2, None), out_dims=1)
    check(lambda m, x, s: m.slice_scatter(x, s, 1, 0, 4, 2), [rand(B, 3, 4), rand(B, 3, 2)],
          ["slice_scatter"])


def test_backward_of_a_batch_of_cotangents():
    """jacrev: the backward runs once, batched over the cotangents (the view-scatter,
    index_add, scatter_add, gather and embedding-backward rules)."""
    i = ints(3, 4, 2)
    check(lambda m, x: x.gather(1, m.tensor(i)), [rand(4, 3)], ["scatter_add"],
          grad="jacrev")
    check(lambda m, x: x.scatter(1, m.tensor(i[:, :1]), 0.5), [rand(4, 3)],
          ["scatter.value"], grad="jacrev")
    check(lambda m, x: x.index_select(0, m.tensor(i[:, 0])), [rand(4, 3)], ["index_add"],
          grad="jacrev")
    check(lambda m, x: x.unfold(0, 2, 1), [rand(4, 3)], ["index_add"], grad="jacrev")
    check(lambda m, x: m.diagonal(x, 1), [rand(4, 3)], ["diagonal_scatter"], grad="jacrev")
    check(lambda m, x: x[:, 1], [rand(4, 3)], [], grad="jacrev")
    check(lambda m, x: m.einsum("ij,jk->ik", x, x.mT), [rand(4, 3)], ["einsum"],
          grad="jacrev")


def test_out_of_range_dims_still_raise():
    x, i = ember.tensor(rand(B, 4, 3)), ember.tensor(ints(3, B, 4, 2))
    with pytest.raises((IndexError, RuntimeError)):
        EFN.vmap(lambda x, i: x.gather(2, i))(x, i)
    with pytest.raises((IndexError, RuntimeError)):
        EFN.vmap(lambda x, i: x.scatter(-3, i, 1.0))(x, i)
    with pytest.raises((IndexError, RuntimeError)):
        EFN.vmap(lambda x: x.unfold(2, 1, 1))(x)
    with pytest.raises((IndexError, RuntimeError)):
        EFN.vmap(lambda x: x.repeat(2))(x)


def test_full_reduction_of_a_logical_scalar():
    """(hit by hessian of mse_loss / trace: the sum of a per-sample scalar)"""
    for fn in ("sum", "mean", "nansum", "amax", "amin", "all", "any", "count_nonzero"):
        check(lambda m, x: getattr(m, fn)(x), [rand(B)], [fn])
    check(lambda m, x: m.sum(x), [ints(9, B).astype(np.int32)], ["sum"])
    check(lambda m, x: m.sum(x, dtype=m.float32), [ints(9, B)], ["sum"])
    check(lambda m, x: x.sum((), keepdim=False), [rand(B)], ["sum"])
    check(lambda m, x: x.sum((), keepdim=True), [rand(B)], [], allow=("sum",))  # (loops)
    EFN.FALLBACK_COUNTS.clear()
    t = rand(3)
    e = EFN.hessian(lambda a: ember.nn.functional.mse_loss(a, ember.tensor(t)))(
        ember.tensor(rand(3)))
    assert not EFN.FALLBACK_COUNTS, dict(EFN.FALLBACK_COUNTS)
    np.testing.assert_allclose(e.numpy(), np.eye(3) * 2 / 3, rtol=1e-12, atol=1e-12)
    x = rand(3, 3)
    e = EFN.hessian(lambda a: m_trace_sq(a))(ember.tensor(x))
    assert not EFN.FALLBACK_COUNTS, dict(EFN.FALLBACK_COUNTS)
    t = tf.hessian(lambda a: torch.trace(a) ** 2)(torch.tensor(x))
    _close(e, t, 1e-12)


def m_trace_sq(a):
    return ember.trace(a) ** 2
