"""``torch.utils.mobile_optimizer``: ``optimize_for_mobile`` over ``ember.jit`` graphs.

    freeze                  attributes -> constants, dropout removed (``jit.freeze``)
    conv/linear-bn folding  also when the conv's output is read by shape checks (``x.dim()``
                            of a batch norm's input check): the folded output has its shape
    conv/linear + clamp     ``relu``/``relu6``/``hardtanh`` after a conv2d or linear become one
                            fused node (``ember::conv2d_clamp`` / ``ember::linear_clamp``)
                            running the op and clamping its fresh output in place
    add + relu              ``relu(a + b)`` of tensors -> ``ember::add_relu`` (in place on the sum)
    constant hoisting       every non-tensor constant moved to the graph's top and shared

The lite-interpreter writer (``ember.jit.mobile``) expands fused nodes back to torch's ops.
"""
from __future__ import annotations

import enum

import ember
from ember.jit import _types as T
from ember.jit._ir import NOT_CONSTANT, Node

__all__ = ["MobileOptimizerType", "LintCode", "optimize_for_mobile", "generate_mobile_module_lints",
           "FUSED_KINDS"]


class MobileOptimizerType(enum.Enum):
    CONV_BN_FUSION = 0
    INSERT_FOLD_PREPACK_OPS = 1
    REMOVE_DROPOUT = 2
    FUSE_ADD_RELU = 3
    HOIST_CONV_PACKED_PARAMS = 4
    VULKAN_AUTOMATIC_GPU_TRANSFER = 6


class LintCode(enum.Enum):
    BUNDLED_INPUT = 1
    REQUIRES_GRAD = 2
    DROPOUT = 3
    BATCHNORM = 4


def generate_mobile_module_lints(script_module):
    """torch's lints for a module about to be saved for mobile: no bundled inputs,
    parameters requiring grad, batch_norm / dropout operators left in ``forward``."""
    from ember.jit._modules import ScriptModule
    from ember.jit._passes import clone_graph, inline_calls
    if not isinstance(script_module, ScriptModule):
        raise TypeError(f"Got {type(script_module)}, but ScriptModule is expected.")
    lints = []
    if not hasattr(script_module, "get_all_bundled_inputs"):
        lints.append({"name": LintCode.BUNDLED_INPUT.name, "message": (
            "No bundled input for forward, please add bundled inputs before saving the module "
            "using torch.utils.bundled_inputs.augment_model_with_bundled_inputs.")})
    for name, p in script_module.named_parameters():
        if p.requires_grad:
            lints.append({"name": LintCode.REQUIRES_GRAD.name, "message": (
                f"Param {name} requires grad, please set torch.no_grad() to reduce memory usage "
                "and improve computation speed during inference phase.")})
    forward = script_module._ct.methods.get("forward")
    kinds = {n.kind for n in inline_calls(clone_graph(forward.graph)).all_nodes()} \
        if forward is not None and not isinstance(forward, str) else set()
    if "aten::batch_norm" in kinds:
        lints.append({"name": LintCode.BATCHNORM.name, "message": (
            "Operator aten::batch_norm exists, remember to call eval() before saving the module "
            "and call torch.utils.mobile_optimizer.optimize_for_mobile to drop batch_norm "
            "operator.")})
    if kinds & {"aten::dropout", "aten::feature_dropout"}:
        lints.append({"name": LintCode.DROPOUT.name, "message": (
            "Operator aten::dropout exists, remember to call eval() before saving the module.and "
            "call torch.utils.mobile_optimizer.optimize_for_mobile to drop dropout operator.")})
    return lints


def optimize_for_mobile(script_module, optimization_blocklist=None, preserved_methods=None,
                        backend="CPU"):
    """A frozen, folded and fused copy of scripted ``script_module`` (see module docstring)."""
    from ember.jit import freeze
    from ember.jit._modules import ScriptModule
    if not isinstance(script_module, ScriptModule):
        raise TypeError(f"Got {type(script_module)}, but ScriptModule is expected.")
    if backend.lower() != "cpu":
        raise NotImplementedError(f"optimize_for_mobile: backend '{backend}' is not supported "
                                  "by ember (CPU only)")
    blocked = set(optimization_blocklist or ())
    preserved = [m.decode() if isinstance(m, bytes) else m for m in (preserved_methods or [])]
    mod = script_module if not script_module.training else script_module.eval()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        frozen = freeze(mod, preserved_attrs=preserved,
                        optimize_numerics=MobileOptimizerType.CONV_BN_FUSION not in blocked)
    for name, fn in list(frozen._ct.methods.items()):
        if isinstance(fn, str):
            continue
        g = fn.graph
        if MobileOptimizerType.CONV_BN_FUSION not in blocked:
            fold_conv_bn(g)
        if MobileOptimizerType.INSERT_FOLD_PREPACK_OPS not in blocked:
            fuse_clamp(g)
        if MobileOptimizerType.FUSE_ADD_RELU not in blocked:
            fuse_add_relu(g)
        if MobileOptimizerType.HOIST_CONV_PACKED_PARAMS not in blocked:
            hoist_constants(g)
        fn.finish(optimize=False)
    frozen.__dict__["_ember_mobile_optimized"] = True
    return frozen


