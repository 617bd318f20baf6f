"""``autograd.Function``: user-defined ops with a hand-written backward.

A Function is the user's version of an op record (docs/ARCHITECTURE.md): ``forward`` is
the kernel (run on Tensors with grad mode off), ``backward`` the VJP rule. Its graph node
is a ``graph.Node`` subclass ``<ClassName>Backward`` built with the same machinery as an
op record's node: edges from ``graph.grad_edge``, per-input metadata, gradients reduced
to each input's shape and dtype by ``graph._fit``, saved tensors version-checked (and
packed by saved-tensor hooks), freed after backward unless ``retain_graph``.

As in torch, the node *is* the ``ctx`` object passed to ``forward``/``setup_context`` and
``backward``: ``y.grad_fn.saved_tensors`` works.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import warnings

import numpy as np

from ember._state import state
from ember._tensor import Tensor, _make
from ember.autograd.graph import (Node, grad_edge, is_view_of_leaf, _fit, _Packed, _pack,
                                  _hook_state, _version_msg, _FREED_MSG, bump_version,
                                  rebase_history, DelayedError)

__all__ = ["FunctionCtx", "BackwardCFunction", "FunctionMeta", "Function",
           "once_differentiable", "InplaceFunction", "NestedIOFunction"]

_FUNCTION_COUNTER = itertools.count()


class FunctionCtx:
    """The methods available on ``ctx`` in ``forward``/``setup_context``."""

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for ``backward``; read them back with ``ctx.saved_tensors``
        (which checks they were not modified in place since)."""
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        """Declare the input tensors this Function modified in place (they must be returned)."""
        self.dirty_tensors = args

    def mark_shared_storage(self, *pairs):
        warnings.warn("`mark_shared_storage` is deprecated. Tensors with shared storages are "
                      "automatically tracked. Note that calls to `set_()` are not tracked",
                      FutureWarning, stacklevel=2)

    def mark_non_differentiable(self, *args):
        """Declare outputs that are not differentiable (they won't require grad; their
        gradient arrives in backward as zeros)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        """With False, undefined output gradients reach backward as None, not zeros."""
        self.materialize_grads = value


class BackwardCFunction(Node, FunctionCtx):
    """The graph node (and ctx) of one application of a Function."""

    _forward_cls = None

    def __init__(self):
        Node.__init__(self)
        self.to_save = None
        self.dirty_tensors = None
        self.non_differentiable = None
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._saved = None          # list of (tensor or _Packed or None, version, is_output)
        self._released = False
        self._is_tensor_input = ()
        self._metas = ()
        self._out_metas = ()
        self._batched = None        # (outputs, inputs) of a node recorded under vmap

    # ------------------------------------------------------------------ saved tensors
    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(_FREED_MSG)
        saved = self._saved
        if saved is None:
            return ()
        out = []
        for t, v, is_out in saved:
            if t is None or v is None:      # (None, or a batched value: no version check)
                out.append(t)
            elif isinstance(t, _Packed):
                out.append(t.unpack())
            else:
                if t._version != v:
                    raise RuntimeError(_version_msg(t, v, self if is_out else None))
                out.append(t)
        return tuple(out)

    @property
    def saved_variables(self):
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'",
                      DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    def release(self):
        if self._saved is not None:
            self._saved = None
            self._released = True

    # ------------------------------------------------------------------ engine interface
    @property
    def _num_outputs(self):
        return len(self._out_metas)

    def _get_user_fn(self):
        fwd = self._forward_cls
        backward_fn = fwd.backward
        vjp_fn = fwd.vjp
        if backward_fn is not Function.backward and vjp_fn is not Function.vjp:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is "
                               "not allowed. You should only implement one of them.")
        return vjp_fn if vjp_fn is not Function.vjp else backward_fn

    def apply(self, grads):
        """Engine entry: one gradient per forward output -> one per tensor input (edge)."""
        if self._batched is not None:
            return _batched_backward(self, grads)
        gs = []
        for g, m in zip(grads, self._out_metas):
            if g is None and m is not None and self.materialize_grads:
                g = _make(np.zeros(m[0], m[1]))
            gs.append(g)
        res = self._get_user_fn()(self, *gs)
        if not isinstance(res, tuple):
            res = (res,)
        n_in = len(self._is_tensor_input)
        if len(res) != n_in:
            if len(res) > n_in and all(r is None for r in res[n_in:]):
                res = res[:n_in]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n_in}, got {len(res)})")
        out = []
        k = 0
        nf = self.next_functions
        for i, (r, is_t) in enumerate(zip(res, self._is_tensor_input)):
            if not is_t:
                if r is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different "
                                       f"than None at position {i + 1}, but the corresponding "
                                       f"forward input was not a Variable")
                continue
            if r is not None and not isinstance(r, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
            out.append(_fit(r, self._metas[k], self, k) if nf[k][0] is not None else None)
            k += 1
        return out

    def __call__(self, *grads):
        return self.apply(list(grads))

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def apply_jvp(self, *args):
        return self._forward_cls.jvp(self, *args)

    @property
    def _autograd_function_id(self):
        return self._forward_cls._function_id


class FunctionMeta(type):
    """Creates, for each Function subclass, its node class ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        backward_fn = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        cls._function_id = next(_FUNCTION_COUNTER)
        cls._backward_cls = backward_fn
        super().__init__(name, bases, attrs)


