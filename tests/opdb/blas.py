"""Op database entries for the matrix products (ember/_ops/blas.py)."""
import re

import numpy as np

from opinfo import OpInfo, SampleInput, ErrorInput, make_arg, FLOATS, COMPLEX

MM_DTYPES = FLOATS + ("int64", "int32") + COMPLEX
GRAD = ("float64", "complex128")
TOL = dict(atol=1e-4, rtol=1e-5)
E = re.escape


def _scalars(dtype):
    """(beta, alpha) pairs for the add* ops in ``dtype``."""
    if dtype in COMPLEX:
        return [(1, 1), (0.5 - 1j, 2j), (0, 1.5)]
    if dtype in FLOATS:
        return [(1, 1), (0.5, -2.0), (0, 1.5)]
    if dtype == "bool":
        return [(1, 1), (True, True), (False, True)]
    return [(1, 1), (2, -3), (0, 2)]


def _nan_input(shape, dtype, rng):
    x = make_arg(shape, dtype, rng)
    x[...] = np.nan
    return x


def _blend(inp, prod, beta=1, alpha=1):
    """``beta * inp + alpha * prod`` where beta == 0 ignores ``inp`` (nan included)."""
    r = prod * alpha if alpha != 1 else prod
    if beta != 0:
        if prod.dtype == np.bool_:
            r = np.logical_or(r, inp)
        else:
            r = r + (inp * beta if beta != 1 else inp)
    return np.asarray(r).astype(prod.dtype)


def _f(dt, rng, *shapes, nc=False):
    return tuple(make_arg(s, dt, rng, noncontiguous=nc) for s in shapes)


# -------------------------------------------------------------------- mm, bmm, mv

def _mm_samples(dt, rng):
    out = [SampleInput(*_pair(_f(dt, rng, a, b))) for a, b in
           [((3, 4), (4, 5)), ((1, 1), (1, 1)), ((0, 3), (3, 4)), ((3, 0), (0, 4)),
            ((3, 4), (4, 0))]]
    a, b = _f(dt, rng, (3, 4), (4, 2), nc=True)
    out.append(SampleInput(a, (b,), name="noncontig"))
    out.append(SampleInput(make_arg((4, 3), dt, rng).T, (make_arg((2, 4), dt, rng).T,),
                           name="transposed"))
    return out


def _pair(t):
    return t[0], t[1:]


def _mm_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    d = make_arg((3, 5), "float64", rng)
    return [ErrorInput(SampleInput(f(2, 3), (f(4, 5),)), RuntimeError,
                       E("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")),
            ErrorInput(SampleInput(f(2, 3), (d,)), RuntimeError,
                       E("expected m1 and m2 to have the same dtype, but got: float != double")),
            ErrorInput(SampleInput(f(3), (f(3, 5),)), RuntimeError, "self must be a matrix"),
            ErrorInput(SampleInput(f(2, 3), (f(3),)), RuntimeError, "mat2 must be a matrix"),
            ErrorInput(SampleInput(f(2, 3), (2,)), TypeError,
                       E("mm(): argument 'mat2' (position 2) must be Tensor, not int")),
            ErrorInput(SampleInput(f(2, 3) > 0, (f(3, 2) > 0,)), NotImplementedError, "Bool")]


def _bmm_samples(dt, rng):
    out = [SampleInput(*_pair(_f(dt, rng, a, b))) for a, b in
           [((2, 3, 4), (2, 4, 5)), ((1, 2, 2), (1, 2, 3)), ((0, 3, 4), (0, 4, 5)),
            ((2, 0, 3), (2, 3, 4)), ((2, 3, 0), (2, 0, 2))]]
    a, b = _f(dt, rng, (2, 3, 2), (2, 2, 3), nc=True)
    out.append(SampleInput(a, (b,), name="noncontig"))
    return out


def _bmm_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 2, 3), (f(2, 4, 5),)), RuntimeError,
                       E("Expected size for first two dimensions of batch2 tensor to be: [2, 3] "
                         "but got: [2, 4].")),
            ErrorInput(SampleInput(f(2, 2, 3), (f(3, 3, 5),)), RuntimeError,
                       E("to be: [2, 3] but got: [3, 3].")),
            ErrorInput(SampleInput(f(2, 3), (f(2, 3, 5),)), RuntimeError,
                       "batch1 must be a 3D tensor"),
            ErrorInput(SampleInput(f(2, 2, 3), (f(3, 5),)), RuntimeError,
                       "batch2 must be a 3D tensor"),
            ErrorInput(SampleInput(f(2, 2, 3), (make_arg((2, 3, 5), "float64", rng),)),
                       RuntimeError, "expected scalar type Float but found Double")]


def _mv_samples(dt, rng):
    out = [SampleInput(*_pair(_f(dt, rng, a, b))) for a, b in
           [((3, 4), (4,)), ((1, 1), (1,)), ((0, 4), (4,)), ((3, 0), (0,))]]
    a, b = _f(dt, rng, (3, 4), (4,), nc=True)
    out.append(SampleInput(a, (b,), name="noncontig"))
    out.append(SampleInput(make_arg((4, 3), dt, rng).T, (make_arg((4,), dt, rng),),
                           name="transposed"))
    return out


