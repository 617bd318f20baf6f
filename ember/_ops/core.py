"""Core op records: the arithmetic, views, copies and reductions the engine itself needs.

Pattern for every op family (see docs/ARCHITECTURE.md):

    add = defop("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                kernel, inplace=True)

    @add.def_backward
    def _(ctx, grad, self, other, alpha):       # positional args as in the schema;
        return grad, grad * alpha               # one gradient per argument (None: none)

Backward rules use ember ops, so they are differentiable themselves. The engine reduces
each gradient to its input's shape and dtype (Note [grad shapes]), so a rule may return
a broadcast gradient. Arguments not listed in ``saves`` arrive as None.
"""
from __future__ import annotations

import math

import numpy as np

from ember._kernels import core as K
from ember._kernels import elementwise as _EK
from ember._kernels import fast_elementwise as _FE
from ember._kernels import torch_sum as _TS
from ember._kernels import half_arith as _HA
from ember._kernels import numpy_blas, split
from ember._kernels.util import infer_size as _infer_size
from ember._kernels.util import half_in_float32, scalar_to, wrap_dims
from ember._kernels.layout import like_inputs as _like_inputs
from ember._meta_tensor import Placeholder, probe as meta_probe
from ember._ops.registry import defop, OpDef, register, public, FUNCTIONS, METHODS


def _bf16(kernel):
    """bfloat16 arithmetic in float32, rounded once (Note [half GEMMs])."""
    return half_in_float32(kernel, ("bfloat16",))


# -------------------------------------------------------------------- arithmetic


def _check_alpha(a, b, alpha):
    """torch's alpha checks against the operands' common dtype (alpha != 1 only)."""
    kinds = {np.asarray(x).dtype.kind for x in (a, b)}
    if isinstance(alpha, complex) and "c" not in kinds:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex "
                           "number.")
    if isinstance(alpha, float) and kinds <= {"b", "i", "u"}:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")


def _veltkamp_split(v):
    """Veltkamp's split of float64 ``v`` into halves whose products are exact."""
    c = v * 134217729.0                        # 2 ** 27 + 1
    hi = c - (c - v)
    return hi, v - hi


def _fma_alpha(a, b, alpha, negate=False, out=None, emulate=True):
    """``a + alpha * b`` rounded once, as torch's CPU add/sub with ``alpha`` (a fused
    multiply-add; two roundings differ in the last bit for about a quarter of elements, which
    optimizer updates and LBFGS accumulate), or None where it does not apply. Arrays of one
    shape and dtype go to the compiled kernel (``out``, when given, is then the result);
    else ``elementwise.fma`` (alpha first rounded to the dtype, as torch's scalar), unless
    ``emulate`` is False (the in-place writers try BLAS's axpy before it)."""
    if getattr(alpha, "ndim", None) == 0:           # a 0-d tensor (LBFGS passes them)
        alpha = alpha.item()
    if not isinstance(alpha, (float, int, np.floating, np.integer)) or \
            isinstance(alpha, (bool, np.bool_)):
        return None
    if negate:                                      # sub: a - alpha * b
        alpha = -alpha
    r = _FE.add_scaled(a, b, alpha, out)            # one pass, compiled (fast_elementwise)
    if r is not None or not emulate:
        return r
    dt = np.result_type(a, b)
    if dt != np.float32 and dt != np.float64:
        return None
    return _EK.fma(dt.type(alpha), b, a)            # NumPy's exact emulation (elementwise.fma)


# Note [binary layout]: add/sub/mul lay their result out as torch does (Note [output layout]
# in ember/_kernels/layout.py: the first operand that tells two dimensions apart decides).
# NumPy gives the operands' layout when they agree and C order when they conflict, which
# is torch's answer whenever ``self`` is C-contiguous; so only a non-contiguous ``self``
# (channels-last + contiguous, a transposed matrix + a plain one) pays a layout look, and
# the common path one flags check.
def _laid_out(r, a, b):
    if type(r) is not np.ndarray or r.ndim < 2:
        return r
    return _like_inputs(r, [x for x in (a, b) if type(x) is np.ndarray and x.ndim])


