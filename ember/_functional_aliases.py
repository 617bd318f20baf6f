"""Top-level torch.<op> spellings of functional ops ember had only under nn.functional:
``pdist(input (N, M), p=2) -> (N*(N-1)/2,)``, ``bilinear(x1 (*, in1), x2 (*, in2),
weight (out, in1, in2), bias=None) -> (*, out)``, ``conv_tbc(input (T, B, C_in),
weight (K, C_in, C_out), bias (C_out,), pad=0) -> (T + 2 pad - K + 1, B, C_out)``.
Also torch's positional forms of the dropouts (``torch.dropout(input, p, train)``, their
in-place ``_`` variants), ``torch.embedding(weight, indices, ...)``, and function forms of
tensor methods (``torch.detach``, ``is_same_size``, ``get_device``...)."""
import warnings

from ember.nn import functional as _F

__all__ = ["pdist", "bilinear", "conv_tbc", "dropout", "dropout_", "alpha_dropout",
           "alpha_dropout_", "feature_dropout", "feature_dropout_", "feature_alpha_dropout",
           "feature_alpha_dropout_", "embedding", "detach", "detach_", "is_same_size",
           "is_signed", "is_inference", "get_device", "conj_physical_", "fill_", "index_put_",
           "frobenius_norm", "nuclear_norm", "lstm_cell", "gru_cell", "rnn_tanh_cell",
           "rnn_relu_cell"]


def pdist(input, p=2):
    """Pairwise p-norm distances between the rows of ``input`` (upper triangle, row-major)."""
    return _F.pdist(input, p)


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = x1 @ weight[o] @ x2 (+ bias[o])``."""
    return _F.bilinear(input1, input2, weight, bias)


def conv_tbc(input, weight, bias, pad=0):
    """1D convolution over time-batch-channel input (see nn.functional.conv_tbc)."""
    return _F.conv_tbc(input, weight, bias, pad)


def _positional_dropout(fn, inplace):
    def run(input, p, train):
        return fn(input, p, train, inplace)
    run.__name__ = fn.__name__ + ("_" if inplace else "")
    run.__doc__ = f"``nn.functional.{fn.__name__}(input, p, train, inplace={inplace})``."
    return run


dropout, dropout_ = (_positional_dropout(_F.dropout, i) for i in (False, True))
alpha_dropout, alpha_dropout_ = (_positional_dropout(_F.alpha_dropout, i) for i in (False, True))
feature_dropout, feature_dropout_ = (_positional_dropout(_F.dropout2d, i) for i in (False, True))
feature_alpha_dropout, feature_alpha_dropout_ = (
    _positional_dropout(_F.feature_alpha_dropout, i) for i in (False, True))
feature_dropout.__name__, feature_dropout_.__name__ = "feature_dropout", "feature_dropout_"


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at ``indices`` (aten's argument order; ``padding_idx=-1``: none)."""
    return _F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                        scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def detach(input):
    return input.detach()


def detach_(input):
    return input.detach_()


def is_same_size(input, other):
    return input.is_same_size(other)


def is_signed(input):
    return input.is_signed()


def is_inference(input):
    return input.is_inference()


def get_device(input):
    """-1: ember's tensors are on the CPU."""
    from ember._tensor import Tensor
    if not isinstance(input, Tensor):
        raise TypeError(f"get_device(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return -1


def conj_physical_(input):
    return input.conj_physical_()


def fill_(input, value):
    return input.fill_(value)


def index_put_(input, indices, values, accumulate=False):
    return input.index_put_(indices, values, accumulate)


_warned = set()


def _warn_once(name, instead):
    """torch's once-a-process deprecation warning of the JIT-only norms."""
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"at::{name} is deprecated and it is just left for JIT compatibility. It "
                      f"will be removed in a future PyTorch release. Please use {instead} "
                      f"instead", UserWarning, stacklevel=3)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """The 2-norm of ``input`` over ``dim`` (deprecated in torch, as here)."""
    import ember
    _warn_once("frobenius_norm", "`linalg.vector_norm(A, 2., dim, keepdim)`")
    return ember.linalg.vector_norm(input, 2, dim, keepdim, out=out)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of singular values of the matrices over ``dim`` (the last two by default)."""
    import ember
    _warn_once("nuclear_norm", "`linalg.matrix_norm(A, 'nuc', dim, keepdim)`")
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return ember.linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim,
                                    out=out)


def _cell(mode, input, hx, w_ih, w_hh, b_ih, b_hh):
    from ember.nn.modules.rnn import _cell as step
    if mode == "LSTM":
        h, c = hx
        return tuple(step(mode, input, h, c, w_ih, w_hh, b_ih, b_hh))
    return step(mode, input, hx, None, w_ih, w_hh, b_ih, b_hh)[0]


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: input (B, E), hx = (h, c) each (B, H), w_ih (4H, E), w_hh (4H, H)
    -> (h', c')."""
    return _cell("LSTM", input, hx, w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step: input (B, E), hx (B, H), w_ih (3H, E), w_hh (3H, H) -> h'."""
    return _cell("GRU", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step ``tanh(x w_ih^T + b_ih + h w_hh^T + b_hh)``: (B, E), (B, H) -> (B, H)."""
    return _cell("RNN_TANH", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step with ReLU: (B, E), (B, H) -> (B, H)."""
    return _cell("RNN_RELU", input, hx, w_ih, w_hh, b_ih, b_hh)
