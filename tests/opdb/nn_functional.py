"""Op database entries for the nn normalisation / loss / activation records and torch's
top-level fronts (ember/_ops/nn_norm.py, nn_loss.py, nn_activation.py). The fused records
have no public ember.* front of their own: their entries have no samples (coverage only)
and they are tested through ember.nn.functional in tests/nn/test_norm.py and
tests/nn/test_loss.py (values and gradients vs torch, float64 gradcheck/gradgradcheck)."""
import numpy as np

from opinfo import OpInfo, SampleInput, make_arg, unary_samples

_SELU_A, _SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _none(dtype, rng):
    return []


def _elu(x, alpha):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _kinkless(low=-3, high=3):
    gen = unary_samples(low=low, high=high)

    def f(dtype, rng):
        out = gen(dtype, rng)
        for s in out:
            s.input[np.abs(s.input) < 0.05] = 0.5
            s.input[np.abs(np.abs(s.input) - 0.5) < 0.05] = 0.8
        return out
    return f


def _threshold_samples(dtype, rng):
    return [SampleInput(s.input, (0.2, -1.5)) for s in _kinkless()(dtype, rng)]


def _prelu_samples(dtype, rng):
    x = make_arg((2, 3, 4), dtype, rng, -3, 3)
    x[np.abs(x) < 0.05] = 0.5
    return [SampleInput(x, (make_arg((3,), dtype, rng, 0, 1),)),
            SampleInput(x, (make_arg((1,), dtype, rng, 0, 1),))]


def _prelu_ref(x, w):
    w = w.reshape((1, -1, 1)) if w.size > 1 else w.reshape(())
    return np.where(x > 0, x, w * x)


OPS = [
    OpInfo("nn.functional fused records", None, _none, method=False, supports_grad=False,
           op_records=("_batch_norm_impl", "_layer_norm_impl", "nll_loss_nd",
                       "_nll_loss_backward", "_ctc_loss", "_ctc_loss_backward", "mse_loss",
                       "_binary_cross_entropy_elems")),
    OpInfo("selu", lambda x: _SELU_S * _elu(x, _SELU_A), _kinkless(), method=False),
    OpInfo("celu", lambda x: _elu(x, 1.0), _kinkless(), method=False),
    OpInfo("hardshrink", lambda x: np.where(np.abs(x) > 0.5, x, 0), _kinkless()),
    OpInfo("threshold", lambda x, t, v: np.where(x > t, x, v), _threshold_samples,
           method=False),
    OpInfo("prelu", _prelu_ref, _prelu_samples),
]