def _mv_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 3), (f(4),)), RuntimeError,
                       E("size mismatch, got input (2), mat (2x3), vec (4)")),
            ErrorInput(SampleInput(f(3), (f(3),)), RuntimeError,
                       E("vector + matrix @ vector expected, got 1, 1, 1")),
            ErrorInput(SampleInput(f(2, 3), (f(3, 1),)), RuntimeError,
                       E("vector + matrix @ vector expected, got 1, 2, 2")),
            ErrorInput(SampleInput(f(2, 3), (make_arg((3,), "float64", rng),)), RuntimeError,
                       E("addmv input tensors must have the same dtype, but got Double, Float, "
                         "and Double"))]


# -------------------------------------------------------------------- add* variants

def _add_samples(in_shapes, a_shape, b_shape, empty):
    def gen(dt, rng):
        out = []
        for i, s in enumerate(in_shapes):
            beta, alpha = _scalars(dt)[i % 3]
            out.append(SampleInput(make_arg(s, dt, rng), _f(dt, rng, a_shape, b_shape),
                                   {"beta": beta, "alpha": alpha}, name=f"in{s}"))
        out.append(SampleInput(make_arg(in_shapes[0], dt, rng, noncontiguous=True),
                               _f(dt, rng, a_shape, b_shape, nc=True), name="noncontig"))
        if dt in FLOATS + COMPLEX:
            out.append(SampleInput(_nan_input(in_shapes[0], dt, rng),
                                   _f(dt, rng, a_shape, b_shape), {"beta": 0},
                                   name="beta0-nan"))
        for s, a, b in empty:
            out.append(SampleInput(make_arg(s, dt, rng), _f(dt, rng, a, b), name="empty"))
        return out
    return gen


def _addmm_ref(inp, m1, m2, beta=1, alpha=1):
    return _blend(inp, np.matmul(m1, m2), beta, alpha)


def _addmv_ref(inp, m, v, beta=1, alpha=1):
    return _blend(inp, np.matmul(m, v), beta, alpha)


def _addr_ref(inp, v1, v2, beta=1, alpha=1):
    prod = np.logical_and.outer(v1, v2) if v1.dtype == np.bool_ else np.outer(v1, v2)
    if v1.dtype == np.bool_ and not alpha:
        prod = np.zeros_like(prod)
        alpha = 1
    return _blend(inp, prod, beta, alpha)


def _addbmm_ref(inp, b1, b2, beta=1, alpha=1):
    prod = np.einsum("bnk,bkp->np", b1, b2) if b1.size or b2.size else \
        np.zeros((b1.shape[1], b2.shape[2]), b1.dtype)
    return _blend(inp, prod.astype(b1.dtype), beta, alpha)


def _baddbmm_ref(inp, b1, b2, beta=1, alpha=1):
    return _blend(inp, np.matmul(b1, b2), beta, alpha)


def _addmm_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    d = lambda *s: make_arg(s, "float64", rng)  # noqa: E731
    i = lambda *s: make_arg(s, "int64", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 5), (f(2, 3), f(4, 5))), RuntimeError,
                       E("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")),
            ErrorInput(SampleInput(f(3), (f(2, 3), f(3, 5))), RuntimeError,
                       E("The expanded size of the tensor (5) must match the existing size (3) at "
                         "non-singleton dimension 1.  Target sizes: [2, 5].  Tensor sizes: [3]")),
            ErrorInput(SampleInput(f(2, 5, 1), (f(2, 3), f(3, 5))), RuntimeError,
                       E("expand(torch.FloatTensor{[2, 5, 1]}, size=[2, 5]): the number of "
                         "sizes provided (2) must be greater or equal to the number of "
                         "dimensions in the tensor (3)")),
            ErrorInput(SampleInput(d(2, 5), (f(2, 3), f(3, 5))), RuntimeError,
                       E("self and mat2 must have the same dtype, but got Double and Float")),
            ErrorInput(SampleInput(f(2, 5), (d(2, 3), f(3, 5))), RuntimeError,
                       E("mat1 and mat2 must have the same dtype, but got Double and Float")),
            ErrorInput(SampleInput(f(2, 5), (f(3), f(3, 5))), RuntimeError,
                       E("mat1 must be a matrix, got 1-D tensor")),
            ErrorInput(SampleInput(f(2, 5), (f(2, 3), f(3))), RuntimeError,
                       E("mat2 must be a matrix, got 1-D tensor")),
            ErrorInput(SampleInput(f(2, 5), (f(2, 3), f(3, 5)), {"alpha": 1j}), RuntimeError,
                       E("value cannot be converted to type float without overflow")),
            ErrorInput(SampleInput(i(2, 5), (i(2, 3), i(3, 5)), {"beta": 1j}), RuntimeError,
                       E("value cannot be converted to type int64_t without overflow")),
            ErrorInput(SampleInput(2, (f(2, 3), f(3, 5))), TypeError,
                       E("addmm(): argument 'input' (position 1) must be Tensor, not int"))]


def _addmv_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    d = lambda *s: make_arg(s, "float64", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2), (f(2, 3), f(4))), RuntimeError,
                       E("size mismatch, got input (2), mat (2x3), vec (4)")),
            ErrorInput(SampleInput(f(3), (f(2, 3), f(3))), RuntimeError,
                       E("size mismatch, got input (3), mat (2x3), vec (3)")),
            ErrorInput(SampleInput(f(2), (f(3), f(3))), RuntimeError,
                       E("vector + matrix @ vector expected, got 1, 1, 1")),
            ErrorInput(SampleInput(f(2), (f(2, 3), d(3))), RuntimeError,
                       E("addmv input tensors must have the same dtype, but got Float, Float, "
                         "and Double"))]


