"""The graph behind ``SummaryWriter.add_graph``: run a model once under a dispatcher mode
that records every op call, then describe the run as a TensorBoard ``GraphDef``.

    trace = trace_model(model, example_inputs)    # GraphTrace: nodes in run order
    graph_def, run_metadata = trace.to_protos()   # tensorboard's own protobufs

Every dispatched op becomes one node (a composite op is one node: its inner ops run below
the tracer). Node names are ``<scope>/<op>_<n>``, the scope being the path of module calls
that were open when the op ran, each written ``ClassName[attribute]`` under the root's
class name (``Net/Sequential[body]/Linear[0]``). Edges come from tensor identity: each op
input refers to the node that produced that tensor object (``node`` or ``node:k`` for the
k-th output). Tensors the tracer never saw being made get a node of their own where they
are first used: ``prim::GetAttr`` for the model's parameters and buffers (in the owning
module's scope), ``prim::Constant`` for anything else. Model inputs and outputs are
``IO Node``s under ``input/`` and ``output/``.

Only ``to_protos`` needs ``tensorboard``; it imports it when called.
"""
from __future__ import annotations

import inspect
import time

from ember._dispatch import Mode
from ember._tensor import Tensor

__all__ = ["GraphTrace", "GraphTracer", "trace_model"]

# numpy dtype name -> tensorboard DataType enum name
_TB_DTYPES = {
    "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF",
    "bfloat16": "DT_BFLOAT16", "int8": "DT_INT8", "int16": "DT_INT16", "int32": "DT_INT32",
    "int64": "DT_INT64", "uint8": "DT_UINT8", "uint16": "DT_UINT16", "uint32": "DT_UINT32",
    "uint64": "DT_UINT64", "bool": "DT_BOOL", "complex64": "DT_COMPLEX64",
    "complex128": "DT_COMPLEX128",
}


class GraphNode:
    """One node: ``op`` is its type (``aten::addmm``, ``IO Node`` ...), ``inputs`` the
    references of the values it reads, ``shapes``/``dtypes`` one entry per output tensor,
    ``attr`` a one-line text of its non-tensor arguments."""

    __slots__ = ("name", "op", "inputs", "shapes", "dtypes", "attr", "op_name",
                 "start", "duration")

    def __init__(self, name, op, inputs=(), outputs=(), attr="", op_name="",
                 start=0.0, duration=0.0):
        self.name = name
        self.op = op
        self.inputs = list(inputs)
        self.shapes = [tuple(t.shape) for t in outputs]
        self.dtypes = [t._data.dtype.name for t in outputs]
        self.attr = attr
        self.op_name = op_name
        self.start = start
        self.duration = duration

    def __repr__(self):
        outs = ", ".join(f"{d}{list(s)}" for s, d in zip(self.shapes, self.dtypes))
        args = ", ".join(self.inputs)
        extra = f" {self.attr}" if self.attr else ""
        return f"{self.name} = {self.op}({args}){extra} -> ({outs})"


def _tensors(value, found=None):
    """The tensors in ``value`` (nested tuples, lists and dict values), in order."""
    found = [] if found is None else found
    if isinstance(value, Tensor):
        found.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _tensors(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors(v, found)
    return found


def _short(v):
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_short(x) for x in v) + "]"
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."


