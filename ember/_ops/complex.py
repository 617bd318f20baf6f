"""Complex-number op records: ``view_as_real`` / ``view_as_complex`` (views sharing memory,
like torch) and the conjugate/negative-bit API.

ember has no lazy conjugate or negative bit: ``conj`` materialises (it is
``conj_physical`` for complex tensors, see ``ember/_ops/core.py``). So ``is_conj`` and
``is_neg`` are always False, and ``resolve_conj`` / ``resolve_neg`` return their input.
"""
from __future__ import annotations

from ember._kernels import complex as K
from ember._ops.registry import defop, public

view_as_real = defop("view_as_real(Tensor(a) self) -> Tensor(a)", K.view_as_real,
                     promote=None, method=False)
view_as_complex = defop("view_as_complex(Tensor(a) self) -> Tensor(a)", K.view_as_complex,
                        promote=None, method=False)


@view_as_real.def_backward
def _(ctx, g, self):
    return view_as_complex(g.contiguous())


@view_as_complex.def_backward
def _(ctx, g, self):
    return view_as_real(g)


@public("is_conj", method=True)
def is_conj(input):
    """Always False: ember conjugates eagerly (no lazy conjugate bit)."""
    return False


@public("is_neg", method=True)
def is_neg(input):
    """Always False: ember has no lazy negative bit."""
    return False


@public("resolve_conj", method=True)
def resolve_conj(input):
    """``input`` itself (its conjugate bit is never set in ember)."""
    return input


@public("resolve_neg", method=True)
def resolve_neg(input):
    """``input`` itself (its negative bit is never set in ember)."""
    return input
