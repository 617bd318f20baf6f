"""BackendConfig: which op patterns a backend quantizes, with which dtypes, and how their
outputs are observed (torch.ao.quantization.backend_config's classes).

A pattern is a module class, a function, a method name (str), or a tuple of them in
execution order (``(nn.Conv2d, nn.ReLU)``: a conv followed by a relu). Internally the
matcher uses the reversed form (last op first), as ``_pattern_complex_format``."""
from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["BackendConfig", "BackendPatternConfig", "DTypeConfig", "DTypeWithConstraints",
           "ObservationType"]


class ObservationType(enum.Enum):
    """How a pattern's output is observed relative to its input."""
    OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT = 0
    OUTPUT_SHARE_OBSERVER_WITH_INPUT = 1
    INPUT_OUTPUT_NOT_OBSERVED = 2


@dataclass
class DTypeWithConstraints:
    """A dtype with the quantization-range and scale limits a backend imposes."""
    dtype: object = None
    quant_min_lower_bound: object = None
    quant_max_upper_bound: object = None
    scale_min_lower_bound: object = None
    scale_max_upper_bound: object = None
    scale_exact_match: object = None
    zero_point_exact_match: object = None


def _with_constraints(value):
    return value if isinstance(value, DTypeWithConstraints) else DTypeWithConstraints(value)


class DTypeConfig:
    """The dtypes one pattern supports: input/output activations, weight, bias, and whether
    quantization is dynamic."""

    def __init__(self, input_dtype=None, output_dtype=None, weight_dtype=None,
                 bias_dtype=None, is_dynamic=None):
        self.input_dtype_with_constraints = _with_constraints(input_dtype)
        self.output_dtype_with_constraints = _with_constraints(output_dtype)
        self.weight_dtype_with_constraints = _with_constraints(weight_dtype)
        self.bias_dtype = bias_dtype
        self.is_dynamic = is_dynamic

    input_dtype = property(lambda self: self.input_dtype_with_constraints.dtype)
    output_dtype = property(lambda self: self.output_dtype_with_constraints.dtype)
    weight_dtype = property(lambda self: self.weight_dtype_with_constraints.dtype)

    def __repr__(self):
        return (f"DTypeConfig(input_dtype_with_constraints={self.input_dtype_with_constraints}, "
                f"output_dtype_with_constraints={self.output_dtype_with_constraints}, "
                f"weight_dtype_with_constraints={self.weight_dtype_with_constraints}, "
                f"bias_dtype={self.bias_dtype}, is_dynamic={self.is_dynamic})")

    def __eq__(self, other):
        return isinstance(other, DTypeConfig) and vars(self) == vars(other)

    __hash__ = object.__hash__

    @classmethod
    def from_dict(cls, d):
        return cls(d.get("input_dtype"), d.get("output_dtype"), d.get("weight_dtype"),
                   d.get("bias_dtype"), d.get("is_dynamic"))

    def to_dict(self):
        out = {}
        for key, value in (("input_dtype", self.input_dtype_with_constraints),
                           ("output_dtype", self.output_dtype_with_constraints),
                           ("weight_dtype", self.weight_dtype_with_constraints)):
            if value.dtype is not None:
                out[key] = value
        if self.bias_dtype is not None:
            out["bias_dtype"] = self.bias_dtype
        if self.is_dynamic is not None:
            out["is_dynamic"] = self.is_dynamic
        return out


def _reversed_nested(pattern):
    """(a, b, c) in execution order -> (c, (b, a)): the matcher's format."""
    if not isinstance(pattern, tuple):
        return pattern
    out = pattern[0]
    for op in pattern[1:]:
        out = (op, out)
    return out


