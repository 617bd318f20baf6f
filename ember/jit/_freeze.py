"""``jit.freeze`` and ``jit.optimize_for_inference``.

Freezing an eval-mode scripted module: ``forward`` (and the ``preserved_attrs`` methods) are
inlined down to ops; every attribute read (``prim::GetAttr`` chains from ``self``) of a
parameter, buffer or value that no method writes becomes a constant; then

    constant propagation with tensors   (weight-only subgraphs such as ``w.t()`` fold)
    dropout removal                     (``F.dropout*`` with training False -> its input)
    conv-bn / linear-bn folding         (the batch norm's scale and shift go into the
                                         conv's or linear's weight and bias)
    CSE, DCE

The result is a new ``RecursiveScriptModule`` holding only the attributes still read.
"""
from __future__ import annotations

import inspect

import ember
from ember.jit import _types as T
from ember.jit._ir import Node
from ember.jit._passes import (_may_mutate, clone_graph, constant_propagation, cse, dce,
                               inline_calls, peephole)


def _plain(f):
    """``f`` without ember.overrides' ``__torch_function__`` front (graph nodes hold it)."""
    return f.__wrapped__ if getattr(f, "_torch_function_front", False) else f


def _functional():
    from ember.nn import functional as F
    convs = {_plain(F.conv1d), _plain(F.conv2d), _plain(F.conv3d)}
    drops = {_plain(getattr(F, n)) for n in ("dropout", "dropout1d", "dropout2d", "dropout3d",
                                             "alpha_dropout", "feature_alpha_dropout")
             if hasattr(F, n)}
    return F, convs, drops


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """A frozen copy of scripted, eval-mode ``mod`` (see the module docstring)."""
    import warnings
    from ember.jit._modules import ScriptModule
    # raised from inside the library, as torch's: hidden under the default filters
    warnings.warn("`torch.jit.freeze` is deprecated. Please use `torch.compile` instead.",
                  DeprecationWarning, stacklevel=1)
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    preserved = list(preserved_attrs or [])
    ct = mod._ct
    methods = ["forward"] + [p for p in preserved if isinstance(ct.methods.get(p), object)
                             and _is_method(mod, p)]
    mutated = _mutated_attributes(mod, methods)
    graphs = {}
    for name in methods:
        fn = mod._method(name) if name != "forward" else ct.methods.get("forward")
        if fn is None or isinstance(fn, str):
            raise RuntimeError(f"Method '{name}' is not defined on the module")
        g = inline_calls(clone_graph(fn.graph), only_methods=True)
        _constant_attributes(g, mod, mutated, set(preserved))
        constant_propagation(g, fold_tensors=True)
        _remove_dropout(g)
        if optimize_numerics:
            _fold_batch_norm(g)
        constant_propagation(g, fold_tensors=True)
        cse(g)
        peephole(g)
        dce(g)
        graphs[name] = (fn, g)
    return _build(mod, graphs, preserved)


def optimize_for_inference(mod, other_methods=None):
    """Freeze (if not frozen yet) and run the inference passes."""
    if not getattr(mod, "_ember_frozen", False):
        if mod.training:
            mod = mod.eval()
        mod = freeze(mod, preserved_attrs=other_methods)
    return mod


def _is_method(mod, name):
    from ember.jit._modules import _find_method
    return callable(_find_method(mod.original_class, name))


# --------------------------------------------------------------------------- attributes

def _mutated_attributes(mod, methods):
    """(id of module object, attribute name) of every attribute a method writes."""
    out = set()
    for name in methods:
        fn = mod._method(name) if name != "forward" else mod._ct.methods.get("forward")
        if fn is None or isinstance(fn, str):
            continue
        g = inline_calls(clone_graph(fn.graph), only_methods=True)
        objects = _resolve_objects(g, mod)
        for n in g.all_nodes():
            if n.kind == "prim::SetAttr":
                obj = objects.get(n.inputs[0].id)
                if obj is not None:
                    out.add((id(obj), n.attrs["name"]))
    return out