def _addr_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    i = lambda *s: make_arg(s, "int64", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 3), (f(2, 1), f(3))), RuntimeError,
                       E("addr: Expected 1-D argument vec1, but got 2-D")),
            ErrorInput(SampleInput(f(2, 3), (f(2), f(3, 1))), RuntimeError,
                       E("addr: Expected 1-D argument vec2, but got 2-D")),
            ErrorInput(SampleInput(f(4, 3), (f(2), f(3))), RuntimeError,
                       E("The expanded size of the tensor (2) must match the existing size (4)")),
            ErrorInput(SampleInput(i(2, 3), (i(2), i(3)), {"beta": 1.5}), RuntimeError,
                       E("For integral input tensors, argument beta must not be a floating "
                         "point number.")),
            ErrorInput(SampleInput(i(2, 3), (i(2), i(3)), {"alpha": 1.5}), RuntimeError,
                       "argument alpha must not be a floating point number")]


def _addbmm_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    d = lambda *s: make_arg(s, "float64", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 5), (f(3, 2, 3), f(2, 3, 5))), RuntimeError,
                       E("batch1 and batch2 must have same number of batches, got 3 and 2")),
            ErrorInput(SampleInput(f(2, 5), (f(3, 2, 3), f(3, 4, 5))), RuntimeError,
                       E("Incompatible matrix sizes for bmm (2x3 and 4x5)")),
            ErrorInput(SampleInput(f(3, 5), (f(3, 2, 3), f(3, 3, 5))), RuntimeError,
                       E("Target sizes: [2, 5].  Tensor sizes: [3, 5]")),
            ErrorInput(SampleInput(f(3, 5), (f(2, 3), f(3, 3, 5))), RuntimeError,
                       "batch1 must be a 3D tensor"),
            ErrorInput(SampleInput(f(2, 5), (f(3, 2, 3), d(3, 3, 5))), RuntimeError,
                       E("self and mat2 must have the same dtype, but got Float and Double"))]


def _baddbmm_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    d = lambda *s: make_arg(s, "float64", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(3, 2, 5), (f(3, 2, 3), f(2, 3, 5))), RuntimeError,
                       E("Expected size for first two dimensions of batch2 tensor to be: [3, 3] "
                         "but got: [2, 3].")),
            ErrorInput(SampleInput(f(3, 3, 5), (f(3, 2, 3), f(3, 3, 5))), RuntimeError,
                       E("Target sizes: [3, 2, 5].  Tensor sizes: [3, 3, 5]")),
            ErrorInput(SampleInput(f(3, 5), (f(2, 3), f(3, 3, 5))), RuntimeError,
                       "batch1 must be a 3D tensor"),
            ErrorInput(SampleInput(d(3, 2, 5), (f(3, 2, 3), f(3, 3, 5))), RuntimeError,
                       E("Input dtypes must be the same, got: input double, batch1: float, "
                         "batch2: float")),
            ErrorInput(SampleInput(f(3, 2, 5), (f(3, 2, 3), d(3, 3, 5))), RuntimeError,
                       "expected scalar type Float but found Double")]


# -------------------------------------------------------------------- dot, vdot, inner, outer

def _vec_samples(dt, rng):
    out = [SampleInput(*_pair(_f(dt, rng, (5,), (5,)))),
           SampleInput(*_pair(_f(dt, rng, (0,), (0,))), name="empty"),
           SampleInput(*_pair(_f(dt, rng, (4,), (4,), nc=True)), name="noncontig")]
    return out


def _dot_errors():
    def gen(rng):
        f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
        return [ErrorInput(SampleInput(f(2, 3), (f(3),)), RuntimeError,
                           E("1D tensors expected, but got 2D and 1D tensors")),
                ErrorInput(SampleInput(f(2), (f(3),)), RuntimeError,
                           E("inconsistent tensor size, expected tensor [2] and src [3] to have "
                             "the same number of elements, but got 2 and 3 elements "
                             "respectively")),
                ErrorInput(SampleInput(f(3), (make_arg((3,), "float64", rng),)), RuntimeError,
                           E("dot : expected both vectors to have same dtype, but found Float "
                             "and Double")),
                ErrorInput(SampleInput(f(3) > 0, (f(3) > 0,)), NotImplementedError,
                           E('"dot" not implemented for \'Bool\''))]
    return gen


def _inner_samples(dt, rng):
    shapes = [((5,), (5,)), ((2, 3), (4, 3)), ((2, 3, 4), (5, 4)), ((), (2, 3)), ((3,), ()),
              ((0, 3), (2, 3)), ((2, 0), (3, 0))]
    out = [SampleInput(*_pair(_f(dt, rng, a, b))) for a, b in shapes]
    out.append(SampleInput(*_pair(_f(dt, rng, (2, 3), (2, 3), nc=True)), name="noncontig"))
    return out


def _inner_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 3), (f(2, 4),)), RuntimeError,
                       E("inner() the last dimension must match on both input tensors but got "
                         "shapes [2, 3] and [2, 4]")),
            ErrorInput(SampleInput(f(2, 3), (make_arg((5, 3), "float64", rng),)), RuntimeError,
                       "both inputs should have same dtype")]


def _outer_samples(dt, rng):
    return [SampleInput(*_pair(_f(dt, rng, (3,), (4,)))),
            SampleInput(*_pair(_f(dt, rng, (0,), (3,))), name="empty"),
            SampleInput(*_pair(_f(dt, rng, (3,), (2,), nc=True)), name="noncontig")]


