"""Top-level functional spellings, nn.utils fusion/skip_init/memory_format, against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _pair(*shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.tensor(a), torch.tensor(a)


def _close(e, t, atol=1e-5):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=atol)


@pytest.mark.parametrize("name,shapes,args,kwargs", [
    ("conv1d", [(2, 4, 9), (6, 2, 3), (6,)], (2, 1, 1, 2), {}),
    ("conv2d", [(2, 3, 7, 6), (4, 3, 3, 2), (4,)], (1, (1, 0), 2, 1), {}),
    ("conv3d", [(1, 2, 5, 5, 4), (3, 2, 2, 2, 2)], (), {"stride": 2}),
    ("conv_transpose1d", [(2, 4, 5), (4, 3, 3), (3,)], (2, 1, 1, 1, 1), {}),
    ("conv_transpose2d", [(1, 2, 4, 5), (2, 3, 3, 3)], (None, 2, 1, 1), {}),
    ("conv_transpose3d", [(1, 2, 3, 3, 3), (2, 2, 2, 2, 2)], (), {"stride": 2}),
    ("cosine_similarity", [(3, 5), (3, 5)], (1,), {}),
    ("pairwise_distance", [(3, 5), (3, 5)], (3.0,), {"keepdim": True}),
    ("pdist", [(5, 4)], (1.5,), {}),
    ("pixel_shuffle", [(1, 8, 2, 3)], (2,), {}),
    ("pixel_unshuffle", [(1, 2, 4, 6)], (2,), {}),
    ("prelu", [(2, 3, 4), (3,)], (), {}),
    ("bilinear", [(4, 3), (4, 5), (2, 3, 5), (2,)], (), {}),
    ("hardshrink", [(4, 5)], (0.3,), {}),
    ("channel_shuffle", [(1, 6, 2, 2)], (3,), {}),
    ("native_channel_shuffle", [(1, 6, 2, 2)], (2,), {}),
    ("adaptive_avg_pool1d", [(2, 3, 10)], (4,), {}),
    ("avg_pool1d", [(2, 3, 10)], (3, 2, 1, True, False), {}),
])
def test_top_level_functional_spellings(name, shapes, args, kwargs):
    pairs = [_pair(*s, seed=i) for i, s in enumerate(shapes)]
    out_e = getattr(ember, name)(*[e for e, _ in pairs], *args, **kwargs)
    out_t = getattr(torch, name)(*[t for _, t in pairs], *args, **kwargs)
    assert tuple(out_e.shape) == tuple(out_t.shape)
    _close(out_e, out_t)


@pytest.mark.parametrize("name,args", [
    ("relu_", ()), ("selu_", ()), ("celu_", (0.7,)), ("threshold_", (0.1, -2.0)),
    ("rrelu_", (0.1, 0.3, False)),
])
def test_top_level_inplace_spellings(name, args):
    e, t = _pair(3, 4)
    out_e, out_t = getattr(ember, name)(e, *args), getattr(torch, name)(t, *args)
    assert out_e is e
    _close(e, t)
    _close(out_e, out_t)


def test_nn_functional_grad_is_nn_grad():
    assert ember.nn.functional.grad is ember.nn.grad


def _copy_params(src_t, dst_e):
    dst_e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                           src_t.state_dict().items()})


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval(transpose):
    torch.manual_seed(0)
    cls = "ConvTranspose2d" if transpose else "Conv2d"
    conv_t, bn_t = getattr(torch.nn, cls)(3, 4, 3), torch.nn.BatchNorm2d(4)
    bn_t.running_mean.uniform_(-1, 1), bn_t.running_var.uniform_(0.5, 2)
    bn_t.weight.data.uniform_(0.5, 2), bn_t.bias.data.uniform_(-1, 1)
    conv_e, bn_e = getattr(ember.nn, cls)(3, 4, 3), ember.nn.BatchNorm2d(4)
    _copy_params(conv_t, conv_e), _copy_params(bn_t, bn_e)
    conv_t.eval(), bn_t.eval(), conv_e.eval(), bn_e.eval()
    fused_e = ember.nn.utils.fuse_conv_bn_eval(conv_e, bn_e, transpose=transpose)
    fused_t = torch.nn.utils.fuse_conv_bn_eval(conv_t, bn_t, transpose=transpose)
    _close(fused_e.weight, fused_t.weight), _close(fused_e.bias, fused_t.bias)
    x_e, x_t = _pair(2, 3, 6, 6)
    _close(fused_e(x_e), bn_t(conv_t(x_t)), atol=1e-4)


def test_fuse_linear_bn_eval_and_weights():
    torch.manual_seed(1)
    lin_t, bn_t = torch.nn.Linear(5, 3), torch.nn.BatchNorm1d(3)
    bn_t.running_mean.uniform_(-1, 1), bn_t.running_var.uniform_(0.5, 2)
    lin_e, bn_e = ember.nn.Linear(5, 3), ember.nn.BatchNorm1d(3)
    _copy_params(lin_t, lin_e), _copy_params(bn_t, bn_e)
    for m in (lin_t, bn_t, lin_e, bn_e):
        m.eval()
    fused_e = ember.nn.utils.fuse_linear_bn_eval(lin_e, bn_e)
    fused_t = torch.nn.utils.fuse_linear_bn_eval(lin_t, bn_t)
    _close(fused_e.weight, fused_t.weight), _close(fused_e.bias, fused_t.bias)
    w_e, b_e = ember.nn.utils.fuse_linear_bn_weights(
        lin_e.weight, lin_e.bias, bn_e.running_mean, bn_e.running_var, bn_e.eps,
        bn_e.weight, bn_e.bias)
    _close(w_e, fused_t.weight), _close(b_e, fused_t.bias)
    assert ember.nn.utils.fusion.fuse_conv_bn_weights is ember.nn.utils.fuse_conv_bn_weights


def test_skip_init():
    m = ember.nn.utils.skip_init(ember.nn.Linear, 3, 4, bias=False)
    assert isinstance(m, ember.nn.Linear) and m.bias is None
    assert tuple(m.weight.shape) == (4, 3) and m.weight.device.type == "cpu"
    assert ember.nn.utils.init.skip_init is ember.nn.utils.skip_init
    with pytest.raises(RuntimeError, match="Expected a Module"):
        ember.nn.utils.skip_init(int)
    with pytest.raises(RuntimeError, match="'device' arg"):
        ember.nn.utils.skip_init(ember.nn.Identity)


@pytest.mark.parametrize("dims", [2, 3])
def test_convert_conv_weight_memory_format(dims):
    fmt = ember.channels_last if dims == 2 else ember.channels_last_3d
    conv = getattr(ember.nn, f"Conv{dims}d")(2, 3, 3)
    model = ember.nn.Sequential(conv, getattr(ember.nn, f"ConvTranspose{dims}d")(3, 2, 3),
                                ember.nn.ReLU())
    before = [p.detach().clone() for p in model.parameters()]
    convert = getattr(ember.nn.utils, f"convert_conv{dims}d_weight_memory_format")
    assert convert(model, fmt) is model
    assert model[0].weight.is_contiguous(memory_format=fmt)
    assert model[1].weight.is_contiguous(memory_format=fmt)
    assert isinstance(model[0].weight, ember.nn.Parameter)
    for b, p in zip(before, model.parameters()):
        assert ember.equal(b, p)
