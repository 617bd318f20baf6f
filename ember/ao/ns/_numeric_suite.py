"""The eager-mode Numeric Suite (torch.ao.ns._numeric_suite): compare a float model with its
quantized version weight by weight, output by output, or by running float modules as
shadows of quantized ones on the same (dequantized) inputs.

Loggers keep what they see in ``stats``; :func:`get_logger_dict` gathers them as
``{"<module path>.stats": stats}``."""
from __future__ import annotations

import ember
import ember.nn as nn

__all__ = ["Logger", "OutputLogger", "ShadowLogger", "Shadow", "compare_weights",
           "get_logger_dict", "prepare_model_with_stubs", "compare_model_stub",
           "get_matching_activations", "prepare_model_outputs", "compare_model_outputs",
           "get_default_compare_output_module_list", "NON_LEAF_MODULE_TO_ADD_OBSERVER_ALLOW_LIST"]

_PACKED = "._packed_params._packed_params"


def _nnq():
    import ember.ao.nn.quantized as nnq
    return nnq


def _non_leaf_allow_list():
    out = {nn.LSTM}
    for path in ("ember.ao.nn.quantized:Linear", "ember.ao.nn.quantized.dynamic:Linear",
                 "ember.ao.nn.quantized.dynamic:LSTM"):
        cls = _lookup(path)
        if cls is not None:
            out.add(cls)
    return out


def _lookup(path):
    import importlib
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


NON_LEAF_MODULE_TO_ADD_OBSERVER_ALLOW_LIST = _non_leaf_allow_list()


def compare_weights(float_dict, quantized_dict):
    """``{key: {"float": w, "quantized": qw}}`` for each weight of ``quantized_dict`` (a
    state dict) that ``float_dict`` has: ``<m>.weight`` pairs with itself, a packed linear
    ``<m>._packed_params._packed_params`` with ``<m>.weight``."""
    weight_dict = {}
    for key, value in quantized_dict.items():
        if key.endswith(".weight") and key in float_dict:
            weight_dict[key] = {"float": float_dict[key], "quantized": value}
        elif key.endswith(_PACKED):
            float_key = key[:-len(_PACKED)] + ".weight"
            if float_key in float_dict:
                weight_dict[key] = {"float": float_dict[float_key], "quantized": value[0]}
    return weight_dict


def _get_logger_dict_helper(mod, target_dict, prefix=""):
    def with_dot(p):
        return p if p == "" else p + "."
    for _, child in mod.named_children():
        if isinstance(child, Logger):
            target_dict[with_dot(prefix) + "stats"] = child.stats
            break
    for name, child in mod.named_children():
        _get_logger_dict_helper(child, target_dict, with_dot(prefix) + name if prefix else name)


def get_logger_dict(mod, prefix=""):
    """``{"<path>.stats": logger.stats}`` for every module holding a Logger."""
    target_dict = {}
    _get_logger_dict_helper(mod, target_dict, prefix)
    return target_dict


class Logger(nn.Module):
    """Base of the loggers: ``stats`` (a dict) and the ``dtype`` they log for."""

    def __init__(self):
        super().__init__()
        self.stats = {}
        self.dtype = ember.quint8

    def forward(self, x):
        pass


class ShadowLogger(Logger):
    """Logs a quantized module's output and its float shadow's (``stats["quantized"]``,
    ``stats["float"]``). As torch's, a value whose len() is above 1 is logged as its first
    element (a tuple's first output — and a batch's first sample)."""

    def __init__(self):
        super().__init__()
        self.stats["float"] = []
        self.stats["quantized"] = []

    def forward(self, x, y):
        if len(x) > 1:
            x = x[0]
        if len(y) > 1:
            y = y[0]
        self.stats["quantized"].append(x.detach())
        self.stats["float"].append(y.detach())


class OutputLogger(Logger):
    """Logs every output it is given, as is, in ``stats["tensor_val"]``; returns it."""

    def __init__(self):
        super().__init__()
        self.stats["tensor_val"] = []

    def forward(self, x):
        self.stats["tensor_val"].append(x)
        return x


def _convert_tuple_to_list(t):
    return [_convert_tuple_to_list(x) for x in t] if type(t) is tuple else t


def _dequantize_tensor_list(t):
    if type(t) is list:
        return [_dequantize_tensor_list(x) for x in t]
    return t.dequantize() if isinstance(t, ember.Tensor) and t.is_quantized else t


class Shadow(nn.Module):
    """Runs ``q_module`` (returned) and, on dequantized inputs, its float version
    ``float_module``; a ``logger_cls()`` logs both outputs. FloatFunctional's ``add``,
    ``add_scalar``, ``mul``, ``mul_scalar``, ``cat``, ``add_relu`` are shadowed too."""

    def __init__(self, q_module, float_module, logger_cls):
        super().__init__()
        self.orig_module = q_module
        self.shadow_module = float_module
        self.dequant = _nnq().DeQuantize()
        self.logger = logger_cls()

    def forward(self, *x):
        xl = _convert_tuple_to_list(x)
        output = self.orig_module(*xl)
        shadow_output = self.shadow_module(*_dequantize_tensor_list(xl))
        self.logger(output, shadow_output)
        return output

    def _binary(self, name, x, y, dequantize_y=True):
        output = getattr(self.orig_module, name)(x, y)
        x = x.dequantize()
        if dequantize_y:
            y = y.dequantize()
        shadow_output = getattr(self.shadow_module, name)(x, y)
        self.logger(output, shadow_output)
        return output

    def add(self, x, y):
        return self._binary("add", x, y)

    def add_scalar(self, x, y):
        return self._binary("add_scalar", x, y, dequantize_y=False)

    def mul(self, x, y):
        return self._binary("mul", x, y)

    def mul_scalar(self, x, y):
        return self._binary("mul_scalar", x, y, dequantize_y=False)

    def add_relu(self, x, y):
        return self._binary("add_relu", x, y)

    def cat(self, x, dim=0):
        output = self.orig_module.cat(x, dim)
        shadow_output = self.shadow_module.cat([t.dequantize() for t in x], dim)
        self.logger(output, shadow_output)
        return output


