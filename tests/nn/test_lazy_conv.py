"""LazyConv*/LazyConvTranspose* against torch: in_channels inferred on the first call, the
module becoming Conv*/ConvTranspose*, reprs, state_dict keys, checkpoint loads, errors."""
import re

import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch")
tnn = torch.nn

CASES = [  # (name, kwargs, input shape)
    ("LazyConv1d", dict(out_channels=4, kernel_size=3), (2, 3, 9)),
    ("LazyConv1d", dict(out_channels=4, kernel_size=2, bias=False), (5, 7)),
    ("LazyConv2d", dict(out_channels=4, kernel_size=3, groups=2, padding=1,
                        padding_mode="reflect", bias=False), (2, 6, 5, 5)),
    ("LazyConv2d", dict(out_channels=6, kernel_size=(2, 3), stride=2, dilation=(1, 2),
                        padding="valid"), (1, 3, 8, 9)),
    ("LazyConv3d", dict(out_channels=2, kernel_size=2, padding="same",
                        padding_mode="circular"), (1, 2, 4, 5, 3)),
    ("LazyConvTranspose1d", dict(out_channels=4, kernel_size=3, stride=2,
                                 output_padding=1), (2, 3, 6)),
    ("LazyConvTranspose2d", dict(out_channels=4, kernel_size=3, groups=2, bias=False,
                                 dilation=2), (6, 4, 4)),
    ("LazyConvTranspose3d", dict(out_channels=3, kernel_size=2, stride=(1, 2, 2),
                                 padding=1), (1, 2, 3, 4, 4)),
]


def _pair(name, kwargs, seed=0):
    torch.manual_seed(seed)
    t = getattr(tnn, name)(**kwargs)
    ember.manual_seed(seed)
    e = getattr(enn, name)(**kwargs)
    return e, t


