"""``jit.save``: a scripted module or function as torch's TorchScript archive (a zip):

    <name>/data.pkl                 the module object tree (``__torch__.M`` objects whose
                                    state is their attributes; tensors as storages)
    <name>/data/<k>                 the storages of data.pkl's tensors
    <name>/code/__torch__/....py    each class / function as TorchScript source
    <name>/constants.pkl            tensor constants of the code (``CONSTANTS.c<k>``),
    <name>/constants/<k>            and their storages
    <name>/version                  file-format version (3, more when upgradable ops occur)
    <name>/byteorder, <name>/.data/serialization_id, <name>/extra/<file> (``_extra_files``)

Classes of distinct module instances that print differently but share a name are renamed
``<module>.___torch_mangle_<k>.<Name>`` as torch does. A free function is saved as torch
does, as the ``forward`` of a ``PlaceholderModule``.
"""
from __future__ import annotations

import collections
import io
import os
import pickle
import sys

import numpy as np

from ember import serialization as _ser
from ember.jit import _printer as P
from ember.jit import _types as T


class _ArchiveContext(P.PrintContext):
    """Print context with archive names for classes (mangled where bodies differ)."""

    def __init__(self):
        super().__init__()
        self.names = {}          # id(ClassType) -> archive qualname
        self.archive = True

    def qualname(self, t):
        if isinstance(t, T.ClassType):
            q = self.names.get(id(t))
            if q is not None:
                return q
        return P._named_tuple_qualname(t) or P._sanitize_qualname(t.qualname)


# ----------------------------------------------------------------------------- pickling

class _Object:
    """A ``__torch__`` object to pickle: GLOBAL class, NEWOBJ, then its state dict."""
    __slots__ = ("qualname", "state")

    def __init__(self, qualname, state):
        self.qualname, self.state = qualname, state


class _Typed:
    """A container pickled with torch's type tag (``build_intlist``, ``restore_type_tag``)."""
    __slots__ = ("kind", "value", "tag")

    def __init__(self, kind, value, tag=None):
        self.kind, self.value, self.tag = kind, value, tag


class _EnumMember:
    """An enum member as torch pickles it: GLOBAL ``__torch__ Color``, its value, REDUCE."""
    __slots__ = ("qualname", "value")

    def __init__(self, qualname, value):
        self.qualname, self.value = qualname, value


class _JitPickler(_ser._TorchPickler):
    dispatch = dict(_ser._TorchPickler.dispatch)
    _float_qparams_scheme = True

    def save_object(self, obj):
        module, _, name = obj.qualname.rpartition(".")
        self.save(_ser._g(module, name))
        self.write(pickle.EMPTY_TUPLE + pickle.NEWOBJ)
        self.memoize(obj)
        self.save(obj.state)
        self.write(pickle.BUILD)

    dispatch[_Object] = save_object

    def save_typed(self, obj):
        if obj.kind == "tag":
            self.save_reduce(_ser._g("torch.jit._pickle", "restore_type_tag"),
                             (obj.value, obj.tag), obj=obj)
        else:
            self.save_reduce(_ser._g("torch.jit._pickle", obj.kind), (obj.value,), obj=obj)

    dispatch[_Typed] = save_typed

    def save_enum(self, obj):
        # torch's form: the bare value (not an argument tuple) before REDUCE
        module, _, name = obj.qualname.rpartition(".")
        self.save(_ser._g(module, name))
        self.save(obj.value)
        self.write(pickle.REDUCE)
        self.memoize(obj)

    dispatch[_EnumMember] = save_enum

    def reducer_override(self, obj):
        if isinstance(obj, self._Tensor):
            if obj.is_quantized:
                return self._reduce_qtensor(obj)
            if obj.dtype.name not in _ser._STORAGE_NAMES:
                raise NotImplementedError(f"ember.jit.save: a {obj.dtype} tensor (torch's "
                                          f"TorchScript archives hold only legacy storage types)")
            if hasattr(obj._data, "layout"):
                raise NotImplementedError("ember.jit.save: sparse tensors")
            return (_ser._g("torch._utils", "_rebuild_tensor_v2"), self._tensor_args(obj))
        return super().reducer_override(obj)


