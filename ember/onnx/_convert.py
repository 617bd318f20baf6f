"""From a model and example arguments to an ``onnx.ModelProto``: get the IR graph (trace an
eager model, take a scripted one's), inline calls, convert it (``_export.Exporter``), then
name inputs/outputs, mark dynamic axes and collect initializers."""
from __future__ import annotations

import contextlib
import warnings

import ember
from ember.onnx._export import Exporter
from ember.onnx._fuse import fuse_conv_bn, unused
from ember.onnx._graph import GraphContext, V, value_info
from ember.onnx.errors import OnnxExporterError


def _graph_of(model, args):
    """(graph, leading static inputs) for ``model``."""
    from ember import jit, nn
    from ember.jit._passes import clone_graph, inline_calls
    from ember.jit._modules import RecursiveScriptModule
    from ember.onnx._patches import patched
    if isinstance(model, RecursiveScriptModule):
        fn = model._forward_fn()
        graph, lead = clone_graph(fn.graph), [model]
        args = _with_defaults(fn.arg_schema, args)
    elif isinstance(model, jit.ScriptFunction):
        graph, lead = clone_graph(model.graph), []
        args = _with_defaults(model._function.arg_schema, args)
    else:
        with _frozen(model), patched(model), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call = model if not isinstance(model, nn.Module) else (lambda *a: model(*a))
            traced = jit.trace(call, args, check_trace=False)
        graph, lead = clone_graph(traced.graph), []
    inline_calls(graph)
    return graph, lead, args


def _with_defaults(schema, args):
    """``args`` completed with the defaults of the parameters they leave out (constants of
    the export, not inputs of the ONNX graph)."""
    out = list(args)
    for name, _, has_default, default, _ in schema[len(args):]:
        if not has_default:
            raise OnnxExporterError(f"ember.onnx.export: no value for the model's argument "
                                    f"{name!r}")
        out.append(_Default(default))
    return tuple(out)


class _Default:
    """An argument left at its default: a constant in the exported graph."""

    def __init__(self, value):
        self.value = value


@contextlib.contextmanager
def _frozen(model):
    """Parameters stop requiring grad for the trace (they become constants: initializers)."""
    from ember import nn
    params = [p for p in model.parameters() if p.requires_grad] \
        if isinstance(model, nn.Module) else []
    for p in params:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in params:
            p.requires_grad_(True)


def _param_names(model):
    from ember import nn
    if not isinstance(model, nn.Module):
        return {}
    names = {}
    for name, t in model.state_dict(keep_vars=True).items():
        names.setdefault(id(t), name)
    return names


def _rename_output(nodes, src, name, taken):
    """Give a graph output its name on the node computing it, as torch does (an Identity
    only for an input, a constant or a value already an output): False when it cannot."""
    if src in taken or not any(src in n.output for n in nodes) or any(
            a.type in (a.GRAPH, a.GRAPHS) for n in nodes for a in n.attribute):
        return False
    for n in nodes:
        for seq in (n.input, n.output):
            for j, e in enumerate(seq):
                if e == src:
                    seq[j] = name
    return True


def _flat(v):
    if v.items is not None:
        return [x for i in v.items for x in _flat(i)]
    if v.static and isinstance(v.value, (list, tuple)):
        return [x for e in v.value for x in _flat(V(value=e))]
    return [v]


def _axes_spec(dynamic_axes, name):
    spec = dynamic_axes.get(name)
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {int(k): str(v) for k, v in spec.items()}
    return {int(k): f"{name}_dynamic_axes_{i + 1}" for i, k in enumerate(spec)}


def _dims(example, axes, unknown, name=""):
    dims = [None if unknown else int(s) for s in example.shape]
    for k, n in axes.items():
        if not -len(dims) <= k < len(dims):
            raise ValueError(f"dynamic_axes: {name!r} has {len(dims)} dimensions, no axis {k}")
        dims[k] = n
    return dims


