"""The FX Numeric Suite (torch.ao.ns._numeric_suite_fx): compare two FX models (a float
model and its quantized version) subgraph by subgraph — weights, logged activations, or
float shadows run inside the quantized model.

Results are nested as torch's::

    {layer_name: {"weight" | "node_output" | "node_input": {model_name: [
        {"type", "values", "ref_node_name", "ref_node_target_type", "prev_node_name",
         "prev_node_target_type", "index_within_arg", "index_of_arg", "fqn", ...}]}}}
"""
from __future__ import annotations

import ember
import ember.nn as nn
from ember.ao.ns.fx.graph_matcher import get_matching_subgraph_pairs
from ember.ao.ns.fx.graph_passes import add_loggers_to_model, create_a_shadows_b, trace_for_ns
from ember.ao.ns.fx.mappings import get_target_type_str
from ember.ao.ns.fx.utils import compute_sqnr
from ember.ao.ns.fx.weight_utils import extract_weight_from_node

__all__ = ["OutputLogger", "OutputComparisonLogger", "NSTracer", "extract_weights",
           "add_loggers", "extract_logger_info", "add_shadow_loggers",
           "extract_shadow_logger_info", "extend_logger_results_with_comparison",
           "loggers_set_enabled", "loggers_set_save_activations"]


def NSTracer(*args, **kwargs):  # noqa: N802  (torch's name)
    """The tracer the suite uses on models that are not GraphModules yet."""
    from ember.ao.quantization.fx.tracer import QuantizationTracer
    return QuantizationTracer(*args, **kwargs)


class OutputLogger(nn.Module):
    """Logs the tensors flowing past one node (``stats``) with where they come from."""

    def __init__(self, ref_node_name, prev_node_name, model_name, ref_name,
                 prev_node_target_type, ref_node_target_type, results_type,
                 index_within_arg, index_of_arg, fqn, qconfig_str=""):
        super().__init__()
        self.stats = []
        self.stats_rnn = []
        self.ref_node_name = ref_node_name
        self.prev_node_name = prev_node_name
        self.model_name = model_name
        self.ref_name = ref_name
        self.prev_node_target_type = prev_node_target_type
        self.ref_node_target_type = ref_node_target_type
        self.results_type = results_type
        self.index_within_arg = index_within_arg
        self.index_of_arg = index_of_arg
        self.fqn = fqn
        self.enabled = True
        self.qconfig_str = qconfig_str
        self.save_activations = True

    _FIELDS = ("stats", "stats_rnn", "ref_node_name", "prev_node_name", "model_name",
               "ref_name", "prev_node_target_type", "ref_node_target_type", "results_type",
               "index_within_arg", "index_of_arg", "fqn", "enabled", "qconfig_str",
               "save_activations")

    def forward(self, x):
        if not self.enabled or not self.save_activations:
            return x
        if isinstance(x, ember.Tensor):
            self.stats.append(x.detach())
        elif isinstance(x, tuple) and len(x) == 2 and len(x[1]) == 2:
            self.stats_rnn.append((x[0].detach(), (x[1][0].detach(), x[1][1].detach())))
        return x

    def __repr__(self):
        fields = {k: getattr(self, k) for k in self._FIELDS}
        return f"{type(self).__name__}({fields})"


