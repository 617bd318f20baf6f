"""ember.fx: symbolic tracing into a Graph of nodes, and GraphModules generated from
graphs (torch.fx's API)."""
from ember.fx.node import Node, map_arg, map_aggregate, has_side_effect
from ember.fx.graph import Graph, PythonCode
from ember.fx.proxy import Proxy, Attribute, TraceError
from ember.fx._symbolic_trace import Tracer, symbolic_trace, wrap, PH
from ember.fx.graph_module import GraphModule
from ember.fx.interpreter import Interpreter, Transformer
from ember.fx.subgraph_rewriter import replace_pattern
from ember.fx import node, graph, proxy, graph_module, interpreter, subgraph_rewriter, passes  # noqa

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "replace_pattern", "map_arg", "PH", "has_side_effect"]
