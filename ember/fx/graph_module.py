"""GraphModule: a Module whose ``forward`` is generated from a Graph."""
from __future__ import annotations

import copy
import functools
import linecache
import os
import types

import ember
from ember import nn
from ember.fx.graph import Graph
from ember.fx._symbolic_trace import _has_proxy, recording_calls

__all__ = ["GraphModule"]

_source_count = [0]


def _compile(src, globals_):
    """Compile generated source under a unique file name that tracebacks can show.
    Called with Proxies (inlining this graph into another being built), the ember
    functions it calls record nodes, as the ``__torch_function__`` protocol does."""
    _source_count[0] += 1
    filename = f"<eval_with_key>.{_source_count[0]}"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    scope = dict(globals_)
    exec(compile(src, filename, "exec"), scope)
    compiled = scope["forward"]
    # the wrapper reads the generated code's globals (``torch``...), so that jit.script,
    # which compiles the wrapped source under the wrapper's globals, resolves its names
    scope["_fx_has_proxy"], scope["_fx_recording_calls"] = _has_proxy, recording_calls
    template = _recording_forward(compiled)
    forward = types.FunctionType(template.__code__, scope, "forward", None,
                                 template.__closure__)
    return functools.update_wrapper(forward, compiled)


def _recording_forward(compiled):
    def forward(self, *args, **kwargs):
        if _fx_has_proxy((args, kwargs)) is not None:  # noqa: F821 (the generated scope's)
            with _fx_recording_calls():  # noqa: F821
                return compiled(self, *args, **kwargs)
        return compiled(self, *args, **kwargs)
    return forward


def _get_path(obj, target):
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def _set_path(root, target, value, source=None):
    """Install ``value`` at dotted ``target``; a buffer of ``source`` stays a buffer."""
    *prefix, last = target.split(".")
    for atom in prefix:
        if source is not None:
            source = getattr(source, atom, None)
        if not hasattr(root, atom):
            setattr(root, atom, nn.Module())
        root = getattr(root, atom)
    if isinstance(source, nn.Module) and last in getattr(source, "_buffers", {}):
        root.register_buffer(last, value)
    else:
        setattr(root, last, value)


