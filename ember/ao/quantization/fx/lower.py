"""Lowering a reference graph (dequantize -> float op -> quantize) to quantized ops, as
torch's native backend does:

- weighted modules (Conv, Linear, fused ConvReLU...) and modules with a quantized
  counterpart (BatchNorm2d, Hardswish...) become quantized modules (``from_float`` with the
  output observer);
- ``F.linear`` / ``conv{1,2,3}d`` (+ relu) become ``quantized::linear[_relu]`` /
  ``quantized::conv{d}d[_relu]`` on a prepacked weight attribute ``<prefix>packed_weight_<n>``;
- ``add``/``mul`` (+ relu) become ``quantized::add[_relu]``/``mul[_relu]`` (with a scalar:
  ``quantized::mul(qx, 0.5)``); ``F.hardswish``/``F.elu``/``F.leaky_relu`` become their
  ``quantized::`` ops with the output's parameters as keywords;
- ops that keep or fix their input's parameters (pools, flatten, relu, cat, sigmoid...)
  run on the quantized tensor as they are.
Each lowered op reads the quantized inputs (the dequantize before it goes) and its output
replaces the quantize after it. Patterns not fully quantized stay in reference form."""
from __future__ import annotations

import operator

import ember
import ember.nn.functional as F
from ember.ao.quantization.backend_config import ObservationType

__all__ = ["lower_to_quantized"]


def _q():
    return ember.ops.quantized


def _is_dq(node):
    return getattr(node, "op", None) == "call_method" and node.target == "dequantize"


def _is_q(node):
    return getattr(node, "op", None) == "call_function" and \
        node.target in (ember.quantize_per_tensor, ember.quantize_per_channel)


def _static_module_mapping():
    try:
        from ember.ao.quantization.quantization_mappings import \
            get_default_static_quant_module_mappings
    except ImportError:
        return {}
    return get_default_static_quant_module_mappings()


_BINARY = {operator.add: "add", ember.add: "add", operator.mul: "mul", ember.mul: "mul"}
_RELUS = (F.relu, ember.relu, "relu")
_FUNCTIONAL_WEIGHTED = {F.linear: ("linear", None), ember.conv1d: ("conv1d", 1),
                        ember.conv2d: ("conv2d", 2), ember.conv3d: ("conv3d", 3)}
_QPARAM_FUNCTIONS = {F.hardswish: "hardswish", F.elu: "elu", F.leaky_relu: "leaky_relu"}


