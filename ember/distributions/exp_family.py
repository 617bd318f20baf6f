"""``ExponentialFamily``: distributions with density ``h(x) exp(<theta, t(x)> - F(theta))``."""
from __future__ import annotations

import ember
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base of the exponential families. A family may give its natural parameters ``theta``
    (``_natural_params``), the log normaliser ``F`` (``_log_normalizer(*theta)``) and
    ``E[log h(x)]`` (``_mean_carrier_measure``); ``entropy`` then follows from them."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """``H = F(theta) - <theta, E[t(x)]> - E[log h(x)]``, with ``E[t(x)] = grad F(theta)``
        (the result does not carry gradients back to the parameters)."""
        thetas = [theta.detach().requires_grad_() for theta in self._natural_params]
        log_norm = self._log_normalizer(*thetas)
        mean_stats = ember.autograd.grad(log_norm.sum(), thetas, create_graph=True)
        entropy = log_norm - self._mean_carrier_measure
        for theta, stat in zip(thetas, mean_stats):
            inner = (theta * stat).reshape(self._batch_shape + (-1,)).sum(-1)
            entropy = entropy - inner
        return entropy
