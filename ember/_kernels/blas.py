"""Kernels of the matrix-product family: mm, bmm, mv, addmm/addmv/addr/addbmm/baddbmm,
dot/vdot, cross, trace, einsum, cdist.

Every product goes to BLAS through ``np.matmul`` / ``np.dot`` on the caller's arrays (NumPy
handles transposed layouts without a copy) and the ``add*`` kernels scale and accumulate
into the product's own buffer, so they allocate nothing beyond the result (plus
``beta * input`` when ``beta`` is neither 0 nor 1). Errors follow torch's classes and
messages. NumPy (and the standard library) only.
"""
import functools
import math
import warnings

import numpy as np

from ember import _dtype
from ember._kernels import split
from ember._kernels.fast_elementwise import add_bias_
from ember._kernels.util import wrap_dim

# torch's ScalarType names (``expected scalar type Float``) and C++ type names
# (``expected m1 and m2 to have the same dtype, but got: float != double``)
_SCALAR = _dtype.TYPE_NAMES
_CTYPE = {"float32": "float", "float64": "double", "float16": "c10::Half",
          "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int",
          "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
          "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
_CONVERT = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "int64_t", "int32": "int", "int16": "short",
            "int8": "int8_t", "uint8": "uint8_t", "bool": "bool"}


def sname(a):
    return _SCALAR.get(a.dtype.name, a.dtype.name)


def cname(a):
    return _CTYPE.get(a.dtype.name, a.dtype.name)


def _tensor(x, op, name, pos):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _no_bool(a, name):
    if a.dtype == np.bool_:
        raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")


def _shape(s):
    return "x".join(map(str, s))


def scalar(v, dtype, name="alpha", integral_float_error=False):
    """A ``Scalar`` argument (number or 0-dim tensor) converted the way torch converts it to
    the computation dtype: truncated for integers, an error for complex into real."""
    if not isinstance(v, (bool, int, float, complex)):
        v = v.item() if hasattr(v, "item") else v
    kind = dtype.kind
    if isinstance(v, complex) and kind != "c":
        if v.imag == 0:
            v = v.real
        else:
            raise RuntimeError(f"value cannot be converted to type "
                               f"{_CONVERT.get(dtype.name)} without overflow")
    if kind in "biu":
        if integral_float_error and isinstance(v, float):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               f"floating point number.")
        if kind == "b":
            return bool(v)
        return int(v)
    return v


def broadcast_input(inp, shape):
    """``inp`` expanded to ``shape`` with torch's ``expand`` errors (no copy)."""
    if inp.shape == tuple(shape):
        return inp
    if inp.ndim > len(shape):
        raise RuntimeError(f"expand(torch.{sname(inp)}Tensor{{{list(inp.shape)}}}, "
                           f"size={list(shape)}): the number of sizes provided ({len(shape)}) "
                           f"must be greater or equal to the number of dimensions in the tensor "
                           f"({inp.ndim})")
    lead = len(shape) - inp.ndim
    for i, s in enumerate(inp.shape):
        if s != 1 and s != shape[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({shape[lead + i]}) must match "
                               f"the existing size ({s}) at non-singleton dimension {lead + i}.  "
                               f"Target sizes: {list(shape)}.  Tensor sizes: {list(inp.shape)}")
    return np.broadcast_to(inp, tuple(shape))


def _accumulate(prod, inp, beta, alpha):
    """``beta * inp + alpha * prod`` written into ``prod`` (a fresh product buffer).
    ``beta == 0`` ignores ``inp`` (nan included), like BLAS and torch."""
    if alpha != 1:
        np.multiply(prod, alpha, out=prod)
    if beta != 0:
        if beta == 1:
            np.add(prod, inp, out=prod)
        elif prod.dtype == np.bool_:
            np.logical_or(prod, inp, out=prod)
        else:
            np.add(prod, np.multiply(inp, beta), out=prod)
    return prod


def _matmul(a, b):
    """``np.matmul`` keeping the operands' dtype (NumPy computes bfloat16 in float32). A
    contraction of length 1 (outer products) is one broadcast multiply, several times faster
    than a GEMM per batch entry."""
    r = np.multiply(a, b) if a.shape[-1] == 1 and a.ndim > 1 and b.ndim > 1 else \
        split.matmul(a, b)
    return r if r.dtype == a.dtype else r.astype(a.dtype)


