"""The optimizer base class: parameter groups, per-parameter state, hooks, state dicts.

A concrete optimizer passes its hyper-parameters as ``defaults`` and implements
``step(closure=None)``; every parameter group is a dict holding ``params`` plus one value
for each default.  ``step`` is wrapped once per class (see ``__init_subclass__``) so that it
runs the step hooks, evaluates under ``no_grad`` and is safe to call from ``super().step``.
"""
import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

import ember
from ember._tensor import Tensor
from ember.autograd.graph import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

# hooks shared by every optimizer instance: hook(optimizer, args, kwargs)
_GLOBAL_PRE_HOOKS = OrderedDict()
_GLOBAL_POST_HOOKS = OrderedDict()


def _add_hook(table, hook, prepend=False):
    handle = RemovableHandle(table)
    table[handle.id] = hook
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook):
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``."""
    return _add_hook(_GLOBAL_PRE_HOOKS, hook)


def register_optimizer_step_post_hook(hook):
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    return _add_hook(_GLOBAL_POST_HOOKS, hook)


# ---- small helpers shared by the algorithms ---------------------------------------------------

def _to_scalar(x):
    """A one-element tensor hyper-parameter becomes 0-dim; anything else is unchanged."""
    return x.squeeze() if isinstance(x, Tensor) and x.dim() != 0 else x


def _num(x):
    """A hyper-parameter (or a 0-dim state tensor) as a Python number."""
    return x.item() if isinstance(x, Tensor) else x


def _scalar_dtype():
    """dtype of scalar state such as ``step``: float64 only under a float64 default."""
    return ember.float64 if ember.get_default_dtype() == ember.float64 else ember.float32


def _scalar(value=0.0):
    return ember.tensor(value, dtype=_scalar_dtype())


def _real(t):
    """Complex tensors are optimised as pairs of reals: a (..., 2) real view sharing memory."""
    if t is None or not t.is_complex():
        return t
    a = t._data
    return ember.from_numpy(a[..., None].view(a.real.dtype))  # indexing never copies


def _closure_loss(closure):
    if closure is None:
        return None
    with ember.enable_grad():
        return closure()


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    _require(0.0 <= lr, "learning rate", lr)


def _require(ok, what, value):
    """Hyper-parameter validation with torch's wording: ``Invalid <what>: <value>``."""
    if not ok:
        raise ValueError(f"Invalid {what}: {value}")


def _check_betas(betas):
    for i in range(2):  # indexed like torch: a 1-tuple raises IndexError
        _require(0.0 <= betas[i] < 1.0, f"beta parameter at index {i}", betas[i])


def _fused_options(fused, differentiable=False, foreach=False):
    """torch's constructor checks of ``fused=True`` (SGD, Adagrad: ember runs their fused
    groups through the same update as the loop, which is what torch's CPU kernels compute
    for whole vectors)."""
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


_FUSED_DEVICES = "['mps', 'cuda', 'xpu', 'hpu', 'cpu', 'mtia', 'privateuseone']"


def _check_fused_group(group, sparse_text=None):
    """At ``step``, before a fused group changes anything: each parameter with a gradient
    must be floating point, and (``sparse_text`` given) no gradient may be sparse."""
    if not group.get("fused"):
        return
    for p in group["params"]:
        if p.grad is None:
            continue
        if not p.is_floating_point():
            raise RuntimeError(f"`fused=True` requires all the params to be floating point "
                               f"Tensors of supported devices: {_FUSED_DEVICES} but "
                               f"{p.dtype} and {p.device.type}")
    if sparse_text is not None and any(p.grad is not None and p.grad.is_sparse
                                       for p in group["params"]):
        raise RuntimeError(sparse_text)


_TENSOR_TYPE_NAMES = dict(float32="Float", float64="Double", float16="Half", bfloat16="BFloat16",
                          int64="Long", int32="Int", int16="Short", int8="Char", uint8="Byte",
                          bool="Bool", complex64="ComplexFloat", complex128="ComplexDouble")


def _type_name(obj):
    """torch.typename's spelling, for error messages."""
    if isinstance(obj, Tensor):
        kind = _TENSOR_TYPE_NAMES.get(str(obj.dtype).rsplit(".", 1)[-1])
        return f"torch.{kind}Tensor" if kind else "torch.Tensor"
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else \
        f"{cls.__module__}.{cls.__qualname__}"


def _with_hooks(step):
    """Wrap a class's ``step``: pre hooks (which may replace the arguments), the update under
    the group's grad mode, then post hooks.  Nested calls (``super().step``) go straight in."""

    @functools.wraps(step)
    def hooked_step(self, *rest, **kwargs):
        if self.__dict__.get("_stepping"):
            return step(self, *rest, **kwargs)
        args = (self, *rest)  # hooks see (and may replace) the optimizer as args[0]
        for hook in chain(_GLOBAL_PRE_HOOKS.values(), self._step_pre_hooks.values()):
            replaced = hook(self, args, kwargs)
            if replaced is None:
                continue
            if not (isinstance(replaced, tuple) and len(replaced) == 2):
                raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                   f"new_kwargs), but got {replaced}.")
            args, kwargs = replaced
        self._stepping = True
        try:
            with ember.set_grad_enabled(bool(self.defaults.get("differentiable", False))):
                result = step(*args, **kwargs)
        finally:
            self._stepping = False
        for hook in chain(self._step_post_hooks.values(), _GLOBAL_POST_HOOKS.values()):
            hook(self, args, kwargs)
        return result

    hooked_step._ember_hooked = True
    return hooked_step


_HOOK_TABLES = ("_step_pre_hooks", "_step_post_hooks", "_state_dict_pre_hooks",
                "_state_dict_post_hooks", "_load_pre_hooks", "_load_post_hooks")


