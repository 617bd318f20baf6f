"""Loss functions (torch.nn.functional). nll_loss and ctc_loss are records
(ember/_ops/nn_loss.py); cross_entropy is log_softmax + nll_loss; the others are
composites of ember ops."""
from __future__ import annotations

import math
import sys
import warnings

import numpy as np

import ember
from ember._ops.nn_fused import cross_entropy as _cross_entropy_op
from ember._ops.nn_loss import nll_loss_op, ctc_loss_op, bce_op as _bce_elems, mse_op as _mse_op
from ember._runtime_flags import user_stacklevel
from ember._state import state as _state
from ember.autograd.composite import record_as     # Note [named composites]
from ember.autograd.profiler import torch_op_range
from ember.amp.autocast_mode import fp32_under_autocast as _fp32_under_autocast

__all__ = ["l1_loss", "mse_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "huber_loss", "smooth_l1_loss",
           "soft_margin_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss",
           "multi_margin_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "margin_ranking_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "poisson_nll_loss", "gaussian_nll_loss", "ctc_loss"]

_RED_ENUM = {"none": 0, "mean": 1, "sum": 2}


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='{}' instead.".format(
                      "none" if not reduce else ("mean" if size_average else "sum")),
                  stacklevel=3)
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _enum(reduction):
    if reduction not in _RED_ENUM:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _RED_ENUM[reduction]


def _reduce(loss, reduction):
    r = _enum(reduction)
    if r == 0:
        return loss
    return loss.mean() if r == 1 else loss.sum()


def _check_same_size(input, target, fn=None):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({ember.Size(target.shape)}) that is different to "
                      f"the input size ({ember.Size(input.shape)}). This will likely lead to "
                      f"incorrect results due to broadcasting. Please ensure they have the "
                      f"same size.", stacklevel=user_stacklevel())


def _no_grad_arg(op, name, t):
    """torch has no derivative for this argument: it refuses one requiring grad."""
    if t is not None and getattr(t, "requires_grad", False) and ember.is_grad_enabled():
        raise RuntimeError(f"The function '{op}' is not differentiable with respect to "
                           f"argument '{name}'. This input cannot have requires_grad True.")


def _no_int(op, input, target, complex_ok=True):
    """torch's pointwise loss kernels have no integral (or bool) version (nor a complex one,
    ``complex_ok`` False: mse, smooth_l1, huber)."""
    if not complex_ok and (input.is_complex() or target.is_complex()):
        raise NotImplementedError(f'"{op}_cpu" not implemented for '
                                  f"'{_tname(ember.promote_types(input.dtype, target.dtype))}'")
    if not (input.is_floating_point() or target.is_floating_point()
            or input.is_complex() or target.is_complex()):
        raise NotImplementedError(f'"{op}_cpu" not implemented for '
                                  f"'{_tname(ember.promote_types(input.dtype, target.dtype))}'")


def _pointwise(input, target, fn, reduction, weight=None, weighted_mean=False):
    """``fn(input - target)``, optionally times ``weight`` (input's size); with
    ``weighted_mean`` the 'mean' is sum(w * loss) / sum(w)."""
    _check_same_size(input, target)
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    a, b = ember.broadcast_tensors(input, target)
    loss = fn(a - b)
    if weight is not None:
        loss = loss * weight
        if weighted_mean and _enum(reduction) == 1:
            return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


@_fp32_under_autocast
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _pointwise(input, target, lambda d: d.abs(), reduction, weight, True)


@torch_op_range("aten::mse_loss")
@_fp32_under_autocast
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _no_int("mse", input, target, complex_ok=False)

    if weight is None and not _state.modes:     # one record (its node MseLossBackward0)
        _check_same_size(input, target)
        return _mse_op(input, target, _enum(reduction))

    def mse(input, target):         # under modes (vmap, tracers, profiler): ember ops
        return _pointwise(input, target, lambda d: d * d, reduction, weight, True)
    if weight is not None:            # torch's weighted loss is a composite too
        return mse(input, target)
    return record_as("MseLossBackward0", mse, input, target)


