import ember
import ember.nn.functional as F

__all__ = ["sigmoid_focal_loss"]

_REDUCTIONS = {"none": lambda loss: loss, "mean": ember.mean, "sum": ember.sum}


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2, reduction="none"):
    """Focal loss of RetinaNet (Lin et al. 2017, https://arxiv.org/abs/1708.02002): binary
    cross-entropy on logits, scaled by ``(1 - p_t) ** gamma`` (``p_t`` the probability given
    to the true label) and, when ``alpha >= 0``, weighted ``alpha`` for positives and
    ``1 - alpha`` for negatives."""
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction modes: 'none', 'mean', 'sum'")
    prob = ember.sigmoid(inputs)
    prob_true = prob * targets + (1 - prob) * (1 - targets)
    loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none") * (1 - prob_true) ** gamma
    if alpha >= 0:
        loss = loss * (alpha * targets + (1 - alpha) * (1 - targets))
    return _REDUCTIONS[reduction](loss)
