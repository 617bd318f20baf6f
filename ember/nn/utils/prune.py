"""Pruning (torch.nn.utils.prune). Pruning ``module.<name>`` moves the parameter to
``<name>_orig``, adds a buffer ``<name>_mask`` and a forward pre-hook (the method object)
that recomputes ``module.<name> = <name>_orig * <name>_mask``. Pruning the same tensor again
combines the methods in a ``PruningContainer`` whose new mask only touches entries (or
channels) the previous masks kept.

A method is a class with a ``compute_mask(t, default_mask)``; everything else (the
reparametrisation, the hook, undoing it) is shared by ``BasePruningMethod``."""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import ember
from ember.nn.utils.convert_parameters import parameters_to_vector


def _hooks_on(module, name):
    """Keys of the pruning hooks of ``module`` that act on ``name``."""
    return [key for key, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]


def _check_scores(scores, like, what):
    if scores is None:
        return like
    if scores.shape != like.shape:
        raise AssertionError(f"importance_scores should have the same shape as {what}, got "
                             f"{scores.shape} vs {like.shape}")
    return scores


class BasePruningMethod(ABC):
    """A pruning method: ``compute_mask(t, default_mask)`` returns the new mask. ``apply``
    sets ``_tensor_name`` (as in torch, a method never applied has no such attribute)."""

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for ``t`` given the mask from earlier prunings."""

    def __call__(self, module, inputs):
        # forward pre-hook: refresh the pruned tensor from its original and mask
        setattr(module, self._tensor_name, self.apply_mask(module))

    def _pruned_name(self, module, when=""):
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned{when}")
        return self._tensor_name

    def apply_mask(self, module):
        """``<name>_orig * <name>_mask`` (the mask cast to the parameter's dtype)."""
        name = self._pruned_name(module)
        weights = getattr(module, f"{name}_orig")
        return weights * getattr(module, f"{name}_mask").to(dtype=weights.dtype)

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` in place (see the module docstring); returns the hook."""
        found = _hooks_on(module, name)
        if len(found) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} "
                                 f"of module {module}. Use a PruningContainer.")
        earlier = [module._forward_pre_hooks.pop(key) for key in found]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if earlier:
            container = earlier[0]
            if not isinstance(container, PruningContainer):
                container = PruningContainer(container)
            container.add_pruning_method(method)
            method = container
        current = getattr(module, name)
        scores = _check_scores(importance_scores, current, f"parameter {name} of {module}")
        if earlier:
            previous_mask = getattr(module, f"{name}_mask").detach().clone()
        else:
            _move_parameter(module, name, f"{name}_orig")
            previous_mask = ember.ones_like(current)
        try:
            module.register_buffer(f"{name}_mask",
                                   method.compute_mask(scores, default_mask=previous_mask))
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not earlier:
                _move_parameter(module, f"{name}_orig", name)
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times its mask (no module involved)."""
        scores = _check_scores(importance_scores, t, "tensor t")
        start = ember.ones_like(t) if default_mask is None else default_mask
        return self.compute_mask(scores, default_mask=start) * t

    def remove(self, module):
        """Make the pruning permanent: ``<name>`` becomes a parameter holding the masked
        values; ``<name>_orig`` and ``<name>_mask`` go away."""
        name = self._pruned_name(module, " before pruning can be removed")
        final = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        del module._buffers[f"{name}_mask"]
        param = module._parameters.pop(f"{name}_orig")
        param.data = final.data
        setattr(module, name, param)


def _move_parameter(module, old, new):
    module.register_parameter(new, getattr(module, old))
    del module._parameters[old]


class PruningContainer(BasePruningMethod):
    """Successive pruning methods on one tensor; only the newest computes a mask, over what
    the earlier masks kept."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:             # the container acts on its single method's tensor
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods = (*self._pruning_methods, method)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def __iter__(self):                # (scripts test hasattr(container, '__iter__'))
        return iter(self._pruning_methods)

    def __len__(self):
        return len(self._pruning_methods)

    def compute_mask(self, t, default_mask):
        """Run the newest method on the part of ``t`` still unpruned: the kept entries
        (unstructured), the kept channels along ``dim`` (structured) or everything (global)."""
        newest = self._pruning_methods[-1]
        kind = newest.PRUNING_TYPE
        if kind == "unstructured":
            region = default_mask == 1
        elif kind == "structured":
            region = _kept_channels(newest, t, default_mask)
        elif kind == "global":
            region = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        mask = default_mask.to(dtype=t.dtype)
        mask[region] = newest.compute_mask(t[region], default_mask=default_mask[region]) \
            .to(dtype=mask.dtype)
        return mask


def _kept_channels(method, t, default_mask):
    """Index of the channels along ``method.dim`` that some earlier mask entry kept."""
    if not hasattr(method, "dim"):
        raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have '
                             "the attribute `dim` defined.")
    rank = t.dim()
    axis = method.dim + rank if method.dim < 0 else method.dim
    if axis < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {rank}")
    alive = default_mask.sum(dim=[d for d in range(rank) if d != axis]) != 0
    return (slice(None),) * axis + (alive,)


# ---- the methods ------------------------------------------------------------------------

class Identity(BasePruningMethod):
    """Prunes nothing (mask of ones)."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask


class _ByAmount(BasePruningMethod):
    """A method that prunes ``amount`` entries or channels: a count, or a fraction of them."""

    def __init__(self, amount):
        if not isinstance(amount, numbers.Real):
            raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
        count = isinstance(amount, numbers.Integral)
        if (amount < 0) if count else abs(float(amount) - 0.5) > 0.5:
            raise ValueError(f"amount={amount} should either be a float in the range [0, 1] "
                             "or a non-negative integer")
        self.amount = amount

    def _how_many(self, total):
        """How many of ``total`` to prune (a fraction is rounded)."""
        if not isinstance(self.amount, numbers.Integral):
            return round(self.amount * total)
        if self.amount > total:
            raise ValueError(f"amount={self.amount} should be smaller than the number of "
                             f"parameters to prune={total}")
        return self.amount

    def _channels(self, t):
        """Channel count along ``dim`` (structured methods), after checking ``t``."""
        if t.dim() <= 1:
            raise ValueError("Structured pruning can only be applied to multidimensional "
                             f"tensors. Found tensor of shape {t.shape} with {t.dim()} dims")
        if self.dim >= t.dim():
            raise IndexError(f"Invalid index {self.dim} for tensor of size {t.shape}")
        return t.shape[self.dim]


def _zero_entries(default_mask, flat_indices):
    mask = default_mask.clone()
    mask.view(-1)[flat_indices] = 0
    return mask


def _only_channels(t, dim, keep, default_mask):
    """``default_mask`` with every channel along ``dim`` outside ``keep`` zeroed."""
    rank = t.dim()
    keep_mask = ember.zeros_like(t)
    keep_mask[(slice(None),) * (dim % rank) + (keep,)] = 1
    return keep_mask * default_mask.to(dtype=keep_mask.dtype)


class RandomUnstructured(_ByAmount):
    """Prunes ``amount`` (a count or a fraction) entries chosen at random."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        k = self._how_many(t.nelement())
        if k == 0:
            return default_mask.clone()
        return _zero_entries(default_mask, ember.topk(ember.rand_like(t).view(-1), k=k).indices)


class L1Unstructured(_ByAmount):
    """Prunes the ``amount`` entries of smallest absolute value."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        k = self._how_many(t.nelement())
        if k == 0:
            return default_mask.clone()
        return _zero_entries(default_mask, ember.abs(t).view(-1).topk(k, largest=False).indices)


class RandomStructured(_ByAmount):
    """Prunes ``amount`` random channels along ``dim``."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        super().__init__(amount)
        self.dim = dim

    def compute_mask(self, t, default_mask):
        channels = self._channels(t)
        k = self._how_many(channels)
        if k == 0:
            return default_mask
        draws = ember.rand(channels)           # keep the channels above the k-th smallest draw
        return _only_channels(t, self.dim, draws > ember.kthvalue(draws, k=k).values,
                              default_mask)


class LnStructured(_ByAmount):
    """Prunes the ``amount`` channels along ``dim`` with the smallest L-``n`` norm."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        super().__init__(amount)
        self.n, self.dim = n, dim

    def compute_mask(self, t, default_mask):
        channels = self._channels(t)
        k = self._how_many(channels)
        if k == 0:
            return default_mask
        axis = self.dim % t.dim()
        norms = ember.norm(t, p=self.n, dim=[d for d in range(t.dim()) if d != axis])
        return _only_channels(t, self.dim, norms.topk(channels - k).indices, default_mask)


class CustomFromMask(BasePruningMethod):
    """Prunes with a given mask."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if self.mask.shape != default_mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask "
                                 f"shape {self.mask.shape}")
        return self.mask.to(dtype=default_mask.dtype) * default_mask


# ---- functional forms: prune in place and return the module ------------------------------

def identity(module, name):
    return _pruned(Identity, module, name)


def random_unstructured(module, name, amount):
    return _pruned(RandomUnstructured, module, name, amount)


def l1_unstructured(module, name, amount, importance_scores=None):
    return _pruned(L1Unstructured, module, name, amount, importance_scores=importance_scores)


def random_structured(module, name, amount, dim):
    return _pruned(RandomStructured, module, name, amount, dim)


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    return _pruned(LnStructured, module, name, amount, n, dim,
                   importance_scores=importance_scores)


def custom_from_mask(module, name, mask):
    return _pruned(CustomFromMask, module, name, mask)


def _pruned(method, module, name, *args, **kwargs):
    method.apply(module, name, *args, **kwargs)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune ``(module, name)`` pairs together: the unstructured ``pruning_method`` sees all
    of them as one flat vector; each gets its slice of the mask via ``custom_from_mask``."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    pairs = list(parameters)
    tensors = [getattr(m, n) for m, n in pairs]
    scores = parameters_to_vector([importance_scores.get(pair, p)
                                   for pair, p in zip(pairs, tensors)])
    masks = parameters_to_vector([getattr(m, f"{n}_mask") if hasattr(m, f"{n}_mask")
                                  else ember.ones_like(p) for (m, n), p in zip(pairs, tensors)])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    method._tensor_name = "temp"      # a container only over the entries still unpruned
    flat = PruningContainer(method).compute_mask(scores, masks)
    offset = 0
    for (module, name), p in zip(pairs, tensors):
        custom_from_mask(module, name, mask=flat[offset:offset + p.numel()].view_as(p))
        offset += p.numel()


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent."""
    found = _hooks_on(module, name)
    if not found:
        raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before "
                         "pruning can be removed")
    module._forward_pre_hooks[found[0]].remove(module)
    del module._forward_pre_hooks[found[0]]
    return module


def is_pruned(module):
    """Whether any submodule carries a pruning hook."""
    return any(isinstance(h, BasePruningMethod)
               for m in module.modules() for h in m._forward_pre_hooks.values())
