"""The array fast path: a second code generation of a graph that works on NumPy arrays.

When nothing needs the dispatcher's layers — no mode is active (profiler, autocast, vmap,
tracer), no autograd is recorded (grad mode off, or no input and no parameter requires
grad) and every tensor is an exact ``Tensor`` of one floating dtype — a scripted function
runs a variant of its graph specialized to that dtype: op records' kernels are called on
the arrays directly (their result dtypes worked out at generation time, as the dispatcher
would), the hottest ops are written as NumPy expressions, and tensors are wrapped only on
the way out. Graphs with a node this generator does not know get no variant.

The variant has no side effects on anything but fresh arrays (in-place ops, attribute
writes and printing make a graph ineligible), so any error in it simply reruns the normal
path, which raises torch's error with the TorchScript traceback.
"""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._state import state
from ember.jit import _types as T
from ember.jit._codegen import _Gen, LINE_MAP, _file_ids

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_BOOL = np.dtype(np.bool_)
_CATEGORY = {d.np: d._category for d in _dtype.ALL}


class Unsupported(Exception):
    """This graph gets no array variant."""


class Bail(Exception):
    """At run time: a parameter of another dtype or one needing grad; use the normal path."""


def _unwrap(t, dt):
    if t is None:
        return None
    if not _PLAIN:
        _Tensor()
    d = t._data
    if d.dtype is not dt or type(t) not in _PLAIN or t._requires_grad and state.grad_enabled:
        raise Bail
    return d


_TENSOR = []
_PLAIN = set()          # Tensor and Parameter: no __torch_function__ of their own


def _Tensor():
    if not _TENSOR:
        from ember._tensor import Tensor
        from ember.nn import Parameter
        _TENSOR.append(Tensor)
        _PLAIN.update((Tensor, Parameter))
    return _TENSOR[0]


def _chunk(a, chunks, dim=0):
    n = a.shape[dim]
    size = -(-n // chunks) if n else 0
    if size == 0:
        return [a] * 0 if n == 0 and chunks else [a]
    idx = [slice(None)] * a.ndim
    out = []
    for start in range(0, n, size):
        idx[dim] = slice(start, start + size)
        out.append(a[tuple(idx)])
    return out


def _size(a, dim=None):
    return list(a.shape) if dim is None else a.shape[dim]


def _reshape(a, *shape):
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    return a.reshape(shape)


def _flatten(a, start_dim=0, end_dim=-1):
    nd = a.ndim
    if nd == 0:
        return a.reshape(1)
    s, e = start_dim % nd, end_dim % nd
    return a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1:])


def _linear(input, weight, bias=None):
    """F.linear on arrays: one GEMM (2-D input), else the op's kernel."""
    if input.ndim == 2 and input.shape[1] == weight.shape[1]:
        out = np.matmul(input, weight.T)
        if bias is not None:
            np.add(out, bias, out=out)
        return out
    from ember._ops.blas import linear
    return linear.kernel(input, weight, bias)


def _dropout(a, p=0.5, training=True, inplace=False):
    if training and p != 0.0:
        raise Bail
    return a


def _expit():
    from scipy.special import expit
    return expit


# hand-written fronts: fn -> (template function, result kind) where kind is "same" (the
# input's dtype), "list" (a list of arrays of the input's dtype) or "int"/"ints" (Python)
def _fn_templates():
    import ember
    from ember._ops import shape as shape_ops
    from ember.nn import functional as F
    t = {
        shape_ops._chunk_front: (_chunk, "list"),
        ember.Tensor.view: (_reshape, "same"), ember.Tensor.reshape: (_reshape, "same"),
        ember.Tensor.size: (_size, "py"), ember.Tensor.dim: (lambda a: a.ndim, "py"),
        ember.Tensor.contiguous: (lambda a, memory_format=None: a, "same"),
        ember.flatten: (_flatten, "same"), ember.Tensor.flatten: (_flatten, "same"),
        F.dropout: (_dropout, "same"), bool: (bool, "py"), int: (int, "py"),
        float: (float, "py"),
        F.linear: (_linear, "same"),
        F.relu: (lambda input, inplace=False: _raise_if(inplace) or np.maximum(input, input.dtype.type(0)), "same"),
    }
    if hasattr(ember, "reshape"):
        t[ember.reshape] = (_reshape, "same")
    return t