class _Lowering:
    def __init__(self, model, attrs, observers):
        self.model, self.graph, self.attrs = model, model.graph, attrs
        self.observers = observers
        self.modules = dict(model.named_modules(remove_duplicate=False))
        self.mapping = _static_module_mapping()
        self.lowered = set()        # module targets already swapped for quantized modules

    # ----------------------------------------------------------------- helpers
    def output_q(self, last):
        users = list(last.users)
        if len(users) == 1 and _is_q(users[0]) and users[0].target is ember.quantize_per_tensor:
            return users[0]
        return None

    def strip_dq(self, node, skip=()):
        """The node reads the quantized values: each dequantize input -> its input."""
        def swap(a):
            return a.args[0] if _is_dq(a) else a
        args = [a if i in skip else (swap(a) if not isinstance(a, (list, tuple))
                                     else type(a)(swap(x) for x in a))
                for i, a in enumerate(node.args)]
        node.args = tuple(args)

    def inputs_quantized(self, node, skip=()):
        """Whether every tensor input (shape values aside) is a dequantize node."""
        from ember.ao.quantization.fx.prepare import _produces_tensor
        found = False
        for i, a in enumerate(node.args):
            if i in skip:
                continue
            items = a if isinstance(a, (list, tuple)) else [a]
            for x in items:
                if hasattr(x, "op") and _produces_tensor(x):
                    if not _is_dq(x):
                        return False
                    found = True
        return found

    def take_output(self, q, new, before):
        """``new`` replaces quantize ``q``; q's scale/zero_point nodes move before
        ``before``; returns them."""
        s, z = q.args[1], q.args[2]
        q.replace_all_uses_with(new)
        self.graph.erase_node(q)
        before.prepend(s)
        before.prepend(z)
        return s, z

    def erase(self, nodes):
        for n in reversed(nodes):
            if not n.users:
                self.graph.erase_node(n)

    def attr_value(self, node):
        obj = self.model
        for part in node.target.split("."):
            obj = getattr(obj, part)
        return obj

    def prefix(self, node):
        if node.op == "call_module":
            return node.target + "_"
        return self.attrs.node_name_to_scope.get(node.name, ("", None))[0] + "_"

    # ----------------------------------------------------------------- rules
    def lower_module(self, root, last, nodes, q):
        mod = self.modules[root.target]
        qcls = self.mapping.get(type(mod))
        if qcls is None:
            return False
        qconfig = getattr(mod, "qconfig", None)
        for sub in mod.modules():            # fused modules read their children's qconfig
            sub.qconfig = qconfig
        mod.activation_post_process = self.observers[q.name]
        from ember.ao.nn.intrinsic.qat.modules.conv_fused import _fold_bn_once
        _fold_bn_once(mod)          # a QAT ConvBn2d: bn into the weight first, as torch
        qmod = qcls.from_float(mod)
        del mod.activation_post_process
        parent, _, name = root.target.rpartition(".")
        setattr(self.modules[parent] if parent else self.model, name, qmod)
        self.modules[root.target] = qmod
        self.lowered.add(root.target)
        return self.reuse_lowered(root, q, nodes)

    def reuse_lowered(self, root, q, nodes=()):
        """A call of a module already quantized (a module called at several places, as
        torch: every call reads quantized input and gives the module's output grid)."""
        self.strip_dq(root)
        s, z = q.args[1], q.args[2]
        q.replace_all_uses_with(root)
        self.graph.erase_node(q)
        self.erase([s, z])
        self.erase(nodes[1:])
        return True

    def lower_weighted_function(self, root, last, nodes, q, target):
        name, dims = _FUNCTIONAL_WEIGHTED[target]
        wdq = root.args[1] if len(root.args) > 1 else root.kwargs.get("weight")
        if not _is_dq(wdq) or not _is_q(wdq.args[0]):
            return False
        wq = wdq.args[0]
        w, ws, wz = wq.args[0], wq.args[1], wq.args[2]
        if wq.target is ember.quantize_per_channel:
            qweight = ember.quantize_per_channel(self.attr_value(w), self.attr_value(ws),
                                                 self.attr_value(wz), wq.args[3], wq.args[4])
        else:
            qweight = ember.quantize_per_tensor(self.attr_value(w), float(self.attr_value(ws)),
                                                int(self.attr_value(wz)), wq.args[3])
        bias_node = root.args[2] if len(root.args) > 2 else root.kwargs.get("bias")
        bias = self.attr_value(bias_node) if hasattr(bias_node, "op") else bias_node
        relu = len(nodes) > 1
        if dims is None:
            packed = _q().linear_prepack(qweight, bias)
        else:
            rest = list(root.args[3:])
            defaults = [1, 0, 1, 1]
            stride, padding, dilation, groups = rest + defaults[len(rest):]
            # given as written: torch's prepack refuses a bare int stride (int[] expected)
            packed = getattr(_q(), f"conv{dims}d_prepack")(qweight, bias, stride, padding,
                                                           dilation, groups)
        pname = _new_attr(self.model, self.prefix(root) + "packed_weight_")
        setattr(self.model, pname, packed)
        x = root.args[0]
        s, z = self.take_output(q, root, root)
        with self.graph.inserting_before(s):
            packed_node = self.graph.get_attr(pname)
        op = getattr(_q(), name + ("_relu" if relu else ""))
        root.target = op
        root.args = (x.args[0] if _is_dq(x) else x, packed_node, s, z)
        root.kwargs = {}
        if relu:
            nodes[-1].replace_all_uses_with(root)
        self.erase(nodes[1:])
        self.erase([wdq, wq, ws, wz, w])
        if hasattr(bias_node, "op"):
            self.erase([bias_node])
        return True

    def lower_binary(self, root, last, nodes, q, target):
        if len(root.args) != 2 or not _is_dq(root.args[0]):
            return False
        relu = len(nodes) > 1
        op = getattr(_q(), _BINARY[target] + ("_relu" if relu else ""))
        first, second = root.args
        if isinstance(second, (int, float)) and not isinstance(second, bool):
            # x * 0.5: quantized::mul(qx, 0.5), the result's parameters the op's own
            with self.graph.inserting_before(root):
                new = self.graph.call_function(op, (first.args[0], second))
            s, z = q.args[1], q.args[2]
            q.replace_all_uses_with(new)
            self.graph.erase_node(q)
            self.erase([s, z])
            self.erase(nodes)
            return True
        if not _is_dq(second):
            return False
        with self.graph.inserting_before(root):
            new = self.graph.call_function(op, (first.args[0], second.args[0], q.args[1],
                                                q.args[2]))
        self.take_output(q, new, new)
        self.erase(nodes)
        return True

    def lower_qparam_function(self, root, last, nodes, q, target):
        if not self.inputs_quantized(root):
            return False
        op = getattr(_q(), _QPARAM_FUNCTIONS[target])
        with self.graph.inserting_before(root):
            new = self.graph.call_function(op, (root.args[0].args[0],), {})
        s, z = self.take_output(q, new, new)
        # the call's own keywords the quantized op takes (elu's alpha, leaky_relu's
        # negative_slope and inplace), then the output's parameters
        names = {a.name for rec in op._overloads.values() for a in rec.schema.args}
        kept = {k: v for k, v in root.kwargs.items() if k in names}
        new.kwargs = {**kept, "output_scale": s, "output_zero_point": z}
        self.erase(nodes)
        return True

    def lower_in_place(self, root, last, nodes, q):
        """Ops that run on quantized tensors as they are (shared or fixed qparams)."""
        if not self.inputs_quantized(root):
            return False
        self.strip_dq(root)
        s, z = q.args[1], q.args[2]
        q.replace_all_uses_with(last)
        self.graph.erase_node(q)
        self.erase([s, z])
        return True

    def lower_dynamic_linear(self, root):
        """F.linear under a dynamic qconfig (float input, no output quantize) ->
        ``quantized::linear_dynamic(x, packed, True)`` (int8 weights, torch passes
        reduce_range=True) or ``quantized::linear_dynamic_fp16(x, packed)``."""
        wnode = root.args[1] if len(root.args) > 1 else root.kwargs.get("weight")
        if _is_dq(wnode) and _is_q(wnode.args[0]) and \
                wnode.args[0].target is ember.quantize_per_tensor:
            wq = wnode.args[0]
            w, ws, wz = wq.args[0], wq.args[1], wq.args[2]
            qweight = ember.quantize_per_tensor(self.attr_value(w), float(self.attr_value(ws)),
                                                int(self.attr_value(wz)), wq.args[3])
            weight_nodes, fp16 = [wnode, wq, ws, wz, w], False
        elif getattr(wnode, "op", None) == "get_attr":
            qweight, weight_nodes, fp16 = self.attr_value(wnode), [wnode], True
        else:
            return False
        bias_node = root.args[2] if len(root.args) > 2 else root.kwargs.get("bias")
        bias = self.attr_value(bias_node) if hasattr(bias_node, "op") else bias_node
        packed = _q().linear_prepack_fp16(qweight, bias) if fp16 else \
            _q().linear_prepack(qweight, bias)
        pname = _new_attr(self.model, "_packed_weight_")
        setattr(self.model, pname, packed)
        with self.graph.inserting_before(root):
            packed_node = self.graph.get_attr(pname)
        root.target = _q().linear_dynamic_fp16 if fp16 else _q().linear_dynamic
        root.args = (root.args[0], packed_node) if fp16 else (root.args[0], packed_node, True)
        root.kwargs = {}
        self.erase(weight_nodes)
        if hasattr(bias_node, "op"):
            self.erase([bias_node])
        return True

    def _dynamic_qconfig(self, root):
        qconfig = self.attrs.node_name_to_qconfig.get(root.name)
        if qconfig is None:
            return False
        activation = qconfig.activation()
        return bool(getattr(activation, "is_dynamic", False)) and \
            getattr(activation, "dtype", None) in (ember.quint8, ember.float16)

    def lower(self, root, last, nodes, config):
        q = self.output_q(last)
        if q is None and len(nodes) == 1 and root.op == "call_function" and \
                root.target is F.linear and self._dynamic_qconfig(root):
            return self.lower_dynamic_linear(root)
        if q is None:
            return False
        from ember.ao.quantization.fx.prepare import _canonical
        target = _canonical(root.target) if root.op == "call_function" else None
        fixed = any(dc.output_dtype_with_constraints.scale_exact_match is not None
                    for dc in config.dtype_configs)
        in_place = config.observation_type is \
            ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT or fixed
        # as torch, a pattern lowers where its reference form (dequantize -> op ->
        # quantize) is there, even if its own qconfig is None; modules need their qconfig
        if root.op == "call_module":
            if root.target in self.lowered and len(nodes) == 1:
                return self.reuse_lowered(root, q, nodes)
            if getattr(self.modules[root.target], "qconfig", None) is None:
                return False
            if config.observation_type is ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT:
                return self.lower_in_place(root, last, nodes, q)   # ReLU6, pools: kept
            if type(self.modules[root.target]) in self.mapping:
                if not self.inputs_quantized(root):
                    return False
                return self.lower_module(root, last, nodes, q)
            return self.lower_in_place(root, last, nodes, q) if in_place else False
        if target in _FUNCTIONAL_WEIGHTED:
            if len(nodes) > 1 and nodes[-1].target not in _RELUS:
                return False
            return self.lower_weighted_function(root, last, nodes, q, target)
        if target in _BINARY:
            if self.attrs.node_name_to_qconfig.get(root.name) is None:
                return False                 # torch skips binary ops without a qconfig
            return self.lower_binary(root, last, nodes, q, target)
        if target in _QPARAM_FUNCTIONS:
            return self.lower_qparam_function(root, last, nodes, q, target)
        return self.lower_in_place(root, last, nodes, q) if in_place else False


