"""``gradcheck`` / ``gradgradcheck``: compare autograd with central finite differences.

Inputs should be float64 (or complex128). As in torch:

- Jacobians are laid out ``(input numel, output numel)``: column ``j`` of the analytical
  one is the gradient of output element ``j``; row ``i`` of the numerical one is the
  central difference when input element ``i`` is perturbed.
- Complex inputs: the gradient autograd computes is the conjugate Wirtinger derivative
  ``dL/dx + i dL/dy``; the numerical column is formed the same way from the real and the
  imaginary perturbations.
- Complex outputs: the function is checked twice, through ``real(out)`` and ``imag(out)``.
- ``fast_mode``: instead of full Jacobians, compares the scalar ``v^T J u`` for random
  ``u`` (inputs) and ``v`` (outputs); on mismatch the slow check produces the message.
- Also checked: analytical gradients equal on two runs (``nondet_tol``), their shapes (and
  dtypes with ``check_grad_dtypes``), that backward is multiplied by grad_output (zero
  grad_outputs give zero gradients), and that functions with no differentiable output
  have a zero numerical Jacobian.
- ``check_forward_ad``: each basis tangent's forward-mode jvp (``ember.autograd.forward_ad``)
  equals the finite difference along it; ``check_batched_grad`` /
  ``check_batched_forward_grad``: vjps and jvps vmapped over a batch equal one-at-a-time
  ones. ``gradgradcheck(check_fwd_over_rev=True)`` is the forward check of the vjp.
"""
from __future__ import annotations

import warnings

import numpy as np

from ember._tensor import Tensor, _make

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when a check fails."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_float_or_complex(t):
    return isinstance(t, Tensor) and (t.is_floating_point() or t.is_complex())


def _differentiable_outputs(x):
    return tuple(o for o in _as_tuple(x) if isinstance(o, Tensor) and o.requires_grad)


def _diff_inputs(inputs):
    return [(i, x) for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]


def _check_inputs(inputs):
    any_req = False
    for idx, inp in enumerate(inputs):
        if isinstance(inp, Tensor) and inp.requires_grad:
            if inp.dtype.name not in ("float64", "complex128"):
                warnings.warn(f"Input #{idx} requires gradient and is not a double precision "
                              f"floating point or complex. This check will likely fail if all "
                              f"the inputs are not of double precision floating point or "
                              f"complex. ", stacklevel=3)
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
                raise RuntimeError(f"The {idx}th input has a dimension with stride 0. gradcheck "
                                   f"only supports inputs that are non-overlapping to be able "
                                   f"to compute the numerical gradients correctly. You should "
                                   f"call .contiguous on the input before passing it to "
                                   f"gradcheck.")
            any_req = True
    if not any_req:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")


def _real_part(o):
    from ember._ops.core import real
    return real(o)


def _imag_part(o):
    from ember._ops.core import real
    # imag(a + ib) = real(-i (a + ib)); -i as a 0-dim tensor of o's dtype
    return real(o * _make(np.array(-1j, dtype=o._data.dtype)))


def _real_and_imag_output(fn):
    def make(part):
        def wrapped(*inputs):
            return tuple(part(o) if isinstance(o, Tensor) and o.is_complex() else o
                         for o in _as_tuple(fn(*inputs)))
        return wrapped
    return make(_real_part), make(_imag_part)


# -------------------------------------------------------------------- numerical

def _float_outputs(out):
    return [o for o in _as_tuple(out) if _is_float_or_complex(o)]


