"""``gradcheck`` / ``gradgradcheck``: compare autograd with central finite differences.

Inputs should be float64 (or complex128). For complex inputs the check follows torch's
convention: the gradient is the conjugate Wirtinger derivative, checked through the real
and imaginary perturbations separately.
"""
from __future__ import annotations

import numpy as np

from ember._tensor import Tensor, _make


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _diff_outputs(outputs):
    return [o for o in _as_tuple(outputs)
            if isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex())]


def _numerical_jacobian(fn, inputs, idx, eps):
    """J[k][j, i]: d(real view of output k)[j] / d(input idx)[i] by central differences."""
    x = inputs[idx]
    arr = x._data
    positions = list(np.ndindex(arr.shape))      # C order, like the analytical rows
    cols = []
    perturbations = [eps] if not x.is_complex() else [eps, eps * 1j]
    for pert in perturbations:
        per_out = None
        for pos in positions:
            orig = arr[pos]
            arr[pos] = orig + pert
            plus = [o._data.copy() for o in _diff_outputs(fn(*inputs))]
            arr[pos] = orig - pert
            minus = [o._data.copy() for o in _diff_outputs(fn(*inputs))]
            arr[pos] = orig
            d = [((p - m) / (2 * eps)).reshape(-1) for p, m in zip(plus, minus)]
            if per_out is None:
                per_out = [[] for _ in d]
            for k, dk in enumerate(d):
                per_out[k].append(dk)
        if per_out is None:   # empty input: a Jacobian with no columns
            per_out = [[np.zeros(o._data.size)] for o in _diff_outputs(fn(*inputs))]
            cols.append([np.zeros((c[0].size, 0)) for c in per_out])
        else:
            cols.append([np.stack(c, axis=1) for c in per_out])
    return cols


def _analytical_vjp(outputs, inputs, idx, out_k, j, is_complex_out, imag):
    """Row j of the Jacobian of output ``out_k`` w.r.t. input ``idx`` via backward."""
    from ember import autograd
    o = outputs[out_k]
    g = np.zeros(o._data.shape, o._data.dtype)
    g.reshape(-1)[j] = 1j if imag else 1
    grads = autograd.grad([o], [inputs[idx]], [_make(g)], retain_graph=True, allow_unused=True)
    r = grads[0]
    return np.zeros(inputs[idx]._data.size, inputs[idx]._data.dtype) if r is None \
        else r._data.reshape(-1)


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """True when the analytical gradients of ``func`` at ``inputs`` match finite
    differences; raises GradcheckError (or returns False) otherwise."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          f"point or complex. This check will likely fail if all the inputs are "
                          f"not of double precision floating point or complex. ")
    outputs = _diff_outputs(func(*inputs))
    if not outputs:
        return True
    for i in diff_idx:
        numerical = _numerical_jacobian(func, inputs, i, eps)
        x = inputs[i]
        for k, o in enumerate(outputs):
            n_out = o._data.size
            for part, num_cols in enumerate(numerical):
                num = num_cols[k]                          # (n_out, n_in)
                if not o.is_complex():
                    ana = np.stack([_analytical_vjp(outputs, inputs, i, k, j, False, False)
                                    for j in range(n_out)], 0) if n_out else num
                    if x.is_complex():
                        # torch convention: grad = conj Wirtinger; real part pairs with the
                        # real perturbation, -imag with the imaginary one
                        ana = ana.real if part == 0 else ana.imag
                else:
                    rows_re = [_analytical_vjp(outputs, inputs, i, k, j, True, False)
                               for j in range(n_out)]
                    rows_im = [_analytical_vjp(outputs, inputs, i, k, j, True, True)
                               for j in range(n_out)]
                    # d(out)/d(x_part): real part from rows_re, imag part from rows_im
                    re = np.stack(rows_re, 0) if n_out else np.zeros_like(num)
                    im = np.stack(rows_im, 0) if n_out else np.zeros_like(num)
                    if x.is_complex():
                        ana = (re.real + 1j * im.real) if part == 0 else (re.imag + 1j * im.imag)
                    else:
                        ana = re.real + 1j * im.real
                if ana.shape != num.shape:
                    ana = ana.reshape(num.shape)
                if not np.allclose(ana, num, rtol=rtol, atol=atol, equal_nan=True):
                    msg = (f"Jacobian mismatch for output {k} with respect to input {i},\n"
                           f"numerical:{num}\nanalytical:{ana}\n")
                    if raise_exception:
                        raise GradcheckError(msg)
                    return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check second derivatives: gradcheck of the function (inputs, grad_outputs) -> vjp."""
    from ember import autograd
    inputs = _as_tuple(inputs)
    outputs = _diff_outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            _make(rng.standard_normal(o._data.shape).astype(o._data.dtype)
                  if not o.is_complex() else
                  (rng.standard_normal(o._data.shape) + 1j * rng.standard_normal(o._data.shape))
                  .astype(o._data.dtype)).requires_grad_(True) for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def vjp_fn(*all_inputs):
        ins, gos = all_inputs[:n], all_inputs[n:]
        outs = _diff_outputs(func(*ins))
        gs = autograd.grad(outs, [ins[i] for i in diff_idx], gos, create_graph=True,
                           allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(vjp_fn, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