def _new_attr(model, prefix):
    i = 0
    while hasattr(model, f"{prefix}{i}"):
        i += 1
    return f"{prefix}{i}"


def lower_to_quantized(model, attrs, observers):
    """Lower every matched pattern of ``model``'s reference graph that is quantized."""
    low = _Lowering(model, attrs, observers)
    by_name = {n.name: n for n in model.graph.nodes}
    seen = set()
    for node in list(model.graph.nodes):
        entry = attrs.matches.get(node.name)
        if entry is None or entry[1] in seen:
            continue
        root_name, last_name, names, config = entry
        seen.add(last_name)
        nodes = [by_name.get(n) for n in names]
        if any(n is None or getattr(n, "_erased", False) for n in nodes):
            continue
        low.lower(nodes[0], nodes[-1], nodes, config)
    import builtins
    for node in list(model.graph.nodes):
        if _is_dq(node):          # x.shape / x.size() read the quantized tensor as well
            for user in list(node.users):
                if user.op == "call_function" and user.target is builtins.getattr or \
                        user.op == "call_method" and user.target in ("size", "dim", "numel"):
                    user.replace_input_with(node, node.args[0])
    for node in reversed(list(model.graph.nodes)):
        if (_is_dq(node) or _is_q(node)) and not node.users:
            inputs = list(node.args[1:3]) if _is_q(node) else []
            model.graph.erase_node(node)
            low.erase([a for a in inputs if hasattr(a, "op")])
