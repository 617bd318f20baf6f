"""``jit.trace`` / ``jit.trace_module``: record the ops of one run into the IR.

A dispatcher ``Mode`` (``_TraceMode``) sees every op of the run. Each op becomes an
``aten::<name>`` node carrying its op record (``node.op``) with schema-ordered inputs;
tensors map to Values by ``id`` (the tracer keeps them alive), non-tensor arguments become
``prim::Constant`` nodes and tensors the run did not make (``ember.tensor(...)``, captured
globals) tensor constants.

Modules keep their hierarchy as torch's tracer does: every submodule's ``forward`` is
shadowed for the run, so a call becomes ``prim::CallMethod[name="forward"]`` in the
caller's graph and the callee's ops go into a graph of its own (a second call of the same
submodule makes ``forward1``...). Parameters and buffers are ``prim::GetAttr`` chains,
hoisted to the top of each graph in the order torch prints them. The graphs compile through
``_script.Function`` (codegen), so traced code runs every op through the dispatcher:
outputs and gradients equal eager.

Converting a traced tensor to a Python value (``item``, ``bool``, ``int``, ``float``,
``tolist``, ``numpy``) warns ``TracerWarning``: the value is baked into the trace.
"""
from __future__ import annotations

import difflib
import functools
import inspect
import os
import sys
import threading
import warnings
from dataclasses import dataclass

from ember._dispatch import Mode
from ember._state import state
from ember.jit import _types as T
from ember.jit._ir import Graph, Node, SourceRange
from ember.jit._modules import RecursiveScriptModule


class TracerWarning(Warning):
    """A Python value was baked into a trace (it may not generalize to other inputs)."""

    @staticmethod
    def ignore_lib_warnings():
        warnings.filterwarnings("ignore", category=TracerWarning, module="ember(?!\\.jit)")