@pytest.mark.parametrize("name,kwargs,shape", CASES)
def test_first_call_infers_in_channels_and_matches_torch(name, kwargs, shape):
    e, t = _pair(name, kwargs)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert isinstance(e.weight, enn.UninitializedParameter)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out_t = t(torch.from_numpy(x))
    out_e = e(ember.from_numpy(x))
    assert type(e).__name__ == type(t).__name__ == name.replace("Lazy", "")
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert not isinstance(e.weight, enn.UninitializedParameter)
    for k, v in t.state_dict().items():      # same draw from the same seed
        np.testing.assert_allclose(e.state_dict()[k].numpy(), v.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,kwargs,shape", CASES)
def test_copied_weights_give_torch_values_and_gradients(name, kwargs, shape):
    e, t = _pair(name, kwargs)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    xt, xe = torch.from_numpy(x).requires_grad_(), ember.from_numpy(x).requires_grad_()
    t(xt)
    e(xe)
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy() * 0.5 + 0.1)
                       for k, v in t.state_dict().items()})
    with torch.no_grad():
        for p in t.parameters():
            p.mul_(0.5).add_(0.1)
    out_t, out_e = t(xt), e(xe)
    out_t.square().sum().backward()
    out_e.square().sum().backward()
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(e.weight.grad.numpy(), t.weight.grad.numpy(),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name,dense,args", [
    ("LazyConv2d", "Conv2d", (6, 4, 3)),
    ("LazyConvTranspose2d", "ConvTranspose2d", (6, 4, 3)),
    ("LazyConv1d", "Conv1d", (4, 2, 3)),
])
def test_loading_an_initialized_checkpoint_into_a_lazy_module(name, dense, args):
    torch.manual_seed(3)
    src = getattr(tnn, dense)(*args, groups=2)
    e = getattr(enn, name)(args[1], args[2], groups=2)
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy())
                       for k, v in src.state_dict().items()})
    assert type(e).__name__ == name and not e.has_uninitialized_params()
    assert tuple(e.weight.shape) == tuple(src.weight.shape)
    shape = (1, args[0]) + (5,) * (src.weight.dim() - 2)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    out_e = e(ember.from_numpy(x))
    assert type(e).__name__ == dense
    assert e.in_channels == src.in_channels      # torch leaves 0 here; ember reads the weight
    np.testing.assert_allclose(out_e.detach().numpy(), src(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_dtype_and_output_size():
    e = enn.LazyConvTranspose2d(3, 3, stride=2, dtype=ember.float64)
    out = e(ember.randn(1, 2, 4, 4, dtype=ember.float64), output_size=[10, 10])
    assert e.weight.dtype == ember.float64 and tuple(out.shape) == (1, 3, 10, 10)
    t = tnn.LazyConvTranspose2d(3, 3, stride=2, dtype=torch.float64)
    assert tuple(t(torch.randn(1, 2, 4, 4, dtype=torch.float64), output_size=[10, 10]).shape) \
        == tuple(out.shape)


def _raises_like_torch(make_e, make_t):
    with pytest.raises(Exception) as te:
        make_t()
    with pytest.raises(type(te.value)) as ee:
        make_e()
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("ctor,shape", [
    (lambda m: m.LazyConv2d(4, 3, groups=0), None),
    (lambda m: m.LazyConv2d(4, 3, padding="same", stride=2), None),
    (lambda m: m.LazyConv2d(4, 3, padding="full"), None),
    (lambda m: m.LazyConvTranspose2d(4, 3, padding_mode="reflect"), None),
    (lambda m: m.LazyConv2d(4, 3, groups=2), (1, 3, 5, 5)),
    (lambda m: m.LazyConv2d(4, 3), (5, 5)),
    (lambda m: m.LazyConvTranspose1d(4, 3), (1, 2, 3, 5)),
])
def test_errors_match_torch(ctor, shape):
    if shape is None:
        _raises_like_torch(lambda: ctor(enn), lambda: ctor(tnn))
    else:
        _raises_like_torch(lambda: ctor(enn)(ember.zeros(shape)),
                           lambda: ctor(tnn)(torch.zeros(shape)))


def test_bad_padding_mode_raises_value_error_like_torch():
    # both messages show a set, whose order varies from run to run: compare its members
    with pytest.raises(ValueError) as te:
        tnn.LazyConv2d(4, 3, padding_mode="bogus")
    with pytest.raises(ValueError) as ee:
        enn.LazyConv2d(4, 3, padding_mode="bogus")
    def words(info):
        return sorted(re.findall(r"[\w=']+", str(info.value)))
    assert words(ee) == words(te)


def test_lazy_module_stays_lazy_after_a_failed_first_call():
    e = enn.LazyConv2d(4, 3, groups=2)
    with pytest.raises(ValueError):
        e(ember.zeros(1, 3, 5, 5))
    assert type(e) is enn.LazyConv2d and e.has_uninitialized_params()
    e(ember.zeros(1, 4, 5, 5))
    assert type(e) is enn.Conv2d and tuple(e.weight.shape) == (4, 2, 3, 3)


# ---- nn.UninitializedBuffer, nn.factory_kwargs, nn.common_types ----

def test_uninitialized_buffer_is_exported():
    assert enn.UninitializedBuffer is __import__("ember.nn.parameter",
                                                 fromlist=["x"]).UninitializedBuffer
    b = enn.UninitializedBuffer()
    b.materialize((2, 3))
    assert type(b) is ember.Tensor and tuple(b.shape) == (2, 3)


@pytest.mark.parametrize("kwargs", [
    None, {}, {"device": "cpu", "dtype": "f64"}, {"memory_format": 2, "device": None},
    {"factory_kwargs": {"dtype": 1, "device": 2}, "memory_format": 3},
    {"factory_kwargs": {"foo": 1}},                    # nested keys are not checked
    {"factory_kwargs": {"dtype": 1}, "device": None},
])
def test_factory_kwargs_matches_torch(kwargs):
    assert enn.factory_kwargs(kwargs) == tnn.factory_kwargs(kwargs)


@pytest.mark.parametrize("kwargs", [
    {"foo": 1}, {"device": "cpu", "factory_kwargs": {"device": "cpu"}},
    {"factory_kwargs": {"dtype": 1}, "dtype": None},
])
def test_factory_kwargs_errors_match_torch(kwargs):
    _raises_like_torch(lambda: enn.factory_kwargs(kwargs), lambda: tnn.factory_kwargs(kwargs))


def _same_alias(e, t):
    """Structural equality of typing aliases, ember.Tensor standing for torch.Tensor."""
    import typing
    if e is ember.Tensor:
        return t is torch.Tensor
    if isinstance(e, typing.TypeVar):
        return isinstance(t, typing.TypeVar) and e.__name__ == t.__name__
    e_args, t_args = typing.get_args(e), typing.get_args(t)
    if not e_args:
        return e == t
    return (len(e_args) == len(t_args) and typing.get_origin(e) == typing.get_origin(t)
            and all(_same_alias(a, b) for a, b in zip(e_args, t_args)))


def test_common_types_match_torch():
    import torch.nn.common_types as tct
    ect = enn.common_types
    names = [n for n in dir(tct) if n.startswith("_") and n.endswith("_t")]
    assert len(names) > 20 and sorted(names) == sorted(
        n for n in dir(ect) if n.startswith("_") and n.endswith("_t"))
    for name in names:
        assert _same_alias(getattr(ect, name), getattr(tct, name)), name
    assert str(ect._size_2_opt_t) == str(tct._size_2_opt_t)
    assert not _same_alias(ect._size_2_t, tct._size_3_t)
