"""``torch.distributed.optim.DistributedOptimizer``: one local optimizer per owner of the
parameters (created there through ``rpc.remote``); ``step(context_id)`` steps them all in
parallel, each with the gradients its worker accumulated in that distributed autograd
context (``.grad`` is left as it was)."""
from __future__ import annotations

import threading

from ember.distributed import autograd as dist_autograd
from ember.distributed import rpc
from ember.distributed.optim.zero_redundancy_optimizer import ZeroRedundancyOptimizer  # noqa: E402

__all__ = ["DistributedOptimizer", "ZeroRedundancyOptimizer"]

_step_lock = threading.Lock()      # one step at a time per worker: parameters are shared


class _LocalOptimizer:
    """``optimizer_class`` over the values of ``param_rrefs`` (all owned here)."""

    def __init__(self, optimizer_class, param_rrefs, *args, **kwargs):
        self.params = [r.local_value() for r in param_rrefs]
        self.optim = optimizer_class(self.params, *args, **kwargs)

    def step(self, context_id):
        grads = dist_autograd.get_gradients(context_id)
        with _step_lock:
            kept = [p.grad for p in self.params]
            try:
                for p in self.params:
                    p.grad = grads.get(p)
                self.optim.step()
            finally:
                for p, g in zip(self.params, kept):
                    p.grad = g


def _new_local_optimizer(optimizer_class, param_rrefs, args, kwargs):
    return _LocalOptimizer(optimizer_class, param_rrefs, *args, **kwargs)


def _local_step(optimizer_rref, context_id):
    optimizer_rref.local_value().step(context_id)


class DistributedOptimizer:
    """``DistributedOptimizer(optimizer_class, params_rref, *args, **kwargs)``:
    ``params_rref`` is a list of RRefs to parameters on any workers; ``args``/``kwargs``
    go to every local ``optimizer_class``."""

    def __init__(self, optimizer_class, params_rref, *args, **kwargs):
        by_owner = {}
        for r in params_rref:
            by_owner.setdefault(r.owner(), []).append(r)
        self.remote_optimizers = [
            rpc.remote(owner, _new_local_optimizer,
                       args=(optimizer_class, rrefs, args, kwargs))
            for owner, rrefs in by_owner.items()]

    def step(self, context_id):
        """Step every owner's optimizer with its gradients of ``context_id`` (in parallel)."""
        dist_autograd._retrieve(context_id)
        futures = [rpc.rpc_async(o.owner(), _local_step, args=(o, context_id))
                   for o in self.remote_optimizers]
        errors = []
        for f in futures:
            try:
                f.wait()
            except Exception as e:          # noqa: BLE001 - all finish, the first is raised
                errors.append(e)
        if errors:
            raise errors[0]
