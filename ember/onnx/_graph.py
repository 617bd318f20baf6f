"""The ONNX graph under construction and the values the exporter passes around.

``V`` is one IR value during export: ``name`` (an ONNX tensor name) when it is computed in
the ONNX graph, else ``value`` (a Python value or a tensor known at export time); ``items``
when it is a list/tuple whose elements are ``V``s; ``example`` is what the value was in the
example run (a tensor, an int ...), giving dtypes and shapes to symbolic functions.

``GraphContext.op(op_type, *inputs, outputs=1, **attrs)`` appends an ONNX node (torch's
``g.op``); inputs may be ``V``s, ONNX names, ``None`` (an omitted optional input) or static
Python values/tensors (made constants).
"""
from __future__ import annotations

import numpy as np

import ember

_MISSING = object()


_AXES_INPUT_18 = frozenset({"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                            "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})


class V:
    __slots__ = ("name", "value", "example", "items")

    def __init__(self, name=None, value=None, example=_MISSING, items=None):
        self.name, self.value, self.items = name, value, items
        if example is _MISSING:
            example = value
        self.example = example

    @property
    def static(self):
        return self.name is None and self.items is None

    def __repr__(self):
        if self.name is not None:
            return f"V({self.name})"
        if self.items is not None:
            return f"V(items={self.items})"
        return f"V(value={type(self.value).__name__})"


class Unavailable:
    """An output the export cannot provide (e.g. max-pool indices); using it is an error."""

    def __init__(self, why):
        self.why = why


# ember dtype <-> ONNX TensorProto element types
def _onnx_types():
    from onnx import TensorProto as P
    return {ember.float32: P.FLOAT, ember.float64: P.DOUBLE, ember.float16: P.FLOAT16,
            ember.bfloat16: P.BFLOAT16, ember.int64: P.INT64, ember.int32: P.INT32,
            ember.int16: P.INT16, ember.int8: P.INT8, ember.uint8: P.UINT8,
            ember.bool: P.BOOL}


def dtype_of(example):
    """The ember dtype of an example value (Python numbers as ONNX stores them)."""
    if isinstance(example, ember.Tensor):
        return example.dtype
    if isinstance(example, bool):
        return ember.bool
    if isinstance(example, int):
        return ember.int64
    if isinstance(example, float):
        return ember.float32
    raise TypeError(f"no ONNX dtype for {type(example).__name__}")


def onnx_type(dtype):
    t = _onnx_types().get(dtype)
    if t is None:
        from ember.onnx.errors import OnnxExporterError
        raise OnnxExporterError(f"dtype {dtype} has no ONNX type")
    return t


def to_numpy(value, dtype=None):
    """A static value as a NumPy array (``dtype``: an ember dtype)."""
    if isinstance(value, ember.Tensor):
        arr = value.detach().contiguous().numpy()
    else:
        arr = np.asarray(value)
        if dtype is None:
            dtype = dtype_of(value if not isinstance(value, (list, tuple)) else
                             (value[0] if value else 0))
    if dtype is not None:
        arr = arr.astype(ember.empty(0, dtype=dtype).numpy().dtype)
    return np.array(arr, order="C", copy=True)


class GraphContext:
    """Collects the nodes, initializers and constants of one ONNX graph (or subgraph)."""

    def __init__(self, exporter, parent=None):
        self.exporter = exporter
        self.parent = parent
        self.nodes = []
        self.opset = exporter.opset
        self.node = None            # the IR node being converted
        self.outs = ()              # the example outputs of that node
        self.ins = ()               # its inputs

    # names are unique across the whole model (subgraphs included)
    def fresh(self, hint="v"):
        return self.exporter.fresh(hint)

    def op(self, op_type, *inputs, outputs=1, domain="", **attrs):
        from onnx import helper
        if op_type in _AXES_INPUT_18 and not domain and self.opset >= 18 and \
                attrs.get("axes") is not None:      # opset 18 moved axes to an input
            inputs = (inputs[0], self.const(list(attrs.pop("axes"))))
        names = [self.input(i) for i in inputs]
        while names and names[-1] == "":
            names.pop()             # omitted trailing optional inputs
        outs = [self.fresh(op_type) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, names, outs, name=self.fresh(op_type + "_n"),
                                           domain=domain or None, **attrs))
        return outs[0] if outputs == 1 else outs

    def input(self, v, dtype=None):
        """An ONNX name for ``v`` (cast to ``dtype`` when given and different)."""
        if v is None:
            return ""
        if isinstance(v, str):
            return v
        if not isinstance(v, V):
            v = V(value=v)
        if isinstance(v.value, Unavailable):
            from ember.onnx.errors import SymbolicValueError
            raise SymbolicValueError(v.value.why)
        if v.items is not None:
            return self.list_tensor(v.items, dtype)
        if v.name is None:
            if v.value is None:
                return ""
            return self.const(v.value, dtype)
        if dtype is not None and dtype_of(v.example) != dtype:
            return self.op("Cast", v.name, to=onnx_type(dtype))
        return v.name

    def const(self, value, dtype=None):
        """A static value as an ONNX initializer (large) or a Constant node (small)."""
        return self.exporter.constant(self, value, dtype)

    def list_tensor(self, items, dtype=None):
        """A 1-d tensor from a list of ints (static or dynamic 0-d ``V``s)."""
        dtype = dtype or ember.int64
        if all(isinstance(i, V) and i.static for i in items) or not any(isinstance(i, V)
                                                                        for i in items):
            return self.const([i.value if isinstance(i, V) else i for i in items], dtype)
        parts = []
        for i in items:
            name = self.input(i, dtype)
            parts.append(self.op("Reshape", name, self.const([1])))
        return parts[0] if len(parts) == 1 else self.op("Concat", *parts, axis=0)


def scalar_dtype(example):
    """The dtype a Python value takes as an ONNX scalar (None for a tensor: its own)."""
    return None if isinstance(example, ember.Tensor) else dtype_of(example)


def value_info(name, example, unknown=False, dims=None):
    """An ONNX ValueInfo for a graph input/output like ``example`` (``dims``: the shape with
    names for dynamic axes; ``unknown``: rank only)."""
    from onnx import helper
    if isinstance(example, ember.Tensor):
        shape = dims if dims is not None else (
            [None] * example.dim() if unknown else list(example.shape))
        return helper.make_tensor_value_info(name, onnx_type(example.dtype), shape)
    return helper.make_tensor_value_info(name, onnx_type(dtype_of(example)), [])