def _resolve_objects(g, mod):
    """Value id -> the module object it is, for ``self`` and GetAttr chains of submodules."""
    objects = {g.inputs()[0].id: mod}
    for n in g.all_nodes():
        if n.kind == "prim::GetAttr" and n.inputs[0].id in objects:
            base = objects[n.inputs[0].id]
            o = n.outputs[0]
            if isinstance(o.type, T.ClassType) and o.type.is_module:
                objects[o.id] = base._modules[n.attrs["name"]]
    return objects


def _constant_attributes(g, mod, mutated, preserved):
    objects = _resolve_objects(g, mod)
    for n in list(g.all_nodes()):
        if n.kind != "prim::GetAttr" or n.inputs[0].id not in objects:
            continue
        obj = objects[n.inputs[0].id]
        name = n.attrs["name"]
        o = n.outputs[0]
        if isinstance(o.type, T.ClassType):
            continue
        if (id(obj), name) in mutated or obj is mod and name in preserved:
            continue
        if o.type is T.TensorType and any(_may_mutate(u) for u, _ in o.uses if isinstance(u, Node)):
            continue            # written in place (a buffer updated by an in-place op)
        value = getattr(obj, name)
        if isinstance(value, ember.Tensor):
            value = value.detach().clone()
        c = Node("prim::Constant", (), {} if value is None else {"value": value})
        c.add_output(o.type, o.debug_name)
        n.owner.insert_before(n, c)
        o.replace_all_uses_with(c.output)
        n.destroy()


# --------------------------------------------------------------------------- rewrites

def _arguments(n):
    """The callee's parameters bound to the node's inputs (name -> Value)."""
    sig = inspect.signature(n.fn)
    nkw = len(n.kwnames)
    pos = n.inputs[:len(n.inputs) - nkw] if nkw else n.inputs
    bound = sig.bind_partial(*pos, **dict(zip(n.kwnames, n.inputs[len(n.inputs) - nkw:])))
    return sig, dict(bound.arguments)


def _value(args, name, sig):
    v = args.get(name)
    if v is None:
        return sig.parameters[name].default
    c = v.constant()
    from ember.jit._ir import NOT_CONSTANT
    return NotImplemented if c is NOT_CONSTANT else c


def _remove_dropout(g):
    _, _, drops = _functional()
    for n in list(g.all_nodes()):
        if n.fn in drops and n.owner is not None:
            sig, args = _arguments(n)
            training = _value(args, "training", sig)
            if training is False or _value(args, "p", sig) == 0.0:
                n.outputs[0].replace_all_uses_with(args["input"])
                n.destroy()


def _fold_batch_norm(g):
    F, convs, _ = _functional()
    for bn in list(g.all_nodes()):
        if bn.fn is not _plain(F.batch_norm) or bn.owner is None:
            continue
        sig, args = _arguments(bn)
        x = args.get("input")
        producer = x.node if x is not None else None
        if not isinstance(producer, Node) or (producer.fn not in convs and
                                              producer.fn is not _plain(F.linear)):
            continue
        if len(x.uses) != 1 or producer.owner is not bn.owner:
            continue
        vals = {k: _value(args, k, sig) for k in ("running_mean", "running_var", "weight", "bias",
                                                  "training", "eps")}
        if vals["training"] is not False or any(v is NotImplemented for v in vals.values()) \
                or vals["running_mean"] is None or vals["running_var"] is None:
            continue
        psig, pargs = _arguments(producer)
        w, b = _value(pargs, "weight", psig), _value(pargs, "bias", psig)
        if not isinstance(w, ember.Tensor) or b is NotImplemented:
            continue
        with ember.no_grad():
            inv = (vals["running_var"] + vals["eps"]).rsqrt()
            scale = inv if vals["weight"] is None else vals["weight"] * inv
            shift = -vals["running_mean"] * scale
            if vals["bias"] is not None:
                shift = shift + vals["bias"]
            shape = (-1,) + (1,) * (w.dim() - 1)
            new_w = (w * scale.reshape(shape)).to(w.dtype)
            new_b = (shift if b is None else b * scale + shift).to(w.dtype)
        _rebuild_with(producer, psig, pargs, {"weight": new_w, "bias": new_b})
        bn.outputs[0].replace_all_uses_with(producer.outputs[0] if producer.owner is not None
                                            else _replacement[producer])
        bn.destroy()


