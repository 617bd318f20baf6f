"""ember: PyTorch's API on NumPy. ``import ember as torch``."""
from __future__ import annotations

from ember.torch_version import TorchVersion as _TorchVersion

__ember_version__ = "0.1.0"
__version__ = _TorchVersion(f"2.13.0+ember{__ember_version__}")   # the torch API followed

from ember._allocator import tune_malloc as _tune_malloc
_tune_malloc()        # Note [page faults]

from ember import _dtype
from ember._dtype import (dtype, bool, uint8, int8, int16, int32, int64, uint16, uint32, uint64,
                          float16, bfloat16, float32, float64, complex32, complex64, complex128,
                          quint8, qint8, qint32, quint4x2, qscheme, per_tensor_affine,
                          per_channel_affine, per_tensor_symmetric, per_channel_symmetric,
                          per_channel_affine_float_qparams,
                          half, float, double, chalf, cfloat, cdouble, short, int, long,
                          promote_types, result_type, can_cast, get_default_dtype,
                          set_default_dtype, finfo, iinfo)
from ember._device import device, get_default_device, set_default_device
from ember._tensor import Tensor, Size
from ember._creation import tensor, as_tensor, asarray, from_numpy, from_dlpack
from ember._legacy import TYPES as _LEGACY_TYPES  # noqa: F401
from ember._legacy import typename, set_default_tensor_type  # noqa: F401
globals().update(_LEGACY_TYPES)         # FloatTensor, LongTensor... (torch's typed types)
from ember import _ops
from ember._ops import api_gaps as _api_gaps  # noqa: F401  (orgqr, sspaddmm, lstm... )
from ember._ops.registry import FUNCTIONS as _FUNCTIONS, METHODS as _METHODS
from ember._tensor import install_methods as _install_methods
from ember import autograd
from ember import utils
from ember.autograd import is_anomaly_enabled, is_anomaly_check_nan_enabled
from ember.autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,
                                      is_grad_enabled, is_inference_mode_enabled)

from ember._meta_tensor import install as _install_meta_factories
_install_meta_factories(globals(), _FUNCTIONS, _METHODS)
_install_methods(_METHODS, _FUNCTIONS)
globals().update({k: v for k, v in _FUNCTIONS.items() if not k.startswith("_")})
# torch's private samplers that distributions code calls by name (torch._standard_gamma ...)
globals().update({k: _FUNCTIONS[k] for k in ("_standard_gamma", "_standard_gamma_grad",
                                              "_sample_dirichlet", "_dirichlet_grad",
                                              "_make_per_tensor_quantized_tensor",
                                              "_make_per_channel_quantized_tensor",
                                              "_empty_affine_quantized",
                                              "_empty_per_channel_affine_quantized",
                                              "_fake_quantize_learnable_per_tensor_affine",
                                              "_fake_quantize_learnable_per_channel_affine",
                                              "_fused_adam_", "_fused_adamw_",
                                              "_weight_norm")
                  + _ops.aten.TORCH_PRIVATE
                  if k in _FUNCTIONS})


class _NamedConstant:
    """A torch constant printed ``torch.<name>``; a singleton (copies and pickles give the
    same object)."""
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return self.name

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class layout(_NamedConstant):
    """A tensor layout (torch.strided, torch.sparse_coo...)."""


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
_mkldnn = layout("_mkldnn")
jagged = layout("jagged")


class memory_format(_NamedConstant):
    """A memory format (torch.contiguous_format, torch.channels_last...)."""


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


from math import e, inf, nan, pi  # noqa: E402,F401  (torch.pi / e / inf / nan: floats)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


def numel(input):
    return input.numel()


