"""functorch's legacy module API (the 1.11 release): ``make_functional``,
``make_functional_with_buffers``, ``combine_state_for_ensemble``. ``python -m ember.run``
maps ``functorch`` to ``ember.func``, so these live here.

A functional module is a private copy of the model called through ``functional_call``
with the parameters (and buffers) it is given; the copy's own tensors are what the
maker returns as the initial state.
"""
from __future__ import annotations

import copy

import ember
from ember import nn
from ember.func._transforms import functional_call

__all__ = ["make_functional", "make_functional_with_buffers", "combine_state_for_ensemble",
           "FunctionalModule", "FunctionalModuleWithBuffers", "replace_all_batch_norm_modules_"]


def replace_all_batch_norm_modules_(root):
    """Make every batch norm in ``root`` (BatchNorm1d/2d/3d, their lazy forms, SyncBatchNorm;
    not instance norm) use batch statistics only: ``track_running_stats = False`` and the
    buffers ``running_mean``, ``running_var``, ``num_batches_tracked`` become None, so vmap
    over a model with batch norm does not write into shared buffers.  Returns ``root``."""
    from ember.nn.modules.batchnorm import _BatchNorm
    for module in root.modules():
        if isinstance(module, _BatchNorm):
            module.track_running_stats = False
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                module.register_buffer(name, None)
    return root


class FunctionalModule(nn.Module):
    """``fmodel(params, *args, **kwargs)``: the model with ``params`` in its parameters'
    places (in ``named_parameters()`` order)."""

    def __init__(self, stateless_model, param_names):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = tuple(param_names)

    def forward(self, params, *args, **kwargs):
        return functional_call(self.stateless_model, dict(zip(self.param_names, params)),
                               args, kwargs)


class FunctionalModuleWithBuffers(nn.Module):
    """``fmodel(params, buffers, *args, **kwargs)``."""

    def __init__(self, stateless_model, param_names, buffer_names):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = tuple(param_names)
        self.buffer_names = tuple(buffer_names)

    def forward(self, params, buffers, *args, **kwargs):
        state = dict(zip(self.param_names, params))
        state.update(zip(self.buffer_names, buffers))
        return functional_call(self.stateless_model, state, args, kwargs)


def _copy_state(model, disable_autograd_tracking):
    """A private copy of ``model`` and its (named) parameters and buffers."""
    clone = copy.deepcopy(model)
    params = dict(clone.named_parameters())
    if disable_autograd_tracking:
        for p in params.values():
            p.requires_grad_(False)
    return clone, params, dict(clone.named_buffers())


def make_functional(model, disable_autograd_tracking=False):
    """``(func, params)``: ``func(params, *args)`` runs ``model`` with ``params``."""
    if not isinstance(model, nn.Module):
        raise RuntimeError(f"Expected model to be an nn.Module, got {type(model)}")
    if len(list(model.buffers())) > 0:
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    clone, params, _ = _copy_state(model, disable_autograd_tracking)
    return FunctionalModule(clone, params), tuple(params.values())


def make_functional_with_buffers(model, disable_autograd_tracking=False):
    """``(func, params, buffers)``: ``func(params, buffers, *args)`` runs ``model``."""
    if not isinstance(model, nn.Module):
        raise RuntimeError(f"Expected model to be an nn.Module, got {type(model)}")
    clone, params, buffers = _copy_state(model, disable_autograd_tracking)
    return (FunctionalModuleWithBuffers(clone, params, buffers), tuple(params.values()),
            tuple(buffers.values()))


def combine_state_for_ensemble(models):
    """``(func, params, buffers)`` for an ensemble of same-class models: each parameter and
    buffer stacked over the models along a new dim 0, for ``vmap(func)``."""
    models = list(models)
    if not models:
        raise RuntimeError("combine_state_for_ensemble: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("combine_state_for_ensemble: Expected all models to have the same "
                           "training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to be of the same "
                           "class.")
    func, _, _ = make_functional_with_buffers(models[0])
    states = [make_functional_with_buffers(m)[1:] for m in models]

    def stacked(which):
        return tuple(ember.stack([s[which][k] for s in states]).detach()
                     for k in range(len(states[0][which])))
    return func, stacked(0), stacked(1)
