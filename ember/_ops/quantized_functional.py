"""The ``quantized::`` op records (``ember.ops.quantized.add`` ...): the kernels that
``ember.ao.nn.quantized`` modules and converted graphs call. Each is one record, so the
profiler, tracer and JIT see it like any other op; each computes torch's x86/fbgemm integers
(the rules in ember/_kernels/quantized.py, found by running torch on random inputs)."""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import quantized as K
from ember._ops.quantized import defop, qparams, int_array, from_ints, QParams, is_quantized

_RELU = {False: None, True: 0}


def _check_pair(fname, qa, qb):
    if not (is_quantized(qa) and is_quantized(qb)):
        raise RuntimeError(f"quantized::{fname} expects quantized tensors, got {qa.dtype} and "
                           f"{qb.dtype}")
    if qa.dtype is not qb.dtype:
        raise RuntimeError(f"quantized::{fname}: both inputs must have the same dtype, got "
                           f"{qa.dtype} and {qb.dtype}")


def _binary(fname, qa, qb, scale, zero_point, combine, relu):
    """dequantize both (vector rule), ``combine`` in float32, requantize (vector rule)."""
    _check_pair(fname, qa, qb)
    pa, pb = qparams(qa), qparams(qb)
    a = K.dequantize_vec(int_array(qa), pa.scale, pa.zero_point)
    b = K.dequantize_vec(int_array(qb), pb.scale, pb.zero_point)
    lo, hi = _dtype.QRANGE[qa.dtype]
    ints = K.quantize_vec(combine(a, b), scale, zero_point, lo, hi, _dtype.QSTORAGE[qa.dtype])
    if relu:
        np.maximum(ints, np.asarray(zero_point).astype(ints.dtype), out=ints)
    return from_ints(ints, qa.dtype, QParams(_dtype.per_tensor_affine, float(scale),
                                             int(zero_point)))


add = defop("quantized::add(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc",
            composite=lambda qa, qb, scale, zero_point:
            _binary("add", qa, qb, scale, zero_point, np.add, False),
            function=False, method=False, out=False, differentiable=False)
add_relu = defop("quantized::add_relu(Tensor qa, Tensor qb, float scale, int zero_point) -> "
                 "Tensor qc", composite=lambda qa, qb, scale, zero_point:
                 _binary("add_relu", qa, qb, scale, zero_point, np.add, True),
                 function=False, method=False, out=False, differentiable=False)
