"""torch.ao.nn.quantized.dynamic.Linear: float in, float out; the input is quantized on the
fly (quint8, ``reduce_range``), the weight is packed qint8 or float16."""
from __future__ import annotations

import ember
from ember import nn
from ember.ao.nn.quantized.modules import linear as nnq_linear
from ember.ops import quantized as Q

__all__ = ["Linear"]


class Linear(nnq_linear.Linear):
    """Dynamically quantized ``y = x W^T + b`` (float32 (..., in) -> float32 (..., out))."""
    _version = 4

    def __init__(self, in_features, out_features, bias_=True, dtype=ember.qint8):
        nn.Module.__init__(self)
        self.in_features = in_features
        self.out_features = out_features
        bias = ember.zeros(out_features, dtype=ember.float) if bias_ else None
        if dtype is ember.qint8:
            weight = ember.quantize_per_tensor(ember.zeros(out_features, in_features), 1.0, 0,
                                               ember.qint8)
        elif dtype is ember.float16:
            weight = ember.zeros(out_features, in_features, dtype=ember.float)
        else:
            raise RuntimeError("Unsupported dtype specified for quantized Linear!")
        self._packed_params = nnq_linear.LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(weight, bias)
        self.scale = 1.0
        self.zero_point = 0
        self.version = 4

    def forward(self, x):
        packed = self._packed_params._packed_params
        if self._packed_params.dtype is ember.qint8:
            # version 4 and earlier checkpoints alike quantize the input with reduce_range
            return Q.linear_dynamic(x, packed, reduce_range=True)
        if self._packed_params.dtype is ember.float16:
            return Q.linear_dynamic_fp16(x, packed)
        raise RuntimeError("Unsupported dtype on dynamic quantized linear!")

    def _get_name(self):
        return "DynamicQuantizedLinear"

    def extra_repr(self):
        text = (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={self._packed_params.dtype}")
        if self._packed_params.dtype is ember.qint8:
            text += f", qscheme={self.weight().qscheme()}"
        return text

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.version = local_metadata.get("version", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A dynamic quantized Linear from a float ``nn.Linear`` (or LinearReLU, QAT Linear);
        the weight observer comes from ``mod.qconfig`` (the default dynamic one if None)."""
        float_modules = _float_modules()
        if type(mod) not in float_modules:
            names = [t.__name__ for t in float_modules]
            raise AssertionError("nn.quantized.dynamic.Linear.from_float only works for one "
                                 f"of{names}, got {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if nnq_linear._is_fused(mod):
            mod = mod[0]
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer = mod.qconfig.weight()
        else:
            from ember.ao.quantization.qconfig import default_dynamic_qconfig
            weight_observer = default_dynamic_qconfig.weight()
        dtype = weight_observer.dtype
        if dtype not in (ember.qint8, ember.float16):
            raise AssertionError("The only supported dtypes for dynamic quantized linear are "
                                 f"qint8 and float16 got: {dtype}")
        weight_observer(mod.weight)
        if dtype is ember.qint8:
            qweight = nnq_linear._quantize_weight(mod.weight.float(), weight_observer)
        else:
            qweight = mod.weight.float()
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear

    @classmethod
    def from_reference(cls, ref_qlinear):
        """A dynamic quantized Linear from a reference quantized Linear."""
        qlinear = cls(ref_qlinear.in_features, ref_qlinear.out_features,
                      dtype=ref_qlinear.weight_dtype)
        qweight = ref_qlinear.get_quantized_weight()
        qlinear.set_weight_bias(qweight, ref_qlinear.bias)
        return qlinear


def _float_modules():
    types = [nn.Linear, nnq_linear.NonDynamicallyQuantizableLinear]
    try:
        from ember.ao.nn.intrinsic.modules.fused import LinearReLU
        types.append(LinearReLU)
    except ImportError:     # pragma: no cover
        pass
    try:
        from ember.ao.nn.qat.modules.linear import Linear as QATLinear
        types.append(QATLinear)
    except ImportError:
        pass
    return tuple(types)
