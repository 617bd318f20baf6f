"""Custom configs of FX graph mode quantization (torch.ao.quantization.fx.custom_config):
modules left untraced, graph inputs/outputs that are already/stay quantized, attributes kept
on the produced GraphModule. Setters return ``self``; ``to_dict``/``from_dict`` use torch's
dictionary keys."""
from __future__ import annotations

__all__ = ["PrepareCustomConfig", "ConvertCustomConfig", "FuseCustomConfig",
           "StandaloneModuleConfigEntry"]


class StandaloneModuleConfigEntry:
    def __init__(self, qconfig_mapping, example_inputs, prepare_custom_config,
                 backend_config):
        self.qconfig_mapping = qconfig_mapping
        self.example_inputs = example_inputs
        self.prepare_custom_config = prepare_custom_config
        self.backend_config = backend_config


def _repr(obj):
    shown = {k: v for k, v in vars(obj).items() if v}
    return f"{type(obj).__name__}({shown})"


class PrepareCustomConfig:
    def __init__(self):
        self.standalone_module_names = {}
        self.standalone_module_classes = {}
        self.float_to_observed_mapping = {}
        self.non_traceable_module_names = []
        self.non_traceable_module_classes = []
        self.input_quantized_indexes = []
        self.output_quantized_indexes = []
        self.preserved_attributes = []

    __repr__ = _repr

    def set_standalone_module_name(self, module_name, qconfig_mapping, example_inputs,
                                   prepare_custom_config, backend_config):
        self.standalone_module_names[module_name] = StandaloneModuleConfigEntry(
            qconfig_mapping, example_inputs, prepare_custom_config, backend_config)
        return self

    def set_standalone_module_class(self, module_class, qconfig_mapping, example_inputs,
                                    prepare_custom_config, backend_config):
        self.standalone_module_classes[module_class] = StandaloneModuleConfigEntry(
            qconfig_mapping, example_inputs, prepare_custom_config, backend_config)
        return self

    def set_float_to_observed_mapping(self, float_class, observed_class, quant_type=None):
        from ember.ao.quantization.quant_type import QuantType
        quant_type = QuantType.STATIC if quant_type is None else quant_type
        self.float_to_observed_mapping.setdefault(quant_type, {})[float_class] = \
            observed_class
        return self

    def set_non_traceable_module_names(self, module_names):
        self.non_traceable_module_names = list(module_names)
        return self

    def set_non_traceable_module_classes(self, module_classes):
        self.non_traceable_module_classes = list(module_classes)
        return self

    def set_input_quantized_indexes(self, indexes):
        self.input_quantized_indexes = list(indexes)
        return self

    def set_output_quantized_indexes(self, indexes):
        self.output_quantized_indexes = list(indexes)
        return self

    def set_preserved_attributes(self, attributes):
        self.preserved_attributes = list(attributes)
        return self

    _KEYS = (("non_traceable_module_name", "non_traceable_module_names"),
             ("non_traceable_module_class", "non_traceable_module_classes"),
             ("input_quantized_idxs", "input_quantized_indexes"),
             ("output_quantized_idxs", "output_quantized_indexes"),
             ("preserved_attributes", "preserved_attributes"))

    @classmethod
    def from_dict(cls, d):
        conf = cls()
        for key, attr in cls._KEYS:
            if key in d:
                setattr(conf, attr, list(d[key]))
        for key in ("standalone_module_name", "standalone_module_class",
                    "float_to_observed_custom_module_class"):
            if d.get(key):
                raise NotImplementedError(f"PrepareCustomConfig: {key} is not supported")
        return conf

    def to_dict(self):
        return {key: list(getattr(self, attr)) for key, attr in self._KEYS
                if getattr(self, attr)}


class ConvertCustomConfig:
    def __init__(self):
        self.observed_to_quantized_mapping = {}
        self.preserved_attributes = []

    __repr__ = _repr

    def set_observed_to_quantized_mapping(self, observed_class, quantized_class,
                                          quant_type=None):
        from ember.ao.quantization.quant_type import QuantType
        quant_type = QuantType.STATIC if quant_type is None else quant_type
        self.observed_to_quantized_mapping.setdefault(quant_type, {})[observed_class] = \
            quantized_class
        return self

    def set_preserved_attributes(self, attributes):
        self.preserved_attributes = list(attributes)
        return self

    @classmethod
    def from_dict(cls, d):
        if d.get("observed_to_quantized_custom_module_class"):
            raise NotImplementedError("ConvertCustomConfig: custom module classes are not "
                                      "supported")
        return cls().set_preserved_attributes(d.get("preserved_attributes", []))

    def to_dict(self):
        return {"preserved_attributes": list(self.preserved_attributes)} \
            if self.preserved_attributes else {}


class FuseCustomConfig:
    def __init__(self):
        self.preserved_attributes = []

    __repr__ = _repr

    def set_preserved_attributes(self, attributes):
        self.preserved_attributes = list(attributes)
        return self

    @classmethod
    def from_dict(cls, d):
        return cls().set_preserved_attributes(d.get("preserved_attributes", []))

    def to_dict(self):
        return {"preserved_attributes": list(self.preserved_attributes)} \
            if self.preserved_attributes else {}
