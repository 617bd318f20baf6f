"""Pooling vs torch: values, indices, gradients, modules, gradcheck."""
import sys, os
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
import torch.nn.functional as TF
sys.path.insert(0, os.path.dirname(__file__))
from _cmp import compare  # noqa: E402

rng = np.random.default_rng(1)
KW = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
      dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
      dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1))]


@pytest.mark.parametrize("kw", KW + [dict(kernel_size=(2, 3), dilation=(2, 1), padding=1)],
                         ids=str)
def test_max_pool2d(kw):
    x = rng.standard_normal((2, 3, 7, 8))
    compare(lambda x: F.max_pool2d(x, return_indices=True, **kw),
            lambda x: TF.max_pool2d(x, return_indices=True, **kw), [x])


@pytest.mark.parametrize("kw", KW, ids=str)
@pytest.mark.parametrize("cip", [True, False])
def test_avg_pool2d(kw, cip):
    x = rng.standard_normal((2, 3, 7, 8))
    compare(lambda x: F.avg_pool2d(x, count_include_pad=cip, **kw),
            lambda x: TF.avg_pool2d(x, count_include_pad=cip, **kw), [x], atol=1e-12)


CASES = [
    ("max_pool1d", (2, 3, 10), (3, 2, 1), dict(ceil_mode=True, return_indices=True)),
    ("max_pool3d", (2, 3, 4, 5, 6), (2,), dict(return_indices=True)),
    ("max_pool2d", (3, 6, 6), (2,), {}),
    ("avg_pool1d", (2, 3, 10), (3, 2, 1), dict(ceil_mode=True)),
    ("avg_pool3d", (2, 3, 5, 5, 5), (2,), dict(ceil_mode=True)),
    ("avg_pool2d", (2, 3, 7, 8), (3, 2, 1), dict(divisor_override=4)),
    ("avg_pool2d", (3, 6, 6), (2,), {}),
    ("adaptive_avg_pool1d", (2, 3, 7), (4,), {}),
    ("adaptive_avg_pool2d", (2, 3, 7, 9), ((3, 4),), {}),
    ("adaptive_avg_pool2d", (2, 3, 7, 9), ((None, 2),), {}),
    ("adaptive_avg_pool3d", (2, 3, 5, 7, 4), ((2, 3, 2),), {}),
    ("adaptive_max_pool1d", (2, 3, 7), (4, True), {}),
    ("adaptive_max_pool2d", (2, 3, 7, 9), ((5, 7), True), {}),
    ("adaptive_max_pool3d", (2, 3, 5, 7, 4), ((2, 3, 2), True), {}),
    ("lp_pool2d", (2, 3, 7, 7), (2, 3, 2), {}),
    ("lp_pool1d", (2, 3, 7), (1.5, 3), {}),
    ("lp_pool3d", (2, 3, 4, 4, 4), (2, 2), {}),
]


@pytest.mark.parametrize("name,shape,args,kw", CASES, ids=lambda v: str(v))
def test_pool_family(name, shape, args, kw):
    x = rng.standard_normal(shape)
    if name.startswith("lp"):
        x = np.abs(x) + 0.1
    compare(lambda x: getattr(F, name)(x, *args, **kw),
            lambda x: getattr(TF, name)(x, *args, **kw), [x], atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool(n):
    x = rng.standard_normal((2, 3) + (6, 8, 4)[:n])
    v, i = getattr(F, f"max_pool{n}d")(ember.tensor(x), 2, return_indices=True)
    vt, it = getattr(TF, f"max_pool{n}d")(torch.tensor(x), 2, return_indices=True)
    fe, ft = getattr(F, f"max_unpool{n}d"), getattr(TF, f"max_unpool{n}d")
    np.testing.assert_array_equal(fe(v, i, 2).numpy(), ft(vt, it, 2).numpy())
    osz = tuple(s + 1 for s in x.shape[2:])
    np.testing.assert_array_equal(fe(v, i, 2, output_size=osz).numpy(),
                                  ft(vt, it, 2, output_size=osz).numpy())


def test_gradcheck():
    x = ember.tensor(rng.standard_normal((1, 2, 5, 4)), requires_grad=True)
    for f in [lambda x: F.max_pool2d(x, 2, 1, 1),
              lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
              lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
              lambda x: F.adaptive_max_pool2d(x, (3, 3)),
              lambda x: F.lp_pool2d(x.abs() + 0.5, 2, 2),
              lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2)]:
        assert ember.autograd.gradcheck(f, (x,))
        assert ember.autograd.gradgradcheck(f, (x,))


def test_errors():
    x = ember.randn(1, 1, 4, 4)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(ember.randn(1, 1, 1, 1), 3)


MODS = [("MaxPool2d", (3, 2, 1), dict(ceil_mode=True)), ("MaxPool1d", (2,), {}),
        ("MaxPool3d", (2,), dict(return_indices=True)), ("AvgPool2d", (3,), dict(padding=1)),
        ("AvgPool1d", (2,), {}), ("AvgPool3d", (2,), dict(divisor_override=3)),
        ("AdaptiveAvgPool2d", ((None, 3),), {}), ("AdaptiveMaxPool2d", (2,), {}),
        ("AdaptiveAvgPool1d", (3,), {}), ("AdaptiveMaxPool3d", (2, True), {}),
        ("LPPool2d", (2, 3), {}), ("LPPool1d", (1.5, 2), {}), ("MaxUnpool2d", (2,), {}),
        ("AdaptiveAvgPool3d", (1,), {})]