class GraphModule(nn.Module):
    """``GraphModule(root, graph, class_name)`` keeps from ``root`` (a Module or a dict of
    qualified names) what the graph's ``get_attr``/``call_module`` nodes refer to, and
    compiles the graph into ``forward`` (``code`` shows it)."""

    def __new__(cls, *args, **kwargs):
        # each instance gets its own class, so ``forward`` can be set per graph
        if cls.__dict__.get("_is_fx_instance_class"):
            return super().__new__(cls)
        sub = type(cls.__name__, (cls,), {"_is_fx_instance_class": True})
        return super().__new__(sub)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, nn.Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _set_path(self, node.target, _get_path(root, node.target), root)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} "
                                           f"but that target was not provided in ``root``!")
                    _set_path(self, node.target, root[node.target])
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self.meta = {}

    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        assert isinstance(g, Graph), f"Expected a Graph instance, but got {type(g)}"
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        return self._code

    def recompile(self):
        """Regenerate ``code`` and ``forward`` from the graph (after editing it)."""
        python_code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        self.__dict__["_globals"] = python_code.globals
        type(self).forward = _compile(python_code.src, python_code.globals)
        return python_code

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False):
        """The generated module as a class definition (printed, and returned)."""
        body = self._graph.python_code(root_module="self", _annotate_meta=True).src
        body = body.strip("\n").rstrip()
        lines = [f"class {type(self).__name__}(torch.nn.Module):"]
        for name, child in self.named_children():
            if isinstance(child, GraphModule):
                inner = child.print_readable(print_output=False)
                lines += ["    " + ln if ln else ln for ln in inner.splitlines()]
        code = body.splitlines()
        code.insert(1, "    # No stacktrace found for following nodes")
        lines += ["    " + ln if ln else ln for ln in code]
        text = "\n".join(lines) + "\n"
        if print_output:
            print(text)
        return text

    def __str__(self):
        return f"{super().__str__()}\n{self._code}\n# To see more debug info, please use " \
               f"`graph_module.print_readable()`"

    # -------------------------------------------------------------- submodules
    def add_submodule(self, target, m):
        """Install ``m`` at dotted path ``target``, making empty parents as needed."""
        *prefix, last = target.split(".")
        mod = self
        for atom in prefix:
            sub = getattr(mod, atom, None)
            if sub is None:
                sub = nn.Module()
                mod.add_module(atom, sub)
            elif not isinstance(sub, nn.Module):
                return False
            mod = sub
        mod.add_module(last, m)
        return True

    def delete_submodule(self, target):
        """Remove the submodule at ``target``; False if there is none."""
        *prefix, last = target.split(".")
        mod = self
        for atom in prefix:
            if not hasattr(mod, atom) or not isinstance(getattr(mod, atom), nn.Module):
                return False
            mod = getattr(mod, atom)
        if not isinstance(getattr(mod, last, None), nn.Module):
            return False
        delattr(mod, last)
        return True

    def delete_all_unused_submodules(self):
        """Remove submodules no ``call_module``/``get_attr`` node refers to."""
        used = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                for i in range(1, len(parts) + 1):
                    used.add(".".join(parts[:i]))
                if node.op == "call_module":
                    mod = self.get_submodule(node.target)
                    used.update(f"{node.target}.{n}" for n, _ in mod.named_modules() if n)
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    # -------------------------------------------------------------- copying
    def __deepcopy__(self, memo):
        res = nn.Module.__new__(nn.Module)
        memo[id(self)] = res
        fake = nn.Module()
        fake.__dict__ = copy.deepcopy({k: v for k, v in self.__dict__.items()
                                       if k not in ("_graph", "_code", "_globals")}, memo)
        gm = GraphModule(fake, copy.deepcopy(self._graph), type(self).__name__)
        gm.__dict__.update({k: v for k, v in fake.__dict__.items()
                            if k not in gm.__dict__ or k == "meta"})
        memo[id(self)] = gm
        return gm

    def __copy__(self):
        gm = GraphModule(self, self._graph, type(self).__name__)
        gm.meta = copy.copy(self.meta)
        return gm

    def __reduce__(self):
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_graph", "_code", "_globals")}
        return _rebuild_graph_module, (state, self._graph_state(), type(self).__name__)

    def _graph_state(self):
        """The graph as plain data: nodes by index, targets by public name when they have
        one, else the target itself (pickled by reference)."""
        from ember.fx._names import public_name
        from ember.fx.node import map_arg
        index, rows = {}, []
        for i, n in enumerate(self._graph.nodes):
            index[n] = i
            target = n.target
            if n.op == "call_function" and public_name(target) is not None:
                target = ("public", public_name(target))
            rows.append((n.op, target, map_arg(n.args, lambda m: _Ref(index[m])),
                         map_arg(n.kwargs, lambda m: _Ref(index[m])), n.name, n.type))
        return rows

    def to_folder(self, folder, module_name="FxModule"):
        """Write ``folder/module.py`` (a Module class running this graph's code) and the
        weights it loads (``state_dict.pt``, plus one file per submodule)."""
        os.makedirs(folder, exist_ok=True)
        ember.save(self.state_dict(), os.path.join(folder, "state_dict.pt"))
        lines = ["import torch", "import operator", "from torch import device",
                 "from torch.nn import *", "import os", "",
                 f"class {module_name}(torch.nn.Module):", "    def __init__(self):",
                 "        super().__init__()",
                 "        here = os.path.dirname(os.path.abspath(__file__))"]
        for name, child in self.named_children():
            ember.save(child, os.path.join(folder, f"{name}.pt"))
            lines.append(f"        self.{name} = torch.load(os.path.join(here, '{name}.pt'), "
                         f"weights_only=False)")
        for name, p in self._parameters.items():
            lines.append(f"        self.{name} = torch.nn.Parameter(torch.empty("
                         f"{list(p.shape)}, dtype={p.dtype!r}))")
        for name, b in self._buffers.items():
            lines.append(f"        self.register_buffer('{name}', torch.empty("
                         f"{list(b.shape)}, dtype={b.dtype!r}))")
        lines.append("        self.load_state_dict(torch.load(os.path.join(here, "
                     "'state_dict.pt')))")
        code = "\n".join("    " + ln if ln else ln for ln in self._code.strip("\n").splitlines())
        with open(os.path.join(folder, "module.py"), "w") as f:
            f.write("\n".join(lines) + "\n\n" + code.rstrip() + "\n")
        with open(os.path.join(folder, "__init__.py"), "w") as f:
            f.write("from .module import *\n")


class _Ref:
    def __init__(self, i):
        self.i = i


def _rebuild_graph_module(state, rows, class_name):
    from ember.fx._names import _table, resolve_public_name
    from ember.fx.node import map_aggregate
    by_name = {name: obj for obj, name in _table().values()}
    root = nn.Module()
    root.__dict__.update(state)
    graph, nodes = Graph(), []
    for op, target, args, kwargs, name, type_expr in rows:
        if isinstance(target, tuple) and len(target) == 2 and target[0] == "public":
            target = resolve_public_name(target[1], by_name)
        fix = lambda x: nodes[x.i] if isinstance(x, _Ref) else x  # noqa: E731
        nodes.append(graph.create_node(op, target, map_aggregate(args, fix),
                                       map_aggregate(kwargs, fix), name, type_expr))
    gm = GraphModule(root, graph, class_name)
    gm.__dict__.update({k: v for k, v in state.items() if k not in gm.__dict__})
    return gm
