"""``Distribution``: the abstract base of every probability distribution.

Shapes: ``batch_shape`` indexes independent distributions, ``event_shape`` is the shape of
one draw, and ``sample(sample_shape)`` has shape ``sample_shape + batch_shape + event_shape``.
With validation on (the default outside ``python -O``), the constructor checks every
parameter against ``arg_constraints`` and ``log_prob`` checks its argument against
``support``.
"""
from __future__ import annotations

import warnings

import ember
from . import constraints
from .utils import broadcast_all, lazy_property

__all__ = ["Distribution"]


def _broadcastable(a, b):
    return all(x == y or 1 in (x, y) for x, y in zip(reversed(a), reversed(b)))


def _is_lazy(cls, name):
    """Is ``name`` a ``lazy_property`` of ``cls``?"""
    return any(isinstance(vars(k).get(name), lazy_property) for k in cls.__mro__)


class Distribution:
    """Base class; a family defines ``arg_constraints``, ``support``, its batched parameters
    (``_batched``, which ``expand`` needs) and what it can compute (``rsample`` or ``sample``,
    ``log_prob``, moments, ``entropy``, ``cdf``...)."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument and sample validation on or off for distributions made afterwards."""
        if value not in (False, True):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=ember.Size(), event_shape=ember.Size(), validate_args=None):
        self._batch_shape = ember.Size(batch_shape)
        self._event_shape = ember.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()
        super().__init__()

    def _check_parameters(self):
        try:
            checks = self.arg_constraints
        except NotImplementedError:
            checks = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                          "`arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.")
        for name, constraint in checks.items():
            if constraints.is_dependent(constraint) or self._not_computed_yet(name):
                continue
            value = getattr(self, name)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {name} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                    f"constraint {constraint!r}, but found invalid values:\n{value}")

    def _not_computed_yet(self, name):
        """A lazily derived parameter (e.g. ``probs`` of a distribution given ``logits``) is
        checked through the parameter it derives from."""
        return name not in self.__dict__ and isinstance(getattr(type(self), name, None),
                                                        lazy_property)

    # -- shapes -------------------------------------------------------------------------------
    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=ember.Size()):
        """``sample_shape + batch_shape + event_shape``."""
        return ember.Size(tuple(sample_shape) + self._batch_shape + self._event_shape)

    # -- parameters and expand ----------------------------------------------------------------
    # ``_batched`` names the attributes holding batched parameters: tensors of shape
    # ``batch_shape + rest``, the rest (event or other trailing dims) untouched by ``expand``.
    # Nested distributions need no declaration: ``expand`` finds them by type.
    _batched = ()
    _expand_owner = None      # the ember family whose constructor ``expand`` stands in for

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith(__package__ + ".") and "__init__" in vars(cls):
            cls._expand_owner = cls

    def _set_params(self, *values):
        """Store ``values`` (numbers or tensors, broadcast together) under the names in
        ``_batched``, in order, and return them."""
        tensors = broadcast_all(*values)
        self.__dict__.update(zip(self._batched, tensors))
        return tensors

    def _init_params(self, *values, event_dim=0, validate_args=None):
        """``_set_params``, then initialise (and validate) with their shape, whose rightmost
        ``event_dim`` dims form the event."""
        tensors = self._set_params(*values)
        shape = tensors[0].shape
        cut = len(shape) - event_dim
        Distribution.__init__(self, shape[:cut], shape[cut:], validate_args=validate_args)
        return tensors

    def _checked(self, value):
        """``value``, after checking it lies in the support when validation is on."""
        if self._validate_args:
            self._validate_sample(value)
        return value

    def expand(self, batch_shape, _instance=None):
        """A distribution with its batch dims expanded to ``batch_shape``: the ``_batched``
        parameters become expanded views and nested distributions are expanded alike (their
        own dims right of ours kept); values a ``lazy_property`` cached are dropped (recomputed
        on demand) and everything else is shared."""
        if self._expand_owner is None:
            raise NotImplementedError
        new = self._get_checked_instance(self._expand_owner, _instance)
        batch_shape = ember.Size(batch_shape)
        kept = len(self._batch_shape)
        for name, value in vars(self).items():
            if name in self._batched:
                value = value.expand(batch_shape + value.shape[kept:])
            elif _is_lazy(type(self), name):
                continue
            elif isinstance(value, Distribution):
                value = value.expand(batch_shape + value.batch_shape[kept:])
            new.__dict__[name] = value
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        """The object ``cls.expand`` fills in: ``_instance`` when given, else a bare instance
        of ``type(self)``; a subclass with its own ``__init__`` must define its own expand."""
        if _instance is not None:
            return _instance
        if type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self))

    # -- what a family defines ----------------------------------------------------------------
    @property
    def arg_constraints(self):
        """Parameter name -> the constraint it must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint every sample satisfies."""
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def rsample(self, sample_shape=ember.Size()):
        """Reparameterised draws, differentiable w.r.t. the parameters."""
        raise NotImplementedError

    def sample(self, sample_shape=ember.Size()):
        """Draws of shape ``sample_shape + batch_shape + event_shape``, outside autograd."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value):
        """Log density (or mass) at ``value``."""
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    # -- validation -----------------------------------------------------------------------------
    def _validate_sample(self, value):
        """Raise ValueError unless ``value`` is a tensor that broadcasts with
        ``batch_shape + event_shape`` and lies in the support."""
        if not ember.is_tensor(value):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape, n_event = value.size(), len(self._event_shape)
        if shape[len(shape) - n_event:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{shape} vs {self._event_shape}.")
        expected = self._batch_shape + self._event_shape
        if not _broadcastable(shape, expected):
            raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                             f"{shape} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.")
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, but found "
                f"invalid values:\n{value}")

    def __repr__(self):
        def show(value):          # a one-element tensor shows its value, others their size
            return value if value.numel() == 1 else value.size()

        given = [name for name in self.arg_constraints if name in self.__dict__]
        inner = ", ".join(f"{name}: {show(self.__dict__[name])}" for name in given)
        return f"{self.__class__.__name__}({inner})"
