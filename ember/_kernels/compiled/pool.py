"""numba ``cfunc`` wrappers that run ember's compiled kernels over one part of a range, for
OpenBLAS's threads (Note [one pool] in ember/_kernels/blas_pool.py).

Each wrapper has OpenBLAS's legacy level-1 signature ``(m, n, k, alpha, a, lda, b, ldb, c,
ldc, sb)``: its part is items ``[a // 8, a // 8 + m)``, ``c`` is the address of its int64
context (``n`` values: array addresses and sizes, float64 bits of scalars) and the rest is
unused. The kernels themselves are the njit functions beside this module, unchanged.
"""
from __future__ import annotations

import numpy as np
from numba import carray, cfunc, literal_unroll, njit, types
from numba.core.extending import intrinsic, overload

from ember._kernels.compiled import (attention, elementwise, gelu, gemm, layer_norm, rnn,
                                     softmax, torch_sum)

_SIG = types.void(types.int64, types.int64, types.int64, types.float64, types.int64,
                  types.int64, types.int64, types.int64, types.int64, types.int64,
                  types.voidptr)


def _pointer_to(item):
    @intrinsic
    def cast(typingctx, address):
        sig = types.CPointer(item)(types.int64)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(sig.return_type))
        return sig, codegen
    return cast


_i64, _f64, _f32, _u8 = (_pointer_to(t) for t in (types.int64, types.float64, types.float32,
                                                   types.uint8))



def _word(value, out, i):
    """Python stub of the context word writer below (compiled only)."""


@overload(_word)
def _word_typed(value, out, i):
    if isinstance(value, types.Array):
        def array(value, out, i):
            out[i] = value.ctypes.data
        return array
    if isinstance(value, types.Float):
        def real(value, out, i):
            out[i:i + 1].view(np.float64)[0] = value
        return real
    if isinstance(value, (types.Integer, types.Boolean)):
        def integer(value, out, i):
            out[i] = value
        return integer
    return None


@njit(cache=True)
def context(*values):
    """blas_pool.context compiled: arrays give their address, floats their float64 bits,
    ints themselves (~2.5 us for ten values where the Python loop took ~11)."""
    out = np.empty(len(values), np.int64)
    i = 0
    for v in literal_unroll(values):
        _word(v, out, i)
        i += 1
    return out

