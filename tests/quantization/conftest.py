"""Quantization tests compare ember's integers with torch's x86/fbgemm engine's."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

warnings.filterwarnings("ignore", message="torch.quantize_per_tensor, torch.quantize_per_channel")


@pytest.fixture(autouse=True)
def _fbgemm_engine():
    torch.backends.quantized.engine = "x86"
    ember.backends.quantized.engine = "x86"
    yield


def to_torch(t):
    """A torch tensor (quantized with the same integers and parameters) of an ember one."""
    if t.is_quantized:
        qs = t.qscheme()
        ints = torch.from_numpy(np.array(t.int_repr().numpy()))
        if qs is ember.per_tensor_affine:
            return torch._make_per_tensor_quantized_tensor(ints, t.q_scale(), t.q_zero_point())
        return torch._make_per_channel_quantized_tensor(
            ints, torch.from_numpy(t.q_per_channel_scales().numpy().copy()),
            torch.from_numpy(t.q_per_channel_zero_points().numpy().copy()),
            t.q_per_channel_axis())
    return torch.from_numpy(np.array(t.numpy()))


def to_ember(t):
    if t.is_quantized:
        ints = ember.from_numpy(t.int_repr().numpy().copy())
        if t.qscheme() == torch.per_tensor_affine:
            return ember._make_per_tensor_quantized_tensor(ints, t.q_scale(), t.q_zero_point())
        return ember._make_per_channel_quantized_tensor(
            ints, ember.from_numpy(t.q_per_channel_scales().numpy().copy()),
            ember.from_numpy(t.q_per_channel_zero_points().numpy().copy()),
            t.q_per_channel_axis())
    return ember.from_numpy(t.detach().numpy().copy())


def assert_same_q(e, t):
    """Same dtype name, scheme, parameters and integers, bit for bit."""
    assert str(e.dtype) == str(t.dtype)
    assert e.shape == tuple(t.shape)
    assert str(e.qscheme()) == str(t.qscheme())
    if t.qscheme() == torch.per_tensor_affine:
        assert e.q_scale() == t.q_scale() and e.q_zero_point() == t.q_zero_point()
    else:
        np.testing.assert_array_equal(e.q_per_channel_scales().numpy(),
                                      t.q_per_channel_scales().numpy())
        np.testing.assert_array_equal(e.q_per_channel_zero_points().numpy(),
                                      t.q_per_channel_zero_points().numpy())
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
