"""A small directed graph with ordered nodes and attributes (the exporter's dependencies)."""
from collections import deque

__all__ = ["DiGraph"]


class DiGraph:
    """Nodes keep insertion order; each node has an attribute dict, each edge is ordered."""

    def __init__(self):
        self._node = {}          # name -> attribute dict
        self._succ = {}          # name -> {successor: None} (an ordered set)
        self._pred = {}

    def add_node(self, n, **attrs):
        if n not in self._node:
            self._node[n] = {}
            self._succ[n] = {}
            self._pred[n] = {}
        self._node[n].update(attrs)

    def add_edge(self, u, v):
        self.add_node(u)
        self.add_node(v)
        self._succ[u][v] = None
        self._pred[v][u] = None

    def __contains__(self, n):
        return n in self._node

    def __iter__(self):
        return iter(self._node)

    @property
    def nodes(self):
        return self._node

    @property
    def edges(self):
        return [(u, v) for u, succ in self._succ.items() for v in succ]

    def successors(self, n):
        self._check(n)
        return iter(self._succ[n])

    def predecessors(self, n):
        self._check(n)
        return iter(self._pred[n])

    def _check(self, n):
        if n not in self._node:
            raise ValueError(f"The node {n} is not in the digraph.")

    def _reachable(self, start, step):
        """Nodes reachable from ``start`` (itself included) following ``step``."""
        self._check(start)
        seen, todo = {start}, deque([start])
        while todo:
            for nxt in step(todo.popleft()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    def forward_transitive_closure(self, src):
        return self._reachable(src, lambda n: self._succ[n])

    def backward_transitive_closure(self, dst):
        return self._reachable(dst, lambda n: self._pred[n])

    def first_path(self, dst):
        """One shortest path to ``dst`` from a node nothing depends on (a saved object)."""
        self._check(dst)
        came_from, todo = {dst: None}, deque([dst])
        while todo:
            n = todo.popleft()
            if not self._pred[n]:
                path = [n]
                while came_from[path[-1]] is not None:
                    path.append(came_from[path[-1]])
                return path
            for p in self._pred[n]:
                if p not in came_from:
                    came_from[p] = n
                    todo.append(p)
        return [dst]

    def all_paths(self, src, dst):
        """Dot source of the subgraph of every path from ``src`` to ``dst``."""
        on_path = self.forward_transitive_closure(src) & self.backward_transitive_closure(dst)
        lines = [f'"{u}" -> "{v}";' for u, v in self.edges if u in on_path and v in on_path]
        return "digraph G {\n" + "".join(line + "\n" for line in lines) + "}\n"

    def to_dot(self):
        lines = "".join(f'"{u}" -> "{v}";\n' for u, v in self.edges)
        return "digraph G {\nrankdir = LR;\nnode [shape=box];\n" + lines + "}\n"
