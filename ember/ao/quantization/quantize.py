"""Eager-mode quantization (torch.ao.quantization.quantize).

- :func:`prepare`: give every module a ``qconfig`` (inherited from its parent unless set),
  and put an observer (``activation_post_process``) after each leaf module that has one,
  run by a forward hook;
- calibrate by running data through the model;
- :func:`convert`: replace each observed module by its quantized class (the mappings in
  ``quantization_mappings``), built by ``from_float`` from the observers' parameters.

:func:`prepare_qat` first swaps modules for their QAT versions (fake-quantized weights),
then adds fake quantizers in place of observers. :func:`quantize_dynamic` converts weights
only (activations quantized on the fly)."""
from __future__ import annotations

import copy
import inspect
import itertools
import warnings

import ember
from ember import nn
from ember.ao.nn.intrinsic.modules.fused import _FusedModule
from ember.ao.quantization.fake_quantize import FakeQuantizeBase
from ember.ao.quantization.observer import ObserverBase
from ember.ao.quantization.qconfig import (_assert_valid_qconfig, default_dynamic_qconfig,
                                           float16_dynamic_qconfig,
                                           float_qparams_weight_only_qconfig,
                                           float_qparams_weight_only_qconfig_4bit)
from ember.ao.quantization import quantization_mappings as M
from ember.ao.quantization.stubs import DeQuantStub, QuantWrapper

__all__ = ["get_default_custom_config_dict", "propagate_qconfig_", "add_quant_dequant",
           "prepare", "quantize", "quantize_dynamic", "prepare_qat", "quantize_qat", "convert",
           "swap_module", "default_eval_fn"]


def get_default_custom_config_dict():
    """Custom module swaps used by default (the quantizable LSTM / MultiheadAttention where
    ember has them)."""
    pairs = (("nn.LSTM", "ember.ao.nn.quantizable.LSTM", "ember.ao.nn.quantized.LSTM"),
             ("nn.MultiheadAttention", "ember.ao.nn.quantizable.MultiheadAttention",
              "ember.ao.nn.quantized.MultiheadAttention"))
    to_observed, to_quantized = {}, {}
    for f, o, q in pairs:
        fc, oc, qc = M._resolve(f), M._resolve(o), M._resolve(q)
        if fc is not None and oc is not None:
            to_observed[fc] = oc
            if qc is not None:
                to_quantized[oc] = qc
    return {"float_to_observed_custom_module_class": to_observed,
            "observed_to_quantized_custom_module_class": to_quantized}


def _is_activation_post_process(module):
    return isinstance(module, (ObserverBase, FakeQuantizeBase))


# ------------------------------------------------------------------ qconfig propagation

def _propagate_qconfig_helper(module, qconfig_dict, qconfig_parent=None, prefix="",
                              prepare_custom_config_dict=None):
    """Set ``module.qconfig``: its own if it has one, else the dict's entry for its name,
    else for its type, else the parent's; then recurse (skipping non-traceable children)."""
    qconfig = qconfig_dict.get(type(module), qconfig_parent)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    _assert_valid_qconfig(qconfig, module)
    module.qconfig = qconfig
    custom = prepare_custom_config_dict or {}
    skip_names = custom.get("non_traceable_module_name", [])
    skip_types = custom.get("non_traceable_module_class", [])
    for name, child in module.named_children():
        if name in skip_names or type(child) in skip_types:
            continue
        child_prefix = f"{prefix}.{name}" if prefix else name
        _propagate_qconfig_helper(child, qconfig_dict, qconfig, child_prefix)


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    """Give every submodule a ``qconfig`` attribute (in place). ``qconfig_dict`` maps module
    types or qualified names to QConfigs (names win over types; a module's own ``qconfig``
    wins over both)."""
    _propagate_qconfig_helper(module, qconfig_dict or {},
                              prepare_custom_config_dict=prepare_custom_config_dict or {})


# ------------------------------------------------------------------ observer hooks

def _observer_forward_hook(self, input, output):
    """Forward hook running the module's observer on its output."""
    return self.activation_post_process(output)