def _raise_if(flag):
    if flag:
        raise Bail
    return None


_TEMPLATES = []

# op record name -> format of a NumPy expression over the argument names
_OP_EXPR = {
    "mm": "{0} @ {1}", "matmul": "_np.matmul({0}, {1})", "t": "{0}.T",
    "add.Tensor": "{0} + {1}", "sub.Tensor": "{0} - {1}", "mul.Tensor": "{0} * {1}",
    "div.Tensor": "{0} / {1}", "tanh": "_np.tanh({0})", "sigmoid": "_expit({0})",
    "neg": "-{0}", "exp": "_np.exp({0})",
}


class ArrayGen(_Gen):
    """Code generation over arrays of dtype ``dt`` (see the module docstring)."""

    def __init__(self, filename, dt):
        super().__init__(filename)
        self.dt = dt
        self.sd = {}                    # Value id -> static dtype / ("list", dt) / ("tuple", [...])
        _Tensor()
        self.env.update(_np=np, _expit=_expit(), _unwrap=_unwrap, _DT=dt, _Bail=Bail,
                        _PLAIN=frozenset(_PLAIN), _state=state)

    def static(self, v):
        if v.id in self.sd:
            return self.sd[v.id]
        c = v.constant()
        if c is not _NOT:
            if isinstance(c, _Tensor()):
                return c._data.dtype
            if v.type is T.TensorType:
                raise Unsupported("a constant of Tensor type that is not a tensor")
            return None
        if v.type is T.TensorType:
            raise Unsupported(f"unknown dtype of {v}")
        return None

    def const_expr(self, c):
        if isinstance(c, _Tensor()):
            return self.stash(c._data, "a")        # a folded tensor: its array
        return super().const_expr(c)

    def node(self, n, depth):
        k = n.kind
        if k in ("prim::SetAttr", "prim::Print", "aten::index_put_", "prim::PythonOp",
                 "prim::fork", "aten::wait", "prim::With", "prim::CallAny", "prim::CreateObject",
                 "prim::isinstance") or any(i.type is T.AnyType or _torchbind(i.type)
                                            for i in n.inputs):
            # arrays stand in for tensors here: nothing may ask a value what it is (packed
            # quantized parameters hand out quantized tensors)
            raise Unsupported(k)
        if n.op is not None:
            return self.op_node(n, depth)
        if k in ("prim::CallMethod", "prim::CallFunction"):
            return self.call_node(n, depth)
        if n.fn is not None and "_py" not in n.attrs and "_index" not in n.attrs \
                and any(i.type is T.TensorType for i in n.inputs) and not k.startswith("prim::"):
            return self.fn_node(n, depth)
        super().node(n, depth)
        self.propagate(n)

    def propagate(self, n):
        """Static dtypes of the outputs of structural nodes (after their code is written)."""
        k = n.kind
        ins = [self.static(i) if i.type is T.TensorType or isinstance(i.type, (T.ListType, T.TupleType))
               else None for i in n.inputs]
        if k in ("prim::ListConstruct",):
            ts = {x for x in ins if x is not None}
            if len(ts) > 1 or any(isinstance(x, tuple) for x in ts):
                raise Unsupported("list of mixed dtypes")
            if ts:
                self.sd[n.outputs[0].id] = ("list", ts.pop())
        elif k == "prim::TupleConstruct":
            self.sd[n.outputs[0].id] = ("tuple", ins)
        elif k in ("prim::TupleUnpack", "prim::ListUnpack", "prim::TupleIndex",
                   "aten::__getitem__"):
            src = self.static(n.inputs[0])
            for j, o in enumerate(n.outputs):
                if o.type is T.TensorType or isinstance(o.type, (T.ListType, T.TupleType)):
                    self.sd[o.id] = self._element(src, n, j)
        elif "_index" in n.attrs:
            self.sd[n.outputs[0].id] = self.static(n.inputs[0])
        elif "_py" in n.attrs and n.outputs and n.outputs[0].type is T.TensorType:
            cmp = n.attrs["_py"] in ("==", "!=", "<", "<=", ">", ">=")
            self.sd[n.outputs[0].id] = _BOOL if cmp else self._same([
                i for i in n.inputs if i.type is T.TensorType], n)
        elif k in ("prim::unchecked_cast",):
            self.sd[n.outputs[0].id] = self.static(n.inputs[0]) if n.inputs[0].id in self.sd else None
        elif k == "prim::GetAttr" and n.outputs[0].type is T.TensorType:
            self.sd[n.outputs[0].id] = self.dt
        elif k == "prim::TensorAttr":
            if n.attrs["name"] not in ("ndim", "T", "data"):
                raise Unsupported(f"tensor attribute {n.attrs['name']}")
            if n.outputs[0].type is T.TensorType:
                self.sd[n.outputs[0].id] = self.static(n.inputs[0])
        elif k in ("prim::dtype", "prim::device"):
            raise Unsupported(k)
        elif any(o.type is T.TensorType for o in n.outputs) and k not in (
                "prim::If", "prim::Loop", "prim::Uninitialized"):
            raise Unsupported(f"no dtype rule for {k}")

    def _element(self, src, n, j):
        if isinstance(src, tuple) and src and src[0] == "list":
            return src[1]
        if isinstance(src, tuple) and src and src[0] == "tuple":
            if n.kind == "prim::TupleIndex":
                k = n.inputs[1].constant()
                return src[1][k]
            return src[1][j]
        raise Unsupported(f"element dtype of {n.kind}")

    def _same(self, vals, n):
        ts = {self.static(v) for v in vals}
        if len(ts) != 1:
            raise Unsupported(f"mixed dtypes in {n.kind}")
        return ts.pop()

    # -- ops ------------------------------------------------------------------------------
    def op_node(self, n, depth):
        op = n.op
        if not op.fast or op.num_outputs != 1 or op.returns_list or op.nondeterministic:
            raise Unsupported(f"op {op.name}")
        tensor_dts, scalar_cat = [], 0
        for i, is_list, optional in op.tensor_args:
            v = n.inputs[i]
            if v.type is T.TensorType:
                tensor_dts.append(self.static(v))
            elif v.type in (T.IntType, T.BoolType):
                scalar_cat = max(scalar_cat, 1)
            elif v.type is T.FloatType:
                scalar_cat = 2
            elif v.type is T.NoneType and optional:
                pass
            else:
                raise Unsupported(f"argument of type {v.type} to {op.name}")
        if len(set(tensor_dts)) != 1 or any(d is None for d in tensor_dts):
            raise Unsupported(f"{op.name}: mixed dtypes {tensor_dts}")
        first = tensor_dts[0]
        if scalar_cat and _CATEGORY[first] < scalar_cat:
            raise Unsupported(f"{op.name}: promotion by a scalar")
        p = op.promote
        if p is None:
            res = op.out_np
        elif p == "default":
            res = first if op.out_np is None else op.out_np
        elif p == "bool":
            res = _BOOL
        elif first.kind in "biu":
            raise Unsupported(f"{op.name}: int to float")
        else:
            res = first
        args = [self.name(i) for i in n.inputs]
        out = self.name(n.outputs[0])
        expr = _OP_EXPR.get(op.name)
        alpha_ok = op.name not in ("add.Tensor", "sub.Tensor") or n.inputs[2].constant() == 1
        if expr is not None and alpha_ok and (res is None or res == first) and first in _FLOATS:
            self.emit(depth, f"{out} = {expr.format(*args)}", n)
        else:
            k = self.stash(op.kernel, "K")
            call = f"{k}({', '.join(args)})"
            if res is None:
                self.emit(depth, f"{out} = {call}", n)
            else:
                d = self.stash(res, "dt")
                self.emit(depth, f"{out} = {call}", n)
                self.emit(depth, f"if {out}.dtype is not {d}: {out} = _np.asarray({out}).astype({d})")
        self.sd[n.outputs[0].id] = res if res is not None else first

    def fn_node(self, n, depth):
        if not _TEMPLATES:
            _TEMPLATES.append(_fn_templates())
        if self.inline_fn(n, depth):
            return
        entry = _TEMPLATES[0].get(n.fn)
        if entry is None:
            raise Unsupported(f"function {getattr(n.fn, '__qualname__', n.fn)}")
        fn, kind = entry
        tensors = [i for i in n.inputs if i.type is T.TensorType]
        dt = self._same(tensors, n) if tensors else self.dt
        args = [self.name(i) for i in n.inputs]
        nkw = len(n.kwnames)
        pos = args[:len(args) - nkw] if nkw else args
        kws = [f"{k}={a}" for k, a in zip(n.kwnames, args[len(args) - nkw:])] if nkw else []
        f = self.stash(fn, "t")
        outs = [self.name(o) for o in n.outputs]
        self.emit(depth, f"{outs[0]} = {f}({', '.join(pos + kws)})", n)
        o = n.outputs[0]
        if kind == "same":
            self.sd[o.id] = dt
        elif kind == "list":
            self.sd[o.id] = ("list", dt) if isinstance(o.type, T.ListType) else \
                ("tuple", [dt] * len(o.type.elems)) if isinstance(o.type, T.TupleType) else dt
        # "py": a Python value

    def inline_fn(self, n, depth):
        """F.linear and F.relu written out as NumPy expressions (the MLP hot path)."""
        from ember.nn import functional as F
        linear = getattr(F.linear, "__wrapped__", F.linear) \
            if getattr(F.linear, "_torch_function_front", False) else F.linear
        relu = getattr(F.relu, "__wrapped__", F.relu) \
            if getattr(F.relu, "_torch_function_front", False) else F.relu
        if (n.fn is not linear and n.fn is not relu) or len(n.outputs) != 1:
            return False
        args = dict(zip(("input", "weight", "bias") if n.fn is linear else ("input", "inplace"),
                        n.inputs[:len(n.inputs) - len(n.kwnames)]))
        args.update(zip(n.kwnames, n.inputs[len(n.inputs) - len(n.kwnames):]))
        out = n.outputs[0]
        if n.fn is linear and set(args) <= {"input", "weight", "bias"}:
            x, w = args["input"], args["weight"]
            if self.static(x) is not self.dt or self.static(w) is not self.dt:
                return False
            b = args.get("bias")
            o = self.name(out)
            self.emit(depth, f"{o} = _np.matmul({self.name(x)}, {self.name(w)}.T)", n)
            if b is not None and b.type is not T.NoneType:
                if self.static(b) is not self.dt:
                    raise Unsupported("linear bias of another dtype")
                self.emit(depth, f"{o} += {self.name(b)}")
            self.sd[out.id] = self.dt
            return True
        if n.fn is relu and set(args) <= {"input", "inplace"} and \
                args.get("inplace", None) is None or n.fn is relu and \
                args["inplace"].constant() is False:
            x = args["input"]
            if self.static(x) not in _FLOATS:
                return False
            self.emit(depth, f"{self.name(out)} = _np.maximum({self.name(x)}, 0)", n)
            self.sd[out.id] = self.static(x)
            return True
        return False

    def call_node(self, n, depth):
        callee = n.fn
        if getattr(callee, "graph", None) is None:
            raise Unsupported("a call that is not compiled code (a hooked submodule)")
        for i, p in zip(n.inputs[(1 if n.kind == "prim::CallMethod" else 0):],
                        callee.graph.inputs()[(1 if n.kind == "prim::CallMethod" else 0):]):
            if i.type is T.TensorType and self.static(i) is not self.dt:
                raise Unsupported("call with another dtype")
        variant = array_variant(callee, self.dt)
        if variant is None:
            raise Unsupported(f"callee {callee.qualified_name}")
        f = self.stash(variant, "fn")
        args = ", ".join(self.name(i) for i in n.inputs)
        outs = [self.name(o) for o in n.outputs]
        self.emit(depth, f"{outs[0] + ' = ' if outs else ''}{f}({args})", n)
        for o, sdt in zip(n.outputs, [variant._ember_out_static]):
            if sdt is not None:
                self.sd[o.id] = sdt

    # -- structural nodes with blocks: propagate dtypes through returns --------------------
    def n_prim_If(self, n, depth):
        super().n_prim_If(n, depth)
        for j, o in enumerate(n.outputs):
            if o.type is T.TensorType or isinstance(o.type, (T.ListType, T.TupleType)):
                a = self._maybe(n.blocks[0].returns[j])
                b = self._maybe(n.blocks[1].returns[j])
                if a is not None and b is not None and a != b:
                    raise Unsupported("branches of different dtypes")
                if a is not None or b is not None:
                    self.sd[o.id] = a if a is not None else b

    def _maybe(self, v):
        if v.id in self.sd:
            return self.sd[v.id]
        if v.node is not None and getattr(v.node, "kind", "") == "prim::Uninitialized":
            return None
        return self.static(v) if v.type is T.TensorType else None

    def n_prim_Loop(self, n, depth):
        body = n.blocks[0]
        for p, init in zip(body.params[1:], n.inputs[2:]):
            if init.id in self.sd:
                self.sd[p.id] = self.sd[init.id]
            elif p.type is T.TensorType:
                self.sd[p.id] = self.static(init)
        super().n_prim_Loop(n, depth)
        for p, r, o in zip(body.params[1:], body.returns[1:], n.outputs):
            if p.id in self.sd:
                if self._maybe(r) != self.sd[p.id]:
                    raise Unsupported("loop-carried value changes dtype")
                self.sd[o.id] = self.sd[p.id]

    def n_prim_GetAttr(self, n, depth):
        super().n_prim_GetAttr(n, depth)
        o = n.outputs[0]
        if o.type is T.TensorType:
            # the checks of _unwrap, written out (attribute reads cost less than a call)
            out = self.name(o)
            self.emit(depth, f"if type({out}) not in _PLAIN or {out}._requires_grad and _ge: "
                             f"raise _Bail")
            self.emit(depth, f"{out} = {out}._data")
            self.emit(depth, f"if {out}.dtype is not _DT: raise _Bail")
            self.sd[o.id] = self.dt
        elif o.type == T.OptionalType(T.TensorType):
            out = self.name(o)
            self.emit(depth, f"{out} = _unwrap({out}, _DT)")
            self.sd[o.id] = self.dt