def is_nonzero(input):
    """``bool(input)`` of a one-element tensor (torch's ambiguity errors otherwise)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_nonzero(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.__bool__()          # (``bool`` here is ember.bool, the dtype)

# random numbers, printing, creation from buffers (ember/random.py, ember/_tensor_str.py)
from ember import random  # noqa: E402
from ember.random import (manual_seed, seed, initial_seed, Generator, default_generator,  # noqa: E402
                          get_rng_state, set_rng_state)
from ember._tensor_str import set_printoptions  # noqa: E402
from ember._creation import frombuffer  # noqa: E402
from ember.storage import UntypedStorage, TypedStorage, is_storage  # noqa: E402,F401
from ember.storage import _LEGACY as _LEGACY_STORAGES, Storage  # noqa: E402,F401
globals().update(_LEGACY_STORAGES)     # FloatStorage, LongStorage... (legacy typed storages)
from ember import nn  # noqa: E402,F401
from ember._functional_aliases import *  # noqa: E402,F401,F403  (pdist, dropout, detach...)
from ember.serialization import save, load  # noqa: E402


# torch.linalg (ember/_ops/linalg.py)
from ember import linalg  # noqa: E402,F401
from ember._lowrank import svd_lowrank, pca_lowrank  # noqa: E402,F401
from ember._lobpcg import lobpcg  # noqa: E402,F401
from ember._stream import Stream, Event  # noqa: E402,F401
from ember import masked  # noqa: E402,F401

# scientific computing: fft, special functions, complex views, determinism
# (ember/fft, ember/special, ember/_ops/complex.py, ember/_determinism.py)
from ember import fft, special  # noqa: E402,F401
from ember import signal  # noqa: E402,F401  (torch.signal.windows)
from ember._threads import (get_num_threads, set_num_threads,  # noqa: E402,F401
                            get_num_interop_threads, set_num_interop_threads)
from ember._determinism import (use_deterministic_algorithms,  # noqa: E402
                                are_deterministic_algorithms_enabled,
                                is_deterministic_algorithms_warn_only_enabled,
                                set_deterministic_debug_mode, get_deterministic_debug_mode)
from ember._runtime_flags import *  # noqa: E402,F401,F403  (set_warn_always, sym_int...)
from ember.utils import deterministic as _utils_deterministic  # noqa: E402,F401
from ember._precision import (set_float32_matmul_precision,  # noqa: E402,F401
                              get_float32_matmul_precision)


# the backend names torch.compile accepts (every one runs eagerly here) and the inductor
# modes it knows; anything else is refused as torch refuses it
_COMPILE_BACKENDS = frozenset((
    "aot_eager", "aot_eager_decomp_partition", "aot_eager_decomp_partition_crossref",
    "aot_eager_decomp_partition_with_mode", "aot_eager_default_partitioner", "aot_ts",
    "cudagraphs", "eager", "eager_debug", "eager_noexcept", "inductor", "invoke_subgraph",
    "openxla", "openxla_eval", "pre_dispatch_eager", "ts", "tvm"))
_COMPILE_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
                  "max-autotune")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """torch.compile's API with ember's only backend, eager execution: a function comes back
    unchanged; a module comes back wrapped as torch's ``OptimizedModule`` (its state-dict
    keys gain the ``_orig_mod.`` prefix, as torch's do). No ``model``: a decorator. The
    arguments are checked in torch's order: ``mode`` with ``options``, an unknown backend
    name, an unknown mode for the (default) inductor backend, a model that is no callable."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if isinstance(backend, str) and backend not in _COMPILE_BACKENDS:
        from ember._dynamo.exc import InvalidBackend
        raise InvalidBackend(backend)
    if backend == "inductor" and mode and mode not in _COMPILE_MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(_COMPILE_MODES)}")
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    from ember.nn.modules.module import Module
    if disable or not isinstance(model, Module):
        return model
    from ember._dynamo.eval_frame import OptimizedModule
    return OptimizedModule(model)

# mixed precision, device namespaces, profiler (ember/amp, ember/cpu, ember/cuda,
# ember/profiler)
from ember import accelerator, amp, cpu, cuda, mps, xpu  # noqa: E402,F401
from ember.amp import autocast  # noqa: E402,F401
from ember.amp.autocast_mode import (is_autocast_enabled, set_autocast_enabled,  # noqa: E402
                                     get_autocast_dtype, set_autocast_dtype,
                                     is_autocast_cpu_enabled, get_autocast_cpu_dtype,
                                     get_autocast_gpu_dtype, is_autocast_cache_enabled,
                                     set_autocast_cache_enabled, clear_autocast_cache)


# Subpackages that register no ops load on first use (import time matters):
# ember.optim, ember.func, ember.profiler.
_LAZY_SUBMODULES = ("optim", "func", "profiler", "backends", "testing", "multiprocessing", "hub",
                    "distributions", "sparse", "ops", "fx", "jit", "futures", "onnx", "lite",
                    "ao", "quantization", "distributed", "__future__", "version", "return_types",
                    "compiler", "_dynamo", "_inductor", "quasirandom", "types", "functional", "_C",
                    "package", "library")


def __getattr__(name):
    if name == "vmap":                    # torch.vmap is torch.func.vmap
        from ember.func import vmap
        return vmap
    if name == "_assert":                 # torch._assert (defined beside ember.fx's tracer)
        from ember.fx._symbolic_trace import _assert
        return _assert
    if name.startswith("_foreach_"):     # torch._foreach_add_ ... (ember/_foreach.py)
        from ember._foreach import FUNCTIONS as _foreach_functions
        if name in _foreach_functions:
            return _foreach_functions[name]
    if name in _LAZY_SUBMODULES:
        import importlib
        module = importlib.import_module(f"ember.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'ember' has no attribute '{name}'")