class _SingleLevelFunction(FunctionCtx, metaclass=FunctionMeta):
    @staticmethod
    def forward(*args, **kwargs):
        """``forward(ctx, *args)``, or ``forward(*args)`` with a ``setup_context``."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """One gradient per output in, one per ``forward`` input out (None where none)."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")


class Function(_SingleLevelFunction):
    """Base class of user-defined differentiable operations. Subclass with static
    ``forward`` and ``backward`` (and optionally ``setup_context``, ``jvp``) and call
    ``MyFunction.apply(*args)``."""

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd "
                      f"functions are all static, so you should invoke them on the class "
                      f"itself. Instantiating an autograd function will raise an error in a "
                      f"future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd."
                           "Function)")

    generate_vmap_rule = False
    clear_saved_tensors_on_access = False
    _functorch_exempt = False   # ember's own Functions that stand for torch's C++ ops

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either "
                                  "override the vmap staticmethod or set "
                                  "generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        setup = _is_setup_context_defined(cls.setup_context)
        batched = any(type(a).__name__ == "BatchedTensor" for a in args)
        if not setup and not cls._functorch_exempt and (batched or _in_functorch_transform()):
            raise RuntimeError("In order to use an autograd.Function with functorch transforms "
                               "(vmap, grad, jvp, jacrev, ...), it must override the "
                               "setup_context staticmethod. For more details, please see "
                               "https://pytorch.org/docs/main/notes/extending.func.html")
        if batched:
            own_rule = cls.vmap is not Function.vmap
            if own_rule and cls.generate_vmap_rule:
                raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it has both "
                                   f"generate_vmap_rule=True and an overridden vmap "
                                   f"staticmethod. Please set generate_vmap_rule=False or "
                                   f"delete the overridden vmap staticmethod to avoid "
                                   f"ambiguity. For more details, please see "
                                   f"https://pytorch.org/docs/main/notes/extending.func.html")
            if not own_rule and not cls.generate_vmap_rule:
                raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not "
                                   f"have vmap support. Please override and implement the "
                                   f"vmap staticmethod or set generate_vmap_rule=True. For "
                                   f"more details, please see https://pytorch.org/docs/main/"
                                   f"notes/extending.func.html")
        if setup:
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        if batched and not cls.generate_vmap_rule:
            return _apply_vmap_rule(cls, args, kwargs)
        return _apply(cls, setup, args, kwargs)


def _in_functorch_transform():
    """True inside ember.func's vmap, grad, vjp or jvp (torch refuses Functions without
    ``setup_context`` there, even on inputs the transform does not track)."""
    if any(type(m).__name__ == "VmapMode" for m in state.modes):
        return True
    tr = __import__("sys").modules.get("ember.func._transforms")
    return tr is not None and tr._DEPTH[0] > 0


