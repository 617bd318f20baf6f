"""Graph edits of the FX Numeric Suite (torch.ao.ns.fx.graph_passes): loggers after the
matched subgraphs' outputs (and before their inputs), and float shadow copies of model A's
subgraphs run inside model B on dequantized inputs.

Names follow torch's: ``<node>_ns_logger_<i>`` (``_ns_logger_a_``/``_ns_logger_b_`` in a
shadow model), ``<node>_shadow_copy_<i>``, ``<node>_dtype_cast_<i>``."""
from __future__ import annotations

import copy
import inspect

import ember
from ember.fx import Graph, GraphModule, Node, map_arg
from ember.ao.ns.fx.mappings import get_target_type_str

__all__ = ["add_loggers_to_model", "create_a_shadows_b", "trace_for_ns"]


def trace_for_ns(model):
    """A new GraphModule of ``model``: traced, or for a GraphModule its graph copied with
    the node names a new trace gives (``dequantize``, not ``dequantize_4``), as torch's
    NSTracer does; a prepared model's meta is kept."""
    if isinstance(model, GraphModule):
        graph = Graph()
        env = {}
        for node in model.graph.nodes:
            if node.op == "placeholder":
                hint = node.target
            elif node.op in ("get_attr", "call_module"):
                hint = node.target.replace(".", "_")
            elif node.op == "output":
                hint = "output"
            else:
                hint = Graph._target_to_name(node.target)
            new = graph.create_node(node.op, node.target, map_arg(node.args, env.__getitem__),
                                    map_arg(node.kwargs, env.__getitem__), hint, node.type)
            new.meta = dict(node.meta)
            env[node] = new
        gm = GraphModule(model, graph, "GraphModule")
    else:
        from ember.ao.quantization.fx.tracer import QuantizationTracer
        gm = GraphModule(model, QuantizationTracer().trace(model), "GraphModule")
    gm.meta = dict(getattr(model, "meta", {}))
    return gm


def _fqn(gm, node):
    attrs = gm.meta.get("_observed_graph_module_attrs")
    if attrs is None:
        return None
    if node.op == "call_module":
        return node.target
    return attrs.node_name_to_scope.get(node.name, (None, None))[0] or None


def _new_name(gm, prefix):
    i = 0
    while hasattr(gm, f"{prefix}{i}"):
        i += 1
    return f"{prefix}{i}"


def _insert_after(gm, node, module, prefix, replace_uses=True):
    name = _new_name(gm, prefix)
    gm.add_module(name, module)
    users = list(node.users)
    with gm.graph.inserting_after(node):
        new = gm.graph.create_node("call_module", name, (node,), {})
    if replace_uses:
        for user in users:
            user.replace_input_with(node, new)
    return new


def _rebuild(gm):
    gm.graph.lint()
    out = GraphModule(gm, gm.graph, "GraphModule")   # submodules in node order
    out.meta = gm.meta
    return out


def _num_logged_args(node):
    """How many inputs of a node are logged: the two operands of add/mul, a list argument's
    elements, else the first input (as torch: parameters, scales are not inputs)."""
    import operator
    binary = (operator.add, operator.mul, ember.add, ember.mul, ember.ops.quantized.add,
              ember.ops.quantized.mul)        # add_relu/mul_relu: one, as torch counts
    if node.op == "call_function" and node.target in binary:
        return 2
    if node.args and isinstance(node.args[0], (list, tuple)):
        return len(node.args[0])
    return 1


def _input_nodes(node):
    """(index_of_arg, index_within_arg, node) of a node's positional tensor inputs."""
    out = []
    for i, arg in enumerate(node.args):
        if isinstance(arg, Node):
            out.append((i, 0, arg))
        elif isinstance(arg, (list, tuple)):
            out.extend((i, j, a) for j, a in enumerate(arg) if isinstance(a, Node))
    return out