# ----------------------------------------------------------------------------- helpers

_SHAPE_ONLY = ("aten::dim", "aten::size", "prim::shape", "aten::len")


def _shape_only(use):
    return isinstance(use, Node) and use.kind in _SHAPE_ONLY


def fold_conv_bn(g):
    """Fold ``batch_norm(conv(x))`` (eval) whose conv output is otherwise only measured."""
    from ember.jit import _freeze as Z
    F, convs, _ = Z._functional()
    for bn in list(g.all_nodes()):
        if bn.fn is not F.batch_norm or bn.owner is None:
            continue
        sig, args = Z._arguments(bn)
        x = args.get("input")
        conv = x.node if x is not None else None
        if not isinstance(conv, Node) or (conv.fn not in convs and conv.fn is not F.linear):
            continue
        others = [u for u, _ in x.uses if u is not bn]
        if not all(_shape_only(u) for u in others) or conv.owner is not bn.owner:
            continue
        vals = {k: Z._value(args, k, sig) for k in ("running_mean", "running_var", "weight",
                                                    "bias", "training", "eps")}
        if vals["training"] is not False or any(v is NotImplemented for v in vals.values()) \
                or vals["running_mean"] is None or vals["running_var"] is None:
            continue
        csig, cargs = Z._arguments(conv)
        w, b = Z._value(cargs, "weight", csig), Z._value(cargs, "bias", csig)
        if not isinstance(w, ember.Tensor) or b is NotImplemented:
            continue
        with ember.no_grad():
            scale = (vals["running_var"] + vals["eps"]).rsqrt()
            if vals["weight"] is not None:
                scale = vals["weight"] * scale
            shift = -vals["running_mean"] * scale
            if vals["bias"] is not None:
                shift = shift + vals["bias"]
            new_w = (w * scale.reshape((-1,) + (1,) * (w.dim() - 1))).to(w.dtype)
            new_b = (shift if b is None else b * scale + shift).to(w.dtype)
        new = _positional_call(conv, csig, cargs, {"weight": new_w, "bias": new_b})
        bn.outputs[0].replace_all_uses_with(new)
        bn.destroy()
    return g


def _constant(block, anchor, value, type_=None):
    c = Node("prim::Constant", (), {} if value is None else {"value": value})
    c.add_output(type_ or (T.type_of_value(value) if value is not None else T.NoneType))
    block.insert_before(anchor, c)
    return c.output


def _positional_call(n, sig, args, replace, kind=None, fn=None, extra=()):
    """Replace node ``n`` by a call of ``fn`` (default its own) with every parameter of
    ``sig`` positional (defaults as constants), ``replace`` values as new constants and
    ``extra`` values appended. Returns the new output."""
    block = n.owner
    inputs = []
    for name, p in sig.parameters.items():
        if name in replace:
            inputs.append(_constant(block, n, replace[name], T.TensorType))
        elif name in args:
            inputs.append(args[name])
        else:
            inputs.append(_constant(block, n, p.default))
    inputs.extend(extra)
    new = Node(kind or n.kind, inputs, n.attrs, n.source)
    new.fn, new.op = fn or n.fn, (None if fn else n.op)
    out = new.add_output(n.outputs[0].type, n.outputs[0].debug_name)
    block.insert_before(n, new)
    n.outputs[0].replace_all_uses_with(out)
    n.destroy()
    return out


# ----------------------------------------------------------------------------- fusion

def _conv2d_clamp(input, weight, bias, stride, padding, dilation, groups, min_val, max_val):
    """conv2d then clamp of its fresh output in place: (N, C, H, W) -> (N, O, H', W')."""
    from ember.nn import functional as F
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups).clamp_(min_val, max_val)


def _linear_clamp(input, weight, bias, min_val, max_val):
    """linear then clamp in place: (*, in) -> (*, out)."""
    from ember.nn import functional as F
    return F.linear(input, weight, bias).clamp_(min_val, max_val)