def _product(fn, a, b, alpha, shape, dtype):
    """``fn(a, b)`` as a fresh array, or zeros when ``alpha == 0`` (nan in a, b ignored)."""
    if alpha == 0:
        return np.zeros(shape, dtype)
    r = fn(a, b)
    if type(r) is not np.ndarray or r.dtype != dtype:
        r = np.asarray(r).astype(dtype)
    return r


# -------------------------------------------------------------------- mm, bmm, mv

def mm(a, b):
    _tensor(a, "mm", "input", 1)
    _tensor(b, "mm", "mat2", 2)
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape(a.shape)} and "
                           f"{_shape(b.shape)})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {cname(a)} != "
                           f"{cname(b)}")
    _no_bool(a, "addmm_impl_cpu_")
    return _matmul(a, b)


def _check_bmm(a, b, name1="batch1", name2="batch2"):
    if a.ndim != 3:
        raise RuntimeError(f"{name1} must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError(f"{name2} must be a 3D tensor")


def bmm(a, b):
    _tensor(a, "bmm", "input", 1)
    _tensor(b, "bmm", "mat2", 2)
    _check_bmm(a, b)
    if b.shape[:2] != (a.shape[0], a.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {sname(a)} but found {sname(b)}")
    _no_bool(a, "bmm")
    return _matmul(a, b)


def _check_mv(inp, m, v, inp_dim):
    if m.ndim != 2 or v.ndim != 1 or inp_dim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {inp_dim}, {m.ndim}, "
                           f"{v.ndim}")
    n = inp.size if inp is not None else m.shape[0]
    if m.shape[1] != v.shape[0] or not (m.shape[0] == n or n == 1):
        isz = inp.shape[0] if inp is not None and inp.ndim else n
        raise RuntimeError(f"size mismatch, got input ({isz}), mat ({_shape(m.shape)}), "
                           f"vec ({v.shape[0]})")


def mv(m, v):
    _tensor(m, "mv", "input", 1)
    _tensor(v, "mv", "vec", 2)
    _check_mv(None, m, v, 1)
    if m.dtype != v.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {sname(v)}, "
                           f"{sname(m)}, and {sname(v)}")
    _no_bool(m, "addmv_impl_cpu")
    return _matmul(m, v)


# -------------------------------------------------------------------- add* variants

def _check_addmm_dtypes(inp, m1, m2):
    if inp.dtype != m2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {sname(inp)} and "
                           f"{sname(m2)}")
    if m1.dtype != m2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {sname(m1)} and "
                           f"{sname(m2)}")


def addmm(inp, m1, m2, beta=1, alpha=1):
    _tensor(inp, "addmm", "input", 1)
    _tensor(m1, "addmm", "mat1", 2)
    _tensor(m2, "addmm", "mat2", 3)
    _check_addmm_dtypes(inp, m1, m2)
    if m1.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {m1.ndim}-D tensor")
    if m2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {m2.ndim}-D tensor")
    if m1.shape[1] != m2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape(m1.shape)} and "
                           f"{_shape(m2.shape)})")
    _no_bool(m1, "addmm_impl_cpu_")
    shape = (m1.shape[0], m2.shape[1])
    inp = broadcast_input(inp, shape)
    beta, alpha = scalar(beta, inp.dtype, "beta"), scalar(alpha, inp.dtype, "alpha")
    return _accumulate(_product(_matmul, m1, m2, alpha, shape, inp.dtype), inp, beta, alpha)


def addmv(inp, m, v, beta=1, alpha=1):
    _tensor(inp, "addmv", "input", 1)
    _tensor(m, "addmv", "mat", 2)
    _tensor(v, "addmv", "vec", 3)
    _check_mv(inp, m, v, inp.ndim)
    if not inp.dtype == m.dtype == v.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {sname(inp)}, "
                           f"{sname(m)}, and {sname(v)}")
    _no_bool(m, "addmv_impl_cpu")
    shape = (m.shape[0],)
    inp = np.broadcast_to(inp, shape)
    beta, alpha = scalar(beta, inp.dtype, "beta"), scalar(alpha, inp.dtype, "alpha")
    return _accumulate(_product(_matmul, m, v, alpha, shape, inp.dtype), inp, beta, alpha)


