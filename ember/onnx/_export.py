"""The converter: an ``ember.jit`` Graph -> an ONNX ModelProto.

Every IR node is converted in order. Its example outputs are computed from its inputs'
example values (the run that the trace recorded), so symbolic functions know dtypes and
shapes. A node whose inputs are all known at export time (constants, parameters) is
folded into a constant; any other goes through its symbolic function (``_symbolic``).
``prim::If`` / ``prim::Loop`` on values only known at run time become ONNX ``If`` /
``Loop`` with their blocks as subgraphs.
"""
from __future__ import annotations

import itertools

import ember
from ember.onnx._graph import GraphContext, Unavailable, V, scalar_dtype, to_numpy, value_info
from ember.onnx._prim import _PRIM, _elements, _indexing
from ember.onnx.errors import OnnxExporterError, UnsupportedOperatorError

_SMALL = 64     # constants with at most this many elements become Constant nodes


class Exporter:
    """One export: the opset, the options, the initializers and the names given out."""

    def __init__(self, opset, *, fold=True, dynamic=False, param_names=None,
                 training=False):
        self.opset = _opset[0] = opset
        self.fold = fold
        self.dynamic = dynamic            # some input has a dynamic axis
        self.param_names = param_names or {}     # id(tensor) -> state_dict name
        self.training = training          # TrainingMode.TRAINING (symbolics may look)
        self.initializers = {}            # name -> numpy array
        self._const_cache = {}            # (id, dtype) -> name
        self._keep = []                   # tensors whose ids are cached
        self._counter = itertools.count()
        self._used = set()

    # ---------------------------------------------------------------- names and constants
    def fresh(self, hint="v"):
        while True:
            name = f"{hint}_{next(self._counter)}"
            if name not in self._used:
                self._used.add(name)
                return name

    def reserve(self, name):
        if name in self._used:
            raise OnnxExporterError(f"the name {name!r} is used twice")
        self._used.add(name)
        return name

    def constant(self, g, value, dtype=None):
        key = None
        if isinstance(value, ember.Tensor):
            key = (id(value), dtype)
            hit = self._const_cache.get(key)
            if hit is not None:
                return hit
        arr = to_numpy(value, dtype)
        pname = self.param_names.get(id(value)) if isinstance(value, ember.Tensor) else None
        if pname is not None and (dtype is None or dtype == value.dtype):
            name = pname
            self.initializers[name] = arr
        elif arr.size > _SMALL:
            name = self.fresh("onnx::Const")
            self.initializers[name] = arr
        else:
            from onnx import numpy_helper
            name = g.fresh("Constant")
            g.nodes.append(_make_constant(name, numpy_helper.from_array(arr)))
            key = None              # Constant nodes live in one (sub)graph: no reuse
        if key is not None:
            self._const_cache[key] = name
            self._keep.append(value)
        return name

    # ---------------------------------------------------------------- blocks and nodes
    def convert_block(self, g, block, env):
        for n in block.nodes:
            self.convert_node(g, n, env)
        return [env[v.id] for v in block.returns]

    def convert_node(self, g, n, env):
        k = n.kind
        handler = _PRIM.get(k)
        if handler is None and "_index" in n.attrs and n.op is None and n.fn is None:
            handler = _indexing
        if handler is not None:
            handler(self, g, n, env)
            return
        self.convert_op(g, n, env)

    def convert_op(self, g, n, env):
        ins = [env[v.id] for v in n.inputs]
        examples = [i.example for i in ins]
        if _mutates(n):     # the model's parameters and buffers stay as they are
            examples = [e.clone() if isinstance(e, ember.Tensor) else e for e in examples]
        outs = _as_outputs(_evaluate(n, examples), len(n.outputs))
        if all(i.static for i in ins) and not _random(n) and \
                (self.fold or not any(isinstance(o, ember.Tensor) for o in outs)):
            results = [V(value=o) for o in outs]
        else:
            fn, by_callable = self.symbolic_for(n)
            if fn is _TRACE_THROUGH:
                for o, r in zip(n.outputs, self.trace_through(g, n, ins, outs)):
                    env[o.id] = r
                return
            g.node, g.outs, g.ins = n, outs, ins
            nkw = len(n.kwnames) if by_callable else 0
            try:
                if nkw:
                    ret = fn(g, *ins[:-nkw], **dict(zip(n.kwnames, ins[-nkw:])))
                else:
                    ret = fn(g, *ins)
            finally:
                g.node, g.outs, g.ins = None, (), ()
            results = _wrap(ret, outs, n)
        for o, r in zip(n.outputs, results):
            env[o.id] = r
        if _inplace(n) and n.inputs:
            env[n.inputs[0].id] = results[0]

    def symbolic_for(self, n):
        """(symbolic, whether it is keyed by the node's Python callable)."""
        from ember.onnx import _registry
        k = n.kind
        custom = _registry.lookup_custom(k, self.opset)
        if custom is not None:
            return custom, False
        module = getattr(n.fn, "__module__", None) or ""
        if n.fn is not None:
            fn = _registry.lookup_python(n.fn)
            if fn is not None:
                return fn, True
        fn = None
        if not module.startswith("ember.nn.functional"):
            # (an nn.functional function's parameters need not follow the op's schema)
            fn = _registry.lookup(k, self.opset)
            if fn is None and k.endswith("_") and not k.endswith("__"):
                fn = _registry.lookup(k[:-1], self.opset)
        if fn is None and n.fn is not None and module.startswith("ember."):
            return _TRACE_THROUGH, True         # trace the call instead
        if fn is None:
            name = k if k.startswith(("aten::", "prim::")) or "::" in k else "aten::" + k
            raise UnsupportedOperatorError(name, self.opset, _registry.first_opset(k))
        return fn, False

    def trace_through(self, g, n, ins, outs):
        """A Python function of ember's that no symbolic covers (a scripted graph's
        ``F.multi_head_attention_forward``): traced on the example values, its graph
        converted in place of the call."""
        import warnings
        from ember import jit
        from ember.jit._passes import clone_graph, inline_calls
        nkw = len(n.kwnames)
        dyn = [k for k, v in enumerate(ins) if not v.static]
        if any(not isinstance(ins[k].example, ember.Tensor) or ins[k].items is not None
               for k in dyn):
            raise UnsupportedOperatorError(n.kind, self.opset, None)
        statics = [v.value.detach() if isinstance(v.value, ember.Tensor) else v.value
                   for v in ins]
        leaves, shape = _leaves(outs[0] if len(outs) == 1 else tuple(outs))
        from ember.onnx._patches import patched, replacement
        target = replacement(n.fn)

        def call(*tensors):
            vals = list(statics)
            for k, t in zip(dyn, tensors):
                vals[k] = t
            pos, kw = vals[:len(vals) - nkw], dict(zip(n.kwnames, vals[len(vals) - nkw:]))
            out = target(*pos, **kw)
            return tuple(x for x in _leaves(out)[0] if isinstance(x, ember.Tensor))
        with patched(None), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = jit.trace(call, tuple(ins[k].example for k in dyn), check_trace=False)
        graph = clone_graph(traced.graph)
        inline_calls(graph)
        env = {p.id: ins[k] for p, k in zip(graph.inputs(), dyn)}
        (ret,) = self.convert_block(g, graph.block, env)
        tensors = iter(_elements(ret) if ret.items is not None or isinstance(ret.value, tuple)
                       else [ret])
        filled = [next(tensors) if isinstance(x, ember.Tensor) else V(value=x) for x in leaves]
        result = _rebuild(shape, iter(filled))
        return [result] if len(outs) == 1 else _elements(result)

    # ---------------------------------------------------------------- subgraphs
    def subgraph(self, g, block, params, name, outer):
        """``block`` as an ONNX graph whose inputs are ``params`` (list of (name, example))."""
        from onnx import helper
        sub = GraphContext(self, parent=g)
        env = dict(outer)           # outer-scope values are visible in ONNX subgraphs
        inputs = []
        for p, (pname, example) in zip(block.params, params):
            env[p.id] = V(name=pname, example=example)
            inputs.append(value_info(pname, example, unknown=True))
        rets = self.convert_block(sub, block, env)
        outputs, examples = [], []
        for r in rets:
            name = sub.op("Identity", sub.input(r, scalar_dtype(r.example)))
            outputs.append(value_info(name, r.example, unknown=True))
            examples.append(r.example)
        return helper.make_graph(sub.nodes, self.fresh(name), inputs, outputs), rets


