"""ember.nn (torch.nn): modules, functional, init, utils."""
from ember.nn.modules import *  # noqa: F401,F403
from ember.nn.modules import __all__ as _modules_all
from ember.nn import functional  # noqa: F401
from ember.nn import init  # noqa: F401
from ember.nn import utils  # noqa: F401
from ember.nn import parallel  # noqa: F401
from ember.nn.parallel import DataParallel  # noqa: F401
from ember.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: F401
from ember.nn._factory_kwargs import factory_kwargs  # noqa: F401
from ember.nn import common_types  # noqa: F401

try:
    from ember.nn.parameter import (Parameter, Buffer, UninitializedParameter,  # noqa: F401
                                    UninitializedBuffer)
except ImportError:      # being written
    pass

__all__ = list(_modules_all) + ["functional", "init", "utils", "parallel", "Parameter",
                                "LinearCrossEntropyOptions", "DataParallel", "UninitializedBuffer",
                                "factory_kwargs"]


def __getattr__(name):
    """torch.nn.quantized / intrinsic / qat (ember.ao.nn aliases), grad, attention: lazy."""
    if name in ("quantized", "intrinsic", "qat", "quantizable", "grad", "attention"):
        import importlib
        return importlib.import_module(f"ember.nn.{name}")
    raise AttributeError(f"module 'ember.nn' has no attribute '{name}'")
