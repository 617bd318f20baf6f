"""Automatic mixed precision (torch.autocast) as a dispatcher mode.

One ``_AutocastMode`` sits on the mode stack while any autocast region is entered; it reads
the per-thread settings (enabled, dtype per device type) on every op, so nested and
disabled regions only change those settings. Per op it looks up the device's policy:

- ``"lower"``: floating tensor arguments (not float64) are cast to the low dtype;
- ``"fp32"``: they are cast to float32;
- ``"promote"``: they are cast to the widest floating dtype among them.

Casts are ``_to_copy`` calls, so they are differentiable. Backward passes and in-place or
``out=`` calls are left alone. With the CPU device the policy follows torch's CPU lists
(e.g. softmax and layer_norm run in the input dtype; cat/stack promote); otherwise the op
record's own ``autocast`` field is used.
"""
from __future__ import annotations

import functools
import threading
import warnings
import weakref

from ember import _dtype
from ember._dispatch import Mode
from ember._state import state
from ember._tensor import Tensor

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

_DEVICES = ("cpu", "cuda")
_DEFAULT_DTYPE = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}

# torch's CPU autocast lists, as ember public op names
_CPU_LOWER = frozenset((
    "mm", "bmm", "addmm", "addbmm", "baddbmm", "matmul", "chain_matmul", "einsum",
    "convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "linear", "prelu", "linalg_vecdot", "scaled_dot_product_attention",
    "_lstm_layer"))             # nn.LSTM's fused layer (torch: mkldnn_rnn_layer)
_CPU_FP32 = frozenset((
    "nll_loss_nd", "nll_loss", "nll_loss2d", "_cdist_forward", "cdist", "_ctc_loss",
    "ctc_loss", "prod", "trace", "quantile", "nanquantile", "polar", "cholesky",
    "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse",
    "geqrf", "qr", "svd", "triangular_solve", "stft", "grid_sampler", "mse_loss",
    "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "margin_ranking_loss", "soft_margin_loss",
    "hinge_embedding_loss", "poisson_nll_loss", "cosine_embedding_loss",
    "multilabel_margin_loss", "multi_margin_loss", "triplet_margin_loss",
    "_fft_c2c", "_fft_r2c", "_fft_c2r", "view_as_complex"))
_CPU_PROMOTE = frozenset(("cat", "stack", "index_copy"))


def _cpu_policy(op):
    n = op.public_name
    if n in _CPU_LOWER:
        return "lower"
    if n in _CPU_FP32 or n.startswith("linalg_") or n.startswith("fft_"):
        return "fp32"
    if n in _CPU_PROMOTE:
        return "promote"
    return None


class _Settings(threading.local):
    def __init__(self):
        self.enabled = {d: False for d in _DEVICES}
        self.dtype = dict(_DEFAULT_DTYPE)
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}
        self.bwd_depth = 0      # backward passes running when the innermost region began


_st = _Settings()


def _eligible(t):
    return isinstance(t, Tensor) and t.is_floating_point() and t.dtype is not _dtype.float64


class _AutocastMode(Mode):
    sees_composite_parts = True     # Note [composite parts] in ember/_dispatch.py

    def __ember_dispatch__(self, op, args, kwargs):
        if kwargs or op.is_inplace or not _st.enabled["cpu"]:
            return op(*args, **kwargs)
        policy = _cpu_policy(op)
        if policy is None or _in_backward():
            return op(*args, **kwargs)
        if policy == "lower":
            target = _st.dtype["cpu"]
        elif policy == "fp32":
            target = _dtype.float32
        else:
            target = None
            for i, is_list, _ in op.tensor_args:
                for t in (args[i] if is_list and isinstance(args[i], (list, tuple))
                          else (args[i],)):
                    if _eligible(t):
                        target = t.dtype if target is None else _dtype.promote_types(
                            target, t.dtype)
            if target is None:
                return op(*args, **kwargs)
        args = list(args)
        for i, is_list, _ in op.tensor_args:
            a = args[i]
            if is_list and isinstance(a, (list, tuple)):
                args[i] = type(a)(_cast(t, target) for t in a)
            else:
                args[i] = _cast(a, target)
        return op(*args)


