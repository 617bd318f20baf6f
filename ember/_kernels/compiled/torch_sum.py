"""torch's CPU summation order (Note [torch's summation order] in ember/_kernels/
torch_sum.py), compiled: the same additions in the same order as the NumPy emulation there
(no fast-math: each lane is its own chain, which LLVM may vectorise across lanes but not
reassociate)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_OPTS = dict(cache=True, nogil=True)


@intrinsic
def _lane_blocks(typingctx, x_t, o_t, stride_t, step_t, blocks_t, W_t, acc1_t):
    """The cascade's first two levels over ``blocks`` blocks of ``step`` rows of W lanes (row
    j at x[o + j * stride:]): each block summed from zero, row by row, then added into
    acc1[:W] (in and out), each lane's additions in order; W a multiple of four 32-byte
    vectors. LLVM's vectorisers keep such per-lane chains in memory (or go scalar); here
    the accumulators are vectors in registers, so torch's order runs at memory speed."""
    dt = x_t.dtype
    i64t = types.int64
    sig = types.void(x_t, i64t, i64t, i64t, i64t, i64t, acc1_t)

    def codegen(context, builder, signature, args):
        x, o, stride, step, blocks, W, acc1 = args
        xp = context.make_array(signature.args[0])(context, builder, x).data
        ap = context.make_array(signature.args[6])(context, builder, acc1).data
        ft = context.get_value_type(dt)
        size = dt.bitwidth // 8
        L = 32 // size                             # lanes of a 32-byte vector
        vt = ir.VectorType(ft, L)
        i64 = ir.IntType(64)
        zero = ir.Constant(vt, [ir.Constant(ft, 0.0)] * L)
        level0 = [cgutils.alloca_once(builder, vt) for _ in range(4)]
        level1 = [cgutils.alloca_once(builder, vt) for _ in range(4)]

        def vector(base, offset):
            p = builder.gep(base, [builder.add(offset, ir.Constant(i64, 0))])
            return builder.bitcast(p, vt.as_pointer())

        groups = builder.sdiv(W, ir.Constant(i64, 4 * L))
        with cgutils.for_range(builder, groups) as group:
            lane0 = builder.mul(group.index, ir.Constant(i64, 4 * L))
            lanes = [builder.add(lane0, ir.Constant(i64, k * L)) for k in range(4)]
            for k in range(4):
                builder.store(builder.load(vector(ap, lanes[k]), align=size), level1[k])
            with cgutils.for_range(builder, blocks) as block:
                for a in level0:
                    builder.store(zero, a)
                first = builder.mul(block.index, step)
                with cgutils.for_range(builder, step) as row:
                    q = builder.add(o, builder.mul(builder.add(first, row.index), stride))
                    for k in range(4):
                        v = builder.load(vector(xp, builder.add(q, lanes[k])), align=size)
                        builder.store(builder.fadd(builder.load(level0[k]), v), level0[k])
                for k in range(4):
                    builder.store(builder.fadd(builder.load(level1[k]),
                                               builder.load(level0[k])), level1[k])
            for k in range(4):
                builder.store(builder.load(level1[k]), vector(ap, lanes[k]), align=size)
        return context.get_dummy_value()
    return sig, codegen


@njit(**_OPTS)
def _ceil_log2(n):
    r = 0
    while (1 << r) < n:
        r += 1
    return r


@njit(**_OPTS)
def _block(x, o, stride, step, W, acc):
    """acc[0, :W] = the sums from zero of ``step`` rows (row j at x[o + j * stride:]): one
    whole-row addition at a time (each lane its own chain: vectorised, order unchanged)."""
    a0 = acc[0, :W]
    a0[:] = 0
    for j in range(step):
        q = o + j * stride
        a0 += x[q:q + W]


@njit(**_OPTS)
def _carry(acc, W, i, mask, lp, first):
    """After the block ending at item i: level j - 1 is added into level j and cleared, for
    j = first, first + 1, ... while i is a multiple of step ** j (step = 2 ** lp)."""
    zero = acc.dtype.type(0)
    for j in range(first, 4):
        for k in range(W):
            acc[j, k] = acc[j, k] + acc[j - 1, k]
            acc[j - 1, k] = zero
        if i & (mask << (j * lp)):
            break