def _outer_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 3), (f(3),)), RuntimeError,
                       E("outer: Expected 1-D argument self, but got 2-D")),
            ErrorInput(SampleInput(f(3), (f(3, 1),)), RuntimeError,
                       E("outer: Expected 1-D argument vec2, but got 2-D")),
            ErrorInput(SampleInput(f(), (f(3),)), RuntimeError,
                       E("outer: Expected 1-D argument self, but got 0-D"))]


def _kron_samples(dt, rng):
    shapes = [((2, 3), (4,)), ((2, 2), (2, 2)), ((), (3,)), ((), ()), ((2, 1, 3), (2, 2)),
              ((0, 2), (2, 2))]
    out = [SampleInput(*_pair(_f(dt, rng, a, b))) for a, b in shapes]
    out.append(SampleInput(*_pair(_f(dt, rng, (2, 3), (2,), nc=True)), name="noncontig"))
    return out


# -------------------------------------------------------------------- tensordot

def _tensordot_ref(a, b, dims=2):
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = [d % a.ndim for d in dims[0]], [d % b.ndim for d in dims[1]]
    for x, y in zip(da, db):
        if b.shape[y] == 1 and a.shape[x] != 1:
            a = a.sum(x, keepdims=True)
        elif a.shape[x] == 1 and b.shape[y] != 1:
            b = b.sum(y, keepdims=True)
    return np.tensordot(a, b, (da, db))


def _tensordot_samples(dt, rng):
    out = [SampleInput(*_pair(_f(dt, rng, (2, 3, 4), (3, 4, 2)))),
           SampleInput(make_arg((2, 3, 4), dt, rng), (make_arg((4, 5), dt, rng), 1)),
           SampleInput(make_arg((2, 3, 4), dt, rng), (make_arg((4, 3, 2), dt, rng),
                                                      ([1, 2], [1, 0]))),
           SampleInput(make_arg((2, 3), dt, rng), (make_arg((3, 2), dt, rng), 0)),
           SampleInput(make_arg((2, 3), dt, rng), (make_arg((3, 2), dt, rng), ([-1], [0]))),
           SampleInput(make_arg((2, 3), dt, rng), (make_arg((1, 2), dt, rng), ([1], [0])),
                       name="broadcast-contraction"),
           SampleInput(make_arg((2, 0), dt, rng), (make_arg((0, 3), dt, rng), 1), name="empty"),
           SampleInput(make_arg((3, 2), dt, rng, noncontiguous=True),
                       (make_arg((2, 3), dt, rng, noncontiguous=True), 1), name="noncontig")]
    return out


def _tensordot_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 3, 4), (f(3, 5), ([1], [1]))), RuntimeError,
                       E("contracted dimensions need to match, but first has size 3 in dim 1 "
                         "and second has size 5 in dim 1")),
            ErrorInput(SampleInput(f(2, 3, 4), (f(3, 5), -1)), RuntimeError,
                       E("tensordot expects dims >= 0, but got dims=-1")),
            ErrorInput(SampleInput(f(2, 3), (f(3, 5), 3)), RuntimeError,
                       E("tensordot expects dims < ndim_a or ndim_b, but got dims=3")),
            ErrorInput(SampleInput(f(2, 3, 4), (f(3, 5), ([1, 2], [0]))), RuntimeError,
                       "both dimension lists should have same length"),
            ErrorInput(SampleInput(f(2, 3), (make_arg((3, 5), "float64", rng), 1)),
                       RuntimeError, "both inputs should have same dtype"),
            ErrorInput(SampleInput(f(3, 3), (f(3, 3), ([0, 0], [0, 1]))), RuntimeError,
                       "dim 0 appears multiple times in the list of dims"),
            ErrorInput(SampleInput(f(2, 3, 4), (f(4, 3, 5), (1, 1))), TypeError,
                       E("tensordot(): argument 'dims_self' (position 3) must be tuple of "
                         "ints, not int"))]


# -------------------------------------------------------------------- einsum

def _einsum_ref(*args):
    if isinstance(args[0], str) and len(args) == 2 and isinstance(args[1], list):
        args = (args[0], *args[1])
    return np.asarray(np.einsum(*args))


