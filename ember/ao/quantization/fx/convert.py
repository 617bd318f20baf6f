"""convert: observers become quantize/dequantize pairs (the reference graph), then, unless a
reference model is asked for, patterns are lowered to quantized ops (lower.py).

Each observer node is replaced by ``<prefix>scale_<n>``/``<prefix>zero_point_<n>`` buffers
read by get_attr nodes, ``torch.quantize_per_tensor`` (``quantize_per_channel`` for
per-channel weights) and a ``dequantize`` method call. The prefix is the observed node's
module path + ``_`` (``conv_``, ``_`` at top level); for a graph input, its first user's
path + ``_input_``."""
from __future__ import annotations

import ember
from ember.fx import GraphModule
from ember.ao.quantization.fx.lower import lower_to_quantized
from ember.ao.quantization.fx.prepare import _dtype_config

__all__ = ["convert"]

_PER_CHANNEL = None


def _per_channel_schemes():
    return (ember.per_channel_affine, ember.per_channel_symmetric,
            ember.per_channel_affine_float_qparams)


def _path(node, scope):
    if node.op == "call_module":
        return node.target
    return scope.get(node.name, ("", None))[0]


def _prefix(observed, obs_node, scope, qconfigs):
    """How torch names an observer's quantization parameters: after the observed node's
    module path (``conv_``, ``block_``, ``_`` at top level) when that node is quantized
    itself, else after its first user's (F.linear's first) path + ``_input_`` (graph inputs,
    outputs of nodes with a None qconfig)."""
    if observed.op != "placeholder" and qconfigs.get(observed.name) is not None:
        path = _path(observed, scope)
        return path.replace(".", "_") + "_"
    users = [u for u in obs_node.users]
    import ember.nn.functional as F
    user = next((u for u in users if u.op == "call_function" and u.target is F.linear),
                users[0] if users else None)
    path = _path(user, scope) if user is not None and user.op != "output" else ""
    return path.replace(".", "_") + "_input_"


def _new_attr_name(model, prefix):
    i = 0
    while hasattr(model, f"{prefix}{i}"):
        i += 1
    return f"{prefix}{i}"


def _register(model, prefix, value):
    name = _new_attr_name(model, prefix)
    model.register_buffer(name, value)
    return name


def _replace_observer(model, node, scope, observers, qconfigs, is_reference=False):
    """One observer node -> get_attr scale/zero_point, quantize, dequantize. In a reference
    graph, as torch: a dynamic observer -> ``quantize_per_tensor_dynamic(x, dtype, True)``,
    dequantize; a float16 one -> ``x.to(float16)``, dequantize."""
    graph = model.graph
    obs = getattr(model, node.target)
    observed = node.args[0]
    dtype = getattr(obs, "dtype", ember.float32)
    dynamic = getattr(obs, "is_dynamic", False)
    if is_reference and (dtype is ember.float16 or dynamic and dtype in (ember.quint8,
                                                                           ember.qint8)):
        with graph.inserting_before(node):
            if dynamic:
                q = graph.call_function(ember.quantize_per_tensor_dynamic,
                                        (observed, dtype, True))
            else:
                q = graph.call_method("to", (observed, dtype))
            dq = graph.call_method("dequantize", (q,))
        node.replace_all_uses_with(dq)
        graph.erase_node(node)
        return
    if dtype not in (ember.quint8, ember.qint8, ember.qint32) or dynamic:
        node.replace_all_uses_with(observed)
        graph.erase_node(node)
        return
    scale, zero_point = obs.calculate_qparams()
    prefix = _prefix(observed, node, scope, qconfigs)
    per_channel = getattr(obs, "qscheme", None) in _per_channel_schemes()
    if per_channel:
        scale_v = scale.to(ember.float32) if scale.dtype != ember.float32 else scale
        zp_v = zero_point.to(ember.int64)
    else:
        scale_v = ember.tensor(float(scale.reshape(-1)[0]) if isinstance(scale, ember.Tensor)
                               else float(scale), dtype=ember.float32)
        zp_v = ember.tensor(int(zero_point.reshape(-1)[0]) if isinstance(
            zero_point, ember.Tensor) else int(zero_point), dtype=ember.int64)
    scale_name = _register(model, prefix + "scale_", scale_v)
    zp_name = _register(model, prefix + "zero_point_", zp_v)
    with graph.inserting_before(node):
        s = graph.get_attr(scale_name)
        z = graph.get_attr(zp_name)
        if per_channel:
            q = graph.call_function(ember.quantize_per_channel,
                                    (observed, s, z, int(obs.ch_axis), dtype))
        else:
            q = graph.call_function(ember.quantize_per_tensor, (observed, s, z, dtype))
        dq = graph.call_method("dequantize", (q,))
    node.replace_all_uses_with(dq)
    graph.erase_node(node)
    observers[q.name] = obs