def _numerical_jacobian(fn, inputs, x, eps):
    """Per float output: the (x.numel(), out.numel()) Jacobian by central differences,
    perturbing ``x`` in place one element at a time (conjugate Wirtinger for complex x)."""
    arr = x._data
    cols = []
    outs = None         # the outputs' sizes and kinds, from the last evaluation (as torch,
    for pos in np.ndindex(arr.shape):       # no extra call of ``fn``)
        orig = arr[pos]
        col = None
        for pert in ((eps,) if not x.is_complex() else (eps, eps * 1j)):
            arr[pos] = orig - pert
            a = [o._data.astype(np.complex128 if o.is_complex() else np.float64)
                 for o in _float_outputs(fn(*inputs))]
            arr[pos] = orig + pert
            outs = _float_outputs(fn(*inputs))
            b = [o._data.astype(np.complex128 if o.is_complex() else np.float64) for o in outs]
            arr[pos] = orig
            d = [((bb - aa) / (2 * eps)).reshape(-1) for aa, bb in zip(a, b)]
            col = d if col is None else [c + 1j * dd for c, dd in zip(col, d)]
        cols.append(col)
    if outs is None:
        outs = _float_outputs(fn(*inputs))
    dt = np.complex128 if x.is_complex() else np.float64
    jac = []
    for k, o in enumerate(outs):
        j = np.zeros((arr.size, o._data.size), dt if not o.is_complex() else np.complex128)
        for i, col in enumerate(cols):
            j[i] = col[k]
        jac.append(j)
    return jac


# -------------------------------------------------------------------- analytical

def _vjp(output, diff_inputs, grad_output):
    from ember import autograd
    return autograd.grad([output], [x for _, x in diff_inputs], [grad_output],
                         retain_graph=True, allow_unused=True)


def _analytical_jacobian(output, diff_inputs, nondet_tol, check_grad_dtypes):
    """Per differentiable input: the (input numel, output numel) Jacobian, rows built from
    one vjp per output element (twice, to check that backward is deterministic)."""
    def rows():
        n = output._data.size
        per_input = [np.zeros((x._data.size, n), np.complex128 if x.is_complex() else
                              np.float64) for _, x in diff_inputs]
        types_ok = sizes_ok = True
        for j in range(n):
            g = np.zeros(output._data.shape, output._data.dtype)
            g.reshape(-1)[j] = 1
            grads = _vjp(output, diff_inputs, _make(g))
            for k, (gr, (_, x)) in enumerate(zip(grads, diff_inputs)):
                if gr is None:
                    continue
                if gr.dtype != x.dtype:
                    types_ok = False
                if gr._data.size != x._data.size:
                    sizes_ok = False
                    continue
                per_input[k][:, j] = gr._data.reshape(-1)
        return per_input, types_ok, sizes_ok

    j1, types_ok, sizes_ok = rows()
    j2, _, _ = rows()
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    for a, b in zip(j1, j2):
        if a.size and np.abs(a - b).max() > nondet_tol:
            raise GradcheckError(
                f"Backward is not reentrant, i.e., running backward with same input and "
                f"grad_output multiple times gives different values, although analytical "
                f"gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}.\n\nNOTE: If your op relies on non-deterministic operations i.e., "
                f"it is listed here:\nhttps://pytorch.org/docs/stable/generated/torch."
                f"use_deterministic_algorithms.html\nthis failure might be expected.\n\nIf you "
                f"are adding a new operator, please file an issue and then use one of the\n"
                f"workarounds. The workaround depends on how your test invokes gradcheck/"
                f"gradgradcheck.\nIf the test\n- manually invokes gradcheck/gradgradcheck, then "
                f"call gradcheck/gradgradcheck\n  with `nondet_tol=<tol>` as a keyword "
                f"argument.\n- is OpInfo-based (e.g., in test_ops_gradients.py), then modify "
                f"the OpInfo for the test\n  to have `gradcheck_nondet_tol=<tol>`.\n- is a "
                f"Module test (e.g., in common_nn.py), then modify the corresponding\n  "
                f"module_test entry to have `gradcheck_nondet_tol=<tol>`\n")
    return j1


def _notallclose_msg(analytical, numerical, out_idx, in_idx, complex_indices, test_imag):
    prefix = ""
    if complex_indices and out_idx in complex_indices:
        part = "imaginary" if test_imag else "real"
        prefix = f"While considering the {part} part of complex outputs only, "
    return (f"{prefix}Jacobian mismatch for output {out_idx:d} with respect to input "
            f"{in_idx:d},\nnumerical:{_make(numerical)}\nanalytical:{_make(analytical)}\n")