def _apply_vmap_rule(cls, args, kwargs):
    """``cls.apply`` on vmapped inputs through the user's ``vmap`` staticmethod, as torch:
    at the innermost vmap level among the inputs, ``cls.vmap(info, in_dims, *unbatched)``
    runs one level down (where it usually calls ``cls.apply`` on the batched tensors, so
    autograd records there) and returns ``(outputs, out_dims)``."""
    import collections
    from ember.func._vmap import BatchedTensor, VmapMode, _wrap
    from ember.utils._pytree import tree_flatten, tree_unflatten, _broadcast_to_and_flatten
    lvl = max(a._level for a in args if type(a) is BatchedTensor)
    mode = next(m for m in state.modes if type(m) is VmapMode and m.level == lvl)
    vals, in_dims = mode._unwrap(args)
    info = _VmapInfo(mode.batch_size, mode.randomness)
    modes = state.modes
    state.modes = tuple(m for m in modes if m is not mode)
    try:
        r = cls.vmap(info, tuple(in_dims), *vals, **kwargs)
    finally:
        state.modes = modes
    if not (isinstance(r, tuple) and len(r) == 2):
        raise RuntimeError(f"Expected the vmap staticmethod to have two returns, an output "
                           f"and out_dims with pytree structure compatible with the output. "
                           f"Got a {_torch_type_name(r)} instead")
    out, out_dims = r
    leaves, spec = tree_flatten(out)
    dims = _broadcast_to_and_flatten(out_dims, spec)
    if dims is None:
        raise RuntimeError(f"The autograd.Function's vmap staticmethod returned an incompatible "
                           f"(output, out_dims) tuple. Expected out_dims={out_dims} to be "
                           f"compatible with the structure of `output`. out_dims has structure "
                           f"{tree_flatten(out_dims)[1]} but output has structure {spec}. For "
                           f"more details, please see https://pytorch.org/docs/main/notes/"
                           f"extending.func.html")
    wrapped = [_wrap(x, d % x.dim() if d < 0 else d, lvl)
               if isinstance(x, Tensor) and d is not None else x for x, d in zip(leaves, dims)]
    return tree_unflatten(wrapped, spec)


def _torch_type_name(x):
    t = type(x)
    if isinstance(x, Tensor) and t.__module__.startswith("ember"):
        return "<class 'torch.Tensor'>"
    return str(t)


_VmapInfo = __import__("collections").namedtuple("VmapInfo", ["batch_size", "randomness"])


def _is_setup_context_defined(fn):
    return fn is not _SingleLevelFunction.setup_context


def _apply(cls, setup, args, kwargs, ctx=None):
    if ctx is None:
        from ember.autograd import forward_ad
        if forward_ad._levels:      # dual inputs: forward on primals, tangents by cls.jvp
            return forward_ad._function_apply(cls, setup, args, kwargs, _apply)
        ctx = cls._backward_cls()
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    needs = tuple(t and a._requires_grad for a, t in zip(args, is_tensor))
    if state.grad_enabled and not any(needs):
        if setup and cls.generate_vmap_rule and _batched_needing_grad(args):
            return _apply_batched_node(cls, ctx, args, kwargs)
        _refuse_batched_grad(cls, args)
    elif state.grad_enabled and any(type(a).__name__ == "BatchedTensor" for a in args):
        # an unbatched input differentiated outside the vmap (grad(vmap(f))): the node would
        # sit on the batched output's wrapper and the gradient come back as zeros
        raise NotImplementedError(
            f"{cls.__name__}.apply under vmap with an unbatched input that requires grad "
            f"(grad of a vmapped function): ember does not yet record autograd.Function "
            f"nodes there; vmap inside the gradient (vmap(grad(f))) or write the function "
            f"with ember ops")
    ctx.needs_input_grad = needs
    ctx._is_tensor_input = is_tensor
    is_executable = state.grad_enabled and any(needs)
    tensor_inputs = [a for a, t in zip(args, is_tensor) if t]
    if is_executable:
        ctx.next_functions = tuple(grad_edge(a) for a in tensor_inputs)
        ctx._metas = tuple((a._data.shape, a._data.dtype) for a in tensor_inputs)

    prev = state.grad_enabled
    state.grad_enabled = False
    try:
        if setup:
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, output)
        else:
            output = cls.forward(ctx, *args, **kwargs)
    finally:
        state.grad_enabled = prev
    return _wrap_outputs(ctx, args, tensor_inputs, output, is_executable)


def _batched_needing_grad(args):
    from ember.func._vmap import BatchedTensor, bottom
    return any(type(a) is BatchedTensor and bottom(a)._requires_grad for a in args)