def _einsum_samples(dt, rng):
    m = lambda *s: make_arg(s, dt, rng)  # noqa: E731
    E_ = Ellipsis
    out = [
        # sublist form (gradchecked)
        SampleInput(m(2, 3), ([0, 1], m(3, 4), [1, 2], [0, 2]), name="mm"),
        SampleInput(m(2, 3), ([0, 1], m(3, 4), [1, 2]), name="implicit"),
        SampleInput(m(3, 3), ([0, 0], [0]), name="diag"),
        SampleInput(m(3, 3), ([0, 0],), name="trace"),
        SampleInput(m(2, 3, 3), ([1, 0, 0], m(2, 3), [1, 0], []), name="diag-contract"),
        SampleInput(m(2, 2, 3), ([E_, 0, 1], m(3, 2), [1, 2], [E_, 0, 2]), name="ellipsis"),
        SampleInput(m(2, 3), ([0, 1], m(4), [2], [0, 2, 1]), name="outer"),
        SampleInput(m(2, 3), ([0, 1], [1]), name="sum"),
        SampleInput(m(2, 3), ([0, 1], [1, 0]), name="transpose"),
        SampleInput(m(), ([], m(3), [0], [0]), name="0d"),
        SampleInput(m(3), ([0], m(3), [0], m(3), [0], []), name="three"),
        SampleInput(m(1, 3), ([0, 1], m(2, 3), [0, 1], [0, 1]), name="broadcast"),
        SampleInput(m(2, 0), ([0, 1], m(0, 3), [1, 2], [0, 2]), name="empty"),
        SampleInput(make_arg((3, 2), dt, rng, noncontiguous=True),
                    ([0, 1], make_arg((2, 2), dt, rng, noncontiguous=True), [1, 2]),
                    name="noncontig"),
        # string forms (forward only; see grad_input_filter)
        SampleInput("ij,jk->ik", (m(2, 3), m(3, 4)), name="str"),
        SampleInput(" ij , jk ", (m(2, 3), m(3, 4)), name="str-implicit"),
        SampleInput("ba,ca", (m(2, 3), m(4, 3)), name="str-order"),
        SampleInput("...ij,...jk", (m(5, 2, 3), m(3, 4)), name="str-ellipsis"),
        SampleInput("i...->...", (m(2, 3, 4),), name="str-ellipsis-out"),
        SampleInput("...i,...i->...", (m(2, 1, 3), m(4, 3)), name="str-ellipsis-bcast"),
        SampleInput("ii->i", (m(3, 3),), name="str-diag"),
        SampleInput("bij,bjk->bik", ([m(2, 2, 3), m(2, 3, 2)],), name="str-list"),
        SampleInput("i,j,k->ijk", (m(2), m(3), m(2)), name="str-outer3"),
        SampleInput("ij->", (m(0, 3),), name="str-empty"),
    ]
    return out


def _einsum_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    return [ErrorInput(SampleInput("ij,jk->ik", (f(2, 3), f(4, 4))), RuntimeError,
                       E("einsum(): subscript j has size 4 for operand 1 which does not broadcast "
                         "with previously seen size 3")),
            ErrorInput(SampleInput("ij,jk->ik", (f(2, 3),)), RuntimeError,
                       E("einsum(): fewer operands were provided than specified in the "
                         "equation")),
            ErrorInput(SampleInput("ij", (f(2, 2), f(2, 2))), RuntimeError,
                       E("einsum(): more operands were provided than specified in the "
                         "equation")),
            ErrorInput(SampleInput("ijk,jk->ik", (f(2, 3), f(3, 4))), RuntimeError,
                       E("einsum(): the number of subscripts in the equation (3) does not match "
                         "the number of dimensions (2) for operand 0 and no ellipsis was "
                         "given")),
            ErrorInput(SampleInput("...ijk", (f(2, 2),)), RuntimeError,
                       E("einsum(): the number of subscripts in the equation (3) is more than "
                         "the number of dimensions (2) for operand 0")),
            ErrorInput(SampleInput("ii->i", (f(3, 4),)), RuntimeError,
                       E("einsum(): subscript i is repeated for operand 0 but the sizes don't "
                         "match, 4 != 3")),
            ErrorInput(SampleInput("ij->k", (f(2, 3),)), RuntimeError,
                       E("einsum(): output subscript k does not appear in the equation for any "
                         "input operand")),
            ErrorInput(SampleInput("ij->ii", (f(2, 3),)), RuntimeError,
                       E("einsum(): output subscript i appears more than once in the output")),
            ErrorInput(SampleInput("i1->i", (f(2),)), RuntimeError,
                       E("einsum(): invalid subscript given at index 1 in the equation string, "
                         "subscripts must be in [a-zA-Z]")),
            ErrorInput(SampleInput("i.j", (f(2, 2),)), RuntimeError,
                       E("einsum(): found '.' for operand 0 that is not part of any ellipsis")),
            ErrorInput(SampleInput("...i,...i->...i", (f(2, 3), f(4, 3))), RuntimeError,
                       "does not broadcast with previously seen ellipsis with size 2"),
            ErrorInput(SampleInput("ij,jk->ik", (f(2, 3), make_arg((3, 4), "float64", rng))),
                       RuntimeError, "expected scalar type Float but found Double"),
            ErrorInput(SampleInput("i", ()), ValueError,
                       E("einsum(): must specify the equation string and at least one operand")),
            ErrorInput(SampleInput(f(2, 3), ([0, 60],)), ValueError,
                       E("einsum(): subscript in subscript list is not within the valid range "
                         "[0, 52)"))]


# -------------------------------------------------------------------- cross, trace, kron

def _cross_ref(a, b, dim=None):
    if dim is None:
        dim = next(i for i, s in enumerate(a.shape) if s == 3)
    return np.cross(a, b, axis=dim)


def _cross_samples(dt, rng):
    m = lambda *s: make_arg(s, dt, rng)  # noqa: E731
    return [SampleInput(m(2, 3), (m(2, 3), 1)),
            SampleInput(m(3, 2), (m(3, 2),), {"dim": 0}),
            SampleInput(m(3), (m(3),), {"dim": -1}),
            SampleInput(m(1, 3), (m(4, 3),), {"dim": 1}, name="broadcast"),
            SampleInput(m(2, 3, 2), (m(2, 3, 2),), name="default-dim"),
            SampleInput(m(0, 3), (m(0, 3), 1), name="empty"),
            SampleInput(make_arg((2, 3), dt, rng, noncontiguous=True),
                        (make_arg((2, 3), dt, rng, noncontiguous=True),), {"dim": 1},
                        name="noncontig")]