_TRACE_THROUGH = object()


def _leaves(x):
    """(leaves, structure) of nested tuples/lists."""
    if isinstance(x, (tuple, list)):
        parts = [_leaves(e) for e in x]
        return [leaf for p in parts for leaf in p[0]], (type(x), [p[1] for p in parts])
    return [x], None


def _rebuild(shape, leaves):
    if shape is None:
        return next(leaves)
    kind, parts = shape
    items = [_rebuild(p, leaves) for p in parts]
    return V(items=items, example=kind(i.example for i in items))


def _make_constant(name, tensor):
    from onnx import helper
    return helper.make_node("Constant", [], [name], value=tensor)


_RANDOM = {"aten::rand", "aten::randn", "aten::rand_like", "aten::randn_like",
           "aten::bernoulli", "aten::bernoulli_", "aten::uniform_", "aten::normal_",
           "aten::normal", "aten::randint", "aten::randint_like", "aten::randperm",
           "aten::multinomial", "aten::dropout", "aten::native_dropout"}


def _random(n):
    """Random ops are never folded into constants."""
    return n.kind in _RANDOM


def _mutates(n):
    return _inplace(n) or n.kind in ("aten::_batch_norm_impl", "aten::batch_norm")


def _inplace(n):
    if n.op is not None:
        return n.op.is_inplace
    k = n.kind
    return k.startswith("aten::") and k.endswith("_") and not k.endswith("__")


