"""Pytrees (torch.utils._pytree): nested containers flattened to a list of leaves plus a
``TreeSpec`` that rebuilds them.

Containers ("nodes") are the types with a registered flatten/unflatten pair: list, tuple,
dict, OrderedDict, defaultdict, deque, namedtuples, ``torch.return_types`` (structseqs),
``torch.Size``, and whatever a user registers (``register_pytree_node``,
``register_dataclass``, ``register_constant``). Everything else, tensors and None included,
is a leaf. Specs print, compare, hash and serialize (``treespec_dumps``, JSON protocol 1) as
torch's do, so a spec dumped by one library loads in the other.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import json
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from typing import Any, Callable, NamedTuple

__all__ = [          # what ``from torch.utils._pytree import *`` gives
    "PyTree", "Context", "FlattenFn", "UnflattenFn", "DumpableContext", "ToDumpableContextFn",
    "FromDumpableContextFn", "PyTreeSpec", "TreeSpec", "LeafSpec", "keystr", "key_get",
    "register_pytree_node", "tree_is_leaf", "tree_flatten", "tree_flatten_with_path",
    "tree_unflatten", "tree_iter", "tree_leaves", "tree_leaves_with_path", "tree_structure",
    "tree_map", "tree_map_with_path", "tree_map_", "tree_map_only", "tree_map_only_",
    "tree_all", "tree_any", "tree_all_only", "tree_any_only", "treespec_dumps",
    "treespec_loads", "treespec_pprint", "is_namedtuple", "is_namedtuple_class",
    "is_namedtuple_instance", "is_structseq", "is_structseq_class", "is_structseq_instance",
]

# type aliases (annotations only)
PyTree = Any
Context = Any
DumpableContext = Any
FlattenFn = FlattenFunc = Callable[[PyTree], "tuple[list, Context]"]
UnflattenFn = UnflattenFunc = Callable[[list, Context], PyTree]
ToDumpableContextFn = Callable[[Context], DumpableContext]
FromDumpableContextFn = Callable[[DumpableContext], Context]
KeyEntry = Any
KeyPath = tuple

DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL = 1
_SUPPORTED_PROTOCOLS = {1}
NO_SERIALIZED_TYPE_NAME_FOUND = "NO_SERIALIZED_TYPE_NAME_FOUND"


class NodeDef(NamedTuple):
    """How one container type comes apart: ``flatten_fn(x) -> (children, context)``,
    ``unflatten_fn(children, context) -> x``, ``flatten_with_keys_fn(x) ->
    ([(key, child), ...], context)``."""
    type: Any
    flatten_fn: Callable
    unflatten_fn: Callable
    flatten_with_keys_fn: Callable | None


class _SerializeNodeDef(NamedTuple):
    typ: Any
    serialized_type_name: str
    to_dumpable_context: Callable | None
    from_dumpable_context: Callable | None


SUPPORTED_NODES: dict = {}                  # type -> NodeDef
_LOOKUP: dict = {}              # type -> NodeDef that flattens it (a namedtuple: namedtuple's)
SUPPORTED_SERIALIZED_TYPES: dict = {}       # type -> _SerializeNodeDef
SERIALIZED_TYPE_TO_PYTHON_TYPE: dict = {}   # serialized name -> type
CONSTANT_NODES: set = set()
_NAMEDTUPLE_NAMES: dict = {}                # namedtuple class -> serialized name
_NAMEDTUPLE_BY_NAME: dict = {}


# ------------------------------------------------------------------------- key paths

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Position ``idx`` in a sequence node; prints as ``[idx]``."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """Key ``key`` of a mapping node; prints as ``[key!r]``."""
    key: Any

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Attribute ``name`` of a namedtuple/dataclass node; prints as ``.name``."""
    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp) -> str:
    """``(SequenceKey(1), MappingKey('a'))`` -> ``"[1]['a']"``."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp):
    """The subtree of ``obj`` at key path ``kp``."""
    for k in kp:
        obj = k.get(obj)
    return obj


# ------------------------------------------------------------------------- registry

def _add_node(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn=None,
              serialized_type_name=None, to_dumpable_context=None,
              from_dumpable_context=None):
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    node = SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
    # namedtuples flatten as namedtuples even when registered (as in torch)
    shadowed = cls is not namedtuple and is_namedtuple_class(cls)
    _LOOKUP[cls] = SUPPORTED_NODES[namedtuple] if shadowed else node
    name = NO_SERIALIZED_TYPE_NAME_FOUND if serialized_type_name is None \
        else serialized_type_name
    SUPPORTED_SERIALIZED_TYPES[cls] = _SerializeNodeDef(cls, name, to_dumpable_context,
                                                        from_dumpable_context)
    SERIALIZED_TYPE_TO_PYTHON_TYPE[name] = cls


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None) -> None:
    """Make ``cls`` a container: ``flatten_fn(x) -> (children, context)`` and
    ``unflatten_fn(children, context) -> x``. ``serialized_type_name`` lets
    ``treespec_dumps`` name it; ``flatten_with_keys_fn`` gives key paths."""
    if (to_dumpable_context is None) != (from_dumpable_context is None):
        raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must "
                         f"be None or registered.")
    _add_node(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn, serialized_type_name,
              to_dumpable_context, from_dumpable_context)


def _register_pytree_node(cls, flatten_fn, unflatten_fn, to_str_fn=None,
                          maybe_from_str_fn=None, *, serialized_type_name=None,
                          to_dumpable_context=None, from_dumpable_context=None,
                          flatten_with_keys_fn=None) -> None:
    """Older spelling of ``register_pytree_node`` (the string hooks are ignored)."""
    register_pytree_node(cls, flatten_fn, unflatten_fn,
                         serialized_type_name=serialized_type_name,
                         to_dumpable_context=to_dumpable_context,
                         from_dumpable_context=from_dumpable_context,
                         flatten_with_keys_fn=flatten_with_keys_fn)


_private_register_pytree_node = register_pytree_node


def _deregister_pytree_node(cls) -> None:
    """Undo a registration (for tests)."""
    SUPPORTED_NODES.pop(cls, None)
    _LOOKUP.pop(cls, None)
    _TUPLE_KINDS.pop(cls, None)
    ser = SUPPORTED_SERIALIZED_TYPES.pop(cls, None)
    if ser is not None and SERIALIZED_TYPE_TO_PYTHON_TYPE.get(ser.serialized_type_name) is cls:
        del SERIALIZED_TYPE_TO_PYTHON_TYPE[ser.serialized_type_name]
    CONSTANT_NODES.discard(cls)


def register_dataclass(cls, *, field_names=None, drop_field_names=None,
                       serialized_type_name=None) -> None:
    """A dataclass (or any class built from keyword fields ``field_names``) as a node:
    fields holding None stay in the spec's context, the others are children."""
    drop = list(drop_field_names or [])
    if dataclasses.is_dataclass(cls):
        init_fields = {f.name for f in dataclasses.fields(cls) if f.init}
        if field_names is None:
            field_names = [f.name for f in dataclasses.fields(cls)
                           if f.init and f.name not in drop]
        else:
            wanted = init_fields - set(drop)
            missing, unexpected = wanted - set(field_names), set(field_names) - wanted
            if missing or unexpected:
                msg = "field_names does not include all dataclass fields.\n"
                if missing:
                    msg += (f"Missing fields in `field_names`: {missing}. If you want to "
                            f"include these fields in the pytree, please add them to "
                            f"`field_names`, otherwise please add them to "
                            f"`drop_field_names`.\n")
                if unexpected:
                    msg += (f"Unexpected fields in `field_names`: {unexpected}. Please "
                            f"remove these fields, or add them to `drop_field_names`.\n")
                raise ValueError(msg)
    elif field_names is None:
        raise ValueError(f"field_names must be specified with a list of all fields used to "
                         f"initialize {cls}, as it is not a dataclass.")
    names = list(field_names)

    def flatten(obj):
        present, absent, children = [], [], []
        for n in names:
            v = getattr(obj, n)
            if v is None:
                absent.append(n)
            else:
                present.append(n)
                children.append(v)
        return children, [present, absent]

    def unflatten(values, context):
        present, absent = context
        kwargs = dict(zip(present, values))
        kwargs.update((n, None) for n in absent)
        return cls(**kwargs)

    def flatten_with_keys(obj):
        children, context = flatten(obj)
        return [(GetAttrKey(n), v) for n, v in zip(context[0], children)], context

    register_pytree_node(cls, flatten, unflatten, serialized_type_name=serialized_type_name,
                         flatten_with_keys_fn=flatten_with_keys)


