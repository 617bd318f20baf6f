"""Derivatives of whole functions: vjp, jvp, jacobian, hessian, vhp, hvp.

Everything is built on ``autograd.grad``. Forward products (``jvp``, ``hvp``) use the
double-backward trick: a vjp is linear in its vector ``u``, so differentiating
``u -> J^T u`` with respect to ``u`` in direction ``v`` gives ``J v``.
``jacobian(strategy="forward-mode", vectorize=True)`` (and the forward-over-reverse
``hessian``) push basis tangents through ``ember.func.jacfwd``.
"""
import ember
from ember._tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_OUT = "outputs of the user-provided function"


# -------------------------------------------------------------------- argument handling

def _tuplify(x, what, fn):
    """``(was_tuple, x as a tuple)``; every entry must be a Tensor."""
    was_tuple = isinstance(x, tuple)
    items = x if was_tuple else (x,)
    for i, item in enumerate(items):
        if isinstance(item, Tensor):
            continue
        where = (f"the value at index {i} has type" if was_tuple
                 else f"the given {what} has type")
        raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of "
                        f"Tensors but {where} {type(item)}.")
    return was_tuple, items


def _untuplify(res, was_tuple):
    return res if was_tuple else res[0]


def _untuplify2(res, outer_was_tuple, inner_was_tuple):
    if not inner_was_tuple:
        res = tuple(row[0] for row in res)
    return res if outer_was_tuple else res[0]


def _fresh(tensors, create_graph, need_graph):
    """New tensor objects for the function's arguments, so that they are told apart from
    the same tensors captured by the function; a differentiable view when the result
    must stay connected to the caller's graph."""
    return tuple(t.view(t.shape) if create_graph and t.requires_grad
                 else t.detach().requires_grad_(need_graph) for t in tensors)


def _finish(x, create_graph):
    """Detach results (recursively through tuples) unless ``create_graph``."""
    if isinstance(x[0], Tensor):
        return x if create_graph else tuple(t.detach() for t in x)
    return tuple(_finish(part, create_graph) for part in x)


def _check_v(v, like, like_was_tuple):
    if len(v) != len(like):
        if like_was_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, like)):
        if a.size() != b.size():
            prefix = f"Entry {i} in " if like_was_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {b.size()} but "
                               f"got {a.size()}.")


def _prepare_v(v, like, like_was_tuple, fn, create_graph, none_msg):
    if v is None:
        if len(like) != 1 or like[0].nelement() != 1:
            raise RuntimeError(none_msg)
        return None
    _, v = _tuplify(v, "v", fn)
    v = _fresh(v, create_graph, need_graph=False)
    _check_v(v, like, like_was_tuple)
    return v


_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function "
                 "is a single Tensor with a single element.")

_NOT_DIFFERENTIABLE = {
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
               "independent of the input. This is not allowed in strict mode. You should "
               "ensure that your function is thrice differentiable and that the hessian "
               "depends on the inputs.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
                "function with respect to input {i} is independent of the input. This is "
                "not allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of "
                   "the user-provided function. This is not allowed in strict mode.",
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
               "outputs must be computed in a differentiable manner from the input when "
               "running in strict mode.",
}


