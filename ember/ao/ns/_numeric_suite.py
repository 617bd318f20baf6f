"""The eager-mode Numeric Suite (torch.ao.ns._numeric_suite): compare a float model with its
quantized version weight by weight, output by output, or by running float modules as
shadows of quantized ones on the same (dequantized) inputs.

Loggers keep what they see in ``stats``; :func:`get_logger_dict` gathers them as
``{"<module path>.stats": stats}``."""
from __future__ import annotations

import importlib

import ember
import ember.nn as nn

__all__ = ["Logger", "OutputLogger", "ShadowLogger", "Shadow", "compare_weights",
           "get_logger_dict", "prepare_model_with_stubs", "compare_model_stub",
           "get_matching_activations", "prepare_model_outputs", "compare_model_outputs",
           "get_default_compare_output_module_list", "NON_LEAF_MODULE_TO_ADD_OBSERVER_ALLOW_LIST"]

_PACKED_SUFFIX = "._packed_params._packed_params"


def _find_class(spec):
    """``"pkg.mod:Name"`` -> the class, or None when that package lacks it."""
    mod_name, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError):
        return None


def _classes(*specs):
    return {c for c in map(_find_class, specs) if c is not None}


NON_LEAF_MODULE_TO_ADD_OBSERVER_ALLOW_LIST = {nn.LSTM} | _classes(
    "ember.ao.nn.quantized:Linear", "ember.ao.nn.quantized.dynamic:Linear",
    "ember.ao.nn.quantized.dynamic:LSTM")


def compare_weights(float_dict, quantized_dict):
    """``{key: {"float": w, "quantized": qw}}`` for each weight of ``quantized_dict`` (a
    state dict) that ``float_dict`` has: ``<m>.weight`` pairs with itself, a packed linear
    ``<m>._packed_params._packed_params`` (a ``(weight, bias)`` pair) with ``<m>.weight``;
    a fused float model's ``<m>.0.weight`` (ConvReLU2d, LinearReLU...) stands for
    ``<m>.weight``."""
    pairs = {}
    for key, q_value in quantized_dict.items():
        if key.endswith(_PACKED_SUFFIX):
            src, q_value = key[:-len(_PACKED_SUFFIX)] + ".weight", q_value[0]
        elif key.endswith(".weight"):
            src = key
        else:
            continue
        fused = src[:-len("weight")] + "0.weight"
        if src in float_dict:
            pairs[key] = {"float": float_dict[src], "quantized": q_value}
        elif fused in float_dict:
            pairs[key] = {"float": float_dict[fused], "quantized": q_value}
    return pairs


def get_logger_dict(mod, prefix=""):
    """``{"<path>.stats": logger.stats}`` for every module holding a Logger child (the
    first one, when several)."""
    found = {}

    def visit(module, path):
        holder = path + "." if path else ""
        logger = next((c for c in module.children() if isinstance(c, Logger)), None)
        if logger is not None:
            found[holder + "stats"] = logger.stats
        for name, child in module.named_children():
            visit(child, holder + name)

    visit(mod, prefix)
    return found


class Logger(nn.Module):
    """Base of the loggers: ``stats`` (a dict) and the ``dtype`` they log for."""

    def __init__(self):
        super().__init__()
        self.stats = {}
        self.dtype = ember.quint8

    def forward(self, x):
        return None


class ShadowLogger(Logger):
    """Logs a quantized module's output and its float shadow's (``stats["quantized"]``,
    ``stats["float"]``). As torch's, a value whose len() is above 1 is logged as its first
    element (a tuple's first output — and a batch's first sample)."""

    def __init__(self):
        super().__init__()
        self.stats.update(float=[], quantized=[])

    def forward(self, x, y):
        for key, value in (("quantized", x), ("float", y)):
            self.stats[key].append((value[0] if len(value) > 1 else value).detach())


class OutputLogger(Logger):
    """Logs every output it is given, as is, in ``stats["tensor_val"]``; returns it."""

    def __init__(self):
        super().__init__()
        self.stats["tensor_val"] = []

    def forward(self, x):
        self.stats["tensor_val"].append(x)
        return x


def _tuples_as_lists(obj):
    return [_tuples_as_lists(o) for o in obj] if type(obj) is tuple else obj


def _as_float(obj):
    """Dequantize quantized tensors, through nested lists."""
    if type(obj) is list:
        return [_as_float(o) for o in obj]
    if isinstance(obj, ember.Tensor) and obj.is_quantized:
        return obj.dequantize()
    return obj


def _shadowed(op, float_args):
    """A FloatFunctional method of :class:`Shadow`: ``op`` on the quantized module, and on
    the float one with the arguments at ``float_args`` dequantized."""
    def method(self, *args):
        out = getattr(self.orig_module, op)(*args)
        ref_args = [_as_float(a) if i in float_args else a for i, a in enumerate(args)]
        self.logger(out, getattr(self.shadow_module, op)(*ref_args))
        return out
    method.__name__ = op
    return method


