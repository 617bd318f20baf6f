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


@intrinsic
def sgemm(typingctx, fn, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """C (m, n) = alpha op(A) op(B) + beta C in float32, row-major (``trans_a`` /
    ``trans_b``: 0 or 1; op(A) is (m, k)), rows lda / ldb / ldc elements apart, by the
    ILP64 ``cblas_sgemm`` at address ``fn`` (NumPy's OpenBLAS,
    numpy_blas.sgemm_address()); arrays by address (int64), alpha and beta float32."""
    ints = (fn, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc)
    if not all(isinstance(v, types.Integer) for v in ints) or \
            not all(isinstance(v, types.Float) for v in (alpha, beta)):
        return None

    def codegen(context, builder, signature, args):
        from llvmlite import ir
        i32, i64, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
        p = f32.as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, f32, p, i64, p,
                                               i64, f32, p, i64])
        f, ta, tb, m_, n_, k_, al, a_, lda_, b_, ldb_, be, c_, ldc_ = args
        row_major, no_trans = ir.Constant(i32, 101), ir.Constant(i32, 111)   # CBLAS enums
        builder.call(builder.inttoptr(f, fnty.as_pointer()),
                     [row_major, builder.add(no_trans, builder.trunc(ta, i32)),
                      builder.add(no_trans, builder.trunc(tb, i32)), m_, n_, k_, al,
                      builder.inttoptr(a_, p), lda_, builder.inttoptr(b_, p), ldb_, be,
                      builder.inttoptr(c_, p), ldc_])
        return context.get_dummy_value()
    i64, f32 = types.int64, types.float32
    return types.void(i64, i64, i64, i64, i64, i64, f32, i64, i64, i64, i64, f32, i64,
                      i64), codegen


@intrinsic
def float32_at(typingctx, address):
    """A float32 pointer to the int64 ``address`` (for numba.carray)."""
    if not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))
    return types.CPointer(types.float32)(types.int64), codegen
