"""Parse ATen-style op schemas: ``add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor``.

A schema names the arguments, their types and defaults, which are keyword-only, and alias
annotations: ``Tensor(a) self ... -> Tensor(a)`` marks a view, ``Tensor(a!) self`` an
argument written in place.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_NO_DEFAULT = object()


@dataclass(frozen=True)
class Arg:
    name: str
    type: str            # base type without '?' / '[]': Tensor, Scalar, int, float, bool, str, ...
    optional: bool       # 'T?'
    is_list: bool        # 'T[]' or 'T[N]'
    default: object      # _NO_DEFAULT when required
    kwarg_only: bool
    alias: str | None    # 'a', 'a!' ...

    @property
    def is_tensor(self):
        return self.type == "Tensor" and not self.is_list

    @property
    def is_tensor_list(self):
        return self.type == "Tensor" and self.is_list

    @property
    def has_default(self):
        return self.default is not _NO_DEFAULT


@dataclass(frozen=True)
class Schema:
    name: str
    overload: str
    args: tuple
    returns: tuple        # tuple of (type string, alias or None, name or None)

    @property
    def full_name(self):
        return f"{self.name}.{self.overload}" if self.overload else self.name


def _split_top(s: str, sep=","):
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_TYPE_RE = re.compile(r"^(\w+)(\((\w!?)\))?(\[\d*\])?(\?)?$")


def _parse_default(text):
    text = text.strip()
    if text in ("None",):
        return None
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    if text == "[]":
        return ()
    if text.startswith("[") and text.endswith("]"):
        return tuple(ast.literal_eval(text))
    if text in ("contiguous_format", "Mean", "mean"):
        return text
    return ast.literal_eval(text)


def _parse_type(t):
    m = _TYPE_RE.match(t.replace(" ", ""))
    if not m:
        raise ValueError(f"bad schema type {t!r}")
    base, _, alias, lst, opt = m.groups()
    return base, alias, bool(lst), bool(opt)


def parse(schema: str) -> Schema:
    head, _, ret = schema.partition("->")
    head = head.strip()
    name_part, _, arg_part = head.partition("(")
    arg_part = arg_part[: arg_part.rindex(")")]
    name, _, overload = name_part.strip().partition(".")
    args, kwarg_only = [], False
    for item in _split_top(arg_part):
        if item == "*":
            kwarg_only = True
            continue
        decl, eq, default = item.partition("=")
        decl = decl.strip()
        typ, _, argname = decl.rpartition(" ")
        base, alias, is_list, optional = _parse_type(typ)
        args.append(Arg(argname, base, optional, is_list,
                        _parse_default(default) if eq else _NO_DEFAULT, kwarg_only, alias))
    ret = ret.strip()
    if ret.startswith("(") and ret.endswith(")"):
        parts = _split_top(ret[1:-1])
    elif ret == "()" or not ret:
        parts = []
    else:
        parts = [ret]
    returns = []
    for p in parts:
        typ, _, rname = p.partition(" ")
        base, alias, is_list, _ = _parse_type(typ)
        returns.append((base + ("[]" if is_list else ""), alias, rname.strip() or None))
    return Schema(name, overload, tuple(args), tuple(returns))