class GraphTracer(Mode):
    """Dispatcher mode that records one :class:`GraphNode` per op call. Scopes are pushed
    with :meth:`enter_scope` / :meth:`exit_scope` (``trace_model`` does it from module
    hooks); ``params`` maps ``id(tensor)`` to ``(scope, attribute name, kind)``."""

    def __init__(self, root_scope, params=None):
        self.nodes: list[GraphNode] = []
        self.scopes = [root_scope]
        self.params = params or {}
        self._producer = {}        # id(tensor) -> reference ("node" or "node:k")
        self._keep = []            # the traced tensors, alive so their ids stay unique
        self._names = set()
        self._count = 0

    # -- scopes and names
    def enter_scope(self, scope):
        self.scopes.append(scope)

    def exit_scope(self):
        if len(self.scopes) > 1:
            self.scopes.pop()

    def unique_name(self, name):
        """``name``, or ``name_k`` when taken."""
        base, k = name, 1
        while name in self._names:
            name = f"{base}_{k}"
            k += 1
        self._names.add(name)
        return name

    def _add(self, node):
        self.nodes.append(node)
        return node

    # -- values
    def bind(self, tensor, ref):
        """Say ``tensor`` is the value ``ref`` (a node name, ``name:k`` for output k)."""
        self._keep.append(tensor)
        self._producer[id(tensor)] = ref

    def ref(self, tensor):
        """The reference of ``tensor``'s producer; makes a parameter/constant node for a
        tensor of unknown origin."""
        r = self._producer.get(id(tensor))
        if r is not None:
            return r
        owner = self.params.get(id(tensor))
        if owner is not None:
            scope, attr, kind = owner
            name = self.unique_name(f"{scope}/{attr}")
            self._add(GraphNode(name, "prim::GetAttr", (), (tensor,),
                                f"{{ {kind} : {attr} }}"))
        else:
            name = self.unique_name(f"{self.scopes[-1]}/constant_{self._count}")
            self._count += 1
            self._add(GraphNode(name, "prim::Constant", (), (tensor,),
                                "{ tensor made outside the traced ops }"))
        self.bind(tensor, name)
        return name

    # -- the mode
    def __ember_dispatch__(self, op, args, kwargs):
        inputs = [self.ref(t) for t in _tensors(list(args))]
        out = kwargs.get("out")
        if out is not None:
            inputs += [self.ref(t) for t in _tensors(out)]
        start = time.time()
        t0 = time.perf_counter()
        result = op(*args, **kwargs)
        duration = time.perf_counter() - t0
        outputs = _tensors(result)
        public = getattr(op, "public_name", None) or getattr(op, "__name__", "op")
        stem = public.rstrip("_") or public
        name = self.unique_name(f"{self.scopes[-1]}/{stem}_{self._count}")
        self._count += 1
        argnames = getattr(op, "argnames", ())
        attr = ", ".join(f"{n} : {_short(a)}" for n, a in zip(argnames, args)
                         if a is not None and not _tensors(a))
        if result is not None and not outputs:    # an op whose result is not a tensor
            attr = ", ".join(filter(None, [attr, f"returns : {type(result).__name__}"]))
        self._add(GraphNode(name, "aten::" + public, inputs, outputs,
                            "{" + (f" {attr} " if attr else "") + "}",
                            getattr(op, "name", public), start, duration))
        for k, t in enumerate(outputs):
            self.bind(t, name if k == 0 else f"{name}:{k}")
        return result


class GraphTrace:
    """The recorded run: ``nodes`` in the order they were made (inputs first, outputs
    last)."""

    def __init__(self, nodes):
        self.nodes = nodes

    def __str__(self):
        return "\n".join(repr(n) for n in self.nodes)

    def to_protos(self):
        """``(GraphDef, RunMetadata)`` with tensorboard's protobufs: every node carries an
        ``attr`` string and, when it has tensor outputs, ``_output_shapes`` and
        ``dtype`` lists; the run metadata holds each op's timing and outputs on
        ``/device:CPU:0``."""
        from tensorboard.compat.proto import (attr_value_pb2, config_pb2, graph_pb2,
                                              node_def_pb2, step_stats_pb2,
                                              tensor_description_pb2, tensor_shape_pb2,
                                              types_pb2, versions_pb2)
        AttrValue, Shape = attr_value_pb2.AttrValue, tensor_shape_pb2.TensorShapeProto

        def shape_proto(s):
            return Shape(dim=[Shape.Dim(size=int(d)) for d in s])

        def dtype_enum(d):
            return types_pb2.DataType.Value(_TB_DTYPES.get(d, "DT_INVALID"))

        node_defs, stats = [], []
        for n in self.nodes:
            attr = {"attr": AttrValue(s=n.attr.encode())}
            if n.shapes:
                attr["_output_shapes"] = AttrValue(list=AttrValue.ListValue(
                    shape=[shape_proto(s) for s in n.shapes]))
                attr["dtype"] = AttrValue(list=AttrValue.ListValue(
                    type=[dtype_enum(d) for d in n.dtypes]))
            if n.op_name:
                attr["ember_op"] = AttrValue(s=n.op_name.encode())
            node_defs.append(node_def_pb2.NodeDef(name=n.name, op=n.op, input=n.inputs,
                                                  attr=attr, device="/device:CPU:0"))
            if n.op_name:
                micros = max(int(n.duration * 1e6), 1)
                stats.append(step_stats_pb2.NodeExecStats(
                    node_name=n.name, all_start_micros=int(n.start * 1e6),
                    op_start_rel_micros=0, op_end_rel_micros=micros,
                    all_end_rel_micros=micros,
                    output=[step_stats_pb2.NodeOutput(
                        slot=k, tensor_description=tensor_description_pb2.TensorDescription(
                            dtype=dtype_enum(d), shape=shape_proto(s)))
                        for k, (s, d) in enumerate(zip(n.shapes, n.dtypes))]))
        graph_def = graph_pb2.GraphDef(node=node_defs,
                                       versions=versions_pb2.VersionDef(producer=22))
        run_metadata = config_pb2.RunMetadata(step_stats=step_stats_pb2.StepStats(
            dev_stats=[step_stats_pb2.DeviceStepStats(device="/device:CPU:0",
                                                      node_stats=stats)]))
        return graph_def, run_metadata