@dataclasses.dataclass(frozen=True)
class ConstantNode:
    """The context of a registered constant: the value itself, with no children."""
    value: Any


def _is_constant_holder(spec) -> bool:
    return isinstance(spec._context, ConstantNode)


def _retrieve_constant(spec):
    return spec._context.value


def is_constant_class(cls) -> bool:
    return cls in CONSTANT_NODES


def register_constant(cls) -> None:
    """Instances of ``cls`` (hashable, comparable) go into the spec, not the leaves."""
    if cls.__eq__ is object.__eq__:
        raise TypeError("register_constant(cls) expects `cls` to have a non-default "
                        "`__eq__` implementation.")
    if cls.__hash__ is None or cls.__hash__ is object.__hash__:
        raise TypeError("register_constant(cls) expects `cls` to have a non-default "
                        "`__hash__` implementation.")
    register_pytree_node(cls, lambda x: ([], ConstantNode(x)), lambda _, c: c.value,
                         flatten_with_keys_fn=lambda x: ([], ConstantNode(x)))
    CONSTANT_NODES.add(cls)


def _register_namedtuple(cls, *, serialized_type_name: str) -> None:
    """Give namedtuple ``cls`` a name so specs holding it can be dumped and loaded."""
    _NAMEDTUPLE_NAMES[cls] = serialized_type_name
    _NAMEDTUPLE_BY_NAME[serialized_type_name] = cls


