"""Weight initializers (torch.nn.init). Each ``*_`` function fills its tensor in place under
``no_grad`` from ember's RNG (or ``generator``) and returns it. Fans of a weight of shape
``(out, in, *kernel)``: fan_in = in * prod(kernel), fan_out = out * prod(kernel)."""
import math
import warnings

import numpy as np

import ember
from ember import overrides as _ov

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant", "eye",
           "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
           "orthogonal", "sparse"]

_LINEAR_LIKE = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity, param=None):
    """Recommended scale for weights followed by ``nonlinearity`` (``param``: leaky_relu's
    negative slope, default 0.01)."""
    if nonlinearity in _LINEAR_LIKE:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "selu":
        return 3.0 / 4
    if nonlinearity != "leaky_relu":
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")
    if param is None:
        slope = 0.01
    elif isinstance(param, float) or (isinstance(param, int) and not isinstance(param, bool)):
        slope = param
    else:
        raise ValueError(f"negative_slope {param} not a valid number")
    return math.sqrt(2.0 / (1 + slope ** 2))


def _overridden(fn, tensor, **kwargs):
    """``__torch_function__`` dispatch for a tensor-like argument (None if not overridden)."""
    if _ov.has_torch_function_variadic(tensor):
        return (_ov.handle_torch_function(fn, (tensor,), tensor=tensor, **kwargs),)
    return None


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    hit = _overridden(uniform_, tensor, a=a, b=b, generator=generator)
    if hit:
        return hit[0]
    with ember.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2)."""
    hit = _overridden(normal_, tensor, mean=mean, std=std, generator=generator)
    if hit:
        return hit[0]
    with ember.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _std_normal_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) restricted to [a, b], by rejection sampling: redraw normals
    when [a, b] holds much of the mass, else propose uniformly on [a, b] and accept with the
    normal density relative to its peak on [a, b]."""
    if tensor.is_meta:
        return tensor
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    mass = _std_normal_cdf((b - mean) / std) - _std_normal_cdf((a - mean) / std)
    with ember.no_grad():
        if mass > 0.3:
            out = tensor.normal_(mean, std, generator=generator)
            while True:
                bad = (out < float(a)) | (out > float(b))
                if not bad.any():
                    break
                fresh = ember.empty_like(out).normal_(mean, std, generator=generator)
                out = ember.where(bad, fresh, out)
            if out is not tensor:
                tensor.copy_(out)
            return tensor

        peak = max(a, min(mean, b))
        log_peak = -0.5 * ((peak - mean) / std) ** 2

        def log_accept_ratio(x):          # log(density(x) / density(peak))
            z = (x - mean) / std
            return z ** 2 * -0.5 - log_peak
        draws = ember.empty_like(tensor)
        coins = ember.empty_like(tensor)
        tensor.uniform_(a, b, generator=generator)
        draws.copy_(tensor)
        rejected = coins.uniform_(generator=generator).log_().gt(log_accept_ratio(draws))
        if rejected.any():
            out = tensor
            while True:
                draws.uniform_(a, b, generator=generator)
                out = ember.where(rejected, draws, out)
                still = coins.uniform_(generator=generator).log_().gt(log_accept_ratio(draws))
                rejected = ember.where(rejected, still, rejected)
                if not rejected.any():
                    break
            tensor.copy_(out)
        return tensor


def constant_(tensor, val):
    """Fill with ``val``."""
    hit = _overridden(constant_, tensor, val=val)
    if hit:
        return hit[0]
    with ember.no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    with ember.no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor):
    with ember.no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Identity matrix (2-D only)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with ember.no_grad():
        tensor.copy_(ember.eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


def dirac_(tensor, groups=1):
    """Identity convolution kernel for a ``(out, in, *k)`` weight with 1-3 spatial dims: each
    group's channel d maps to input channel d through the kernel centre."""
    shape = tuple(tensor.shape)
    if not 3 <= len(shape) <= 5:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    per_group, rest = divmod(shape[0], groups)
    if rest:
        raise ValueError("dim 0 must be divisible by groups")
    if tensor.is_meta:
        return tensor
    channels = range(min(per_group, shape[1]))
    ones_at = [(g * per_group + d, d) for g in range(groups) for d in channels]
    middle = [s // 2 for s in shape[2:]]
    with ember.no_grad():
        tensor.zero_()
        for out_channel, in_channel in ones_at:
            tensor[(out_channel, in_channel, *middle)] = 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.size(1) * receptive, tensor.size(0) * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _xavier_std(tensor, gain):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return gain * math.sqrt(2.0 / float(fan_in + fan_out))


def _centred(tensor, std, uniform, generator):
    """Fill with zero-mean values of standard deviation ``std``: uniform on
    [-sqrt(3) std, sqrt(3) std] or normal."""
    with ember.no_grad():
        if uniform:
            half_width = math.sqrt(3.0) * std
            return tensor.uniform_(-half_width, half_width, generator=generator)
        return tensor.normal_(0, std, generator=generator)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-r, r) with r = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""
    return _centred(tensor, _xavier_std(tensor, gain), True, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot)."""
    return _centred(tensor, _xavier_std(tensor, gain), False, generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    """std = gain / sqrt(fan), or None for an empty tensor (warned no-op)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with b = gain * sqrt(3 / fan) (He)."""
    hit = _overridden(kaiming_uniform_, tensor, a=a, mode=mode, nonlinearity=nonlinearity,
                      generator=generator)
    if hit:
        return hit[0]
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else _centred(tensor, std, True, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std^2) with std = gain / sqrt(fan) (He)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else _centred(tensor, std, False, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix over the tensor viewed as ``(rows, numel / rows)``, times
    ``gain``: the sign-corrected Q of a Gaussian matrix's QR."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.is_meta or tensor.numel() == 0:
        return tensor
    flat = (len(tensor), tensor.numel() // len(tensor))
    gauss = tensor.new_empty(flat).normal_(0, 1, generator=generator).numpy()
    wide = flat[0] < flat[1]                 # factor the tall one of the matrix / transpose
    q, r = np.linalg.qr(gauss.T if wide else gauss)
    q = (q * np.sign(np.diagonal(r))).astype(gauss.dtype)
    q = ember.from_numpy(np.ascontiguousarray(q.T if wide else q))
    with ember.no_grad():
        tensor.copy_(q.reshape(tensor.shape))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """2-D only: N(0, std^2) values with ``ceil(sparsity * rows)`` random zeros per column."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    if tensor.is_meta:
        return tensor
    zeros_per_column = math.ceil(sparsity * tensor.shape[0])
    with ember.no_grad():
        tensor.normal_(0, std, generator=generator)
        for column in range(tensor.shape[1]):     # a fresh random choice of rows each time
            dropped = ember.randperm(tensor.shape[0])[:zeros_per_column]
            tensor[dropped, column] = 0
    return tensor


def _deprecated_alias(fn):
    new = fn.__name__
    old = new[:-1]

    def alias(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    alias.__name__ = old
    alias.__doc__ = f"Deprecated alias of :func:`{new}`."
    return alias


uniform = _deprecated_alias(uniform_)
normal = _deprecated_alias(normal_)
constant = _deprecated_alias(constant_)
eye = _deprecated_alias(eye_)
dirac = _deprecated_alias(dirac_)
xavier_uniform = _deprecated_alias(xavier_uniform_)
xavier_normal = _deprecated_alias(xavier_normal_)
kaiming_uniform = _deprecated_alias(kaiming_uniform_)
kaiming_normal = _deprecated_alias(kaiming_normal_)
orthogonal = _deprecated_alias(orthogonal_)
sparse = _deprecated_alias(sparse_)
