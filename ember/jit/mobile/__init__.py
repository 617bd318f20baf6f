"""``torch.jit.mobile``: models for the lite interpreter (``.ptl``).

A ``.ptl`` is the TorchScript archive (``jit.save``) plus ``bytecode.pkl``: per method its
instructions, operator list (torch's names and overloads), constants, types and register
count, in bytecode version 8. ``_load_for_lite_interpreter`` runs one in ``ember.lite`` (the
NumPy runtime) and converts tensors at the boundary.
"""
from __future__ import annotations

import contextlib
import io
import os

import numpy as np

import ember
from ember.jit.mobile._bytecode import BYTECODE_VERSION, Generator, type_str

__all__ = ["_load_for_lite_interpreter", "LiteScriptModule", "_save_for_lite_interpreter",
           "export_opnames", "_export_operator_list", "_get_model_bytecode_version",
           "_get_model_ops_and_info", "OperatorInfo"]


# ----------------------------------------------------------------------------- loading

def _to_numpy(v):
    if isinstance(v, ember.Tensor):
        return np.ascontiguousarray(v.detach().numpy())
    if isinstance(v, (list, tuple)):
        return type(v)(_to_numpy(x) for x in v)
    return v


def _to_ember(v):
    if isinstance(v, np.ndarray):
        return ember.from_numpy(np.array(v))
    if isinstance(v, (list, tuple)):
        return type(v)(_to_ember(x) for x in v)
    return v


class LiteScriptModule:
    """A loaded ``.ptl`` run by ``ember.lite``; takes and returns ember tensors."""

    def __init__(self, lite_module):
        self._lite = lite_module

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, *args):
        return self.run_method("forward", *args)

    def run_method(self, name, *args):
        return _to_ember(self._lite.run_method(name, *[_to_numpy(a) for a in args]))

    def find_method(self, name):
        try:
            self._lite.find_method(name)
            return True
        except RuntimeError:
            return False

    def operator_names(self):
        return self._lite.operator_names()


def _load_for_lite_interpreter(f, map_location=None):
    """Load a ``.ptl`` written by torch or ember (path or binary file)."""
    from ember import lite
    if isinstance(f, (str, os.PathLike)) and not os.path.exists(f):
        raise ValueError(f"The provided filename {f} does not exist")
    return LiteScriptModule(lite.load(f))


def _get_model_bytecode_version(f):
    from ember_lite._format import read
    return read(f)[0]


# ----------------------------------------------------------------------------- saving

def _encode_constant(v):
    from ember.jit import _serialization_save as S
    if isinstance(v, ember.Tensor):
        return v.detach().contiguous()
    if isinstance(v, ember.dtype):
        from ember.jit._builtins import SCALAR_TYPE_CODE
        return SCALAR_TYPE_CODE[v]
    if isinstance(v, ember.device):
        return str(v)
    if isinstance(v, (list, tuple)):
        items = [_encode_constant(x) for x in v]
        for kind, test in (("build_intlist", lambda x: type(x) is int),
                           ("build_doublelist", lambda x: type(x) is float),
                           ("build_boollist", lambda x: type(x) is bool),
                           ("build_tensorlist", lambda x: isinstance(x, ember.Tensor))):
            if all(test(x) for x in items) and (items or kind == "build_intlist"):
                return S._Typed(kind, items)
        return tuple(items) if isinstance(v, tuple) else items
    return v


def _pickler_class():
    from ember import serialization as _ser
    from ember.jit import _serialization_save as S

    class BytecodePickler(S._JitPickler):
        """Storages keyed ``bytecode_<k>`` (stored under ``constants/``)."""

        def _storage_of(self, t):
            root = t._root()._data
            ref = self.storages.get(id(root))
            if ref is None:
                ref = _ser._StorageRef(f"bytecode_{len(self.storages)}",
                                       t.untyped_storage()._bytes, t.dtype)
                self.storages[id(root)] = ref
                self._keep.append(root)
            return ref
    return BytecodePickler


def _schema(fn, names, self_type):
    def arg(name, t, default=None):
        return (("name", name), ("type", t), ("default_value", default))
    args = [arg("self", self_type)]
    for name, t, has_default, default, *_ in fn.arg_schema:
        args.append(arg(name, type_str(t, names), default if has_default else None))
    rets = (arg("", type_str(fn.return_type, names)),)
    return (("arguments", tuple(args)), ("returns", rets))


def _methods(m):
    from ember.jit._script import Function
    out = {}
    for name, fn in (m._ct.methods or {}).items():
        if isinstance(fn, Function):
            out[name] = fn
    if "forward" not in out and hasattr(m, "_method"):
        out["forward"] = m._method("forward")
    return out


@contextlib.contextmanager
def _unfused(m):
    """While the archive is written, methods with fused ``ember::`` nodes use graphs with
    the plain conv/linear and activation nodes (torch's printer has no fused ops)."""
    from ember.jit._script import Function
    from ember.utils.mobile_optimizer import FUSED_KINDS
    swapped = {}
    for name, fn in _methods(m).items():
        if any(n.kind in FUSED_KINDS for n in fn.graph.all_nodes()):
            from ember.jit._passes import clone_graph
            g = clone_graph(fn.graph)
            _expand_fused(g)
            new = Function(fn.name, fn.qualified_name, g, fn.arg_schema, fn.return_type,
                           m._ct, fn.self_name)
            new.finish(optimize=False)
            swapped[name] = fn
            m._ct.methods[name] = new
    try:
        yield
    finally:
        m._ct.methods.update(swapped)