def _input_names(fn, n):
    """Names for ``n`` positional inputs: ``fn``'s parameter names, ``input.k`` past them."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i].name if i < len(params) else f"input.{i}" for i in range(n)]


def _check_callable_with(fn, args, label):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*args)
    except TypeError as e:
        what = "no input_to_model was given" if not args else \
            f"input_to_model gave {len(args)} input(s)"
        raise RuntimeError(
            f"add_graph: cannot call {label} with the example inputs ({what}): {e}. "
            "Pass input_to_model as a "
            "tensor, or a tuple of tensors for a forward taking several.") from None


def trace_model(model, input_to_model=None):
    """Run ``model(*inputs)`` once in eval mode without autograd, recording its graph;
    training flags are restored afterwards. ``input_to_model``: a tensor, a tuple/list of
    positional inputs, or None for a model taking none."""
    import ember
    from ember.nn import Module

    if input_to_model is None:
        args = ()
    elif isinstance(input_to_model, (tuple, list)):
        args = tuple(input_to_model)
    else:
        args = (input_to_model,)
    is_module = isinstance(model, Module)
    forward = model.forward if is_module else model
    root = type(model).__name__ if is_module else getattr(model, "__name__", "model")
    _check_callable_with(forward, args, f"{root}.forward" if is_module else root)

    params, module_scope = {}, {}
    if is_module:
        for path, m in model.named_modules():
            if not path:
                module_scope[id(m)] = root
                continue
            parent, _, attr = path.rpartition(".")
            base = module_scope.get(id(model.get_submodule(parent)) if parent else id(model),
                                    root)
            module_scope.setdefault(id(m), f"{base}/{type(m).__name__}[{attr}]")
        for kind, named in (("parameter", model.named_parameters()),
                            ("buffer", model.named_buffers())):
            for path, t in named:
                owner, _, attr = path.rpartition(".")
                m = model.get_submodule(owner) if owner else model
                params[id(t)] = (module_scope[id(m)], attr, kind)

    tracer = GraphTracer(root, params)
    inputs = []
    for name, a in zip(_input_names(forward, len(args)), args):
        if isinstance(a, Tensor):
            node_name = tracer.unique_name(f"input/{name}")
            inputs.append(GraphNode(node_name, "IO Node", (), (a,)))
            tracer.bind(a, node_name)

    handles, modes = [], []
    if is_module:
        def pre(m, _args):
            tracer.enter_scope(module_scope[id(m)])

        def post(m, _args, _out):
            tracer.exit_scope()

        for m in model.modules():
            if m is model:
                continue
            modes.append((m, m.training))
            handles.append(m.register_forward_pre_hook(pre, prepend=True))
            handles.append(m.register_forward_hook(post, always_call=True))
        modes.append((model, model.training))
        model.eval()
    try:
        with ember.no_grad(), tracer:
            result = model(*args)
    finally:
        for h in handles:
            h.remove()
        for m, flag in modes:
            m.training = flag

    outputs = []
    for k, t in enumerate(_tensors(result), 1):
        outputs.append(GraphNode(tracer.unique_name(f"output/output.{k}"), "IO Node",
                                 [tracer.ref(t)], (t,)))
    return GraphTrace(inputs + tracer.nodes + outputs)