def _outer(a, b):
    if a.dtype == np.bool_:
        return np.logical_and.outer(a, b)
    return np.multiply.outer(a, b)


def addr(inp, v1, v2, beta=1, alpha=1):
    _tensor(inp, "addr", "input", 1)
    _tensor(v1, "addr", "vec1", 2)
    _tensor(v2, "addr", "vec2", 3)
    if v1.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {v1.ndim}-D")
    if v2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {v2.ndim}-D")
    dt = v1.dtype
    beta = scalar(beta, dt, "beta", integral_float_error=True)
    alpha = scalar(alpha, dt, "alpha", integral_float_error=True)
    shape = (v1.shape[0], v2.shape[0])
    inp = broadcast_input(inp, shape)
    # torch computes addr elementwise as beta * inp + alpha * (v1 (x) v2): unlike addmm/addmv
    # (BLAS), alpha == 0 does not drop nan/inf from the vectors (0 * nan = nan).
    with np.errstate(invalid="ignore"):
        return _accumulate(_product(_outer, v1, v2, 1, shape, dt), inp, beta, alpha)


def addbmm(inp, b1, b2, beta=1, alpha=1):
    _tensor(inp, "addbmm", "input", 1)
    _tensor(b1, "addbmm", "batch1", 2)
    _tensor(b2, "addbmm", "batch2", 3)
    _check_addmm_dtypes(inp, b1, b2)
    _check_bmm(b1, b2)
    if b1.shape[0] != b2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{b1.shape[0]} and {b2.shape[0]}")
    if b1.shape[2] != b2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({_shape(b1.shape[1:])} and "
                           f"{_shape(b2.shape[1:])})")
    _no_bool(b1, "addbmm")
    shape = (b1.shape[1], b2.shape[2])
    inp = broadcast_input(inp, shape)
    beta, alpha = scalar(beta, inp.dtype, "beta"), scalar(alpha, inp.dtype, "alpha")
    # one GEMM over the (batch, k) contraction: (n, b*k) @ (b*k, p)
    prod = _product(lambda a, b: np.tensordot(a, b, axes=((0, 2), (0, 1))), b1, b2, alpha,
                    shape, inp.dtype)
    return _accumulate(prod, inp, beta, alpha)


def baddbmm(inp, b1, b2, beta=1, alpha=1):
    _tensor(inp, "baddbmm", "input", 1)
    _tensor(b1, "baddbmm", "batch1", 2)
    _tensor(b2, "baddbmm", "batch2", 3)
    _check_bmm(b1, b2)
    if b2.shape[:2] != (b1.shape[0], b1.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b1.shape[0]}, {b1.shape[2]}] but got: "
                           f"[{b2.shape[0]}, {b2.shape[1]}].")
    if inp.dtype != b1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {cname(inp)}, batch1: "
                           f"{cname(b1)}, batch2: {cname(b2)}")
    if b1.dtype != b2.dtype:
        raise RuntimeError(f"expected scalar type {sname(b1)} but found {sname(b2)}")
    _no_bool(b1, "baddbmm")
    shape = (b1.shape[0], b1.shape[1], b2.shape[2])
    inp = broadcast_input(inp, shape)
    beta, alpha = scalar(beta, inp.dtype, "beta"), scalar(alpha, inp.dtype, "alpha")
    return _accumulate(_product(_matmul, b1, b2, alpha, shape, inp.dtype), inp, beta, alpha)


# -------------------------------------------------------------------- dot, vdot

def _check_dot(a, b, op):
    _tensor(a, op, "input", 1)
    _tensor(b, op, "tensor" if op == "dot" else "other", 2)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype != b.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{sname(a)} and {sname(b)}")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    _no_bool(a, "dot")


def dot(a, b):
    _check_dot(a, b, "dot")
    return np.asarray(np.dot(a, b), a.dtype)


def vdot(a, b):
    _check_dot(a, b, "vdot")
    return np.asarray(np.vdot(a, b), a.dtype)


# -------------------------------------------------------------------- cross, trace

_cross_warned = [False]


def default_cross_dim(shape):
    for i, s in enumerate(shape):
        if s == 3:
            return i
    raise RuntimeError("no dimension of size 3 in input")