# ------------------------------------------------------------------------- type tests

def is_namedtuple_class(cls) -> bool:
    """A class made by ``collections.namedtuple`` / ``typing.NamedTuple`` (or derived)."""
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and isinstance(getattr(cls, "_fields", None), tuple)
            and callable(getattr(cls, "_make", None))
            and callable(getattr(cls, "_asdict", None))
            and not is_structseq_class(cls))


def is_namedtuple_instance(obj) -> bool:
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj) -> bool:
    """``obj`` is a namedtuple class or instance."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_structseq_class(cls) -> bool:
    """A ``torch.return_types`` class (or a C structseq such as ``os.stat_result``)."""
    if not isinstance(cls, type) or not issubclass(cls, tuple):
        return False
    from ember.return_types import _BASES
    if cls in _BASES:
        return True
    counts = [getattr(cls, a, None) for a in ("n_fields", "n_sequence_fields",
                                              "n_unnamed_fields")]
    return (cls.__bases__ == (tuple,) and all(isinstance(n, int) for n in counts)
            and not cls.__flags__ & (1 << 10))         # Py_TPFLAGS_BASETYPE unset


def is_structseq_instance(obj) -> bool:
    return is_structseq_class(type(obj))


def is_structseq(obj) -> bool:
    """``obj`` is a structseq class or instance."""
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


# ------------------------------------------------------------------------- built-in nodes

def _seq_keys(xs):
    return [(SequenceKey(i), v) for i, v in enumerate(xs)], None


def _dict_keys(d):
    return [(MappingKey(k), v) for k, v in d.items()], list(d)


def _register_builtins():
    from ember._tensor import Size
    _add_node(tuple, lambda t: (list(t), None), lambda v, c: tuple(v), _seq_keys,
              "builtins.tuple")
    _add_node(list, lambda t: (list(t), None), lambda v, c: list(v), _seq_keys,
              "builtins.list")
    _add_node(dict, lambda d: (list(d.values()), list(d)),
              lambda v, keys: dict(zip(keys, v)), _dict_keys, "builtins.dict")
    _add_node(namedtuple, lambda t: (list(t), type(t)), lambda v, cls: cls(*v),
              lambda t: ([(GetAttrKey(f), v) for f, v in zip(t._fields, t)], type(t)),
              "collections.namedtuple", _namedtuple_to_json, _namedtuple_from_json)
    _add_node(OrderedDict, lambda d: (list(d.values()), list(d)),
              lambda v, keys: OrderedDict(zip(keys, v)), _dict_keys,
              "collections.OrderedDict")
    _add_node(defaultdict,
              lambda d: (list(d.values()), [d.default_factory, list(d)]),
              lambda v, c: defaultdict(c[0], zip(c[1], v)),
              lambda d: ([(MappingKey(k), v) for k, v in d.items()],
                         [d.default_factory, list(d)]),
              "collections.defaultdict", _defaultdict_to_json, _defaultdict_from_json)
    _add_node(deque, lambda d: (list(d), d.maxlen), lambda v, maxlen: deque(v, maxlen=maxlen),
              lambda d: ([(SequenceKey(i), v) for i, v in enumerate(d)], d.maxlen),
              "collections.deque")
    _add_node(Size, lambda s: (list(s), None), lambda v, c: tuple(v), _seq_keys, "torch.Size")


def _namedtuple_to_json(cls):
    name = _NAMEDTUPLE_NAMES.get(cls)
    if name is None:
        raise NotImplementedError(
            f"Can't serialize TreeSpec of namedtuple class {cls} because we didn't register "
            f"a serializated_type_name. Please register using `_register_namedtuple`.")
    return name


def _namedtuple_from_json(name):
    cls = _NAMEDTUPLE_BY_NAME.get(name)
    if cls is None:
        raise NotImplementedError(
            f"Can't deserialize TreeSpec of namedtuple class {name} because we couldn't "
            f"find a serializated name.")
    return cls


def _defaultdict_to_json(context):
    factory, keys = context
    return {"default_factory_module": factory.__module__,
            "default_factory_name": factory.__qualname__, "dict_context": keys}


def _defaultdict_from_json(obj):
    module = importlib.import_module(obj["default_factory_module"])
    return [getattr(module, obj["default_factory_name"]), obj["dict_context"]]


STANDARD_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})
BUILTIN_TYPES = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque})
_CONTEXT_FREE = frozenset({tuple, list, deque})   # contexts that never make a mismatch


def _structseq_node(cls):
    """Each ``torch.return_types`` class is its own node (context None), registered on
    first sight (ember makes those classes lazily)."""
    return NodeDef(cls, lambda t: (list(t), None), lambda v, c: cls(v), _seq_keys)


_TUPLE_KINDS: dict = {}       # tuple subclass -> "namedtuple" / "structseq" / None


def _tuple_kind(cls):
    kind = _TUPLE_KINDS.get(cls, False)
    if kind is False:           # torch.return_types are nodes; C structseqs stay leaves
        from ember.return_types import _BASES
        kind = ("namedtuple" if is_namedtuple_class(cls) else
                "structseq" if cls in _BASES else None)
        _TUPLE_KINDS[cls] = kind
    return kind


def _node_def(cls):
    """The NodeDef for values of type ``cls`` (exact type), or None for a leaf type."""
    node = _LOOKUP.get(cls)
    if node is not None or not isinstance(cls, type) or not issubclass(cls, tuple):
        return node
    kind = _tuple_kind(cls)
    if kind == "namedtuple":
        return SUPPORTED_NODES[namedtuple]
    if kind == "structseq":
        node = SUPPORTED_NODES[cls] = _LOOKUP[cls] = _structseq_node(cls)
        return node
    return None


def _get_node_type(tree):
    """The registry key for ``tree``: its type, or ``namedtuple`` for any namedtuple."""
    cls = type(tree)
    if cls is tuple or not issubclass(cls, tuple):
        return cls
    return namedtuple if _tuple_kind(cls) == "namedtuple" else cls


def _is_leaf(tree, is_leaf=None) -> bool:
    return (is_leaf is not None and is_leaf(tree)) or _node_def(type(tree)) is None


def tree_is_leaf(tree, is_leaf=None) -> bool:
    """Whether ``tree`` is a leaf (not a registered container, or ``is_leaf(tree)``)."""
    return _is_leaf(tree, is_leaf)


# ------------------------------------------------------------------------- TreeSpec

class TreeSpec:
    """The shape of a pytree: node ``type``, its ``context`` (dict keys, namedtuple class,
    ...) and one spec per child. ``num_leaves`` leaves fill it back (``unflatten``)."""

    __slots__ = ("type", "_context", "_children", "num_nodes", "num_leaves", "num_children")

    def __init__(self, type, context, children_specs):
        children = list(children_specs)
        nodes, leaves = 1, 0
        for c in children:
            nodes += c.num_nodes
            leaves += c.num_leaves
        sets = object.__setattr__
        sets(self, "type", type)
        sets(self, "_context", context)
        sets(self, "_children", children)
        sets(self, "num_nodes", nodes)
        sets(self, "num_leaves", leaves)
        sets(self, "num_children", len(children))

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field '{name}'")

    def __delattr__(self, name):
        raise dataclasses.FrozenInstanceError(f"cannot delete field '{name}'")

    @property
    def context(self):
        return self._context

    @property
    def children_specs(self):
        warnings.warn("`treespec.children_specs` is deprecated. Use `treespec.child(index)` "
                      "to access a single child, or `treespec.children()` to get all "
                      "children.", FutureWarning, stacklevel=2)
        return self._children

    def is_leaf(self) -> bool:
        return self.num_nodes == 1 and self.num_leaves == 1

    def child(self, index: int):
        return self._children[index]

    def children(self) -> list:
        return list(self._children)

    # ---- printing, comparing
    def _text(self, indent):
        if self.is_leaf():
            return "*"
        parts = [c._text(indent + 2) for c in self._children]
        sep = ",\n" + " " * (indent + 2)
        return f"TreeSpec({self.type.__name__}, {self._context}, [{sep.join(parts)}])"

    def __repr__(self):
        return self._text(0)

    __str__ = __repr__

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.type == other.type and self.num_nodes == other.num_nodes
                and self.num_leaves == other.num_leaves and self._context == other._context
                and self._children == other._children)

    def __hash__(self):
        return hash((self.type, _hashable(self._context), tuple(self._children),
                     self.num_nodes, self.num_leaves, self.num_children))

    def __reduce__(self):
        return (TreeSpec, (self.type, self._context, self._children))

    # ---- rebuilding
    def unflatten(self, leaves):
        """The pytree of this shape holding ``leaves`` (in order)."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        return self._build(iter(leaves))

    def _build(self, it):
        node = SUPPORTED_NODES.get(self.type) or _node_def(self.type)
        return node.unflatten_fn([next(it) if c.__class__ is LeafSpec else c._build(it)
                                  for c in self._children], self._context)

    def flatten_up_to(self, tree) -> list:
        """The subtrees of ``tree`` sitting where this spec has leaves (``tree`` must have
        this spec's nodes, and anything below its leaves)."""
        out = []
        self._match(tree, out)
        return out

    def _match(self, tree, out):
        if self.is_leaf():
            out.append(tree)
            return
        children = _children_matching(self, tree)
        for spec, sub in zip(self._children, children):
            spec._match(sub, out)


