"""Public dotted names of ember callables, spelled as torch spells them (``torch.add``,
``torch.nn.functional.relu``): graphs print them, generated code calls them with
``torch`` bound to the ember module."""
from __future__ import annotations

import functools
import types

# (namespace attribute path under ember, printed prefix)
_NAMESPACES = (("", "torch"), ("nn.functional", "torch.nn.functional"),
               ("linalg", "torch.linalg"), ("fft", "torch.fft"), ("special", "torch.special"))


# nn.functional functions torch implements in C; those torch also exports at top level
# are the same object there and print as torch.X
FUNCTIONAL_BUILTINS = {
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "conv_tbc", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "threshold_",
    "relu_", "hardtanh_", "elu_", "selu_", "celu_", "leaky_relu_", "prelu", "rrelu_",
    "logsigmoid", "gelu", "hardshrink", "softplus", "softshrink", "linear", "bilinear",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
    "pairwise_distance", "pdist", "cosine_similarity", "one_hot",
    "scaled_dot_product_attention"}
# of those, the ones torch exports from torch._C._nn only (printed torch._C._nn.<C name>)
C_NN = {"avg_pool2d": "avg_pool2d", "avg_pool3d": "avg_pool3d", "hardtanh_": "hardtanh_",
        "elu_": "elu_", "leaky_relu_": "leaky_relu_", "logsigmoid": "log_sigmoid",
        "gelu": "gelu", "softplus": "softplus", "softshrink": "softshrink", "linear": "linear",
        "one_hot": "one_hot", "scaled_dot_product_attention": "scaled_dot_product_attention"}
_EXTRA = {}      # id -> (object, name) for ember.fx's own helpers


@functools.lru_cache(maxsize=None)
def _table():
    import ember
    names = {}
    for path, prefix in _NAMESPACES:
        ns = ember
        for part in filter(None, path.split(".")):
            ns = getattr(ns, part)
        for key, value in vars(ns).items():
            if key.startswith("_") or isinstance(value, (type, types.ModuleType)):
                continue
            value = getattr(value, "__fx_original__", value)    # patched while tracing
            if callable(value):
                if prefix == "torch.nn.functional" and key in FUNCTIONAL_BUILTINS and \
                        hasattr(ember, key):
                    names.setdefault(id(value), (value, f"torch.{key}"))
                if prefix == "torch.nn.functional" and key in C_NN:
                    names.setdefault(id(value), (value, f"torch._C._nn.{C_NN[key]}"))
                names.setdefault(id(value), (value, f"{prefix}.{key}"))
    names.update(_EXTRA)
    return names


def public_name(obj):
    """``'torch.add'`` for ember.add (None for objects outside ember's namespaces)."""
    hit = _table().get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    if type(obj).__name__ == "OpOverloadPacket" and obj._namespace != "aten":
        return f"torch.ops.{obj._namespace}.{obj.__name__}"     # torch.ops.quantized.add
    return None


def resolve_public_name(name, by_name):
    """The object a public name (from :func:`public_name`) stands for."""
    if name.startswith("torch.ops."):
        import ember.ops
        _, _, namespace, op = name.split(".")
        return getattr(getattr(ember.ops, namespace), op)
    return by_name[name]


def namespace_functions(path):
    """(name, function) pairs of one ember namespace: what the tracer wraps."""
    import ember
    ns = ember
    for part in filter(None, path.split(".")):
        ns = getattr(ns, part)
    return ns, [(k, v) for k, v in vars(ns).items()
                if not k.startswith("_") and callable(v)
                and not isinstance(v, (type, types.ModuleType))]
