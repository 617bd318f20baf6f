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
from ember.ao.quantization.utils import _deprecated_flow

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

def _observe_output(mod, args, out):
    """Forward hook: the output, passed through ``mod.activation_post_process``."""
    return mod.activation_post_process(out)


def _observe_input(mod, args):
    """Forward pre-hook: the first input, passed through ``mod.activation_post_process``."""
    return mod.activation_post_process(args[0])


_OBSERVER_HOOKS = (_observe_input, _observe_output)


def _observes_input(qconfig):
    """A memoryless activation observer (``averaging_constant == 1``, bare or inside a fake
    quantizer) observes the module's input instead of its output."""
    obs = qconfig.activation()
    inner = getattr(obs, "activation_post_process", None)
    if isinstance(obs, FakeQuantizeBase) and inner is not None:
        obs = inner
    return getattr(obs, "averaging_constant", None) == 1


def _is_leaf(module):
    return next(iter(module.children()), None) is None


def _has_qconfig(module):
    return getattr(module, "qconfig", None) is not None


def _attach_observer(mod, make=None):
    """Give ``mod`` an ``activation_post_process`` (``make()``, else its qconfig's) and the
    hook that runs it; DeQuantStubs and modules without qconfig are left alone."""
    if not _has_qconfig(mod) or isinstance(mod, DeQuantStub):
        return
    mod.add_module("activation_post_process", (make or mod.qconfig.activation)())
    if _observes_input(mod.qconfig):
        mod.register_forward_pre_hook(_observe_input, prepend=True)
    else:
        mod.register_forward_hook(_observe_output, prepend=True)


def _unsupported_static_rnn(child, custom):
    kind = type(child)
    return (kind in (nn.LSTM, nn.MultiheadAttention) and kind not in custom
            and _has_qconfig(child)
            and not getattr(child.qconfig.activation(), "is_dynamic", False))


def _add_observer_(module, qconfig_propagation_list=None, non_leaf_module_list=None,
                   device=None, custom_module_class_mapping=None):
    """Attach observers (``activation_post_process`` + hook) to the leaf modules of the
    propagation list that have a qconfig, to fused modules, FloatFunctionals, and the
    ``non_leaf_module_list`` types."""
    from ember.ao.nn import quantized as nnq
    allowed = (M.get_default_qconfig_propagation_list() if qconfig_propagation_list is None
               else qconfig_propagation_list)
    custom = custom_module_class_mapping or {}
    non_leaf = non_leaf_module_list or ()
    special = M.DEFAULT_MODULE_TO_ACT_POST_PROCESS
    for name, child in list(module.named_children()):
        kind = type(child)
        if kind is nn.Dropout:
            pass
        elif isinstance(child, (nnq.FloatFunctional, nnq.QFunctional)):
            if _has_qconfig(child):     # its observer slot exists; fill it, no hook needed
                if not hasattr(child, "activation_post_process"):
                    raise AssertionError(f"functional class {kind} has no pre-defined "
                                         f"`activation_post_process`")
                child.activation_post_process = child.qconfig.activation()
        elif isinstance(child, _FusedModule) or kind in non_leaf:
            _attach_observer(child)
        elif child.training and kind in special:
            _attach_observer(child, special[kind])
        elif _unsupported_static_rnn(child, custom):
            raise NotImplementedError(
                f"static quantization of nn.{kind.__name__} (torch's default custom module "
                f"swap to torch.ao.nn.quantizable.{kind.__name__}) is not supported by ember; "
                f"quantize it with quantize_dynamic or set its qconfig to None")
        elif _has_qconfig(child) and kind in custom:
            observed = custom[kind].from_float(child)
            setattr(module, name, observed)
            if not issubclass(custom[kind], tuple(M.no_observer_set())):
                _attach_observer(observed)
        else:
            _add_observer_(child, allowed, non_leaf_module_list, device, custom)
    if type(module) in allowed and not isinstance(module, nn.Sequential):
        qat_without_observer = (hasattr(module, "weight_fake_quant")
                                and not hasattr(module, "activation_post_process"))
        if _is_leaf(module) or qat_without_observer:
            _attach_observer(module)


