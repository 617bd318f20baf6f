"""torch.ao.nn.quantized.Linear: quint8 in, quint8 out, a packed qint8 weight.

The weight and bias live in a :class:`LinearPackedParams` child (state_dict keys
``_packed_params.dtype`` and ``_packed_params._packed_params`` = (weight, bias)), the output
scale and zero point in plain attributes (saved as tensors ``scale``/``zero_point``), as in
torch."""
from __future__ import annotations

import ember
from ember import nn
from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
from ember.ops import quantized as Q

__all__ = ["LinearPackedParams", "Linear"]


def _quantize_weight(float_wt, observer):
    """Quantize ``float_wt`` with the parameters ``observer`` (already run on it) chose."""
    wt_scale, wt_zp = observer.calculate_qparams()
    qscheme = observer.qscheme
    if qscheme in (ember.per_tensor_symmetric, ember.per_tensor_affine):
        return ember.quantize_per_tensor(float_wt, float(wt_scale), int(wt_zp), observer.dtype)
    if qscheme in (ember.per_channel_symmetric, ember.per_channel_affine):
        return ember.quantize_per_channel(float_wt, wt_scale.to(ember.double),
                                          wt_zp.to(ember.int64), observer.ch_axis,
                                          observer.dtype)
    if qscheme is ember.per_channel_affine_float_qparams:
        return ember.quantize_per_channel(float_wt, wt_scale.to(ember.float),
                                          wt_zp.to(ember.float), observer.ch_axis,
                                          observer.dtype)
    raise ValueError(f"Unexpected qscheme {qscheme}")


def _hide_packed_params_repr(module, packed_cls):
    """The module's repr without its packed-parameter children (torch prints none)."""
    extra = module.extra_repr()
    lines = extra.split("\n") if extra else []
    shown = [(name, child) for name, child in module._modules.items()
             if not isinstance(child, packed_cls)]
    for name, child in shown:
        child_repr = repr(child).replace("\n", "\n  ")
        lines.append(f"({name}): {child_repr}")
    body = ""
    if len(lines) == 1 and not shown:
        body = lines[0]
    elif lines:
        body = "\n  " + "\n  ".join(lines) + "\n"
    return f"{module._get_name()}({body})"


def _float_module_names(types):
    return ", ".join(t.__name__ for t in types)


class LinearPackedParams(nn.Module):
    """Holds ``quantized::linear_prepack``'s packed weight (qint8) or
    ``linear_prepack_fp16``'s (float16)."""
    _version = 3

    def __init__(self, dtype=ember.qint8):
        super().__init__()
        self.dtype = dtype
        if dtype is ember.qint8:
            wq = ember.quantize_per_tensor(ember.zeros(1, 1), 1.0, 0, ember.qint8)
        elif dtype is ember.float16:
            wq = ember.zeros(1, 1, dtype=ember.float)
        else:
            raise RuntimeError(f"Unsupported dtype on dynamic quantized linear: {dtype}")
        self.set_weight_bias(wq, None)

    def set_weight_bias(self, weight, bias):
        if self.dtype is ember.qint8:
            self._packed_params = Q.linear_prepack(weight, bias)
        elif self.dtype is ember.float16:
            self._packed_params = Q.linear_prepack_fp16(weight, bias)
        else:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")

    def _weight_bias(self):
        return self._packed_params.unpack()

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        self.dtype = state_dict.pop(prefix + "dtype", ember.qint8) \
            if version is not None and version >= 2 else ember.qint8
        if version is None or version < 2:
            weight = state_dict.pop(prefix + "weight")
            bias = state_dict.pop(prefix + "bias")
        else:
            weight, bias = state_dict.pop(prefix + "_packed_params")
        self.set_weight_bias(weight, bias)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def __repr__(self):
        return repr(self._weight_bias())


class Linear(nn.Module):
    """Quantized ``y = x W^T + b``: ``x`` quint8 (..., in_features), ``y`` quint8
    (..., out_features) with this module's ``scale``/``zero_point``."""
    _version = 3
    _FLOAT_MODULE = (nn.Linear, NonDynamicallyQuantizableLinear)

    def __init__(self, in_features, out_features, bias_=True, dtype=ember.qint8):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        if dtype is not ember.qint8:
            raise RuntimeError("Unsupported dtype specified for quantized Linear!")
        bias = ember.zeros(out_features, dtype=ember.float) if bias_ else None
        qweight = ember.quantize_per_tensor(ember.zeros(out_features, in_features), 1.0, 0,
                                            ember.qint8)
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(qweight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self):
        return "QuantizedLinear"

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self.weight().qscheme()}")

    def __repr__(self):
        return _hide_packed_params_repr(self, LinearPackedParams)

    def forward(self, x):
        return Q.linear(x, self._packed_params._packed_params, self.scale, self.zero_point)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        version = local_metadata.get("version", None)
        if version is None or version == 1:     # weight and bias stored flat
            weight = state_dict.pop(prefix + "weight")
            bias = state_dict.pop(prefix + "bias")
            state_dict[prefix + "_packed_params.weight"] = weight
            state_dict[prefix + "_packed_params.bias"] = bias
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def _weight_bias(self):
        return self._packed_params._weight_bias()

    def weight(self):
        return self._weight_bias()[0]

    def bias(self):
        return self._weight_bias()[1]

    def set_weight_bias(self, w, b):
        self._packed_params.set_weight_bias(w, b)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A quantized Linear from an observed float ``nn.Linear`` (``mod.qconfig`` and
        ``mod.activation_post_process`` set), a fused LinearReLU, or a QAT Linear."""
        if hasattr(mod, "weight_fake_quant"):
            weight_post_process = mod.weight_fake_quant
            activation_post_process = mod.activation_post_process
        else:
            float_modules = cls._FLOAT_MODULE if isinstance(cls._FLOAT_MODULE, tuple) \
                else (cls._FLOAT_MODULE,)
            if type(mod) not in float_modules:
                raise AssertionError(
                    f"nnq.{cls.__name__}.from_float only works for "
                    f"{_float_module_names(float_modules)}, but got: {type(mod)}")
            if not hasattr(mod, "qconfig"):
                raise AssertionError("Input float module must have qconfig defined")
            activation_post_process = mod.activation_post_process
            if _is_fused(mod):
                mod = mod[0]
            weight_post_process = mod.qconfig.weight() if not hasattr(
                mod, "weight_fake_quant") else mod.weight_fake_quant
        if not use_precomputed_fake_quant:
            weight_post_process(mod.weight)
        dtype = weight_post_process.dtype
        act_scale, act_zp = activation_post_process.calculate_qparams()
        if dtype is not ember.qint8:
            raise AssertionError("Weight observer must have dtype torch.qint8")
        qweight = _quantize_weight(mod.weight.float(), weight_post_process)
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        qlinear.scale = float(act_scale)
        qlinear.zero_point = int(act_zp)
        return qlinear

    @classmethod
    def from_reference(cls, ref_qlinear, output_scale, output_zero_point):
        """A quantized Linear from a reference quantized Linear
        (``get_quantized_weight()``) and the output's parameters."""
        qlinear = cls(ref_qlinear.in_features, ref_qlinear.out_features)
        qlinear.set_weight_bias(ref_qlinear.get_quantized_weight(), ref_qlinear.bias)
        qlinear.scale = float(output_scale)
        qlinear.zero_point = int(output_zero_point)
        return qlinear


def _is_fused(mod):
    try:
        from ember.ao.nn.intrinsic.modules.fused import _FusedModule
    except ImportError:       # pragma: no cover - the intrinsic package is optional here
        return False
    return isinstance(mod, _FusedModule)