@_fp32_under_autocast
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _no_int("huber", input, target, complex_ok=False)
    if not input.is_floating_point():
        raise RuntimeError(f"result type {_tname(target.dtype)} can't be cast to the desired "
                           f"output type {_tname(input.dtype)}")
    given = target.dtype
    if target.dtype != input.dtype:
        target = target.to(input.dtype)           # torch computes in the input's dtype

    def fn(d):
        a = d.abs()
        return ember.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))
    if weight is not None:            # torch's weighted loss is a composite too
        out = _pointwise(input, target, fn, reduction, weight)
    else:
        out = record_as("HuberLossBackward0",
                        lambda i, t: _pointwise(i, t, fn, reduction), input, target)
    if given != input.dtype and out.requires_grad:     # torch's backward refuses the target
        def refuse(grad):
            raise RuntimeError(f"Found dtype {_tname(given)} but expected {_tname(input.dtype)}")
        out.register_hook(refuse)
    return out


@_fp32_under_autocast
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _no_int("smooth_l1", input, target, complex_ok=False)
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)

    def fn(d):
        a = d.abs()
        return ember.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)
    return record_as("SmoothL1LossBackward0",
                     lambda i, t: _pointwise(i, t, fn, reduction), input, target)


# -------------------------------------------------------------------- nll / cross entropy

def _check_nll_shapes(input, target):
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() == 1:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target.dim() == 1 and target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
        return
    if input.shape[0] != (target.shape[0] if target.dim() else 0):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.dim() else 0}).")
    if input.dim() == 2 and target.dim() != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.dim() > 2 and tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"Expected target size {list((input.shape[0],) + tuple(input.shape[2:]))}, "
                           f"got {list(target.shape)}")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_nll_shapes(input, target)
    if target.dtype not in (ember.int64, ember.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_tname(target.dtype)}")
    if target.dtype == ember.uint8 and input.dim() > 2:
        raise RuntimeError("expected scalar type Long but found Byte")
    C = input.shape[1] if input.dim() > 1 else input.shape[0]
    if C == 0 and bool((target != ignore_index).any()):
        t = target[target != ignore_index].reshape((-1,))[0].item()
        raise IndexError(f"Target {t} is out of bounds.")
    if weight is not None:
        if weight.numel() != C or (input.dim() <= 2 and weight.dim() != 1):
            raise RuntimeError(f"weight tensor should be defined either for all {C} classes "
                               f"or no classes but got weight tensor of shape: "
                               f"{list(weight.shape)}")
        if weight.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {_tname(input.dtype)} but found "
                               f"{_tname(weight.dtype)}")
        _no_grad_arg("nll_loss_forward", "weight", weight)
        weight = weight.reshape((-1,))
    if input.dim() == 1 and target.dim() == 1:
        target = target.reshape(())                # one sample: a 0-d result like torch
    out = nll_loss_op(input, target, weight, _enum(reduction), ignore_index)
    if input.dim() > 2 and out._grad_fn is not None:
        _nll_loss2d_nodes(out, input.dim())
    return out


def _nll_loss2d_nodes(out, ndim):
    """torch's nodes of nll_loss over (N, C, d1, ...): its 2-D kernel's NllLoss2DBackward0,
    with views to and from (N, C, H, W) unless the input is 4-D."""
    from ember.autograd.graph import _next_seq, rename_node
    from ember.autograd.linear_layout import _pass, _relay
    node = out._grad_fn
    rename_node(node, "NllLoss2DBackward0")
    if ndim == 4:
        return
    edge = node.next_functions[0]
    if edge[0] is not None:
        node.next_functions = (_relay("ViewBackward0", (edge,), _pass, node._seq),) + \
            node.next_functions[1:]
    if out.dim():                                  # reduction='none': viewed back
        out._grad_fn = _relay("ViewBackward0", ((node, out._output_nr),), _pass,
                              _next_seq())[0]
        out._output_nr = 0


def _log_softmax_node(out):
    """The fused cross_entropy record reads the logits: torch's graph shows its
    LogSoftmaxBackward0 between NllLossBackward0 and them."""
    from ember.autograd.linear_layout import _pass, _relay
    node = out._grad_fn
    edge = node.next_functions[0]
    if edge[0] is not None:
        node.next_functions = (_relay("LogSoftmaxBackward0", (edge,), _pass, node._seq),) + \
            node.next_functions[1:]


def _tname(dt):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "bool": "Bool", "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
            "uint8": "Byte", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
            "complex32": "ComplexHalf"}.get(str(dt).split(".")[-1], str(dt))