def add_loggers_to_model(gm, subgraphs, logger_cls, model_name, should_log_inputs):
    """``subgraphs``: [(ref_name, NSSubgraph)]; a logger after each end node and, when
    ``should_log_inputs``, one just before each start node on its inputs. As in torch, a
    logger takes the place of the value it logs for every later node."""
    starts = {sub.start_node: (ref, sub) for ref, sub in subgraphs}
    ends = {sub.end_node: (ref, sub) for ref, sub in subgraphs}
    graph, env = Graph(), {}
    for node in gm.graph.nodes:
        if should_log_inputs and node in starts:
            ref_name, sub = starts[node]
            ref_type = get_target_type_str(sub.base_op_node, gm)
            for index_of_arg, index_within_arg, arg in _input_nodes(node)[
                    :_num_logged_args(node)]:
                current = env[arg]
                logger = logger_cls(node.name, current.name, model_name, ref_name,
                                    _type_str_in(current, gm), ref_type, "node_input",
                                    index_within_arg, index_of_arg, _fqn(gm, node))
                logged = _add_logger(gm, graph, current, logger, f"{current.name}_ns_logger_")
                if not isinstance(node.args[index_of_arg], (list, tuple)):
                    env[arg] = logged        # list elements (cat) keep their value
        new = graph.node_copy(node, env.__getitem__)
        env[node] = new
        if node in ends:
            ref_name, sub = ends[node]
            logger = logger_cls(node.name, node.name, model_name, ref_name,
                                get_target_type_str(node, gm),
                                get_target_type_str(sub.base_op_node, gm), "node_output", 0,
                                0, _fqn(gm, sub.start_node))
            env[node] = _add_logger(gm, graph, new, logger, f"{node.name}_ns_logger_")
    gm.graph = graph
    return _rebuild(gm)


def _type_str_in(node, gm):
    """Type string of a node of the graph being built (loggers added so far included)."""
    if node.op == "call_module" and not hasattr(gm, node.target.split(".")[0]):
        return ""
    return get_target_type_str(node, gm)


def _add_logger(gm, graph, value, logger, prefix):
    name = _new_name(gm, prefix)
    gm.add_module(name, logger)
    return graph.create_node("call_module", name, (value,), {}, name)


_PASSTHROUGH_METHODS = {"reshape", "view", "flatten", "permute", "transpose", "contiguous",
                        "squeeze", "unsqueeze", "relu", "sigmoid", "tanh", "mean", "detach",
                        "clamp", "repeat", "repeat_interleave", "chunk", "to"}
# quantized ops whose output torch does not type (binary ops and cat): what follows them
# has an unknown input type, and gets no shadow
_UNTYPED_QUANTIZED = {"add", "add_relu", "mul", "mul_relu", "cat", "cat_relu", "matmul",
                      "add_scalar", "mul_scalar"}


def _kind(node, gm):
    """"int8" (a quantized op or module: takes and gives quantized tensors), "fp32", or
    "either" (loggers and ops that run on both: pools, flatten, relu, reshape...), as the
    Numeric Suite types nodes to decide whether a shadow's input needs a dequantize."""
    from ember.ao.quantization.backend_config import ObservationType, get_native_backend_config
    if not isinstance(node, Node) or node.op in ("placeholder", "get_attr"):
        return "fp32"
    if node.op == "call_function":
        target = node.target
        if target is ember.quantize_per_tensor or target is ember.quantize_per_channel:
            return "int8"
        if target is ember.dequantize:
            return "fp32"
        if getattr(target, "_namespace", None) == "quantized":
            return None if target.__name__ in _UNTYPED_QUANTIZED else "int8"
    elif node.op == "call_method":
        if node.target == "dequantize":
            return "fp32"
        return "either" if node.target in _PASSTHROUGH_METHODS else "fp32"
    else:
        mod = gm.get_submodule(node.target)
        path = type(mod).__module__
        if type(mod).__name__.endswith("Logger"):
            return "either"
        if path.startswith(("ember.ao.nn.quantized.dynamic",
                            "ember.ao.nn.intrinsic.quantized.dynamic")):
            return "fp32"
        if path.startswith(("ember.ao.nn.quantized", "ember.ao.nn.intrinsic.quantized")):
            return "fp32" if type(mod).__name__ == "DeQuantize" else "int8"
    shared = {c.pattern for c in get_native_backend_config().configs
              if not isinstance(c.pattern, tuple) and (
                  c.observation_type is ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT or
                  any(d.output_dtype_with_constraints.scale_exact_match is not None
                      for d in c.dtype_configs))}        # and sigmoid, tanh...
    kind = type(gm.get_submodule(node.target)) if node.op == "call_module" else node.target
    if kind in shared or _functional_alias(kind) in shared:
        return "either"
    return "fp32"


