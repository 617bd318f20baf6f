"""Run a GraphModule node by node (``Interpreter``), or rebuild it while doing so
(``Transformer``). Override ``call_function``, ``call_module``... to change what a
kind of node does."""
from __future__ import annotations

import inspect

from ember.fx.graph import Graph
from ember.fx.node import map_arg, map_aggregate
from ember.fx.proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env = {}
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.user_to_last_uses = {}
        if garbage_collect_values:
            seen = set()
            for node in reversed(list(self.graph.nodes)):
                def register(n, user=node):
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(user, []).append(n)
                map_arg((node.args, node.kwargs), register)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Evaluate the graph on ``args``; returns what the output node returns."""
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, []):
                    self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list):
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run_node(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        assert isinstance(args, tuple) and isinstance(kwargs, dict)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---------------------------------------------------------- node kinds
    def placeholder(self, target, args, kwargs):
        assert isinstance(target, str)
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but "
                               f"one was not passed in!") from None

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        assert not isinstance(target, str)
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        assert isinstance(target, str)
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # ---------------------------------------------------------- helpers
    def fetch_attr(self, target):
        obj = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(obj, atom):
                raise RuntimeError("Node referenced nonexistent target "
                                   f"{'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        def load(node):
            if node not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {node}! Run "
                                   f"Graph.lint() to diagnose such issues")
            return self.env[node]
        return map_arg(args, load)


class Transformer(Interpreter):
    """Interpreter that runs on Proxies, so each node's handler records into a new
    graph; ``transform()`` returns the new GraphModule."""

    def __init__(self, module):
        super().__init__(module)
        from ember.fx._symbolic_trace import Tracer
        self.new_graph = Graph()

        class _Tracer(Tracer):
            def __init__(inner, graph):
                super().__init__()
                inner.graph = graph
                inner.root = module
                inner.tensor_attrs = {}

            def is_leaf_module(inner, m, qualname):
                return True
        self.tracer = _Tracer(self.new_graph)
        self.tracer.submodule_paths = {id(m): n for n, m in module.named_modules()}

    def placeholder(self, target, args, kwargs):
        assert isinstance(target, str)
        default = inspect.Signature.empty if not args else args[0]
        node = self.new_graph.placeholder(target, default_value=default)
        return Proxy(node, self.tracer)

    def get_attr(self, target, args, kwargs):
        assert isinstance(target, str)
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        assert isinstance(target, str)
        return self.tracer.call_module(self.fetch_attr(target), None, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def transform(self):
        from ember.fx.graph_module import GraphModule
        result = super().run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(
                result, lambda x: x.node if isinstance(x, Proxy) else x))
        return GraphModule(self.module, self.new_graph)