def _fused_ce_ok(input, target):
    """May cross_entropy take the fused record: plain tensors, float (N, C) logits with
    N, C > 0 and int64 class indices (anything else keeps the composite and its errors;
    the record checks the targets' range itself, with nll_loss's error)?"""
    if type(input) is not ember.Tensor or type(target) is not ember.Tensor:
        return False
    if input.dim() != 2 or target.dim() != 1 or target.dtype != ember.int64 or \
            input.dtype not in (ember.float32, ember.float64):
        return False
    N, C = input.shape
    return N and C and target.shape[0] == N


@torch_op_range("aten::cross_entropy_loss")
@_fp32_under_autocast
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    if weight is None and label_smoothing == 0 and _fused_ce_ok(input, target):
        # logits (N, C) against class indices: one fused record, no log_softmax buffer
        out = _cross_entropy_op(input, target, _enum(reduction), ignore_index)[0]
        if out._grad_fn is not None:
            _log_softmax_node(out)
        return out
    if input.dim() == 0:
        if target.dim() == 0 and not target.is_floating_point():
            raise RuntimeError(f"Expected floating point type for target with class "
                               f"probabilities, got {_tname(target.dtype)}")
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    class_dim = 0 if input.dim() == 1 else 1
    C = input.shape[class_dim]
    logp = input.log_softmax(class_dim)
    wshape = [1] * input.dim()
    wshape[class_dim] = C
    if tuple(input.shape) == tuple(target.shape):             # class probabilities
        if not target.is_floating_point():
            raise RuntimeError(f"Expected floating point type for target with class "
                               f"probabilities, got {_tname(target.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / C
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        r = _enum(reduction)
        if r == 0:
            return -prod.sum(class_dim)
        if r == 2:
            return -prod.sum()
        n = input.numel() // C if C else 0         # torch divides by a Scalar: DivBackward1
        return record_as("DivBackward1", lambda total: total / n, -prod.sum())
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    ignore = target == ignore_index
    if weight is not None:
        smooth = -(logp * weight.reshape(wshape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth.masked_fill(ignore, 0.0)
    r = _enum(reduction)
    if r == 1:
        if weight is not None:
            tw = weight.gather(0, target.masked_fill(ignore, 0).flatten()).masked_fill(
                ignore.flatten(), 0.0)
            ret = smooth.sum() / tw.sum()
        else:
            ret = smooth.sum() / (~ignore).sum()
    elif r == 2:
        ret = smooth.sum()
    else:
        ret = smooth
    # torch scales both terms through mul's Scalar overload: MulBackward1 nodes
    return record_as("MulBackward1", lambda loss: loss * (1 - label_smoothing), nll) + \
        record_as("MulBackward1", lambda loss: loss * (label_smoothing / C), ret)


# -------------------------------------------------------------------- binary

def _infer_size(a, b):
    """torch's ``_infer_size(a, b)`` check of two shapes (its text: the length of ``b`` at a
    negative dim, ``b`` as a ``torch.Size`` and ``a`` as a list)."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for k in reversed(range(n)):
        if pa[k] != pb[k] and pa[k] != 1 and pb[k] != 1:
            raise RuntimeError(f"Attempting to broadcast a dimension of length {pb[k]} at "
                               f"{k - n}! Mismatching argument at index 1 had "
                               f"{ember.Size(b)}; but expected shape should be broadcastable "
                               f"to {list(a)}")


def _outside_unit_interval(t):
    """Whether an element of ``t`` lies outside [0, 1], read from its NumPy data (under vmap's
    wrappers too) without dispatching: a tracer sees no data-dependent branch and vmap checks
    every batch entry, as torch's kernel does. Meta tensors hold no values."""
    vmap = sys.modules.get("ember.func._vmap")
    if vmap is not None:
        t = vmap.bottom(t)
    if t.device.type == "meta":
        return False
    a = np.asarray(t._data)
    with np.errstate(invalid="ignore"):
        return not bool(((a >= 0) & (a <= 1)).all())      # NaN too, as torch's check


@_fp32_under_autocast
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({ember.Size(target.shape)}) that is different "
                         f"to the input size ({ember.Size(input.shape)}) is deprecated. Please "
                         f"ensure they have the same size.")
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {_tname(target.dtype)} but expected "
                           f"{_tname(input.dtype)}")
    _no_grad_arg("binary_cross_entropy", "weight", weight)
    if weight is not None:
        _infer_size(target.shape, weight.shape)
    if input.numel() and _outside_unit_interval(input):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if target.numel() and _outside_unit_interval(target):
        raise RuntimeError("all elements of target should be between 0 and 1")
    if weight is not None:
        if weight.dim() > input.dim():
            raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the "
                               f"broadcast shape {list(ember.broadcast_shapes(input.shape, weight.shape))}")
        weight = weight.expand(input.shape)
        if weight.dtype != input.dtype:
            weight = weight.to(input.dtype)       # torch's result keeps the input's dtype

    def bce(input, target):
        loss = _bce_elems(input, target)
        return _reduce(loss if weight is None else loss * weight, reduction)
    return record_as("BinaryCrossEntropyBackward0", bce, input, target)


