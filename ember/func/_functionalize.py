"""``functionalize(func, *, remove="mutations")``: func without observable mutation of its
inputs while it runs, and with in-place ops that vmap could not run (an unbatched tensor
written with a batched value) done out of place.

What ember guarantees (torch builds a mutation-free graph; ember runs eagerly):

* values: the results equal ``func``'s, with autograd through them;
* inputs: ``func`` runs on copies of its tensor inputs; afterwards each input whose copy was
  mutated receives the new value (``input.copy_``), as torch copies mutations back;
* aliasing of results: an input returned unmutated is returned itself; a view of an
  unmutated input stays a view of that input with ``remove="mutations"`` and is a copy with
  ``remove="mutations_and_views"``, which also turns every other view among the results into
  a copy; a result derived from a mutated input never aliases the input;
* inside ``func``, in-place ops and views behave exactly as in eager mode on the copies, except
  that an in-place op whose value is batched at a vmap level its target is not rebinds the
  target to the out-of-place result (the target's views do not see that write; torch's
  functionalization would propagate it).

Inputs that alias each other (``x`` and ``x[0]``) are copied separately.
"""
from __future__ import annotations

import functools

from ember._dispatch import Mode
from ember._tensor import Tensor
from ember.func._vmap import BatchedTensor, bottom, tree_flatten, tree_unflatten

__all__ = ["functionalize"]

_REMOVE = ("mutations", "mutations_and_views")


def _levels(t):
    """The vmap levels a tensor is batched at."""
    found = set()
    while type(t) is BatchedTensor:
        found.add(t._level)
        t = t._value
    return found


def _arg_levels(args):
    found = set()
    for a in args:
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(x, Tensor):
                found |= _levels(x)
    return found


def _version(t):
    """The version counter of the storage under ``t`` (below every vmap wrapper)."""
    return bottom(t)._version


def _rebind(target, value):
    """Make the Python object ``target`` hold ``value`` (shape, dtype, autograd, batching)."""
    value = value.to(target.dtype)
    if tuple(value.shape) != tuple(target.shape):
        raise RuntimeError(f"output with shape {list(target.shape)} doesn't match the "
                           f"broadcast shape {list(value.shape)}")
    for slot in ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_storage_base",
                 "_view_info", "_meta"):
        setattr(target, slot, getattr(value, slot))
    target.__dict__.update(value.__dict__)
    target.__class__ = type(value)


class _FunctionalizeMode(Mode):
    """Runs in-place ops in place unless the value is batched beyond the target; those run
    out of place and rebind the target (recorded in ``rebound``)."""

    def __init__(self):
        self.rebound = set()

    def __ember_dispatch__(self, op, args, kwargs):
        if not op.is_inplace or not args or not isinstance(args[0], Tensor):
            return op(*args, **kwargs)
        target = args[0]
        if not _arg_levels(args[1:]) - _levels(target):
            return op(*args, **kwargs)
        if op.functional.name == "copy":
            value = args[1].expand(target.shape).clone()
        else:
            value = op.functional(*args, **kwargs)
        _rebind(target, value)
        self.rebound.add(id(target))
        return target


def functionalize(func, *, remove="mutations"):
    """A function computing ``func``'s results without mutating its inputs while it runs;
    see this module's docstring for what is kept of torch's guarantees."""
    if remove not in _REMOVE:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for "
            f"remove={remove}. Valid options are:\n"
            "     remove='mutations': all inplace and out= operators will be removed from "
            "the program, and replaced with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing "
            "operators {view} will be replaced with their non-aliasing counterparts, "
            "{view}_copy.\n")

    @functools.wraps(func)
    def functionalized(*args, **kwargs):
        leaves, spec = tree_flatten((args, kwargs))
        copies = {}                 # id(input) -> (input, its copy, version of the copy)
        for x in leaves:
            if isinstance(x, Tensor) and id(x) not in copies:
                c = x.clone()
                copies[id(x)] = (x, c, _version(c))
        inner = [copies[id(x)][1] if isinstance(x, Tensor) else x for x in leaves]
        inner_args, inner_kwargs = tree_unflatten(inner, spec)
        mode = _FunctionalizeMode()
        with mode:
            result = func(*inner_args, **inner_kwargs)
        by_copy, mutated = {}, set()
        for x, c, version in copies.values():
            by_copy[id(c)] = x
            if _version(c) != version or id(c) in mode.rebound:
                mutated.add(id(c))
                x.copy_(c)
        out_leaves, out_spec = tree_flatten(result)
        return tree_unflatten([_result(o, by_copy, mutated, remove) for o in out_leaves],
                              out_spec)

    return functionalized


def _result(out, by_copy, mutated, remove):
    """A result of the wrapped call as torch's functionalize hands it back."""
    if not isinstance(out, Tensor):
        return out
    if id(out) in by_copy and id(out) not in mutated:
        return by_copy[id(out)]                     # an input, returned untouched
    base = out._base
    if base is None:
        return out
    if id(base) in by_copy and id(base) not in mutated and remove == "mutations":
        return _same_view(out, base, by_copy[id(base)])
    return out.clone() if remove == "mutations_and_views" else out


def _same_view(view, copy, original):
    """``view`` (a view of ``copy``) re-made on ``original``, whose copy ``copy`` is."""
    if copy.stride() != original.stride():
        return view.clone()
    offset = view.storage_offset() - copy.storage_offset() + original.storage_offset()
    return original.as_strided(view.size(), view.stride(), offset)
