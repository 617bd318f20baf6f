"""Pruning (torch.nn.utils.prune). Pruning ``module.<name>`` moves the parameter to
``<name>_orig``, adds a buffer ``<name>_mask`` and a forward pre-hook (the method object)
that recomputes ``module.<name> = <name>_orig * <name>_mask``. Pruning the same tensor again
combines the methods in a ``PruningContainer`` whose new mask only touches entries (or
channels) the previous masks kept."""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import ember
from ember.nn.utils.convert_parameters import parameters_to_vector


class BasePruningMethod(ABC):
    """A pruning method: ``compute_mask(t, default_mask)`` returns the new mask."""

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for ``t`` given the mask from earlier prunings."""

    def apply_mask(self, module):
        """``<name>_orig * <name>_mask`` (the mask cast to the parameter's dtype)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        orig = getattr(module, self._tensor_name + "_orig")
        return getattr(module, self._tensor_name + "_mask").to(dtype=orig.dtype) * orig

    @classmethod
    def _combined_with_existing(cls, module, name, *args, **kwargs):
        """A new method instance, merged into a container with any existing hook on
        ``name`` (which is taken off the module)."""
        hooks = module._forward_pre_hooks
        found = [k for k, h in hooks.items()
                 if isinstance(h, BasePruningMethod) and h._tensor_name == name]
        if len(found) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} "
                                 f"of module {module}. Use a PruningContainer.")
        old = hooks[found[0]] if found else None
        for k in found:
            del hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old is None:
            return method
        if not isinstance(old, PruningContainer):
            old = PruningContainer(old)
        old.add_pruning_method(method)
        return old

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` in place (see the module docstring); returns the hook."""
        method = cls._combined_with_existing(module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif importance_scores.shape != orig.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter "
                                 f"{name} of {module}, got {importance_scores.shape} vs "
                                 f"{orig.shape}")
        first_time = not isinstance(method, PruningContainer)
        if first_time:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ember.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            module.register_buffer(name + "_mask",
                                   method.compute_mask(importance_scores, default_mask=default_mask))
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first_time:               # put the parameter back
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times its mask (no module involved)."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                 f"{importance_scores.shape} vs {t.shape}")
        if default_mask is None:
            default_mask = ember.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: ``<name>`` becomes a parameter holding the masked
        values; ``<name>_orig`` and ``<name>_mask`` go away."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 "removed")
        name = self._tensor_name
        weight = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters.pop(name + "_orig")
        orig.data = weight.data
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


class PruningContainer(BasePruningMethod):
    """Successive pruning methods on one tensor; only the newest computes a mask, over what
    the earlier masks kept."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """Run the newest method on the part of ``t`` still unpruned: the kept entries
        (unstructured), the kept channels along ``dim`` (structured) or everything (global)."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            region = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have '
                                     "the attribute `dim` defined.")
            ndim = t.dim()
            dim = method.dim + ndim if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {ndim}")
            kept = default_mask.sum(dim=[d for d in range(ndim) if d != dim]) != 0
            region = tuple(kept if d == dim else slice(None) for d in range(ndim))
        elif kind == "global":
            region = (slice(None),) * len(t.shape)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[region], default_mask=default_mask[region])
        mask[region] = partial.to(dtype=mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """Prunes nothing (mask of ones)."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _zero_flat(default_mask, indices):
    mask = default_mask.clone()
    mask.view(-1)[indices] = 0
    return mask


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` (a count or a fraction) entries chosen at random."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        n = _checked_count(self.amount, t.nelement())
        if n == 0:
            return default_mask.clone()
        return _zero_flat(default_mask, ember.topk(ember.rand_like(t).view(-1), k=n).indices)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        n = _checked_count(self.amount, t.nelement())
        if n == 0:
            return default_mask.clone()
        smallest = ember.topk(ember.abs(t).view(-1), k=n, largest=False).indices
        return _zero_flat(default_mask, smallest)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channels_mask(t, dim, keep):
    """Ones on the channels ``keep`` (a bool mask or indices) along ``dim``, zeros elsewhere."""
    mask = ember.zeros_like(t)
    mask[tuple(keep if d == dim or d == dim + t.dim() else slice(None)
               for d in range(t.dim()))] = 1
    return mask


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` random channels along ``dim``."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        nch = t.shape[self.dim]
        n = _checked_count(self.amount, nch)
        if n == 0:
            return default_mask
        scores = ember.rand(nch)
        threshold = ember.kthvalue(scores, k=n).values
        mask = _channels_mask(t, self.dim, scores > threshold)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` with the smallest L-``n`` norm."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        nch = t.shape[self.dim]
        n_prune = _compute_nparams_toprune(self.amount, nch)
        _validate_pruning_amount(n_prune, nch)
        keep = ember.topk(_compute_norm(t, self.n, self.dim), k=nch - n_prune,
                          largest=True).indices
        if n_prune == 0:
            return default_mask
        mask = _channels_mask(t, self.dim, keep)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes with a given mask."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask "
                                 f"shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune ``(module, name)`` pairs together: the unstructured ``pruning_method`` sees all
    of them as one flat vector; each gets its slice of the mask via ``custom_from_mask``."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n))
                                   for m, n in parameters])
    masks = parameters_to_vector([getattr(m, n + "_mask", ember.ones_like(getattr(m, n)))
                                  for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    flat = container.compute_mask(scores, masks)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        count = param.numel()
        custom_from_mask(module, name, mask=flat[start:start + count].view_as(param))
        start += count


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can "
                     "be removed")


def is_pruned(module):
    """Whether any submodule carries a pruning hook."""
    return any(isinstance(h, BasePruningMethod)
               for m in module.modules() for h in m._forward_pre_hooks.values())


def _validate_pruning_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if isinstance(amount, numbers.Integral):
        bad = amount < 0
    else:
        bad = float(amount) > 1.0 or float(amount) < 0.0
    if bad:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _validate_pruning_amount(amount, tensor_size):
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _validate_structured_pruning(t):
    if len(t.shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {t.shape} with {len(t.shape)} dims")


def _compute_nparams_toprune(amount, tensor_size):
    """A count stays a count; a fraction becomes round(fraction * size)."""
    return amount if isinstance(amount, numbers.Integral) else round(amount * tensor_size)


def _checked_count(amount, size):
    n = _compute_nparams_toprune(amount, size)
    _validate_pruning_amount(n, size)
    return n


def _validate_pruning_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    """L-``n`` norm of each slice along ``dim`` (over all other dims)."""
    dim = dim % t.dim() if dim < 0 else dim
    return ember.norm(t, p=n, dim=[d for d in range(t.dim()) if d != dim])