class OutputComparisonLogger(OutputLogger):
    """Logs its input and a comparison (SQNR by default) with a reference input."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.comparison_fn = compute_sqnr
        self.comparison_fn_name = "sqnr"
        self.comparisons = []

    def forward(self, x, x_ref):
        if not self.enabled:
            return x
        if self.save_activations:
            self.stats.append(x.detach())
        self.comparisons.append(self.comparison_fn(x, x_ref))
        return x


def _model_fqn(gm, node):
    attrs = gm.meta.get("_observed_graph_module_attrs") if hasattr(gm, "meta") else None
    if attrs is None:
        return None
    if node.op == "call_module":
        return node.target
    return attrs.node_name_to_scope.get(node.name, (None, None))[0] or None


def extract_weights(model_name_a, model_a, model_name_b, model_b,
                    base_name_to_sets_of_related_ops=None, unmatchable_types_map=None,
                    op_to_type_to_weight_extraction_fn=None):
    """The weights of each matched weighted subgraph of both models, keyed by model B's
    node names: ``{"conv": {"weight": {"fp32": [...], "int8": [...]}}}``."""
    if op_to_type_to_weight_extraction_fn is not None:
        raise NotImplementedError("extract_weights: op_to_type_to_weight_extraction_fn is "
                                  "not supported")
    gm_a, gm_b = trace_for_ns(model_a), trace_for_ns(model_b)
    pairs = get_matching_subgraph_pairs(gm_a, gm_b, base_name_to_sets_of_related_ops,
                                        unmatchable_types_map)
    results = {}
    for _, (sub_a, sub_b) in pairs:
        entries = {}
        for name, gm, sub in ((model_name_a, gm_a, sub_a), (model_name_b, gm_b, sub_b)):
            weight = extract_weight_from_node(sub.base_op_node, gm)
            if weight is None:
                break
            node = sub.base_op_node
            entries[name] = [{
                "type": "weight", "values": [weight], "prev_node_name": node.name,
                "prev_node_target_type": get_target_type_str(node, gm),
                "ref_node_name": node.name, "ref_node_target_type":
                get_target_type_str(node, gm), "index_within_arg": 0, "index_of_arg": 0,
                "fqn": _model_fqn(gm, node)}]
        else:
            results[sub_b.base_op_node.name] = {"weight": entries}
    _fill_missing_fqns(results)
    return results


def add_loggers(name_a, model_a, name_b, model_b, logger_cls, should_log_inputs=False,
                base_name_to_sets_of_related_ops=None, unmatchable_types_map=None):
    """Both models as GraphModules with a ``logger_cls`` after each matched subgraph;
    returns (model_a_with_loggers, model_b_with_loggers)."""
    gm_a, gm_b = trace_for_ns(model_a), trace_for_ns(model_b)
    pairs = get_matching_subgraph_pairs(gm_a, gm_b, base_name_to_sets_of_related_ops,
                                        unmatchable_types_map)
    out_a = add_loggers_to_model(gm_a, [(r, a) for r, (a, _) in pairs], logger_cls, name_a,
                                 should_log_inputs)
    out_b = add_loggers_to_model(gm_b, [(r, b) for r, (_, b) in pairs], logger_cls, name_b,
                                 should_log_inputs)
    return out_a, out_b


def _collect(model, results, logger_cls):
    for _, mod in model.named_modules():
        if not isinstance(mod, logger_cls):
            continue
        values = mod.stats if not mod.stats_rnn else mod.stats_rnn
        entry = {"type": mod.results_type, "values": values,
                 "ref_node_name": mod.ref_node_name,
                 "ref_node_target_type": mod.ref_node_target_type,
                 "prev_node_name": mod.prev_node_name,
                 "prev_node_target_type": mod.prev_node_target_type,
                 "index_within_arg": mod.index_within_arg, "index_of_arg": mod.index_of_arg,
                 "fqn": mod.fqn, "qconfig_str": mod.qconfig_str,
                 "comparisons": getattr(mod, "comparisons", []),
                 "comparison_fn_name": getattr(mod, "comparison_fn_name", "")}
        per_type = results.setdefault(mod.ref_name, {}).setdefault(mod.results_type, {})
        per_type.setdefault(mod.model_name, []).append(entry)
    for per_layer in results.values():
        for per_type in per_layer.values():
            for entries in per_type.values():
                entries.sort(key=lambda e: (e["index_of_arg"], e["index_within_arg"]))


def _fill_missing_fqns(results):
    """An entry without fqn takes the fqn its counterpart in the other model has."""
    for per_layer in results.values():
        for per_type in per_layer.values():
            fqn = next((e["fqn"] for entries in per_type.values() for e in entries
                        if e["fqn"] is not None), None)
            if fqn is None:
                continue
            for entries in per_type.values():
                for e in entries:
                    if e["fqn"] is None:
                        e["fqn"] = fqn


def _rekey(results, model_name):
    """Key each layer by ``model_name``'s node name (of its first entry)."""
    out = {}
    for ref_name, per_layer in results.items():
        key = ref_name
        kinds = sorted(per_layer, key=lambda kind: kind != "node_output")   # outputs first
        for kind in kinds:
            per_type = per_layer[kind]
            if model_name in per_type and per_type[model_name]:
                key = per_type[model_name][0]["ref_node_name"]
                break
        out[key] = per_layer
    return out


def extract_logger_info(model_a, model_b, logger_cls, model_name_to_use_for_layer_names):
    """What the loggers of :func:`add_loggers` saw, keyed by the named model's node
    names."""
    results = {}
    for model in (model_a, model_b):
        _collect(model, results, logger_cls)
    _fill_missing_fqns(results)
    return _rekey(results, model_name_to_use_for_layer_names)


def add_shadow_loggers(name_a, model_a, name_b, model_b, logger_cls, should_log_inputs=False,
                       base_name_to_sets_of_related_ops=None, node_type_to_io_type_map=None,
                       unmatchable_types_map=None):
    """Model B with model A's matched subgraphs as float shadows (run on B's dequantized
    inputs), both outputs logged."""
    if node_type_to_io_type_map is not None:
        raise NotImplementedError("add_shadow_loggers: node_type_to_io_type_map is not "
                                  "supported")
    gm_a, gm_b = trace_for_ns(model_a), trace_for_ns(model_b)
    pairs = get_matching_subgraph_pairs(gm_a, gm_b, base_name_to_sets_of_related_ops,
                                        unmatchable_types_map)
    return create_a_shadows_b(name_a, gm_a, name_b, gm_b, pairs, logger_cls,
                              should_log_inputs)


def extract_shadow_logger_info(model_a_shadows_b, logger_cls,
                               model_name_to_use_for_layer_names):
    """What the loggers of :func:`add_shadow_loggers` saw."""
    results = {}
    _collect(model_a_shadows_b, results, logger_cls)
    _fill_missing_fqns(results)
    return _rekey(results, model_name_to_use_for_layer_names)


def extend_logger_results_with_comparison(results, model_name_1, model_name_2,
                                          comparison_fn, comparison_name):
    """Adds ``comparison_name: [comparison_fn(v1, v2)...]`` to each of model 2's entries,
    compared with model 1's entry of the same argument position (in place)."""
    for per_layer in results.values():
        for per_type in per_layer.values():
            if model_name_1 not in per_type or model_name_2 not in per_type:
                continue
            firsts = per_type[model_name_1]
            for entry in per_type[model_name_2]:
                match = next((e for e in firsts
                              if e["index_within_arg"] == entry["index_within_arg"] and
                              e["index_of_arg"] == entry["index_of_arg"]), None)
                if match is None:
                    raise AssertionError(f"Attempted to compare a result of "
                                         f"{model_name_2} with no counterpart in "
                                         f"{model_name_1}")
                entry[comparison_name] = [comparison_fn(v1, v2) for v1, v2 in
                                          zip(match["values"], entry["values"])]


def loggers_set_enabled(model, enabled):
    for _, mod in model.named_modules():
        if isinstance(mod, OutputLogger):
            mod.enabled = enabled


def loggers_set_save_activations(model, save_activations):
    for _, mod in model.named_modules():
        if isinstance(mod, OutputLogger):
            mod.save_activations = save_activations