class LeafSpec(TreeSpec):
    """The spec of one leaf (prints ``*``). Deprecated in torch: use ``treespec_leaf()``."""

    __slots__ = ()

    def __init__(self):
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use "
                      "`isinstance(treespec, TreeSpec) and treespec.is_leaf()` instead.",
                      FutureWarning, stacklevel=2)
        self._fill()

    def _fill(self):
        sets = object.__setattr__
        for name, v in (("type", None), ("_context", None), ("_children", []),
                        ("num_nodes", 1), ("num_leaves", 1), ("num_children", 0)):
            sets(self, name, v)

    def __reduce__(self):
        return (_new_leaf, ())

    def _build(self, it):
        return next(it)


def _new_leaf():
    leaf = object.__new__(LeafSpec)
    leaf._fill()
    return leaf


_LEAF = _new_leaf()
_LEAF_SPEC = _LEAF
PyTreeSpec = TreeSpec


def _hashable(x):
    if isinstance(x, list):
        return tuple(_hashable(v) for v in x)
    return x


def treespec_leaf():
    """The spec of a single leaf."""
    return _new_leaf()


def treespec_tuple(iterable=(), /):
    """A tuple node over the given child specs."""
    return TreeSpec(tuple, None, list(iterable))


def treespec_dict(mapping=(), /, **kwargs):
    """A dict node over the given key -> child spec pairs."""
    d = dict(mapping, **kwargs)
    return TreeSpec(dict, list(d), list(d.values()))