def _allclose(a, b, rtol, atol):
    return np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


# -------------------------------------------------------------------- slow / fast

def _slow_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                    nondet_tol, complex_indices=None, test_imag=False):
    diff = _diff_inputs(inputs)
    all_out = _as_tuple(func_out)
    if not outputs:
        for _, x in diff:
            for j in _numerical_jacobian(func, inputs, x, eps):
                if np.any(j != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    float_outs = [o for o in all_out if _is_float_or_complex(o)]
    numerical = [_numerical_jacobian(func, inputs, x, eps) for _, x in diff]
    # keep the numerical Jacobians of the outputs that require grad
    keep = [k for k, o in enumerate(float_outs) if o.requires_grad]
    for i, o in enumerate(outputs):
        analytical = _analytical_jacobian(o, diff, nondet_tol, check_grad_dtypes)
        for k in range(len(diff)):
            n = numerical[k][keep[i]] if i < len(keep) else np.zeros_like(analytical[k])
            a = analytical[k]
            if not _allclose(a, n, rtol, atol):
                dt = diff[k][1]._data.dtype         # torch's Jacobians take the input's dtype
                if dt.kind == "f" and a.dtype.kind == "f":
                    a, n = a.astype(dt), n.astype(dt)
                raise GradcheckError(_notallclose_msg(a, n, i, k, complex_indices, test_imag))
    return True


def _fast_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                    nondet_tol, complex_indices=None, test_imag=False):
    diff = _diff_inputs(inputs)
    if not outputs:
        return _slow_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol,
                               check_grad_dtypes, nondet_tol, complex_indices, test_imag)
    rng = np.random.default_rng(0)

    def unit(shape, cplx):
        u = rng.random(shape) + (1j * rng.random(shape) if cplx else 0)
        n = np.sqrt(np.sum(np.abs(u) ** 2))
        return u / n if n else u

    us = [unit(x._data.shape, x.is_complex()) for _, x in diff]
    vs = [unit(o._data.shape, False) for o in outputs]
    float_outs = [o for o in _as_tuple(func_out) if _is_float_or_complex(o)]
    keep = [k for k, o in enumerate(float_outs) if o.requires_grad]

    # numerical: v^T (J u) by one central difference along u per input
    num = np.zeros((len(outputs), len(diff)))
    for k, ((_, x), u) in enumerate(zip(diff, us)):
        arr = x._data
        orig = arr.copy()
        arr[...] = orig - eps * u
        a = _float_outputs(func(*inputs))
        a = [o._data.astype(np.float64) for o in a]
        arr[...] = orig + eps * u
        b = _float_outputs(func(*inputs))
        b = [o._data.astype(np.float64) for o in b]
        arr[...] = orig
        for i in range(len(outputs)):
            d = (b[keep[i]] - a[keep[i]]) / (2 * eps)
            num[i, k] = np.sum(d * vs[i])
    # analytical: (v^T J) u, computed twice for the determinism check
    ana = np.zeros_like(num)
    for i, (o, v) in enumerate(zip(outputs, vs)):
        runs = []
        for _ in range(2):
            grads = _vjp(o, diff, _make(v.astype(o._data.dtype)))
            vals = []
            for gr, (_, x), u in zip(grads, diff, us):
                if gr is None:
                    vals.append(0.0)
                    continue
                if gr.dtype != x.dtype and check_grad_dtypes:
                    raise GradcheckError("Gradient has dtype mismatch")
                if gr._data.size != x._data.size:
                    raise GradcheckError("Analytical gradient has incorrect size")
                g = gr._data.reshape(u.shape)
                vals.append(float(np.sum(g.real * u.real) + np.sum(g.imag * u.imag))
                            if np.iscomplexobj(g) or np.iscomplexobj(u)
                            else float(np.sum(g * u)))
            runs.append(vals)
        if np.max(np.abs(np.subtract(runs[0], runs[1])), initial=0) > nondet_tol:
            raise GradcheckError("Backward is not reentrant, i.e., running backward with same "
                                 "input and grad_output multiple times gives different values, "
                                 "although analytical gradient matches numerical gradient.The "
                                 f"tolerance for nondeterminism was {nondet_tol}.")
        ana[i] = runs[0]
    for i in range(len(outputs)):
        for k in range(len(diff)):
            adj = atol * float(np.sum(np.abs(us[k]))) * float(np.sum(np.abs(vs[i])))
            if not np.isclose(ana[i, k], num[i, k], rtol=rtol, atol=adj, equal_nan=True):
                try:
                    _slow_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol,
                                    check_grad_dtypes, nondet_tol, complex_indices, test_imag)
                    slow = "The slow-mode check passed: fast mode is sensitive to tolerances.\n"
                except GradcheckError as e:
                    slow = str(e)
                prefix = ""
                if complex_indices and i in complex_indices:
                    prefix = (f"While considering the {'imaginary' if test_imag else 'real'} "
                              f"part of complex outputs only, ")
                raise GradcheckError(
                    f"{prefix}Jacobian mismatch for output {i:d} with respect to input {k:d},\n"
                    f"numerical:{num[i, k]!r}\nanalytical:{ana[i, k]!r}\n\nThe above "
                    f"quantities relating the numerical and analytical jacobians are computed "
                    f"\nin fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for "
                    f"more background \nabout fast mode. Below, we recompute numerical and "
                    f"analytical jacobians in slow mode:\n\n{slow}")
    return True


