"""GradScaler: dynamic loss scaling (torch.amp.GradScaler's API and state machine).

Per optimizer and iteration: ``scale(loss).backward()`` -> optional ``unscale_(opt)`` ->
``step(opt)`` (skipped when an unscaled gradient is inf/NaN) -> ``update()`` (backoff on
inf, growth after ``growth_interval`` clean steps). The scale and growth tracker are
0-dim tensors (float32 / int32), created on the first ``scale()``.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

import ember
from ember._tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


_FIX = ("This may indicate your script did not use scaler.scale(loss or outputs) earlier "
        "in the iteration.")


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = str(device)
        self._enabled = enabled
        if self._device.startswith("cuda") and enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.")
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")      # torch asserts
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            # the live scale / tracker tensors appear on the first scale(); until then
            # (and in pickles) the _init_ values stand in for them
            vars(self).update(_init_scale=init_scale, _scale=None, _growth_factor=growth_factor,
                              _backoff_factor=backoff_factor, _growth_interval=growth_interval,
                              _init_growth_tracker=0, _growth_tracker=None,
                              _per_optimizer_states=defaultdict(_refresh_per_optimizer_state))

    # ------------------------------------------------------------------ internals
    def _check_scale_growth_tracker(self, funcname):
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + _FIX
        assert self._growth_tracker is not None, \
            f"Attempted {funcname} but _growth_tracker is None.  " + _FIX
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self):
        self._scale = ember.full((), self._init_scale, dtype=ember.float32)
        self._growth_tracker = ember.full((), self._init_growth_tracker, dtype=ember.int32)

    # ------------------------------------------------------------------ API
    def scale(self, outputs):
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init_scale_growth_tracker()
        if isinstance(outputs, Tensor):
            return outputs * self._scale

        def apply(v):
            if isinstance(v, Tensor):
                return v * self._scale
            if isinstance(v, (list, tuple)):
                r = [apply(x) for x in v]
                return type(v)(r) if isinstance(v, list) else tuple(r)
            if hasattr(v, "__iter__") and not isinstance(v, (str, bytes)):
                return map(apply, v)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        with ember.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype == ember.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if not bool(ember.isfinite(g).all()):
                        found_inf.fill_(1.0)
                    g.mul_(inv_scale.to(g.dtype) if g.dtype != inv_scale.dtype else inv_scale)
        return {self._device: found_inf}

    def unscale_(self, optimizer):
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        st = self._per_optimizer_states[id(optimizer)]
        if st["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = ember.full((), 1.0 / self._scale.item(), dtype=ember.float32)
        found_inf = ember.zeros((1,), dtype=ember.float32)
        st["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                          False)
        st["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, st, *args, **kwargs):
        if not sum(v.item() for v in st["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done already) and step ``optimizer`` if no gradient is inf/NaN."""
        if self._enabled and "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        self._check_scale_growth_tracker("step")
        st = self._per_optimizer_states[id(optimizer)]
        if st["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert len(st["found_inf_per_device"]) > 0, \
            "No inf checks were recorded for this optimizer."
        retval = self._maybe_opt_step(optimizer, st, *args, **kwargs)
        st["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor "
                          "or torch.FloatTensor with requires_grad=False.")
                assert isinstance(new_scale, Tensor), reason
                assert new_scale.numel() == 1, reason
                assert new_scale.requires_grad is False, reason
                scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [f for st in self._per_optimizer_states.values()
                          for f in st["found_inf_per_device"].values()]
            assert len(found_infs) > 0, "No inf checks were recorded prior to update."
            found = sum(f.item() for f in found_infs)
            with ember.no_grad():
                if found:
                    scale.mul_(self._backoff_factor)
                    tracker.fill_(0)
                else:
                    successful = tracker.item() + 1
                    if successful == self._growth_interval:
                        new = scale.item() * self._growth_factor
                        grown = ember.full((), new, dtype=ember.float32)
                        if bool(ember.isfinite(grown)):
                            scale.copy_(grown)
                        tracker.fill_(0)
                    else:
                        tracker.fill_(successful)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def get_scale(self):
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None \
            else self._growth_tracker.item()

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """Scale, factors, interval and tracker as plain numbers ({} when disabled)."""
        return dict(scale=self.get_scale(), growth_factor=self._growth_factor,
                    backoff_factor=self._backoff_factor, growth_interval=self._growth_interval,
                    _growth_tracker=self._get_growth_tracker()) if self._enabled else {}

    def load_state_dict(self, state_dict):
        if self._enabled and not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        if not self._enabled:
            return
        self._growth_factor, self._backoff_factor, self._growth_interval = (
            state_dict["growth_factor"], state_dict["backoff_factor"],
            state_dict["growth_interval"])
        self._init_scale, self._init_growth_tracker = \
            state_dict["scale"], state_dict["_growth_tracker"]
        for live, value in ((self._scale, self._init_scale),
                            (self._growth_tracker, self._init_growth_tracker)):
            if live is not None:
                live.fill_(value)

    def __getstate__(self):
        """Pickles carry numbers, not the live tensors (only between iterations)."""
        state = dict(vars(self))
        if self._enabled:
            assert not self._per_optimizer_states, (
                "A GradScaler instance may only be pickled at the beginning of an iteration, "
                "or at the end after scaler.update().")
            state.update(_init_scale=self.get_scale(), _scale=None, _growth_tracker=None,
                         _init_growth_tracker=self._get_growth_tracker())
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