class TracingCheckError(Exception):
    """``check_trace`` found that re-tracing gives another graph."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        parts = ["Tracing failed sanity checks!"]
        for text, detail in ((extra_msg, None),
                             (graph_diff_error and "ERROR: Graphs differed across invocations!",
                              graph_diff_error),
                             (tensor_compare_error and _CONSTANTS_DIFFER, tensor_compare_error)):
            if text:
                parts.append(text)
            if detail:
                parts.append(_indent(detail))
        self.message = "\n".join(parts) + "\n"
        super().__init__(self.message)


_CONSTANTS_DIFFER = ("ERROR: Tensor-valued Constant nodes differed in value across invocations. "
                     "This often indicates that the tracer has encountered untraceable code.")


def _indent(s):
    return "\n".join("\t" + line for line in s.splitlines())


# --------------------------------------------------------------------------- types

_DTYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble", "complex32": "ComplexHalf"}


@dataclass(frozen=True)
class CompleteTensorType(T.JitType):
    """A traced tensor's type as torch prints it: ``Float(2, 3, strides=[3, 1],
    requires_grad=0, device=cpu)``; ``Tensor`` in source."""
    text: str

    def __str__(self):
        return self.text

    @property
    def annotation(self):
        return "Tensor"


def _complete_type(t):
    dt = str(t.dtype).replace("ember.", "").replace("torch.", "")
    name = _DTYPE_NAMES.get(dt, dt)
    parts = []
    if t.dim():
        parts.append(", ".join(str(s) for s in t.shape))
        try:
            parts.append(f"strides=[{', '.join(str(s) for s in t.stride())}]")
        except (RuntimeError, NotImplementedError):
            pass
    parts.append(f"requires_grad={int(t.requires_grad)}")
    parts.append(f"device={t.device}")
    return CompleteTensorType(f"{name}({', '.join(parts)})")


def _plain(t):
    """The type a schema or a caller sees (complete tensor types are ``Tensor``)."""
    if isinstance(t, CompleteTensorType):
        return T.TensorType
    if isinstance(t, T.TupleType):
        return T.TupleType(tuple(_plain(e) for e in t.elems))
    if isinstance(t, T.ListType):
        return T.ListType(_plain(t.elem))
    if isinstance(t, T.DictType):
        return T.DictType(t.key, _plain(t.value))
    return t


def _is_tensor(v):
    import ember
    return isinstance(v, ember.Tensor)


# --------------------------------------------------------------------------- frames

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_frame():
    """The innermost Python frame outside ember (where the traced code is)."""
    f = sys._getframe(2)
    while f is not None and _internal(f.f_code.co_filename):
        f = f.f_back
    return f


def _internal(filename):
    return filename.startswith(_EMBER_DIR) or filename.startswith("<ember")


def _user_stacklevel():
    """``stacklevel`` for ``warnings.warn`` called here that names the user's line."""
    f, level = sys._getframe(1), 1
    while f is not None and _internal(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    return level


def _source():
    f = _user_frame()
    if f is None:
        return None
    return SourceRange(f.f_code.co_filename, f.f_lineno, 0, None, [], f.f_lineno,
                       f.f_code.co_name)


class _Frame:
    """One graph being recorded: a traced function, or one call of a module's method."""

    def __init__(self, module=None, ct=None):
        self.graph = Graph()
        self.body = []                 # nodes in run order
        self.param_groups = []         # GetAttr chains for parameters/buffers, in use order
        self.call_groups = []          # GetAttrs of called submodules, in use order
        self.values = {}               # id(tensor) -> Value
        self.keep = []                 # tensors kept alive while their ids are keys
        self.module, self.ct = module, ct
        self.self_value = None
        self.call_attr = {}            # submodule path -> Value (for CallMethod)
        self.param_paths = {}          # id(param or buffer) -> attribute path
        self.named = set()             # Values already looked up in the caller's locals
        self.futures = {}              # id(Future of a traced fork) -> (Value, result type)
        self.module_paths = {}         # id(submodule) -> attribute path
        if module is not None:
            self.self_value = self.graph.add_input(ct, "self")
            for path, m in _walk(module):
                self.module_paths.setdefault(id(m), path)
                for name, p in list(m._parameters.items()) + list(m._buffers.items()):
                    if p is not None:
                        self.param_paths.setdefault(id(p), path + (name,))

    def emit(self, kind, inputs, out_types, attrs=None, group=None, source=None):
        n = Node(kind, inputs, attrs, source)
        outs = [n.add_output(t) for t in out_types]
        (self.body if group is None else group).append(n)
        return n, outs

    def bind(self, t, v):
        self.values[id(t)] = v
        self.keep.append(t)

    def finish(self, outputs):
        """Place the nodes: parameter GetAttrs (last used first), then the submodules'
        GetAttrs (last called first), then the body."""
        block = self.graph.block
        for group in reversed(self.param_groups):
            for n in group:
                block.append(n)
        for group in reversed(self.call_groups):
            for n in group:
                block.append(n)
        for n in self.body:
            block.append(n)
        block.set_returns(outputs)
        return self.graph


def _walk(module, path=()):
    yield path, module
    for name, ch in module._modules.items():
        if ch is not None:
            yield from _walk(ch, path + (name,))


# --------------------------------------------------------------------------- the tracer

class _Tracer:
    """Records one run (the frames stack grows on each submodule call)."""

    def __init__(self, cts=None):
        self.frames = []
        self.cts = cts or {}               # id(module) -> ClassType
        self.method_counts = {}            # id(module) -> calls recorded
        self.thread = threading.get_ident()

    @property
    def frame(self):
        return self.frames[-1]

    # values ------------------------------------------------------------------------
    def constant(self, value, frame=None, source=None):
        frame = frame or self.frame
        if _is_tensor(value):
            t = _complete_type(value)
        else:
            try:
                t = T.type_of_value(value)
            except Exception:          # noqa: BLE001 - slices, layouts, ...: opaque
                t = T.AnyType
        attrs = {} if value is None else {"value": value}
        _, (v,) = frame.emit("prim::Constant", [], [t], attrs, source=source)
        return v

    def tensor_value(self, t, frame=None):
        frame = frame or self.frame
        v = frame.values.get(id(t))
        if v is not None:
            return v
        path = frame.param_paths.get(id(t))
        if path is not None:
            v = self.attr_chain(frame, path, frame.param_groups, cache=None)
            frame.bind(t, v)
            return v
        if t.requires_grad:
            raise RuntimeError("Cannot insert a Tensor that requires grad as a constant. "
                               "Consider making it a parameter or input, or detaching the "
                               f"gradient\nTensor:\n{t}")
        v = self.constant(t, frame, _source())
        frame.bind(t, v)
        return v

    def attr_chain(self, frame, path, groups, cache):
        """GetAttr nodes from ``self`` along ``path`` (one group, appended to ``groups``)."""
        group = []
        v = frame.self_value
        mod = frame.module
        for k, name in enumerate(path):
            if cache is not None and path[:k + 1] in cache:
                v = cache[path[:k + 1]]
                mod = mod._modules[name]
                continue
            if name in mod._modules:
                mod = mod._modules[name]
                t = self.cts[id(mod)]
            else:
                t = T.TensorType
            n = Node("prim::GetAttr", [v], {"name": name})
            v = n.add_output(t, "_" + name if name[:1].isdigit() else name)
            group.append(n)
            if cache is not None:
                cache[path[:k + 1]] = v
        groups.append(group)
        return v

    def arg_value(self, a, arg):
        """The Value of one schema argument."""
        if _is_tensor(a):
            v = self.tensor_value(a)
            if arg is not None and arg.type in _INT_TYPES:
                return self.to_int(v)
            return v
        if isinstance(a, (list, tuple)) and arg is not None and arg.type in _INT_TYPES \
                and any(_is_tensor(e) for e in a):
            elems = [self.to_int(self.tensor_value(e)) if _is_tensor(e) else self.constant(e)
                     for e in a]
            _, (v,) = self.frame.emit("prim::ListConstruct", elems, [T.ListType(T.IntType)])
            return v
        if isinstance(a, (list, tuple)) and arg is not None and arg.type == "Tensor" \
                and arg.is_list:
            elems = [self.tensor_value(e) if e is not None else self.constant(None) for e in a]
            elem_t = T.OptionalType(T.TensorType) if arg.optional and any(
                e is None for e in a) else T.TensorType
            _, (v,) = self.frame.emit("prim::ListConstruct", elems, [T.ListType(elem_t)])
            return v
        if isinstance(a, (list, tuple)) and any(_is_tensor(e) for e in a):
            elems = [self.arg_value(e, None) for e in a]
            _, (v,) = self.frame.emit("prim::ListConstruct", elems, [T.ListType(T.TensorType)])
            return v
        return self.constant(a, source=None)

    def name_from_locals(self, args):
        """Name op results after the caller's variables holding them, when first used (as
        torch's tracer names ``%z`` for ``z = x * 2 + y``)."""
        frame = self.frame
        pending = [(a, frame.values.get(id(a))) for a in args if _is_tensor(a)]
        pending = [(a, v) for a, v in pending if v is not None and v.debug_name is None
                   and v.id not in frame.named]
        if not pending:
            return
        f = _user_frame()
        scope = f.f_locals if f is not None else {}
        for a, v in pending:
            frame.named.add(v.id)
            for name, obj in scope.items():
                if obj is a and not name.startswith("_") and name != "self":
                    v.debug_name = name
                    break

    def to_int(self, v):
        """``aten::Int``: a traced size (a 0-d integer tensor) passed where an int goes."""
        n, (out,) = self.frame.emit("aten::Int", [v], [T.IntType])
        n.fn = int
        return out

    def traced_sizes(self, t, sizes, dim):
        """``t.size(dim)`` / ``t.shape`` while tracing: 0-d long tensors recorded as
        ``aten::size`` + ``prim::NumToTensor``, so that shapes computed from them stay
        dynamic in the trace (as torch's tracer does)."""
        import ember
        from ember._tensor import Size
        frame = self.frame
        x = frame.values[id(t)]
        dims = [dim] if dim is not None else range(len(sizes))
        out = []
        for d in dims:
            n, (size_v,) = frame.emit("aten::size", [x, self.constant(d)], [T.IntType],
                                      source=_source())
            n.fn = _size_of
            value = sizes if dim is not None else sizes[d]
            n, (tensor_v,) = frame.emit("prim::NumToTensor", [size_v],
                                        [CompleteTensorType("Long(device=cpu)")])
            n.fn = _num_to_tensor
            st = ember.as_tensor(value)
            frame.bind(st, tensor_v)
            out.append(st)
        return out[0] if dim is not None else tuple.__new__(Size, out)

    # ops ---------------------------------------------------------------------------
    def record(self, op, args, result):
        frame = self.frame
        schema_args = op.schema.args
        inputs = [self.arg_value(a, schema_args[i] if i < len(schema_args) else None)
                  for i, a in enumerate(args)]
        kind = op.public_name if "::" in op.public_name else "aten::" + op.public_name
        src = _source()
        self.name_from_locals(args)
        if op.returns_list:
            n, (lst,) = frame.emit(kind, inputs, [T.ListType(T.TensorType)], source=src)
            n.op = op
            _, outs = frame.emit("prim::ListUnpack", [lst], [_complete_type(t) for t in result])
            for t, v in zip(result, outs):
                frame.bind(t, v)
            return
        results = result if op.num_outputs > 1 else (result,)
        if op.num_outputs == 0 or result is None:
            results = ()
        types = [_complete_type(r) if _is_tensor(r) else _plain_type_of(r) for r in results]
        n, outs = frame.emit(kind, inputs, types, source=src)
        n.op = op
        for r, v in zip(results, outs):
            if _is_tensor(r):
                frame.bind(r, v)

    def unrecorded(self, run):
        """``run()`` with this trace's mode off (its ops are recorded as one node instead)."""
        st = state
        saved = st.modes
        st.modes = tuple(m for m in saved if not (isinstance(m, _TraceMode) and m.tracer is self))
        try:
            return run()
        finally:
            st.modes = saved

    def record_detach(self, t, result):
        """``aten::detach``: the value flows on (not baked in as a constant)."""
        n, (v,) = self.frame.emit("aten::detach", [self.tensor_value(t)],
                                  [_complete_type(result)], source=_source())
        n.fn = _detach
        self.frame.bind(result, v)

    def index_template(self, idx):
        """The compiler's index template (``Compiler.index_template`` in ``_expressions.py``) of a Python index,
        with the Values it refers to: tensors stay inputs of the node."""
        inputs = []

        def value(e):
            if _is_tensor(e):
                inputs.append(self.tensor_value(e))
            else:
                inputs.append(self.constant(e))
            return len(inputs)

        def one(e):
            if e is None:
                return None
            if e is Ellipsis:
                return Ellipsis
            if isinstance(e, slice):
                return ("slice",) + tuple(None if p is None else value(p)
                                          for p in (e.start, e.stop, e.step))
            return ("value", value(e))
        tmpl = tuple(one(e) for e in idx) if isinstance(idx, tuple) else one(idx)
        return tmpl, inputs

    def record_getitem(self, t, idx, result):
        tmpl, inputs = self.index_template(idx)
        n, (v,) = self.frame.emit("aten::index", [self.tensor_value(t)] + inputs,
                                  [_complete_type(result)], {"_index": tmpl}, source=_source())
        self.frame.bind(result, v)

    def record_setitem(self, t, idx, value):
        tmpl, inputs = self.index_template(idx)
        v = self.tensor_value(value) if _is_tensor(value) else self.constant(value)
        self.frame.emit("aten::index_put_", [self.tensor_value(t), v] + inputs, [],
                        {"_index": tmpl}, source=_source())

    # inputs and outputs --------------------------------------------------------------
    def add_inputs(self, frame, names, values):
        """Graph inputs for ``values`` (tensors, nested tuples/lists/dicts of tensors)."""
        types = []
        for name, val in zip(names, values):
            t = _input_type(val)
            v = frame.graph.add_input(t, name)
            self.unpack(frame, v, val)
            types.append(_plain(t))
        return types

    def unpack(self, frame, v, val):
        if _is_tensor(val):
            frame.bind(val, v)
        elif isinstance(val, (tuple, list)):
            kind = "prim::TupleUnpack" if isinstance(val, tuple) else "prim::ListUnpack"
            _, outs = frame.emit(kind, [v], [_input_type(e) for e in val])
            for o, e in zip(outs, val):
                self.unpack(frame, o, e)
        elif isinstance(val, dict):
            for key, e in val.items():
                k = self.constant(key, frame)
                n, (o,) = frame.emit("aten::__getitem__", [v, k], [_input_type(e)])
                n.fn = _getitem
                self.unpack(frame, o, e)

    def output_value(self, out, strict, nested=False):
        """The Value of a traced result; ``nested`` (a submodule's): None and numbers may
        be part of it (torch's tracer allows them there, not as the trace's outputs)."""
        frame = self.frame
        if _is_tensor(out):
            return self.tensor_value(out)
        if nested and (out is None or isinstance(out, (bool, int, float))):
            return self.constant(out)
        if isinstance(out, tuple):
            vals = [self.output_value(e, strict, nested) for e in out]
            _, (v,) = frame.emit("prim::TupleConstruct", vals,
                                 [T.TupleType(tuple(x.type for x in vals))])
            return v
        if isinstance(out, list):
            vals = [self.output_value(e, strict) for e in out]     # a non-tensor raises first
            if strict:
                warnings.warn(_CONTAINER_MSG.format("list"), TracerWarning,
                              stacklevel=_user_stacklevel())
            _, (v,) = frame.emit("prim::ListConstruct", vals, [T.ListType(
                _plain(vals[0].type) if vals else T.TensorType)])
            return v
        if isinstance(out, dict):
            if strict:
                raise RuntimeError(_CONTAINER_MSG.format("dict"))
            ins = []
            for key, e in out.items():
                ins += [self.constant(key), self.output_value(e, strict)]
            kt = T.type_of_value(next(iter(out))) if out else T.StrType
            vt = _plain(ins[1].type) if out else T.TensorType
            _, (v,) = frame.emit("prim::DictConstruct", ins, [T.DictType(kt, vt)])
            return v
        raise RuntimeError("Only tensors, lists, tuples of tensors, or dictionary of tensors "
                           "can be output from traced functions")

    # submodule calls ------------------------------------------------------------------
    def call_compiled(self, kind, fn, head, args, kwargs, run):
        """A call of already compiled code (a ScriptFunction, a scripted or traced module):
        one ``prim::CallFunction`` / ``prim::CallMethod`` node; the callee runs unrecorded,
        so its control flow stays in its own graph, as torch keeps it."""
        frame = self.frame
        values = fn.bind(list(args), dict(kwargs))
        ins = list(head) + [self.structure_value(v) if isinstance(v, (tuple, list)) and
                            _traceable(v) else self.arg_value(v, None) for v in values]
        n, (res,) = frame.emit(kind, ins, [fn.return_type],
                               {"name": fn.name if kind == "prim::CallMethod" else
                                fn.qualified_name}, source=_source())
        n.fn = fn
        st = state
        saved = st.modes
        st.modes = tuple(m for m in saved if not (isinstance(m, _TraceMode) and m.tracer is self))
        try:
            out = run()
        finally:
            st.modes = saved
        self.unpack_result(frame, res, out)
        return out

    def call_module(self, sub, orig_forward, args, kwargs):
        parent = self.frame
        path = parent.module_paths.get(id(sub)) if parent.module is not None else None
        if not path:                      # not below the current module: inline its ops
            return orig_forward(*args, **kwargs)
        if isinstance(sub, RecursiveScriptModule):
            fn = sub._ct.methods.get("forward")
            sub_v = parent.call_attr.get(path)
            if sub_v is None:
                sub_v = self.attr_chain(parent, path, parent.call_groups, cache=None)
                parent.call_attr[path] = sub_v
            return self.call_compiled("prim::CallMethod", fn, [sub_v], args, kwargs,
                                      lambda: orig_forward(*args, **kwargs))
        names, values, baked = _bind_call(orig_forward, args, kwargs)
        # the callee's graph
        count = self.method_counts.get(id(sub), 0)
        self.method_counts[id(sub)] = count + 1
        mname = "forward" if count == 0 else f"forward{count}"
        ct = self.cts[id(sub)]
        child = _Frame(sub, ct)
        arg_types = self.add_inputs(child, names, values)
        self.frames.append(child)
        try:
            out = orig_forward(*args, **kwargs)
            ret = self.output_value(out, strict=False, nested=True)
        finally:
            self.frames.pop()
        graph = child.finish([ret])
        fn = _function(mname, f"{ct.qualname}.{mname}", graph, names, arg_types,
                       _plain(ret.type), ct)
        ct.methods[mname] = fn
        # the caller's CallMethod
        sub_v = parent.call_attr.get(path)
        if sub_v is None:
            sub_v = self.attr_chain(parent, path, parent.call_groups, cache=None)
            parent.call_attr[path] = sub_v
        ins = [sub_v] + [self.arg_value(v, None) if not isinstance(v, (tuple, list, dict))
                         else self.structure_value(v) for v in values]
        n, (res,) = parent.emit("prim::CallMethod", ins, [fn.return_type], {"name": mname})
        n.fn = fn
        self.unpack_result(parent, res, out)
        return out

    # forks ----------------------------------------------------------------------------
    def fork(self, fn, args, kwargs):
        """Eager ``jit.fork`` while tracing: the task's ops go into a graph of their own
        and the caller gets ``prim::fork`` (run on the inter-op pool by the traced code);
        ``wait`` on the returned (already completed) Future records ``aten::wait``."""
        from ember import nn
        from ember.jit._futures import Future
        parent = self.frame
        child = _Frame()
        if parent.module is not None:           # the task sees the caller's module
            child.module, child.ct = parent.module, parent.ct
            child.self_value = child.graph.add_input(parent.ct, "self")
            child.param_paths, child.module_paths = parent.param_paths, parent.module_paths
        target = functools.partial(type(fn).forward, fn) if isinstance(fn, nn.Module) else fn
        names, values, _ = _bind_call(target, args, kwargs)
        arg_types = self.add_inputs(child, names, values)
        self.frames.append(child)
        try:
            out = fn(*args, **kwargs)
            ret = self.output_value(out, strict=False, nested=True)
        finally:
            self.frames.pop()
        graph = child.finish([ret])
        name = f"fork_{len(parent.futures)}"
        owner = parent.ct if parent.module is not None else None
        task = _function(name, name, graph, names, arg_types, _plain(ret.type), owner)
        ins = ([parent.self_value] if owner is not None else []) + [
            self.structure_value(v) for v in values]
        n, (fut_v,) = parent.emit("prim::fork", ins, [T.FutureType(task.return_type)],
                                  {"name": name})
        n.fn = task
        fut = Future()
        fut.set_result(out)
        parent.futures[id(fut)] = (fut_v, task.return_type)
        parent.keep.append(fut)
        fut._on_wait = self.waited
        return fut

    def waited(self, fut, value):
        if _active() is not self or not self.frames:
            return
        entry = self.frame.futures.get(id(fut))
        if entry is not None:
            n, (v,) = self.frame.emit("aten::wait", [entry[0]], [entry[1]])
            self.unpack_result(self.frame, v, value)

    def structure_value(self, val):
        if _is_tensor(val):
            return self.tensor_value(val)
        vals = [self.structure_value(e) for e in val]
        kind, t = ("prim::TupleConstruct", T.TupleType(tuple(_plain(x.type) for x in vals))) \
            if isinstance(val, tuple) else ("prim::ListConstruct", T.ListType(T.TensorType))
        _, (v,) = self.frame.emit(kind, vals, [t])
        return v

    def unpack_result(self, frame, v, out):
        if _is_tensor(out):
            frame.bind(out, v)
        elif isinstance(out, (tuple, list)):
            kind = "prim::TupleUnpack" if isinstance(out, tuple) else "prim::ListUnpack"
            _, outs = frame.emit(kind, [v], [_plain(_result_type(e)) for e in out])
            for o, e in zip(outs, out):
                self.unpack_result(frame, o, e)
        elif isinstance(out, dict):
            for key, e in out.items():
                n, (o,) = frame.emit("aten::__getitem__", [v, self.constant(key, frame)],
                                     [_plain(_input_type(e))])
                n.fn = _getitem
                self.unpack_result(frame, o, e)


def _getitem(d, k):
    return d[k]


def _size_of(x, d):
    return x.size(d)


def _num_to_tensor(n):
    import ember
    return ember.as_tensor(n)


_INT_TYPES = ("int", "SymInt")


_CONTAINER_MSG = ("Encountering a {} at the output of the tracer might cause the trace to be "
                  "incorrect, this is only valid if the container structure does not change "
                  "based on the module's inputs. Consider using a constant container instead "
                  "(e.g. for `list`, use a `tuple` instead. for `dict`, use a `NamedTuple` "
                  "instead). If you absolutely need this and know the side effects, pass "
                  "strict=False to trace() to allow this behavior.")


def _plain_type_of(v):
    try:
        return T.type_of_value(v)
    except Exception:      # noqa: BLE001
        return T.AnyType


def _result_type(val):
    """The type of part of a submodule's result (None and numbers allowed there)."""
    if val is None or isinstance(val, (bool, int, float)):
        return T.type_of_value(val)
    if isinstance(val, tuple):
        return T.TupleType(tuple(_result_type(e) for e in val))
    return _input_type(val)


def _input_type(val):
    if _is_tensor(val):
        return _complete_type(val)
    if isinstance(val, tuple):
        return T.TupleType(tuple(_input_type(e) for e in val))
    if isinstance(val, list):
        if not val:
            return T.ListType(T.TensorType)
        return T.ListType(_plain(_input_type(val[0])))
    if isinstance(val, dict):
        if not val:
            return T.DictType(T.StrType, T.TensorType)
        k = next(iter(val))
        return T.DictType(T.type_of_value(k), _plain(_input_type(val[k])))
    raise RuntimeError(f"Type '{_type_name(val)}' cannot be traced. Only Tensors and "
                       f"(possibly nested) Lists, Dicts, and Tuples of Tensors can be traced")


def _type_name(val):
    if _is_tensor(val):
        return "Tensor"
    if isinstance(val, tuple):
        return "Tuple[" + ", ".join(_type_name(e) for e in val) + "]"
    if isinstance(val, list):
        return "List[" + (_type_name(val[0]) if val else "Tensor") + "]"
    if isinstance(val, dict):
        return "Dict"
    return type(val).__name__


def _traceable(val):
    if _is_tensor(val):
        return True
    if isinstance(val, (tuple, list)):
        return all(_traceable(e) for e in val)
    if isinstance(val, dict):
        return all(_traceable(e) for e in val.values())
    return False


def _bind_call(fn, args, kwargs):
    """(names, values, baked): the traceable arguments of a call in signature order; the
    others (numbers, strings, None) are baked into the callee's graph."""
    try:
        sig = inspect.signature(fn)
        bound = sig.bind(*args, **kwargs)
        items = []
        for name, val in bound.arguments.items():
            p = sig.parameters[name]
            if p.kind is p.VAR_POSITIONAL:
                items += [(f"{name}.{k}", v) for k, v in enumerate(val)]
            elif p.kind is p.VAR_KEYWORD:
                items += list(val.items())
            else:
                items.append((name, val))
    except (TypeError, ValueError):
        items = [(f"input.{k}", v) for k, v in enumerate(args)] + list(kwargs.items())
    names, values, baked = [], [], []
    for name, val in items:
        if _traceable(val) and val is not None:
            names.append(name)
            values.append(val)
        else:
            baked.append(name)
    return names, values, baked


class _TraceMode(Mode):
    """The dispatcher mode of one trace: records every op into the current frame."""

    def __init__(self, tracer):
        self.tracer = tracer

    def __ember_dispatch__(self, op, args, kwargs):
        result = op(*args, **kwargs)
        self.tracer.record(op, args, result)
        return result


def _active():
    """The innermost trace of this thread (None when not tracing)."""
    for m in reversed(state.modes):
        if isinstance(m, _TraceMode):
            return m.tracer
    return None


def is_tracing():
    """True while ``jit.trace`` runs the traced code."""
    return _active() is not None


def record_whole(kind, fn, *args, python_function=True):
    """``fn(*args)`` recorded as one ``kind`` node calling ``fn`` when this thread traces (a
    composite ``nn.functional`` that torch traces as one aten op: ``aten::adaptive_avg_pool2d``
    rather than the matmuls ember computes it with, so that the trace prints, saves and
    loads in torch as torch's). ``args``: the aten op's arguments, tensors then constants;
    ``python_function``: torch's ``fn`` is Python (its parameters name the values, below),
    else a builtin (the caller's variables do). Returns None when not tracing."""
    tracer = _active()
    if tracer is None or not tracer.frames:
        return None
    result = tracer.unrecorded(lambda: fn(*args))
    inputs = [tracer.tensor_value(a) if _is_tensor(a) else tracer.constant(a) for a in args]
    # torch's op is called from its Python function, whose parameters name the values the
    # way the caller's variables name them for an op called directly (``%input``)
    frame = tracer.frame
    params = list(inspect.signature(fn).parameters) if python_function else []
    if not python_function:
        tracer.name_from_locals(args)
    for name, a, v in zip(params, args, inputs):
        if _is_tensor(a) and v.debug_name is None and v.id not in frame.named:
            frame.named.add(v.id)
            v.debug_name = name
    n, (v,) = tracer.frame.emit(kind, inputs, [_complete_type(result)], source=_source())
    n.fn = fn
    tracer.frame.bind(result, v)
    return result


# --------------------------------------------------------------------------- conversions

_CONVERSIONS = {"item": "a Python number", "__bool__": "a Python boolean",
                "__int__": "a Python integer", "__float__": "a Python float",
                "tolist": "a Python list", "numpy": "a NumPy array"}
_hooks = {"count": 0, "saved": {}}
_hooks_lock = threading.Lock()


def _conversion_hook(name, what, orig):
    def converted(self, *args, **kwargs):
        tracer = _active()
        if tracer is not None and tracer.frames and id(self) in tracer.frame.values:
            warnings.warn(f"Converting a tensor to {what} might cause the trace to be "
                          f"incorrect. We can't record the data flow of Python values, so "
                          f"this value will be treated as a constant in the future. This "
                          f"means that the trace might not generalize to other inputs!",
                          TracerWarning, stacklevel=_user_stacklevel())
        return orig(self, *args, **kwargs)
    converted.__name__ = name
    converted.__wrapped__ = orig
    return converted


def _script_call_hook(orig):
    def __call__(self, *args, **kwargs):
        tracer = _active()
        if tracer is None or not tracer.frames:
            return orig(self, *args, **kwargs)
        return tracer.call_compiled("prim::CallFunction", self._function, [], args, kwargs,
                                    lambda: orig(self, *args, **kwargs))
    __call__.__wrapped__ = orig
    return __call__


def _tensor_hook(orig):
    def tensor(*args, **kwargs):
        if _active() is not None and not _internal(sys._getframe(1).f_code.co_filename):
            warnings.warn("torch.tensor results are registered as constants in the trace. You "
                          "can safely ignore this warning if you use this function to create "
                          "tensors out of constant variables that would be the same every time "
                          "you call this function. In any other case, this might cause the "
                          "trace to be incorrect.", TracerWarning, stacklevel=_user_stacklevel())
        return orig(*args, **kwargs)
    tensor.__wrapped__ = orig
    tensor.__doc__ = orig.__doc__
    return tensor


def _detach(x):
    return x.detach()


def _detach_hook(orig):
    def detach(self):
        result = orig(self)
        tracer = _active()
        if tracer is not None and tracer.frames and id(self) in tracer.frame.values \
                and not _onnx_export_records():
            tracer.record_detach(self, result)
        return result
    detach.__wrapped__ = orig
    detach.__doc__ = orig.__doc__
    return detach


def _onnx_export_records():
    """The ONNX export records detach and tensor indexing with op records of its own."""
    onnx = sys.modules.get("ember.onnx")
    return onnx is not None and onnx.is_in_onnx_export()


def _holds_tensor_index(idx):
    return any(_is_tensor(e) for e in (idx if isinstance(idx, tuple) else (idx,)))


def _getitem_hook(orig):
    def __getitem__(self, idx):
        tracer = _active()
        if tracer is None or not tracer.frames or not _holds_tensor_index(idx) \
                or _onnx_export_records():
            return orig(self, idx)
        result = tracer.unrecorded(lambda: orig(self, idx))
        tracer.record_getitem(self, idx, result)
        return result
    __getitem__.__wrapped__ = orig
    return __getitem__


def _setitem_hook(orig):
    def __setitem__(self, idx, value):
        tracer = _active()
        if tracer is None or not tracer.frames or not _holds_tensor_index(idx) \
                or _onnx_export_records():
            return orig(self, idx, value)
        tracer.unrecorded(lambda: orig(self, idx, value))
        tracer.record_setitem(self, idx, value)
    __setitem__.__wrapped__ = orig
    return __setitem__


def _size_hook(orig):
    def size(self, dim=None):
        sizes = orig(self, dim)
        tracer = _active()
        if tracer is None or not tracer.frames or id(self) not in tracer.frame.values \
                or _internal(sys._getframe(1).f_code.co_filename):
            return sizes
        return tracer.traced_sizes(self, sizes, dim)
    size.__wrapped__ = orig
    return size


def _shape_hook(orig):
    def shape(self):
        sizes = orig.fget(self)
        tracer = _active()
        if tracer is None or not tracer.frames or id(self) not in tracer.frame.values \
                or _internal(sys._getframe(1).f_code.co_filename):
            return sizes
        return tracer.traced_sizes(self, sizes, None)
    return property(shape, doc=orig.__doc__)


def _hook_targets():
    """(owner, attribute, make_replacement) of everything patched while tracing."""
    import ember
    from ember.jit._script import ScriptFunction
    out = [(ember.Tensor, name, lambda orig, n=name, w=what: _conversion_hook(n, w, orig))
           for name, what in _CONVERSIONS.items()]
    out.append((ember.Tensor, "size", _size_hook))
    out.append((ember.Tensor, "detach", _detach_hook))
    out.append((ember.Tensor, "__getitem__", _getitem_hook))
    out.append((ember.Tensor, "__setitem__", _setitem_hook))
    out.append((ember.Tensor, "shape", _shape_hook))
    out.append((ScriptFunction, "__call__", _script_call_hook))
    out.append((ember, "tensor", _tensor_hook))
    return out


def _install_hooks():
    with _hooks_lock:
        if _hooks["count"] == 0:
            for owner, name, make in _hook_targets():
                orig = owner.__dict__[name]
                _hooks["saved"][(owner, name)] = orig
                setattr(owner, name, make(orig))
        _hooks["count"] += 1


def _remove_hooks():
    with _hooks_lock:
        _hooks["count"] -= 1
        if _hooks["count"] == 0:
            for (owner, name), orig in _hooks["saved"].items():
                setattr(owner, name, orig)
            _hooks["saved"].clear()


# --------------------------------------------------------------------------- building

def _function(name, qualname, graph, names, arg_types, return_type, owner=None):
    from ember.jit._script import Function
    schema = [(n, t, False, None, False) for n, t in zip(names, arg_types)]
    fn = Function(name, qualname, graph, schema, return_type, owner,
                  "self" if owner is not None else None)
    fn.finish()
    return fn


def _class_types(module):
    """A module ClassType for every module of the tree (attributes and where they live)."""
    from ember.jit._script import qualified_class_name
    cts = {}

    def make(m):
        if id(m) in cts:
            return cts[id(m)]
        if isinstance(m, RecursiveScriptModule):      # compiled already: its own types
            cts[id(m)] = m._ct
            for ch in m._modules.values():
                if ch is not None:
                    make(ch)
            return m._ct
        attrs, slots = {"training": T.BoolType}, {}
        for name, p in m._parameters.items():
            attrs[name] = T.TensorType if p is not None else T.NoneType
            slots[name] = "_parameters"
        for name, b in m._buffers.items():
            attrs[name] = T.TensorType if b is not None else T.NoneType
            slots[name] = "_buffers"
        ct = T.ClassType(qualified_class_name(type(m)), type(m), True, attrs, {},
                         {"$slots": slots})
        cts[id(m)] = ct
        for name, ch in m._modules.items():
            if ch is not None:
                attrs[name] = make(ch)
                slots[name] = "_modules"
        return ct
    make(module)
    return cts


def _check_traceable(values):
    if not _traceable(tuple(values)):
        raise RuntimeError(f"Type '{_type_name(tuple(values))}' cannot be traced. Only Tensors "
                           f"and (possibly nested) Lists, Dicts, and Tuples of Tensors can be "
                           f"traced")


def _retrace(trace_fn, *args):
    """A re-trace for checking: it warns again, as torch's (the default filters show a
    warning of one line once)."""
    return trace_fn(*args)


def _run_traced(tracer, frame, call, strict):
    """Run ``call()`` recording into ``frame``; returns (graph, output value, result)."""
    tracer.frames.append(frame)
    _install_hooks()
    try:
        with _TraceMode(tracer):
            out = call()
            ret = tracer.output_value(out, strict)
    finally:
        _remove_hooks()
        tracer.frames.pop()
    return frame.finish([ret]), ret, out


def _positional(example_inputs):
    if example_inputs is None:
        return ()
    return example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)


