"""``rearrange(tensor, pattern, **axes_lengths)`` (torch.func.rearrange, einops' rearrange):
transpose, reshape, squeeze/unsqueeze and stack written as ``"b (h h1) w -> b h (h1 w)"``.

A side of the pattern is a list of groups; a group is one axis, ``(composed axes)``, ``1`` or
``()`` (a unit axis) or ``...`` (the dims left over).  The input is viewed as its elementary
axes, permuted into the right side's order, and reshaped into the right side's groups;
the result is a view of the input whenever ``reshape`` can make one.  A list or tuple of
tensors is stacked along a new first dim first.
"""
from __future__ import annotations

import math

import ember
from ember._tensor import Tensor

__all__ = ["rearrange", "DimensionBindError"]

_ELLIPSIS = "…"


class DimensionBindError(Exception):
    """The axis lengths cannot be made to fit the tensor's shape."""


def _parse(side):
    """Groups of ``side``: lists of axis names (``[]`` is a unit axis); a standalone
    ``...`` is the tuple ``(_ELLIPSIS,)``, one inside parentheses an entry of its list."""
    text = side.replace("...", f" {_ELLIPSIS} ")
    if "." in text:
        raise ValueError("Expression may contain dots only inside ellipsis (...); only one "
                         "ellipsis for tensor ")
    groups, current, name = [], None, ""
    for ch in text + " ":
        if ch.isalnum() or ch == "_":
            name += ch
            continue
        if name or ch == _ELLIPSIS:
            token = name or _ELLIPSIS
            name = ""
            if token.isdigit() and token != "1":
                raise ValueError("rearrange only supports unnamed axes of size 1")
            axes = [] if token == "1" else [token]
            if current is None:     # a standalone "..." is the tuple (_ELLIPSIS,)
                groups.append((_ELLIPSIS,) if token == _ELLIPSIS else axes)
            else:
                current.extend(axes)
            if ch == _ELLIPSIS:
                continue
        if ch.isspace() or ch == _ELLIPSIS:
            continue
        if ch == "(":
            if current is not None:
                raise ValueError("Axis composition is one-level (brackets inside brackets "
                                 "not allowed)")
            current = []
        elif ch == ")":
            if current is None:
                raise ValueError(f"Imbalanced parentheses in expression: '{side}'")
            groups.append(current)
            current = None
        else:
            raise ValueError(f"Unknown character '{ch}'")
    if current is not None:
        raise ValueError(f"Imbalanced parentheses in expression: '{side}'")
    names = [a for g in groups for a in g]
    if names.count(_ELLIPSIS) > 1:
        raise ValueError("Expression may contain dots only inside ellipsis (...); only one "
                         "ellipsis for tensor ")
    for a in names:
        if a != _ELLIPSIS and names.count(a) > 1:
            raise ValueError(f"Indexing expression contains duplicate dimension '{a}'")
    return groups


def _bind(groups, shape, lengths):
    """Each elementary axis's length, matching ``groups`` against ``shape``."""
    sizes = dict(lengths)
    for group, size in zip(groups, shape):
        unknown = [a for a in group if a not in sizes]
        known = math.prod(sizes[a] for a in group if a in sizes)
        if len(unknown) > 1:
            raise DimensionBindError(f"cannot infer the sizes of two dimensions at once "
                                     f"{unknown[0]} and {unknown[1]}")
        if unknown:
            if known == 0 or size % known:
                raise DimensionBindError(f"inferred dimension does not evenly fit into larger "
                                         f"dimension: {size} vs ('?', {known})")
            sizes[unknown[0]] = size // known
        elif known != size:
            raise DimensionBindError(f"Dimension sizes to do not match ({size} != {known}) "
                                     f"when matching dimension pack ({', '.join(group)},)")
    return sizes


def _expand_ellipsis(groups, count):
    """Replace ``...`` by ``count`` single-axis groups (or, in parentheses, axes)."""
    out = []
    for g in groups:
        if g == (_ELLIPSIS,):
            out.extend([[f"{_ELLIPSIS}{i}"] for i in range(count)])
        elif _ELLIPSIS in g:    # "(a ...)" (right side): the leftover dims in one group
            at = g.index(_ELLIPSIS)
            out.append(g[:at] + [f"{_ELLIPSIS}{i}" for i in range(count)] + g[at + 1:])
        else:
            out.append(g)
    return out


def rearrange(tensor, pattern, **axes_lengths):
    """Reorder/reshape ``tensor`` as ``pattern`` ("left -> right") says."""
    if isinstance(tensor, (list, tuple)):
        tensor = ember.stack(list(tensor))
    if not isinstance(tensor, Tensor):
        raise TypeError(f"rearrange(): expected a Tensor or a sequence of Tensors, got "
                        f"{type(tensor).__name__}")
    sides = pattern.split("->")
    if len(sides) != 2:
        raise ValueError("Pattern must contain a single '->' separator")
    left, right = (_parse(s) for s in sides)
    left_names = {a for g in left for a in g}
    right_names = {a for g in right for a in g}
    if _ELLIPSIS in right_names - left_names:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern "
                         f"{pattern}")
    if _ELLIPSIS in left_names - right_names:
        raise ValueError(f"Ellipsis found in left side, but not right side of a pattern "
                         f"{pattern}")
    lonely = left_names ^ right_names
    if lonely:
        raise ValueError(f"Identifiers only on one side of rearrange expression (should be "
                         f"on both): {lonely}")
    unused = set(axes_lengths) - left_names
    if unused:
        raise ValueError(f"Identifiers not found in rearrange expression: {unused}")
    if any(_ELLIPSIS in g and isinstance(g, list) for g in left):
        raise ValueError("Ellipsis inside parenthesis in the left side is not allowed")
    has_ellipsis = (_ELLIPSIS,) in left
    fixed = len(left) - has_ellipsis
    if fixed > tensor.dim() or (fixed != tensor.dim() and not has_ellipsis):
        relation = "at most" if has_ellipsis else "equal to"
        raise ValueError(f"Number of dimensions in pattern ({fixed}) must be {relation} the "
                         f"number of dimensions in the tensor ({tensor.dim()})")
    extra = tensor.dim() - fixed
    left, right = _expand_ellipsis(left, extra), _expand_ellipsis(right, extra)
    sizes = _bind(left, tensor.shape, axes_lengths)
    order = [a for g in left for a in g]
    wanted = [a for g in right for a in g]
    x = tensor.reshape([sizes[a] for a in order])
    x = x.permute([order.index(a) for a in wanted])
    return x.reshape([math.prod(sizes[a] for a in g) for g in right])