class BackendPatternConfig:
    """How one pattern is quantized; every setter returns ``self`` so calls chain."""

    def __init__(self, pattern=None):
        self.pattern = pattern
        self.observation_type = ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT
        self.dtype_configs = []
        self.root_module = None
        self.qat_module = None
        self.reference_quantized_module = None
        self.fused_module = None
        self.fuser_method = None
        self._root_node_getter = None
        self._extra_inputs_getter = None
        self._num_tensor_args_to_observation_type = {}
        self._input_type_to_index = {}
        self._pattern_complex_format = None

    def set_pattern(self, pattern):
        self.pattern = pattern
        return self

    def _set_pattern_complex_format(self, pattern):
        self._pattern_complex_format = pattern
        return self

    def set_observation_type(self, observation_type):
        self.observation_type = observation_type
        return self

    def add_dtype_config(self, dtype_config):
        self.dtype_configs.append(dtype_config)
        return self

    def set_dtype_configs(self, dtype_configs):
        self.dtype_configs = list(dtype_configs)
        return self

    def set_root_module(self, root_module):
        self.root_module = root_module
        return self

    def set_qat_module(self, qat_module):
        self.qat_module = qat_module
        return self

    def set_reference_quantized_module(self, reference_quantized_module):
        self.reference_quantized_module = reference_quantized_module
        return self

    def set_fused_module(self, fused_module):
        self.fused_module = fused_module
        return self

    def set_fuser_method(self, fuser_method):
        self.fuser_method = fuser_method
        return self

    def _set_root_node_getter(self, getter):
        self._root_node_getter = getter
        return self

    def _set_extra_inputs_getter(self, getter):
        self._extra_inputs_getter = getter
        return self

    def _set_num_tensor_args_to_observation_type(self, mapping):
        self._num_tensor_args_to_observation_type = mapping
        return self

    def _set_input_type_to_index(self, input_type_to_index):
        self._input_type_to_index = input_type_to_index
        return self

    @property
    def complex_format(self):
        """The pattern in the matcher's reversed nested form."""
        if self._pattern_complex_format is not None:
            return self._pattern_complex_format
        return _reversed_nested(self.pattern)

    _DICT_KEYS = (("root_module", "root_module"), ("qat_module", "qat_module"),
                  ("reference_quantized_module_for_root", "reference_quantized_module"),
                  ("fused_module", "fused_module"), ("fuser_method", "fuser_method"))

    def to_dict(self):
        """torch's dictionary form (``reference_quantized_module_for_root``...)."""
        out = {"observation_type": self.observation_type,
               "dtype_configs": [d.to_dict() for d in self.dtype_configs]}
        if self.pattern is not None:
            out["pattern"] = self.pattern
        for key, attr in self._DICT_KEYS:
            if getattr(self, attr) is not None:
                out[key] = getattr(self, attr)
        if self._num_tensor_args_to_observation_type:
            out["num_tensor_args_to_observation_type"] = \
                self._num_tensor_args_to_observation_type
        if self._input_type_to_index:
            out["input_type_to_index"] = self._input_type_to_index
        return out

    @classmethod
    def from_dict(cls, d):
        conf = cls(d.get("pattern"))
        conf.set_observation_type(d.get("observation_type",
                                        ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT))
        for dc in d.get("dtype_configs", []):
            conf.add_dtype_config(dc if isinstance(dc, DTypeConfig) else DTypeConfig.from_dict(dc))
        for key, attr in cls._DICT_KEYS:
            setattr(conf, attr, d.get(key))
        conf._input_type_to_index = d.get("input_type_to_index", {})
        conf._num_tensor_args_to_observation_type = \
            d.get("num_tensor_args_to_observation_type", {})
        return conf

    def __repr__(self):
        shown = {k: v for k, v in vars(self).items()
                 if not k.startswith("_") and v is not None and v != [] and v != {}}
        return f"BackendPatternConfig({shown})"


class BackendConfig:
    """A named set of :class:`BackendPatternConfig`; a later config for the same pattern
    replaces the earlier one."""

    def __init__(self, name=""):
        self.name = name
        self._pattern_complex_format_to_config = {}

    def set_name(self, name):
        self.name = name
        return self

    def set_backend_pattern_config(self, config):
        self._pattern_complex_format_to_config[config.complex_format] = config
        return self

    def set_backend_pattern_configs(self, configs):
        for conf in configs:
            self.set_backend_pattern_config(conf)
        return self

    @property
    def configs(self):
        return list(self._pattern_complex_format_to_config.values())

    def to_dict(self):
        return {"name": self.name, "configs": [c.to_dict() for c in self.configs]}

    @classmethod
    def from_dict(cls, d):
        conf = cls(d.get("name", ""))
        for c in d.get("configs", []):
            conf.set_backend_pattern_config(
                c if isinstance(c, BackendPatternConfig) else BackendPatternConfig.from_dict(c))
        return conf

    def __repr__(self):
        return f"BackendConfig({vars(self)})"