def cross(a, b, dim=None):
    _tensor(a, "cross", "input", 1)
    _tensor(b, "cross", "other", 2)
    if dim is None:
        if not _cross_warned[0]:
            _cross_warned[0] = True
            warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                          "Please either pass the dim explicitly or simply use "
                          "torch.linalg.cross.\nThe default value of dim will change to agree "
                          "with that of linalg.cross in a future release.", UserWarning,
                          stacklevel=5)
        dim = default_cross_dim(a.shape)
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = wrap_dim(dim, a.ndim)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[d]} and {b.shape[d]}")
    for i, (x, y) in enumerate(zip(a.shape, b.shape)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                               f"({y}) at non-singleton dimension {i}")
    _no_bool(a, "cross")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {sname(a)} but found {sname(b)}")
    a0, a1, a2 = (np.take(a, i, axis=d) for i in range(3))
    b0, b1, b2 = (np.take(b, i, axis=d) for i in range(3))
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=d)


def trace(a):
    _tensor(a, "trace", "input", 1)
    if a.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {a.ndim}")
    _no_bool(a, "trace")
    if a.dtype.kind in "iu":
        return np.asarray(np.trace(a, dtype=np.int64))
    return np.asarray(np.trace(a), a.dtype)


def trace_backward(g, shape):
    """``g`` (0-dim) times the identity of ``shape``."""
    out = np.zeros(shape, g.dtype)
    n = min(shape)
    out[np.arange(n), np.arange(n)] = g
    return out


# -------------------------------------------------------------------- einsum

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _is_letter(c):
    return ("a" <= c <= "z") or ("A" <= c <= "Z")


def einsum_parse(equation, shapes):
    """Cached ``_einsum_parse`` (the same equation and shapes recur in training loops)."""
    return _einsum_parse_cached(equation, tuple(tuple(s) for s in shapes))