def _cross_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 2), (f(2, 2),)), RuntimeError,
                       "no dimension of size 3 in input"),
            ErrorInput(SampleInput(f(2, 3), (f(2, 3),), {"dim": 0}), RuntimeError,
                       E("linalg.cross: inputs dimension 0 must have length 3. Got 2 and 2")),
            ErrorInput(SampleInput(f(3), (f(2, 3),), {"dim": -1}), RuntimeError,
                       E("linalg.cross: inputs must have the same number of dimensions.")),
            ErrorInput(SampleInput(f(2, 3), (f(2, 3),), {"dim": 2}), IndexError,
                       E("Dimension out of range (expected to be in range of [-2, 1], but got "
                         "2)")),
            ErrorInput(SampleInput(f(4, 3), (f(2, 3),), {"dim": 1}), RuntimeError,
                       E("The size of tensor a (4) must match the size of tensor b (2) at "
                         "non-singleton dimension 0")),
            ErrorInput(SampleInput(f(2, 3), (make_arg((2, 3), "float64", rng),), {"dim": 1}),
                       RuntimeError, "expected scalar type Float but found Double")]


def _trace_samples(dt, rng):
    return [SampleInput(make_arg((3, 3), dt, rng)), SampleInput(make_arg((2, 4), dt, rng)),
            SampleInput(make_arg((4, 2), dt, rng)), SampleInput(make_arg((0, 3), dt, rng)),
            SampleInput(make_arg((3, 3), dt, rng, noncontiguous=True), name="noncontig")]


def _trace_ref(x):
    return np.asarray(np.trace(x, dtype=np.int64 if x.dtype.kind in "iu" else x.dtype))


def _trace_errors(rng):
    return [ErrorInput(SampleInput(make_arg((3,), "float32", rng)), RuntimeError,
                       E("trace: expected a matrix, but got tensor with dim 1")),
            ErrorInput(SampleInput(make_arg((2, 2), "bool", rng)), NotImplementedError,
                       E("\"trace\" not implemented for 'Bool'"))]


# -------------------------------------------------------------------- chain_matmul

def _chain_samples(dt, rng):
    m = lambda *s: make_arg(s, dt, rng)  # noqa: E731
    return [SampleInput(m(2, 3), name="one"),
            SampleInput(m(2, 3), (m(3, 4),)),
            SampleInput(m(2, 3), (m(3, 4), m(4, 2))),
            SampleInput(m(4, 1), (m(1, 4), m(4, 3), m(3, 1)), name="four"),
            SampleInput(m(2, 0), (m(0, 3), m(3, 2)), name="empty")]


def _chain_ref(*ms):
    r = ms[0]
    for x in ms[1:]:
        r = r @ x
    return r