def _strict_check(tensors, kind, strict):
    """In strict mode every entry must exist and require grad."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_NOT_DIFFERENTIABLE[kind].format(i=i))


# -------------------------------------------------------------------- gradients

def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` that skips outputs not requiring grad and allows unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    keep = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not keep:
        return (None,) * len(inputs)
    return ember.autograd.grad(tuple(o for o, _ in keep), inputs, tuple(g for _, g in keep),
                               allow_unused=True, create_graph=create_graph,
                               retain_graph=retain_graph)


_MISSING = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _zeros_for_missing(grads, like, strict, create_graph, stage):
    """Replace ``None`` gradients by zeros (an error in strict mode)."""
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_MISSING[stage].format(i=i))
            g = ember.zeros_like(like[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               f"create_graph=True.")
        out.append(g)
    return tuple(out)


def _second_phase(create_graph):
    """Grad mode for the final differentiation: on if ``create_graph``, else unchanged."""
    return ember.set_grad_enabled(create_graph or ember.is_grad_enabled())


def _recording():
    """Grad mode for building the graph the products differentiate: always on."""
    return ember.enable_grad()


def _pair(outputs, outputs_were_tuple, grads, grads_as_tuple, create_graph):
    """(function value, product), each detached unless ``create_graph`` and unpacked from a
    tuple unless the matching argument was one."""
    return (_untuplify(_finish(outputs, create_graph), outputs_were_tuple),
            _untuplify(_finish(grads, create_graph), grads_as_tuple))


# -------------------------------------------------------------------- products

def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T J)``."""
    with _recording():
        in_tuple, inputs = _tuplify(inputs, "inputs", "vjp")
        inputs = _fresh(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _tuplify(func(*inputs), _OUT, "vjp")
        _strict_check(outputs, "outputs", strict)
        v = _prepare_v(v, outputs, out_tuple, "vjp", create_graph,
                       "The vector v can only be None if the user-provided function returns a "
                       "single Tensor with a single element.")
    with _second_phase(create_graph):
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        grads = _zeros_for_missing(grads, inputs, strict, create_graph, "back")
    return _pair(outputs, out_tuple, grads, in_tuple, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), J v)``, by the double-backward trick."""
    with _recording():
        in_tuple, inputs = _tuplify(inputs, "inputs", "jvp")
        inputs = _fresh(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, in_tuple, "jvp", create_graph, _V_NONE_INPUT)
        out_tuple, outputs = _tuplify(func(*inputs), _OUT, "jvp")
        _strict_check(outputs, "outputs", strict)
        # u -> J^T u is linear, so the value of u does not matter
        u = tuple(ember.zeros_like(o, requires_grad=True) for o in outputs)
        jt_u = _grad(outputs, inputs, u, create_graph=True)
        _strict_check(jt_u, "grad_inputs", strict)
    with _second_phase(create_graph):
        grads = _grad(jt_u, u, v, create_graph=create_graph)
        grads = _zeros_for_missing(grads, outputs, strict, create_graph, "back_trick")
    return _pair(outputs, out_tuple, grads, out_tuple, create_graph)


def _scalar_function_output(func, inputs, fn, strict):
    out = func(*inputs)
    out_tuple, outputs = _tuplify(out, _OUT, fn)
    _strict_check(outputs, "outputs", strict)
    if out_tuple or not isinstance(out, Tensor):
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if out.nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain "
                           f"a single element")
    return out_tuple, outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T H)`` for a function with one scalar output."""
    with _recording():
        in_tuple, inputs = _tuplify(inputs, "inputs", "vhp")
        inputs = _fresh(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, in_tuple, "vhp", create_graph, _V_NONE_INPUT)
        out_tuple, outputs = _scalar_function_output(func, inputs, "vhp", strict)
        jac = _grad(outputs, inputs, create_graph=True)
        _strict_check(jac, "jacobian", strict)
    with _second_phase(create_graph):
        grads = _grad(jac, inputs, v, create_graph=create_graph)
        grads = _zeros_for_missing(grads, inputs, strict, create_graph, "double_back")
    return _pair(outputs, out_tuple, grads, in_tuple, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), H v)`` for a function with one scalar output (double-backward
    trick)."""
    with _recording():
        in_tuple, inputs = _tuplify(inputs, "inputs", "hvp")
        inputs = _fresh(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, in_tuple, "hvp", create_graph, _V_NONE_INPUT)
        out_tuple, outputs = _scalar_function_output(func, inputs, "hvp", strict)
        jac = _grad(outputs, inputs, create_graph=True)
        _strict_check(jac, "jacobian", strict)
        u = tuple(ember.zeros_like(x, requires_grad=True) for x in inputs)
        h_u = _grad(jac, inputs, u, create_graph=True)
        _strict_check(jac, "hessian", strict)
    with _second_phase(create_graph):
        grads = _grad(h_u, u, v, create_graph=create_graph)
        grads = _zeros_for_missing(grads, inputs, strict, create_graph, "double_back_trick")
    return _pair(outputs, out_tuple, grads, in_tuple, create_graph)


# -------------------------------------------------------------------- jacobian, hessian

def _jacobian_block(rows, out, inp):
    """Stack one row per element of ``out`` into shape ``out.shape + inp.shape``."""
    shape = tuple(out.shape) + tuple(inp.shape)
    if not rows:
        return ember.zeros(shape, dtype=inp.dtype)
    return ember.stack(rows, 0).reshape(shape)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for each (output, input) pair a tensor of
    shape ``output.shape + input.shape``, computed one output element at a time."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        return _forward_jacobian(func, inputs, create_graph, strict, vectorize)
    with _recording():
        in_tuple, inputs = _tuplify(inputs, "inputs", "jacobian")
        inputs = _fresh(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _tuplify(func(*inputs), _OUT, "jacobian")
        _strict_check(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either set "
                               "`strict=False` or `vectorize=False`.")
        # vectorize=True gives the same rows; ember computes them one at a time
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(out.nelement()):
                grads = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (g, inp) in enumerate(zip(grads, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode.")
                        g = ember.zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(
                            f"The jacobian of the user-provided function is independent "
                            f"of input {i}. This is not allowed in strict mode when "
                            f"create_graph=True.")
                    rows[j].append(g)
            jac.append(tuple(_jacobian_block(r, out, inp) for r, inp in zip(rows, inputs)))
        jac = _finish(tuple(jac), create_graph)
        return _untuplify2(jac, out_tuple, in_tuple)


def _forward_jacobian(func, inputs, create_graph, strict, vectorize):
    """``jacobian(strategy="forward-mode")``: one jvp per input element, batched by vmap."""
    if create_graph:
        raise NotImplementedError(
            "torch.autograd.functional.jacobian: `create_graph=True` and "
            "`strategy=\"forward-mode\"` are not supported together (yet). Please either "
            "set `create_graph=False` or `strategy=\"reverse-mode\"`.")
    if strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`strategy=\"forward-mode\"` are not supported together (yet). "
                           "Please either set `strict=False` or `strategy=\"reverse-mode\"`.")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    from ember.autograd import forward_ad as fwAD
    in_tuple, inputs = _tuplify(inputs, "inputs", "jacobian")
    inputs = tuple(t.detach() for t in inputs)
    columns = None       # per output, per input: the jvp of each basis tangent
    out_tuple = True
    for j, inp in enumerate(inputs):
        for k in range(inp.nelement()):
            basis = ember.zeros(inp.nelement(), dtype=inp.dtype)
            basis[k] = 1
            with fwAD.dual_level():
                duals = tuple(fwAD.make_dual(t, basis.reshape(t.shape)) if i == j else t
                              for i, t in enumerate(inputs))
                out_tuple, outs = _tuplify(func(*duals), _OUT, "jacobian")
                tangents = [fwAD.unpack_dual(o).tangent for o in outs]
                tangents = [ember.zeros_like(o) if t is None else t.detach()
                            for o, t in zip(outs, tangents)]
            if columns is None:
                columns = [[[] for _ in inputs] for _ in outs]
            for i, t in enumerate(tangents):
                columns[i][j].append(t.detach())
    if columns is None:                  # no input elements: an empty Jacobian
        out_tuple, outs = _tuplify(func(*inputs), _OUT, "jacobian")
        return _untuplify2(tuple(tuple(_jacobian_block([], o, inp) for inp in inputs)
                                 for o in outs), out_tuple, in_tuple)
    jac = tuple(tuple(ember.stack(cols, -1).reshape(tuple(cols[0].shape) + tuple(inp.shape))
                      for cols, inp in zip(row, inputs)) for row in columns)
    return _untuplify2(jac, out_tuple, in_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function with one scalar output: the Jacobian of its gradient."""
    in_tuple, inputs = _tuplify(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*args):
        _, (out,) = _scalar_function_output(func, args, "hessian", strict)
        return out.squeeze()

    def gradient(*args):
        if outer_jacobian_strategy == "forward-mode":
            args = tuple(a.requires_grad_(True) for a in args)
        g = jacobian(scalar_func, args, create_graph=True)
        _strict_check(g, "jacobian", strict)
        return g

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _untuplify2(res, in_tuple, in_tuple)