def _add(a, b, alpha=1):
    if alpha == 1:
        if type(a) is np.ndarray:
            if a.size >= _FE.POOL_MIN:               # (small sums: no detour)
                r = _FE.pooled_add(a, b)             # large float32 sums over the threads
                if r is not None:
                    return r if a.flags.c_contiguous else _laid_out(r, a, b)
            if not a.flags.c_contiguous:             # Note [binary layout]
                return _laid_out(np.add(a, b), a, b)
        return np.add(a, b)
    _check_alpha(a, b, alpha)
    r = _fma_alpha(a, b, alpha)
    r = np.add(a, np.multiply(b, alpha)) if r is None else r
    return _laid_out(r, a, b) if type(a) is np.ndarray and not a.flags.c_contiguous else r


def _sub(a, b, alpha=1):
    a_bool = isinstance(a, bool) or isinstance(a, np.ndarray) and a.dtype == np.bool_
    b_bool = isinstance(b, bool) or isinstance(b, np.ndarray) and b.dtype == np.bool_
    if a_bool and b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if a_bool or b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    if alpha == 1:
        r = np.subtract(a, b)
    else:
        _check_alpha(a, b, alpha)
        r = _fma_alpha(a, b, alpha, negate=True)
        r = np.subtract(a, np.multiply(b, alpha)) if r is None else r
    return _laid_out(r, a, b) if type(a) is np.ndarray and not a.flags.c_contiguous else r


def _half_alpha(a, b, alpha):
    """Does a half ``a + alpha * b`` take torch's own rounding (Note [half scalars] in
    ember/_kernels/half_arith.py): a half array with a number, or with alpha != 1?"""
    return _HA.half_operands(a, b) is not None and \
        (type(b) is not np.ndarray or alpha != 1) and \
        isinstance(alpha, (int, float, np.integer, np.floating)) and \
        not isinstance(alpha, (bool, np.bool_))


def _half_add(kernel, negate):
    """``kernel`` (add/sub) with half operands rounded as torch's (Note [half scalars]);
    other bfloat16 sums in float32 (Note [half GEMMs]). Other dtypes go straight through."""
    half = _bf16(kernel)

    def run(a, b, alpha=1):
        if type(a) is not np.ndarray or a.itemsize != 2 or a.dtype.kind not in "fV":
            return kernel(a, b, alpha)
        if (alpha == 1 and type(b) is np.ndarray) or not _half_alpha(a, b, alpha):
            return half(a, b, alpha)
        if alpha != 1:
            _check_alpha(a, b, alpha)
        r = _HA.add(a, b, alpha, negate)
        return r if a.flags.c_contiguous else _laid_out(r, a, b)
    run.__name__ = kernel.__name__
    run.__wrapped__, run.half_only_wrapper = kernel, True    # (the fast path: registry)
    return run


def half_rsub(kernel):
    """``rsub`` (``other - alpha * self``) with half operands rounded as torch's, which
    computes it as ``sub(other, self, alpha)`` with a number rounded to the half dtype first
    (Note [half scalars]); other dtypes go straight through."""
    half = _bf16(kernel)

    def run(a, b, alpha=1):
        if type(a) is not np.ndarray or a.itemsize != 2 or a.dtype.kind not in "fV":
            return kernel(a, b, alpha)
        if _HA.half_operands(a, b) is None or \
                not isinstance(alpha, (int, float, np.integer, np.floating)) or \
                isinstance(alpha, (bool, np.bool_)):
            return half(a, b, alpha)
        if alpha != 1:
            _check_alpha(a, b, alpha)
        other = b if type(b) is np.ndarray else \
            np.broadcast_to(np.array(b).astype(a.dtype), a.shape)
        r = _HA.add(other, a, alpha, negate=True)
        return r if a.flags.c_contiguous else _laid_out(r, a, b)
    run.__name__ = kernel.__name__
    run.__wrapped__, run.half_only_wrapper = kernel, True    # (the fast path: registry)
    return run


