"""The tracing frontend: ``pipeline(module, mb_args, split_spec=...)`` traces ``module``
with ember.fx and cuts the graph into stages at ``pipe_split()`` calls and at the
submodules named in ``split_spec``.

Each stage becomes a GraphModule holding the parameters it uses under their original
qualified names (``layers.2.weight``). A value computed in one stage and used in a later
one travels through the stages in between (it is an output of each). The first stage
takes the model's own arguments; every other stage takes the previous stage's outputs.
"""
import enum
import inspect
import operator

import ember.nn as nn
from ember import fx
from ember.distributed.pipelining._utils import PipeInfo


class SplitPoint(enum.Enum):
    """Where ``split_spec`` cuts relative to the named submodule's call."""
    BEGINNING = 1
    END = 2


_TRACING = []          # the _SplitTracer(s) recording now


def pipe_split():
    """Marks a stage boundary in a model's ``forward``; does nothing when run eagerly."""
    if _TRACING:
        _TRACING[-1].create_proxy("call_function", pipe_split, (), {})


class _SplitTracer(fx.Tracer):
    """Records ``pipe_split()`` calls, and adds them around the submodules of
    ``split_spec``."""

    def __init__(self, split_spec):
        super().__init__()
        self.split_spec = split_spec

    def trace(self, root, concrete_args=None):
        _TRACING.append(self)
        try:
            return super().trace(root, concrete_args)
        finally:
            _TRACING.pop()

    def call_module(self, m, forward, args, kwargs):
        point = self.split_spec.get(self.path_of_module(m))
        if point is SplitPoint.BEGINNING:
            pipe_split()
        out = super().call_module(m, forward, args, kwargs)
        if point is SplitPoint.END:
            pipe_split()
        return out


class Pipe(nn.Module):
    """A model cut into stages: ``split_gm`` calls ``submod_0 ... submod_{n-1}`` in turn
    (running it runs the whole model in one process)."""

    def __init__(self, split_gm, num_stages, has_loss_and_backward, loss_spec):
        super().__init__()
        self.split_gm = split_gm
        self.num_stages = num_stages
        self.has_loss_and_backward = has_loss_and_backward
        self.loss_spec = loss_spec

    def forward(self, *args, **kwargs):
        return self.split_gm(*args, **kwargs)

    def get_stage_module(self, stage_idx):
        """The GraphModule of stage ``stage_idx``."""
        if not 0 <= stage_idx < self.num_stages:
            raise ValueError(f"Invalid stage index {stage_idx}!")
        return getattr(self.split_gm, f"submod_{stage_idx}")

    def info(self):
        return PipeInfo(self.split_gm.graph, self.num_stages, self.has_loss_and_backward)

    def build_stage(self, stage_index, device, group=None):
        """A ``PipelineStage`` running stage ``stage_index`` on this rank."""
        from ember.distributed.pipelining.stage import PipelineStage
        return PipelineStage(self.get_stage_module(stage_index), stage_index,
                             self.num_stages, device, group=group)


def pipeline(module, mb_args, mb_kwargs=None, split_spec=None, split_policy=None):
    """Trace ``module`` and cut it into stages; returns a ``Pipe``. ``mb_args`` /
    ``mb_kwargs`` are one microbatch's inputs (the trace is symbolic, so they only check
    that the model runs)."""
    if split_policy is not None:
        raise NotImplementedError("pipelining: split_policy is not supported; mark stage "
                                  "boundaries with pipe_split() or split_spec")
    split_spec = dict(split_spec or {})
    for name in split_spec:
        module.get_submodule(name)          # AttributeError for a name that is not there
    graph = _SplitTracer(split_spec).trace(module)
    stage_of, num_stages = _assign_stages(graph)
    stage_graphs = _stage_graphs(graph, stage_of, num_stages)
    root = nn.Module()
    for i, g in enumerate(stage_graphs):
        root.add_module(f"submod_{i}", fx.GraphModule(module, g, f"Stage{i}"))
    split_gm = fx.GraphModule(root, _driver_graph(graph, stage_graphs), "PipeSplit")
    return Pipe(split_gm, num_stages, False, None)


def _assign_stages(graph):
    """{node: stage} (pipe_split nodes are removed); get_attr nodes get no stage (each
    stage reads the parameters it uses itself)."""
    stage, stage_of = 0, {}
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is pipe_split:
            graph.erase_node(node)
            stage += 1
        elif node.op != "get_attr":
            stage_of[node] = stage
    for node in graph.nodes:
        if node.op == "output":
            stage_of[node] = stage
    return stage_of, stage + 1


def _live_after(graph, stage_of, boundary):
    """Values computed in stages <= ``boundary`` that a later stage uses, in graph order."""
    return [n for n in graph.nodes if n.op not in ("get_attr", "output")
            and stage_of[n] <= boundary and any(stage_of[u] > boundary for u in n.users)]


def _stage_graphs(graph, stage_of, num_stages):
    graphs = []
    for s in range(num_stages):
        g, env = fx.Graph(), {}
        inputs = ([n for n in graph.nodes if n.op == "placeholder"] if s == 0
                  else _live_after(graph, stage_of, s - 1))
        for n in inputs:
            env[n] = g.placeholder(n.name, default_value=_default(n) if s == 0 else
                                   inspect.Signature.empty)

        def value(n):
            if n not in env:                   # a parameter read in this stage
                env[n] = g.get_attr(n.target)
            return env[n]
        for n in graph.nodes:
            if stage_of.get(n) != s or n.op in ("placeholder", "output"):
                continue
            env[n] = g.node_copy(n, value)
        if s == num_stages - 1:
            out = next(n for n in graph.nodes if n.op == "output")
            g.output(fx.map_arg(out.args[0], value))
        else:
            live = _live_after(graph, stage_of, s)
            g.output(value(live[0]) if len(live) == 1 else tuple(value(n) for n in live))
        g.lint()
        graphs.append(g)
    return graphs


def _default(node):
    """The default value of a placeholder (none for stage inputs)."""
    if node.op == "placeholder" and node.args:
        return node.args[0]
    return inspect.Signature.empty


def _stage_output(stage_graph):
    return next(n for n in stage_graph.nodes if n.op == "output").args[0]


def _driver_graph(graph, stage_graphs):
    """The top-level graph: the model's placeholders, then submod_0 ... submod_{n-1}."""
    g = fx.Graph()
    values = [g.placeholder(n.name, default_value=_default(n))
              for n in graph.nodes if n.op == "placeholder"]
    for i, stage_graph in enumerate(stage_graphs):
        out = g.call_module(f"submod_{i}", tuple(values))
        produced = _stage_output(stage_graph)
        if i < len(stage_graphs) - 1 and isinstance(produced, tuple):
            values = [g.call_function(operator.getitem, (out, k))
                      for k in range(len(produced))]
        else:
            values = [out]
    g.output(out)
    return g