def _einsum_parse(equation, shapes):
    """Parse a torch einsum equation for operands of ``shapes``.

    Returns ``(terms, out, sizes)``: every operand's subscripts and the output's as strings of
    letters only (ellipses expanded into fresh letters, right-aligned and broadcast as in
    torch), and each letter's size after broadcasting. Raises torch's errors."""
    num_ops = len(shapes)
    if num_ops == 0:
        raise RuntimeError("einsum(): must provide at least one operand")
    lhs, arrow, rhs = equation.partition("->")
    # ---- operands
    op_labels = [[]]             # per operand: letters and None for the ellipsis
    has_ell = [False]
    dots = 0
    for i, c in enumerate(lhs):
        if c == " ":
            continue
        if c == ".":
            if has_ell[-1]:
                raise RuntimeError(f"einsum(): found '.' for operand {len(op_labels) - 1} for "
                                   f"which an ellipsis was already found")
            dots += 1
            if dots == 3:
                op_labels[-1].append(None)
                has_ell[-1] = True
                dots = 0
            continue
        if dots:
            raise RuntimeError(f"einsum(): found '.' for operand {len(op_labels) - 1} that is "
                               f"not part of any ellipsis")
        if c == ",":
            if len(op_labels) >= num_ops:
                raise RuntimeError("einsum(): fewer operands were provided than specified in "
                                   "the equation")
            op_labels.append([])
            has_ell.append(False)
            continue
        if not _is_letter(c):
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               f"string, subscripts must be in [a-zA-Z]")
        op_labels[-1].append(c)
    if dots:
        raise RuntimeError(f"einsum(): found '.' for operand {len(op_labels) - 1} that is not "
                           f"part of any ellipsis")
    if len(op_labels) < num_ops:
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    # ---- ellipsis dims and sizes
    ell_ndim = 0
    for k, (labels, shape) in enumerate(zip(op_labels, shapes)):
        n_sub = len(labels) - (1 if has_ell[k] else 0)
        if has_ell[k]:
            if n_sub > len(shape):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n_sub}) "
                                   f"is more than the number of dimensions ({len(shape)}) for "
                                   f"operand {k}")
            ell_ndim = max(ell_ndim, len(shape) - n_sub)
        elif n_sub != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n_sub}) "
                               f"does not match the number of dimensions ({len(shape)}) for "
                               f"operand {k} and no ellipsis was given")
    used = {c for labels in op_labels for c in labels if c is not None}
    used |= {c for c in rhs if _is_letter(c)}
    free = [c for c in _LETTERS if c not in used]
    if ell_ndim > len(free):
        raise RuntimeError("einsum(): too many subscripts (ellipsis dimensions included)")
    ell_letters = "".join(free[:ell_ndim])
    terms = []
    sizes = {}
    ell_sizes = [1] * ell_ndim
    for k, (labels, shape) in enumerate(zip(op_labels, shapes)):
        term = []
        dim = 0
        for c in labels:
            if c is None:
                n = len(shape) - (len(labels) - 1)
                letters = ell_letters[ell_ndim - n:] if n else ""
                for j, e in enumerate(letters):
                    s = shape[dim + j]
                    pos = ell_ndim - n + j
                    if s != 1:
                        if ell_sizes[pos] not in (1, s):
                            raise RuntimeError(
                                f"einsum(): dimension {pos} covered by ellipsis in operand {k}"
                                f"has size {s} which does not broadcast with previously seen "
                                f"ellipsis with size {ell_sizes[pos]} for the respective "
                                f"dimension")
                        ell_sizes[pos] = s
                    term.append(e)
                dim += n
                continue
            s = shape[dim]
            if c in term:
                first = shape[term.index(c)]
                if first != s:
                    raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but "
                                       f"the sizes don't match, {s} != {first}")
            elif c in sizes and s != 1 and sizes[c] != 1 and sizes[c] != s:
                raise RuntimeError(f"einsum(): subscript {c} has size {s} for operand {k} which "
                                   f"does not broadcast with previously seen size {sizes[c]}")
            if s != 1 or c not in sizes:
                sizes[c] = s
            term.append(c)
            dim += 1
        terms.append("".join(term))
    for e, s in zip(ell_letters, ell_sizes):
        sizes[e] = s
    # ---- output
    if arrow:
        out = []
        dots = 0
        base = len(lhs) + 2
        for i, c in enumerate(rhs):
            if c == " ":
                continue
            if c == ".":
                if dots < 0:
                    raise RuntimeError("einsum(): found '.' for output that is not part of any "
                                       "ellipsis")
                dots += 1
                if dots == 3:
                    out.extend(ell_letters)
                    dots = -1
                continue
            if dots > 0:
                raise RuntimeError("einsum(): found '.' for output that is not part of any "
                                   "ellipsis")
            if not _is_letter(c):
                raise RuntimeError(f"einsum(): invalid subscript given at index {base + i} in "
                                   f"the equation string, subscripts must be in [a-zA-Z]")
            if c in out:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   f"the output")
            if c not in sizes:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   f"equation for any input operand")
            out.append(c)
        if dots > 0:
            raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis")
        out = "".join(out)
    else:
        counts = {}
        for t in terms:
            for c in t:
                if c not in ell_letters:
                    counts[c] = counts.get(c, 0) + 1
        out = ell_letters + "".join(sorted(c for c, n in counts.items() if n == 1))
    return tuple(terms), out, sizes


_einsum_parse_cached = functools.lru_cache(maxsize=1024)(_einsum_parse)


def _sums_alone(terms, out):
    """Does some subscript occur in one operand only and not in the output?"""
    return any(sum(c in t for t in terms) == 1 and c not in out for t in terms for c in t)


_BLAS_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def _pair_as_matmul(terms, out, a, b):
    """Two operands whose subscripts each occur once per term, every one in the output or
    in both operands: one batched matrix product, as torch contracts a pair (batch letters
    in both operands and the output, kept ones in one operand, summed ones in both), the
    operands reshaped as views where their layout allows. None otherwise."""
    ta, tb = terms
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or len(set(out)) != len(out):
        return None
    batch = [c for c in out if c in ta and c in tb]
    left = [c for c in out if c in ta and c not in tb]
    right = [c for c in out if c in tb and c not in ta]
    summed = [c for c in ta if c in tb and c not in out]
    if len(batch) + len(left) + len(summed) != len(ta) or \
            len(batch) + len(right) + len(summed) != len(tb):
        return None                     # a letter summed within one operand
    size = dict(zip(ta, a.shape))
    if any(size.get(c, m) != m for c, m in zip(tb, b.shape)):
        return None                     # a size-1 dimension broadcast
    size.update(zip(tb, b.shape))
    n = math.prod
    nb, nl, nr, ns = (n(size[c] for c in g) for g in (batch, left, right, summed))
    if nb > 1 and nl * nr * ns <= 16:
        return None                     # many tiny products (elementwise ones): np.einsum's
    a3 = _as_matrices(a, ta, batch, left, summed, (nb, nl, ns))
    b3 = _as_matrices(b, tb, batch, summed, right, (nb, ns, nr))
    r = np.matmul(a3, b3)
    order = batch + left + right
    r = r.reshape([size[c] for c in order])
    r = r.transpose([order.index(c) for c in out])
    return r if r.flags.c_contiguous else r.copy()