def _io_type(node, gm):
    """"int8", "fp32" or None (unknown) for the value ``node`` produces."""
    kind = _kind(node, gm)
    if kind != "either":
        return kind
    first = next(iter(node.all_input_nodes), None)
    return _io_type(first, gm) if first is not None else "fp32"


def _input_type(node, gm):
    """The type of what ``node`` takes: its own for int8/fp32 ops, its input's for the
    ops that run on either."""
    kind = _kind(node, gm)
    if kind == "either":
        first = next(iter(node.all_input_nodes), None)
        return _io_type(first, gm) if first is not None else "fp32"
    return kind


def _functional_alias(target):
    from ember.ao.quantization.fx.prepare import _canonical
    return _canonical(target) if callable(target) and not isinstance(target, type) else target


def _normalized_kwargs(fn, args, kwargs, skip_self=False):
    """Arguments as keywords, defaults filled (torch's normalized shadow-copy calls)."""
    try:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1 if skip_self else 0:]
        sig = sig.replace(parameters=params)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    out = {}
    for name, value in bound.arguments.items():
        kind = sig.parameters[name].kind
        if kind is inspect.Parameter.KEYWORD_ONLY and name not in kwargs:
            continue
        if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            return None
        out[name] = value
    return out


def _chain(sub):
    nodes, node = [sub.end_node], sub.end_node
    while node is not sub.start_node:
        node = node.args[0]
        nodes.append(node)
    return nodes[::-1]


def _is_observer(node, gm):
    from ember.ao.quantization.fake_quantize import FakeQuantizeBase
    from ember.ao.quantization.observer import ObserverBase
    return node.op == "call_module" and \
        isinstance(gm.get_submodule(node.target), (ObserverBase, FakeQuantizeBase))


def _shadowed_nodes(sub, gm):
    """The nodes of model A's subgraph a shadow copies: with the observer after it when A
    is a prepared model (as torch's copy)."""
    nodes = _chain(sub)
    observers = [u for u in nodes[-1].users if _is_observer(u, gm)]
    return nodes + observers[:1] if len(observers) == 1 else nodes


def _normalizes_module_call(mod):
    """torch writes shadow calls of torch.nn's own modules with keyword arguments, others
    (fused, observers...) positionally."""
    return type(mod).__module__.startswith("ember.nn.modules")


