"""The tracer FX graph mode quantization uses: it records, for every node, the path and
type of the module whose ``forward`` created it (``node_name_to_scope``), which names the
quantization parameters inserted later (``conv_scale_0``, ``_scale_0``...)."""
from __future__ import annotations

from ember.fx import Tracer

__all__ = ["QuantizationTracer"]


class QuantizationTracer(Tracer):
    """``Tracer`` that keeps ``node_name_to_scope``: node name -> (module path, type).

    ``skipped_module_names``/``skipped_module_classes`` stay leaves (not traced through)."""

    def __init__(self, skipped_module_names=(), skipped_module_classes=()):
        super().__init__()
        self.skipped_module_names = list(skipped_module_names)
        self.skipped_module_classes = list(skipped_module_classes)
        self.node_name_to_scope = {}
        self._scope = ("", None)

    def is_leaf_module(self, m, module_qualified_name):
        """Standard modules, ``ember.ao.nn`` modules (quantized, fused, QAT), observers and
        fake quantizers, and the skipped names/classes stay leaves."""
        module = type(m).__module__ or ""
        if module.startswith(("ember.ao.nn", "ember.ao.quantization", "ember.ao.ns")):
            return True
        return super().is_leaf_module(m, module_qualified_name) or \
            module_qualified_name in self.skipped_module_names or \
            type(m) in self.skipped_module_classes

    def create_arg(self, a):
        """Module attributes that are not tensors (packed weights) become get_attr nodes,
        as torch's script objects do."""
        try:
            return super().create_arg(a)
        except NotImplementedError:
            for name, value in vars(self.root).items():
                if value is a and not name.startswith("_modules"):
                    return self.create_node("get_attr", name, (), {})
            raise

    def call_module(self, m, forward, args, kwargs):
        saved = self._scope
        self._scope = (self.path_of_module(m), type(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._scope = saved

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        self.node_name_to_scope[node.name] = self._scope
        return node