def _dequantize_quantized_inputs(model, names):
    """Inputs given quantized (input_quantized_indexes): a ``dequantize`` after each."""
    for node in list(model.graph.nodes):
        if node.op == "placeholder" and node.name in names:
            users = list(node.users)
            with model.graph.inserting_after(node):
                dq = model.graph.call_method("dequantize", (node,))
            for user in users:
                user.replace_input_with(node, dq)


def _keep_outputs_quantized(model, indexes):
    """Outputs asked to stay quantized (output_quantized_indexes) skip their final
    dequantize."""
    if not indexes:
        return
    output = next(n for n in model.graph.nodes if n.op == "output")
    value = output.args[0]
    single = not isinstance(value, (list, tuple))
    items = [value] if single else list(value)
    for i in indexes:
        if i < len(items) and getattr(items[i], "op", None) == "call_method" and \
                items[i].target == "dequantize":
            items[i] = items[i].args[0]
    output.args = (items[0] if single else type(value)(items),)


def get_qparam_dict(observer):
    """The weight observer's parameters as reference modules take them (symmetric schemes
    written as affine, as torch does)."""
    qscheme = getattr(observer, "qscheme", None)
    if qscheme is None or observer.dtype in (ember.float16, ember.float32):
        # PlaceholderObserver (float16 weights): no parameters
        return {"qscheme": None, "dtype": observer.dtype}
    if qscheme is ember.per_tensor_symmetric:
        qscheme = ember.per_tensor_affine
    elif qscheme is ember.per_channel_symmetric:
        qscheme = ember.per_channel_affine
    scale, zero_point = observer.calculate_qparams()
    out = {"qscheme": qscheme, "dtype": observer.dtype, "scale": scale,
           "zero_point": zero_point}
    if qscheme in (ember.per_channel_affine, ember.per_channel_affine_float_qparams):
        out["axis"] = observer.ch_axis
    out["quant_min"] = getattr(observer, "quant_min", None)
    out["quant_max"] = getattr(observer, "quant_max", None)
    return out


def _swap_reference_modules(model, attrs, install=True):
    """Weighted float modules (also inside fused ones) of quantized patterns become their
    reference quantized modules, weight qparams from the qconfig's weight observer.

    ``install=False`` (convert_fx lowering straight from the float modules) builds the same
    modules and drops them: torch's convert_fx always goes through reference modules, each
    built by its float constructor (random initialization, a QAT module's ``to_float``
    first), so the global generator moves as much as in torch; later ``randn`` calls of a
    program then draw the same numbers."""
    modules = dict(model.named_modules(remove_duplicate=False))
    for node in model.graph.nodes:
        entry = attrs.matches.get(node.name)
        if node.op != "call_module" or entry is None or entry[0] != node.name:
            continue
        qconfig = attrs.node_name_to_qconfig.get(node.name)
        if qconfig is None or _dtype_config(entry[3], qconfig) is None:
            continue            # not quantized (float16 static on x86...): stays float
        mod = modules[node.target]
        fake_quant = getattr(mod, "weight_fake_quant", None)
        if fake_quant is not None and hasattr(mod, "to_float"):
            # a QAT module: its float form (bn folded in), weight qparams from training
            mod = mod.to_float()
            if not install:
                _build_reference(mod, fake_quant, attrs)
                continue
            parent, _, name = node.target.rpartition(".")
            setattr(modules[parent] if parent else model, name, mod)
            modules[node.target] = mod
        if not install:
            _build_reference(mod, qconfig.weight(), attrs, observe=True)
            continue
        inner = mod[0] if isinstance(mod, ember.nn.Sequential) else mod
        ref_cls = _reference_class(type(inner), attrs.backend_config)
        if ref_cls is None:
            continue
        # torch runs the weight through it once more (a QAT fake-quantizer's moving
        # average moves) before reading its parameters
        observer = fake_quant if fake_quant is not None else qconfig.weight()
        observer(inner.weight)
        ref = ref_cls.from_float(inner, get_qparam_dict(observer))
        if inner is mod:
            parent, _, name = node.target.rpartition(".")
            setattr(modules[parent] if parent else model, name, ref)
        else:
            mod[0] = ref