class Optimizer:
    """Base class of all optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (one per
    parameter group, each with a ``params`` entry and optional per-group overrides);
    ``defaults`` gives every group's missing options.
    """

    # state["step"] is a 0-dim tensor (rebuilt from a plain number when loading old state)
    _tensor_step = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("step")
        if own is not None and not getattr(own, "_ember_hooked", False):
            cls.step = _with_hooks(own)

    def __init__(self, params, defaults):
        self.defaults = defaults
        for name in _HOOK_TABLES:
            setattr(self, name, OrderedDict())
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _type_name(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ---- groups ---------------------------------------------------------------------------
    def add_param_group(self, param_group):
        """Append a parameter group; options it leaves out come from ``defaults``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        entries = param_group["params"]
        if isinstance(entries, Tensor):
            entries = [entries]
        elif isinstance(entries, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        entries = list(entries)
        named = [e for e in entries if isinstance(e, tuple)]
        param_group["params"] = [e[1] if isinstance(e, tuple) else e for e in entries]
        if named:
            if len(named) != len(entries):
                raise ValueError("all optimizer params should be with/without names. "
                                 "Some param names are missing")
            param_group["param_names"] = [e[0] for e in named]

        params = param_group["params"]
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _type_name(p))
            if not self.defaults.get("differentiable") and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for key, value in self.defaults.items():
            param_group.setdefault(key, value)

        if len(set(params)) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in group) != ("param_names" in param_group):
                kind = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {kind} to the optimizer")
        if not seen.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def __repr__(self):
        def show(v):
            return format(v.item()) if isinstance(v, Tensor) and v.dim() == 0 else v

        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            if i:
                lines.append("")                # torch leaves a blank line between groups
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {show(group[k])}" for k in sorted(group) if k != "params"]
        return "\n".join(lines) + "\n)"

    # ---- gradients ------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True):
        """Drop every parameter's gradient (or, with ``set_to_none=False``, zero it)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def step(self, closure=None):
        """Update the parameters once; ``closure`` re-evaluates the loss if given."""
        raise NotImplementedError

    # ---- hooks ----------------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        return _add_hook(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        return _add_hook(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        return _add_hook(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        return _add_hook(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        return _add_hook(self._load_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        return _add_hook(self._load_post_hooks, hook, prepend)

    # ---- pickling / state dicts -----------------------------------------------------------
    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in _HOOK_TABLES:
            self.__dict__.setdefault(name, OrderedDict())
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self.defaults.items():
                group.setdefault(key, value)
            for p in group["params"]:
                st = self.state.get(p)
                if self._tensor_step and st and "step" in st and not isinstance(st["step"],
                                                                                  Tensor):
                    st["step"] = _scalar(float(st["step"]))

    def state_dict(self):
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}``:
        parameters are numbered in group order, tensors in the state are not copied."""
        for hook in self._state_dict_pre_hooks.values():
            hook(self)
        # a parameter's number is its position in the concatenated groups; a tensor listed
        # twice keeps its number from the first group holding it, but within that group the
        # last position wins (as in torch)
        index, groups, position = {}, [], 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            index.update({id(p): position + i for i, p in enumerate(group["params"])
                          if id(p) not in index})
            packed["params"] = [index[id(p)] for p in group["params"]]
            position += len(group["params"])
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        result = {"state": state, "param_groups": groups}
        for hook in self._state_dict_post_hooks.values():
            replaced = hook(self, result)
            if replaced is not None:
                result = replaced
        return result

    def load_state_dict(self, state_dict):
        """Restore what :meth:`state_dict` returned (group options included)."""
        state_dict = dict(state_dict)
        for hook in self._load_pre_hooks.values():
            replaced = hook(self, state_dict)
            if replaced is not None:
                state_dict = replaced
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(s["params"]) != len(g["params"])
               for s, g in zip(saved_groups, self.param_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        owner = {}
        for s, g in zip(saved_groups, self.param_groups):
            owner.update((i, (p, s)) for i, p in zip(s["params"], g["params"]))

        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in owner:
                p, saved = owner[key]
                state[p] = self._adopt(p, value, saved)
            else:
                state[key] = value
        for s, g in zip(saved_groups, self.param_groups):
            s["params"] = g["params"]
            if "param_names" in g:
                s.setdefault("param_names", g["param_names"])
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for hook in self._load_post_hooks.values():
            hook(self)

    @staticmethod
    def _adopt(p, value, group, key=None):
        """Move loaded state onto parameter ``p``: floating tensors take p's dtype, except
        ``step`` (float32 for capturable/fused groups, else untouched)."""
        if isinstance(value, Tensor):
            if key == "step":
                wants_f32 = group.get("capturable") or group.get("fused")
                return value.to(dtype=ember.float32) if wants_f32 else value
            return value.to(dtype=p.dtype) if p.is_floating_point() else value
        if isinstance(value, dict):
            return {k: Optimizer._adopt(p, v, group, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._adopt(p, v, group) for v in value)
        return value

    _sparse_refusal = None      # the RuntimeError text of an optimizer without sparse support

    def _grads(self, group):
        """``(param, grad, state)`` for each parameter of ``group`` that has a gradient; the
        gradient is negated when the group maximizes (never modified in place). A sparse
        gradient raises ``_sparse_refusal`` where the optimizer sets one, as torch's do."""
        for p in group["params"]:
            g = p.grad
            if g is not None:
                if self._sparse_refusal is not None and g.is_sparse:
                    raise RuntimeError(self._sparse_refusal)
                yield p, (-g if group.get("maximize") else g), self.state[p]