def _fn_name(fn):
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return "_lambda" if name == "<lambda>" else name


def _trace_function(func, args, kwargs, strict):
    """(Function, graph) of one traced run of a Python function."""
    tracer = _Tracer()
    frame = _Frame()
    if kwargs:
        names, values, _ = _bind_call(func, (), kwargs)
        call_kwargs = dict(zip(names, values))
        types = tracer.add_inputs(frame, names, values)
        call = lambda: func(**call_kwargs)      # noqa: E731
    else:
        _check_traceable(args)
        names = _param_names(func, len(args))
        types = tracer.add_inputs(frame, names, args)
        call = lambda: func(*args)      # noqa: E731
    graph, ret, _ = _run_traced(tracer, frame, call, strict)
    name = _fn_name(func)
    from ember.jit._script import qualified_class_name
    qual = qualified_class_name(func) if hasattr(func, "__qualname__") else name
    return _function(name, qual, graph, names, types, _plain(ret.type))


def _param_names(fn, n):
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i].name if i < len(params) else f"input.{i}" for i in range(n)]


def _trace_methods(mod, inputs, strict, kwarg_inputs=None):
    """Trace each ``method -> example inputs`` of ``mod`` into a TopLevelTracedModule."""
    cts = _class_types(mod)
    tracer = _Tracer(cts)
    patched = _shadow_forwards(mod, tracer)
    try:
        for method_name, example in inputs.items():
            ct = cts[id(mod)]
            method = getattr(mod, method_name)
            frame = _Frame(mod, ct)
            if kwarg_inputs is not None:
                names, values, _ = _bind_call(method, (), kwarg_inputs)
                call_kwargs = dict(zip(names, values))
                types = tracer.add_inputs(frame, names, values)
                call = lambda m=method, kw=call_kwargs: m(**kw)      # noqa: E731
            else:
                args = _positional(example)
                _check_traceable(args)
                names = _param_names(method, len(args))
                types = tracer.add_inputs(frame, names, args)
                if method_name == "forward":
                    call = lambda a=args: mod(*a)      # noqa: E731 - hooks run as torch's
                else:
                    call = lambda m=method, a=args: m(*a)      # noqa: E731
            tracer.method_counts[id(mod)] = tracer.method_counts.get(id(mod), 0) + 1
            graph, ret, _ = _run_traced(tracer, frame, call, strict)
            ct.methods[method_name] = _function(method_name, f"{ct.qualname}.{method_name}",
                                                graph, names, types, _plain(ret.type), ct)
    finally:
        _restore_forwards(patched)
    return _build_module(mod, cts, top=True)


