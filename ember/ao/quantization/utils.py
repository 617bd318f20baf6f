"""Small helpers of torch.ao.quantization.utils used by eager and FX quantization."""
from __future__ import annotations

import ember

__all__ = ["get_qparam_dict", "get_combined_dict", "is_per_tensor", "is_per_channel",
           "getattr_from_fqn", "check_min_max_valid", "calculate_qmin_qmax"]


def is_per_tensor(qscheme):
    return qscheme in (ember.per_tensor_affine, ember.per_tensor_symmetric)


def is_per_channel(qscheme):
    return qscheme in (ember.per_channel_affine, ember.per_channel_affine_float_qparams,
                       ember.per_channel_symmetric)


def get_combined_dict(default_dict, additional_dict):
    """``default_dict`` updated with ``additional_dict`` (a new dict)."""
    return {**default_dict, **additional_dict}


def getattr_from_fqn(obj, fqn):
    """``obj.a.b.c`` for ``fqn = "a.b.c"``."""
    for part in fqn.split("."):
        obj = getattr(obj, part)
    return obj


def get_qparam_dict(observer_or_fake_quant):
    """{qscheme, dtype, scale, zero_point[, axis], quant_min, quant_max} of an observer (the
    weight description reference modules take); symmetric schemes read as their affine
    ones."""
    obs = observer_or_fake_quant
    scheme = getattr(obs, "qscheme", None)
    if not scheme:
        return {"qscheme": scheme, "dtype": obs.dtype}
    if is_per_tensor(scheme):
        general, extra = ember.per_tensor_affine, {}
    elif is_per_channel(scheme):
        general = ember.per_channel_affine if scheme is ember.per_channel_symmetric else scheme
        extra = {"axis": obs.ch_axis}
    else:
        raise RuntimeError(f"Unrecognized qscheme: {scheme}")
    scale, zero_point = obs.calculate_qparams()
    out = {"qscheme": general, "dtype": obs.dtype, **extra, "scale": scale,
           "zero_point": zero_point}
    for bound in ("quant_min", "quant_max"):
        if hasattr(obs, bound):
            out[bound] = getattr(obs, bound)
    return out


def check_min_max_valid(min_val, max_val):
    """False (with a warning) for an unobserved range."""
    from ember.ao.quantization.observer import _valid_min_max
    return _valid_min_max(min_val, max_val)


def calculate_qmin_qmax(quant_min, quant_max, has_customized_qrange, dtype, reduce_range):
    """The (quant_min, quant_max) an observer of ``dtype`` uses."""
    from ember.ao.quantization.observer import _qmin_qmax
    return _qmin_qmax(quant_min, quant_max, has_customized_qrange, dtype, reduce_range)


def _observer_or_fake_quant_type():
    from typing import Union
    from ember.ao.quantization.observer import ObserverBase
    from ember.ao.quantization.fake_quantize import FakeQuantizeBase
    return Union[ObserverBase, FakeQuantizeBase]


def __getattr__(name):
    if name == "ObserverOrFakeQuantize":
        return _observer_or_fake_quant_type()
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")


# torch 2.13 warns (a DeprecationWarning naming the caller's line, so shown for a script's
# own calls only) when the quantization flows are called: eager prepare/convert/quantize*,
# prepare_qat and the FX prepare/convert functions; fusing and the helpers stay silent
_DEPRECATION = (
    "torch.ao.quantization is deprecated and will be removed in 2.10. \n"
    "For migrations of users: \n"
    "1. Eager mode quantization (torch.ao.quantization.quantize, "
    "torch.ao.quantization.quantize_dynamic), please migrate to use torchao eager mode "
    "quantize_ API instead \n"
    "2. FX graph mode quantization (torch.ao.quantization.quantize_fx.prepare_fx,"
    "torch.ao.quantization.quantize_fx.convert_fx, please migrate to use torchao pt2e "
    "quantization API instead (prepare_pt2e, convert_pt2e) \n"
    "3. pt2e quantization has been migrated to torchao "
    "(https://github.com/pytorch/ao/tree/main/torchao/quantization/pt2e) \n"
    "see https://github.com/pytorch/ao/issues/2259 for more details")


def _deprecated_flow(fn):
    import functools
    import warnings

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        warnings.warn(_DEPRECATION, DeprecationWarning, stacklevel=2)
        return fn(*args, **kwargs)
    return wrapper