def _expand_fused(g):
    from ember.jit import _types as T
    from ember.jit._ir import Node
    from ember.nn import functional as F
    from ember.utils.mobile_optimizer import FUSED_KINDS
    from ember._ops.registry import OPS
    for n in list(g.all_nodes()):
        if n.kind not in FUSED_KINDS:
            continue
        base, nargs = FUSED_KINDS[n.kind]
        first = Node(base, n.inputs[:nargs], {}, n.source)
        if base == "aten::add":
            first.op = OPS.get("add.Tensor")
        else:
            first.fn = F.conv2d if base == "aten::conv2d" else F.linear
        y = first.add_output(T.TensorType)
        n.owner.insert_before(n, first)
        bounds = n.inputs[nargs:]
        if not bounds or bounds[1].constant() is None:
            act = Node("aten::relu", [y], {}, n.source)
            act.op = OPS.get("relu")
        else:
            act = Node("aten::hardtanh", [y, *bounds], {}, n.source)
            act.fn = F.hardtanh
        act.add_output(T.TensorType, n.outputs[0].debug_name)
        n.owner.insert_before(n, act)
        n.outputs[0].replace_all_uses_with(act.outputs[0])
        n.destroy()


def _bytecode(m, names):
    """The ``bytecode.pkl`` tuple of module ``m`` (archive class names ``names``)."""
    from ember.jit._passes import clone_graph, inline_calls
    root = names[id(m._ct)]
    gen = Generator(_encode_constant, names)
    entries = [BYTECODE_VERSION]
    for name, fn in _methods(m).items():
        g = inline_calls(clone_graph(fn.graph))
        c = gen.function(g)
        code = (("instructions", tuple(c.instructions)),
                ("operators", tuple(c.operators)),
                ("constants", tuple(c.constants)),
                ("types", tuple(c.types)),
                ("register_size", c.nregs))
        entries.append((f"{root}.{name}", code, _schema(fn, names, root)))
    return tuple(entries)


def _save_for_lite_interpreter(m, f, _extra_files=None):
    """Write scripted module ``m`` as a ``.ptl`` (path or binary file)."""
    from ember import serialization as _ser
    from ember.jit import _serialization_save as S
    from ember.jit._modules import RecursiveScriptModule
    import zipfile
    if not isinstance(m, RecursiveScriptModule):
        raise TypeError(f"_save_for_lite_interpreter expects a scripted module, got "
                        f"{type(m).__name__}")
    with _unfused(m):
        archive = io.BytesIO()
        S.save(m, archive, _extra_files=_extra_files)
        ctx = S._ArchiveContext()
        S._assign_class_names(S._modules_postorder(m), ctx)
    data = io.BytesIO()
    pickler = _pickler_class()(data, 2)
    pickler.dump(_bytecode(m, ctx.names))

    name = S._archive_name(f)
    out = io.BytesIO()
    z = _ser._AlignedZip(out, name)
    src = zipfile.ZipFile(archive)
    tail = {}
    for entry in src.namelist():
        rel = entry.split("/", 1)[1]
        if rel in ("version", "byteorder", ".data/serialization_id"):
            tail[rel] = src.read(entry)
            continue
        z.write(rel, src.read(entry))
    for ref in pickler.storages.values():
        z.write(f"constants/{ref.key}", np.ascontiguousarray(ref.bytes).tobytes())
    z.write("bytecode.pkl", data.getvalue())
    for rel, content in tail.items():
        z.write(rel, content)
    z.close()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(out.getvalue())
    else:
        f.write(out.getvalue())


# ----------------------------------------------------------------------------- operators

class OperatorInfo:
    """An operator's entry in a model: how many arguments its call sites pass."""
    __slots__ = ("num_schema_args",)

    def __init__(self, num_schema_args):
        self.num_schema_args = num_schema_args

    def __repr__(self):
        return f"OperatorInfo(num_schema_args={self.num_schema_args})"


def _get_model_ops_and_info(f):
    """{operator name: OperatorInfo} of a ``.ptl`` (path or binary file)."""
    from ember_lite._format import read
    _, raw, _ = read(f)
    out = {}
    for code, _ in raw.values():
        for entry in code["operators"]:
            name = entry[0] + ("." + entry[1] if entry[1] else "")
            out[name] = OperatorInfo(entry[2] if len(entry) > 2 else None)
    return out


def _export_operator_list(m):
    """torch's ``_export_operator_list``: the set of operator names a loaded lite module
    (or a scripted module, through the bytecode it would be saved with) calls."""
    if isinstance(m, LiteScriptModule):
        return set(m.operator_names())
    names = set()
    for entry in _bytecode(m, _names(m))[1:]:
        for op, overload, _ in dict(entry[1])["operators"]:
            names.add(op + ("." + overload if overload else ""))
    return names


def export_opnames(m):
    """``torch.jit.export_opnames``: sorted operator names (``aten::add.Tensor``)."""
    return sorted(_export_operator_list(m))


def _names(m):
    from ember.jit import _serialization_save as S
    ctx = S._ArchiveContext()
    with _unfused(m):
        S._assign_class_names(S._modules_postorder(m), ctx)
    return ctx.names