def _in_backward():
    """Inside a backward pass begun after the innermost region: torch's engine runs the
    backward without autocast, but a region entered in it (``custom_bwd``) applies."""
    from ember.autograd.engine import _tasks
    return len(_tasks.stack) > _st.bwd_depth


def _backward_depth():
    from ember.autograd.engine import _tasks
    return len(_tasks.stack)


def _cast(t, dt):
    if not _eligible(t) or t.dtype is dt:
        return t
    from ember._ops.core import to_copy
    # torch caches the casts of leaf tensors that require grad (parameters) per region
    cacheable = _st.cache_enabled and t.requires_grad and t.grad_fn is None
    if cacheable:
        hit = _st.cache.get((id(t), dt))
        if hit is not None and hit[0]() is t:
            return hit[1]
    r = to_copy(t, dtype=dt)
    if cacheable:
        _st.cache[(id(t), dt)] = (weakref.ref(t), r)
    return r


_MODE = _AutocastMode()


def fp32_under_autocast(fn=None, *, when=None):
    """Decorator for a function torch lists among its CPU autocast float32 ops but that
    ember writes as several smaller ops (``F.mse_loss``, ``F.avg_pool3d``...): under CPU
    autocast its floating tensor arguments (not float64), positional or keyword, are cast
    to float32 before it runs. ``when(args, kwargs)`` limits this to some calls (F.pad's
    reflect and replicate modes)."""
    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            if not _st.enabled["cpu"] or _in_backward() or \
                    (when is not None and not when(args, kwargs)):
                return f(*args, **kwargs)
            args = [_cast(a, _dtype.float32) for a in args]
            kwargs = {k: _cast(v, _dtype.float32) for k, v in kwargs.items()}
            return f(*args, **kwargs)
        return wrapper
    return decorate if fn is None else decorate(fn)


def lower_under_autocast(f):
    """Decorator for a function torch lists among its CPU autocast lower-precision ops but
    that ember writes as smaller ops (``F.prelu``): under CPU autocast its floating tensor
    arguments (not float64) are cast to the autocast dtype before it runs."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        if not _st.enabled["cpu"] or _in_backward():
            return f(*args, **kwargs)
        dt = _st.dtype["cpu"]
        return f(*[_cast(a, dt) for a in args], **{k: _cast(v, dt) for k, v in kwargs.items()})
    return wrapper


def outside_autocast(f):
    """Decorator for a helper that does with ``matmul`` what torch does in one kernel
    autocast leaves alone (adaptive average pooling, antialiased resizing): it runs with
    CPU autocast off, so its weights are not rounded to the low dtype."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        if not _st.enabled["cpu"]:
            return f(*args, **kwargs)
        _st.enabled["cpu"] = False
        try:
            return f(*args, **kwargs)
        finally:
            _st.enabled["cpu"] = True
    return wrapper


