"""linear_cross_entropy: cross entropy of a linear projection's logits.

``options=None`` composes ember ops (a linear map, then ``cross_entropy``), so every
autograd feature works through it. ``options=LinearCrossEntropyOptions(...)`` runs the fused
record ``_linear_cross_entropy_chunked`` (ember/_ops/nn_fused.py): the batch is walked in
chunks, the (N, C) logits are never held whole, and the gradients are produced in the same
pass. Settings that record does not cover run the composite path with a UserWarning.
"""
from __future__ import annotations

import warnings

import ember
from ember.nn.functional._linear import linear
from ember.nn.functional._loss import cross_entropy
from ember.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions

__all__ = ["linear_cross_entropy"]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
_INDEX_DTYPE_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                      "float64": "Double", "int8": "Char", "int16": "Short", "int32": "Int",
                      "int64": "Long", "uint8": "Byte", "bool": "Bool",
                      "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _type_name(dtype):
    name = str(dtype).split(".")[-1]
    return _INDEX_DTYPE_NAMES.get(name, name)


def _check(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
           label_smoothing):
    """Argument checks shared by both paths. Returns (probability targets?, out_features)."""
    for name, t in (("input", input), ("linear_weight", linear_weight), ("target", target)):
        if not isinstance(t, ember.Tensor):
            raise TypeError(f"linear_cross_entropy(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if input.dim() not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    d_in, d_w = input.shape[-1], linear_weight.shape[-1]
    if d_in != d_w:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {d_in} and {d_w}, respectively")
    out_features = tuple(linear_weight.shape[1:-1])
    if out_features and input.dim() == 1:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, {d_in}), "
                           f"got unbatched input with shape {tuple(input.shape)}")
    if linear_bias is not None and tuple(linear_bias.shape) != tuple(linear_weight.shape[:-1]):
        raise RuntimeError(f"expected linear_bias shape {tuple(linear_weight.shape[:-1])}, "
                           f"got {tuple(linear_bias.shape)}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    C = linear_weight.shape[0]
    if weight is not None and (weight.dim() != 1 or weight.shape[0] != C):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    # logits: (C,) for 1-D input, else (N, C, d_1, ..., d_K)
    logits_shape = (C,) if input.dim() == 1 else (input.shape[0], C) + out_features
    if input.dim() == 2 and target.dim() >= 1 and target.shape[0] != input.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    probs = tuple(target.shape) == logits_shape and target.is_floating_point()
    if probs:
        if ignore_index is not None:
            raise RuntimeError("ignore_index cannot be specified when target contains "
                               "probabilities")
    elif tuple(target.shape) != logits_shape and target.dtype not in (ember.int64,
                                                                      ember.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_type_name(target.dtype)}")
    return probs, out_features


def _reference(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
               label_smoothing):
    """The composite path: logits by one linear map over the flattened class dims, then
    cross_entropy (class dim 1, or 0 for unbatched input)."""
    C = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    w2 = linear_weight.reshape(-1, linear_weight.shape[-1]) if out_features else linear_weight
    b = linear_bias.reshape(-1) if (linear_bias is not None and out_features) else linear_bias
    logits = linear(input, w2, b)
    if out_features:
        logits = logits.reshape((input.shape[0], C) + out_features)
    return cross_entropy(logits, target, weight=weight,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)


def _unsupported(input, linear_weight, target, linear_bias, weight, reduction, probs,
                 out_features, label_smoothing):
    """Why the chunked record cannot take these arguments (None if it can)."""
    if reduction == "none":
        return "reduction='none'"
    if out_features:
        return f"K-dimensional linear_weight (out_features={out_features})"
    if probs:
        return "class-probability targets"
    if label_smoothing != 0:
        return f"label_smoothing={label_smoothing}"
    if target.dtype not in (ember.int64, ember.uint8):
        return f"target dtype {target.dtype}"
    dt = input.dtype
    if not dt.is_floating_point or linear_weight.dtype != dt or \
            (linear_bias is not None and linear_bias.dtype != dt) or \
            (weight is not None and weight.dtype != dt):
        return "inputs of different or non-floating dtypes"
    if input.dim() == 2 and target.dim() != 1:
        return f"target of shape {tuple(target.shape)}"
    if input.dim() == 1 and target.dim() != 0:
        return f"target of shape {tuple(target.shape)}"
    return None


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...).

    input (in,) or (N, in); linear_weight (C, in) or (C, d_1..d_K, in) (batched input
    only); target class indices ((), (N,), (N, d_1..d_K)) or class probabilities shaped
    like the logits. ``ignore_index=None`` means -100 for index targets and must stay None
    for probability targets. ``options``: a LinearCrossEntropyOptions for the chunked path.
    """
    if options is not None and not isinstance(options, LinearCrossEntropyOptions):
        raise TypeError(f"linear_cross_entropy(): options must be a LinearCrossEntropyOptions "
                        f"or None, not {type(options).__name__}")
    probs, out_features = _check(input, linear_weight, target, linear_bias, weight, reduction,
                                 ignore_index, label_smoothing)
    if options is None:
        return _reference(input, linear_weight, target, linear_bias, weight, reduction,
                          ignore_index, label_smoothing)
    if label_smoothing != 0 or target.dtype != ember.int64 or out_features:
        # torch's own text (its chunked path's conditions; reduction is checked above)
        warnings.warn(f"linear_cross_entropy: ``options`` ignored; chunked path needs "
                      f"reduction in {{'mean','sum','none'}}, label_smoothing == 0, "
                      f"target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={float(label_smoothing)}, "
                      f"target.dtype={target.dtype}, out_features={out_features}, "
                      f"tracing=False, linear_bias.shape="
                      f"{None if linear_bias is None else linear_bias.shape}.",
                      UserWarning, stacklevel=2)
        return _reference(input, linear_weight, target, linear_bias, weight, reduction,
                          ignore_index, label_smoothing)
    if reduction == "none":
        # torch's chunked path accumulates in ``acc_dtype`` (float32 for half inputs when
        # None) and rounds each loss once
        dt = input.dtype
        acc = options.acc_dtype or (ember.float32 if dt in (ember.float16, ember.bfloat16)
                                    else dt)

        def up(t):
            return None if t is None or not t.is_floating_point() else t.to(acc)
        return _reference(up(input), up(linear_weight), target, up(linear_bias), up(weight),
                          reduction, ignore_index, label_smoothing).to(dt)
    why = _unsupported(input, linear_weight, target, linear_bias, weight, reduction, probs,
                       out_features, label_smoothing)
    if why is not None:
        warnings.warn(f"linear_cross_entropy: options are ignored, the chunked path does not "
                      f"support {why}; running the reference implementation instead",
                      UserWarning, stacklevel=2)
        return _reference(input, linear_weight, target, linear_bias, weight, reduction,
                          ignore_index, label_smoothing)
    x, t = input, target
    if input.dim() == 1:
        x, t = input.unsqueeze(0), target.reshape(1)
    elif x.shape[0] != t.shape[0]:
        raise ValueError(f"Expected input batch_size ({x.shape[0]}) to match target "
                         f"batch_size ({t.shape[0]}).")
    grad_on = ember.is_grad_enabled()
    loss, _ = ember._ops.nn_fused.linear_cross_entropy_chunked(
        x, linear_weight, t, linear_bias, weight, _REDUCTIONS[reduction],
        -100 if ignore_index is None else ignore_index, options.batch_chunk_size or 0,
        grad_on and input.requires_grad, grad_on and linear_weight.requires_grad,
        grad_on and linear_bias is not None and linear_bias.requires_grad, options.acc_dtype)
    return loss
