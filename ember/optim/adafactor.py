"""Adafactor: Adam-like steps whose second moment of a matrix is kept as a row and a column."""
import ember
from ember._tensor import Tensor
from .optimizer import Optimizer, _closure_loss, _num, _scalar

__all__ = ["Adafactor"]


def _at_least(name, value, bound, below=False):
    bad = value > bound if below else value < bound
    if bad:
        relation = "<=" if below else ">="
        raise ValueError(f"{name} should be {relation} {bound} but is: {value}")


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018) in torch's variant.

    At step ``t``: ``beta2 = 1 - t ** beta2_decay``; the relative step ``rho = min(lr,
    t ** -0.5)`` scaled by ``max(eps2, rms(p))`` (taken before the decoupled weight decay
    ``p *= 1 - lr * weight_decay``).  For a parameter with ≥ 2 dims, shape ``(..., n, m)``, the
    squared gradient is averaged along each of the last two dims into ``row_var (..., n, 1)``
    and ``col_var (..., 1, m)``, and the second moment is rebuilt as
    ``row_var * col_var / max(mean(row_var), eps1)``; a 0-/1-dim parameter keeps it whole in
    ``variance``.  The update ``g / max(sqrt(v), eps1)`` is shrunk so that its rms is at most
    ``d``.  ``eps1=None`` means the parameter dtype's machine epsilon.
    State: ``step`` and ``row_var``/``col_var`` or ``variance``.
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _at_least("Learning rate", lr, 0)
        _at_least("beta2_decay", beta2_decay, 0, below=True)
        if eps[0] is not None:
            _at_least("epsilon1", eps[0], 0)
        _at_least("epsilon2", eps[1], 0)
        _at_least("Clipping threshold d", d, 1)
        _at_least("weight_decay", weight_decay, 0)
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def step(self, closure=None):
        loss = _closure_loss(closure)
        for group in self.param_groups:
            for p, g, st in self._grads(group):
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                if g.is_sparse:
                    raise RuntimeError("Adafactor does not support sparse gradients")
                if not st:
                    st["step"] = _scalar()
                    if p.dim() > 1:
                        st["row_var"] = ember.zeros_like(p[..., :1])
                        st["col_var"] = ember.zeros_like(p[..., :1, :])
                    else:
                        st["variance"] = ember.zeros_like(p)
                self._update(p, g, st, group)
        return loss

    @staticmethod
    def _update(p, g, st, group):
        """One Adafactor step of ``p`` (shape (..., n, m) or at most 1-dim) in place."""
        lr, d, wd = _num(group["lr"]), group["d"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = ember.finfo(p.dtype).eps
        t = _num(st["step"].add_(1))
        keep = 1.0 - t ** group["beta2_decay"]        # beta2: 0 on the first step
        scale = max(eps2, _rms(p)) * min(lr, t ** -0.5)
        if wd != 0:
            p.mul_(1.0 - lr * wd)
        g2 = g * g
        if "variance" in st:
            v = st["variance"].lerp_(g2, 1.0 - keep)
        else:
            rows = st["row_var"].lerp_(g2.mean(-1, keepdim=True), 1.0 - keep)
            cols = st["col_var"].lerp_(g2.mean(-2, keepdim=True), 1.0 - keep)
            v = rows * cols / rows.mean(-2, keepdim=True).clamp(min=eps1)
        u = g / v.sqrt().clamp(min=eps1)
        u = u / max(1.0, _rms(u) / d)
        p.add_(u, alpha=-scale)


def _rms(t):
    """Root mean square of all elements of ``t``, as a Python float."""
    return (t.norm() / t.numel() ** 0.5).item()