@cfunc(_SIG, nopython=True, cache=True)
def probe(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [out (int64), size]: out[i] = i over the part (blas_pool's first-use check)."""
    ctx = carray(_i64(c), (n,))
    out = carray(_i64(ctx[0]), (ctx[1],))
    lo = a >> 3
    for i in range(lo, lo + m):
        out[i] = i


@cfunc(_SIG, nopython=True, cache=True)
def add_scaled(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [a, b, out, size, s] (flat float32, s as float64 bits): out = a + float32(s) * b
    rounded once (out may be a)."""
    ctx = carray(_i64(c), (n,))
    size = ctx[3]
    s = np.float32(carray(_f64(c), (n,))[4])
    lo, hi = a >> 3, (a >> 3) + m
    x, y = carray(_f32(ctx[0]), (size,))[lo:hi], carray(_f32(ctx[1]), (size,))[lo:hi]
    if ctx[2] == ctx[0]:
        elementwise.add_scaled_(x, y, s)
    else:
        elementwise.add_scaled(x, y, s, carray(_f32(ctx[2]), (size,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def gelu_forward(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, out, size] (flat float32): out = gelu(x)."""
    ctx = carray(_i64(c), (n,))
    size = ctx[2]
    lo = a >> 3
    gelu.gelu(carray(_f32(ctx[0]), (size,))[lo:lo + m], carray(_f32(ctx[1]), (size,))[lo:lo + m])


@cfunc(_SIG, nopython=True, cache=True)
def gelu_backward(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, grad, out, size] (flat float32): out = grad * gelu'(x)."""
    ctx = carray(_i64(c), (n,))
    size = ctx[3]
    lo, hi = a >> 3, (a >> 3) + m
    gelu.gelu_backward(carray(_f32(ctx[0]), (size,))[lo:hi],
                       carray(_f32(ctx[1]), (size,))[lo:hi],
                       carray(_f32(ctx[2]), (size,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def gelu_train(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, out, factor, size] (flat float32): out = gelu(x), factor = gelu'(x)."""
    ctx = carray(_i64(c), (n,))
    size = ctx[3]
    lo, hi = a >> 3, (a >> 3) + m
    gelu.gelu_train(carray(_f32(ctx[0]), (size,))[lo:hi],
                    carray(_f32(ctx[1]), (size,))[lo:hi],
                    carray(_f32(ctx[2]), (size,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def layer_norm_forward(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, w, b, y, R, C, eps]: rows of y (R, C) = layer_norm(x rows) * w + b."""
    ctx = carray(_i64(c), (n,))
    R, C = ctx[4], ctx[5]
    eps = carray(_f64(c), (n,))[6]
    lo, hi = a >> 3, (a >> 3) + m
    layer_norm.forward(carray(_f32(ctx[0]), (R, C))[lo:hi], carray(_f32(ctx[1]), (C,)),
                       carray(_f32(ctx[2]), (C,)), eps, carray(_f32(ctx[3]), (R, C))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def layer_norm_backward(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [g, x, w, gx, gw_parts, gb_parts, R, C, eps, block]: items are blocks of ``block``
    rows; block i adds its rows' weight and bias gradients into row i of the float32
    (blocks, C) parts (summed by the caller in float64, in block order: bits do not depend
    on threads)."""
    ctx = carray(_i64(c), (n,))
    R, C, block = ctx[6], ctx[7], ctx[9]
    eps = carray(_f64(c), (n,))[8]
    blocks = (R + block - 1) // block
    g, x = carray(_f32(ctx[0]), (R, C)), carray(_f32(ctx[1]), (R, C))
    w, gx = carray(_f32(ctx[2]), (C,)), carray(_f32(ctx[3]), (R, C))
    gw, gb = carray(_f32(ctx[4]), (blocks, C)), carray(_f32(ctx[5]), (blocks, C))
    lo = a >> 3
    for i in range(lo, lo + m):
        r0, r1 = i * block, min(R, (i + 1) * block)
        layer_norm.backward(g[r0:r1], x[r0:r1], w, eps, gx[r0:r1], gw[i], gb[i])


@cfunc(_SIG, nopython=True, cache=True)
def softmax_rows(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [s, M, L, S, scale, causal]: items are the M (L, S) score matrices of ``s``."""
    ctx = carray(_i64(c), (n,))
    M, L, S = ctx[1], ctx[2], ctx[3]
    scale = carray(_f64(c), (n,))[4]
    lo = a >> 3
    rows = carray(_f32(ctx[0]), (M * L, S))
    attention.softmax_rows(rows[lo * L:(lo + m) * L], L, scale, ctx[5] != 0)


@cfunc(_SIG, nopython=True, cache=True)
def softmax_grad_rows(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [dp, p, R, S, scale]: rows of dp (R, S) <- scale * p * (dp - rowsum(dp * p))."""
    ctx = carray(_i64(c), (n,))
    R, S = ctx[2], ctx[3]
    scale = carray(_f64(c), (n,))[4]
    lo = a >> 3
    attention.softmax_grad_rows(carray(_f32(ctx[0]), (R, S))[lo:lo + m],
                                carray(_f32(ctx[1]), (R, S))[lo:lo + m], scale)



@cfunc(_SIG, nopython=True, cache=True)
def exp_rows(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, e, s, top, bad (uint8), R, C]: softmax.exp_rows over rows of x (R, C)."""
    ctx = carray(_i64(c), (n,))
    R, C = ctx[5], ctx[6]
    lo, hi = a >> 3, (a >> 3) + m
    softmax.exp_rows(carray(_f32(ctx[0]), (R, C))[lo:hi], carray(_f32(ctx[1]), (R, C))[lo:hi],
                     carray(_f32(ctx[2]), (R,))[lo:hi], carray(_f32(ctx[3]), (R,))[lo:hi],
                     carray(_u8(ctx[4]), (R,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def scale_rows(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [e, f, out, R, C]: out[r] = e[r] * f[r] over rows (R, C) float32."""
    ctx = carray(_i64(c), (n,))
    R, C = ctx[3], ctx[4]
    lo, hi = a >> 3, (a >> 3) + m
    softmax.scale_rows(carray(_f32(ctx[0]), (R, C))[lo:hi], carray(_f32(ctx[1]), (R,))[lo:hi],
                       carray(_f32(ctx[2]), (R, C))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def relu(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, out, size] (flat float32): out = relu(x)."""
    ctx = carray(_i64(c), (n,))
    size = ctx[2]
    lo, hi = a >> 3, (a >> 3) + m
    elementwise.relu(carray(_f32(ctx[0]), (size,))[lo:hi], carray(_f32(ctx[1]), (size,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def tanh(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, out, size] (flat float32): out = tanh(x)."""
    ctx = carray(_i64(c), (n,))
    size = ctx[2]
    lo, hi = a >> 3, (a >> 3) + m
    elementwise.tanh(carray(_f32(ctx[0]), (size,))[lo:hi], carray(_f32(ctx[1]), (size,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def exp(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, out, outside (uint8, 1), size] (flat float32): out = exp(x) where x lies in
    [-87, 88]; outside[0] set to 1 if any element of the part does not."""
    ctx = carray(_i64(c), (n,))
    size = ctx[3]
    lo, hi = a >> 3, (a >> 3) + m
    if elementwise.exp(carray(_f32(ctx[0]), (size,))[lo:hi], carray(_f32(ctx[1]), (size,))[lo:hi]):
        carray(_u8(ctx[2]), (1,))[0] = 1


@cfunc(_SIG, nopython=True, cache=True)
def threshold_backward(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [g, x, out, size, threshold] (flat float32): out = 0 where x <= threshold, else g."""
    ctx = carray(_i64(c), (n,))
    size = ctx[3]
    threshold = np.float32(carray(_f64(c), (n,))[4])
    lo, hi = a >> 3, (a >> 3) + m
    elementwise.threshold_backward(carray(_f32(ctx[0]), (size,))[lo:hi],
                                   carray(_f32(ctx[1]), (size,))[lo:hi], threshold,
                                   carray(_f32(ctx[2]), (size,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def add(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, y, out, size] (flat float32): out = x + y."""
    ctx = carray(_i64(c), (n,))
    size = ctx[3]
    lo, hi = a >> 3, (a >> 3) + m
    elementwise.add(carray(_f32(ctx[0]), (size,))[lo:hi], carray(_f32(ctx[1]), (size,))[lo:hi],
                    carray(_f32(ctx[2]), (size,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def mul(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, y, out, size] (flat float32): out = x * y."""
    ctx = carray(_i64(c), (n,))
    size = ctx[3]
    lo, hi = a >> 3, (a >> 3) + m
    elementwise.mul(carray(_f32(ctx[0]), (size,))[lo:hi], carray(_f32(ctx[1]), (size,))[lo:hi],
                    carray(_f32(ctx[2]), (size,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def add_scalar(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, out, size, s] (flat float32, s as float64 bits): out = x + float32(s)."""
    ctx = carray(_i64(c), (n,))
    size = ctx[2]
    s = np.float32(carray(_f64(c), (n,))[3])
    lo, hi = a >> 3, (a >> 3) + m
    elementwise.add_scalar(carray(_f32(ctx[0]), (size,))[lo:hi], s,
                           carray(_f32(ctx[1]), (size,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def mul_scalar(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, out, size, s] (flat float32, s as float64 bits): out = x * float32(s)."""
    ctx = carray(_i64(c), (n,))
    size = ctx[2]
    s = np.float32(carray(_f64(c), (n,))[3])
    lo, hi = a >> 3, (a >> 3) + m
    elementwise.mul_scalar(carray(_f32(ctx[0]), (size,))[lo:hi], s,
                           carray(_f32(ctx[1]), (size,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def softmax_last(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, y, bad (uint8), R, C, log]: softmax.softmax_last over rows of x (R, C)."""
    ctx = carray(_i64(c), (n,))
    R, C = ctx[3], ctx[4]
    lo, hi = a >> 3, (a >> 3) + m
    softmax.softmax_last(carray(_f32(ctx[0]), (R, C))[lo:hi], carray(_f32(ctx[1]), (R, C))[lo:hi],
                         carray(_u8(ctx[2]), (R,))[lo:hi], ctx[5] != 0)


@cfunc(_SIG, nopython=True, cache=True)
def softmax_grad(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [g, y, out, R, C]: softmax.softmax_grad over rows."""
    ctx = carray(_i64(c), (n,))
    R, C = ctx[3], ctx[4]
    lo, hi = a >> 3, (a >> 3) + m
    softmax.softmax_grad(carray(_f32(ctx[0]), (R, C))[lo:hi], carray(_f32(ctx[1]), (R, C))[lo:hi],
                         carray(_f32(ctx[2]), (R, C))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def log_softmax_grad(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [g, y, out, bad (uint8), R, C]: softmax.log_softmax_grad over rows."""
    ctx = carray(_i64(c), (n,))
    R, C = ctx[4], ctx[5]
    lo, hi = a >> 3, (a >> 3) + m
    softmax.log_softmax_grad(carray(_f32(ctx[0]), (R, C))[lo:hi],
                             carray(_f32(ctx[1]), (R, C))[lo:hi],
                             carray(_f32(ctx[2]), (R, C))[lo:hi], carray(_u8(ctx[3]), (R,))[lo:hi])


@cfunc(_SIG, nopython=True, cache=True)
def add_rows(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [out, b, R, C]: out[r] += b over rows of out (R, C) float32 (a linear's bias)."""
    ctx = carray(_i64(c), (n,))
    R, C = ctx[2], ctx[3]
    lo = a >> 3
    elementwise.add_rows(carray(_f32(ctx[0]), (R, C))[lo:lo + m], carray(_f32(ctx[1]), (C,)))


@cfunc(_SIG, nopython=True, cache=True)
def column_sums(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, parts, R, C, block]: items are blocks of ``block`` rows of x (R, C) float32;
    row i of parts (blocks, C) gets block i's column sums."""
    ctx = carray(_i64(c), (n,))
    R, C, block = ctx[2], ctx[3], ctx[4]
    x = carray(_f32(ctx[0]), (R, C))
    parts = carray(_f32(ctx[1]), ((R + block - 1) // block, C))
    lo = a >> 3
    for i in range(lo, lo + m):
        elementwise.column_sums(x[i * block:min(R, (i + 1) * block)], parts[i])


@cfunc(_SIG, nopython=True, cache=True)
def torch_chunk_sums(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [x, parts, size, chunk]: items are torch's per-thread chunks of ``chunk`` elements
    of the flat float32 x; parts[i] gets chunk i's sum in torch's order (compiled/
    torch_sum.py)."""
    ctx = carray(_i64(c), (n,))
    size, chunk = ctx[2], ctx[3]
    x = carray(_f32(ctx[0]), (size,))
    parts = carray(_f32(ctx[1]), ((size + chunk - 1) // chunk,))
    lo = a >> 3
    for i in range(lo, lo + m):
        parts[i] = torch_sum.chunk_sum(x, i * chunk, min(chunk, size - i * chunk), 8)


@cfunc(_SIG, nopython=True, cache=True)
def lstm_forward(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [xt, hw, gates, c, cn, tc, h, out, out_row_stride, H, B] (float32; out_t the
    (B, H) rows of the step's output, ``out_row_stride`` elements apart): rnn's
    lstm_forward_step over the part's hidden units."""
    ctx = carray(_i64(c), (n,))
    H, B = ctx[9], ctx[10]

    def mat(i, rows):
        return carray(_f32(ctx[i]), (rows, B))
    out_t = carray(_f32(ctx[7]), (B, ctx[8]))[:, :H]
    lo = a >> 3
    rnn.lstm_forward_step(mat(0, 4 * H), mat(1, 4 * H), mat(2, 4 * H), mat(3, H), mat(4, H),
                          mat(5, H), mat(6, H), out_t, np.float32(0.5), lo, lo + m)


@cfunc(_SIG, nopython=True, cache=True)
def lstm_backward(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [dh, go, go_row_stride, dc, gates, tc, c_prev, d, H, B] (float32; go the step's
    output gradient rows (B, H) ``go_row_stride`` apart, or 0 for none): rnn's
    lstm_backward_step over the part's hidden units."""
    ctx = carray(_i64(c), (n,))
    H, B = ctx[8], ctx[9]

    def mat(i, rows):
        return carray(_f32(ctx[i]), (rows, B))
    go_t = carray(_f32(ctx[1]), (B, ctx[2]))[:, :H] if ctx[1] else \
        carray(_f32(ctx[0]), (B, ctx[2]))[:0, :0]
    lo = a >> 3
    rnn.lstm_backward_step(mat(0, H), go_t, mat(3, H), mat(4, 4 * H), mat(5, H), mat(6, H),
                           mat(7, 4 * H), np.float32(1), lo, lo + m)


@cfunc(_SIG, nopython=True, cache=True)
def sdpa_forward_blocks(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx: attention.sdpa_forward_blocks's; items: (batch, head) blocks."""
    lo = a >> 3
    attention.sdpa_forward_blocks(carray(_i64(c), (n,)), lo, lo + m)


@cfunc(_SIG, nopython=True, cache=True)
def sdpa_backward_blocks(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx: attention.sdpa_backward_blocks's; items: (batch, head) blocks."""
    lo = a >> 3
    attention.sdpa_backward_blocks(carray(_i64(c), (n,)), lo, lo + m)


@cfunc(_SIG, nopython=True, cache=True)
def gemm_tiles(m, n, k, alpha, a, lda, b, ldb, c, ldc, sb):
    """ctx [a_packed, b, ldb, n, c_in, beta, c, ldc, m, k, depth]; items: gemm.tiles's
    tiles."""
    ctx = carray(_i64(c), (n,))
    lo = a >> 3
    gemm.tiles(ctx[0], ctx[1], ctx[2], ctx[3], ctx[4], ctx[5], ctx[6], ctx[7], ctx[8], ctx[9],
               lo, lo + m, ctx[10])
