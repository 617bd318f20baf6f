"""``torch.torch_version``: ``TorchVersion``, the type of ``ember.__version__``.

ember implements torch 2.13's API, so ``ember.__version__`` is ``"2.13.0+ember<version>"``:
programs that branch on ``torch.__version__`` take the paths of the API ember follows.
Like torch's, it is a ``str`` that also compares by version order with strings and tuples
(``__version__ >= "2.0"``, ``__version__ >= (2, 1)``); ``==`` stays string equality.
"""
from __future__ import annotations

import re

__all__ = ["TorchVersion", "Version", "InvalidVersion"]

_VERSION = re.compile(
    r"^\s*v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?(?P<post>post|rev|r)[-_.]?(?P<post_n>\d*))?"
    r"(?:[-_.]?(?P<dev>dev)[-_.]?(?P<dev_n>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$", re.IGNORECASE)
_PHASE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_INF = float("inf")


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version."""


def _key(text):
    """A tuple ordering versions as PEP 440 does: release (trailing zeros dropped), then
    dev < pre-releases < final < post, then the local label."""
    m = _VERSION.match(text)
    if m is None:
        raise InvalidVersion(f"Invalid version: {text!r}")
    release = [int(p) for p in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    if m["pre"]:
        pre = (_PHASE[m["pre"].lower()], int(m["pre_n"] or 0))
    elif m["dev"] and not m["post"]:
        pre = (-1, 0)                          # 1.0.dev1 sorts before 1.0a1
    else:
        pre = (_INF, 0)
    post = int(m["post_n"] or 0) if m["post"] else -1
    dev = int(m["dev_n"] or 0) if m["dev"] else _INF
    local = tuple((0, int(s), "") if s.isdigit() else (-1, 0, s.lower())
                  for s in re.split(r"[-_.]", m["local"])) if m["local"] else ()
    return tuple(release), pre, post, dev, local


def _other_key(other):
    if isinstance(other, tuple):
        return _key(".".join(str(int(x)) for x in other))
    if isinstance(other, str):
        return _key(other)
    return NotImplemented


class Version:
    """A parsed version (the part of ``packaging.version.Version`` torch re-exports)."""

    def __init__(self, text):
        self._text = str(text)
        self._k = _key(self._text)

    def __repr__(self):
        return f"<Version('{self._text}')>"

    def __str__(self):
        return self._text

    def __eq__(self, other):
        return isinstance(other, Version) and self._k == other._k

    def __hash__(self):
        return hash(self._k)

    def __lt__(self, other):
        return self._k < other._k if isinstance(other, Version) else NotImplemented

    def __le__(self, other):
        return self._k <= other._k if isinstance(other, Version) else NotImplemented

    def __gt__(self, other):
        return self._k > other._k if isinstance(other, Version) else NotImplemented

    def __ge__(self, other):
        return self._k >= other._k if isinstance(other, Version) else NotImplemented


class TorchVersion(str):
    """A version string comparable with strings and tuples by version order."""

    def _compare(self, other, test):
        theirs = other._k if isinstance(other, Version) else _other_key(other)
        if theirs is NotImplemented:
            return NotImplemented
        return test(_key(self), theirs)

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b)

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b)

    __eq__ = str.__eq__
    __hash__ = str.__hash__