def _shadow_forwards(mod, tracer):
    """Shadow every submodule's ``forward`` so that a call during the trace is recorded as
    ``prim::CallMethod``; returns what to restore."""
    patched = []
    seen = set()
    inside_script = set()
    for path, m in _walk(mod):
        if path and path[:-1] in inside_script or isinstance(m, RecursiveScriptModule):
            inside_script.add(path)       # compiled code calls these without __call__
        if not path or id(m) in seen or path[:-1] in inside_script:
            continue
        seen.add(id(m))
        had = "forward" in m.__dict__
        orig = m.__dict__.get("forward", m.forward)

        def forward(*args, _m=m, _orig=orig, **kwargs):
            t = _active()
            if t is not tracer or not t.frames:
                return _orig(*args, **kwargs)
            return t.call_module(_m, _orig, args, kwargs)
        m.__dict__["forward"] = forward
        patched.append((m, had, orig))
    return patched


def _restore_forwards(patched):
    for m, had, orig in patched:
        if had:
            m.__dict__["forward"] = orig
        else:
            m.__dict__.pop("forward", None)


def _build_module(mod, cts, top, memo=None):
    memo = {} if memo is None else memo
    if id(mod) in memo:
        return memo[id(mod)]
    if not top and isinstance(mod, RecursiveScriptModule):
        return mod                         # a scripted or traced child stays itself
    children = {name: _build_module(ch, cts, False, memo) if ch is not None else None
                for name, ch in mod._modules.items()}
    cls = TopLevelTracedModule if top else TracedModule
    tm = cls._construct(mod, cts[id(mod)], children, {})
    memo[id(mod)] = tm
    return tm


