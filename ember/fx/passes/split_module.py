"""``split_module``: a GraphModule cut into one submodule per partition (``submod_<k>``),
called in dependency order by a new top-level graph.

``split_callback(node)`` names each computing node's partition. Placeholders and
``get_attr`` nodes stay in the top-level graph and are passed to the partitions that use
them. A partition's inputs are the values it uses from outside, in first-use order, named
as the original nodes; its outputs are its values used elsewhere, in the order the later
nodes (then the graph's output) first use them: one output is returned as is, several as
a tuple the top-level graph unpacks with ``getitem``. A module a partition calls is copied
into it with the dots of its path replaced by ``_`` (``qualname_map`` records
``submod_1.seq_0 -> seq.0``).
"""
from __future__ import annotations

import inspect
import operator

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule, _get_path
from ember.fx.node import Node, map_arg

__all__ = ["split_module", "Partition"]


class Partition:
    def __init__(self, name):
        self.name = name
        self.submod_name = f"submod_{name}"
        self.node_names = []
        self.inputs = {}           # original node name -> None (ordered set)
        self.outputs = {}
        self.dependencies = {}     # partitions this one reads from
        self.dependents = {}
        self.graph = Graph()
        self.environment = {}      # original node -> node of this partition's graph
        self.targets = {}          # submodule name in the partition -> module

    def __repr__(self):
        return (f"name: {self.name},\n nodes: {self.node_names},\n inputs: "
                f"{list(self.inputs)},\n outputs: {list(self.outputs)},\n partitions depended "
                f"on: {list(self.dependencies)},\n partition dependents: "
                f"{list(self.dependents)}")


def _outside(node):
    return node.op in ("placeholder", "get_attr")


def split_module(m, root_m, split_callback, qualname_map=None, keep_original_order=False,
                 keep_original_node_name=False, partition_affix=None):
    """Split GraphModule ``m`` by ``split_callback`` (see the module docstring)."""
    partitions = {}
    part_of = {}                   # node name -> partition name
    nodes = list(m.graph.nodes)

    def partition(key):
        p = partitions.get(key)
        if p is None:
            p = partitions[key] = Partition(key)
            if partition_affix is not None:
                p.submod_name = f"submod_{partition_affix}_{key}"
        return p

    def record_use(used, user_key):
        def visit(n):
            if not isinstance(n, Node) or n.op == "output":
                return
            if _outside(n):
                if user_key is not None:
                    partitions[user_key].inputs.setdefault(n.name)
                return
            def_key = part_of[n.name]
            if def_key == user_key:
                return
            partitions[def_key].outputs.setdefault(n.name)
            if user_key is not None:
                partitions[user_key].inputs.setdefault(n.name)
                partitions[def_key].dependents.setdefault(user_key)
                partitions[user_key].dependencies.setdefault(def_key)
        map_arg(used, visit)

    for node in nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        key = split_callback(node)
        p = partition(key)
        p.node_names.append(node.name)
        part_of[node.name] = key
        record_use((node.args, node.kwargs), key)
    out_node = next((n for n in nodes if n.op == "output"), None)
    if out_node is not None:
        record_use(out_node.args, None)

    # dependency order (partitions first seen first among those ready)
    order, pending = [], dict.fromkeys(partitions)
    deps = {k: set(p.dependencies) for k, p in partitions.items()}
    while pending:
        ready = [k for k in pending if not deps[k]]
        if not ready:
            raise RuntimeError("cycle exists between partitions!")
        k = ready[0]
        order.append(k)
        del pending[k]
        for d in partitions[k].dependents:
            deps[d].discard(k)

    # each partition's graph
    by_name = {n.name: n for n in nodes}
    for key in order:
        p = partitions[key]
        for name in p.inputs:
            ph = p.graph.placeholder(name)
            ph.meta = dict(by_name[name].meta)
            p.environment[by_name[name]] = ph
    for node in nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        p = partitions[part_of[node.name]]
        args = map_arg(node.args, lambda n: p.environment[n])
        kwargs = map_arg(node.kwargs, lambda n: p.environment[n])
        target = node.target
        if node.op == "call_module":
            local = target.replace(".", "_")
            p.targets[local] = _get_path(root_m, target)
            if qualname_map is not None:
                qualname_map[f"{p.submod_name}.{local}"] = target
            target = local
        new = p.graph.create_node(node.op, target, args, kwargs,
                                  name=node.name if keep_original_node_name else None)
        new.meta = dict(node.meta)
        p.environment[node] = new

    # the top-level graph
    base = Graph()
    env = {}
    attrs = {}
    for node in nodes:
        if node.op == "placeholder":
            env[node] = base.placeholder(node.target, type_expr=node.type,
                                         default_value=node.args[0] if node.args
                                         else inspect.Signature.empty)
            env[node].meta = dict(node.meta)

    def get_attr(node):
        if node not in env:
            env[node] = base.get_attr(node.target)
            env[node].meta = dict(node.meta)
            attrs[node.target] = _get_path(root_m, node.target)

    if not keep_original_order:
        for node in nodes:
            if node.op == "get_attr":
                get_attr(node)
    submods = {}
    for key in order:
        p = partitions[key]
        outs = [p.environment[by_name[name]] for name in p.outputs]
        p.graph.output(outs[0] if len(outs) == 1 else tuple(outs))
        submods[p.submod_name] = GraphModule(p.targets, p.graph)
        if keep_original_order:
            for name in p.inputs:
                if by_name[name].op == "get_attr":
                    get_attr(by_name[name])
        call = base.call_module(p.submod_name, tuple(env[by_name[name]] for name in p.inputs))
        if len(outs) == 1:
            env[by_name[next(iter(p.outputs))]] = call
        else:
            for i, name in enumerate(p.outputs):
                env[by_name[name]] = base.call_function(operator.getitem, (call, i))
    if out_node is not None:
        base.output(map_arg(out_node.args[0], lambda n: env[n]))
    root = dict(attrs)
    root.update(submods)
    return GraphModule(root, base)
