"""float32 GEMM on a register-blocked micro-kernel written in LLVM IR (Note [own GEMM]).

C (m, n) = A (m, k) @ B (k, n), optionally + C_in. A is packed into tiles of ``R`` rows,
each a (k, R) block (``pack_a``); B and C are read and written in place, rows ``ldb`` /
``ldc`` floats apart with unit-stride columns. The micro-kernel keeps an R x 32 tile of C
in 24 vector registers of 16 floats and runs down k: per step two vector loads of B's row
and R broadcasts of A's column, 24 fused multiply-adds. Every element of C is one chain of
fused multiply-adds in k order (from 0 or from C_in), so the bits do not depend on how the
tiles are split over threads.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.core.extending import intrinsic

from ember._kernels.compiled.intrinsics import float32_at as _f32

R = 12          # rows of a tile (A's packing)
W = 16          # floats in a vector
_OPTS = dict(cache=True, nogil=True)


def _vector_function(builder, name, ret, args):
    module = builder.module
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args), name)


def _microkernel(nv):
    """The micro-kernel over ``nv`` vectors of columns (nv * 16 columns, the last vector
    holding ``tail`` of them, 1..16): ``mk(a, b, ldb, c_in, beta, c, ldc, k, rows, tail)``
    with int64 addresses; a: a packed (k, R) tile; rows: C's rows of the tile to write
    (the others are A's zero padding); C_in's rows lie ldc apart like C's. beta 0: C = the
    chain from zeros; 1: the chain from C_in; 2: C_in + the chain from zeros."""

    @intrinsic
    def mk(typingctx, a, b, ldb, c_in, beta, c, ldc, k, rows, tail):
        def codegen(context, builder, signature, args):
            a, b, ldb, c_in, beta, c, ldc, k, rows, tail = args
            f32, i1, i32, i64 = ir.FloatType(), ir.IntType(1), ir.IntType(32), ir.IntType(64)
            vec, mvec = ir.VectorType(f32, W), ir.VectorType(i1, W)
            pf, pv = f32.as_pointer(), vec.as_pointer()
            fma = _vector_function(builder, "llvm.fma.v16f32", vec, [vec, vec, vec])
            mload = _vector_function(builder, "llvm.masked.load.v16f32.p0v16f32", vec,
                                     [pv, i32, mvec, vec])
            mstore = _vector_function(builder, "llvm.masked.store.v16f32.p0v16f32",
                                      ir.VoidType(), [vec, pv, i32, mvec])
            ap, bp = builder.inttoptr(a, pf), builder.inttoptr(b, pf)
            cinp, cp = builder.inttoptr(c_in, pf), builder.inttoptr(c, pf)
            zero = ir.Constant(vec, None)
            align = ir.Constant(i32, 4)
            lanes = ir.Constant(ir.VectorType(i32, W), list(range(W)))
            tail_v = builder.insert_element(ir.Constant(ir.VectorType(i32, W), ir.Undefined),
                                            builder.trunc(tail, i32), ir.Constant(i32, 0))
            tail_v = builder.shuffle_vector(tail_v, ir.Constant(ir.VectorType(i32, W),
                                                                ir.Undefined),
                                            ir.Constant(ir.VectorType(i32, W), [0] * W))
            last = builder.icmp_unsigned("<", lanes, tail_v)
            full = ir.Constant(mvec, [1] * W)
            none = ir.Constant(mvec, [0] * W)
            col_mask = [full] * (nv - 1) + [last]

            def at(base, row_stride, r, v):
                off = builder.add(builder.mul(ir.Constant(i64, r), row_stride),
                                  ir.Constant(i64, W * v))
                return builder.bitcast(builder.gep(base, [off]), pv)

            add_cin = builder.icmp_signed("==", beta, ir.Constant(i64, 2))
            use_cin = builder.icmp_signed("==", beta, ir.Constant(i64, 1))
            masks, init = [], []
            for r in range(R):
                live = builder.icmp_signed("<", ir.Constant(i64, r), rows)
                masks.append([builder.select(live, col_mask[v], none) for v in range(nv)])
                init.append([builder.call(mload, [at(cinp, ldc, r, v), align, builder.select(
                    use_cin, masks[r][v], none), zero]) for v in range(nv)])
            entry = builder.block
            loop = builder.append_basic_block("gemm_k")
            done = builder.append_basic_block("gemm_done")
            builder.cbranch(builder.icmp_signed(">", k, ir.Constant(i64, 0)), loop, done)

            builder.position_at_end(loop)
            kk = builder.phi(i64)
            acc = [[builder.phi(vec) for _ in range(nv)] for _ in range(R)]
            brow = builder.mul(kk, ldb)
            bv = [builder.call(mload, [builder.bitcast(builder.gep(
                bp, [builder.add(brow, ir.Constant(i64, W * v))]), pv), align, col_mask[v],
                zero]) for v in range(nv)]
            arow = builder.mul(kk, ir.Constant(i64, R))
            splat = ir.Constant(ir.VectorType(i32, W), [0] * W)
            new = []
            for r in range(R):
                s = builder.load(builder.gep(ap, [builder.add(arow, ir.Constant(i64, r))]),
                                 align=4)
                sv = builder.insert_element(ir.Constant(vec, ir.Undefined), s,
                                            ir.Constant(i32, 0))
                sv = builder.shuffle_vector(sv, ir.Constant(vec, ir.Undefined), splat)
                new.append([builder.call(fma, [sv, bv[v], acc[r][v]]) for v in range(nv)])
            k1 = builder.add(kk, ir.Constant(i64, 1))
            body_end = builder.block
            kk.add_incoming(ir.Constant(i64, 0), entry)
            kk.add_incoming(k1, body_end)
            for r in range(R):
                for v in range(nv):
                    acc[r][v].add_incoming(init[r][v], entry)
                    acc[r][v].add_incoming(new[r][v], body_end)
            builder.cbranch(builder.icmp_signed("<", k1, k), loop, done)

            builder.position_at_end(done)
            result = []
            for r in range(R):
                row = []
                for v in range(nv):
                    p = builder.phi(vec)
                    p.add_incoming(init[r][v], entry)
                    p.add_incoming(new[r][v], body_end)
                    row.append(p)
                result.append(row)
            for r in range(R):
                for v in range(nv):
                    later = builder.call(mload, [at(cinp, ldc, r, v), align, builder.select(
                        add_cin, masks[r][v], none), zero])
                    total = builder.fadd(result[r][v], later)
                    builder.call(mstore, [builder.select(add_cin, total, result[r][v]),
                                          at(cp, ldc, r, v), align, masks[r][v]])
            return context.get_dummy_value()
        i64 = types.int64
        return types.void(*([i64] * 10)), codegen
    return mk


_mk1, _mk2 = _microkernel(1), _microkernel(2)


KC = 256        # depth of a block of k: B's 32-column panel block (32 KiB) stays in L1


@njit(**_OPTS)
def tiles(a, b, ldb, n, c_in, beta, c, ldc, m, k, t0, t1, depth):
    """C rows of the tiles [t0, t1) (rows t*R up to m): C = A B (+ C_in when beta != 0).
    Addresses (int64): a the packed tiles (``pack_a``), b, c, c_in; ldb, ldc in floats.
    ``depth`` > 0: k summed in blocks of ``depth``, each its own chain added to the sum of
    those before (Note [GEMM depth] in nn_conv.py); 0: one chain over all of k.
    Blocked like GotoBLAS: k in blocks of KC without ``depth`` (C itself then carries the
    running value, so the chain of each element is unchanged: the same bits), a run of tiles whose A block
    stays in the L2 cache, and 32-column panels of B; a panel whose rows lie 4 KiB or more
    apart is first copied together (such rows share the L1 cache's few sets: 64x288 @
    288x12544 ran at half speed)."""
    per_block = max(1, (1 << 17) // (min(k, max(KC, depth)) * R))   # ~512 KiB of A a block
    copy = ldb >= 1024 and t1 - t0 > 1
    panel = np.empty((KC, 2 * W) if copy else (0, 2 * W), np.float32)
    bm = carray(_f32(b), (k, ldb)) if copy else panel
    span = depth if 0 < depth < k else k
    for q0 in range(t0, t1, per_block):
        q1 = min(t1, q0 + per_block)
        k0 = 0
        while k0 < k:
            # a block of the depth runs whole (its chain must end before C is added)
            kb = min(k - k0, span - k0 % span) if span < k else min(KC, k - k0)
            if k0 == 0:
                mode = beta
            elif k0 % span == 0:
                mode = 2                    # a new block of the depth: its own chain
            else:
                mode = 1
            col = 0
            while col < n:
                left = n - col
                width = min(left, 2 * W)
                if copy:
                    for j in range(kb):
                        for q in range(width):
                            panel[j, q] = bm[k0 + j, col + q]
                    src, ld = panel.ctypes.data, 2 * W
                else:
                    src, ld = b + (k0 * ldb + col) * 4, ldb
                for t in range(q0, q1):
                    rows = min(R, m - t * R)
                    at = a + (t * k + k0) * R * 4
                    off = (t * R * ldc + col) * 4
                    start = c_in + off if k0 == 0 and beta else c + off
                    if left > W:
                        _mk2(at, src, ld, start, mode, c + off, ldc, kb, rows,
                             min(W, left - W))
                    else:
                        _mk1(at, src, ld, start, mode, c + off, ldc, kb, rows, left)
                col += 2 * W
            k0 += kb


@njit(**_OPTS)
def pack_a(a, out):
    """out (ceil(m / R), k, R) = A (m, k)'s rows in tiles of R, each tile k-major; rows past
    m are zeros."""
    m, k = a.shape
    for t in range(out.shape[0]):
        for r in range(R):
            i = t * R + r
            if i < m:
                for j in range(k):
                    out[t, j, r] = a[i, j]
            else:
                for j in range(k):
                    out[t, j, r] = 0


@njit(**_OPTS)
def pack_a_t(at, out):
    """``pack_a`` of A = at.T (at (k, m)): reads at's rows contiguously."""
    k, m = at.shape
    for t in range(out.shape[0]):
        for j in range(k):
            for r in range(R):
                i = t * R + r
                out[t, j, r] = at[j, i] if i < m else np.float32(0)