# --------------------------------------------------------------------------- modules

class TracedModule(RecursiveScriptModule):
    """A traced module: shares the original's parameters and buffers; ``forward``
    (and each traced method) runs the recorded graph."""

    def __init__(self, *a, **k):
        raise RuntimeError("TracedModule is created by ember.jit.trace")

    def __repr__(self):
        name = self.original_name
        if not self._modules:
            return f"{name}(original_name={name})"
        body = "\n".join(f"  ({k}): " + repr(m).replace("\n", "\n  ")
                         for k, m in self._modules.items())
        return f"{name}(\n  original_name={name}\n{body}\n)"

    def forward(self, *args, **kwargs):
        fn = self._ct.methods.get("forward")
        if fn is None:
            raise RuntimeError(f"Method 'forward' is not defined on the traced module "
                               f"{self.original_name} (it was never called while "
                               f"tracing)")
        return fn.call_method(self, args, kwargs)


class TopLevelTracedModule(TracedModule):
    """What ``jit.trace`` returns for a module."""


# --------------------------------------------------------------------------- checks

_NONDETERMINISTIC = ("rand", "bernoulli", "dropout", "normal", "uniform", "multinomial",
                     "exponential", "geometric", "cauchy", "log_normal", "random", "poisson",
                     "rrelu")


