"""Forward-mode AD (torch.autograd.forward_ad): dual tensors as a dispatcher mode.

Inside ``dual_level()``, ``make_dual(primal, tangent)`` returns an alias of ``primal``
carrying ``tangent``. A ``_ForwardMode`` on the mode stack sees every op: when an argument
carries a tangent, the op runs on the primals as usual, and the output tangent is the
op's jvp computed by the double-vjp identity over its backward rule
(J t = d/du <J^T u, t>), exact for every op whose backward is differentiable in the
incoming gradient. An op with no backward raises instead of producing a wrong tangent.
"""
from __future__ import annotations

import collections
import weakref

from ember._dispatch import Mode
from ember._tensor import Tensor

__all__ = ["dual_level", "make_dual", "unpack_dual", "enter_dual_level", "exit_dual_level",
           "UnpackedDualTensor"]

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])

_levels: list = []          # active _ForwardMode objects, innermost last


class _ForwardMode(Mode):
    def __init__(self, idx):
        self.idx = idx
        self.tangents: dict = {}    # id(tensor) -> (weakref, tangent)

    def get(self, t):
        e = self.tangents.get(id(t))
        if e is None:
            return None
        if e[0]() is not t:
            del self.tangents[id(t)]
            return None
        return e[1]

    def set(self, t, tangent):
        self.tangents[id(t)] = (weakref.ref(t), tangent)

    def __ember_dispatch__(self, op, args, kwargs):
        has = False
        for a in args:
            if isinstance(a, Tensor) and self.get(a) is not None:
                has = True
                break
            if isinstance(a, (list, tuple)) and any(
                    isinstance(x, Tensor) and self.get(x) is not None for x in a):
                has = True
                break
        if not has:
            return op(*args, **kwargs)
        if kwargs.get("out") is not None:
            raise RuntimeError(f"forward AD: {op.public_name} with out= is not supported on "
                               f"dual tensors")
        if op.is_inplace:
            func = op.functional
            res = self.__ember_dispatch__(func, args, {})
            tan = self.get(res) if isinstance(res, Tensor) else None
            op(*args)
            if tan is not None:
                self.set(args[0], tan)
            return args[0]
        out = op(*args)
        tangents_out = self._jvp(op, args, out)
        outs = out if isinstance(out, (list, tuple)) else (out,)
        for o, t in zip(outs, tangents_out):
            if t is not None and isinstance(o, Tensor):
                self.set(o, t)
        return out

    def _jvp(self, op, args, out):
        import ember
        from ember.autograd import grad as _agrad
        from ember.autograd.grad_mode import enable_grad
        outs = out if isinstance(out, (list, tuple)) else (out,)
        if not op.differentiable or not any(
                isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex())
                for o in outs):
            return [None] * len(outs)
        if op.backward is None and op.composite is None:
            raise RuntimeError(f"Trying to use forward AD with {op.public_name} that does not "
                               f"support it because it has no derivative formula")
        from ember.autograd.grad_mode import is_grad_enabled
        # Note [differentiable tangents]: when an input or a tangent requires grad (and grad
        # mode is on) the output tangent keeps a graph back to them, as torch's does
        # (reverse-over-forward: backward through a jvp); otherwise it is detached
        flat = [x for a in args for x in (a if isinstance(a, (list, tuple)) else (a,))
                if isinstance(x, Tensor)]
        keep = is_grad_enabled() and any(
            x.requires_grad or self.get(x) is not None and self.get(x).requires_grad
            for x in flat)
        fresh = []
        new_args = list(args)

        def primal(x):
            p = x.view_as(x) if keep and x.requires_grad else x.detach().requires_grad_()
            fresh.append((p, self.get(x)))
            return p

        with enable_grad():
            for i, a in enumerate(args):
                if isinstance(a, Tensor) and self.get(a) is not None:
                    new_args[i] = primal(a)
                elif isinstance(a, (list, tuple)) and any(
                        isinstance(x, Tensor) and self.get(x) is not None for x in a):
                    new_args[i] = type(a)(primal(x) if isinstance(x, Tensor) and
                                          self.get(x) is not None else x for x in a)
            r = op(*new_args)
            rs = list(r) if isinstance(r, (list, tuple)) else [r]
            diff = [k for k, o in enumerate(rs) if isinstance(o, Tensor) and o.requires_grad]
            result = [None] * len(rs)
            if not diff:
                return result
            us = [ember.zeros_like(rs[k]).requires_grad_() for k in diff]
            gs = _agrad([rs[k] for k in diff], [p for p, _ in fresh], us, create_graph=True,
                        allow_unused=True)
            pairs = [(g, t) for g, (_, t) in zip(gs, fresh)
                     if g is not None and g.requires_grad]
            if not pairs:
                jv = [None] * len(us)
            else:
                jv = _agrad([g for g, _ in pairs], us, [t.to(g.dtype) for g, t in pairs],
                            allow_unused=True, create_graph=keep)
        for k, j in zip(diff, jv):
            result[k] = ember.zeros_like(rs[k]) if j is None else j if keep else j.detach()
        return result


