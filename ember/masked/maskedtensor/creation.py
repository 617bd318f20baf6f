"""``masked_tensor`` and ``as_masked_tensor``: MaskedTensor factories (torch.masked)."""
import ember
from ember.masked.maskedtensor.core import MaskedTensor, _check, _from_values, _prototype_warning

__all__ = ["masked_tensor", "as_masked_tensor"]


def masked_tensor(data, mask, requires_grad=False):
    """A MaskedTensor holding copies of ``data`` (detached: a new leaf) and ``mask``."""
    if isinstance(data, ember.Tensor):
        data = data.detach().clone()
    if isinstance(mask, ember.Tensor):
        mask = mask.clone()
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data, mask):
    """A MaskedTensor of ``data`` that keeps its autograd history (gradients reach the
    tensors ``data`` was computed from)."""
    _check(data, mask)
    _prototype_warning(2)               # (named at this line, once a process, as torch's)
    return _from_values(data.clone(), mask.clone())
