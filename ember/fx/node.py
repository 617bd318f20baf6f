"""Nodes of an FX graph, and the helpers that walk their nested arguments."""
from __future__ import annotations

import builtins
import operator
import types

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Argument", "Target"]

Argument = object
Target = object

_IMPURE_FUNCTIONS = set()     # call_function targets dead-code elimination must keep


def has_side_effect(fn):
    """Mark ``fn`` (a ``call_function`` target) as impure: dead-code elimination keeps its
    nodes even when nothing uses their result. Usable as a decorator."""
    _IMPURE_FUNCTIONS.add(fn)
    return fn


def map_aggregate(a, fn):
    """Apply ``fn`` to every leaf of the nested tuples/lists/dicts/slices ``a``."""
    t = type(a)
    if isinstance(a, tuple):
        items = tuple(map_aggregate(x, fn) for x in a)
        return items if t is tuple or not hasattr(a, "_fields") else t(*items)
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(*(map_aggregate(part, fn) for part in (a.start, a.stop, a.step)))
    return fn(a)


def map_arg(a, fn):
    """Apply ``fn`` to every Node inside the argument structure ``a``."""
    assert callable(fn), "torch.fx.map_arg(a, fn): fn must be a callable"
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(obj):
    """Dotted name of a call_function target, as printed in graphs and code."""
    from ember.fx._names import public_name
    name = public_name(obj)
    if name is not None:
        return name
    if obj is getattr(builtins, getattr(obj, "__name__", ""), None):
        return f"builtins.{obj.__name__}"
    if obj is getattr(operator, getattr(obj, "__name__", ""), None):
        return f"operator.{obj.__name__}"
    module = getattr(obj, "__module__", None) or "__main__"
    return f"{module}.{getattr(obj, '__qualname__', getattr(obj, '__name__', repr(obj)))}"


def _format_arg(arg, max_list_len=float("inf")):
    """An argument as graph printouts show it: ``%name`` for nodes."""
    if isinstance(arg, Node):
        return "%" + arg.name
    if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
        inner = ", ".join(_format_arg(a) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)


class Node:
    """One operation: ``op`` (placeholder, get_attr, call_function, call_method,
    call_module, output), its ``target``, its ``args``/``kwargs`` (which may hold other
    nodes) and ``users``. Nodes form a doubly linked list owned by a Graph."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in ("placeholder", "get_attr", "call_function", "call_method",
                      "call_module", "output", "root"):
            raise ValueError(f"Unsupported node op {op!r}")
        self.graph, self.name, self.op, self.target = graph, name, op, target
        self.type = return_type
        self._input_nodes = {}
        self.users = {}
        self.meta = {}
        self._prev = self._next = self
        self._erased = False
        self._args, self._kwargs = (), {}
        self._set_arguments(tuple(args), dict(kwargs))

    # ----------------------------------------------------------------- linked list
    @property
    def prev(self):
        return self._prev

    @property
    def next(self):
        return self._next

    def prepend(self, x):
        """Move or insert node ``x`` just before this one."""
        assert self.graph is x.graph, "Attempting to move a Node into a different Graph"
        if self is x:
            return
        x._unlink()
        before = self._prev
        before._next, x._prev, x._next, self._prev = x, before, self, x

    def append(self, x):
        """Move or insert node ``x`` just after this one."""
        self._next.prepend(x)

    def _unlink(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ------------------------------------------------------------------- arguments
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, value):
        self._set_arguments(tuple(value), self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value):
        self._set_arguments(self._args, dict(value))

    @property
    def all_input_nodes(self):
        return list(self._input_nodes)

    def _set_arguments(self, args, kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        inputs = {}
        map_arg((args, kwargs), lambda n: inputs.setdefault(n, None))
        self._args, self._kwargs, self._input_nodes = args, kwargs, inputs
        for n in inputs:
            n.users.setdefault(self, None)

    def update_arg(self, idx, arg):
        args = list(self._args)
        args[idx] = arg
        self.args = args

    def update_kwarg(self, key, arg):
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input, new_input):
        """Point every use of ``old_input`` in this node's arguments at ``new_input``."""
        swap = lambda n: new_input if n is old_input else n  # noqa: E731
        self._set_arguments(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *,
                              propagate_meta=False):
        """Make the users of this node use ``replace_with`` instead; returns them."""
        if propagate_meta:
            assert not replace_with.meta, ("Called node.replace_all_uses_with(replace_with, "
                                           "propagate_meta=True), but replace_with already "
                                           "has .meta keys")
            replace_with.meta.update(self.meta)
        changed = [u for u in list(self.users) if delete_user_cb(u)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    def is_impure(self):
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _IMPURE_FUNCTIONS
        if self.op == "call_module":
            owner = self.graph.owning_module
            if owner is None:
                return False
            mod = owner.get_submodule(self.target)
            return getattr(mod, "_is_impure", False)
        return False

    # -------------------------------------------------------------------- printing
    def __repr__(self):
        return self.name

    def _pretty_target(self):
        if self.op in ("call_function",):
            return _qualified_name(self.target)
        return self.target

    def format_node(self, placeholder_names=None, maybe_return_typename=None):
        """This node as one line of ``str(graph)`` (``None`` when collected as a
        placeholder name for the ``graph(...)`` header)."""
        if self.op == "placeholder":
            name = str(self.target)
            if placeholder_names is not None:
                placeholder_names.append(name)
                return None
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : {self._type_text()}[num_users={len(self.users)}] = " \
                   f"placeholder[target={name}]{default}"
        if self.op == "get_attr":
            return f"%{self.name} : {self._type_text()}[num_users={len(self.users)}] = " \
                   f"get_attr[target={self.target}]"
        if self.op == "output":
            if self.type is not None and maybe_return_typename is not None:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        return (f"%{self.name} : {self._type_text()}[num_users={len(self.users)}] = "
                f"{self.op}[target={self._pretty_target()}](args = {_format_arg(self.args)}, "
                f"kwargs = {_format_arg(self.kwargs)})")

    def _type_text(self):
        return "" if self.type is None else _type_repr(self.type) + " "


def _type_repr(t):
    if isinstance(t, type):
        from ember._tensor import Tensor
        if t is Tensor:
            return "torch.Tensor"
        return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    if isinstance(t, types.GenericAlias):
        return repr(t)
    return repr(t)
