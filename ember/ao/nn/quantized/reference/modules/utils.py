"""What reference quantized modules share: the weight's quantization parameters as buffers
(``weight_scale``, ``weight_zero_point``, ``weight_axis``) and the weight quantized then
dequantized with them (torch.ao.nn.quantized.reference.modules.utils)."""
from __future__ import annotations

import ember

__all__ = ["ReferenceQuantizedModule"]

class ReferenceQuantizedModule:
    """Mixin: ``_init_weight_qparams(weight_qparams)``, ``get_weight()`` (float, quantized
    and dequantized), ``get_quantized_weight()``."""

    def _init_weight_qparams(self, weight_qparams, device=None):
        if weight_qparams is None:
            weight_qparams = {"qscheme": ember.per_tensor_affine, "dtype": ember.quint8,
                              "scale": 1.0, "zero_point": 0}
        self.weight_qscheme = weight_qparams["qscheme"]
        self.weight_dtype = weight_qparams["dtype"]
        allowed = (None, ember.per_tensor_affine, ember.per_channel_affine,
                   ember.per_channel_affine_float_qparams)
        if self.weight_qscheme not in allowed:
            raise AssertionError(f"qscheme: {self.weight_qscheme} is not support in reference "
                                 f"quantized {self._get_name()}")
        self.is_decomposed = weight_qparams.get("is_decomposed", False)
        # as torch: the buffers exist for every scheme (defaults 1.0 / 0 without one);
        # tensors keep their dtype, numbers become float32 scales and int32 zero points
        scale = weight_qparams.get("scale", 1.0) if self.weight_qscheme is not None else 1.0
        zero_point = weight_qparams.get("zero_point", 0) \
            if self.weight_qscheme is not None else 0
        scale = scale.detach().clone() if isinstance(scale, ember.Tensor) \
            else ember.tensor(scale, dtype=ember.float32)
        zp_dtype = ember.float32 if self.weight_qscheme is \
            ember.per_channel_affine_float_qparams else ember.int32
        zero_point = zero_point.detach().clone() if isinstance(
            zero_point, ember.Tensor) else ember.tensor(zero_point, dtype=zp_dtype)
        if not getattr(self, "_qparams_hooked", False):
            self._register_state_dict_hook(_save_weight_scheme)
            self._register_load_state_dict_pre_hook(_load_weight_scheme, with_module=True)
            self._qparams_hooked = True
        self.register_buffer("weight_scale", scale)
        self.register_buffer("weight_zero_point", zero_point)
        per_channel = self.weight_qscheme in (ember.per_channel_affine,
                                              ember.per_channel_affine_float_qparams)
        axis = weight_qparams.get("axis", 0) if per_channel else 0
        axis = int(axis) if axis is not None else 0
        self.register_buffer("weight_axis", ember.tensor(axis, dtype=ember.int32))
        self.weight_axis_int = axis
        self.weight_quant_min = weight_qparams.get("quant_min", None)
        self.weight_quant_max = weight_qparams.get("quant_max", None)

    def _quantized(self):
        w = self.weight
        if self.weight_qscheme is ember.per_tensor_affine:
            return ember.quantize_per_tensor(w, float(self.weight_scale),
                                             int(self.weight_zero_point), self.weight_dtype)
        return ember.quantize_per_channel(w, self.weight_scale, self.weight_zero_point,
                                          int(self.weight_axis), self.weight_dtype)

    def get_weight(self):
        """The float weight after quantize -> dequantize with the weight's qparams."""
        if self.weight_qscheme is None or self.weight_dtype is ember.float32:
            return self.weight
        return self._quantized().dequantize()

    def get_quantized_weight(self):
        return self._quantized()


def _save_weight_scheme(module, state_dict, prefix, local_metadata):
    """torch's state dicts of reference modules also hold the weight's scheme and dtype."""
    state_dict[prefix + "weight_qscheme"] = module.weight_qscheme
    state_dict[prefix + "weight_dtype"] = module.weight_dtype


def _load_weight_scheme(module, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
    """Scheme and dtype back from the state dict; the qparams buffers take the saved
    shapes and dtypes (per tensor <-> per channel)."""
    for name in ("weight_qscheme", "weight_dtype"):
        if prefix + name in state_dict:
            setattr(module, name, state_dict.pop(prefix + name))
    for name in ("weight_scale", "weight_zero_point", "weight_axis"):
        value = state_dict.get(prefix + name)
        if isinstance(value, ember.Tensor):
            setattr(module, name, ember.empty(value.shape, dtype=value.dtype))