def add_quant_dequant(module):
    """Wrap each leaf module that has a qconfig in a :class:`QuantWrapper` (in place);
    returns ``module`` (or its wrapper)."""
    if _is_leaf(module):
        return QuantWrapper(module) if getattr(module, "qconfig", None) else module
    for name, child in list(module.named_children()):
        module._modules[name] = add_quant_dequant(child)
    return module


# ------------------------------------------------------------------ prepare / convert

def _target(model, inplace):
    return model if inplace else copy.deepcopy(model)


@_deprecated_flow
def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """A copy of ``model`` (or ``model`` itself if ``inplace``) with qconfigs propagated and
    observers attached, ready for calibration."""
    config = (get_default_custom_config_dict() if prepare_custom_config_dict is None
              else prepare_custom_config_dict)
    model = _target(model, inplace)
    propagate_qconfig_(model, qconfig_dict=None)
    if all(not getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct "
                      "configuration through `qconfig_dict` or by assigning the `.qconfig` "
                      "attribute directly on submodules")
    _add_observer_(model, allow_list, observer_non_leaf_module_list,
                   custom_module_class_mapping=config.get(
                       "float_to_observed_custom_module_class", {}))
    return model


def _strip_quant_state(module):
    """Drop ``qconfig``, observers and observer hooks from ``module`` and its descendants."""
    for mod in list(module.modules()):
        if hasattr(mod, "qconfig"):
            del mod.qconfig
        if _is_activation_post_process(getattr(mod, "activation_post_process", None)):
            delattr(mod, "activation_post_process")
        for hooks in (mod._forward_pre_hooks, mod._forward_hooks):
            for key in [k for k, fn in hooks.items() if fn in _OBSERVER_HOOKS]:
                hooks.pop(key)


def _calibrated(model, inplace, train, prepare_fn, run_fn, run_args, mapping=None):
    """The shared flow of :func:`quantize` / :func:`quantize_qat`: (copy,) set the mode,
    prepare, run ``run_fn(model, *run_args)``, convert."""
    model = _target(model, inplace)
    model.train(train)
    prepare_fn(model, inplace=True)
    run_fn(model, *run_args)
    return convert(model, mapping, inplace=True)


@_deprecated_flow
def quantize(model, run_fn, run_args, mapping=None, inplace=False):
    """Post-training static quantization: prepare, ``run_fn(model, *run_args)`` to
    calibrate, convert. Returns the quantized model."""
    return _calibrated(model, inplace, False, prepare, run_fn, run_args, mapping)


# dtype name -> (default QConfig for a set spec, module types quantized by default)
_DYNAMIC_DEFAULTS = {
    "qint8": (default_dynamic_qconfig,
              (nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell, nn.GRUCell)),
    "float16": (float16_dynamic_qconfig,
                (nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell, nn.GRUCell)),
    "quint8": (float_qparams_weight_only_qconfig, (nn.EmbeddingBag, nn.Embedding)),
    "quint4x2": (float_qparams_weight_only_qconfig_4bit, (nn.EmbeddingBag,)),
}


@_deprecated_flow
def quantize_dynamic(model, qconfig_spec=None, dtype=ember.qint8, mapping=None, inplace=False):
    """Dynamic quantization: weights of the chosen module types (default: Linear and the
    recurrent layers for qint8/float16, embeddings for quint8/quint4x2) quantized ahead of
    time, activations at run time. ``qconfig_spec``: a dict (types or names -> QConfig) or a
    set of types/names."""
    default = _DYNAMIC_DEFAULTS.get(str(dtype).replace("torch.", ""))
    if qconfig_spec is None:
        if default is None:
            raise ValueError(f"Don't know how to quantize with default settings for {dtype}. "
                             f"Provide full qconfig please")
        qconfig_spec = dict.fromkeys(default[1], default[0])
    elif isinstance(qconfig_spec, set):
        if default is None:
            raise RuntimeError(f"Unknown dtype specified for quantize_dynamic: {dtype}")
        qconfig_spec = dict.fromkeys(qconfig_spec, default[0])
    model = _target(model, inplace)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    return convert(model, M.get_default_dynamic_quant_module_mappings() if mapping is None
                   else mapping, inplace=True)