# -------------------------------------------------------------------- extra checks

def _test_backward_mul_by_grad_output(outputs, inputs):
    from ember import autograd
    diff = [x for _, x in _diff_inputs(inputs)]
    grads = autograd.grad(outputs, diff,
                          [_make(np.zeros(o._data.shape, o._data.dtype)) for o in outputs],
                          allow_unused=True)
    for gi, di in zip(grads, diff):
        if gi is None:
            continue
        if not np.all(gi._data == 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != di.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.shape != di.shape:
            raise GradcheckError("grad is incorrect size")
    return True


class _UndefinedGrad:
    """Identity whose backward hands back an undefined (None) gradient: the outputs it
    wraps reach their node with no gradient, as torch's ``UndefinedGrad``."""
    _fn = None

    @classmethod
    def apply(cls, t):
        if cls._fn is None:
            from ember.autograd.function import Function

            class UndefinedGrad(Function):
                @staticmethod
                def forward(ctx, x):
                    return x.clone()

                @staticmethod
                def backward(ctx, g):
                    return None
            cls._fn = UndefinedGrad
        return cls._fn.apply(t)


def _test_undefined_backward_mode(func, outputs, inputs):
    """Backward must cope with undefined output gradients: run ``func`` again and
    differentiate through outputs whose gradients are undefined -- all of them, then (with
    several outputs) each one alone -- expecting undefined or zero input gradients."""
    from ember import autograd, ones_like
    diff = [x for _, x in _diff_inputs(inputs)]
    picks = [list(range(len(outputs)))]
    if len(outputs) > 1:
        picks += [[k] for k in range(len(outputs))]
    runs = []                   # (torch runs every forward first, then the backwards)
    for pick in picks:
        outs = _differentiable_outputs(func(*inputs))
        runs.append([_UndefinedGrad.apply(outs[k]) for k in pick])
    for chosen in runs:
        try:
            grads = autograd.grad(chosen, diff, [ones_like(c) for c in chosen],
                                  allow_unused=True)
        except RuntimeError as e:
            raise GradcheckError("Expected backward function to handle undefined output "
                                 "grads. Please look at \"Notes about undefined output "
                                 "gradients\" in \"tools/autograd/derivatives.yaml\"") from e
        for gi in grads:
            if gi is not None and not np.all(gi._data == 0):
                raise GradcheckError("Expected all input grads to be undefined or zero when all "
                                     "output grads are undefined or zero. Please look at "
                                     "\"Notes about undefined output gradients\" in "
                                     "\"tools/autograd/derivatives.yaml\"")
    return True


# -------------------------------------------------------------------- forward AD, batched

def _finite_difference(func, inputs, x, pos, step):
    """(f(x + step e_pos) - f(x - step e_pos)) / 2|step| for each float output."""
    arr = x._data
    orig = arr[pos]
    arr[pos] = orig - step
    a = [o._data.astype(np.complex128) for o in _float_outputs(func(*inputs))]
    arr[pos] = orig + step
    b = [o._data.astype(np.complex128) for o in _float_outputs(func(*inputs))]
    arr[pos] = orig
    return [(bb - aa) / (2 * abs(step)) for aa, bb in zip(a, b)]


def _check_forward_ad(func, inputs, eps, atol, rtol, batched):
    """Every output's tangent for a basis tangent of every differentiable input (a real
    and, for complex inputs, an imaginary direction) equals the finite difference along
    it. ``batched``: the tangents computed for all directions at once by vmap agree."""
    from ember.autograd import forward_ad as fwAD
    tupled = _as_tuple(inputs)
    _check_inputs(tupled)
    for i, x in _diff_inputs(tupled):
        steps = (1, 1j) if x.is_complex() else (1,)
        for pos in np.ndindex(x._data.shape):
            for unit in steps:
                fd = _finite_difference(func, tupled, x, pos, eps * unit)
                tangent = np.zeros(x._data.shape, x._data.dtype)
                tangent[pos] = unit
                with fwAD.dual_level():
                    primal = x.detach().requires_grad_(x.requires_grad)
                    duals = tuple(fwAD.make_dual(primal, _make(tangent)) if k == i else t
                                  for k, t in enumerate(tupled))
                    outs = _float_outputs(func(*duals))
                    got = [fwAD.unpack_dual(o).tangent for o in outs]
                for k, (g, n) in enumerate(zip(got, fd)):
                    a = np.zeros(n.shape) if g is None else g._data.astype(np.complex128)
                    if not _allclose(a, n, rtol, atol):
                        raise GradcheckError(
                            f"Jacobian computed with forward mode mismatch for output {k} with "
                            f"respect to input {i},\nnumerical:{_make(n)}\nanalytical:"
                            f"{_make(a)}\n")
        if batched:
            _check_batched_forward(func, tupled, i, x, atol, rtol)


def _check_batched_forward(func, tupled, i, x, atol, rtol):
    """vmap over a batch of tangents gives each tangent's jvp."""
    from ember.func import jvp, vmap
    rng = np.random.default_rng(0)
    batch = _make(rng.standard_normal((2,) + x._data.shape).astype(x._data.dtype))

    def one(t):
        args = list(tupled)

        def f(xx):
            args[i] = xx
            return tuple(_float_outputs(func(*args)))
        return jvp(f, (x.detach(),), (t,))[1]
    together = vmap(one)(batch)
    for b in range(2):
        alone = one(batch[b])
        for k, (tb, ta) in enumerate(zip(together, alone)):
            if not _allclose(tb[b]._data, ta._data, rtol, atol):
                raise GradcheckError(f"While computing batched gradients, got: Batched forward "
                                     f"gradient for output {k} with respect to input {i} "
                                     f"differs from the unbatched one.")


def _check_batched_grad(outputs, inputs, atol, rtol):
    """``autograd.grad(..., is_grads_batched=True)`` (vmap over grad_outputs) gives the
    same vjps as one call per grad_output (on the checked call's outputs, as torch)."""
    from ember import autograd
    tupled = _as_tuple(inputs)
    diff = [x for _, x in _diff_inputs(tupled)]
    rng = np.random.default_rng(0)
    for k, o in enumerate(outputs):
        batch = _make(rng.standard_normal((2,) + o._data.shape).astype(o._data.dtype))
        together = autograd.grad(o, diff, batch, retain_graph=True, allow_unused=True,
                                 is_grads_batched=True)
        for b in range(2):
            alone = autograd.grad(o, diff, batch[b], retain_graph=True, allow_unused=True)
            for j, (tb, ta) in enumerate(zip(together, alone)):
                if ta is None and tb is None:
                    continue
                a = np.zeros(diff[j]._data.shape) if ta is None else ta._data
                bb = np.zeros(diff[j]._data.shape) if tb is None else tb[b]._data
                if not _allclose(bb, a, rtol, atol):
                    raise GradcheckError(f"While computing batched gradients, got: Batched "
                                         f"grad for output {k} with respect to input {j} "
                                         f"differs from the unbatched one.")


# -------------------------------------------------------------------- public API

def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """True when the analytical gradients of ``func`` at ``inputs`` match finite
    differences; raises GradcheckError (or returns False with ``raise_exception=False``)."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to "
                             "be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be "
                             "True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires "
                             "check_forward_ad to be True")
    try:
        if check_backward_ad:
            _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol,
                              check_undefined_grad, check_grad_dtypes, fast_mode,
                              check_batched_grad)
        if check_forward_ad:
            _check_forward_ad(func, inputs, eps, atol, rtol, check_batched_forward_grad)
        return True
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                      check_grad_dtypes, fast_mode, check_batched_grad=False):
    tupled = _as_tuple(inputs)
    _check_inputs(tupled)
    func_out = func(*tupled)
    outputs = _differentiable_outputs(func_out)
    check = _fast_gradcheck if fast_mode else _slow_gradcheck
    complex_out = [i for i, o in enumerate(outputs) if o.is_complex()]
    if any(isinstance(o, Tensor) and o.is_complex() for o in _as_tuple(func_out)):
        real_fn, imag_fn = _real_and_imag_output(func)
        imag_out = imag_fn(*tupled)
        check(imag_fn, imag_out, tupled, _differentiable_outputs(imag_out), eps, rtol, atol,
              check_grad_dtypes, nondet_tol, complex_indices=complex_out, test_imag=True)
        real_out = real_fn(*tupled)
        check(real_fn, real_out, tupled, _differentiable_outputs(real_out), eps, rtol, atol,
              check_grad_dtypes, nondet_tol, complex_indices=complex_out)
    else:
        check(func, func_out, tupled, outputs, eps, rtol, atol, check_grad_dtypes, nondet_tol)
    if check_batched_grad:
        _check_batched_grad(outputs, tupled, atol, rtol)
    if outputs:
        _test_backward_mul_by_grad_output(outputs, tupled)
        if check_undefined_grad:
            _test_undefined_backward_mode(func, outputs, tupled)
    return True


def _random_grad_output(out, non_contiguous):
    """U(-1, 1) values of ``out``'s shape and dtype drawn from the global generator, as
    torch's gradgradcheck draws them (same stream, so a script's later random numbers match);
    complex: (real, imag) pairs; non-contiguous: every second value of a doubled last dim."""
    import ember
    dt = out.dtype if out.is_floating_point() or out.is_complex() else ember.float64
    real = {ember.complex64: ember.float32, ember.complex128: ember.float64,
            ember.complex32: ember.float16}.get(dt, dt)
    shape = tuple(out.shape)
    split = non_contiguous and out.numel() > 1 and len(shape) > 0
    draw = shape + (2,) if split else shape
    if dt.is_complex:
        val = ember.view_as_complex(ember.empty(draw + (2,), dtype=real).uniform_(-1, 1))
    else:
        val = ember.empty(draw, dtype=dt).uniform_(-1, 1)
    if split:
        val = val[..., 1]
    return val.requires_grad_(True)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check second derivatives: gradcheck of ``(inputs, grad_outputs) -> vjp``."""
    from ember import autograd
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev "
                             "to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to "
                             "be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be "
                             "True")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs)
                                    for o in outs)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_idx = {i for i, x in enumerate(tupled_inputs)
                if isinstance(x, Tensor) and x.requires_grad}

    def new_func(*args):
        input_args = args[:len(args) - num_outputs]
        outputs = _differentiable_outputs(func(*input_args))
        gos = args[len(args) - num_outputs:]
        diff_input_args = tuple(x for i, x in enumerate(input_args) if i in diff_idx)
        grads = autograd.grad(outputs, diff_input_args, gos, create_graph=True,
                              allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode,
                     check_batched_grad=check_batched_grad, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev)