def _build_reference(mod, observer, attrs, observe=False):
    """Build (and drop) the reference module of ``mod``, weight qparams from ``observer``
    (a fresh weight observer is run first; a QAT module's fake-quantizer is only read:
    lowering runs it)."""
    inner = mod[0] if isinstance(mod, ember.nn.Sequential) else mod
    ref_cls = _reference_class(type(inner), attrs.backend_config)
    if ref_cls is None:
        return
    if observe:
        observer(inner.weight)
    ref_cls.from_float(inner, get_qparam_dict(observer))


def _swap_dynamic_modules(model, attrs):
    """Modules whose qconfig quantizes activations dynamically (default_dynamic_qconfig,
    float16_dynamic_qconfig) become their dynamic quantized modules (nnqd.Linear...);
    weight-only ones (float activations: Embedding) their quantized modules."""
    from ember.ao.quantization.quantization_mappings import \
        get_default_dynamic_quant_module_mappings, get_default_static_quant_module_mappings
    mapping = get_default_dynamic_quant_module_mappings()
    modules = dict(model.named_modules(remove_duplicate=False))
    for node in model.graph.nodes:
        if node.op != "call_module" or node.target not in modules:
            continue
        qconfig = attrs.node_name_to_qconfig.get(node.name)
        mod = modules[node.target]
        qcls = mapping.get(type(mod), get_default_static_quant_module_mappings().get(type(mod)))
        if qconfig is None or qcls is None:
            continue
        activation = qconfig.activation()
        weight_only = getattr(activation, "dtype", None) is ember.float32 and \
            getattr(qconfig.weight(), "dtype", None) in (ember.quint8, ember.quint4x2)
        if not getattr(activation, "is_dynamic", False) and not weight_only:
            continue
        if weight_only:      # Embedding(Bag) with float_qparams_weight_only_qconfig
            qcls = get_default_static_quant_module_mappings().get(type(mod))
            if qcls is None:
                continue
        for sub in mod.modules():
            sub.qconfig = qconfig
        parent, _, name = node.target.rpartition(".")
        setattr(modules[parent] if parent else model, name, qcls.from_float(mod))


def _reference_class(float_cls, backend_config):
    """The reference module the backend config gives for a float module type."""
    for conf in backend_config.configs:
        if conf.root_module is float_cls and conf.reference_quantized_module is not None:
            return conf.reference_quantized_module
    return None