def _half_scale(kernel):
    """``mul``/``div``: a half array by a number in float32, the number unrounded (Note
    [half scalars]); other bfloat16 products in float32 (Note [half GEMMs])."""
    half = _bf16(kernel)

    def run(a, b):
        if type(a) is not np.ndarray or a.itemsize != 2 or a.dtype.kind not in "fV":
            return kernel(a, b)
        if type(b) is np.ndarray or _HA.half_operands(a, b) is None:
            return half(a, b)
        r = _HA.scale(kernel, a, b)
        return r if a.flags.c_contiguous else _laid_out(r, a, b)
    run.__name__ = kernel.__name__
    run.__wrapped__, run.half_only_wrapper = kernel, True    # (the fast path: registry)
    return run


add = defop("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
            _half_add(_add, False), inplace=True)
sub = defop("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
            _half_add(_sub, True), inplace=True)


def _mul(a, b):
    if type(a) is np.ndarray:
        if a.size >= _FE.POOL_MIN:                   # (small products: no detour)
            r = _FE.pooled_mul(a, b)                 # large float32 products over the threads
            if r is not None:
                return r if a.flags.c_contiguous else _laid_out(r, a, b)
        if not a.flags.c_contiguous:                 # Note [binary layout]
            return _laid_out(np.multiply(a, b), a, b)
    return np.multiply(a, b)


mul = defop("mul.Tensor(Tensor self, Tensor other) -> Tensor", _half_scale(_mul),
            inplace=True, saves=("self", "other")).saved_for({"self": ("other",), "other": ("self",)})
# div: true division (integers -> float) and rounding division (dtype kept, like torch), one
# record each; the hand-written ``div`` front below picks the record from ``rounding_mode``.
div = defop("div.Tensor(Tensor self, Tensor other) -> Tensor",
            _half_scale(_EK.true_divide),
            function=False, method=False, inplace=True, promote="int_to_float",
            saves=("self", "other")).saved_for({"self": ("other",)})
div_mode = defop("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
                 _EK.div_mode, function=False, method=False, inplace=True,
                 saves=("self", "other")).saved_for({"self": ("other",)})


def _scaled_into(out, b, alpha):
    """``b * alpha`` for an update of ``out``; in an integer ``out`` both convert to its
    dtype first, as torch's integer arithmetic does (uint8 ``alpha=-3`` is 253)."""
    if out.dtype.kind in "iu" and type(alpha) is int:
        alpha = scalar_to(alpha, out.dtype)
        if type(b) is int:
            b = np.array(b).astype(out.dtype)
    return np.multiply(b, alpha)


# Note [axpy rounds once]: ``p.add_(g, alpha=-lr)`` is one compiled fused multiply-add where
# numba is installed (fast_elementwise.add_scaled: one pass, 1.1-1.6x faster than the BLAS
# route below at 10K-400K float32, one dispatch of ~2 us at small sizes once numba is loaded).
# Without it the update goes to BLAS axpy, one pass. OpenBLAS's vector loop is a fused
# multiply-add, as torch's add with alpha, but its scalar tail (the last elements of each
# thread's range, under one block of the kernel's unroll) multiplies and adds, two
# roundings: an ulp off in a few elements in a thousand.
# So BLAS gets whole blocks of ``_AXPY_BLOCK`` elements at one thread each (split over
# ember's threads from ``_AXPY_SPLIT`` elements: 1.3x OpenBLAS's own two-thread time at
# 4M float32, 1.6x at 400K on one thread, measured on a 2-core host), and the rest (under
# a block) is rounded once by ``_fma_alpha``. Whether the vector loop fuses is checked once
# per dtype against ``_fma_alpha``; where it does not (another BLAS kernel, or no BLAS
# found), the update takes ``_fma_alpha`` whole.
_AXPY_BLOCK = 128                # a multiple of every OpenBLAS axpy kernel's unroll
_AXPY_SPLIT = 1 << 20            # below, one thread beats a hand-off to ember's pool
_axpy_fused: dict = {}           # dtype char -> does BLAS's axpy round once


