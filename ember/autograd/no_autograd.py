"""Ops with no gradient formula (the ``quantized::`` records): torch connects their float
outputs to the inputs that require grad through a node whose backward warns and passes no
gradient (its ``WarnNotImplemented`` fallback). ``WarnNotImplemented.connect`` does the same
for ember's records."""
from __future__ import annotations

import warnings

from ember._tensor import Tensor
from ember.autograd.function import Function


class WarnNotImplemented(Function):
    """The node of an op without an autograd kernel."""

    @staticmethod
    def forward(ctx, name, n_results, *tensors):
        ctx.op_name = name
        ctx.mark_non_differentiable(*[t for t in tensors[:n_results]
                                      if not t.dtype.is_floating_point])
        return tuple(t.detach() for t in tensors[:n_results])

    @staticmethod
    def backward(ctx, *grads):
        warnings.warn(
            f"{ctx.op_name}: an autograd kernel was not registered to the Autograd key(s) but "
            "we are trying to backprop through it. This may lead to silently incorrect "
            "behavior. This behavior is deprecated and will be removed in a future version of "
            "PyTorch. If your operator is differentiable, please ensure you have registered an "
            "autograd kernel to the correct Autograd key (e.g. DispatchKey::Autograd, "
            "DispatchKey::CompositeImplicitAutograd). If your operator is not differentiable, "
            "or to squash this warning and use the previous behavior, please register "
            "torch::CppFunction::makeFallthrough() to DispatchKey::Autograd.", UserWarning)
        return (None, None) + (None,) * len(ctx.next_functions)

    @classmethod
    def connect(cls, name, result, inputs):
        """``result`` (a tensor or a sequence; non-tensors pass through) made to depend on
        ``inputs`` (tensors requiring grad)."""
        items = list(result) if isinstance(result, (list, tuple)) else [result]
        where = [i for i, r in enumerate(items) if isinstance(r, Tensor)]
        outs = cls.apply(name, len(where), *[items[i] for i in where], *inputs)
        for i, o in zip(where, outs):
            items[i] = o
        if isinstance(result, Tensor):
            return items[0]
        return type(result)(items) if isinstance(result, tuple) else items


# torch's node is its C++ fallback, printed ``grad_fn=<WarnNotImplemented>``
WarnNotImplemented._backward_cls.__name__ = "WarnNotImplemented"
WarnNotImplemented._backward_cls.__qualname__ = "WarnNotImplemented"