_NOT = __import__("ember.jit._ir", fromlist=["NOT_CONSTANT"]).NOT_CONSTANT


def _torchbind(t):
    return isinstance(t, T.ClassType) and t.constants is not None and "$torchbind" in t.constants


def array_variant(fn, dt):
    """The array function of compiled Function ``fn`` for dtype ``dt`` (None: not eligible).
    Its arguments are the graph's inputs with tensors as arrays; tensor results stay arrays
    (the entry wraps them)."""
    cache = fn.__dict__.setdefault("_array_variants", {})
    if dt in cache:
        return cache[dt]
    cache[dt] = None                   # recursion guard
    try:
        variant = _generate(fn, dt)
    except Unsupported:
        variant = None
    cache[dt] = variant
    return variant


def _generate(fn, dt):
    from ember.jit._passes import clone_graph, dce, inline_calls
    # submodule methods inlined: one flat function per module call (calls are costly here)
    g = dce(inline_calls(clone_graph(fn.graph), only_methods=True))
    filename = f"<torchscript-array:{fn.name}:{next(_file_ids)}>"
    gen = ArrayGen(filename, dt)
    names = ([fn.self_name] if fn.owner is not None else []) + [a[0] for a in fn.arg_schema]
    params = []
    for v, hint in zip(g.inputs(), names):
        params.append(gen.names.setdefault(v.id, gen.new_name(hint)))
        if v.type is T.TensorType:
            gen.sd[v.id] = dt
        elif v.type == T.OptionalType(T.TensorType) or isinstance(v.type, (T.ListType, T.TupleType)) \
                and _holds_tensors(v.type):
            raise Unsupported("container or optional tensor argument")
    gen.emit(0, f"def {gen.new_name(fn.name)}({', '.join(params)}):")
    gen.emit(1, "_ge = _state.grad_enabled")
    gen.block(g.block, 1)
    rets = [gen.name(v) for v in g.outputs()]
    gen.emit(1, f"return {rets[0]}")
    src = "\n".join(gen.lines) + "\n"
    code = compile(src, filename, "exec")
    exec(code, gen.env)
    LINE_MAP[filename] = gen.linemap
    out = [v for v in gen.env.values() if callable(v) and getattr(v, "__code__", None) is not None
           and v.__code__.co_filename == filename][0]
    r = g.outputs()[0]
    out._ember_out_static = gen.sd.get(r.id)
    out.__ember_source__ = src
    return out