@_fp32_under_autocast
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({ember.Size(target.shape)}) must be the same as input "
                         f"size ({ember.Size(input.shape)})")
    if not input.is_floating_point():
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for '
                                  f"'{_tname(input.dtype)}'")
    if not target.is_floating_point():
        raise RuntimeError(f"result type {_tname(input.dtype)} can't be cast to the desired "
                           f"output type {_tname(target.dtype)}")
    _no_grad_arg("binary_cross_entropy_with_logits", "weight", weight)
    _no_grad_arg("binary_cross_entropy_with_logits", "pos_weight", pos_weight)

    def bce_logits(input, target):
        sp = _softplus_neg(input)
        if pos_weight is not None:
            lw = (pos_weight - 1) * target + 1
            loss = (1 - target) * input + lw * sp
        else:
            loss = (1 - target) * input + sp
        if weight is not None:
            loss = loss * weight
        if loss.dtype != target.dtype:                # torch's loss takes the target's dtype
            loss = loss.to(target.dtype)
        return _reduce(loss, reduction)
    return record_as("BinaryCrossEntropyWithLogitsBackward0", bce_logits, input, target)


@_fp32_under_autocast
def kl_div(input, target, size_average=None, reduce=None, reduction="mean",
           log_target=False):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not (input.is_floating_point() or input.is_complex()) or \
            not (target.is_floating_point() or target.is_complex()):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if reduction == "mean":                       # stacklevel 3: past the autocast wrapper
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                      "the support size.'batchmean' divides only by the batch size, and aligns "
                      "with the KL div math definition.'mean' will be changed to behave the "
                      "same as 'batchmean' in the next major release.", stacklevel=3)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = ember.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


@_fp32_under_autocast
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _no_grad_arg("soft_margin_loss", "target", target)
    if not input.is_floating_point():
        raise RuntimeError(f"soft_margin_loss: expected a floating point input, got "
                           f"{_tname(input.dtype)}")
    if target.is_floating_point() and target.dtype != input.dtype:
        target = target.to(input.dtype)           # torch's result has the input's dtype

    def soft_margin(input):
        z = -target * input
        return _reduce(_softplus_neg(-z), reduction)
    return record_as("SoftMarginLossBackward0", soft_margin, input)


def _softplus_neg(x):
    """softplus(-x) = -logsigmoid(x) = max(-x, 0) + log1p(exp(-|x|)), one stable branch per
    sign so that its gradient at 0 is -1/2 (clamp and abs each pass a one-sided gradient
    there: the sum gave -1, and binary_cross_entropy_with_logits at zero logits, where a
    logistic regression starts, a gradient twice or zero times torch's)."""
    neg, zero = x < 0, x.new_zeros(())
    xn, xp = ember.where(neg, x, zero), ember.where(neg, zero, x)
    return ember.where(neg, xn.exp().log1p() - xn, (-xp).exp().log1p())


