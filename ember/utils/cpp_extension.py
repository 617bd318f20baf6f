"""``torch.utils.cpp_extension``: building and loading C++/CUDA operator libraries.

ember is NumPy underneath and has no C++ tensor ABI for such a library to link against, so
every builder and loader here raises NotImplementedError naming itself; the constants and
path helpers a setup script reads first answer as on a machine without CUDA/ROCm. Write
the operator in Python instead: an ``ember.autograd.Function`` (forward and backward on
tensors), or a numba kernel over ``tensor.numpy()``.
"""
from __future__ import annotations

import os
import shutil
import sys

__all__ = ["load", "load_inline", "CppExtension", "CUDAExtension", "SyclExtension",
           "BuildExtension", "include_paths", "library_paths", "get_default_build_root",
           "is_ninja_available", "verify_ninja_availability", "get_compiler_abi_compatibility_and_version",
           "check_compiler_ok_for_platform", "CUDA_HOME", "ROCM_HOME", "SYCL_HOME", "CUDNN_HOME",
           "IS_HIP_EXTENSION", "IS_LINUX", "IS_MACOS", "IS_WINDOWS"]

CUDA_HOME = ROCM_HOME = SYCL_HOME = CUDNN_HOME = None
IS_HIP_EXTENSION = False
IS_WINDOWS = sys.platform == "win32"
IS_MACOS = sys.platform.startswith("darwin")
IS_LINUX = sys.platform.startswith("linux")


def _unsupported(what):
    raise NotImplementedError(
        f"torch.utils.cpp_extension.{what}: ember has no C++ tensor ABI, so C++/CUDA "
        f"extensions cannot be built or loaded; write the operator as a "
        f"torch.autograd.Function in Python (or a numba kernel over tensor.numpy())")


def load(name, sources, *args, **kwargs):
    _unsupported("load")


def load_inline(name, cpp_sources, *args, **kwargs):
    _unsupported("load_inline")


def CppExtension(name, sources, *args, **kwargs):
    _unsupported("CppExtension")


def CUDAExtension(name, sources, *args, **kwargs):
    _unsupported("CUDAExtension")


def SyclExtension(name, sources, *args, **kwargs):
    _unsupported("SyclExtension")


class BuildExtension:
    """setuptools' ``build_ext`` command class in torch; here building raises."""

    @classmethod
    def with_options(cls, **options):
        return cls

    def __init__(self, *args, **kwargs):
        _unsupported("BuildExtension")


def include_paths(device_type="cpu"):
    """No headers: ember ships no C++ API."""
    return []


def library_paths(device_type="cpu"):
    return []


def get_default_build_root():
    import getpass
    import tempfile
    return os.path.realpath(os.path.join(tempfile.gettempdir(),
                                         f"torch_extensions_{getpass.getuser()}"))


def is_ninja_available():
    return shutil.which("ninja") is not None


def verify_ninja_availability():
    if not is_ninja_available():
        raise RuntimeError("Ninja is required to load C++ extensions")


def get_compiler_abi_compatibility_and_version():
    _unsupported("get_compiler_abi_compatibility_and_version")


def check_compiler_ok_for_platform(compiler):
    _unsupported("check_compiler_ok_for_platform")