def _canonical(graph):
    """Lines describing a graph without types or locations (two traces of the same code
    give the same lines), and its tensor constants."""
    from ember.jit._ir import _fmt_attr
    names, lines, tensors = {}, [], []

    def name(v):
        if v.id not in names:
            names[v.id] = f"%{len(names)}"
        return names[v.id]
    lines.append("graph(" + ", ".join(name(p) for p in graph.inputs()) + "):")
    for n in graph.all_nodes():
        attrs = {k: v for k, v in n.attrs.items() if not k.startswith("_")}
        if n.kind == "prim::Constant" and _is_tensor(attrs.get("value")):
            tensors.append((n, attrs["value"]))
        shown = ", ".join(f"{k}={_fmt_attr(v)}" for k, v in attrs.items())
        outs = ", ".join(name(o) for o in n.outputs)
        lines.append(f"  {outs + ' = ' if outs else ''}{n.kind}"
                     f"{'[' + shown + ']' if shown else ''}({', '.join(name(i) for i in n.inputs)})")
    lines.append("  return (" + ", ".join(name(v) for v in graph.outputs()) + ")")
    return lines, tensors


def _compare_graphs(g1, g2):
    """Raise TracingCheckError when two traces differ."""
    l1, t1 = _canonical(g1)
    l2, t2 = _canonical(g2)
    if l1 != l2:
        diff = "\n".join(d.rstrip("\n") for d in difflib.ndiff(l1, l2))
        first = next((a for a, b in zip(l1, l2) if a != b), None)
        msg = f"Graph diff:\n{_indent(diff)}"
        if first is not None:
            msg += f"\nFirst diverging operator:\nNode diff:\n\t- {first.strip()}"
        raise TracingCheckError(msg, None)
    for (n, a), (_, b) in zip(t1, t2):
        if a.shape != b.shape or not _close(a, b, 1e-5):
            raise TracingCheckError(None, f"Node:\n\t{_canonical_node(n)}\nComparison "
                                          f"exception: the constants differ:\n{a}\n{b}")