def _logsigmoid(x):
    if x.dtype in (ember.float16, ember.bfloat16):     # float32 math, one rounding (torch)
        return _logsigmoid(x.float()).to(x.dtype)
    return -_softplus_neg(x)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    loss = -(target * _logsigmoid(input) + (1 - target) * _logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    C = input.shape[-1] if input.dim() else 1
    loss = loss.sum(dim=input.dim() - 1) / C if input.dim() else loss
    return _reduce(loss, reduction)


@_fp32_under_autocast
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0) or \
            (input.dim() == 1 and input.shape[0] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if target.dtype != ember.int64:
        raise RuntimeError(f"expected scalar type Long but found {_tname(target.dtype)}")
    squeeze = input.dim() <= 1
    x = input.reshape((1, -1)) if squeeze else input
    if squeeze and target.dim() > 1:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    t = target.reshape((1, -1)) if squeeze else target
    if tuple(t.shape) != tuple(x.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    C = x.shape[1]
    tn = t.detach().numpy()
    import numpy as np
    if ((tn < -1) | (tn >= C)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    stop = np.cumsum(tn < 0, axis=1) > 0                    # entries after the first -1
    valid = ~stop
    tsafe = np.where(valid, tn, 0)
    is_target = np.zeros(tn.shape, dtype=bool)
    rows = np.nonzero(valid)[0]
    is_target[rows, tsafe[valid]] = True
    def multilabel_margin(input):
        x = input.reshape((1, -1)) if squeeze else input
        xj = x.gather(1, ember.from_numpy(tsafe.astype(np.int64)))    # (N, C) target scores
        pair = (1 - xj.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)     # (N, j, i)
        mask = ember.from_numpy(valid[:, :, None] & ~is_target[:, None, :]).to(x.dtype)
        loss = (pair * mask).sum((1, 2)) / C
        if squeeze:
            loss = loss.reshape(()) if input.dim() == 0 or input.dim() == 1 else loss
        return _reduce(loss, reduction)
    return record_as("MultilabelMarginLossBackward0", multilabel_margin, input)


@_fp32_under_autocast
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if input.dim() > 2:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if target.dtype != ember.int64:
        raise RuntimeError(f"expected scalar type Long but found {_tname(target.dtype)}")
    squeeze = input.dim() <= 1
    x = input.reshape((1, -1)) if squeeze else input
    if target.dim() > 1 or target.numel() != x.shape[0]:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal "
                           f"to the number of input samples (batch size). Expected target "
                           f"size [{x.shape[0]}], but got {list(target.shape)}. ")
    if weight is not None:
        if weight.dtype != input.dtype:
            raise RuntimeError(f"expected scalar type {_tname(input.dtype)} but found "
                               f"{_tname(weight.dtype)}")
        _no_grad_arg("multi_margin_loss", "weight", weight)
    t = target.reshape((-1,))
    C = x.shape[1]
    if bool(((t < 0) | (t >= C)).any()):
        raise RuntimeError("target out of range")
    def multi_margin(input):
        x = input.reshape((1, -1)) if squeeze else input
        xy = x.gather(1, t.unsqueeze(1))
        h = (margin - xy + x).clamp_min(0)
        if p == 2:
            h = h * h
        if weight is not None:
            h = h * weight.gather(0, t).unsqueeze(1)
        h = ember.where(ember.arange(C) != t.unsqueeze(1), h, h.new_zeros(()))
        loss = h.sum(1) / C
        return _reduce(loss.reshape(target.shape), reduction)  # 'none': the target's shape
    return record_as("MultiMarginLossBackward0", multi_margin, input)


@_fp32_under_autocast
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zero = input.new_zeros(())
    margin_clamp = (margin - input).clamp_min(0)
    out_margin = ember.where(target != 1, margin_clamp, zero)
    out_self = ember.where(target != -1, input, zero)
    return _reduce(out_margin + out_self, reduction)


@_fp32_under_autocast
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None,
                          reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    td = target.dim()
    if td > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.dim() != td + 1 or input2.dim() != td + 1:
        raise RuntimeError(f"{td}D target tensor expects {td + 1}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    # (torch 2.13 has no same-size check: unequal inputs broadcast, or fail in the product)
    d = 1 if input1.dim() == 2 else 0
    EPS = 1e-12
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + EPS
    m2 = (input2 * input2).sum(d) + EPS
    cos = prod / (m1 * m2).sqrt()
    zero = cos.new_zeros(())
    out = ember.where(target == 1, 1 - cos, zero) + \
        ember.where(target == -1, (cos - margin).clamp_min(0), zero)
    return _reduce(out, reduction)


def _floored_keeping_grad(t, floor):
    """``t`` clamped below at ``floor`` whose gradient is that of ``t`` itself (the clamp
    happens in place, outside autograd)."""
    out = t.clone()
    with ember.no_grad():
        out.clamp_(min=floor)
    return out


@_fp32_under_autocast
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if len({input1.dim(), input2.dim(), target.dim()}) > 1:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same "
                           f"dimension but got sizes: input1: {ember.Size(input1.shape)}, "
                           f"input2: {ember.Size(input2.shape)}, target: "
                           f"{ember.Size(target.shape)} ")
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(loss, reduction)


def _pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = x1 - x2 + eps
    dim = max(x1.dim(), x2.dim()) - 1
    return d.norm(p, dim, keepdim=keepdim)


def _check_triplet_dims(anchor, positive, negative):
    a, pd, nd = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pd == nd):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a}D, positive "
                           f"{pd}D, and negative {nd}D inputs")


