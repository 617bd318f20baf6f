"""Shared pieces of the single-tensor optimizers."""
import ember
from .optimizer import _get_scalar_dtype


def _step_zero():
    return ember.tensor(0.0, dtype=_get_scalar_dtype())


def _closure_loss(closure):
    if closure is None:
        return None
    with ember.enable_grad():
        return closure()


def _neg_if(grad, maximize):
    return -grad if maximize else grad
