"""Loss records (nll_loss, ctc_loss, mse_loss, binary cross-entropy's elements) and torch's
top-level loss fronts (``torch.binary_cross_entropy_with_logits``, ``torch.kl_div``,
``torch.ctc_loss`` ...). The losses themselves live in ember/nn/functional/_loss.py."""
from __future__ import annotations

import numpy as np

from ember._kernels import nn_norm as K
from ember._kernels.util import half_in_float32
from ember._ops.registry import OpDef, public
from ember.autograd.input_link import link_input

nll_loss_op = OpDef(
    "nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
    "SymInt ignore_index=-100) -> Tensor",
    K.nll_loss, promote=None, autocast="fp32", saves=("target", "weight"),
    grad_name="NllLossBackward0")

nll_loss_backward_op = OpDef(
    "_nll_loss_backward(Tensor grad, Tensor target, Tensor? weight, int[] shape, "
    "int reduction, SymInt ignore_index) -> Tensor",
    K.nll_loss_backward, promote=None, saves=("target", "weight"))


@nll_loss_op.def_backward
def _(ctx, g, self, target, weight, reduction, ignore_index):
    if not ctx.needs_input_grad[0]:
        return None, None, None, None, None
    gi = nll_loss_backward_op(g, target, weight, list(ctx.shapes[0]), reduction, ignore_index)
    return link_input(gi, ctx, 0), None, None, None, None


@nll_loss_backward_op.def_backward
def _(ctx, u, grad, target, weight, shape, reduction, ignore_index):
    # the backward is linear in ``grad``: its VJP is nll_loss itself
    return nll_loss_op(u, target, weight, reduction, ignore_index), None, None, None, None, None


ctc_loss_op = OpDef(
    "_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, "
    "int blank=0, bool zero_infinity=False) -> Tensor",
    K.ctc_loss, promote=None, autocast="fp32", saves=("log_probs", "targets"),
    grad_name="CtcLossBackward0")

ctc_loss_backward_op = OpDef(
    "_ctc_loss_backward(Tensor grad, Tensor log_probs, Tensor targets, int[] input_lengths, "
    "int[] target_lengths, int blank, bool zero_infinity) -> Tensor",
    K.ctc_loss_backward, promote=None, differentiable=False)


@ctc_loss_op.def_backward
def _(ctx, g, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    return (ctc_loss_backward_op(g, log_probs, targets, input_lengths, target_lengths, blank,
                                 zero_infinity), None, None, None, None, None)


bce_op = OpDef(
    "_binary_cross_entropy_elems(Tensor self, Tensor target) -> Tensor",
    half_in_float32(K.binary_cross_entropy), saves=("self", "target"))


@bce_op.def_backward
def _(ctx, g, self, target):
    # torch's formulas: (x - t) / max(x (1 - x), 1e-12) keeps the gradient finite where the
    # clamped logs are flat (x at 0 or 1); the target's is log(1 - x) - log(x), unclamped
    n = ctx.needs_input_grad
    gx = g * (self - target) / (self * (1 - self)).clamp_min(1e-12) if n[0] else None
    gt = g * ((1 - self).log() - self.log()) if n[1] else None
    return gx, gt


mse_op = OpDef("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
               half_in_float32(K.mse_loss), autocast="fp32", saves=("self", "target"),
               grad_name="MseLossBackward0")


@mse_op.def_backward
def _(ctx, g, self, target, reduction):
    # torch's rule: 2 (x - t) g, divided by the element count for 'mean'
    d = self - target
    n = d.numel()
    scale = 2.0 if reduction != 1 else 2.0 / n if n else float("nan")
    gx = d * scale * g
    need = ctx.needs_input_grad
    return gx if need[0] else None, -gx if need[1] else None, None


# -------------------------------------------------------------------- torch.* fronts

def _F():
    from ember.nn import functional
    return functional


_RED = {0: "none", 1: "mean", 2: "sum"}


@public("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction=0):
    return _F().binary_cross_entropy_with_logits(input, target, weight,
                                                 reduction=_RED[reduction],
                                                 pos_weight=pos_weight)


@public("kl_div")
def kl_div(input, target, reduction=0, *, log_target=False):
    import warnings
    with warnings.catch_warnings():          # the native op does not warn about 'mean'
        warnings.simplefilter("ignore")
        return _F().kl_div(input, target, reduction=_RED[reduction], log_target=log_target)


@public("hinge_embedding_loss")
def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return _F().hinge_embedding_loss(input, target, margin, reduction=_RED[reduction])


@public("margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return _F().margin_ranking_loss(input1, input2, target, margin, reduction=_RED[reduction])


@public("cosine_embedding_loss")
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return _F().cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_RED[reduction])


@public("poisson_nll_loss")
def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_RED[reduction])


@public("triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
                        reduction=0):
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_RED[reduction])


@public("ctc_loss")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _RED[reduction], zero_infinity)