@_deprecated_flow
def prepare_qat(model, mapping=None, inplace=False):
    """Quantization-aware training: swap modules for their QAT versions (fake-quantized
    weights) and attach fake quantizers to activations. ``model`` must be in training
    mode."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    qat_map = M.get_default_qat_module_mappings() if mapping is None else mapping
    model = _target(model, inplace)
    propagate_qconfig_(model)
    convert(model, qat_map, inplace=True, remove_qconfig=False)
    return prepare(model, inplace=True, observer_non_leaf_module_list=set(qat_map.values()))


@_deprecated_flow
def quantize_qat(model, run_fn, run_args, inplace=False):
    """QAT end to end: prepare_qat, ``run_fn(model, *run_args)`` (training), convert."""
    return _calibrated(model, inplace, True, prepare_qat, run_fn, run_args)


@_deprecated_flow
def convert(module, mapping=None, inplace=False, remove_qconfig=True, is_reference=False,
            convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    """Replace each module having a qconfig (and a class in ``mapping``; default: the static
    quantization mapping) by its quantized version; fused modules swap as one. Returns the
    converted model (a copy unless ``inplace``)."""
    if mapping is None:
        mapping = (M.get_default_static_quant_reference_module_mappings() if is_reference
                   else M.get_default_static_quant_module_mappings())
    config = (get_default_custom_config_dict() if convert_custom_config_dict is None
              else convert_custom_config_dict)
    custom = config.get("observed_to_quantized_custom_module_class", {})
    module = _target(module, inplace)
    _swap_tree(module, mapping, custom, use_precomputed_fake_quant)
    if remove_qconfig:
        _strip_quant_state(module)
    return module


def _swap_tree(module, mapping, custom, use_precomputed_fake_quant):
    """Swap ``module``'s descendants bottom-up (fused and custom modules swap whole)."""
    for name, child in list(module._modules.items()):
        if child is None:
            continue
        if not isinstance(child, _FusedModule) and type(child) not in custom:
            _swap_tree(child, mapping, custom, use_precomputed_fake_quant)
        module._modules[name] = swap_module(child, mapping, custom, use_precomputed_fake_quant)


def _from_float(mod, qcls, use_precomputed_fake_quant):
    """``qcls`` built from the float/QAT module ``mod``."""
    if getattr(qcls, "_IS_REFERENCE", False):      # reference modules take weight qparams
        from ember.ao.quantization.utils import get_qparam_dict
        observer = mod.qconfig.weight()
        observer(mod.weight)
        return qcls.from_float(mod, get_qparam_dict(observer))
    from ember.ao.nn.intrinsic.qat.modules.conv_fused import _fold_bn_once
    _fold_bn_once(mod)                             # QAT conv/linear + bn: fold bn first
    if "use_precomputed_fake_quant" in inspect.signature(qcls.from_float).parameters:
        return qcls.from_float(mod, use_precomputed_fake_quant=use_precomputed_fake_quant)
    return qcls.from_float(mod)


def swap_module(mod, mapping, custom_module_class_mapping, use_precomputed_fake_quant=False):
    """``mod``'s replacement from ``mapping`` (built by ``from_float``/``from_observed``),
    or ``mod`` itself when it has no qconfig or no mapping. User forward hooks carry over;
    the observer hooks do not."""
    kind = type(mod)
    if not _has_qconfig(mod):
        return mod
    if kind in custom_module_class_mapping:
        new = custom_module_class_mapping[kind].from_observed(mod)
    elif kind in mapping:
        new = _from_float(mod, mapping[kind], use_precomputed_fake_quant)
    else:
        return mod
    for src, register in ((mod._forward_pre_hooks, new.register_forward_pre_hook),
                          (mod._forward_hooks, new.register_forward_hook)):
        for fn in list(src.values()):
            if fn not in _OBSERVER_HOOKS:
                register(fn)
    return new


def _get_observer_dict(mod, target_dict, prefix=""):
    """Collect ``{qualified name + '.activation_post_process': observer}`` into
    ``target_dict`` (``prefix`` ends with a dot when not empty)."""
    if hasattr(mod, "activation_post_process"):
        target_dict[prefix + "activation_post_process"] = mod.activation_post_process
    for name, child in mod.named_children():
        _get_observer_dict(child, target_dict, f"{prefix}{name}.")


def default_eval_fn(model, calib_data):
    """A calibration ``run_fn``: ``model(data)`` for each ``(data, target)`` in
    ``calib_data``."""
    for data, _target in calib_data:
        model(data)