def _as_matrices(a, term, batch, rows, cols, shape):
    """``a`` (subscripts ``term``) as a stack of matrices ``shape`` (batch, rows, cols): a
    view where its layout allows, read transposed if need be (BLAS takes either), else a
    copy."""
    def view(order, dims):
        try:
            return a.transpose([term.index(c) for c in order]).reshape(dims, copy=False)
        except ValueError:
            return None
    m = view(batch + rows + cols, shape)
    if m is None:
        m = view(batch + cols + rows, (shape[0], shape[2], shape[1]))
        m = m.swapaxes(1, 2) if m is not None else \
            a.transpose([term.index(c) for c in batch + rows + cols]).reshape(shape)
    return m


def einsum_compute(terms, out, arrays):
    """``np.einsum`` on parsed subscripts; a fresh array, BLAS for two or more operands (a
    pair as one batched matrix product where it maps to one)."""
    if len(arrays) == 2 and arrays[0].dtype == arrays[1].dtype and \
            arrays[0].dtype in _BLAS_DTYPES and min(arrays[0].size, arrays[1].size) > 0:
        r = _pair_as_matmul(terms, out, arrays[0], arrays[1])
        if r is not None:
            return r
    eq = ",".join(terms) + "->" + out
    if len(arrays) == 1:
        a = arrays[0]
        if a.dtype.kind in "biu" and len(set(terms[0])) > len(out):
            # torch sums a lone operand with ``sum``: small integers accumulate in int64
            return np.asarray(np.einsum(eq, a, dtype=np.int64))
        r = np.einsum(eq, a)
    else:
        # the naive loop costs the product of all subscript sizes; past a small size the
        # optimizer's contraction order and BLAS (tensordot) win despite its planning cost
        sizes = {}
        for t, a in zip(terms, arrays):
            for c, n in zip(t, a.shape):
                sizes[c] = max(sizes.get(c, 1), n)
        work = 1
        for n in sizes.values():
            work *= n
        dt = arrays[0].dtype
        if len(arrays) == 2 and dt.kind in "iu" and _sums_alone(terms, out):
            # torch sums that operand first with ``sum``: the result is int64
            dt = np.dtype(np.int64)
            arrays = [a.astype(dt) for a in arrays]
        r = np.einsum(eq, *arrays, optimize=work > 65536)
    r = np.asarray(r)
    if r.dtype != arrays[0].dtype:
        return r.astype(arrays[0].dtype)
    if r.base is not None or any(np.may_share_memory(r, a) for a in arrays):
        r = r.copy()
    return r


def einsum(equation, tensors, path=None):
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not "
                        f"{type(equation).__name__}")
    for a in tensors[1:]:
        if a.dtype != tensors[0].dtype:
            raise RuntimeError(f"expected scalar type {sname(tensors[0])} but found {sname(a)}")
    terms, out, _ = einsum_parse(equation, [a.shape for a in tensors])
    if tensors and tensors[0].dtype == np.bool_:
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    return einsum_compute(terms, out, tensors)


# -------------------------------------------------------------------- cdist

def cdist_uses_mm(p, r1, r2, compute_mode):
    mode = 0 if compute_mode is None else compute_mode
    return p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25)))


