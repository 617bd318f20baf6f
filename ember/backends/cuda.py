"""torch.backends.cuda: ember has no CUDA. TF32 / reduced-precision / attention-kernel
choices are recorded flags with torch's defaults; none changes any result."""
from __future__ import annotations

import contextlib
import enum
import warnings

__all__ = ["is_built", "matmul", "cufft_plan_cache", "preferred_linalg_library",
           "preferred_blas_library", "SDPBackend", "flash_sdp_enabled", "enable_flash_sdp",
           "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp", "math_sdp_enabled",
           "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp",
           "fp16_bf16_reduction_math_sdp_allowed", "allow_fp16_bf16_reduction_math_sdp",
           "is_flash_attention_available", "can_use_flash_attention",
           "can_use_efficient_attention", "can_use_cudnn_attention", "sdp_kernel"]


def is_built():
    """Whether ember was built with CUDA support: never."""
    return False


class cuBLASModule:
    """``torch.backends.cuda.matmul``: cuBLAS matmul precision flags (recorded only)."""

    _DEFAULTS = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                 "allow_bf16_reduced_precision_reduction": True,
                 "allow_fp16_accumulation": False, "fp32_precision": "none"}

    def __init__(self):
        object.__setattr__(self, "_flags", dict(self._DEFAULTS))

    def __getattr__(self, name):
        flags = object.__getattribute__(self, "_flags")
        if name in flags:
            return flags[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name not in self._DEFAULTS:
            raise AttributeError(f"Unknown attribute {name}")
        self._flags[name] = value

    def __repr__(self):
        return f"<torch.backends.cuda.matmul {self._flags}>"


matmul = cuBLASModule()


class _PlanCache:
    """``cufft_plan_cache``: there is no cuFFT; size stays 0."""
    max_size = 0
    size = 0

    def clear(self):
        pass

    def __getitem__(self, device):
        return self


cufft_plan_cache = _PlanCache()

_linalg_library = "default"
_blas_library = "cublas"


def preferred_linalg_library(backend=None):
    """Record the preferred CUDA linear-algebra library; returns the current choice."""
    global _linalg_library
    if backend is not None:
        name = str(getattr(backend, "name", backend)).lower()
        if name not in ("default", "cusolver", "magma"):
            raise RuntimeError("Unknown input value. Choose from: default, cusolver, magma.")
        _linalg_library = name
    return _linalg_library


def preferred_blas_library(backend=None):
    global _blas_library
    if backend is not None:
        name = str(getattr(backend, "name", backend)).lower()
        if name not in ("cublas", "cublaslt", "ck", "default"):
            raise RuntimeError("Unknown input value. Choose from: cublas, cublaslt, ck.")
        _blas_library = name
    return _blas_library


class SDPBackend(enum.Enum):
    """The scaled-dot-product-attention implementations torch knows (an enum, not an int:
    ``SDPBackend.MATH == 0`` is False and it prints as ``SDPBackend.MATH``, as torch's)."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self):
        return self.value

    __index__ = __int__


_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
        "fp16_bf16_reduction_math": False}


def flash_sdp_enabled():
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool):
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool):
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled():
    return _sdp["math"]


def enable_math_sdp(enabled: bool):
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled():
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool):
    _sdp["cudnn"] = bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed():
    return _sdp["fp16_bf16_reduction_math"]


def allow_fp16_bf16_reduction_math_sdp(enabled: bool):
    _sdp["fp16_bf16_reduction_math"] = bool(enabled)


def is_flash_attention_available():
    return False


def can_use_flash_attention(params=None, debug=False):
    return False


def can_use_efficient_attention(params=None, debug=False):
    return False


def can_use_cudnn_attention(params=None, debug=False):
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):
    """Deprecated context manager choosing attention kernels; the flags are recorded and
    restored on exit (ember always computes attention with the math path)."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see "
                  "`torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=3)
    old = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math),
                mem_efficient=bool(enable_mem_efficient), cudnn=bool(enable_cudnn))
    try:
        yield {}
    finally:
        _sdp.clear()
        _sdp.update(old)