_opset = [17]      # the opset of the export running (named by errors raised here)


def _evaluate(n, vals):
    with ember.no_grad():
        if n.op is not None:
            from ember import _dispatch
            return _dispatch.dispatch(n.op, tuple(vals))
        nkw = len(n.kwnames)
        if n.fn is None:
            raise UnsupportedOperatorError(n.kind, _opset[0], None)
        if nkw:
            return n.fn(*vals[:-nkw], **dict(zip(n.kwnames, vals[-nkw:])))
        return n.fn(*vals)


def _as_outputs(result, count):
    if count == 1:
        return [result]
    return list(result)


def _wrap(ret, examples, n):
    """A symbolic's return value -> one ``V`` per IR output."""
    if len(n.outputs) == 1 or not isinstance(ret, (list, tuple)):
        ret = [ret]
    if len(ret) < len(examples):
        ret = list(ret) + [None] * (len(examples) - len(ret))
    out = []
    for r, e in zip(ret, examples):
        out.append(_to_v(r, e, n))
    return out


def _to_v(r, e, n):
    if isinstance(r, V):
        if r.items is not None and isinstance(e, (list, tuple)):
            r.items = [_to_v(i, ei, n) for i, ei in zip(r.items, e)]
        r.example = e
        return r
    if isinstance(r, str):
        return V(name=r, example=e)
    if isinstance(r, (list, tuple)):
        return V(items=[_to_v(i, ei, n) for i, ei in zip(r, e)], example=e)
    if r is None:
        return V(value=Unavailable(f"output of {n.kind} is not available in the ONNX export"),
                 example=e)
    return V(value=r, example=e)