def _apply_batched_node(cls, ctx, args, kwargs):
    """A ``generate_vmap_rule`` Function on vmapped inputs whose underlying tensors are being
    differentiated (``vmap(grad(f))``): forward and ``setup_context`` run on the batched
    values (the rule torch generates), and the node is recorded on the tensors beneath the
    batching; its backward runs ``cls.backward`` on gradients batched as the outputs are
    (the vmap levels are still active when ``grad`` runs inside them) and lays each result
    out as its input's underlying tensor (summing batch dims the input does not have)."""
    from ember.func._vmap import bottom
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    bots = [bottom(a) for a, t in zip(args, is_tensor) if t]
    ctx.needs_input_grad = tuple(t and bottom(a)._requires_grad
                                 for a, t in zip(args, is_tensor))
    ctx._is_tensor_input = is_tensor
    ctx.next_functions = tuple(grad_edge(b) for b in bots)
    ctx._metas = tuple((b._data.shape, b._data.dtype) for b in bots)
    prev = state.grad_enabled
    state.grad_enabled = False
    try:
        output = cls.forward(*args, **kwargs)
        cls.setup_context(ctx, args, output)
    finally:
        state.grad_enabled = prev
    if ctx.dirty_tensors:
        raise NotImplementedError(f"{cls.__name__}: mark_dirty under vmap of a gradient "
                                  f"transform is not supported by ember")
    raw = output if isinstance(output, tuple) else (output,)
    non_diff = {id(t) for t in (ctx.non_differentiable or ())}
    metas, likes = [], []
    for i, o in enumerate(raw):
        if not isinstance(o, Tensor) or id(o) in non_diff or not (
                o.is_floating_point() or o.is_complex()):
            metas.append(None)
            likes.append(None)
            continue
        b = bottom(o)
        b._grad_fn, b._output_nr, b._requires_grad = ctx, i, True
        metas.append((b._data.shape, b._data.dtype))
        likes.append(o)
    ctx._out_metas = metas
    ctx._batched = (likes, [a for a, t in zip(args, is_tensor) if t])
    ctx._saved = [(t, None, False) for t in (ctx.to_save or ())]
    ctx.to_save = None
    return output


def _batched_backward(node, grads):
    """``apply`` of a node recorded by ``_apply_batched_node``."""
    from ember.func._vmap import (BatchedTensor, active_levels, canonical, rewrap_like,
                                  _levels_of)
    from ember.func._transforms import _from_canonical_bottom, _no_modes
    likes, inputs = node._batched
    if any(type(g) is BatchedTensor for g in grads):
        # the backward itself vmapped (jacrev/jacfwd/hessian over the Function): not done
        raise NotImplementedError(
            f"{node._forward_cls.__name__}.apply under vmap of a gradient transform whose "
            f"backward is vmapped again (jacrev, jacfwd, hessian): ember does not yet run "
            f"autograd.Function nodes beneath two batchings; use vmap(grad(f)) or write "
            f"the function with ember ops")
    gs = []
    for g, m, like in zip(grads, node._out_metas, likes):
        if g is None and m is not None and node.materialize_grads:
            g = _make(np.zeros(m[0], m[1]))
        gs.append(None if g is None or like is None else rewrap_like(g, like))
    res = node._get_user_fn()(node, *gs)
    res = res if isinstance(res, tuple) else (res,)
    levels = active_levels()
    out, k = [], 0
    for r, is_t in zip(res, node._is_tensor_input):
        if not is_t:
            continue
        a = inputs[k]
        k += 1
        if r is None or node.next_functions[k - 1][0] is None:
            out.append(None)
            continue
        own = set(_levels_of(a)) if type(a) is BatchedTensor else set()
        c = canonical(r, levels)
        extra = [i for i, (lv, _) in enumerate(levels) if lv not in own]
        with _no_modes():
            if extra:
                c = c.sum(extra)
        out.append(_from_canonical_bottom(c, a) if type(a) is BatchedTensor else c)
    return out


def _refuse_batched_grad(cls, args):
    """A vmapped input whose underlying tensor is being differentiated (``vmap(grad(f))``,
    ``jacrev``/``jacfwd`` over a Function): the node would have to be recorded beneath the
    batching, which ember's Functions do not do yet; refuse rather than give zero grads."""
    from ember.func._vmap import BatchedTensor, bottom
    for a in args:
        if type(a) is BatchedTensor and bottom(a)._requires_grad:
            raise NotImplementedError(
                f"{cls.__name__}.apply under vmap of a gradient transform "
                f"(vmap(grad(...)), jacrev, jacfwd, hessian): ember does not yet record "
                f"autograd.Function nodes beneath vmap's batching; compute the gradient "
                f"per sample (a loop of grad calls) or write the function with ember ops")


def _alias(t):
    """A view of all of ``t`` (``view_as(t)``), made without recording history."""
    from ember._ops.core import view
    prev = state.grad_enabled
    state.grad_enabled = False
    try:
        a = view(t, t.shape)
    finally:
        state.grad_enabled = prev
    if a._meta is not None:
        a._meta.creation_meta = None
    return a