def _children_matching(spec, tree):
    """``tree``'s children lined up with ``spec``'s (for flatten_up_to / tree_map rests);
    ValueError naming the first difference."""
    node_type = _get_node_type(tree)
    node = _node_def(type(tree))
    want = spec.type
    if is_structseq_class(want):
        if type(tree) is not want:
            raise ValueError(f"Type mismatch; expected {want}, but got {type(tree)}.")
        return list(tree)
    dict_like = want in STANDARD_DICT_TYPES and node_type in STANDARD_DICT_TYPES
    if node is None or (node_type is not want and not dict_like):
        raise ValueError(f"Node type mismatch; expected {want}, but got {node_type}.")
    children, context = node.flatten_fn(tree)
    if len(children) != spec.num_children:
        raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got "
                         f"{len(children)}.")
    if dict_like:
        keys = spec._context[1] if want is defaultdict else spec._context
        have = context[1] if node_type is defaultdict else context
        if set(keys) != set(have):
            missing = set(keys) - set(have)
            extra = set(have) - set(keys)
            raise ValueError(f"Node keys mismatch; missing key(s): {missing}; extra key(s): "
                             f"{extra}.")
        return [tree[k] for k in keys]
    if want is namedtuple:
        if context is not spec._context:
            raise ValueError(f"Node context mismatch for node type {want}; expected "
                             f"{spec._context}, but got {context}.")
    elif want not in _CONTEXT_FREE and want is not _size_type() and context != spec._context:
        raise ValueError(f"Node context mismatch for custom node type {want}.")
    return children