@pytest.mark.parametrize("name,args,kw", MODS, ids=lambda v: str(v))
def test_module_repr_and_forward(name, args, kw):
    em, tm = getattr(ember.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(em) == repr(tm)
    if name.startswith("MaxUnpool"):
        return
    n = int(name[-2])
    x = np.abs(rng.standard_normal((2, 3) + (6, 7, 5)[:n])) + 0.1
    ye, yt = em(ember.tensor(x)), tm(torch.tensor(x))
    ye = ye[0] if isinstance(ye, tuple) else ye
    yt = yt[0] if isinstance(yt, tuple) else yt
    np.testing.assert_allclose(ye.numpy(), yt.numpy(), atol=1e-12)


@pytest.mark.parametrize("n,shape,kw", [
    (1, (2, 3, 9), dict(kernel_size=3)),
    (1, (2, 3, 9), dict(kernel_size=2, stride=1, padding=1)),
    (2, (2, 2, 5, 6), dict(kernel_size=3, padding=1, count_include_pad=False, ceil_mode=True)),
    (2, (2, 2, 5, 6), dict(kernel_size=2, divisor_override=3)),
    (3, (1, 2, 4, 5, 5), dict(kernel_size=2, stride=1, padding=1)),
    (3, (1, 2, 4, 5, 5), dict(kernel_size=3, padding=1, count_include_pad=False)),
], ids=str)
def test_avg_pool_int64_keeps_dtype(n, shape, kw):
    # torch divides the integer window sum (truncating, also for negative sums)
    a = np.arange(int(np.prod(shape))).reshape(shape) * 7 - 50
    e = getattr(F, f"avg_pool{n}d")(ember.tensor(a), **kw)
    t = getattr(TF, f"avg_pool{n}d")(torch.tensor(a), **kw)
    assert e.dtype == ember.int64
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("n,shape", [(1, (0, 3, 9)), (2, (0, 3, 5, 5)), (3, (0, 2, 4, 4, 4))])
def test_avg_pool_empty_batch_grad(n, shape):
    x = ember.zeros(shape, requires_grad=True)
    y = getattr(F, f"avg_pool{n}d")(x, 2)
    ty = getattr(TF, f"avg_pool{n}d")(torch.zeros(shape), 2)
    assert tuple(y.shape) == tuple(ty.shape)
    y.sum().backward()
    assert tuple(x.grad.shape) == shape


@pytest.mark.parametrize("n,shape,kw", [
    (2, (2, 3, 10, 11), dict(kernel_size=2, output_size=(5, 4))),
    (2, (2, 3, 10, 11), dict(kernel_size=3, output_ratio=(0.5, 0.5))),
    (2, (3, 9, 7), dict(kernel_size=(2, 3), output_size=4)),
    (3, (2, 2, 7, 8, 9), dict(kernel_size=2, output_size=(3, 4, 5))),
    (3, (2, 7, 8, 9), dict(kernel_size=(2, 3, 2), output_ratio=(0.5, 0.5, 0.6))),
], ids=str)
def test_fractional_max_pool(n, shape, kw):
    a = rng.standard_normal(shape).astype(np.float32)
    N = 1 if len(shape) == n + 1 else shape[0]
    s = rng.random((N, shape[-n - 1], n)).astype(np.float32)
    tx = torch.tensor(a, requires_grad=True)
    ex = ember.tensor(a, requires_grad=True)
    tv, ti = getattr(TF, f"fractional_max_pool{n}d")(
        tx, return_indices=True, _random_samples=torch.tensor(s), **kw)
    ev, ei = getattr(F, f"fractional_max_pool{n}d")(
        ex, return_indices=True, _random_samples=ember.tensor(s), **kw)
    np.testing.assert_array_equal(ev.detach().numpy(), tv.detach().numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    assert ei.dtype == ember.int64
    w = rng.standard_normal(tuple(tv.shape)).astype(np.float32)
    (tv * torch.tensor(w)).sum().backward()
    (ev * ember.tensor(w)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    v = getattr(F, f"fractional_max_pool{n}d")(ex, _random_samples=ember.tensor(s), **kw)
    np.testing.assert_array_equal(v.detach().numpy(), tv.detach().numpy())


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("k, s, p, d, ceil", [(3, 2, 1, 1, False), (3, 2, 1, 1, True),
                                              (2, 3, 1, 1, True), (3, 3, 1, 2, False),
                                              (2, 2, 0, 1, True), (3, 2, 1, 2, True)])
def test_max_pool_strided_padded_phases(nd, k, s, p, d, ceil):
    """A strided, padded max pool builds its stride phases straight from the input
    (``_padded_phase``): values and indices like torch's, ties, -inf and NaN included."""
    import ember._kernels.nn_conv as KC
    x = rng.standard_normal((2, 3) + (9, 8, 7)[:nd]).astype(np.float32)
    x[0, 0].flat[::3] = 0.5
    x[0, 1] = -np.inf
    x[1, 2].flat[5] = np.nan
    tv, ti = getattr(TF, f"max_pool{nd}d")(torch.tensor(x), k, s, p, d, ceil_mode=ceil,
                                            return_indices=True)
    v, i = KC.max_pool(x, [k] * nd, [s] * nd, [p] * nd, [d] * nd, ceil)
    np.testing.assert_array_equal(v, tv.numpy())
    np.testing.assert_array_equal(i, ti.numpy())