def _constant(c):
    """A tensor constant, or a packed-parameters object (a traced quantized module's)."""
    if isinstance(c, ember_tensor()):
        return c.detach()
    return _torchbind(c)


def _torchbind(v):
    """A packed-parameters object as torch pickles it; a conv's state lists are typed
    (``build_tensorlist``, ``List[Optional[Tensor]]``)."""
    from ember.jit._namespaced import torchbind_object
    qualname, state = torchbind_object(v)
    if qualname.endswith(".rnn.CellParamsBase"):    # (kind, tensors, doubles, longs, packed)
        kind, tensors, doubles, longs, packed = state
        packed = [_torchbind(p) for p in packed]
        tag = f"List[{packed[0].qualname}]" if packed else "List[Any]"
        return _Object(qualname, (kind, _Typed("build_tensorlist", list(tensors)),
                                  _Typed("build_doublelist", list(doubles)),
                                  _Typed("build_intlist", list(longs)),
                                  _Typed("tag", packed, tag)))
    if isinstance(state, tuple) and len(state) == 3 and isinstance(state[1], list):
        state = (state[0], _Typed("build_tensorlist", state[1]),
                 _Typed("tag", state[2], "List[Optional[Tensor]]"))
    return _Object(qualname, state)


def ember_tensor():
    from ember._tensor import Tensor
    return Tensor


_LIST_BUILDERS = {T.IntType: "build_intlist", T.FloatType: "build_doublelist",
                  T.BoolType: "build_boollist", T.TensorType: "build_tensorlist"}


def _encode(v, t, ctx):
    """A Python attribute value in the form torch's unpickler rebuilds as type ``t``."""
    import ember
    if v is None:
        return None
    if isinstance(t, T.OptionalType):
        return _encode(v, t.elem, ctx)
    if isinstance(t, T.ListType):
        items = [_encode(x, t.elem, ctx) for x in v]
        builder = _LIST_BUILDERS.get(t.elem)
        if builder is not None:
            return _Typed(builder, items)
        return _Typed("tag", items, P.type_str(t, ctx))
    if isinstance(t, T.DictType):
        d = {_encode(k, t.key, ctx): _encode(x, t.value, ctx) for k, x in v.items()}
        return _Typed("tag", d, P.type_str(t, ctx))
    if isinstance(t, T.TupleType):
        return tuple(_encode(x, e, ctx) for x, e in zip(v, t.elems))
    if t is T.FloatType:
        return float(v)
    if t is T.DtypeType and isinstance(v, ember.dtype):
        from ember.jit._builtins import SCALAR_TYPE_CODE
        return SCALAR_TYPE_CODE[v]
    if isinstance(t, T.EnumType):
        P.type_str(t, ctx)                       # (its class goes into code/)
        return _EnumMember(t.qualname, v.value)
    if isinstance(t, T.ClassType) and t.constants and "$torchbind" in t.constants:
        return _torchbind(v)                     # packed parameters
    if isinstance(t, T.ClassType) and not t.is_module:
        raise NotImplementedError(f"ember.jit.save: an attribute holding a {t.qualname} object")
    return v


# ----------------------------------------------------------------------------- modules

def _modules_postorder(root):
    seen, out = set(), []

    def walk(m):
        if id(m) in seen:
            return
        seen.add(id(m))
        for ch in m._modules.values():
            if ch is not None:
                walk(ch)
        out.append(m)
    walk(root)
    return out


def _attr_value(m, name, slots):
    where = slots.get(name)
    if where == "_parameters":
        return m._parameters.get(name)
    if where == "_buffers":
        return m._buffers.get(name)
    if where == "_modules":
        return m._modules.get(name)
    if name == "training":
        return m.training
    return m.__dict__.get(name, getattr(m, name, None))


