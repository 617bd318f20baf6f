"""LLVM intrinsics for ember's numba kernels."""
from __future__ import annotations

from numba import types
from numba.core.extending import intrinsic


@intrinsic
def fma(typingctx, x, y, z):
    """``x * y + z`` rounded once, in the operands' float type (LLVM's ``llvm.fma``: the
    CPU's fused multiply-add, or an exact library call where there is none; vectorises).
    torch's CPU add/sub with ``alpha``, ``addcmul`` and ``lerp`` round this way."""
    if not (x == y == z and isinstance(x, types.Float)):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return x(x, y, z), codegen