def create_a_shadows_b(name_a, gm_a, name_b, gm_b, pairs, logger_cls, should_log_inputs):
    """Model B with a logger after each matched subgraph and, next to it, a float copy of
    model A's subgraph fed B's (dequantized) inputs, logged too."""
    if should_log_inputs:
        raise NotImplementedError("add_shadow_loggers(should_log_inputs=True) is not "
                                  "supported")
    graph = gm_b.graph
    # as torch, said on stdout: subgraphs of several inputs (add, cat), and those whose
    # input type is unknown (after an add or cat), get no shadow
    skipped = set()
    order = {n: i for i, n in enumerate(gm_b.graph.nodes)}
    for ref_name, (sub_a, sub_b) in sorted(pairs, key=lambda p: order[p[1][1].start_node]):
        start_b = sub_b.start_node
        if _num_logged_args(sub_a.start_node) != 1 or not start_b.args or \
                isinstance(start_b.args[0], (list, tuple)):
            reason = "unsupported"
        elif _input_type(start_b, gm_b) is None:
            reason = "unknown dtype cast"
        else:
            continue
        skipped.add(ref_name)
        print(f"skipping shadow loggers for node_b: {get_target_type_str(start_b, gm_b)}, "
              f"start_node_a: {get_target_type_str(sub_a.start_node, gm_a)}, {reason}")
    for ref_name, (sub_a, sub_b) in pairs:
        if ref_name in skipped:
            continue
        start_b, end_b = sub_b.start_node, sub_b.end_node
        logger_b = logger_cls(end_b.name, end_b.name, name_b, ref_name,
                              get_target_type_str(end_b, gm_b),
                              get_target_type_str(sub_b.base_op_node, gm_b), "node_output",
                              0, 0, _fqn(gm_b, start_b))
        logger_b_node = _insert_after(gm_b, end_b, logger_b, f"{end_b.name}_ns_logger_b_")
        inputs = {}
        cast_input = _input_type(start_b, gm_b) == "int8"
        with graph.inserting_before(logger_b_node):
            casts = 0
            for index_of_arg, arg in enumerate(start_b.args[:_num_logged_args(start_b)]):
                items = arg if isinstance(arg, (list, tuple)) else [arg]
                if not any(isinstance(a, Node) for a in items):
                    continue
                new_items = []
                for a in items:
                    if isinstance(a, Node) and cast_input:
                        a = graph.create_node("call_function", ember.dequantize, (a,), {},
                                              name=f"{start_b.name}_dtype_cast_{casts}")
                        casts += 1
                    new_items.append(a)
                inputs[index_of_arg] = type(arg)(new_items) if isinstance(
                    arg, (list, tuple)) else new_items[0]
            prev = None
            copied = _shadowed_nodes(sub_a, gm_a)
            for i, node_a in enumerate(copied):
                name = f"{start_b.name}_shadow_copy_{i}"
                args = list(node_a.args)
                if prev is None:
                    for k in range(len(args)):
                        if k in inputs:
                            args[k] = inputs[k]
                        elif isinstance(args[k], Node):
                            args[k] = _copy_attr(gm_a, gm_b, args[k], name, k)
                else:
                    args[0] = prev
                    args = [_copy_attr(gm_a, gm_b, a, name, k) if isinstance(a, Node) and
                            a is not prev else a for k, a in enumerate(args)]
                if node_a.op == "call_module":
                    mod = copy.deepcopy(gm_a.get_submodule(node_a.target))
                    gm_b.add_module(name, mod)
                    kw = _normalized_kwargs(type(mod).forward, args, node_a.kwargs, True) \
                        if _normalizes_module_call(mod) else None
                    prev = graph.create_node("call_module", name,
                                             () if kw is not None else tuple(args),
                                             kw if kw is not None else dict(node_a.kwargs),
                                             name=name)
                else:
                    kw = _normalized_kwargs(node_a.target, args, node_a.kwargs) \
                        if node_a.op == "call_function" else None
                    prev = graph.create_node(node_a.op, node_a.target,
                                             () if kw is not None else tuple(args),
                                             kw if kw is not None else dict(node_a.kwargs),
                                             name=name)
            logger_a = logger_cls(prev.name, prev.name, name_a, ref_name,
                                  get_target_type_str(copied[-1], gm_a),
                                  get_target_type_str(sub_a.base_op_node, gm_a),
                                  "node_output", 0, 0, _fqn(gm_a, sub_a.start_node))
            _insert_after(gm_b, prev, logger_a, f"{prev.name}_ns_logger_a_",
                          replace_uses=False)
    return _rebuild(gm_b)


def _copy_attr(gm_a, gm_b, node, name, k):
    """A get_attr argument of model A's op (a weight), copied into model B as
    ``<attribute>_shadow_copy_<n>``."""
    if not isinstance(node, Node):
        return node
    if node.op != "get_attr":
        raise NotImplementedError(f"add_shadow_loggers: the shadow copy of an op whose "
                                  f"argument {node.name} ({node.op}) is not a graph input of "
                                  f"the subgraph is not supported")
    value = gm_a
    for part in node.target.split("."):
        value = getattr(value, part)
    attr = _new_name(gm_b, node.target.replace(".", "_") + "_shadow_copy_")
    if isinstance(value, ember.nn.Parameter):
        gm_b.register_parameter(attr, ember.nn.Parameter(value.detach().clone(),
                                                         value.requires_grad))
    else:
        setattr(gm_b, attr, value.detach().clone() if isinstance(value, ember.Tensor)
                else value)
    return gm_b.graph.create_node("get_attr", attr, (), {}, attr)