def _observer_forward_pre_hook(self, input):
    """Forward pre-hook running the module's observer on its first input."""
    return self.activation_post_process(input[0])


def _is_memoryless(observer):
    return getattr(observer, "averaging_constant", None) == 1


def _activation_is_memoryless(qconfig):
    """Whether the activation observer keeps no history (then it observes the input)."""
    act = qconfig.activation()
    if isinstance(act, FakeQuantizeBase) and hasattr(act, "activation_post_process"):
        return _is_memoryless(act.activation_post_process)
    return _is_memoryless(act)


def _register_activation_post_process_hook(module, pre_hook=False):
    if not hasattr(module, "activation_post_process"):
        raise AssertionError("Expect activation_post_process attribute already attached to "
                             "the module")
    if pre_hook:
        module.register_forward_pre_hook(_observer_forward_pre_hook, prepend=True)
    else:
        module.register_forward_hook(_observer_forward_hook, prepend=True)


def _has_no_children(module):
    return not any(True for _ in module.children())


def _dynamic(qconfig):
    return bool(getattr(qconfig.activation(), "is_dynamic", False))


def _add_observer_(module, qconfig_propagation_list=None, non_leaf_module_list=None,
                   device=None, custom_module_class_mapping=None):
    """Attach observers (``activation_post_process`` + hook) to the leaf modules of the
    propagation list that have a qconfig, to fused modules, FloatFunctionals, and the
    ``non_leaf_module_list`` types."""
    from ember.ao.nn import quantized as nnq
    if qconfig_propagation_list is None:
        qconfig_propagation_list = M.get_default_qconfig_propagation_list()
    custom_module_class_mapping = custom_module_class_mapping or {}
    special = M.DEFAULT_MODULE_TO_ACT_POST_PROCESS

    def needs_observation(m):
        return getattr(m, "qconfig", None) is not None

    def insert(m, special_ctr=None):
        if needs_observation(m) and not isinstance(m, DeQuantStub):
            observer = special_ctr() if special_ctr is not None else m.qconfig.activation()
            m.add_module("activation_post_process", observer)
            _register_activation_post_process_hook(m, _activation_is_memoryless(m.qconfig))

    for name, child in module.named_children():
        kind = type(child)
        if kind is nn.Dropout:
            continue
        if issubclass(kind, (nnq.FloatFunctional, nnq.QFunctional)):
            if needs_observation(child):
                if not hasattr(child, "activation_post_process"):
                    raise AssertionError(f"functional class {kind} has no pre-defined "
                                         f"`activation_post_process`")
                child.activation_post_process = child.qconfig.activation()
        elif isinstance(child, _FusedModule):
            insert(child)
        elif non_leaf_module_list is not None and kind in non_leaf_module_list:
            insert(child)
        elif child.training and kind in special:
            insert(child, special[kind])
        elif needs_observation(child) and kind in (nn.LSTM, nn.MultiheadAttention) and \
                kind not in custom_module_class_mapping and not _dynamic(child.qconfig):
            raise NotImplementedError(
                f"static quantization of nn.{kind.__name__} (torch's default custom module "
                f"swap to torch.ao.nn.quantizable.{kind.__name__}) is not supported by ember; "
                f"quantize it with quantize_dynamic or set its qconfig to None")
        elif needs_observation(child) and kind in custom_module_class_mapping:
            observed = custom_module_class_mapping[kind].from_float(child)
            setattr(module, name, observed)
            if not issubclass(custom_module_class_mapping[kind], tuple(M.no_observer_set())):
                insert(observed)
        else:
            _add_observer_(child, qconfig_propagation_list, non_leaf_module_list, device,
                           custom_module_class_mapping)
    if _has_no_children(module) and not isinstance(module, nn.Sequential) and \
            type(module) in qconfig_propagation_list:
        insert(module)
    if hasattr(module, "weight_fake_quant") and not isinstance(module, nn.Sequential) and \
            type(module) in qconfig_propagation_list and \
            not hasattr(module, "activation_post_process"):
        insert(module)


