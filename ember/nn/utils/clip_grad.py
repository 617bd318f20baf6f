"""clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_ (torch.nn.utils)."""
import math
import warnings

import ember
from ember import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _tensors(x):
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _vector_norm(t, p):
    a = t.abs()
    if p == math.inf:
        return a.amax() if a.numel() else ember.zeros((), dtype=t.dtype)
    if p == -math.inf:
        return a.amin()
    if p == 0:
        return (a != 0).to(t.dtype).sum()
    if p == 2:      # torch: linalg.vector_norm (its own summation order, Note [float32
        return ember.linalg.vector_norm(t, 2.0)     # 2-norm order] in ember/_kernels/reduction.py)
    if p == 1:
        return a.sum()
    return (a ** p).sum() ** (1.0 / p)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    tensors = [t for t in _tensors(tensors) if t is not None]
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return ember.tensor(0.0)
    with ember.no_grad():
        norms = [_vector_norm(g, norm_type) for g in tensors]
        # the per-tensor norms are stacked as they are: mixed dtypes promote (float32 with
        # float64 gives a float64 total, bfloat16 with float16 a float32 one), as in torch
        total_norm = _vector_norm(ember.stack(norms), norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable this "
                           "error and scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    params = _tensors(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    with ember.no_grad():
        clip_coef = max_norm / (total_norm + 1e-6)
        clip_coef_clamped = ember.clamp(clip_coef, max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped)     # (a 0-dim float32 factor: not rounded to g's dtype)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Clip the gradient norm of an iterable of parameters (in place); returns the total norm."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        parameters = list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient to [-clip_value, clip_value] in place."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    with ember.no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