def _holds_tensors(t):
    if t is T.TensorType:
        return True
    if isinstance(t, T.ListType):
        return _holds_tensors(t.elem)
    if isinstance(t, T.TupleType):
        return any(_holds_tensors(e) for e in t.elems)
    if isinstance(t, T.OptionalType):
        return _holds_tensors(t.elem)
    return False


def _wrap(x, t):
    from ember._tensor import _make
    if t is T.TensorType:
        return _make(x if type(x) is np.ndarray else np.asarray(x))
    if isinstance(t, T.TupleType) and _holds_tensors(t):
        vals = tuple(_wrap(v, e) for v, e in zip(x, t.elems))
        return t.py_class(*vals) if t.py_class is not None else vals
    if isinstance(t, T.ListType) and _holds_tensors(t):
        return [_wrap(v, t.elem) for v in x]
    if isinstance(t, T.OptionalType) and x is not None:
        return _wrap(x, t.elem)
    return x


_NOT_RUN = (False, None)


def try_run(fn, args, self_obj=None, tensors_only=False):
    """Run ``fn`` on the array path if eligible; returns (True, result) or (False, None).
    ``tensors_only``: every argument must be a plain Tensor (the caller skipped binding)."""
    st = state
    fd = fn.__dict__
    if st.modes or fd.get("_no_array_path"):
        return _NOT_RUN
    tensor_cls = _TENSOR[0] if _TENSOR else _Tensor()
    dt = None
    grad = st.grad_enabled
    arrays = []
    for a in args:
        if tensors_only and type(a) is not tensor_cls:
            return _NOT_RUN
        if type(a) is tensor_cls:
            d = a._data
            if dt is None:
                dt = d.dtype
                if dt not in _FLOATS:
                    return False, None
            elif d.dtype is not dt:
                return False, None
            if grad and a._requires_grad:
                return False, None
            arrays.append(d)
        elif isinstance(a, tensor_cls):
            return False, None
        else:
            arrays.append(a)
    if dt is None:
        dt = _dtype._default[0].np
        if dt not in _FLOATS:
            return False, None
    variants = fd.get("_array_variants")
    variant = variants.get(dt, _MISSING) if variants is not None else _MISSING
    if variant is _MISSING:
        variant = array_variant(fn, dt)
    if variant is None:
        fd["_no_array_path"] = True
        return _NOT_RUN
    if grad and fd.get("_grad_bailed"):
        return _NOT_RUN
    try:
        if self_obj is not None:
            res = variant(self_obj, *arrays)
        else:
            res = variant(*arrays)
    except Bail:
        if grad:
            fd["_grad_bailed"] = True
        return _NOT_RUN
    except Exception:          # noqa: BLE001 - the normal path raises torch's error
        return _NOT_RUN
    rt = fn.return_type
    if rt is T.TensorType and type(res) is np.ndarray:
        return True, _make()(res)
    return True, _wrap(res, rt)


_MISSING = object()
_MAKE = []


def _make():
    if not _MAKE:
        from ember._tensor import _make as make
        _MAKE.append(make)
    return _MAKE[0]