def _update_qconfigs(model, attrs, qconfig_mapping):
    """convert_fx(qconfig_mapping=...): qconfigs may only be set to None (those parts stay
    float); any other change is refused with torch's AssertionError."""
    from ember.ao.quantization.qconfig import qconfig_equals
    from ember.ao.quantization.fx.match_utils import node_qconfigs
    before = attrs.qconfig_mapping
    pairs = [("global", {"global": before.global_qconfig},
              {"global": qconfig_mapping.global_qconfig})]
    for key in ("object_type_qconfigs", "module_name_regex_qconfigs", "module_name_qconfigs",
                "module_name_object_type_order_qconfigs"):
        pairs.append((key, getattr(before, key, {}), getattr(qconfig_mapping, key, {})))
    module_qconfig = {n.target: attrs.node_name_to_qconfig.get(n.name)
                      for n in model.graph.nodes if n.op == "call_module"}
    for key, old, new in pairs:
        for k, v in new.items():
            if k in old:
                was = old[k]
            elif key == "module_name_qconfigs" and k in module_qconfig:
                was = module_qconfig[k]          # what the module had at prepare time
            else:
                was = before.global_qconfig
            if v is not None and not qconfig_equals(was, v):
                raise AssertionError(f"Expected k {k} to have the same value in prepare and "
                                     f"convert QConfigMappings, but {was} was updated to {v}")
    modules = dict(model.named_modules(remove_duplicate=False))
    updated = node_qconfigs(model.graph, modules, qconfig_mapping, attrs.node_name_to_scope)
    for node in model.graph.nodes:
        if attrs.node_name_to_qconfig.get(node.name) is not None and \
                updated.get(node.name, 0) is None:
            attrs.node_name_to_qconfig[node.name] = None
            if node.op == "call_module":
                for sub in modules[node.target].modules():
                    if "qconfig" in vars(sub):
                        del sub.qconfig


def convert(model, is_reference=False, remove_qconfig=True, qconfig_mapping=None):
    """Convert a prepared (and calibrated) GraphModule in place; returns it."""
    attrs = model.meta.get("_observed_graph_module_attrs")
    if attrs is None:
        raise RuntimeError("convert_fx expects a model returned by prepare_fx or "
                           "prepare_qat_fx")
    scope = attrs.node_name_to_scope
    if qconfig_mapping is not None:
        _update_qconfigs(model, attrs, qconfig_mapping)
    observers = {}
    _dequantize_quantized_inputs(model, getattr(attrs, "input_quantized_names", ()))
    observer_names = []
    for node in list(model.graph.nodes):
        if node.op == "call_module" and node.name in attrs.observer_roles:
            observer_names.append(node.target)
            _replace_observer(model, node, scope, observers, attrs.node_name_to_qconfig,
                              is_reference)
    for name in observer_names:          # shared observers sit under several names
        if hasattr(model, name):
            delattr(model, name)
    _keep_outputs_quantized(model, getattr(attrs, "output_quantized_indexes", ()))
    if is_reference:
        _swap_reference_modules(model, attrs)
    else:
        _swap_reference_modules(model, attrs, install=False)
        _swap_dynamic_modules(model, attrs)
        lower_to_quantized(model, attrs, observers)
    model.graph.eliminate_dead_code()
    used = {n.target for n in model.graph.nodes if n.op == "get_attr"}
    for name, _ in list(model.named_buffers(recurse=False)):
        if name not in used and ("scale_" in name or "zero_point_" in name):
            delattr(model, name)
    model.delete_all_unused_submodules()
    model.graph.lint()
    # a new GraphModule, as torch's: what the graph reads, in node order, nothing else
    if remove_qconfig:
        for _, mod in model.named_modules(remove_duplicate=False):
            if "qconfig" in vars(mod):
                del mod.qconfig
    converted = GraphModule(model, model.graph, "GraphModule")
    converted.training = model.training
    converted._register_state_dict_hook(_save_packed_weights)
    converted._register_load_state_dict_pre_hook(_load_packed_weights, with_module=True)
    return converted


def _save_packed_weights(module, state_dict, prefix, local_metadata):
    """Packed weights of lowered functional ops are in the state dict, as torch's."""
    for name, value in vars(module).items():
        if "_packed_weight_" in name:
            state_dict[prefix + name] = value


def _load_packed_weights(module, state_dict, prefix, local_metadata, strict, missing_keys,
                         unexpected_keys, error_msgs):
    for name in [k[len(prefix):] for k in state_dict if k.startswith(prefix)]:
        if "_packed_weight_" in name and name in vars(module):
            setattr(module, name, state_dict.pop(prefix + name))
