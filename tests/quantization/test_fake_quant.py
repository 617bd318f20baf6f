"""Fake quantization: the ops' values and straight-through gradients, and the FakeQuantize
modules' buffers, outputs and reprs over several steps equal torch's."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.ao.quantization.fake_quantize as TF  # noqa: E402

import ember  # noqa: E402
import ember.ao.quantization.fake_quantize as EF  # noqa: E402


def _ties(rng, n, scale):
    """Values around the grid, a quarter of them exactly half-way between two steps."""
    x = (rng.standard_normal(n) * scale * 60).astype(np.float32)
    x[: n // 4] = ((rng.integers(-100, 100, n // 4) + 0.5) * np.float32(scale)).astype(np.float32)
    return x


@pytest.mark.parametrize("n", [7, 1000, 4099])
@pytest.mark.parametrize("tensor_qparams", [False, True])
def test_per_tensor_values_and_grads(n, tensor_qparams):
    rng = np.random.default_rng(n)
    for _ in range(10):
        s, z = float(rng.uniform(1e-3, 0.5)), int(rng.integers(0, 256))
        x = _ties(rng, n, s)
        g = rng.standard_normal(n).astype(np.float32)
        tx, ex = torch.from_numpy(x).requires_grad_(), ember.from_numpy(x).requires_grad_()
        if tensor_qparams:
            t = torch.fake_quantize_per_tensor_affine(tx, torch.tensor([s]),
                                                      torch.tensor([z], dtype=torch.int32), 0, 255)
            e = ember.fake_quantize_per_tensor_affine(ex, ember.tensor([s]),
                                                      ember.tensor([z], dtype=ember.int32), 0, 255)
        else:
            t = torch.fake_quantize_per_tensor_affine(tx, s, z, 0, 255)
            e = ember.fake_quantize_per_tensor_affine(ex, s, z, 0, 255)
        t.backward(torch.from_numpy(g))
        e.backward(ember.from_numpy(g))
        np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())
        np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__


@pytest.mark.parametrize("float_zp", [False, True])
def test_per_channel_values_and_grads(float_zp):
    rng = np.random.default_rng(1)
    for axis in (0, 1, 2):
        x = (rng.standard_normal((3, 4, 5)) * 3).astype(np.float32)
        C = x.shape[axis]
        sc = rng.uniform(0.01, 0.2, C).astype(np.float32)
        zp = rng.uniform(0, 255, C).astype(np.float32) if float_zp else \
            rng.integers(0, 255, C).astype(np.int32)
        tx, ex = torch.from_numpy(x).requires_grad_(), ember.from_numpy(x).requires_grad_()
        t = torch.fake_quantize_per_channel_affine(tx, torch.from_numpy(sc), torch.from_numpy(zp),
                                                   axis, 0, 255)
        e = ember.fake_quantize_per_channel_affine(ex, ember.from_numpy(sc),
                                                   ember.from_numpy(zp), axis, 0, 255)
        (t * t).sum().backward()
        (e * e).sum().backward()
        np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())
        np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__


def test_gradcheck():
    x = ember.randn(12, dtype=ember.float64, requires_grad=True)
    # away from the rounding jumps the op is piecewise constant in x: its straight-through
    # gradient is the identity inside the range, zero outside
    y = ember.fake_quantize_per_tensor_affine(x * 50, 0.1, 0, -10, 10)
    y.sum().backward()
    inside = (ember.round(x.detach() * 500) >= -10) & (ember.round(x.detach() * 500) <= 10)
    np.testing.assert_array_equal(x.grad.numpy(), 50 * inside.numpy())


def test_bad_arguments():
    x = ember.randn(2, 5)
    with pytest.raises(RuntimeError, match="quant_min"):
        ember.fake_quantize_per_tensor_affine(x, 0.1, 3, 255, 0)
    with pytest.raises(RuntimeError, match="zero_point"):
        ember.fake_quantize_per_tensor_affine(x, 0.1, 300, 0, 255)
    with pytest.raises(RuntimeError, match="Zero-point must be Int32"):
        ember.fake_quantize_per_channel_affine(x, ember.tensor([0.1, .2]), ember.tensor([3, 4]),
                                               0, 0, 255)
    with pytest.raises(RuntimeError, match="not consistent"):
        ember.fake_quantize_per_channel_affine(x, ember.tensor([0.1, .2, .3]),
                                               ember.tensor([3, 4, 5], dtype=ember.int32),
                                               0, 0, 255)
    with pytest.raises(RuntimeError, match="`axis` must be between"):
        ember.fake_quantize_per_channel_affine(x, ember.tensor([0.1, .2, .3, .4, .5]),
                                               ember.tensor([3, 4, 5, 6, 7], dtype=ember.int32),
                                               -1, 0, 255)


@pytest.mark.parametrize("name", [
    "default_fake_quant", "default_weight_fake_quant", "default_per_channel_weight_fake_quant",
    "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
    "default_fused_per_channel_wt_fake_quant", "default_embedding_fake_quant",
    "default_fixed_qparams_range_0to1_fake_quant",
    "fused_per_channel_wt_fake_quant_range_neg_127_to_127", "default_dynamic_fake_quant",
    "default_embedding_fake_quant_4bit", "default_fixed_qparams_range_neg1to1_fake_quant"])
def test_fake_quantize_modules(name):
    rng = np.random.default_rng(4)
    t, e = getattr(TF, name)(), getattr(EF, name)()
    assert repr(e) == repr(t)
    for step in range(6):
        x = (rng.standard_normal((4, 3, 5)) * rng.uniform(0.1, 4)).astype(np.float32)
        if "fixed" in name:
            x = x.clip(0, 1)
        tx, ex = torch.from_numpy(x).requires_grad_(), ember.from_numpy(x).requires_grad_()
        if step == 3:
            t.apply(TF.disable_observer)
            e.apply(EF.disable_observer)
        if step == 5:
            t.apply(TF.disable_fake_quant)
            e.apply(EF.disable_fake_quant)
        ty, ey = t(tx), e(ex)
        g = rng.standard_normal(x.shape).astype(np.float32)
        ty.backward(torch.from_numpy(g))
        ey.backward(ember.from_numpy(g))
        np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
        np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())
        np.testing.assert_array_equal(e.scale.numpy(), t.scale.numpy())
        np.testing.assert_array_equal(e.zero_point.numpy(), t.zero_point.numpy())
    assert repr(e) == repr(t)
    sd_t, sd_e = t.state_dict(), e.state_dict()
    assert list(sd_e) == list(sd_t)
    for k in sd_t:
        assert str(sd_e[k].dtype) == str(sd_t[k].dtype) and \
            tuple(sd_e[k].shape) == tuple(sd_t[k].shape)
    fresh = getattr(EF, name)()
    fresh.load_state_dict(sd_e)
    assert repr(fresh) == repr(e)


@pytest.mark.parametrize("per_channel", [False, True])
def test_learnable_fake_quant_equals_torch(per_channel):
    """Values and input gradients bit for bit; the scale/zero-point gradients (sums of
    per-element terms of both signs) to float32 summation tolerance."""
    rng = np.random.default_rng(7)
    for n in (7, 1000):
        x = (rng.standard_normal((4, n)) * 3).astype(np.float32)
        C = 4 if per_channel else 1
        s = rng.uniform(0.01, 0.1, C).astype(np.float32)
        z = rng.uniform(-5, 260, C).astype(np.float32)
        g = rng.standard_normal(x.shape).astype(np.float32)
        res = []
        for lib in (torch, ember):
            tx = lib.from_numpy(x.copy()).requires_grad_()
            ts = lib.from_numpy(s.copy()).requires_grad_()
            tz = lib.from_numpy(z.copy()).requires_grad_()
            if per_channel:
                y = lib._fake_quantize_learnable_per_channel_affine(tx, ts, tz, 0, 0, 255, 0.5)
            else:
                y = lib._fake_quantize_learnable_per_tensor_affine(tx, ts, tz, 0, 255, 0.5)
            y.backward(lib.from_numpy(g))
            res.append((y.detach().numpy(), tx.grad.numpy(), ts.grad.numpy(), tz.grad.numpy(),
                        type(y.grad_fn).__name__))
        (ty, tgx, tgs, tgz, tname), (ey, egx, egs, egz, ename) = res
        np.testing.assert_array_equal(ey, ty)
        np.testing.assert_array_equal(egx, tgx)
        np.testing.assert_allclose(egs, tgs, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(egz, tgz, rtol=1e-3, atol=1e-4)
        assert ename == tname


def test_learnable_zero_point_rounds_half_to_even():
    # zero point 10.5 rounds to 10: -1.1 / 0.1 = -11 falls below quant_min and clamps
    y = ember._fake_quantize_learnable_per_tensor_affine(
        ember.tensor([-1.1]), ember.tensor([0.1]), ember.tensor([10.5]), 0, 255)
    t = torch._fake_quantize_learnable_per_tensor_affine(
        torch.tensor([-1.1]), torch.tensor([0.1]), torch.tensor([10.5]), 0, 255)
    assert y.item() == t.item() == -1.0


def test_histogram_fake_quant_and_jit_refusals():
    import ember.ao.quantization as EQ
    t, e = TF.default_histogram_fake_quant(), EF.default_histogram_fake_quant()
    assert repr(e) == repr(t)
    x = np.random.default_rng(8).standard_normal((4, 50)).astype(np.float32)
    np.testing.assert_array_equal(e(ember.from_numpy(x)).numpy(), t(torch.from_numpy(x)).numpy())
    assert float(e.scale) == float(t.scale) and int(e.zero_point) == int(t.zero_point)
    with pytest.raises(NotImplementedError, match="TorchScript graph-mode quantization"):
        EQ.quantize_jit(ember.nn.Linear(2, 2), {"": EQ.default_qconfig}, None, [])


def test_learnable_fake_quant_per_element_gradients_exact():
    """One-hot output gradients isolate each element's scale/zero-point gradient term: equal
    to torch's bit for bit (the totals differ only by summation order)."""
    rng = np.random.default_rng(9)
    n = 24
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    x[:8] = ((rng.integers(-60, 60, 8) + 0.5) * np.float32(0.037)).astype(np.float32)  # ties
    dy = rng.standard_normal(n).astype(np.float32)
    terms = []
    for lib in (torch, ember):
        tx = lib.from_numpy(x.copy()).requires_grad_()
        ts = lib.tensor([0.037], requires_grad=True)
        tz = lib.tensor([121.6], requires_grad=True)
        y = lib._fake_quantize_learnable_per_tensor_affine(tx, ts, tz, 0, 255, 0.7)
        got = []
        for i in range(n):
            g = lib.zeros(n)
            g[i] = float(dy[i])
            ts.grad = tz.grad = None
            y.backward(g, retain_graph=True)
            got.append((ts.grad.item(), tz.grad.item()))
        terms.append(got)
    assert terms[1] == terms[0]