def cdist(x1, x2, p=2.0, compute_mode=None):
    _tensor(x1, "cdist", "x1", 1)
    _tensor(x2, "cdist", "x2", 2)
    if x1.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dtype.kind != "f":
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{sname(x)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1.dtype != x2.dtype:
        raise RuntimeError(f"expected scalar type {sname(x1)} but found {sname(x2)}")
    if x1.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"\"cdist\" not implemented for '{sname(x1)}'")
    b1, b2 = x1.shape[:-2], x2.shape[:-2]
    nb = max(len(b1), len(b2))
    b1p, b2p = (1,) * (nb - len(b1)) + b1, (1,) * (nb - len(b2)) + b2
    for i, (s, t) in enumerate(zip(b1p, b2p)):
        if s != t and s != 1 and t != 1:
            raise RuntimeError(f"The size of tensor a ({s}) must match the size of tensor b ({t}) "
                               f"at non-singleton dimension {i}")
    r1, r2 = x1.shape[-2], x2.shape[-2]
    dt = x1.dtype
    if x1.size == 0 or x2.size == 0:
        batch = np.broadcast_shapes(b1, b2)
        return np.zeros(batch + (r1, r2), dt)
    if cdist_uses_mm(p, r1, r2, compute_mode):
        n1 = np.einsum("...i,...i->...", x1, x1)[..., :, None]
        n2 = np.einsum("...i,...i->...", x2, x2)[..., None, :]
        r = np.matmul(x1, np.swapaxes(x2, -1, -2))     # batch dims broadcast here
        np.multiply(r, -2, out=r)
        np.add(r, n1, out=r)
        np.add(r, n2, out=r)
        np.maximum(r, 0, out=r)
        return np.sqrt(r, out=r)
    if r1 * r2 >= 1024 or p not in (0, float("inf")):
        return _cdist_by_column(x1, x2, p)     # summed in coordinate order, as torch does
    d = np.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if p == 0:
        return np.count_nonzero(d, axis=-1).astype(dt)
    return d.max(-1) if d.shape[-1] else np.zeros(d.shape[:-1], dt)


def _pow_rounded(x, e, out=None):
    """``x ** e`` as torch's float32 cdist computes it: in double, rounded once."""
    if x.dtype != np.float32:
        return np.power(x, e, out=out)
    r = np.power(x.astype(np.float64), e)
    if out is None:
        return r.astype(np.float32)
    out[...] = r
    return out


def _cdist_by_column(x1, x2, p):
    """cdist accumulated one coordinate at a time: (..., P, R) temporaries only, instead of
    the (..., P, R, M) differences (cache-friendly when P * R is large)."""
    inf = p == float("inf")
    acc = None
    for k in range(x1.shape[-1]):
        d = np.subtract(x1[..., :, k, None], x2[..., None, :, k])
        np.abs(d, out=d)
        if p == 0:
            d = (d != 0).astype(d.dtype)
        elif p == 2:
            np.multiply(d, d, out=d)
        elif p != 1 and not inf:
            _pow_rounded(d, p, out=d)
        if acc is None:
            acc = d
        elif inf:
            np.maximum(acc, d, out=acc)
        else:
            np.add(acc, d, out=acc)
    if p == 2:
        np.sqrt(acc, out=acc)
    elif p not in (0, 1) and not inf:
        _pow_rounded(acc, 1.0 / p, out=acc)
    return acc


def cdist_sign(x1, x2, p, r):
    """The constant part of cdist's derivative: sign(x1_i - x2_j), restricted to the maximal
    coordinates for p = inf (torch's rule)."""
    d = x1[..., :, None, :] - x2[..., None, :, :]
    s = np.sign(d)
    if p == float("inf"):
        s = s * (np.abs(d) == r[..., None])
    return s


def pow_scalar(a, exponent):
    return np.power(a, exponent)


# -------------------------------------------------------------------- linear

def linear(x, w, b=None):
    """``x @ w.T + b``: x (..., in), w (out, in), b (out,) -> (..., out), one GEMM over the
    folded leading dims (the caller guarantees one dtype and a 2-D weight)."""
    k = x.shape[-1] if x.ndim else 1
    if x.ndim == 0 or k != w.shape[1]:
        rows = int(np.prod(x.shape[:-1])) if x.ndim else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and "
                           f"{w.shape[1]}x{w.shape[0]})")
    _no_bool(x, "addmm_impl_cpu_")
    rows = 1
    for d in x.shape[:-1]:
        rows *= d
    out = _matmul(x.reshape(rows, k), w.T)        # (not -1: k may be 0)
    if b is not None and not add_bias_(out, b):   # (large float32: over the threads)
        np.add(out, b, out=out)
    return out.reshape(x.shape[:-1] + (w.shape[0],))