@_fp32_under_autocast
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    d_ap = _pairwise_distance(anchor, positive, p, eps)
    d_an = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_pn = _pairwise_distance(positive, negative, p, eps)
        d_an = ember.minimum(d_an, d_pn)
    return _reduce((margin + d_ap - d_an).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    _enum(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    dist = distance_function if distance_function is not None else _pairwise_distance
    d_ap = dist(anchor, positive)
    d_an = dist(anchor, negative)
    if swap:
        d_an = ember.minimum(d_an, dist(positive, negative))
    return _reduce((margin + d_ap - d_an).clamp_min(0), reduction)


@_fp32_under_autocast
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _enum(reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        t = target
        safe = ember.where(t > 1, t, ember.ones_like(t))
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + ember.where(t > 1, stirling, ember.zeros_like(stirling))
    return _reduce(loss, reduction)


def _one_dim_broadcast(var_shape, shape):
    """``var`` differs from ``input`` in one dim only, where it has size 1 (torch's
    homoscedastic case: (1, 3) or (4, 1) for an input of (4, 3))."""
    if len(var_shape) != len(shape):
        return False
    diff = [v for v, n in zip(var_shape, shape) if v != n]
    return len(diff) == 1 and diff[0] == 1


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if not isinstance(var, ember.Tensor):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = ember.full(input.shape, float(var), dtype=input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not _one_dim_broadcast(tuple(var.shape), tuple(input.shape)):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # (looked at under vmap's wrappers: jacfwd / func.hessian batch the tangents, not var)
    from ember.func._vmap import bottom
    if bool((bottom(var).detach() < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = _floored_keeping_grad(var, eps)
    loss = ((input - target) ** 2 / var + var.log()) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


_CTC_WHERE = " (while checking arguments for ctc_loss_allocate_outputs)"


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    # torch's checks in its order: the lengths integral, the dtype, an empty input, the
    # dimensions (a log_probs not 3-d is read as unbatched, one more dimension), blank, the
    # lengths' sizes, target lengths not negative, the targets' shape, input lengths in range
    def _lens(v, name):
        if isinstance(v, ember.Tensor):
            if v.is_floating_point() or v.is_complex():
                raise RuntimeError(f"{name} must be integral")
            v = v.reshape((-1,)).tolist()
        return [int(a) for a in v]
    il, tl = _lens(input_lengths, "input_lengths"), _lens(target_lengths, "target_lengths")
    if log_probs.dtype not in (ember.float32, ember.float64):
        raise NotImplementedError(f'"ctc_loss_cpu" not implemented for '
                                  f"'{_tname(log_probs.dtype)}'")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.dim() + 1}-"
                           f"dimensional tensor for argument #1 'log_probs'" + _CTC_WHERE)
    if targets.dim() not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional "
                           f"tensor for argument #2 'targets'" + _CTC_WHERE)
    T = log_probs.shape[0]
    N = log_probs.shape[1] if log_probs.dim() == 3 else 1
    C = log_probs.shape[-1]
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if len(il) != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tl) != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tl:
        if v < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got "
                               f"value {v}" + _CTC_WHERE)
    if targets.dim() == 2:
        if targets.shape[0] != N:
            raise RuntimeError(f"Expected tensor to have size {N} at dimension 0, but got "
                               f"size {targets.shape[0]} for argument #2 'targets'" + _CTC_WHERE)
        if targets.shape[1] < max(tl, default=0):
            raise RuntimeError(f"Expected tensor to have size at least {max(tl)} at dimension "
                               f"1, but got size {targets.shape[1]} for argument #2 'targets'"
                               + _CTC_WHERE)
    elif targets.numel() != sum(tl):
        raise RuntimeError(f"Expected tensor to have size {sum(tl)} at dimension 0, but got "
                           f"size {targets.numel()} for argument #2 'targets'" + _CTC_WHERE)
    for v in il:
        if v < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got "
                               f"value {v}" + _CTC_WHERE)
        if v > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got "
                               f"value {v}" + _CTC_WHERE)
    loss = ctc_loss_op(log_probs, targets, il, tl, blank, zero_infinity)
    r = _enum(reduction)
    if r == 1:
        tlt = ember.tensor(tl, dtype=loss.dtype).clamp_min(1)
        if loss.dim() == 0:
            return loss / tlt.reshape(())
        return (loss / tlt).mean()
    if r == 2:
        return loss.sum()
    return loss