def _check_compiled(m):
    from ember.jit._script import Function
    for name, fn in (m._ct.methods or {}).items():
        if fn == "compiling" or (fn is not None and not isinstance(fn, Function)):
            raise RuntimeError(f"ember.jit.save: method {name} of {m.original_name} is not "
                               f"compiled")


def _assign_class_names(modules, ctx):
    """Archive qualname per module class; same-named classes that print differently get
    ``___torch_mangle_<k>``. Returns {qualname: source text} of module classes."""
    bodies = {}
    by_base = collections.defaultdict(list)
    mangle = 0
    for m in modules:
        ct = m._ct
        _check_compiled(m)
        base = P._sanitize_qualname(ct.qualname)
        ctx.names[id(ct)] = base
        text = P.class_code(ct, ctx, base.rpartition(".")[2])
        for q in by_base[base]:
            if _rename(bodies[q], q, base) == text:
                ctx.names[id(ct)] = q
                break
        else:
            if by_base[base]:
                prefix, _, last = base.rpartition(".")
                q = f"{prefix}.___torch_mangle_{mangle}.{last}"
                mangle += 1
                ctx.names[id(ct)] = q
                text = P.class_code(ct, ctx, last)
            else:
                q = base
            by_base[base].append(q)
            bodies[q] = text
    return bodies


def _rename(text, q, base):
    return text if q == base else text.replace(q, base)


def _state(m, ctx, records):
    ct = m._ct
    getstate = (ct.methods or {}).get("__getstate__")
    if getstate is not None and "__setstate__" in ct.methods:
        # pickled by its own __getstate__ (torch's quantized Conv modules): the tuple it
        # returns, which the archive's __setstate__ reads back
        return _encode(getstate.call_method(m, [], {}), getstate.return_type, ctx)
    slots = (ct.constants or {}).get("$slots", {})
    state = {}
    for name, t in ct.attributes.items():
        v = _attr_value(m, name, slots)
        if slots.get(name) == "_modules":
            state[name] = records[id(v)] if v is not None else None
        else:
            state[name] = _encode(v, t, ctx)
    return state


# ----------------------------------------------------------------------------- save

def _placeholder(sf):
    """A ScriptFunction as torch saves it: the forward of a PlaceholderModule."""
    from ember.jit._script import Function
    fn = sf._function
    ct = T.ClassType("__torch__.PlaceholderModule", None, True, {"training": T.BoolType}, {},
                     {"$slots": {}})
    method = Function("forward", "__torch__.PlaceholderModule.forward", fn.graph,
                      fn.arg_schema, fn.return_type, ct, "self")
    ct.methods["forward"] = method
    return method, ct


def _code_files(ctx, class_bodies):
    """{path under code/: source} for module classes, other classes, named tuples and the
    free functions the code calls (printing them can reference more)."""
    files = collections.defaultdict(list)

    def add(q, text):
        prefix = q.rpartition(".")[0]
        files[prefix.replace(".", "/") + ".py"].append(text)

    for q, text in class_bodies.items():
        add(q, text)
    done = set()
    while True:
        pending = [(q, "fn", f) for q, f in ctx.functions.items() if ("fn", q) not in done]
        pending += [(q, "nt", t) for q, t in ctx.named_tuples.items() if ("nt", q) not in done]
        pending += [(q, "cls", t) for q, t in ctx.classes.items() if ("cls", q) not in done]
        pending += [(q, "src", t) for q, t in ctx.sources.items() if ("src", q) not in done]
        pending += [(q, "enum", t) for q, t in ctx.enums.items() if ("enum", q) not in done]
        if not pending:
            break
        for q, kind, obj in pending:
            done.add((kind, q))
            last = q.rpartition(".")[2]
            if kind == "fn":
                text = P.free_function_code(obj, ctx).replace(f"def {obj.name}(", f"def {last}(", 1)
            elif kind == "src":
                text = obj
            elif kind == "nt":
                text = P.named_tuple_code(obj, ctx, last)
            elif kind == "enum":
                text = P.enum_class_code(obj, ctx, last)
            else:
                from ember.jit._script import class_method
                if obj.py_class is not None and "__init__" in obj.py_class.__dict__:
                    class_method(obj, "__init__")
                text = P.plain_class_code(obj, ctx, last)
            add(q, text)
    return {path: "".join(parts) for path, parts in files.items()}