def _add_relu(input, other, alpha):
    """relu(input + alpha * other), the sum clamped in place (tensors broadcast)."""
    return ember.add(input, other, alpha=alpha).relu_()


FUSED_KINDS = {"ember::conv2d_clamp": ("aten::conv2d", 7), "ember::linear_clamp": ("aten::linear", 3),
               "ember::add_relu": ("aten::add", 3)}


def fuse_add_relu(g):
    """``relu(add(a, b, alpha))`` of two tensors (the sum read only by the relu) -> one node."""
    for act in list(g.all_nodes()):
        if act.owner is None or act.kind not in ("aten::relu", "aten::relu_") or not act.inputs:
            continue
        x = act.inputs[0]
        add = x.node
        if not isinstance(add, Node) or add.kind != "aten::add" or add.op is None \
                or add.owner is not act.owner or len(x.uses) != 1 or len(add.inputs) != 3 \
                or any(v.type is not T.TensorType for v in add.inputs[:2]):
            continue
        new = Node("ember::add_relu", list(add.inputs), {}, add.source)
        new.fn = _add_relu
        out = new.add_output(T.TensorType, act.outputs[0].debug_name)
        act.owner.insert_before(act, new)
        act.outputs[0].replace_all_uses_with(out)
        act.destroy()
        add.destroy()
    return g


def _clamp_bounds(n):
    """(min, max) of a relu / relu6 / hardtanh node with constant bounds, else None."""
    kind = n.kind.rstrip("_")
    if kind == "aten::relu":
        return 0.0, None
    if kind == "aten::relu6":
        return 0.0, 6.0
    if kind != "aten::hardtanh":
        return None
    if n.op is not None:
        lo = n.inputs[1].constant() if len(n.inputs) > 1 else -1.0
        hi = n.inputs[2].constant() if len(n.inputs) > 2 else 1.0
    else:
        from ember.jit import _freeze as Z
        sig, args = Z._arguments(n)
        lo, hi = Z._value(args, "min_val", sig), Z._value(args, "max_val", sig)
    if lo is NOT_CONSTANT or hi is NOT_CONSTANT or lo is NotImplemented or hi is NotImplemented:
        return None
    return float(lo), float(hi)


def fuse_clamp(g):
    """conv2d/linear followed by relu/relu6/hardtanh (sole reader) -> one fused node."""
    from ember.jit import _freeze as Z
    from ember.nn import functional as F
    for act in list(g.all_nodes()):
        if act.owner is None or not act.inputs:
            continue
        bounds = _clamp_bounds(act)
        x = act.inputs[0]
        prod = x.node
        if bounds is None or not isinstance(prod, Node) or prod.owner is not act.owner:
            continue
        if prod.fn is F.conv2d:
            kind, fn = "ember::conv2d_clamp", _conv2d_clamp
        elif prod.fn is F.linear:
            kind, fn = "ember::linear_clamp", _linear_clamp
        else:
            continue
        if any(u is not act and not _shape_only(u) for u, _ in x.uses):
            continue
        sig, args = Z._arguments(prod)
        block = act.owner
        lo = _constant(block, prod, bounds[0], T.FloatType)
        hi = _constant(block, prod, bounds[1], T.OptionalType(T.FloatType)
                       if bounds[1] is None else T.FloatType)
        out = _positional_call(prod, sig, args, {}, kind=kind, fn=fn, extra=(lo, hi))
        act.outputs[0].replace_all_uses_with(out)
        act.destroy()
    return g


# ----------------------------------------------------------------------------- hoisting

def _key(v):
    if isinstance(v, (list, tuple)):
        return (type(v).__name__,) + tuple(_key(e) for e in v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return (type(v).__name__, v)
    return None


def hoist_constants(g):
    """Move non-tensor constants to the top of the graph, one node per distinct value."""
    top = g.block
    seen = {}
    for n in list(g.all_nodes()):
        if n.kind != "prim::Constant" or n.owner is None or n.blocks:
            continue
        value = n.attrs.get("value")
        k = _key(value)
        if k is None or isinstance(n.outputs[0].type, T.FunctionType):
            continue
        k = (str(n.outputs[0].type), k)
        keep = seen.get(k)
        if keep is None:
            seen[k] = n.outputs[0]
            n.owner.nodes.remove(n)
            n.owner = top
            top.nodes.insert(len(seen) - 1, n)
        else:
            n.outputs[0].replace_all_uses_with(keep)
            n.destroy()
    return g
