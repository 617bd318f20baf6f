"""prepare: observers inserted where the backend config and the qconfigs say.

For every matched pattern (match_utils) with a qconfig: the root node's tensor inputs get an
activation observer (weights of functional linear/conv get a weight observer, biases none),
the last node's output gets one (the input's own observer instance where the pattern shares
it: pools, flatten, relu, cat...). Observers are submodules ``activation_post_process_<i>``
called by nodes of the same name; the users of an observed value read the observer's output.
What convert needs later is kept in ``model.meta["_observed_graph_module_attrs"]``."""
from __future__ import annotations

import ember
from ember.fx import GraphModule, Node
from ember.ao.quantization.backend_config import ObservationType
from ember.ao.quantization.fx.match_utils import find_matches, node_qconfigs

__all__ = ["prepare", "ObservedGraphModuleAttrs"]


class ObservedGraphModuleAttrs:
    """What prepare learnt, for convert: node scopes, matches, qconfigs, and the role of
    each observer node (``"activation"`` or ``"weight"``)."""

    def __init__(self, node_name_to_scope, matches, qconfigs, observer_roles, is_qat,
                 backend_config, qconfig_mapping):
        self.node_name_to_scope = node_name_to_scope
        self.matches = matches
        self.node_name_to_qconfig = qconfigs
        self.observer_roles = observer_roles
        self.is_qat = is_qat
        self.backend_config = backend_config
        self.qconfig_mapping = qconfig_mapping


def _dtype_config(config, qconfig):
    """The pattern config's dtype config the qconfig's observers satisfy, or None."""
    act = qconfig.activation()
    act_dtype = getattr(act, "dtype", None)
    for dc in config.dtype_configs:
        if dc.input_dtype is not act_dtype:
            continue
        if bool(dc.is_dynamic) != bool(getattr(act, "is_dynamic", False)):
            continue
        exact = dc.output_dtype_with_constraints.scale_exact_match
        if exact is not None:
            scale = getattr(act, "scale", None)
            try:
                scale = float(scale)
            except (TypeError, ValueError):
                return None
            if scale != exact or int(getattr(act, "zero_point")) != \
                    dc.output_dtype_with_constraints.zero_point_exact_match:
                return None
        return dc
    return None


class _Inserter:
    def __init__(self, model):
        self.model, self.graph = model, model.graph
        self.observer_of = {}          # node -> its observer node
        self.roles = {}

    def _name(self):
        i = 0
        while hasattr(self.model, f"activation_post_process_{i}"):
            i += 1
        return f"activation_post_process_{i}"

    def observe(self, node, observer, role, consumer=None):
        """An observer node right after ``node``. An output observer (``consumer`` None)
        is read by every user of ``node``; an input observer only by ``consumer`` (and by
        later consumers asking for it), as torch's: other users keep the plain value."""
        obs = self.observer_of.get(node)
        if obs is None:
            name = self._name()
            self.model.add_module(name, observer)
            users = list(node.users)
            with self.graph.inserting_after(node):
                obs = self.graph.create_node("call_module", name, (node,), {})
            if consumer is None:
                for user in users:
                    user.replace_input_with(node, obs)
            self.observer_of[node] = obs
            self.observer_of[obs] = obs
            self.roles[obs.name] = (role, consumer.name if consumer is not None else None)
        if consumer is not None and obs is not node:
            consumer.replace_input_with(node, obs)
        return obs


def _canonical(target):
    from ember.ao.quantization.fx import match_utils
    if match_utils._ALIASES is None:
        match_utils._ALIASES = match_utils._functional_aliases()
    return match_utils._ALIASES.get(target, target) if callable(target) else target


def _nodes_in(arg):
    """The tensor-valued nodes of one argument (a node, or a list of them as ``cat``
    takes)."""
    if isinstance(arg, Node):
        return [arg] if _produces_tensor(arg) else []
    if isinstance(arg, (list, tuple)):
        return [a for a in arg if isinstance(a, Node) and _produces_tensor(a)]
    return []


def _produces_tensor(node):
    """False for values computed from shapes (``x.shape[0]``, ``x.size(1) // 2``): torch
    does not observe them."""
    import builtins
    import operator
    if node.op == "call_method" and node.target in ("size", "dim", "numel"):
        return False
    if node.op == "call_function":
        if node.target is builtins.getattr:
            return False
        inputs = node.all_input_nodes
        if node.target is operator.getitem:
            return _produces_tensor(node.args[0])
        if inputs and node.target in (operator.add, operator.sub, operator.mul,
                                      operator.floordiv, operator.truediv) and \
                not any(_produces_tensor(a) for a in inputs):
            return False
    return True


def _tensor_args(node, skip):
    """The nodes among a node's positional arguments (lists flattened), ``skip``ped
    positions aside."""
    out = []
    for i, arg in enumerate(node.args):
        if i in skip:
            continue
        if isinstance(arg, Node):
            out.append(arg)
        elif isinstance(arg, (list, tuple)):
            out.extend(a for a in arg if isinstance(a, Node))
    return out