def _canonical_node(n):
    return f"{n.kind}({', '.join('%' + str(i.debug_name or i.id) for i in n.inputs)})"


def _close(a, b, rtol):
    import ember
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(ember.allclose(a.detach(), b.detach().to(a.dtype), rtol=rtol, atol=1e-5,
                                   equal_nan=True))
    return bool(ember.equal(a.detach(), b.detach().to(a.dtype)))


def _flat_tensors(v):
    if _is_tensor(v):
        return [v]
    if isinstance(v, (tuple, list)):
        return [t for e in v for t in _flat_tensors(e)]
    if isinstance(v, dict):
        return [t for e in v.values() for t in _flat_tensors(e)]
    return []


def _clone_inputs(v):
    import ember
    if _is_tensor(v):
        with ember.no_grad():
            c = v.clone()
        return c.requires_grad_(v.requires_grad) if v.is_leaf else c
    if isinstance(v, tuple):
        return tuple(_clone_inputs(e) for e in v)
    if isinstance(v, list):
        return [_clone_inputs(e) for e in v]
    if isinstance(v, dict):
        return {k: _clone_inputs(e) for k, e in v.items()}
    return v


def _check_outputs(traced_out, python_out, tol, graph):
    nodes = [n for n in graph.all_nodes() if n.kind.startswith("aten::")
             and any(w in n.kind for w in _NONDETERMINISTIC)]
    if nodes:
        listing = "\n".join("\t" + n.kind for n in nodes)
        warnings.warn(f"Trace had nondeterministic nodes. Did you forget call .eval() on your "
                      f"model? Nodes:\n{listing}\nThis may cause errors in trace checking. To "
                      f"disable trace checking, pass check_trace=False to torch.jit.trace()",
                      TracerWarning, stacklevel=_user_stacklevel())
    a, b = _flat_tensors(traced_out), _flat_tensors(python_out)
    for k, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape or not _close(y, x, tol):
            warnings.warn(f"Output nr {k + 1}. of the traced function does not match the "
                          f"corresponding output of the Python function. Detailed error:\n"
                          f"Tensor-likes are not close!", TracerWarning, stacklevel=_user_stacklevel())