def build_model(model, args, *, opset, input_names, output_names, dynamic_axes, fold,
                export_params, keep_initializers_as_inputs, custom_opsets, training):
    from onnx import helper, numpy_helper
    from ember.onnx._patches import release
    if opset < 9 or opset > 21:
        raise ValueError(f"ember.onnx.export: opset_version {opset} (supported: 9 to 21)")
    graph, lead, args = _graph_of(model, args)
    params = graph.inputs()
    if len(params) != len(lead) + len(args):
        raise OnnxExporterError(f"the model's graph takes {len(params) - len(lead)} inputs, "
                                f"export got {len(args)} args")
    input_names = list(input_names or [])
    dynamic = any(n in dynamic_axes for n in input_names)
    ex = Exporter(opset, fold=fold, dynamic=dynamic, param_names=_param_names(model),
                  training=training)
    g = GraphContext(ex)
    env, inputs = {}, []
    for p, obj in zip(params, lead):
        env[p.id] = V(value=obj)
    given = iter(input_names)

    def graph_input(a, default, k):
        """The V of one argument: one ONNX input per tensor or number, a tuple or list of
        them flattened in order (as torch does: ``input_names`` name the leaves)."""
        if isinstance(a, (tuple, list)):
            return V(items=[graph_input(e, f"{default}_{j}", k) for j, e in enumerate(a)])
        if not isinstance(a, (ember.Tensor, bool, int, float)):
            raise OnnxExporterError(f"ember.onnx.export: input {k} is a "
                                    f"{type(a).__name__} (tensors, numbers and tuples of them)")
        name = ex.reserve(next(given, default))
        if isinstance(a, ember.Tensor):
            inputs.append(value_info(name, a, dims=_dims(a, _axes_spec(dynamic_axes, name),
                                                          False, name)))
        else:
            inputs.append(value_info(name, a))
        return V(name=name, example=a)

    for k, (p, a) in enumerate(zip(params[len(lead):], args)):
        if isinstance(a, _Default):
            env[p.id] = V(value=a.value)
            continue
        env[p.id] = graph_input(a, (p.debug_name or f"input_{k}").replace(".", "_"), k)
    try:
        rets = ex.convert_block(g, graph.block, env)
    finally:
        release()
    flat = [x for r in rets for x in _flat(r)]
    output_names = list(output_names or [])
    outputs, seen, renamed = [], set(), {}
    for k, v in enumerate(flat):
        src = g.input(v)
        src = renamed.get(src, src)
        name = output_names[k] if k < len(output_names) else f"output_{k}"
        if name != src:
            name = ex.reserve(name) if name not in seen else ex.fresh(name)
            if _rename_output(g.nodes, src, name, seen):
                renamed[src] = name
            else:
                g.nodes.append(helper.make_node("Identity", [src], [name],
                                                name=ex.fresh("Identity_n")))
        seen.add(name)
        e = v.example
        if isinstance(e, ember.Tensor):
            outputs.append(value_info(name, e, dims=_dims(e, _axes_spec(dynamic_axes, name),
                                                           dynamic, name)))
        else:
            outputs.append(value_info(name, e))
    out_names = [o.name for o in outputs]
    if fold and not training:
        g.nodes = fuse_conv_bn(ex, g.nodes, out_names)
    g.nodes = unused(ex, g.nodes, out_names)
    known = {i.name for i in inputs} | set(out_names)
    for n in dynamic_axes:
        if n not in known:
            warnings.warn(f"Provided key {n} for dynamic axes is not a valid input/output name")
    if sum(a.nbytes for a in ex.initializers.values()) >= 2 ** 31:
        raise NotImplementedError("ember.onnx.export: models over 2 GB (ONNX's external data "
                                  "files) are not supported")
    inits = [numpy_helper.from_array(arr, name) for name, arr in ex.initializers.items()]
    if keep_initializers_as_inputs or not export_params:
        inputs += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                   for t in inits]
    if not export_params:
        inits = []
    gp = helper.make_graph(g.nodes, "main_graph", inputs, outputs, initializer=inits)
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v)
                                                 for d, v in custom_opsets.items()]
    proto = helper.make_model(gp, opset_imports=opsets, producer_name="ember",
                              producer_version="0.1.0")
    proto.ir_version = max(7, helper.find_min_ir_version_for(opsets[:1]))
    if dynamic:
        _output_dims(proto)
    return proto


def _output_dims(proto):
    """With dynamic inputs, the outputs' axes not named in dynamic_axes as torch writes
    them: ONNX shape inference's dims (a number, or an input's axis name carried through),
    else ``<producing op type><output name>_dim_<axis>``."""
    from onnx import shape_inference
    try:
        inferred = shape_inference.infer_shapes(proto)
    except Exception:          # noqa: BLE001 - custom domains: keep the unknown dims
        return
    known = {vi.name: vi for vi in inferred.graph.output}
    producer = {o: n.op_type for n in proto.graph.node for o in n.output}
    for vi in proto.graph.output:
        got = known.get(vi.name)
        got_dims = list(got.type.tensor_type.shape.dim) if got is not None and \
            got.type.tensor_type.HasField("shape") else []
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.dim_param or d.HasField("dim_value"):
                continue
            g = got_dims[i] if i < len(got_dims) else None
            if g is not None and g.HasField("dim_value"):
                d.dim_value = g.dim_value
            elif g is not None and g.dim_param and not g.dim_param.startswith("unk__"):
                d.dim_param = g.dim_param
            else:
                d.dim_param = f"{producer.get(vi.name, '')}{vi.name}_dim_{i}"
