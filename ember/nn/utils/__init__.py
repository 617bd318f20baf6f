"""ember.nn.utils (torch.nn.utils): gradient clipping, parameter/vector conversion,
weight/spectral norm, parametrizations, pruning, stateless calls (``rnn`` packing lives in
``ember.nn.utils.rnn``, written separately)."""
import importlib as _importlib

from ember.nn.utils import parametrize, prune, stateless  # noqa: F401
from ember.nn.utils.clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_,  # noqa: F401
                                      get_total_norm, clip_grads_with_norm_)
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from ember.nn.utils.weight_norm import weight_norm, remove_weight_norm  # noqa: F401
from ember.nn.utils.spectral_norm import spectral_norm, remove_spectral_norm  # noqa: F401
from ember.nn.utils.fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights,  # noqa: F401
                                   fuse_linear_bn_eval, fuse_linear_bn_weights)
from ember.nn.utils.memory_format import (convert_conv2d_weight_memory_format,  # noqa: F401
                                          convert_conv3d_weight_memory_format)
from ember.nn.utils.init import skip_init  # noqa: F401

try:                                 # written by others; optional here
    rnn = _importlib.import_module("ember.nn.utils.rnn")
except ModuleNotFoundError as _e:
    if _e.name != "ember.nn.utils.rnn":
        raise


def __getattr__(name):
    if not name.startswith("_"):
        try:
            return _importlib.import_module(f"ember.nn.utils.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"ember.nn.utils.{name}":
                raise
    raise AttributeError(f"module 'ember.nn.utils' has no attribute '{name}'")
