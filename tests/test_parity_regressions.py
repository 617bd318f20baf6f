"""Regressions for ops the parity suite (tests/parity) found differing from torch."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F


def test_arange_negative_step_dividing_range():
    assert ember.arange(0, -8, -4).tolist() == [0, -4]
    assert ember.arange(0, -9, -4).tolist() == [0, -4, -8]
    assert ember.arange(0, 8, 4).tolist() == [0, 4]


def test_clamp_min_max_bool_tensor_bound():
    t = ember.tensor([True, False])
    assert ember.clamp_max(t, ember.tensor([False, False])).tolist() == [False, False]
    assert ember.clamp_min(t, ember.tensor([True, True])).tolist() == [True, True]
    with pytest.raises(NotImplementedError, match="clamp_max_scalar_cpu"):
        ember.clamp(t, max=False)
    with pytest.raises(NotImplementedError, match="clamp_cpu"):
        ember.clamp(t, ember.tensor([False, True]), ember.tensor([True, True]))


def test_addr_alpha_zero_keeps_nan():
    r = ember.addr(ember.zeros(1, 1), ember.tensor([math.nan]), ember.tensor([1.]), beta=0, alpha=0)
    assert math.isnan(r.item())
    r = ember.addr(ember.full((1, 1), math.nan), ember.tensor([1.]), ember.tensor([1.]), beta=0)
    assert r.item() == 1.0
    # addmm keeps BLAS semantics: alpha=0 ignores the product
    r = ember.addmm(ember.zeros(1, 1), ember.tensor([[math.nan]]), ember.tensor([[1.]]),
                    beta=0, alpha=0)
    assert r.item() == 0.0


def test_conj_physical_bool():
    r = ember.conj_physical(ember.tensor([True]))
    assert r.dtype == ember.bool and r.tolist() == [True]


def test_sum_to_size_empty_size():
    r = ember.tensor(True).sum_to_size(())
    assert r.dtype == ember.int64 and r.item() == 1
    r = ember.tensor([1, 2], dtype=ember.int8).sum_to_size(())
    assert r.dtype == ember.int64 and r.item() == 3


def test_flip_method_keyword_and_varargs():
    x = ember.arange(6).reshape(2, 3)
    assert x.flip(dims=(0,)).tolist() == [[3, 4, 5], [0, 1, 2]]
    assert x.flip(0, 1).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert x.permute(dims=(1, 0)).shape == (3, 2)
    with pytest.raises(TypeError):
        x.flip(0, dims=(1,))


def test_gradient_spacing_none():
    (g,) = ember.gradient(ember.tensor([1., 4., 9.]), spacing=None)
    assert g.tolist() == [3., 4., 5.]


def test_gather_empty_index_any_dtype():
    x = ember.tensor([1., 2.], requires_grad=True)
    r = ember.gather(x, 0, ember.tensor([], dtype=ember.uint8))
    assert r.shape == (0,)
    r.sum().backward()
    assert x.grad.tolist() == [0., 0.]
    assert ember.gather(x, 0, ember.zeros(2, 0, dtype=ember.uint8)).shape == (2, 0)
    with pytest.raises(RuntimeError, match="int32/int64"):
        ember.gather(x, 0, ember.tensor([1], dtype=ember.uint8))


def test_take_along_dim_wraps_indices():
    x = ember.tensor([[1., 2., 3.]])
    assert ember.take_along_dim(x, ember.tensor([[-1, 0]]), 1).tolist() == [[3., 1.]]


def test_mode_1d_is_0d():
    r = ember.mode(ember.tensor([1., 2., 2.]))
    assert r.values.shape == () and r.indices.shape == ()
    assert r.values.item() == 2. and r.indices.item() == 2


def test_nextafter_grad_passes_to_self():
    x = ember.tensor([1., 2.], requires_grad=True)
    y = ember.tensor([3., 0.], requires_grad=True)
    ember.nextafter(x, y).sum().backward()
    assert x.grad.tolist() == [1., 1.] and y.grad.tolist() == [0., 0.]


def test_index_fill_value_grad_duplicate_indices():
    x = ember.zeros(3, 5, requires_grad=True)
    v = ember.tensor(2., requires_grad=True)
    r = x.index_fill(1, ember.tensor([1, 1, 3]), v)
    r.backward(ember.arange(15.).reshape(3, 5))
    assert v.grad.item() == 42.


def test_zero_function():
    t = ember.ones(2)
    assert ember.zero_(t) is t and t.tolist() == [0., 0.]


def test_logcumsumexp_complex():
    x = ember.tensor([0.5 + 1j, -1 + 2j, 3 - 0.5j], dtype=ember.complex128)
    expected = np.log(np.cumsum(np.exp(x.numpy())))
    r = ember.logcumsumexp(x, 0).numpy()
    # equal up to the branch of the imaginary part
    np.testing.assert_allclose(np.exp(r), np.exp(expected), rtol=1e-12)
    assert ember.autograd.gradcheck(lambda t: ember.logcumsumexp(t, 0),
                                    (x.clone().requires_grad_(),))


def test_istft_two_sided_real_output_uses_first_half():
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((8, 5)) + 1j * rng.standard_normal((8, 5)))
    w = ember.hann_window(8, dtype=ember.float64)
    a = ember.istft(x, 8, hop_length=2, window=w, onesided=False, return_complex=False)
    b = ember.istft(x[:5], 8, hop_length=2, window=w, onesided=True, return_complex=False)
    np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)


@pytest.mark.parametrize("name", ["cosine", "exponential", "gaussian"])
def test_window_length_one_periodic(name):
    assert getattr(ember.signal.windows, name)(1, sym=False).tolist() == [1.]


def test_hardtanh_relu6_keep_int():
    x = ember.tensor([-3, 2, 9])
    assert F.hardtanh(x).dtype == ember.int64
    assert F.hardtanh(x, -1.5, 2.5).tolist() == [-1, 2, 2]
    assert F.relu6(x).tolist() == [0, 2, 6] and F.relu6(x).dtype == ember.int64
    with pytest.raises(RuntimeError, match="Bool"):
        F.hardtanh(ember.tensor([True]))


def test_pad_circular_negative_padding():
    x = ember.arange(16).reshape(1, 1, 4, 4)
    y = F.pad(x, (-1, 1, -2, 1), mode="circular")
    assert y.shape == (1, 1, 3, 4)
    assert y[0, 0, :, -1].tolist() == [9, 13, 9]


def test_reflected_true_division_is_reciprocal_times_scalar_like_torch():
    """torch computes ``s / t`` as ``t.reciprocal() * s``: float32 results differ from the
    correctly rounded quotient in the last bit (255 / 250 -> 1.0200001)."""
    import torch as real_torch
    for vals, dtype in (([250.0, 3.0, 7.0, 0.0, -2.0], "float32"), ([4, 0, -3], "int64"),
                        ([True, False], "bool")):
        e = 255 / ember.tensor(vals, dtype=getattr(ember, dtype))
        t = 255 / real_torch.tensor(vals, dtype=getattr(real_torch, dtype))
        assert str(e.dtype) == str(t.dtype)
        np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "pow_", "clamp_"])
def test_inplace_broadcast_mismatch_raises_runtime_error_like_torch(op):
    import torch as real_torch
    for lib, kind in ((ember, "ember"), (real_torch, "torch")):
        y = lib.ones(3, 4)
        with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of "
                                               r"tensor b \(4\)"):
            getattr(y[:, 2], op)(y[0])