def add_quant_dequant(module):
    """Wrap each leaf module that has a qconfig in a :class:`QuantWrapper` (in place)."""
    if _has_no_children(module) and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module


# ------------------------------------------------------------------ prepare / convert

def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """A copy of ``model`` (or ``model`` itself if ``inplace``) with qconfigs propagated and
    observers attached, ready for calibration."""
    if prepare_custom_config_dict is None:
        prepare_custom_config_dict = get_default_custom_config_dict()
    custom = prepare_custom_config_dict.get("float_to_observed_custom_module_class", {})
    if not inplace:
        model = copy.deepcopy(model)
    propagation = allow_list if allow_list is not None else \
        M.get_default_qconfig_propagation_list()
    propagate_qconfig_(model, qconfig_dict=None)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct "
                      "configuration through `qconfig_dict` or by assigning the `.qconfig` "
                      "attribute directly on submodules")
    _add_observer_(model, propagation, observer_non_leaf_module_list,
                   custom_module_class_mapping=custom)
    return model


def _remove_activation_post_process(module):
    if hasattr(module, "activation_post_process") and \
            _is_activation_post_process(module.activation_post_process):
        delattr(module, "activation_post_process")
    for hooks, fn in ((module._forward_pre_hooks, _observer_forward_pre_hook),
                      (module._forward_hooks, _observer_forward_hook)):
        for handle_id in [k for k, h in hooks.items() if h is fn]:
            del hooks[handle_id]


def _remove_qconfig(module):
    """Drop ``qconfig`` and observers from ``module`` and its descendants."""
    for child in module.children():
        _remove_qconfig(child)
    if hasattr(module, "qconfig"):
        del module.qconfig
    _remove_activation_post_process(module)


def quantize(model, run_fn, run_args, mapping=None, inplace=False):
    """Post-training static quantization: prepare, ``run_fn(model, *run_args)`` to
    calibrate, convert. Returns the quantized model."""
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model


_DYNAMIC_DEFAULTS = {"qint8": default_dynamic_qconfig, "float16": float16_dynamic_qconfig,
                     "quint8": float_qparams_weight_only_qconfig,
                     "quint4x2": float_qparams_weight_only_qconfig_4bit}


def quantize_dynamic(model, qconfig_spec=None, dtype=ember.qint8, mapping=None, inplace=False):
    """Dynamic quantization: weights of the chosen module types (default: Linear and the
    recurrent layers for qint8/float16, embeddings for quint8/quint4x2) quantized ahead of
    time, activations at run time. ``qconfig_spec``: a dict (types or names -> QConfig) or a
    set of types/names."""
    key = str(dtype).replace("torch.", "")
    if qconfig_spec is None:
        if key in ("qint8", "float16"):
            qc = _DYNAMIC_DEFAULTS[key]
            qconfig_spec = {nn.Linear: qc, nn.LSTM: qc, nn.GRU: qc, nn.LSTMCell: qc,
                            nn.RNNCell: qc, nn.GRUCell: qc}
        elif key == "quint8":
            qconfig_spec = {nn.EmbeddingBag: float_qparams_weight_only_qconfig,
                            nn.Embedding: float_qparams_weight_only_qconfig}
        elif key == "quint4x2":
            qconfig_spec = {nn.EmbeddingBag: float_qparams_weight_only_qconfig_4bit}
        else:
            raise ValueError(f"Don't know how to quantize with default settings for {dtype}. "
                             f"Provide full qconfig please")
    elif isinstance(qconfig_spec, set):
        if key not in _DYNAMIC_DEFAULTS:
            raise RuntimeError(f"Unknown dtype specified for quantize_dynamic: {dtype}")
        qconfig_spec = dict(zip(qconfig_spec, itertools.repeat(_DYNAMIC_DEFAULTS[key])))
    if mapping is None:
        mapping = M.get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model