def _check_function(fn, func, check_inputs, tol, strict, kwargs_mode):
    import ember
    from ember.jit import _deprecated
    for inputs in check_inputs:
        _deprecated("trace")                      # torch's check traces again
        if kwargs_mode:
            retraced = _retrace(_trace_function, func, (), inputs, strict)
            _compare_graphs(fn.graph, retraced.graph)
            with ember.no_grad():
                _check_outputs(fn(**_clone_inputs(inputs)), func(**_clone_inputs(inputs)),
                               tol, fn.graph)
            continue
        args = _positional(inputs)
        retraced = _retrace(_trace_function, func, args, None, strict)
        _compare_graphs(fn.graph, retraced.graph)
        with ember.no_grad():
            _check_outputs(fn(*_clone_inputs(args)), func(*_clone_inputs(args)), tol, fn.graph)


def _check_module(traced, mod, check_inputs, tol, strict):
    import ember
    from ember.jit import _deprecated
    from ember.jit._passes import inlined
    for inputs in check_inputs:
        _deprecated("trace_method")               # torch's check traces again
        spec = inputs if isinstance(inputs, dict) else {"forward": inputs}
        retraced = _retrace(_trace_methods, mod, spec, strict)
        for name, example in spec.items():
            _compare_graphs(inlined(traced._ct.methods[name].graph),
                            inlined(retraced._ct.methods[name].graph))
            args = _positional(example)
            with ember.no_grad():
                ours = getattr(traced, name)(*_clone_inputs(args))
                theirs = getattr(mod, name)(*_clone_inputs(args))
            _check_outputs(ours, theirs, tol, traced._ct.methods[name].graph)


# --------------------------------------------------------------------------- public API

def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """Run ``func`` (a function or an ``nn.Module``) once on the example inputs and record
    its ops: a ``ScriptFunction`` or a ``TopLevelTracedModule`` running the recorded graph."""
    from ember import nn
    from ember.jit import _deprecated
    from ember.jit._modules import ScriptModule
    from ember.jit._script import ScriptFunction
    _deprecated("trace")
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with "
                      "torch.jit.optimized_execution()` instead", FutureWarning, stacklevel=2)
    if isinstance(func, ScriptModule):
        warnings.warn("The input to trace is already a ScriptModule, tracing it is a no-op. "
                      "Returning the object as is.", stacklevel=2)
        return func
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs and example_inputs cannot both be None "
                           "(give the inputs to trace with)")
    if example_kwarg_inputs is not None and not isinstance(example_kwarg_inputs, dict):
        raise RuntimeError("example_kwarg_inputs should be a dict")
    if isinstance(func, nn.Module):
        if example_kwarg_inputs is not None:
            traced = _trace_methods(func, {"forward": None}, strict, example_kwarg_inputs)
            if check_trace:
                _check_kwargs_module(traced, func, check_inputs or [example_kwarg_inputs],
                                     check_tolerance, strict)
            return traced
        return trace_module(func, {"forward": example_inputs}, None, check_trace,
                            _wrap_checks(check_inputs), check_tolerance, strict)
    if inspect.ismethod(func) and isinstance(func.__self__, nn.Module):
        name = func.__name__
        return trace_module(func.__self__, {name: example_inputs}, None, check_trace,
                            [{name: c} for c in check_inputs] if check_inputs else None,
                            check_tolerance, strict)
    if not callable(func):
        raise RuntimeError(f"Type '{type(func).__name__}' cannot be traced")
    kwargs_mode = example_kwarg_inputs is not None
    if kwargs_mode:
        fn = _trace_function(func, (), example_kwarg_inputs, strict)
    else:
        fn = _trace_function(func, _positional(example_inputs), None, strict)
    if check_trace:
        checks = check_inputs if check_inputs is not None else [
            example_kwarg_inputs if kwargs_mode else example_inputs]
        _check_function(fn, func, checks, check_tolerance, strict, kwargs_mode)
    return ScriptFunction(fn, func)


def _wrap_checks(check_inputs):
    if check_inputs is None:
        return None
    return [c if isinstance(c, dict) else {"forward": c} for c in check_inputs]


def _check_kwargs_module(traced, mod, checks, tol, strict):
    import ember
    from ember.jit._passes import inlined
    for kw in checks:
        retraced = _retrace(_trace_methods, mod, {"forward": None}, strict, kw)
        _compare_graphs(inlined(traced.graph), inlined(retraced.graph))
        with ember.no_grad():
            _check_outputs(traced(**_clone_inputs(kw)), mod(**_clone_inputs(kw)), tol,
                           traced.graph)


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):
    """Trace the methods of ``mod`` named in ``inputs`` (``{"forward": x, "other": y}``)
    into one ``TopLevelTracedModule``."""
    from ember import nn
    from ember.jit import _deprecated
    _deprecated("trace_method")
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with "
                      "torch.jit.optimized_execution()` instead", FutureWarning, stacklevel=2)
    if not isinstance(mod, nn.Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    if example_inputs_is_kwarg:
        (name, kw), = inputs.items()
        if name != "forward":
            raise NotImplementedError("ember.jit.trace_module: keyword example inputs are "
                                      "supported for forward only")
        return _trace_methods(mod, {"forward": None}, strict, kw)
    traced = _trace_methods(mod, inputs, strict)
    if check_trace:
        _check_module(traced, mod, check_inputs if check_inputs is not None else [inputs],
                      check_tolerance, strict)
    return traced
