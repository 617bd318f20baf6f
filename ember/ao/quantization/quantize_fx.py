"""FX graph mode quantization (torch.ao.quantization.quantize_fx): trace, fuse, insert
observers (prepare_fx / prepare_qat_fx), then turn them into quantize/dequantize nodes and
quantized ops (convert_fx, convert_to_reference_fx)."""
from __future__ import annotations

from ember.fx import GraphModule
from ember.ao.quantization.fx.tracer import QuantizationTracer
from ember.ao.quantization.fx.fuse import fuse
from ember.ao.quantization.fx.prepare import prepare
from ember.ao.quantization.fx.convert import convert
from ember.ao.quantization.utils import _deprecated_flow

__all__ = ["fuse_fx", "prepare_fx", "prepare_qat_fx", "convert_fx",
           "convert_to_reference_fx"]


def _backend_config(backend_config):
    if backend_config is None:
        from ember.ao.quantization.backend_config import get_native_backend_config
        return get_native_backend_config()
    if isinstance(backend_config, dict):
        from ember.ao.quantization.backend_config import BackendConfig
        return BackendConfig.from_dict(backend_config)
    return backend_config


def _qconfig_mapping(qconfig_mapping):
    if qconfig_mapping is None or isinstance(qconfig_mapping, dict):
        from ember.ao.quantization.qconfig_mapping import QConfigMapping
        return QConfigMapping() if qconfig_mapping is None else \
            QConfigMapping.from_dict(qconfig_mapping)
    return qconfig_mapping


def _config(config, cls):
    from ember.ao.quantization.fx import custom_config
    cls = getattr(custom_config, cls)
    if config is None:
        return cls()
    if isinstance(config, dict):
        return cls.from_dict(config)
    return config


def _trace(model, custom_config):
    if isinstance(model, GraphModule):
        raise NotImplementedError("quantize_fx: the model is already a GraphModule; pass "
                                  "the original nn.Module (re-tracing is not supported)")
    for key in ("standalone_module_names", "standalone_module_classes",
                "float_to_observed_mapping"):
        if getattr(custom_config, key, None):
            raise NotImplementedError(f"prepare_fx: prepare_custom_config {key} (standalone "
                                      f"and custom modules) is not supported")
    tracer = QuantizationTracer(getattr(custom_config, "non_traceable_module_names", ()),
                                getattr(custom_config, "non_traceable_module_classes", ()))
    graph = tracer.trace(model)
    gm = GraphModule(model, graph, "GraphModule")
    _preserve(model, gm, custom_config)
    return gm, tracer.node_name_to_scope


def _preserve(source, target, custom_config):
    for name in getattr(custom_config, "preserved_attributes", ()):
        if hasattr(source, name):
            setattr(target, name, getattr(source, name))


def fuse_fx(model, fuse_custom_config=None, backend_config=None):
    """Trace ``model`` and fuse conv-bn(-relu), linear-relu... into fused modules."""
    config = _config(fuse_custom_config, "FuseCustomConfig")
    gm, _ = _trace(model, config)
    fused = fuse(gm, False, _backend_config(backend_config))
    _preserve(model, fused, config)
    return fused


def _prepare_fx(model, qconfig_mapping, is_qat, example_inputs, prepare_custom_config,
                backend_config):
    backend_config = _backend_config(backend_config)
    config = _config(prepare_custom_config, "PrepareCustomConfig")
    gm, scope = _trace(model, config)
    fuse(gm, is_qat, backend_config)
    prepared = prepare(gm, _qconfig_mapping(qconfig_mapping), is_qat, scope, backend_config,
                       config.input_quantized_indexes, config.output_quantized_indexes)
    _preserve(model, prepared, config)
    return prepared


@_deprecated_flow
def prepare_fx(model, qconfig_mapping, example_inputs, prepare_custom_config=None,
               _equalization_config=None, backend_config=None):
    """A GraphModule of ``model`` (eval mode) with observers where ``qconfig_mapping`` and
    the backend config ask for quantization; run calibration data through it, then
    :func:`convert_fx`."""
    if _equalization_config is not None:
        raise NotImplementedError("prepare_fx: _equalization_config is not supported")
    return _prepare_fx(model, qconfig_mapping, False, example_inputs, prepare_custom_config,
                       backend_config)


@_deprecated_flow
def prepare_qat_fx(model, qconfig_mapping, example_inputs, prepare_custom_config=None,
                   backend_config=None):
    """As :func:`prepare_fx` for quantization-aware training: modules become their QAT
    versions and the qconfigs' fake-quantize modules are inserted."""
    return _prepare_fx(model, qconfig_mapping, True, example_inputs, prepare_custom_config,
                       backend_config)


@_deprecated_flow
def convert_fx(graph_module, convert_custom_config=None, _remove_qconfig=True,
               qconfig_mapping=None, backend_config=None, keep_original_weights=False):
    """The quantized model: observers become quantize/dequantize, patterns become
    quantized modules and ``quantized::`` ops."""
    return _convert(graph_module, convert_custom_config, False, _remove_qconfig,
                    qconfig_mapping)


@_deprecated_flow
def convert_to_reference_fx(graph_module, convert_custom_config=None, _remove_qconfig=True,
                            qconfig_mapping=None, backend_config=None):
    """The reference quantized model: every observer becomes quantize -> dequantize around
    the float ops."""
    return _convert(graph_module, convert_custom_config, True, _remove_qconfig,
                    qconfig_mapping)


def _convert(graph_module, convert_custom_config, is_reference, remove_qconfig=True,
             qconfig_mapping=None):
    if not isinstance(graph_module, GraphModule):
        raise ValueError(f"input model must be a GraphModule, Got type:{type(graph_module)} "
                         f"Please make sure to follow the tutorials.")
    config = _config(convert_custom_config, "ConvertCustomConfig")
    if config.observed_to_quantized_mapping:
        raise NotImplementedError("convert_fx: custom module classes are not supported")
    kept = {name: getattr(graph_module, name) for name in config.preserved_attributes
            if hasattr(graph_module, name)}
    if isinstance(qconfig_mapping, dict):
        qconfig_mapping = _qconfig_mapping(qconfig_mapping)
    converted = convert(graph_module, is_reference=is_reference, remove_qconfig=remove_qconfig,
                        qconfig_mapping=qconfig_mapping)
    for name, value in kept.items():
        setattr(converted, name, value)
    return converted