def _is_identical_module_type(mod1, mod2):
    list1 = [type(m) for m in mod1.modules()]
    list2 = [type(m) for m in mod2.modules()]
    return list1 == list2


def prepare_model_with_stubs(float_module, q_module, module_swap_list, logger_cls):
    """Wrap each child of ``q_module`` whose float counterpart's type is in
    ``module_swap_list`` (and differs from it) in a :class:`Shadow`, recursively."""
    float_children = dict(float_module.named_children())
    reassign = {}
    for name, mod in q_module.named_children():
        if name not in float_children:
            continue
        float_mod = float_children[name]
        if type(float_mod) not in module_swap_list:
            prepare_model_with_stubs(float_mod, mod, module_swap_list, logger_cls)
        if type(float_mod) in module_swap_list and not _is_identical_module_type(mod, float_mod):
            reassign[name] = Shadow(mod, float_mod, logger_cls)
    for name, mod in reassign.items():
        setattr(q_module, name, mod)


def compare_model_stub(float_model, q_model, module_swap_list, *data,
                       logger_cls=ShadowLogger):
    """Shadow ``q_model``'s modules of the listed float types, run ``data`` through it and
    return the loggers' stats (``{"conv.stats": {"float": [...], "quantized": [...]}}``)."""
    prepare_model_with_stubs(float_model, q_model, module_swap_list, logger_cls)
    q_model(*data)
    return get_logger_dict(q_model)


def get_matching_activations(float_module, q_module):
    """``{key: {"float": [...], "quantized": [...]}}`` for loggers present in both."""
    float_dict = get_logger_dict(float_module)
    quantized_dict = get_logger_dict(q_module)
    act_dict = {}
    for key in quantized_dict:
        if len(quantized_dict[key]["tensor_val"]) == 0:
            continue
        if key in float_dict:
            act_dict[key] = {"float": float_dict[key]["tensor_val"],
                             "quantized": quantized_dict[key]["tensor_val"]}
    return act_dict


def get_default_compare_output_module_list():
    """The module types whose outputs :func:`compare_model_outputs` logs by default: the
    float, QAT, quantized and dynamic modules of the default mappings, and the stubs."""
    from ember.ao.quantization import quantization_mappings as qm
    out = {nn.Sequential}         # torch's list carries the qconfig propagation's Sequential
    for getter in ("get_default_static_quant_module_mappings",
                   "get_default_qat_module_mappings",
                   "get_default_dynamic_quant_module_mappings"):
        mapping = getattr(qm, getter, lambda: {})()
        out |= set(mapping.keys()) | set(mapping.values())
    for path in ("ember.ao.quantization.stubs:QuantStub",
                 "ember.ao.quantization.stubs:DeQuantStub",
                 "ember.ao.nn.quantized:Quantize", "ember.ao.nn.quantized:DeQuantize"):
        cls = _lookup(path)
        if cls is not None:
            out.add(cls)
    return out


def _logger_hook(module, inputs, output):
    return module.activation_post_process(output)


def prepare_model_outputs(float_module, q_module, logger_cls=OutputLogger, allow_list=None):
    """Attach a ``logger_cls()`` as ``activation_post_process`` (called on the output by a
    forward hook) to every module of both models whose type is in ``allow_list`` — leaves,
    and the non-leaf quantized Linear/LSTM — except DeQuantStub."""
    if allow_list is None:
        allow_list = get_default_compare_output_module_list()
    non_leaf = NON_LEAF_MODULE_TO_ADD_OBSERVER_ALLOW_LIST
    dequant_stub = _lookup("ember.ao.quantization.stubs:DeQuantStub")
    for model in (float_module, q_module):
        for _, mod in list(model.named_modules()):
            kind = type(mod)
            if kind not in allow_list or (dequant_stub is not None and kind is dequant_stub):
                continue
            children = [c for n, c in mod.named_children() if n != "activation_post_process"]
            if children and kind not in non_leaf:
                continue
            if isinstance(getattr(mod, "activation_post_process", None), Logger):
                continue
            mod.activation_post_process = logger_cls()
            mod.register_forward_hook(_logger_hook)


def compare_model_outputs(float_model, q_model, *data, logger_cls=OutputLogger,
                          allow_list=None):
    """Log the outputs of matching modules of both models on ``data``;
    ``{"conv.stats": {"float": [...], "quantized": [...]}}``."""
    if allow_list is None:
        allow_list = get_default_compare_output_module_list()
    prepare_model_outputs(float_model, q_model, logger_cls, allow_list)
    float_model(*data)
    q_model(*data)
    return get_matching_activations(float_model, q_model)
