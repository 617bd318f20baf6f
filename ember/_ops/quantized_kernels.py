"""Quantized kernels of ATen ops: what ``torch.relu(qx)``, ``torch.cat([qa, qb])``... run when
an operand is quantized. Each reads the integers and parameters (ember/_ops/quantized.py), and
ends in the one requantization rule (ember/_kernels/quantized.py)."""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import quantized as K
from ember._ops.quantized import (quantized_kernel, qparams, int_array, is_quantized,
                                  from_ints, per_tensor, float_array, QParams, could_not_run)
from ember._tensor import Tensor, _make
from ember.autograd.graph import bump_version


def _same_type(fname, tensors):
    first = tensors[0]
    for t in tensors[1:]:
        if not is_quantized(t) or t.dtype is not first.dtype:
            raise RuntimeError(f"{fname}: all tensors must have the same quantized dtype, got "
                               f"{first.dtype} and {t.dtype}")


@quantized_kernel("cat")
def cat(op, args, out):
    """torch.cat of quantized tensors: per tensor only; inputs with other parameters than the
    first are requantized to the first's (torch's ``quantized::cat`` with the first's qparams)."""
    tensors, dim = list(args[0]), args[1]
    _same_type("cat", tensors)
    qps = [qparams(t) for t in tensors]
    if any(qp.per_channel for qp in qps):
        raise RuntimeError("Only per-tensor quantization is supported in 'cat'!")
    qp = qps[0]
    if all(p == qp for p in qps):
        ints = np.concatenate([int_array(t) for t in tensors], axis=dim % tensors[0].dim())
        return from_ints(ints, tensors[0].dtype, qp)
    values = np.concatenate([float_array(t) for t in tensors], axis=dim % tensors[0].dim())
    return per_tensor(tensors[0].dtype, values, qp.scale, qp.zero_point)


@quantized_kernel("relu", "relu_")
def relu(op, args, out):
    """max(q, zero_point) on the integers: no requantization."""
    x = args[0]
    qp = qparams(x)
    ints = int_array(x)
    zero = qp.broadcast(x.dim())[1]
    result = np.maximum(ints, np.asarray(zero).astype(ints.dtype))
    if op.is_inplace:
        ints[...] = result
        bump_version(x)
        return x
    return from_ints(result, x.dtype, qp)


@quantized_kernel("equal")
def equal(op, args, out):
    a, b = args[0], args[1]
    if not (is_quantized(a) and is_quantized(b)):
        return False
    return a.dtype is b.dtype and a.shape == b.shape and qparams(a) == qparams(b) and \
        bool(np.array_equal(int_array(a), int_array(b)))