class Shadow(nn.Module):
    """Runs ``q_module`` (returned) and, on dequantized inputs, its float version
    ``float_module``; a ``logger_cls()`` logs both outputs. FloatFunctional's ``add``,
    ``add_scalar``, ``mul``, ``mul_scalar``, ``cat``, ``add_relu`` are shadowed too."""

    def __init__(self, q_module, float_module, logger_cls):
        super().__init__()
        self.orig_module = q_module
        self.shadow_module = float_module
        self.dequant = importlib.import_module("ember.ao.nn.quantized").DeQuantize()
        self.logger = logger_cls()

    def forward(self, *x):
        args = _tuples_as_lists(x)
        out = self.orig_module(*args)
        self.logger(out, self.shadow_module(*_as_float(args)))
        return out

    add = _shadowed("add", (0, 1))
    add_scalar = _shadowed("add_scalar", (0,))
    mul = _shadowed("mul", (0, 1))
    mul_scalar = _shadowed("mul_scalar", (0,))
    add_relu = _shadowed("add_relu", (0, 1))

    def cat(self, x, dim=0):
        out = self.orig_module.cat(x, dim)
        self.logger(out, self.shadow_module.cat(_as_float(list(x)), dim))
        return out


def _same_structure(a, b):
    return [type(m) for m in a.modules()] == [type(m) for m in b.modules()]


def prepare_model_with_stubs(float_module, q_module, module_swap_list, logger_cls):
    """Wrap each child of ``q_module`` whose float counterpart's type is in
    ``module_swap_list`` (and differs from it) in a :class:`Shadow`, recursively."""
    float_of = dict(float_module.named_children())
    wrapped = {}
    for name, q_child in q_module.named_children():
        f_child = float_of.get(name)
        if f_child is None:
            continue
        if type(f_child) in module_swap_list:
            if not _same_structure(q_child, f_child):
                wrapped[name] = Shadow(q_child, f_child, logger_cls)
        else:
            prepare_model_with_stubs(f_child, q_child, module_swap_list, logger_cls)
    for name, shadow in wrapped.items():
        setattr(q_module, name, shadow)


def compare_model_stub(float_model, q_model, module_swap_list, *data,
                       logger_cls=ShadowLogger):
    """Shadow ``q_model``'s modules of the listed float types, run ``data`` through it and
    return the loggers' stats (``{"conv.stats": {"float": [...], "quantized": [...]}}``)."""
    prepare_model_with_stubs(float_model, q_model, module_swap_list, logger_cls)
    q_model(*data)
    return get_logger_dict(q_model)


def get_matching_activations(float_module, q_module):
    """``{key: {"float": [...], "quantized": [...]}}`` for loggers present in both that
    logged something on the quantized side."""
    f_logs, q_logs = get_logger_dict(float_module), get_logger_dict(q_module)
    return {key: {"float": f_logs[key]["tensor_val"], "quantized": q_stats["tensor_val"]}
            for key, q_stats in q_logs.items() if q_stats["tensor_val"] and key in f_logs}


_DEFAULT_MAPPINGS = ("get_default_static_quant_module_mappings",
                     "get_default_qat_module_mappings",
                     "get_default_dynamic_quant_module_mappings")


def get_default_compare_output_module_list():
    """The module types whose outputs :func:`compare_model_outputs` logs by default: the
    float, QAT, quantized and dynamic modules of the default mappings, and the stubs."""
    qm = importlib.import_module("ember.ao.quantization.quantization_mappings")
    kinds = {nn.Sequential}       # torch's list carries the qconfig propagation's Sequential
    for getter in _DEFAULT_MAPPINGS:
        for src, dst in getattr(qm, getter, dict)().items():
            kinds.update((src, dst))
    return kinds | _classes("ember.ao.quantization.stubs:QuantStub",
                            "ember.ao.quantization.stubs:DeQuantStub",
                            "ember.ao.nn.quantized:Quantize", "ember.ao.nn.quantized:DeQuantize")


def _log_output(module, inputs, output):
    return module.activation_post_process(output)


def _wants_output_logger(mod, allow_list, skip):
    kind = type(mod)
    if kind not in allow_list or kind is skip:
        return False
    if isinstance(getattr(mod, "activation_post_process", None), Logger):
        return False
    has_children = any(n != "activation_post_process" for n, _ in mod.named_children())
    return not has_children or kind in NON_LEAF_MODULE_TO_ADD_OBSERVER_ALLOW_LIST


def prepare_model_outputs(float_module, q_module, logger_cls=OutputLogger, allow_list=None):
    """Attach a ``logger_cls()`` as ``activation_post_process`` (called on the output by a
    forward hook) to every module of both models whose type is in ``allow_list`` — leaves,
    and the non-leaf quantized Linear/LSTM — except DeQuantStub."""
    allow = get_default_compare_output_module_list() if allow_list is None else allow_list
    skip = _find_class("ember.ao.quantization.stubs:DeQuantStub")
    for model in (float_module, q_module):
        for mod in [m for m in model.modules() if _wants_output_logger(m, allow, skip)]:
            mod.activation_post_process = logger_cls()
            mod.register_forward_hook(_log_output)


def compare_model_outputs(float_model, q_model, *data, logger_cls=OutputLogger,
                          allow_list=None):
    """Log the outputs of matching modules of both models on ``data``;
    ``{"conv.stats": {"float": [...], "quantized": [...]}}``."""
    prepare_model_outputs(float_model, q_model, logger_cls, allow_list)
    float_model(*data)
    q_model(*data)
    return get_matching_activations(float_model, q_model)