@njit(**_OPTS)
def _cascade(x, base, stride, size, W, acc, out):
    """out[:W] = the cascade over ``size`` rows of W lanes, row i at x[base + i * stride:];
    acc: scratch (4, >= W)."""
    lp = max(4, _ceil_log2(size) // 4)
    step = 1 << lp
    mask = step - 1
    zero = x.dtype.type(0)
    for j in range(4):
        for k in range(W):
            acc[j, k] = zero
    i = 0
    if W % (128 // x.itemsize) == 0:        # whole vectors: levels 0 and 1 in registers
        super_step = step << lp
        while i + step <= size:
            blocks = min((super_step - (i & (super_step - 1))) // step, (size - i) // step)
            _lane_blocks(x, base + i * stride, stride, step, blocks, W, acc[1, :W])
            i += blocks * step
            if i & (super_step - 1) == 0:
                _carry(acc, W, i, mask, lp, 2)
    while i + step <= size:
        _block(x, base + i * stride, stride, step, W, acc)
        i += step
        _carry(acc, W, i, mask, lp, 1)
    while i < size:
        o = base + i * stride
        for k in range(W):
            acc[0, k] = acc[0, k] + x[o + k]
        i += 1
    for k in range(W):
        out[k] = ((acc[0, k] + acc[1, k]) + acc[2, k]) + acc[3, k]


@njit(**_OPTS)
def run_sum(x, lo, n, V, acc, lanes):
    """The sum of the contiguous run x[lo:lo + n] (V lanes a vector)."""
    zero = x.dtype.type(0)
    vs = n // V
    if vs == 0:                         # four scalar accumulators
        si = n // 4
        if si:
            _cascade(x, lo, 4, si, 4, acc, lanes)
        else:
            for k in range(4):
                lanes[k] = zero
        s = lanes[0]
        for i in range(lo + si * 4, lo + n):
            s = s + x[i]
        return ((s + lanes[1]) + lanes[2]) + lanes[3]
    W = 4 * V
    si = vs // 4
    if si:
        _cascade(x, lo, W, si, W, acc, lanes)
    else:
        for k in range(W):
            lanes[k] = zero
    for r in range(si * 4, vs):         # whole vectors after the rows of four
        o = lo + r * V
        for k in range(V):
            lanes[k] = lanes[k] + x[o + k]
    for q in range(1, 4):
        for k in range(V):
            lanes[k] = lanes[k] + lanes[q * V + k]
    s = zero
    for i in range(lo + vs * V, lo + n):
        s = s + x[i]
    for k in range(V):
        s = s + lanes[k]
    return s


@njit(**_OPTS)
def rows_sum(x, M, n, V, out):
    """out[i] = the sum of the contiguous run x[i * n:(i + 1) * n], i < M (x flat)."""
    acc = np.empty((4, 4 * V), x.dtype)
    lanes = np.empty(4 * V, x.dtype)
    for i in range(M):
        out[i] = run_sum(x, i * n, n, V, acc, lanes)


@njit(**_OPTS)
def columns_sum(x, A, R, C, V, out):
    """out (A * C,): x flat (A, R, C) summed over R."""
    g = 4 * V if C >= V else 4
    cv = C // g * g
    acc = np.empty((4, max(cv, 4)), x.dtype)
    lanes = np.empty((4, 4), x.dtype)
    zero = x.dtype.type(0)
    for a in range(A):
        base = a * R * C
        if cv:
            _cascade(x, base, C, R, cv, acc, out[a * C:a * C + cv])
        si = R // 4
        for j in range(cv, C):          # four accumulators over the rows, per column
            col = np.empty(4, x.dtype)
            if si:
                _cascade(x, base + j, 4 * C, si, 1, lanes, col[0:1])
                _cascade(x, base + j + C, 4 * C, si, 1, lanes, col[1:2])
                _cascade(x, base + j + 2 * C, 4 * C, si, 1, lanes, col[2:3])
                _cascade(x, base + j + 3 * C, 4 * C, si, 1, lanes, col[3:4])
            else:
                for k in range(4):
                    col[k] = zero
            s = col[0]
            for r in range(si * 4, R):
                s = s + x[base + r * C + j]
            out[a * C + j] = (((s + col[1]) + col[2]) + col[3]) + zero


@njit(**_OPTS)
def chunk_sum(x, lo, n, V):
    """run_sum with its own scratch (for one thread's chunk of a full sum)."""
    acc = np.empty((4, 4 * V), x.dtype)
    lanes = np.empty(4 * V, x.dtype)
    return run_sum(x, lo, n, V, acc, lanes)