@functools.lru_cache(maxsize=None)
def _size_type():
    from ember._tensor import Size
    return Size


# ------------------------------------------------------------------------- flattening

def _flatten_into(tree, leaves, is_leaf):
    """Append ``tree``'s leaves to ``leaves``; return its spec."""
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF
    node = _LOOKUP.get(type(tree))
    if node is None and (not isinstance(tree, tuple) or (node := _node_def(type(tree))) is None):
        leaves.append(tree)
        return _LEAF
    children, context = node.flatten_fn(tree)
    specs = []
    for c in children:
        if is_leaf is None and type(c) not in _LOOKUP and not isinstance(c, tuple):
            leaves.append(c)            # the common plain leaf, without a call
            specs.append(_LEAF)
        else:
            specs.append(_flatten_into(c, leaves, is_leaf))
    return TreeSpec(node.type, context, specs)


def tree_flatten(tree, is_leaf=None):
    """(leaves in order, TreeSpec) of ``tree``; ``is_leaf(x)`` true stops the descent."""
    leaves = []
    spec = _flatten_into(tree, leaves, is_leaf)
    return leaves, spec


def _check_spec(treespec):
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of "
                        f"type {type(treespec)}.")


def tree_unflatten(leaves, treespec):
    """The pytree of shape ``treespec`` holding ``leaves``."""
    _check_spec(treespec)
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    """A generator over the leaves of ``tree``, depth first, left to right."""
    if is_leaf is not None and is_leaf(tree):
        yield tree
        return
    node = _node_def(type(tree))
    if node is None:
        yield tree
        return
    for child in node.flatten_fn(tree)[0]:
        yield from tree_iter(child, is_leaf)


def tree_leaves(tree, is_leaf=None) -> list:
    """The leaves of ``tree`` as a list."""
    leaves = []
    _flatten_into(tree, leaves, is_leaf)
    return leaves


def tree_structure(tree, is_leaf=None):
    """The TreeSpec of ``tree``."""
    return _flatten_into(tree, [], is_leaf)