def _axpy_fuses(dtype):
    ok = _axpy_fused.get(dtype.char)
    if ok is None:
        rng = np.random.default_rng(0)
        y, x = rng.standard_normal((2, 32 * _AXPY_BLOCK)).astype(dtype)
        want = _fma_alpha(y, x, 3.0)
        with numpy_blas.one_thread(True):
            ok = _FE.axpy_(y, x, 3.0) and bool((y == want).all())
        _axpy_fused[dtype.char] = ok
    return ok


def _axpy_once_(out, b, alpha):
    """``out += alpha * b`` rounded once, through BLAS where it applies (Note [axpy rounds
    once]); returns whether it did the update."""
    if type(b) is not np.ndarray or b.dtype != out.dtype or out.dtype.char not in "fd" or \
            b.shape != out.shape or out.size < _FE._AXPY_MIN or \
            isinstance(alpha, (complex, np.complexfloating)):
        return False
    if not (out.flags.c_contiguous and b.flags.c_contiguous and out.flags.writeable) or \
            not math.isfinite(float(alpha)) or float(alpha) == 0.0 or \
            np.may_share_memory(out, b) or not _axpy_fuses(out.dtype):
        return False        # (BLAS skips alpha == 0, where NumPy turns inf * 0 into NaN)
    fn = numpy_blas.axpy(out.dtype)
    a, n, size = float(alpha), out.size, out.itemsize
    m = n - n % _AXPY_BLOCK                   # (>= _AXPY_MIN, a multiple of the block)
    po, pb = out.ctypes.data, b.ctypes.data

    def part(lo, hi):
        lo, hi = lo * _AXPY_BLOCK, hi * _AXPY_BLOCK
        fn(hi - lo, a, pb + lo * size, 1, po + lo * size, 1)
    with numpy_blas.one_thread(m >= _FE._AXPY_THREADED):
        if m < _AXPY_SPLIT:
            part(0, m // _AXPY_BLOCK)
        else:
            split.run_rows(part, m // _AXPY_BLOCK, m)
    if m < n:
        of, bf = out.reshape(-1), b.reshape(-1)
        np.copyto(of[m:], _fma_alpha(of[m:], bf[m:], alpha))
    return True


# in-place writers (see OpDef.kernel_out): the same arithmetic, the last step into ``out``
@add.def_kernel_out
def _(out, a, b, alpha=1):
    if out.dtype == a.dtype and _half_alpha(a, b, alpha):       # Note [half scalars]
        np.copyto(out, add.kernel(a, b, alpha))
        return
    if alpha != 1 and (type(alpha) is not float or out.dtype.kind in "biu"):
        _check_alpha(a, b, alpha)
    fused = alpha != 1 and out.dtype.kind == "f"
    r = _fma_alpha(a, b, alpha, out=out, emulate=False) if fused else None
    if r is out:                            # p.add_(g, alpha=-lr), compiled
        return
    if alpha != 1 and a is out and _axpy_once_(out, b, alpha):    # (no numba: BLAS)
        return
    if fused and r is None:
        r = _fma_alpha(a, b, alpha, out=out)
    if r is not None and r.dtype == out.dtype:
        np.copyto(out, r)
        return
    np.add(a, b if alpha == 1 else _scaled_into(out, b, alpha), out=out)


@sub.def_kernel_out
def _(out, a, b, alpha=1):
    if out.dtype == a.dtype and _half_alpha(a, b, alpha):       # Note [half scalars]
        np.copyto(out, sub.kernel(a, b, alpha))
        return
    if out.dtype == np.bool_ or isinstance(b, bool) or isinstance(a, bool):
        np.copyto(out, _sub(a, b, alpha))      # raises
        return
    if alpha != 1 and (type(alpha) is not float or out.dtype.kind in "biu"):
        _check_alpha(a, b, alpha)
    fused = alpha != 1 and out.dtype.kind == "f"
    r = _fma_alpha(a, b, alpha, negate=True, out=out, emulate=False) if fused else None
    if r is out:                            # compiled
        return
    if alpha != 1 and a is out and not isinstance(alpha, bool) and \
            _axpy_once_(out, b, -alpha):
        return
    if fused and r is None:
        r = _fma_alpha(a, b, alpha, negate=True, out=out)
    if alpha != 1 and type(alpha) is int and out.dtype.kind in "iu":
        np.add(a, _scaled_into(out, b, -alpha), out=out)     # torch checks -alpha's range
        return
    if r is not None and r.dtype == out.dtype:
        np.copyto(out, r)
        return
    np.subtract(a, b if alpha == 1 else np.multiply(b, alpha), out=out)


@mul.def_kernel_out
def _(out, a, b):
    if out.dtype == getattr(a, "dtype", None) and _HA.half_operands(a, b) is not None and \
            type(b) is not np.ndarray:                  # Note [half scalars]
        np.copyto(out, mul.kernel(a, b))
        return
    np.multiply(a, b, out=out)


def _div_out(out, a, b):
    if out.dtype == getattr(a, "dtype", None) and _HA.half_operands(a, b) is not None and \
            type(b) is not np.ndarray:                  # Note [half scalars]
        np.copyto(out, div.kernel(a, b))
        return
    np.true_divide(a, b, out=out)


div.def_kernel_out(_EK.quiet(_div_out))


def _neg(a):
    if isinstance(a, np.ndarray) and a.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    return np.negative(a)


neg = defop("neg(Tensor self) -> Tensor", _bf16(_neg), inplace=True)
exp = defop("exp(Tensor self) -> Tensor", _bf16(_EK.exp), inplace=True, promote="int_to_float",
            saves=("result",))




def conj_if_complex(t):
    """conj(t) for complex tensors and Python complex numbers; ``t`` itself otherwise."""
    if isinstance(t, complex):
        return t.conjugate()
    return t.conj() if isinstance(t, _Tensor) and t.is_complex() else t


@add.def_backward
def _(ctx, g, self, other, alpha):
    return g, (g if alpha == 1 else g * conj_if_complex_scalar(alpha))


@sub.def_backward
def _(ctx, g, self, other, alpha):
    return g, (-g if alpha == 1 else g * -conj_if_complex_scalar(alpha))


def conj_if_complex_scalar(s):
    return s.conjugate() if isinstance(s, complex) else s


@mul.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    return (g * conj_if_complex(other) if n[0] else None,
            g * conj_if_complex(self) if n[1] else None)


@div.def_backward
def _(ctx, g, self, other, rounding_mode=None):
    if rounding_mode is not None:
        return zeros_like_grad(g), zeros_like_grad(g)
    n = ctx.needs_input_grad
    gs = g / conj_if_complex(other) if n[0] else None
    go = None
    if n[1]:
        go = -g * conj_if_complex(self) / conj_if_complex(other * other)
    return gs, go


div_mode.def_backward(div.backward)


def zeros_like_grad(g):
    from ember._ops.factory import zeros_like
    return zeros_like(g)


@public("div")
def _div_function(input, other, *, rounding_mode=None, out=None):
    """Division; ``rounding_mode`` None (true division), 'trunc' or 'floor'."""
    if rounding_mode is None:
        return dispatch_op(div, (input, other), out)
    return dispatch_op(div_mode, (input, other, rounding_mode), out)


@public("div", method=True, function=False)
def _div_method(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return dispatch_op(div, (self, other), None)
    return dispatch_op(div_mode, (self, other, rounding_mode), None)


@public("div_", method=True, function=False)
def _div_inplace(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return dispatch_op(div.inplace_variant, (self, other), None)
    return dispatch_op(div_mode.inplace_variant, (self, other, rounding_mode), None)


def dispatch_op(op, args, out):
    from ember._dispatch import dispatch
    return dispatch(op, args, out)


@neg.def_backward
def _(ctx, g, self):
    return -g


@exp.def_backward
def _(ctx, g, self):
    return g * conj_if_complex(ctx.result)


# -------------------------------------------------------------------- reductions


def _sum(a, dim=None, keepdim=False, dtype=None):
    axes = wrap_dims(dim, a.ndim) if dim is not None and dim != () else None
    if a.ndim == 0:
        axes = None
    if dtype is not None:
        npd = dtype.np
    elif a.dtype.kind in "biu":
        npd = np.int64
    else:
        npd = None
    if a.dtype.itemsize == 2 and a.dtype.kind in "fV" and (npd is None or npd == a.dtype):
        # float16 / bfloat16 accumulate in float32, like torch (and ml_dtypes' own bfloat16
        # reduction is scalar: 12 ms vs 0.5 ms on 2M elements)
        return np.sum(a.astype(np.float32), axis=axes, keepdims=keepdim).astype(a.dtype)
    if (npd is None or npd == a.dtype or (npd == np.float64 and a.dtype == np.float32)) and \
            (r := _TS.reduce_sum(a if npd is None else a.astype(npd, copy=False), axes,
                                 keepdim)) is not None:
        return r          # float32 / float64 in torch's order (Note [torch's summation order])
    if npd is None and (axes is None or len(axes) == a.ndim) and \
            (r := _FE.pooled_sum(a)) is not None:
        return r.reshape((1,) * a.ndim) if keepdim else r   # (large float32: over threads)
    if axes == (0,) and npd is None and (r := _FE.pooled_column_sums(a)) is not None:
        return r[None] if keepdim else r        # (a linear's bias gradient: over threads)
    return np.add.reduce(a, axis=axes, keepdims=keepdim, dtype=npd)    # (np.sum's own work)


sum = defop("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)"
            " -> Tensor", _sum, promote=None)


@sum.def_backward
def _(ctx, g, self, dim, keepdim, dtype):
    shape = ctx.shapes[0]
    return _expand_reduced(g, shape, dim, keepdim)


def _expand_reduced(g, shape, dim, keepdim):
    """Broadcast a reduced gradient back to ``shape`` (re-inserting reduced dims)."""
    if not keepdim and dim is not None and dim != () and len(shape) > 0:
        from ember._kernels.util import wrap_dims
        for d in sorted(wrap_dims(dim, len(shape))):
            g = g.unsqueeze(d)
    return g.expand(shape)


sum_to_size = defop("sum_to_size(Tensor self, int[] size) -> Tensor", K.sum_to_size,
                    promote=None, varargs="size")


@sum_to_size.def_backward
def _(ctx, g, self, size):
    return g.expand(ctx.shapes[0])


# -------------------------------------------------------------------- selection

where_self = OpDef("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
                   K.where, promote_args=("self", "other"), saves=("condition",))


@where_self.def_backward
def _(ctx, g, condition, self, other):
    zero = g.new_zeros(())
    return None, where_self(condition, g, zero), where_self(condition, zero, g)


# -------------------------------------------------------------------- views

view = defop("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", K.view, function=False,
             promote=None, varargs="size")


@view.def_backward
def _(ctx, g, self, size):
    return g.reshape(ctx.shapes[0])


# the whole tensor as a view of itself (``as_subclass`` returns one, as torch does)
alias = defop("alias(Tensor(a) self) -> Tensor(a)", lambda a: a.view(), function=False,
              method=False, out=False, promote=None)


@alias.def_backward
def _(ctx, g, self):
    return g


# the view of a fresh copy that ``reshape`` returns when it must copy: not an autograd view
_unsafe_view = defop("_unsafe_view(Tensor self, SymInt[] size) -> Tensor", K.view,
                     function=False, method=False, out=False, promote=None)


@_unsafe_view.def_backward
def _(ctx, g, self, size):
    return g.reshape(ctx.shapes[0])


def _reshape(self, shape):
    shape = _infer_size(shape, self._data.size)
    a = self._data
    if type(a) is Placeholder:          # meta: its strides decide (Note [meta strides])
        a = meta_probe(self)
    if K.as_view(a, shape) is not None:
        return view(self, shape)
    return _unsafe_view(clone(self, memory_format="contiguous_format"), shape)


reshape = defop("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", composite=_reshape,
                promote=None, varargs="shape")
transpose = defop("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", K.transpose,
                  promote=None)
permute = defop("permute(Tensor(a) self, int[] dims) -> Tensor(a)", K.permute, promote=None,
                varargs="dims")
expand = defop("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
               K.expand, function=False, promote=None, varargs="size")


@transpose.def_backward
def _(ctx, g, self, dim0, dim1):
    return g.transpose(dim0, dim1)


@permute.def_backward
def _(ctx, g, self, dims):
    nd = len(dims)
    inv = [0] * nd
    for i, d in enumerate(dims):
        inv[d % nd] = i
    return g.permute(inv)


def _unsqueeze(a, dim):
    """torch's strides: the new dim's is size * stride of the dim it goes before (1 at the
    end); NumPy's ``expand_dims`` may also restride other size-1 dims."""
    from ember._kernels.util import wrap_dim
    d = wrap_dim(dim, a.ndim + 1)
    st = a.strides
    new = a.itemsize if d == a.ndim else a.shape[d] * st[d]
    return np.lib.stride_tricks.as_strided(a, a.shape[:d] + (1,) + a.shape[d:],
                                           st[:d] + (new,) + st[d:], subok=True)


def _squeeze(a, dim=None):
    from ember._kernels.util import wrap_dims
    if dim is None:
        return np.squeeze(a) if a.ndim else a.view()
    dims = tuple(d for d in wrap_dims(dim, a.ndim) if a.ndim and a.shape[d] == 1)
    return np.squeeze(a, axis=dims) if dims else a.view()


unsqueeze = defop("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", _unsqueeze, promote=None)
squeeze = defop("squeeze(Tensor(a) self, int[1]? dim=None) -> Tensor(a)", _squeeze,
                promote=None)


@unsqueeze.def_backward
def _(ctx, g, self, dim):
    return g.squeeze(dim)


@squeeze.def_backward
def _(ctx, g, self, dim):
    return g.reshape(ctx.shapes[0])


def _real(a):
    return a.real if a.dtype.kind == "c" else a.view()


def _real_front(self):
    # torch: ``torch.real(x) is x`` for a real tensor (also a subclass, a Parameter)
    return _real_part(self) if self.is_complex() else self


def _imag(a):
    if a.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return a.imag


_real_part = OpDef("_real_part(Tensor(a) self) -> Tensor(a)", _real, promote=None,
                   grad_name="SelectBackward0")   # torch: a select of view_as_real
real = defop("real(Tensor(a) self) -> Tensor(a)", composite=_real_front, method=False)
imag = defop("imag(Tensor(a) self) -> Tensor(a)", _imag, promote=None, method=False)


@_real_part.def_backward
def _(ctx, g, self):
    return g


@imag.def_backward
def _(ctx, g, self):
    # d(imag z) with torch's convention: the gradient flows to the imaginary part
    return g * 1j


conj_physical = defop("conj_physical(Tensor self) -> Tensor", K.conj_physical, promote=None,
                      inplace=True)


@conj_physical.def_backward
def _(ctx, g, self):
    return g.conj_physical()


@public("conj", method=True)
def conj(input):
    """Complex conjugate (a copy here; real tensors are returned as they are)."""
    return conj_physical(input) if input.is_complex() else input


@expand.def_backward
def _(ctx, g, self, size, implicit):
    return g          # reduced to self's shape by the engine (Note [grad shapes])


basic_index = OpDef("_basic_index(Tensor(a) self, Any index) -> Tensor(a)", K.basic_index,
                    promote=None, grad_name="SliceBackward0")
basic_index_backward = OpDef("_basic_index_backward(Tensor grad, int[] shape, Any index) -> "
                             "Tensor", K.basic_index_backward, promote=None,
                             grad_name="IndexBackward0")


@basic_index.def_backward
def _(ctx, g, self, index):
    return basic_index_backward(g, ctx.shapes[0], index)


@basic_index_backward.def_backward
def _(ctx, g, grad, shape, index):
    return basic_index(g, index)


# -------------------------------------------------------------------- copies, dtype


clone = defop("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", K.clone,
              promote=None)
to_copy = OpDef("_to_copy(Tensor self, *, ScalarType? dtype=None, "
                "MemoryFormat? memory_format=None) -> Tensor", K.to_copy,
                promote=None, grad_name="ToCopyBackward0")


@clone.def_backward
def _(ctx, g, self, memory_format):
    return g


@to_copy.def_backward
def _(ctx, g, self, dtype, memory_format):
    return g          # cast back to self's dtype by the engine


def _copy(a, src, non_blocking=False):
    try:
        return K.astype_warning(np.broadcast_to(src, a.shape), a.dtype)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({a.shape[-1] if a.ndim else 1}) must match "
                           f"the size of tensor b ({np.shape(src)[-1] if np.ndim(src) else 1}) "
                           f"at non-singleton dimension {a.ndim - 1}") from None


copy = OpDef("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor", _copy,
             promote=None, grad_name="CopyBackwards")
register(copy, function=False, method=False, inplace=True)


@copy.def_backward
def _(ctx, g, self, src, non_blocking):
    return g * 0, g


def _fill(a, value):
    if np.ndim(value):
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{np.ndim(value)} dimensions.")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = scalar_for(value, a.dtype)
    return np.full(a.shape, value, a.dtype)


def scalar_for(value, np_dtype):
    """A Python number as a 0-d array of ``np_dtype`` with the range check torch's ops run
    on a Scalar argument (naming the C type: 'uint8_t', 'int')."""
    from ember._creation import _convert_scalar
    from ember._dtype import from_numpy_dtype
    try:
        return _convert_scalar(value, from_numpy_dtype(np_dtype))
    except RuntimeError as e:
        from ember._kernels.factory import _C_NAMES
        name = np.dtype(np_dtype).name
        c = _C_NAMES.get(name, name + "_t")
        raise RuntimeError(str(e).replace(f"type {name} ", f"type {c} ")) from None


fill = OpDef("fill.Tensor(Tensor self, Tensor value) -> Tensor", _fill, promote=None)
register(fill, function=True, method=False, inplace=True)


@fill.def_backward
def _(ctx, g, self, value):
    return g * 0, g.sum()


zero = OpDef("zero(Tensor self) -> Tensor", np.zeros_like, promote=None)
register(zero, function=False, method=False, inplace=True)      # zero_ (torch's ZeroBackward0)
FUNCTIONS["zero_"] = METHODS["zero_"]


@zero.def_backward
def _(ctx, g, self):
    return g * 0


# -------------------------------------------------------------------- matmul

matmul = defop("matmul(Tensor self, Tensor other) -> Tensor", half_in_float32(K.matmul),
               promote=None, saves=("self", "other"), autocast="lower",
               grad_name="MmBackward0").saved_for({"self": ("other",), "other": ("self",)})


@matmul.def_backward
def _(ctx, g, self, other):
    n = ctx.needs_input_grad
    a, b = self, other
    ga = gb = None
    if a.ndim == 1 and b.ndim == 1:          # dot product
        return (g * conj_if_complex(b) if n[0] else None,
                g * conj_if_complex(a) if n[1] else None)
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = g2.unsqueeze(-2)
    if b.ndim == 1:
        g2 = g2.unsqueeze(-1)
    if n[0]:
        ga = matmul(g2, conj_if_complex(b2).mT)
        if a.ndim == 1:
            ga = ga.squeeze(-2)
    if n[1]:
        if b.ndim == 2 and a.ndim > 2:
            # (..., m, k) @ (k, n): fold the batch into rows, one GEMM, no batch to sum
            rows = 1
            for s in a.shape[:-1]:
                rows *= s
            a_rows = conj_if_complex(a).reshape(rows, a.shape[-1])
            gb = _matmul_like(a_rows.mT, g.reshape(rows, g.shape[-1]), b)
        else:
            gb = matmul(conj_if_complex(a2).mT, g2)
        if b.ndim == 1:
            gb = gb.squeeze(-1)
    return ga, gb


def _matmul_like(x, y, like):
    """``x @ y`` (2-D) computed so that the result is laid out like ``like``: for a
    transposed (column-major) ``like`` such as ``weight.t()``, as ``(y^T x^T)^T``."""
    st = like.stride()
    if st[0] == 1 and st[1] == like.shape[0] and like.shape[0] != 1 and like.shape[1] != 1:
        return matmul(y.mT, x.mT).mT
    return matmul(x, y)


from ember._tensor import Tensor as _Tensor  # noqa: E402  (used by the rules above)
