"""torch.nn.attention: choose scaled_dot_product_attention backends.

ember has one attention implementation, the CPU math/fused path, which answers for MATH and
FLASH_ATTENTION (both run on torch's CPU); with neither enabled, scaled_dot_product_attention
raises torch's "No viable backend" RuntimeError.
"""
import contextlib

from ember.backends import cuda as _cuda
from ember.backends.cuda import SDPBackend

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False

_FLAG = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
         SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}
_ALL_FLAGS = ("math", "flash", "mem_efficient", "cudnn", "overrideable")


def _cur_sdpa_kernel_backends():
    """The backends enabled now, as a list of SDPBackend."""
    return [b for b, f in _FLAG.items() if _cuda._sdp.get(f, False)] + \
        ([SDPBackend.OVERRIDEABLE] if _cuda._sdp.get("overrideable", True) else [])


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Enable only ``backends`` (an SDPBackend or a list of them) inside the block; the
    previous choice is restored on exit."""
    if isinstance(backends, SDPBackend):
        backends = [backends]
    if not isinstance(backends, (list, tuple, set)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    backends = set(backends)
    old = {f: _cuda._sdp.get(f, True) for f in _ALL_FLAGS}
    _cuda._sdp.update({f: False for f in _ALL_FLAGS})
    for b in backends:
        if b in _FLAG:
            _cuda._sdp[_FLAG[b]] = True
        elif b == SDPBackend.OVERRIDEABLE:
            _cuda._sdp["overrideable"] = True
    try:
        yield
    finally:
        _cuda._sdp.update(old)


def _check_viable_backend():
    """Raise torch's CPU error when neither CPU-capable backend (math, flash) is enabled."""
    if not (_cuda._sdp["math"] or _cuda._sdp["flash"]):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This "
                           "is likely due to turning off both the math kernel and the fused "
                           "kernels.")


def __getattr__(name):
    """``nn.attention.bias`` (causal masks), loaded on first use."""
    if name == "bias":
        import importlib
        return importlib.import_module("ember.nn.attention.bias")
    raise AttributeError(f"module 'ember.nn.attention' has no attribute '{name}'")