def arg_tree_leaves(*args, **kwargs) -> list:
    """Leaves of the positional arguments then of the keyword values."""
    leaves = []
    for a in args:
        _flatten_into(a, leaves, None)
    for v in kwargs.values():
        _flatten_into(v, leaves, None)
    return leaves


# ------------------------------------------------------------------------- mapping

def tree_map(func, tree, *rests, is_leaf=None):
    """``tree`` with each leaf ``x`` replaced by ``func(x, *matching leaves of rests)``;
    each of ``rests`` must have ``tree``'s structure (or bigger subtrees at its leaves)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(*xs) for xs in zip(*columns)])


def tree_map_(func, tree, *rests, is_leaf=None):
    """Call ``func`` on every leaf (for its side effects); returns ``tree`` itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    for xs in zip(*columns):
        func(*xs)
    return tree


def _leaf_test(type_or_types_or_pred):
    t = type_or_types_or_pred
    if isinstance(t, (type, types.UnionType)) or (
            isinstance(t, tuple) and all(isinstance(x, type) for x in t)):
        return lambda x: isinstance(x, t)
    if callable(t):
        return t
    raise TypeError("Argument must be a type, a tuple of types, or a callable.")


def map_only(type_or_types_or_pred, /):
    """Decorator: ``map_only(int)(f)`` applies ``f`` to ints and returns other values as
    they are."""
    wanted = _leaf_test(type_or_types_or_pred)

    def wrap(func):
        @functools.wraps(func)
        def only(x):
            return func(x) if wanted(x) else x
        return only
    return wrap


def tree_map_only(type_or_types_or_pred, /, func, tree, is_leaf=None):
    """tree_map applying ``func`` only to leaves of the given type(s) / passing pred."""
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func, tree, is_leaf=None):
    """tree_map_ restricted like tree_map_only; returns ``tree``."""
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None) -> bool:
    return all(pred(x) for x in tree_iter(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None) -> bool:
    return any(pred(x) for x in tree_iter(tree, is_leaf))


def tree_all_only(type_or_types, /, pred, tree, is_leaf=None) -> bool:
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, /, pred, tree, is_leaf=None) -> bool:
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


# ------------------------------------------------------------------------- key paths

def _keyed_children(node, tree):
    if node.flatten_with_keys_fn is None:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node.type}. Please "
                         f"pass a flatten_with_keys_fn argument to register_pytree_node.")
    return node.flatten_with_keys_fn(tree)


def _flatten_paths(tree, path, out, is_leaf):
    if is_leaf is not None and is_leaf(tree):
        out.append((path, tree))
        return _LEAF
    node = _node_def(type(tree))
    if node is None:
        out.append((path, tree))
        return _LEAF
    pairs, context = _keyed_children(node, tree)
    specs = [_flatten_paths(v, path + (k,), out, is_leaf) for k, v in pairs]
    return TreeSpec(node.type, context, specs)


def tree_flatten_with_path(tree, is_leaf=None):
    """([(key path, leaf), ...], TreeSpec)."""
    out = []
    spec = _flatten_paths(tree, (), out, is_leaf)
    return out, spec


def tree_leaves_with_path(tree, is_leaf=None) -> list:
    """[(key path, leaf), ...]; ``keystr(path)`` prints a path as ``[0]['a'].x``."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    """tree_map where ``func`` also gets each leaf's key path first."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    columns = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(kp, x, *more)
                           for (kp, x), *more in zip(pairs, *columns)])


# ------------------------------------------------------------------------- broadcasting

def _broadcast_to_and_flatten(tree, treespec, is_leaf=None):
    """``tree`` (a prefix of ``treespec``'s structure) with each of its leaves repeated
    over the spec's leaves below it, flattened; None where the structures differ."""
    _check_spec(treespec)
    out = []
    return out if _broadcast_into(tree, treespec, is_leaf, out) else None