def _check_device(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICES:
        from ember._device import device
        device(device_type)       # torch parses the string first ('Expected one of cpu, ...')
        raise RuntimeError(f"User specified an unsupported autocast device_type "
                           f"'{device_type}'")


class autocast:
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a region
    (context manager or decorator) in which selected ops run in a lower precision."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device(device_type)
        self.device = device_type
        self.fast_dtype = _st.dtype[device_type] if dtype is None else dtype   # (current)
        self._enabled = bool(enabled)
        self._cache_enabled = _st.cache_enabled if cache_enabled is None else cache_enabled
        if device_type == "cuda" and self._enabled:
            # a program written for a GPU runs with the region off, as on torch without CUDA
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          stacklevel=2)
            self._enabled = False
        if device_type == "cpu" and self._enabled and \
                self.fast_dtype not in (_dtype.bfloat16, _dtype.float16):
            warnings.warn(f"In CPU autocast, but the target dtype is not supported. Disabling "
                          f"autocast.\nCPU Autocast only supports dtypes of torch.bfloat16, "
                          f"torch.float16 currently.", stacklevel=2)
            self._enabled = False

    def __enter__(self):
        self._prev = (_st.enabled[self.device], _st.dtype[self.device], _st.cache_enabled,
                      _st.bwd_depth)
        _st.bwd_depth = _backward_depth()
        _st.enabled[self.device] = self._enabled
        _st.dtype[self.device] = self.fast_dtype
        _st.cache_enabled = self._cache_enabled
        _st.nesting += 1
        self._pushed = False
        if self._enabled and _MODE not in state.modes:
            _MODE.__enter__()
            self._pushed = True
        return self

    def __exit__(self, *exc):
        if self._pushed:
            _MODE.__exit__()
        _st.nesting -= 1
        if _st.nesting == 0:
            _st.cache.clear()
        _st.enabled[self.device], _st.dtype[self.device], _st.cache_enabled, \
            _st.bwd_depth = self._prev
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)
        return wrapper


def is_autocast_available(device_type):
    return device_type == "cpu"


# ---------------------------------------------------------------- global state queries
def is_autocast_enabled(device_type=None):
    """With no argument this asks about CUDA, as torch does (always False in ember)."""
    if device_type is None:
        device_type = "cuda"
    _check_device(device_type)
    return _st.enabled[device_type]


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:           # legacy one-argument form: CUDA
        device_type, enabled = "cuda", device_type
    _check_device(device_type)
    _st.enabled[device_type] = bool(enabled)
    if enabled and device_type == "cpu" and _MODE not in state.modes:
        _MODE.__enter__()


def get_autocast_dtype(device_type):
    _check_device(device_type)
    return _st.dtype[device_type]


def set_autocast_dtype(device_type, dtype):
    _check_device(device_type)
    _st.dtype[device_type] = dtype


def is_autocast_cpu_enabled():
    return _st.enabled["cpu"]


def get_autocast_cpu_dtype():
    return _st.dtype["cpu"]


def get_autocast_gpu_dtype():
    return _st.dtype["cuda"]


def is_autocast_cache_enabled():
    return _st.cache_enabled


def set_autocast_cache_enabled(enabled):
    _st.cache_enabled = bool(enabled)


def clear_autocast_cache():
    _st.cache.clear()


# ---------------------------------------------------------------- custom autograd.Functions
def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for ``autograd.Function.forward``: with ``cast_inputs`` the forward runs
    with autocast disabled and floating inputs cast to that dtype (when autocast is on)."""
    if fwd is None:      # used as @custom_fwd(...): return the decorator
        return lambda f: custom_fwd(f, device_type=device_type, cast_inputs=cast_inputs)

    def forward_with_casts(*args, **kwargs):
        on = _st.enabled[device_type]
        if args and not isinstance(args[0], Tensor):
            # the ctx remembers the region (custom_bwd runs the backward in it): a forward
            # run with cast inputs ran with autocast off
            try:
                args[0]._fwd_used_autocast = on and cast_inputs is None
                args[0]._dtype = get_autocast_dtype(device_type)
            except AttributeError:
                pass
        if cast_inputs is not None and on:
            cast = [_cast(a, cast_inputs) if isinstance(a, Tensor) else a for a in args]
            with autocast(device_type, enabled=False):
                return fwd(*cast, **kwargs)
        return fwd(*args, **kwargs)
    return functools.update_wrapper(forward_with_casts, fwd)


def custom_bwd(bwd=None, *, device_type):
    """Decorator for ``autograd.Function.backward``: it runs with the autocast state (on or
    off, and the dtype) its forward ran with under ``custom_fwd``."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    def backward_in_forwards_region(ctx, *args, **kwargs):
        with autocast(device_type, enabled=getattr(ctx, "_fwd_used_autocast", False),
                      dtype=getattr(ctx, "_dtype", None)):
            return bwd(ctx, *args, **kwargs)
    return functools.update_wrapper(backward_in_forwards_region, bwd)