def _update_qconfig_for_fusion(modules, qconfig_mapping, backend_config):
    """A fused module (LinearReLU) takes the object-type qconfig its parts share; parts
    with different qconfigs are refused with torch's LookupError."""
    from ember.ao.quantization.qconfig import qconfig_equals
    object_types = qconfig_mapping.object_type_qconfigs
    if not object_types:
        return
    present = {type(m) for m in modules.values()}
    for conf in backend_config.configs:
        fused = conf.fused_module
        if fused is None or fused not in present or not isinstance(conf.pattern, tuple) or \
                not all(isinstance(p, type) for p in conf.pattern):
            continue
        ops = list(conf.pattern)
        qconfig = object_types.get(ops[0])
        for op in ops[1:]:
            if not qconfig_equals(object_types.get(op), qconfig):
                raise LookupError(f"During fusion, we need to specify the same qconfigs for "
                                  f"all module types in {fused} offending type: {op}")
        if qconfig is not None:
            object_types[fused] = qconfig


def prepare(model, qconfig_mapping, is_qat, node_name_to_scope, backend_config,
            input_quantized_indexes=(), output_quantized_indexes=()):
    """Insert observers into ``model`` (a traced, fused GraphModule) in place."""
    graph = model.graph
    modules = dict(model.named_modules(remove_duplicate=False))
    _update_qconfig_for_fusion(modules, qconfig_mapping, backend_config)
    qconfigs = node_qconfigs(graph, modules, qconfig_mapping, node_name_to_scope)
    matches = find_matches(graph, modules, backend_config, qconfigs)
    ins = _Inserter(model)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for i in input_quantized_indexes:        # already quantized: never observed
        ins.observer_of[placeholders[i]] = placeholders[i]
    # weight/bias positions of functional ops, also inside fused patterns (conv2d, relu)
    type_to_index = {c.pattern: c._input_type_to_index for c in backend_config.configs
                     if c._input_type_to_index and not isinstance(c.pattern, tuple)}
    for node in list(graph.nodes):
        # each node's own qconfig decides; the match says where its observers go
        m = matches.get(node.name)
        qconfig = qconfigs.get(node.name)
        if node.op == "call_module" and qconfig is not None:
            for sub in modules[node.target].modules():      # as torch: children too
                sub.qconfig = qconfig
        if m is None or qconfig is None:
            continue
        dc = _dtype_config(m.config, qconfig)
        if dc is None:
            continue
        if node.op == "call_module":
            mod = modules[node.target]
            if is_qat and m.config.qat_module is not None and node is m.root:
                qat = m.config.qat_module.from_float(mod)
                parent, _, attr = node.target.rpartition(".")
                setattr(modules[parent] if parent else model, attr, qat)
                modules[node.target] = qat
        if dc.input_dtype is ember.float32:
            continue            # weight-only (Embedding): float activations, no observers
        obs_type = m.config.observation_type
        by_count = m.config._num_tensor_args_to_observation_type
        if by_count:              # add/mul: a scalar operand shares the input's observer
            count = sum(len(_nodes_in(a)) for a in m.root.args)
            obs_type = by_count.get(count, obs_type)
        if obs_type is ObservationType.INPUT_OUTPUT_NOT_OBSERVED:
            continue
        if node is m.root:
            index = m.config._input_type_to_index or type_to_index.get(
                _canonical(node.target), {})
            weight_i, bias_i = index.get("weight"), index.get("bias")
            for i, arg in enumerate(list(node.args)):
                if i == bias_i:
                    continue
                if i == weight_i:
                    if isinstance(arg, Node):
                        ins.observe(arg, qconfig.weight(), "weight", node)
                    continue
                for a in _nodes_in(arg):
                    ins.observe(a, qconfig.activation(), "activation", node)
        if node is m.last and dc.output_dtype is dc.input_dtype:
            if obs_type is ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT:
                inputs = [ins.observer_of.get(a) for a in _tensor_args(m.root, ())]
                inputs = [a for a in inputs if a is not None]
                observer = getattr(model, inputs[0].target) if inputs else \
                    qconfig.activation()
                for other in inputs[1:]:      # cat: every input shares one observer
                    setattr(model, other.target, observer)
            else:
                observer = qconfig.activation()
            ins.observe(node, observer, "activation")
    model.meta["_observed_graph_module_attrs"] = ObservedGraphModuleAttrs(
        node_name_to_scope, {k: (v.root.name, v.last.name, [n.name for n in v.nodes], v.config)
                             for k, v in matches.items()},
        qconfigs, ins.roles, is_qat, backend_config, qconfig_mapping)
    attrs = model.meta["_observed_graph_module_attrs"]
    attrs.input_quantized_names = [placeholders[i].name for i in input_quantized_indexes]
    attrs.output_quantized_indexes = list(output_quantized_indexes)
    graph.lint()
    observed = GraphModule(model, graph, "GraphModule")   # submodules in node order
    observed.meta = model.meta
    observed.training = model.training
    return observed
