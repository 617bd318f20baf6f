"""Convolutions vs torch: outputs, gradients, modules, reprs, gradcheck."""
import sys, os
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
import torch.nn.functional as TF
sys.path.insert(0, os.path.dirname(__file__))
from _cmp import compare  # noqa: E402

rng = np.random.default_rng(0)
CONFIGS = [dict(), dict(stride=2), dict(padding=1), dict(stride=2, padding=1, dilation=2),
           dict(groups=2), dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2), groups=4),
           dict(padding="same"), dict(padding="same", dilation=2), dict(padding="valid")]


@pytest.mark.parametrize("kw", CONFIGS, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(kw, bias):
    g = kw.get("groups", 1)
    x = rng.standard_normal((2, 4, 7, 8))
    w = rng.standard_normal((8, 4 // g, 3, 2))
    b = rng.standard_normal(8) if bias else None
    compare(lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: TF.conv2d(x, w, b, **kw),
            [x, w, b], atol=1e-10)


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, dilation=2, groups=2),
                                dict(padding="same")], ids=str)
def test_conv1d_3d(n, kw):
    shape = (2, 4) + (6, 5, 7)[:n]
    x = rng.standard_normal(shape)
    w = rng.standard_normal((6, 4 // kw.get("groups", 1)) + (3, 2, 2)[:n])
    b = rng.standard_normal(6)
    fe, ft = getattr(F, f"conv{n}d"), getattr(TF, f"conv{n}d")
    compare(lambda x, w, b: fe(x, w, b, **kw), lambda x, w, b: ft(x, w, b, **kw), [x, w, b],
            atol=1e-10)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, output_padding=1),
                                dict(stride=2, padding=1, dilation=2, groups=2),
                                dict(stride=3, padding=2, output_padding=2)], ids=str)
def test_conv_transpose(n, kw):
    shape = (2, 4) + (5, 4, 3)[:n]
    x = rng.standard_normal(shape)
    w = rng.standard_normal((4, 6 // kw.get("groups", 1)) + (3, 2, 2)[:n])
    b = rng.standard_normal(6)
    fe, ft = getattr(F, f"conv_transpose{n}d"), getattr(TF, f"conv_transpose{n}d")
    compare(lambda x, w, b: fe(x, w, b, **kw), lambda x, w, b: ft(x, w, b, **kw), [x, w, b],
            atol=1e-10)


def test_unbatched_and_float32():
    x = rng.standard_normal((3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    compare(lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: TF.conv2d(x, w, padding=1),
            [x, w], atol=1e-4, rtol=1e-4)
    assert F.conv2d(ember.tensor(x), ember.tensor(w)).dtype == ember.float32


def test_errors():
    x = ember.randn(1, 3, 5, 5)
    with pytest.raises(RuntimeError, match="to have 3 channels, but got 3|expected input"):
        F.conv2d(x, ember.randn(4, 2, 3, 3))
    with pytest.raises(RuntimeError, match="strided convolutions"):
        F.conv2d(x, ember.randn(4, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Expected 3D"):
        F.conv2d(ember.randn(5, 5), ember.randn(4, 3, 3, 3))


@pytest.mark.parametrize("transposed", [False, True])
def test_gradcheck_gradgradcheck(transposed):
    x = ember.tensor(rng.standard_normal((1, 2, 4, 3)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((2, 1, 2, 2)), requires_grad=True)
    b = ember.tensor(rng.standard_normal(2), requires_grad=True)
    if transposed:
        def f(x, w, b):
            return F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2)
    else:
        def f(x, w, b):
            return F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
    assert ember.autograd.gradcheck(f, (x, w, b))
    assert ember.autograd.gradgradcheck(f, (x, w, b))


MODULES = [
    ("Conv1d", (3, 6, 3), dict(stride=2, padding=1), (2, 3, 9)),
    ("Conv2d", (4, 8, 3), dict(groups=2, bias=False), (2, 4, 7, 7)),
    ("Conv2d", (3, 4, (3, 2)), dict(padding=2, padding_mode="reflect"), (2, 3, 6, 6)),
    ("Conv2d", (3, 4, 3), dict(padding=1, padding_mode="replicate"), (2, 3, 6, 6)),
    ("Conv2d", (3, 4, 3), dict(padding=(1, 2), padding_mode="circular"), (2, 3, 6, 6)),
    ("Conv2d", (3, 4, 4), dict(padding="same", padding_mode="reflect"), (2, 3, 6, 6)),
    ("Conv3d", (2, 4, 2), dict(dilation=2), (1, 2, 5, 5, 5)),
    ("ConvTranspose1d", (3, 6, 3), dict(stride=2, output_padding=1), (2, 3, 5)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, groups=2, dilation=2, padding=1), (2, 4, 4, 5)),
    ("ConvTranspose3d", (2, 2, 2), dict(stride=2), (1, 2, 3, 3, 3)),
]


@pytest.mark.parametrize("name,args,kw,shape", MODULES, ids=lambda v: str(v))
def test_modules(name, args, kw, shape):
    tm = getattr(torch.nn, name)(*args, **kw).double()
    em = getattr(ember.nn, name)(*args, **kw)
    assert repr(em) == repr(tm)
    assert tuple(em.weight.shape) == tuple(tm.weight.shape)
    bound = 1 / np.sqrt(np.prod(em.weight.shape[1:]) * (1 if "Transpose" not in name
                                                         else 1)) + 1e-6
    assert float(em.weight.detach().abs().max()) <= max(bound, 1.0)
    em = em.double()
    em.weight.data = ember.tensor(tm.weight.detach().numpy().copy())
    if tm.bias is not None:
        em.bias.data = ember.tensor(tm.bias.detach().numpy().copy())
    x = rng.standard_normal(shape)
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ye, yt = em(xe), tm(xt)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), atol=1e-10)
    ye.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(em.weight.grad.numpy(), tm.weight.grad.numpy(), atol=1e-10)


def test_top_level_aliases():
    x, w = ember.randn(1, 2, 5, 5), ember.randn(3, 2, 3, 3)
    assert ember.conv2d(x, w).shape == (1, 3, 3, 3)
    assert ember.max_pool2d(x, 2).shape == (1, 2, 2, 2)