def _broadcast_into(tree, spec, is_leaf, out):
    if spec.is_leaf():
        out.append(tree)
        return True
    if _is_leaf(tree, is_leaf):
        out.extend([tree] * spec.num_leaves)
        return True
    node_type = _get_node_type(tree)
    dict_like = node_type in STANDARD_DICT_TYPES and spec.type in STANDARD_DICT_TYPES
    if node_type != spec.type and not dict_like:
        return False
    children, context = _node_def(type(tree)).flatten_fn(tree)
    if len(children) != spec.num_children:
        return False
    if dict_like:           # matched by key, in ``tree``'s own key order
        keys = spec._context[1] if spec.type is defaultdict else spec._context
        have = context[1] if node_type is defaultdict else context
        by_key = dict(zip(keys, spec._children))
        if set(by_key) != set(have):
            return False
        specs = [by_key[k] for k in have]
    else:
        if node_type not in _CONTEXT_FREE and context != spec._context:
            return False
        specs = spec._children
    return all(_broadcast_into(c, s, is_leaf, out) for c, s in zip(children, specs))


# ------------------------------------------------------------------------- serialization

class EnumEncoder(json.JSONEncoder):
    """JSON for contexts holding Enum members (e.g. dict keys)."""

    def default(self, obj):
        if isinstance(obj, enum.Enum):
            return {"__enum__": True,
                    "fqn": f"{type(obj).__module__}:{type(obj).__qualname__}",
                    "name": obj.name}
        return super().default(obj)


def enum_object_hook(obj):
    if "__enum__" not in obj:
        return obj
    module_name, qualname = obj["fqn"].split(":")
    cls = importlib.import_module(module_name)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    return cls[obj["name"]]


def _spec_to_json(spec):
    if spec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    ser = SUPPORTED_SERIALIZED_TYPES.get(spec.type)
    if ser is None or ser.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(
            f"No registered serialization name for {spec.type} found. Please update your "
            f"_register_pytree_node call with a `serialized_type_name` kwarg.")
    if ser.to_dumpable_context is not None:
        context = ser.to_dumpable_context(spec._context)
    else:
        try:
            context = json.dumps(spec._context, cls=EnumEncoder)
        except TypeError as e:
            raise TypeError("Unable to serialize context. Please make the context json "
                            "dump-able, or register a custom serializer using "
                            "_register_pytree_node.") from e
    return {"type": ser.serialized_type_name, "context": context,
            "children_spec": [_spec_to_json(c) for c in spec._children]}


def _spec_from_json(obj):
    if obj["type"] is None:
        return _new_leaf()
    cls = SERIALIZED_TYPE_TO_PYTHON_TYPE.get(obj["type"])
    if cls is None or obj["type"] == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(f"Deserializing {obj['type']} in pytree is not registered.")
    ser = SUPPORTED_SERIALIZED_TYPES[cls]
    if ser.from_dumpable_context is not None:
        context = ser.from_dumpable_context(obj["context"])
    else:
        context = json.loads(obj["context"], object_hook=enum_object_hook)
    return TreeSpec(cls, context, [_spec_from_json(c) for c in obj["children_spec"]])


def _check_protocol(protocol):
    if protocol not in _SUPPORTED_PROTOCOLS:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: "
                         f"{sorted(_SUPPORTED_PROTOCOLS)}")


def treespec_dumps(treespec, protocol=None) -> str:
    """``treespec`` as a JSON string ``[protocol, {type, context, children_spec}]``."""
    _check_spec(treespec)
    if protocol is None:
        protocol = DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL
    _check_protocol(protocol)
    return json.dumps([protocol, _spec_to_json(treespec)], cls=EnumEncoder)


def treespec_loads(serialized: str):
    """The TreeSpec written by ``treespec_dumps`` (ember's or torch's)."""
    protocol, body = json.loads(serialized)
    _check_protocol(protocol)
    return _spec_from_json(body)


class _Asterisk(str):
    def __new__(cls):
        return super().__new__(cls, "*")

    def __repr__(self):
        return "*"


_asterisk = _Asterisk()


def treespec_pprint(treespec) -> str:
    """The pytree of this shape written with ``*`` for each leaf: ``[*, {'a': *}]``."""
    stars = [_asterisk] * treespec.num_leaves
    return repr(treespec.unflatten(stars))


_register_builtins()
