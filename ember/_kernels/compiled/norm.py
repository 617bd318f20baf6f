"""numba kernel for float32 2-norms in torch's order (Note [float32 2-norm order] in
ember/_kernels/reduction.py), imported through reduction.py when numba is present and not
switched off: the NumPy path's additions in one pass, the eight lanes one vector register
(1M values: the NumPy passes ~4 ms, this well under 1)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ember._kernels.compiled.intrinsics import fma


@intrinsic
def _square_lanes(typingctx, x_t, base_t, blocks_t, out_t):
    """out[:8] = lane l's sum from zero, in order, of the rounded squares of x[base + 8 b + l],
    b < blocks (float32): one 8-lane vector accumulator (multiply, then add: no fusion)."""
    sig = types.void(x_t, types.int64, types.int64, out_t)

    def codegen(context, builder, signature, args):
        x, base, blocks, out = args
        xp = context.make_array(signature.args[0])(context, builder, x).data
        op = context.make_array(signature.args[3])(context, builder, out).data
        ft = ir.FloatType()
        vt = ir.VectorType(ft, 8)
        i64 = ir.IntType(64)
        acc = cgutils.alloca_once(builder, vt)
        builder.store(ir.Constant(vt, [ir.Constant(ft, 0.0)] * 8), acc)
        with cgutils.for_range(builder, blocks) as block:
            at = builder.add(base, builder.mul(block.index, ir.Constant(i64, 8)))
            p = builder.bitcast(builder.gep(xp, [at]), vt.as_pointer())
            v = builder.load(p, align=4)
            builder.store(builder.fadd(builder.load(acc), builder.fmul(v, v)), acc)
        builder.store(builder.load(acc), builder.bitcast(op, vt.as_pointer()), align=4)
        return context.get_dummy_value()
    return sig, codegen


@njit(cache=True, nogil=True)
def rows_norm2(x, rows, n, out):
    """out[r] = the 2-norm of x[r * n:(r + 1) * n] (flat float32 x): eight lanes of rounded
    squares over the whole blocks of 8, the lanes added in order, then 4 rounded squares
    added one by one when 4 or more elements remain, the last ones as fused multiply-adds."""
    m = n // 8 * 8
    lanes = np.empty(8, np.float32)
    for r in range(rows):
        base = r * n
        _square_lanes(x, base, m // 8, lanes)
        s = lanes[0]
        for k in range(1, 8):
            s += lanes[k]
        j = base + m
        if n - m >= 4:
            for i in range(j, j + 4):
                s += x[i] * x[i]
            j += 4
        for i in range(j, base + n):
            s = fma(x[i], x[i], s)
        out[r] = np.sqrt(s)