def prepare_qat(model, mapping=None, inplace=False):
    """Quantization-aware training: swap modules for their QAT versions (fake-quantized
    weights) and attach fake quantizers to activations. ``model`` must be in training
    mode."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if mapping is None:
        mapping = M.get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_dict=None)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


def quantize_qat(model, run_fn, run_args, inplace=False):
    """QAT end to end: prepare_qat, ``run_fn(model, *run_args)`` (training), convert."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, inplace=True)
    return model


def convert(module, mapping=None, inplace=False, remove_qconfig=True, is_reference=False,
            convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    """Replace each module having a qconfig (and a class in ``mapping``; default: the static
    quantization mapping) by its quantized version; fused modules swap as one. Returns the
    converted model (a copy unless ``inplace``)."""
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping, inplace=True, is_reference=is_reference,
             convert_custom_config_dict=convert_custom_config_dict,
             use_precomputed_fake_quant=use_precomputed_fake_quant)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def _convert(module, mapping=None, inplace=False, is_reference=False,
             convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    if mapping is None:
        mapping = M.get_default_static_quant_reference_module_mappings() if is_reference \
            else M.get_default_static_quant_module_mappings()
    if convert_custom_config_dict is None:
        convert_custom_config_dict = get_default_custom_config_dict()
    custom = convert_custom_config_dict.get("observed_to_quantized_custom_module_class", {})
    if not inplace:
        module = copy.deepcopy(module)
    swapped = {}
    for name, child in module.named_children():
        if not isinstance(child, _FusedModule) and type(child) not in custom:
            _convert(child, mapping, True, is_reference, convert_custom_config_dict,
                     use_precomputed_fake_quant)
        swapped[name] = swap_module(child, mapping, custom, use_precomputed_fake_quant)
    for name, new in swapped.items():
        module._modules[name] = new
    return module


def swap_module(mod, mapping, custom_module_class_mapping, use_precomputed_fake_quant=False):
    """``mod``'s replacement from ``mapping`` (built by ``from_float``/``from_observed``),
    or ``mod`` itself when it has no qconfig or no mapping. User forward hooks carry over;
    the observer hooks do not."""
    if getattr(mod, "qconfig", None) is None:
        return mod
    kind = type(mod)
    if kind in custom_module_class_mapping:
        new_mod = custom_module_class_mapping[kind].from_observed(mod)
    elif kind in mapping:
        qmod = mapping[kind]
        if getattr(qmod, "_IS_REFERENCE", False):
            from ember.ao.quantization.utils import get_qparam_dict
            weight_post_process = mod.qconfig.weight()
            weight_post_process(mod.weight)
            new_mod = qmod.from_float(mod, get_qparam_dict(weight_post_process))
        else:
            from ember.ao.nn.intrinsic.qat.modules.conv_fused import _fold_bn_once
            _fold_bn_once(mod)          # QAT conv/linear + bn: fold bn before quantizing
            params = inspect.signature(qmod.from_float).parameters
            if "use_precomputed_fake_quant" in params:
                new_mod = qmod.from_float(mod,
                                          use_precomputed_fake_quant=use_precomputed_fake_quant)
            else:
                new_mod = qmod.from_float(mod)
    else:
        return mod
    for hook in mod._forward_pre_hooks.values():
        if hook is not _observer_forward_pre_hook:
            new_mod.register_forward_pre_hook(hook)
    for hook in mod._forward_hooks.values():
        if hook is not _observer_forward_hook:
            new_mod.register_forward_hook(hook)
    return new_mod


def _get_observer_dict(mod, target_dict, prefix=""):
    """Collect ``{qualified name + '.activation_post_process': observer}`` into
    ``target_dict``."""
    def child_prefix(p, name):
        return p + name + "."
    if hasattr(mod, "activation_post_process"):
        target_dict[child_prefix(prefix, "activation_post_process")[:-1]] = \
            mod.activation_post_process
    for name, child in mod.named_children():
        _get_observer_dict(child, target_dict, child_prefix(prefix, name))


def default_eval_fn(model, calib_data):
    """A calibration ``run_fn``: ``model(data)`` for each ``(data, target)`` in
    ``calib_data``."""
    for data, _target in calib_data:
        model(data)