def _archive_name(f):
    if isinstance(f, (str, os.PathLike)):
        base = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        try:
            base.encode("ascii")
        except UnicodeEncodeError:
            base = "archive"
        return base or "archive"
    return "archive"


def _pickle(obj):
    buf = io.BytesIO()
    p = _JitPickler(buf, 2)
    p.dump(obj)
    return buf.getvalue(), p.storages


def save(m, f, _extra_files=None):
    """Save a scripted module / function to ``f`` (a path or a binary file object) as a
    TorchScript archive torch's ``jit.load`` reads."""
    from ember.jit._modules import RecursiveScriptModule
    from ember.jit._script import ScriptFunction
    if not isinstance(f, (str, os.PathLike)) and not hasattr(f, "write"):
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'write'")
    m = getattr(m, "__dict__", {}).get("_ember_compiled", m)   # a ScriptModule subclass
    if isinstance(m, RecursiveScriptModule):
        for name, sub in m.named_modules():
            if sub._forward_hooks or sub._forward_pre_hooks:
                raise NotImplementedError(
                    f"ember.jit.save: forward hooks of scripted modules are not written into "
                    f"archives yet (module '{name or type(sub).__name__}'); remove them before "
                    f"scripting to save")
    ctx = _ArchiveContext()
    if isinstance(m, ScriptFunction):
        method, ct = _placeholder(m)
        ctx.names[id(ct)] = "__torch__.PlaceholderModule"
        bodies = {"__torch__.PlaceholderModule": P.class_code(ct, ctx, "PlaceholderModule")}
        root = _Object("__torch__.PlaceholderModule", {"training": True})
    elif isinstance(m, RecursiveScriptModule):
        modules = _modules_postorder(m)
        bodies = _assign_class_names(modules, ctx)
        records = {}
        for mod in modules:
            records[id(mod)] = _Object(ctx.names[id(mod._ct)], None)
        for mod in modules:
            records[id(mod)].state = _state(mod, ctx, records)
        root = records[id(m)]
    else:
        raise AttributeError(f"'{type(m).__name__}' object has no attribute 'save' (ember.jit."
                             f"save takes a scripted module or function)")
    code = _code_files(ctx, bodies)
    data, storages = _pickle(root)
    consts, const_storages = _pickle(tuple(_constant(c) for c in ctx.constants))

    archive = _archive_name(f)
    buf = io.BytesIO()
    z = _ser._AlignedZip(buf, archive)
    for name, content in (_extra_files or {}).items():
        z.write(f"extra/{name}", content.encode("utf-8") if isinstance(content, str) else
                bytes(content))
    for ref in sorted(storages.values(), key=lambda r: int(r.key)):
        z.write(f"data/{ref.key}", np.ascontiguousarray(ref.bytes).tobytes())
    z.write("data.pkl", data)
    for path in sorted(code, key=lambda p: (p.count("/"), p)):
        z.write(f"code/{path}", code[path].encode("utf-8"))
    for ref in sorted(const_storages.values(), key=lambda r: int(r.key)):
        z.write(f"constants/{ref.key}", np.ascontiguousarray(ref.bytes).tobytes())
    z.write("constants.pkl", consts)
    z.write("version", f"{ctx.version}\n".encode())
    z.write("byteorder", sys.byteorder.encode())
    z.write(".data/serialization_id", _ser._serialization_id().encode())
    z.close()
    if isinstance(f, (str, os.PathLike)):
        parent = os.path.dirname(os.fspath(f))
        if parent and not os.path.isdir(parent):
            raise RuntimeError(f"Parent directory {parent} does not exist.")
        if os.path.isdir(f):
            raise RuntimeError(f"open file failed with strerror: Is a directory ({os.fspath(f)})")
        with open(f, "wb") as fh:
            fh.write(buf.getvalue())
    else:
        f.write(buf.getvalue())