def _wrap_outputs(ctx, args, tensor_inputs, output, is_executable):
    is_tuple = isinstance(output, tuple)
    raw = output if is_tuple else (output,)
    num_outputs = len(raw)
    input_ids = {id(a) for a in tensor_inputs}
    dirty = ctx.dirty_tensors or ()
    dirty_ids = {id(t) for t in dirty}
    non_diff_ids = {id(t) for t in (ctx.non_differentiable or ())}
    out_ids = {id(o) for o in raw if isinstance(o, Tensor)}
    if any(id(t) not in out_ids for t in dirty):
        raise RuntimeError("Some elements marked as dirty during the forward method were not "
                           "returned as output. The inputs that are modified inplace must all "
                           "be outputs of the Function.")
    for t in dirty:
        bump_version(t)

    outs = []
    out_metas = []
    wrapped = {}             # id(raw output) -> returned tensor
    for i, o in enumerate(raw):
        if not isinstance(o, Tensor):
            outs.append(o)
            out_metas.append(None)
            continue
        is_input = id(o) in input_ids
        is_modified = id(o) in dirty_ids
        is_diff = is_executable and id(o) not in non_diff_ids and \
            (o.is_floating_point() or o.is_complex())
        r = o
        if not is_diff:
            if not o._requires_grad:
                if is_input and not is_modified:
                    r = _alias(o)
            elif is_input:
                r = o.detach()
            elif o._storage_base is None:
                o.detach_()
        elif is_modified:
            if o._grad_fn is None and o._requires_grad and o._view_info is None:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
            if o._view_info is not None:
                if is_view_of_leaf(o):
                    raise RuntimeError("a view of a leaf Variable that requires grad is being "
                                       "used in an in-place operation.")
                if num_outputs > 1:
                    raise RuntimeError(
                        "If your Function modifies inplace an input that is a view of another "
                        "Tensor, your Function cannot return more than one Tensor. This is not "
                        "supported by the current autograd engine. You should either make sure "
                        "the input is not a view (using .clone() for example) or make your "
                        "Function only return one Tensor (potentially splitting it into two "
                        "Functions: one doing the inplace that returns a single Tensor and a "
                        "second one that does the other operations). You can ask on the forum "
                        "https://discuss.pytorch.org/ if you need help to do this change.")
            if not is_input:
                warnings.warn("Only input Tensors should be given to ctx.mark_dirty(). If a "
                              "Tensor is not an input, there is no need to pass it to "
                              "mark_dirty().", UserWarning, stacklevel=3)
            rebase_history(o, ctx, i)
        elif is_input:
            r = _alias(o)
            r._grad_fn = ctx
            r._output_nr = i
            r._requires_grad = True
            r._autograd_meta().creation_meta = ("custom_function", ctx, i)
        else:
            o._grad_fn = ctx
            o._output_nr = i
            o._requires_grad = True
            if o._view_info is not None:
                # a view made inside forward: its history is this node, never a replay of
                # the view on its base; in-place on it (or on its base) is forbidden
                o._autograd_meta().creation_meta = ("custom_function", ctx, i)
        wrapped[id(o)] = r
        outs.append(r)
        out_metas.append((o._data.shape, o._data.dtype))

    ctx._out_metas = out_metas
    if is_executable:
        _save(ctx, wrapped)
    ctx.to_save = None
    if is_tuple:
        return tuple(outs)
    return outs[0]


def _save(ctx, wrapped):
    to_save = ctx.to_save
    if to_save is None:
        return
    saved = []
    hooks = _hook_state.stack
    for i, t in enumerate(to_save):
        if t is None:
            saved.append((None, 0, False))
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"save_for_backward can only save variables, but argument {i} is of "
                            f"type {type(t).__name__}")
        is_out = id(t) in wrapped
        if is_out:
            t = wrapped[id(t)]
        if hooks:
            saved.append((_pack(t), 0, is_out))
        else:
            saved.append((t, t._version, is_out))
    ctx._saved = saved


# -------------------------------------------------------------------- once_differentiable

def once_differentiable(fn):
    """Decorate a Function's ``backward`` that is not itself differentiable: it runs under
    no_grad, and differentiating its result again raises."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            state.grad_enabled = prev
        if not state.grad_enabled:
            return outputs
        requires_grad = any(isinstance(a, Tensor) and a._requires_grad for a in args)
        if not requires_grad:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        err = DelayedError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable", len(outs),
                           tuple(grad_edge(a) for a in args if isinstance(a, Tensor)))
        res = []
        for k, o in enumerate(outs):
            if isinstance(o, Tensor):
                o = o.detach()
                o._requires_grad = True
                o._grad_fn = err
                o._output_nr = k
            res.append(o)
        return res[0] if single else tuple(res)
    return wrapper


class InplaceFunction(Function):
    """A Function that may work in place (``inplace`` flag kept for old code)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    """Legacy: not supported by ember."""

    @classmethod
    def apply(cls, *args, **kwargs):
        raise NotImplementedError("NestedIOFunction (legacy autograd API) is not supported")


def traceable(fn_cls):
    fn_cls.is_traceable = True
    return fn_cls