def _chain_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 3), (f(3),)), RuntimeError,
                       E("Tensor dimension is 1, expected 2 instead.")),
            ErrorInput(SampleInput(f(2, 3), (f(2, 3),)), RuntimeError,
                       E("multi_dot(): tensors 0 and 1 with shapes [2, 3] and [2, 3] cannot be "
                         "multiplied")),
            ErrorInput(SampleInput(f(2, 3), (make_arg((3, 2), "float64", rng),)), RuntimeError,
                       E("multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                         "float and tensor 1 double"))]


# -------------------------------------------------------------------- cdist

def _cdist_ref(x1, x2, p=2.0, compute_mode=None):
    d = np.abs(x1[..., :, None, :].astype(np.float64) - x2[..., None, :, :])
    if p == 0:
        r = (d != 0).sum(-1)
    elif p == np.inf:
        r = d.max(-1) if d.shape[-1] else np.zeros(d.shape[:-1])
    else:
        r = (d ** p).sum(-1) ** (1 / p)
    return r.astype(x1.dtype)


def _cdist_samples(dt, rng):
    m = lambda *s: make_arg(s, dt, rng, low=-3, high=3)  # noqa: E731
    out = [SampleInput(m(3, 2), (m(4, 2),), {"p": p}, name=f"p={p}")
           for p in (2.0, 1.0, 0.0, 0.5, 1.5, 3.0, float("inf"))]
    out += [SampleInput(m(2, 1, 3, 2), (m(2, 4, 2),), name="batch"),
            SampleInput(m(26, 2), (m(3, 2),), name="mm-path"),
            SampleInput(m(3, 2), (m(4, 2),), {"compute_mode": "use_mm_for_euclid_dist"},
                        name="mm-mode"),
            SampleInput(m(3, 2), (m(2, 2),), {"p": 1.5,
                                              "compute_mode": "donot_use_mm_for_euclid_dist"}),
            SampleInput(m(0, 2), (m(4, 2),), name="empty"),
            SampleInput(m(3, 0), (m(4, 0),), name="no-columns"),
            SampleInput(make_arg((3, 2), dt, rng, noncontiguous=True),
                        (make_arg((2, 2), dt, rng, noncontiguous=True),), name="noncontig")]
    return out


def _cdist_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    return [ErrorInput(SampleInput(f(3), (f(4, 3),)), RuntimeError,
                       E("cdist only supports at least 2D tensors, X1 got: 1D")),
            ErrorInput(SampleInput(f(2, 3), (f(3),)), RuntimeError,
                       E("cdist only supports at least 2D tensors, X2 got: 1D")),
            ErrorInput(SampleInput(f(2, 3), (f(4, 5),)), RuntimeError,
                       E("X1 and X2 must have the same number of columns. X1: 3 X2: 5")),
            ErrorInput(SampleInput(make_arg((2, 3), "int64", rng), (f(4, 3),)), RuntimeError,
                       E("cdist only supports floating-point dtypes, X1 got: Long")),
            ErrorInput(SampleInput(f(2, 3), (f(4, 3),), {"p": -1}), RuntimeError,
                       "cdist only supports non-negative p values"),
            ErrorInput(SampleInput(f(2, 3), (f(4, 3),), {"compute_mode": "foo"}), ValueError,
                       "foo is not a valid value for compute_mode"),
            ErrorInput(SampleInput(f(5, 2, 3), (f(3, 4, 3),)), RuntimeError,
                       E("The size of tensor a (5) must match the size of tensor b (3) at "
                         "non-singleton dimension 0")),
            ErrorInput(SampleInput(f(2, 3), (make_arg((4, 3), "float64", rng),)), RuntimeError,
                       "expected scalar type Float but found Double")]


# -------------------------------------------------------------------- cov, corrcoef

def _cov_ref(x, correction=1, fweights=None, aweights=None):
    return np.asarray(np.cov(x, ddof=correction, fweights=fweights, aweights=aweights))


def _cov_samples(dt, rng):
    m = lambda *s: make_arg(s, dt, rng)  # noqa: E731
    fw = rng.integers(1, 4, size=4).astype(np.int64)
    aw = rng.uniform(0.5, 2, size=4)
    out = [SampleInput(m(3, 4)), SampleInput(m(4)), SampleInput(m(2, 5), (), {"correction": 0}),
           SampleInput(m(3, 4), (), {"fweights": fw}, name="fweights"),
           SampleInput(m(3, 4), (), {"aweights": aw}, name="aweights"),
           SampleInput(m(3, 4), (), {"correction": 2, "fweights": fw, "aweights": aw},
                       name="both"),
           SampleInput(make_arg((2, 4), dt, rng, noncontiguous=True), name="noncontig")]
    return out


def _cov_errors(rng):
    f = lambda *s: make_arg(s, "float32", rng)  # noqa: E731
    i = lambda *s: make_arg(s, "int64", rng, low=1)  # noqa: E731
    return [ErrorInput(SampleInput(f(2, 3, 4)), RuntimeError,
                       E("cov(): expected input to have two or fewer dimensions but got an input "
                         "with 3 dimensions")),
            ErrorInput(SampleInput(f(3, 4) > 0), RuntimeError,
                       E("cov(): bool dtype is not supported for input")),
            ErrorInput(SampleInput(f(3, 4), (), {"fweights": f(4)}), RuntimeError,
                       E("cov(): expected fweights to have integral dtype but got fweights with "
                         "Float dtype")),
            ErrorInput(SampleInput(f(3, 4), (), {"fweights": i(1, 4)}), RuntimeError,
                       E("cov(): expected fweights to have one or fewer dimensions but got "
                         "fweights with 2 dimensions")),
            ErrorInput(SampleInput(f(3, 4), (), {"fweights": i(3)}), RuntimeError,
                       E("cov(): expected fweights to have the same numel as there are "
                         "observations in the input but got 3 != 4")),
            ErrorInput(SampleInput(f(3, 4), (), {"fweights": -i(4)}), RuntimeError,
                       E("cov(): fweights cannot be negative")),
            ErrorInput(SampleInput(f(3, 4), (), {"aweights": i(4)}), RuntimeError,
                       E("cov(): expected aweights to have floating point dtype but got "
                         "aweights with Long dtype")),
            ErrorInput(SampleInput(f(3, 4), (), {"aweights": -np.abs(f(4)) - 1}), RuntimeError,
                       E("cov(): aweights cannot be negative")),
            ErrorInput(SampleInput(f(3, 4), (), {"aweights": np.zeros(4, np.float32)}),
                       RuntimeError, E("cov(): weights sum to zero, can't be normalized"))]


def _corrcoef_samples(dt, rng):
    m = lambda *s: make_arg(s, dt, rng)  # noqa: E731
    return [SampleInput(m(3, 4)), SampleInput(m(4), name="1d"), SampleInput(m(2, 5)),
            SampleInput(m(1, 3), name="one-variable"),
            SampleInput(make_arg((2, 4), dt, rng, noncontiguous=True), name="noncontig")]


def _corrcoef_errors(rng):
    return [ErrorInput(SampleInput(make_arg((2, 3, 4), "float32", rng)), RuntimeError,
                       E("corrcoef(): expected input to have two or fewer dimensions but got an "
                         "input with 3 dimensions"))]


def _no_str(sample):
    return not isinstance(sample.input, str)


OPS = [
    # nn.functional.linear's record (internal): values, gradients, gradgradcheck, vmap and
    # errors against torch in tests/test_training_kernels.py
    OpInfo("linear", None, lambda dtype, rng: [], function=False, method=False,
           supports_grad=False, op_records=("linear",)),
    OpInfo("mm", np.matmul, _mm_samples, dtypes=MM_DTYPES, supports_out=True,
           grad_dtypes=GRAD, error_inputs=_mm_errors, op_records=("mm",), **TOL),
    OpInfo("bmm", np.matmul, _bmm_samples, dtypes=MM_DTYPES, supports_out=True,
           grad_dtypes=GRAD, error_inputs=_bmm_errors, op_records=("bmm",), **TOL),
    OpInfo("mv", np.matmul, _mv_samples, dtypes=MM_DTYPES, supports_out=True,
           grad_dtypes=GRAD, error_inputs=_mv_errors, op_records=("mv",), **TOL),
    OpInfo("addmm", _addmm_ref,
           _add_samples([(3, 5), (5,), (), (3, 1)], (3, 4), (4, 5),
                        [((2, 3), (2, 0), (0, 3)), ((0, 3), (0, 2), (2, 3))]),
           dtypes=MM_DTYPES, inplace="addmm_", supports_out=True, grad_dtypes=GRAD,
           error_inputs=_addmm_errors, op_records=("addmm", "addmm_"), **TOL),
    OpInfo("addmv", _addmv_ref,
           _add_samples([(3,), (), (1,)], (3, 4), (4,), [((2,), (2, 0), (0,))]),
           dtypes=MM_DTYPES, inplace="addmv_", supports_out=True, grad_dtypes=GRAD,
           error_inputs=_addmv_errors, op_records=("addmv", "addmv_"), **TOL),
    OpInfo("addr", _addr_ref,
           _add_samples([(3, 4), (4,), ()], (3,), (4,), [((0, 2), (0,), (2,))]),
           dtypes=MM_DTYPES + ("bool",), inplace="addr_", supports_out=True, grad_dtypes=GRAD,
           error_inputs=_addr_errors, op_records=("addr", "addr_"), **TOL),
    OpInfo("addbmm", _addbmm_ref,
           _add_samples([(3, 5), (5,), ()], (2, 3, 4), (2, 4, 5),
                        [((3, 2), (0, 3, 4), (0, 4, 2)), ((3, 2), (2, 3, 0), (2, 0, 2))]),
           dtypes=MM_DTYPES, inplace="addbmm_", supports_out=True, grad_dtypes=GRAD,
           error_inputs=_addbmm_errors, op_records=("addbmm", "addbmm_"), **TOL),
    OpInfo("baddbmm", _baddbmm_ref,
           _add_samples([(2, 3, 2), (2,), (1, 3, 1)], (2, 3, 4), (2, 4, 2),
                        [((0, 3, 2), (0, 3, 4), (0, 4, 2))]),
           dtypes=MM_DTYPES, inplace="baddbmm_", supports_out=True, grad_dtypes=GRAD,
           error_inputs=_baddbmm_errors, op_records=("baddbmm", "baddbmm_"), **TOL),
    OpInfo("dot", np.dot, _vec_samples, dtypes=MM_DTYPES, supports_out=True, grad_dtypes=GRAD,
           error_inputs=_dot_errors(), op_records=("dot",), **TOL),
    OpInfo("vdot", np.vdot, _vec_samples, dtypes=MM_DTYPES, supports_out=True,
           grad_dtypes=GRAD, error_inputs=_dot_errors(), op_records=("vdot",), **TOL),
    OpInfo("inner", np.inner, _inner_samples, dtypes=MM_DTYPES, supports_out=True,
           grad_dtypes=GRAD, error_inputs=_inner_errors, op_records=("inner",), **TOL),
    OpInfo("outer", np.outer, _outer_samples, dtypes=MM_DTYPES + ("bool",), supports_out=True,
           grad_dtypes=GRAD, error_inputs=_outer_errors, op_records=("outer",), **TOL),
    OpInfo("ger", np.outer, _outer_samples, dtypes=MM_DTYPES, supports_out=True,
           grad_dtypes=GRAD, op_records=("ger",), **TOL),
    OpInfo("kron", np.kron, _kron_samples, dtypes=MM_DTYPES + ("bool",), supports_out=True,
           grad_dtypes=GRAD, op_records=("kron",), **TOL),
    OpInfo("tensordot", _tensordot_ref, _tensordot_samples, dtypes=MM_DTYPES, method=False,
           supports_out=True, grad_dtypes=GRAD, error_inputs=_tensordot_errors,
           op_records=("tensordot",), **TOL),
    OpInfo("einsum", _einsum_ref, _einsum_samples, dtypes=MM_DTYPES, method=False,
           grad_dtypes=GRAD, error_inputs=_einsum_errors, grad_input_filter=_no_str,
           op_records=("einsum",), **TOL),
    OpInfo("cross", _cross_ref, _cross_samples, dtypes=MM_DTYPES, supports_out=True,
           grad_dtypes=GRAD, error_inputs=_cross_errors, op_records=("cross",), **TOL),
    OpInfo("trace", _trace_ref, _trace_samples, dtypes=MM_DTYPES, grad_dtypes=GRAD,
           error_inputs=_trace_errors, op_records=("trace",), **TOL),
    OpInfo("chain_matmul", _chain_ref, _chain_samples, dtypes=MM_DTYPES, method=False,
           supports_out=True, grad_dtypes=GRAD, error_inputs=_chain_errors,
           # the product order is the cheapest chain (as torch), the reference's left to right:
           # four float32 factors up to ~10 cancel to ~16 with 5e-4 between the two orders
           op_records=("chain_matmul",), atol=2e-3, rtol=1e-5),
    OpInfo("cdist", _cdist_ref, _cdist_samples, dtypes=FLOATS, method=False,
           error_inputs=_cdist_errors, op_records=("_cdist_forward", "_blas_pow"),
           atol=1e-3, rtol=1e-4),
    OpInfo("cov", _cov_ref, _cov_samples, dtypes=FLOATS + ("int64",) + COMPLEX,
           grad_dtypes=GRAD, error_inputs=_cov_errors, op_records=("cov",), **TOL),
    OpInfo("corrcoef", np.corrcoef, _corrcoef_samples, dtypes=FLOATS + ("int64",) + COMPLEX,
           grad_dtypes=GRAD, error_inputs=_corrcoef_errors, op_records=("corrcoef",), **TOL),
]