def enter_dual_level():
    if _levels:             # torch keeps a single level (its index 0)
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    m = _ForwardMode(len(_levels))
    _levels.append(m)
    m.__enter__()
    return m.idx


def exit_dual_level(*, level=None):
    if not _levels:
        raise RuntimeError("Dual level must be a positive number.")
    if level is not None and level != _levels[-1].idx:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one "
                           "that was created. This is not supported.")
    m = _levels.pop()
    m.__exit__(None, None, None)
    m.tangents.clear()


class dual_level:
    """Context manager of a forward AD level: dual tensors made inside lose their tangents
    on exit."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _current(level):
    if not _levels:
        return None
    if level is None:
        return _levels[-1]
    return _levels[level] if 0 <= level < len(_levels) else None


def make_dual(tensor, tangent, *, level=None):
    """An alias of ``tensor`` carrying ``tangent`` at the forward AD level."""
    if not _levels:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level "
                           "exists, make sure to enter_dual_level() first.")
    m = _current(level)
    if m is None:
        raise RuntimeError("Invalid level given to _make_dual")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    from ember._state import state
    modes = state.modes
    state.modes = tuple(x for x in modes if x is not m)
    try:
        dual = tensor.view_as(tensor)
    finally:
        state.modes = modes
    m.set(dual, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal view, tangent or None) of a dual tensor."""
    m = _current(level)
    if m is None:
        return UnpackedDualTensor(tensor, None)
    t = m.get(tensor)
    if t is None:
        return UnpackedDualTensor(tensor, None)
    from ember._state import state
    modes = state.modes
    state.modes = tuple(x for x in modes if x is not m)
    try:
        primal = tensor.view_as(tensor)
    finally:
        state.modes = modes
    return UnpackedDualTensor(primal, t)


def _function_apply(cls, setup, args, kwargs, apply):
    """``autograd.Function.apply`` under active forward AD levels (hook from function.py).

    Like torch, ``forward`` runs on the primals with the levels carrying input tangents
    disabled, then ``cls.jvp(ctx, *tangents)`` gives the output tangents at each such level:
    one tangent per forward argument (zeros for a tensor without one, None for a
    non-tensor), and ``ctx.saved_tensors`` reads the ``ctx.save_for_forward`` tensors."""
    import ember
    from ember._state import state
    active = [m for m in _levels
              if any(isinstance(a, Tensor) and m.get(a) is not None for a in args)]
    ctx = cls._backward_cls()
    if not active:
        return apply(cls, setup, args, kwargs, ctx)
    modes = state.modes
    state.modes = tuple(x for x in modes if not any(x is m for m in active))
    try:
        out = apply(cls, setup, args, kwargs, ctx)
    finally:
        state.modes = modes
    outs = out if isinstance(out, tuple) else (out,)
    non_diff = {id(t) for t in (getattr(ctx, "non_differentiable", None) or ())}
    for m in active:
        tangents = []
        for a in args:
            if not isinstance(a, Tensor):
                tangents.append(None)
            else:
                t = m.get(a)
                if t is None:
                    with _without(m):
                        t = ember.zeros_like(a)
                tangents.append(t)
        saved, released = ctx._saved, ctx._released
        sff = getattr(ctx, "saved_for_forward", None)
        if sff is not None:
            ctx._saved = [(None, 0, False) if t is None else (t, t._version, False)
                          for t in sff]
            ctx._released = False
        try:
            with _without(m):
                res = cls.jvp(ctx, *tangents)
        finally:
            ctx._saved, ctx._released = saved, released
        res = res if isinstance(res, tuple) else (res,)
        if len(res) != len(outs):
            raise RuntimeError(f"Function's jvp returned an invalid number of forward "
                               f"gradients (expected {len(outs)} but got {len(res)})")
        for o, t in zip(outs, res):
            if t is None or not isinstance(o, Tensor) or id(o) in non_diff:
                continue
            if not (o.is_floating_point() or o.is_complex()):
                continue
            if tuple(t.shape) != tuple(o.shape):
                raise RuntimeError(f"Trying to set a forward gradient that has a different "
                                   f"size than that of the original Tensor, this is not "
                                   f"supported. Tensor is of size {list(o.shape)} while the "
                                   f"given forward gradient is of size {list(t.shape)}.")
            m.set(o, t)
    return out


class _without:
    """Runs a block with the forward AD mode ``m`` off the mode stack."""

    def __init__(self, m):
        self.m = m

    def __enter__(self):
        from ember._state import state
        self.modes = state.modes
        state.modes = tuple(x for x in self.modes if x is not self.m)

    def __exit__(self, *exc):
        from ember._state import state
        state.modes = self.modes
        return False
