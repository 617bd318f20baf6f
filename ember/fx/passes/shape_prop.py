"""ShapeProp: run a GraphModule and note each node's tensor metadata."""
from __future__ import annotations

from typing import Any, NamedTuple

import ember
from ember.fx.interpreter import Interpreter
from ember.fx.node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(t):
    fmt = None
    for candidate in (ember.contiguous_format, ember.channels_last, ember.channels_last_3d):
        try:
            if t.is_contiguous(memory_format=candidate):
                fmt = candidate
                break
        except Exception:
            continue
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, t.stride(), fmt,
                          bool(getattr(t, "is_quantized", False)), {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` fills ``node.meta['tensor_meta']`` (a
    TensorMetadata, or the same structure of them for tuple/list results) and
    ``node.meta['type']``."""

    def run_node(self, n):
        result = super().run_node(n)
        found = []

        def meta(x):
            if isinstance(x, ember.Tensor):
                found.append(True)
                return _extract_tensor_metadata(x)
            return x
        tensor_meta = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = tensor_meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        return super().run(*args)