_replacement = {}


def _rebuild_with(n, sig, args, new_constants):
    """Replace node ``n`` by one calling the same function with every parameter given
    positionally and ``new_constants`` in place of some arguments."""
    block = n.owner
    inputs = []
    for name, p in sig.parameters.items():
        if name in new_constants:
            c = Node("prim::Constant", (), {"value": new_constants[name]})
            c.add_output(T.TensorType)
            block.insert_before(n, c)
            inputs.append(c.output)
        elif name in args:
            inputs.append(args[name])
        else:
            d = p.default
            c = Node("prim::Constant", (), {} if d is None else {"value": d})
            c.add_output(T.type_of_value(d) if d is not None else T.NoneType)
            block.insert_before(n, c)
            inputs.append(c.output)
    new = Node(n.kind, inputs, n.attrs, n.source)
    new.fn, new.op = n.fn, n.op
    new.add_output(n.outputs[0].type, n.outputs[0].debug_name)
    block.insert_before(n, new)
    n.outputs[0].replace_all_uses_with(new.output)
    _replacement[n] = new.output
    n.destroy()


# --------------------------------------------------------------------------- the module

def _build(mod, graphs, preserved):
    from ember.jit._modules import RecursiveScriptModule
    from ember.jit._script import Function
    ct = mod._ct
    used = set()
    for _, g in graphs.values():
        self_v = g.inputs()[0]
        for n, _ in self_v.uses:
            if getattr(n, "kind", "") in ("prim::GetAttr", "prim::SetAttr"):
                used.add(n.attrs["name"])
    used.update(p for p in preserved if not _is_method(mod, p))
    attrs = {k: t for k, t in ct.attributes.items() if k in used or k == "training"}
    slots = {k: v for k, v in ct.constants.get("$slots", {}).items() if k in used}
    constants = {k: v for k, v in ct.constants.items() if not k.startswith("$")}
    constants["$slots"] = slots
    new_ct = T.ClassType(ct.qualname, ct.py_class, True, attrs, {}, constants)
    plain = {k: getattr(mod, k) for k in used if k in ct.attributes and k not in slots}
    children = {k: m for k, m in mod._modules.items() if k in used}
    frozen = RecursiveScriptModule._construct(_Original(mod), new_ct, children, plain)
    for k in used:
        if slots.get(k) == "_parameters":
            frozen._parameters[k] = mod._parameters[k]
        elif slots.get(k) == "_buffers":
            frozen._buffers[k] = mod._buffers[k]
    frozen.__dict__["original_class"] = mod.original_class
    frozen.__dict__["original_name"] = mod.original_name
    frozen.__dict__["_ember_frozen"] = True
    frozen.training = False
    for name, (fn, g) in graphs.items():
        g.inputs()[0].set_type(new_ct)
        new = Function(fn.name, fn.qualified_name, g, fn.arg_schema, fn.return_type, new_ct,
                       fn.self_name)
        new_ct.methods[name] = new
        new.finish()
    return frozen


class _Original:
    """Stands for the original module while the frozen one is constructed (nothing of the
    original's parameters is copied: ``_build`` adds the attributes still read)."""

    def __init__(self, mod):
        self._parameters, self._buffers = {}, {}
        self._non_persistent_buffers_set = set()
        self.training = False
        self._cls = mod.original_class

    def __getattr__(self, name):
        raise AttributeError(name)


_Original.__name__ = "Original"
