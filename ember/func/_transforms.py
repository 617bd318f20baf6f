"""grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian.

Each transform calls ``func`` on fresh aliases of its inputs that require grad and
differentiates with ember's autograd engine. Inside vmap, the aliases are batched at every
active vmap level (expanding inputs not batched there), so the autograd graph, recorded on
the plain tensors below every level, computes per-sample results; gradients come back
wrapped in the inputs' levels. Nesting works through ``create_graph``: a transform running
inside another one (or on inputs that require grad) keeps its results differentiable.
jvp uses the double-vjp identity: J t = d/du <J^T u, t>.
"""
from __future__ import annotations

import functools

from ember._tensor import Tensor
from ember.func._vmap import (BatchedTensor, _no_modes, _wrap, active_levels, bottom,
                              canonical, expand_to_levels, rewrap_like, tree_flatten,
                              tree_unflatten, vmap)
from ember.utils._pytree import tree_map, treespec_pprint

_DEPTH = [0]


class _depth:
    def __enter__(self):
        _DEPTH[0] += 1

    def __exit__(self, *exc):
        _DEPTH[0] -= 1
        return False


def _enable_grad():
    from ember.autograd.grad_mode import enable_grad
    return enable_grad()


def _check_tensor_leaves(leaves, what):
    for x in leaves:
        if not isinstance(x, Tensor):
            if what == "jacfwd":        # torch 2.13's jacfwd reads the input's size first
                raise AttributeError(f"'{type(x).__name__}' object has no attribute 'numel'")
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")


def _alias(x, levels):
    """A fresh differentiable alias of ``x``, batched at every level in ``levels``."""
    xe = expand_to_levels(x, levels)
    b = bottom(xe)
    with _no_modes():
        if b.requires_grad:
            nb = b.view_as(b)
        else:
            if not (b.is_floating_point() or b.is_complex()):
                raise RuntimeError("only Tensors of floating point dtype can require "
                                   "gradients")
            nb = b.detach().requires_grad_()
    return rewrap_like(nb, xe)


def _wrap_canonical(c, levels):
    for lv, _ in levels:
        c = _wrap(c, 0, lv)
    return c


def _detach_tree(tree):
    return tree_map(lambda x: x.detach() if isinstance(x, Tensor) else x, tree)


def _needs_graph(leaves):
    if _DEPTH[0] > 0:
        return True
    return any(isinstance(x, Tensor) and bottom(x).requires_grad for x in leaves)


def _reaches_outer(tensors, inner):
    """Whether the graph of any of ``tensors`` reaches a leaf other than the alias leaves
    ``inner``: a tensor from outside the transform that requires grad (a module's
    parameter closed over by ``func``). Then, like torch, the results stay differentiable
    w.r.t. it."""
    from ember.autograd.graph import AccumulateGrad
    inner_ids = {id(b) for b in inner}
    stack = []
    for t in tensors:
        if not isinstance(t, Tensor):
            continue
        b = bottom(t)
        if not b.requires_grad:
            continue
        if b.grad_fn is None:
            if id(b) not in inner_ids:
                return True
        else:
            stack.append(b.grad_fn)
    seen = set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if isinstance(n, AccumulateGrad):
            if id(n.variable) not in inner_ids:
                return True
            continue
        stack.extend(nx for nx, _ in n.next_functions if nx is not None)
    return False


def _keep_outer(tree, inner):
    """``tree`` with every tensor that does not depend on an outer tensor detached."""
    return tree_map(lambda x: x if not isinstance(x, Tensor) or _reaches_outer([x], inner)
                    else x.detach(), tree)


def _zeros_bottom_like(a):
    import ember
    with _no_modes():
        return ember.zeros_like(bottom(a))


def _engine_vjp(outputs, aliases, levels, cotangents, create_graph):
    """Gradients (wrapped like ``aliases``) of sum <outputs, cotangents>."""
    import ember
    extra = []
    act = {lv for lv, _ in levels}
    for c in cotangents:
        t = c
        while type(t) is BatchedTensor:
            if t._level not in act and t._level not in extra:
                extra.append(t._level)
            t = t._value
    if extra:
        if len(extra) == 1 and not create_graph:
            # one newer level (jacrev's vmap over basis rows): backward once, batched
            res = _batched_vjp(outputs, aliases, levels, cotangents, extra[0])
            if res is not None:
                return res
        # cotangents batched at levels newer than the function's: loop over those entries
        e = max(extra)
        size = next(m.batch_size for m in _active_modes() if m.level == e)
        per = []
        for b in range(size):
            cs = [_select_level(c, e, b) for c in cotangents]
            per.append(_engine_vjp(outputs, aliases, levels, cs, create_graph))
        res = []
        for i in range(len(aliases)):
            res.append(_wrap(ember.stack([p[i] for p in per]), 0, e))
        return res
    outs_c, seeds_c = [], []
    for o, c in zip(outputs, cotangents):
        if not bottom(o).requires_grad:
            continue
        outs_c.append(canonical(o, levels))
        seeds_c.append(canonical(c, levels).to(outs_c[-1].dtype))
    if not outs_c:
        return [rewrap_like(_zeros_bottom_like(a), a) for a in aliases]
    gs = _backward(outs_c, aliases, seeds_c, create_graph)
    return [rewrap_like(g, a) for g, a in zip(gs, aliases)]


def _backward(outs, aliases, seeds, create_graph):
    """Gradients of sum <outs, seeds> (bottom tensors) w.r.t. the bottom tensors of
    ``aliases``; zeros where unused."""
    from ember.autograd import grad as _agrad
    bots = [bottom(a) for a in aliases]
    with _no_modes_all_but_vmap(), _enable_grad():
        gs = _agrad(outs, bots, seeds, retain_graph=True, create_graph=create_graph,
                    allow_unused=True)
    return [_zeros_bottom_like(a) if g is None else g for g, a in zip(gs, aliases)]


def _batched_vjp(outputs, aliases, levels, cotangents, e):
    """``_engine_vjp`` for cotangents batched at vmap level ``e`` newer than the function's
    ``levels``: the graph (recorded below every level) runs backward once with seeds
    batched at ``e``, so the backward ops take their batching rules (jacrev's rows of the
    identity: one backward instead of one per row, and the forward is not run again).
    Gradients come back batched at ``e`` outside the inputs' levels. None when the
    cotangents are laid out otherwise (the caller loops)."""
    from ember.func._vmap import _levels_of
    size = next(m.batch_size for m in _active_modes() if m.level == e)
    own = {lv for lv, _ in levels}
    outs_c, seeds_c = [], []
    for o, c in zip(outputs, cotangents):
        if not bottom(o).requires_grad:
            continue
        oc = canonical(o, levels)
        if type(c) is BatchedTensor and c._level == e:
            inner = c._value
            if not set(_levels_of(inner)) <= own:
                return None
            with _no_modes():
                cc = canonical(inner, levels).to(oc.dtype)
            seed = _wrap(cc, len(levels) + c._bdim, e)
        elif e in _levels_of(c):
            return None
        else:
            seed = canonical(c, levels).to(oc.dtype)
        outs_c.append(oc)
        seeds_c.append(seed)
    if not outs_c:
        return None
    out = []
    for g, a in zip(_backward(outs_c, aliases, seeds_c, False), aliases):
        with _no_modes():
            if type(g) is BatchedTensor:
                if g._level != e or type(g._value) is BatchedTensor:
                    return None
                v = g._value.movedim(g._bdim, 0)
            else:
                v = g.unsqueeze(0).expand((size,) + tuple(g.shape))
        chain, t = [], a
        while type(t) is BatchedTensor:         # a's wrappers, one dim further right
            chain.append((t._bdim + 1, t._level))
            t = t._value
        for bd, lv in reversed(chain):
            v = _wrap(v, bd, lv)
        out.append(_wrap(v, 0, e))
    return out


class _no_modes_all_but_vmap:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _active_modes():
    from ember._state import state
    from ember.func._vmap import VmapMode
    return [m for m in state.modes if isinstance(m, VmapMode)]


def _struct_select(t, d, b):
    """Select entry ``b`` of logical dim ``d`` structurally (no mode dispatch)."""
    if type(t) is BatchedTensor:
        bd = t._bdim
        dp = d if d < bd else d + 1
        nbd = bd if dp > bd else bd - 1
        return _wrap(_struct_select(t._value, dp, b), nbd, t._level)
    with _no_modes():
        return t.select(d, b)


def _select_level(t, level, b):
    if type(t) is not BatchedTensor:
        return t
    if t._level == level:
        return _struct_select(t._value, t._bdim, b)
    return _wrap(_select_level(t._value, level, b), t._bdim, t._level)


def _ones_like_logical(o, levels):
    import ember
    with _no_modes():
        c = ember.ones_like(canonical(o, levels))
    return _wrap_canonical(c, levels)


# ---------------------------------------------------------------------- vjp / grad

def _argnums_select(args, argnums, name):
    if isinstance(argnums, int):
        nums = (argnums,)
    elif isinstance(argnums, tuple):        # torch's checks and texts, in its order
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        for a in argnums:
            if not isinstance(a, int):
                raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    n = len(args)
    out = []
    for a in nums:
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
        out.append(a % n)
    return out


# how torch's texts name each transform's call
_CALL_NAMES = {"vjp": "vjp(f, *primals)", "grad": "grad_and_value(f)(*args)",
               "jvp": "jvp(f, primals, tangents)"}


def _vjp_core(func, primals, has_aux, name):
    """Run ``func`` on aliases; returns (output, aliases tree, alias leaves, levels, aux,
    create_graph)."""
    levels = active_levels()
    leaves, spec = tree_flatten(primals)
    _check_tensor_leaves(leaves, name)
    create = _needs_graph(leaves)
    with _enable_grad():
        aliases = [_alias(x, levels) for x in leaves]
        args = tree_unflatten(aliases, spec)
        with _depth():
            res = func(*args)
    aux = None
    if has_aux:
        if not (isinstance(res, tuple) and len(res) == 2):
            raise RuntimeError(f"{_CALL_NAMES.get(name, name)}: output of function f should "
                               f"be a tuple: (output, aux) if has_aux is True")
        res, aux = res
        for a in tree_flatten(aux)[0]:
            if not isinstance(a, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(a)}")
    if not create and _reaches_outer(tree_flatten(res)[0], [bottom(a) for a in aliases]):
        create = True
    return res, aliases, spec, levels, aux, create


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) returns one gradient per primal."""
    out, aliases, spec, levels, aux, create = _vjp_core(func, primals, has_aux, "vjp")
    o_leaves, o_spec = tree_flatten(out)
    for o in o_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): expected f(*primals) to return only "
                               f"tensors, got unsupported type {type(o)}")

    def vjp_fn(*cotangents, retain_graph=True, create_graph=None):
        ct = cotangents[0] if len(cotangents) == 1 else cotangents
        c_leaves, c_spec = tree_flatten(ct)
        if c_spec != o_spec:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{treespec_pprint(c_spec)}, primal output: "
                               f"{treespec_pprint(o_spec)}")
        for c, o in zip(c_leaves, o_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                                   f"{tuple(c.shape)} and output[0] has a shape of "
                                   f"{tuple(o.shape)}.")
        cg = create or _needs_graph(c_leaves) if create_graph is None else create_graph
        gs = _engine_vjp(o_leaves, aliases, levels, c_leaves, cg)
        if not cg:
            gs = [g.detach() for g in gs]
        elif create_graph is None and _DEPTH[0] == 0:
            gs = _keep_outer(gs, inner)
        return tree_unflatten(gs, spec)

    inner = [bottom(a) for a in aliases]
    out_r = _own(out, create, inner)
    if has_aux:
        return out_r, vjp_fn, _own(aux, create, inner)
    return out_r, vjp_fn


def _own(tree, create, inner):
    """A transform's result tree: detached unless ``create``; at top level only what
    depends on an outer tensor keeps its graph."""
    if not create:
        return _detach_tree(tree)
    return _keep_outer(tree, inner) if _DEPTH[0] == 0 else tree


def _with_args_replaced(func, args, kwargs, nums):
    """``func`` as a function of the arguments at positions ``nums`` only."""
    def f(*diff):
        full = list(args)
        for i, d in zip(nums, diff):
            full[i] = d
        return func(*full, **kwargs)
    return f


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of ``func`` w.r.t. ``argnums``, value[, aux])."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_select(args, argnums, "grad_and_value")
        sel = tuple(args[i] for i in nums)

        f = _with_args_replaced(func, args, kwargs, nums)

        out, aliases, spec, levels, aux, create = _vjp_core(f, sel, has_aux, "grad")
        if not isinstance(out, Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                               f"Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                               f"scalar Tensor, got tensor with {out.dim()} dims. Maybe you "
                               f"wanted to use the vjp or jacrev APIs instead?")
        gs = _engine_vjp([out], aliases, levels, [_ones_like_logical(out, levels)], create)
        inner = [bottom(a) for a in aliases]
        gs = _own(gs, create, inner)
        out = _own(out, create, inner)
        if has_aux:
            aux = _own(aux, create, inner)
        g_tree = tree_unflatten(gs, spec)
        g = g_tree[0] if isinstance(argnums, int) else tuple(g_tree)
        if has_aux:
            return g, (out, aux)
        return g, out
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of scalar-valued ``func`` w.r.t. the arguments ``argnums``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, v = gv(*args, **kwargs)
        if has_aux:
            return g, v[1]
        return g
    return wrapper


# ---------------------------------------------------------------------- jvp

def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J·tangents[, aux]) by the double-vjp identity."""
    import ember
    from ember.autograd import grad as _agrad
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. "
                           "E.g. it should be valid to call f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to "
                           f"have the same python structure. For example, if primals is a "
                           f"tuple of 3 tensors, tangents also must be. Got primals with "
                           f"structure {p_spec} and tangents with structure {t_spec}")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"Trying to set a forward gradient that has a different size "
                               f"than that of the original Tensor, this is not supported. "
                               f"Tensor is of size {list(p.shape)} while the given forward "
                               f"gradient is of size {list(t.shape)}.")
    out, aliases, spec, levels, aux, create = _vjp_core(func, tuple(primals), has_aux, "jvp")
    create = create or _needs_graph(t_leaves)
    o_leaves, o_spec = tree_flatten(out)
    for o in o_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"jvp(f, primals, tangents): expected f(*primals) to return "
                               f"only tensors, got unsupported type {type(o)}")
    bots = [bottom(a) for a in aliases]
    results = [None] * len(o_leaves)
    outs_c, us, idx = [], [], []
    with _enable_grad():
        for k, o in enumerate(o_leaves):
            if bottom(o).requires_grad:
                oc = canonical(o, levels)
                with _no_modes():
                    u = ember.zeros_like(oc).requires_grad_()
                outs_c.append(oc)
                us.append(u)
                idx.append(k)
        if outs_c:
            gs = _agrad(outs_c, bots, us, retain_graph=True, create_graph=True,
                        allow_unused=True)
            pairs = []
            for g, a, t in zip(gs, aliases, t_leaves):
                if g is None or not g.requires_grad:
                    continue
                # tangent in the alias's physical layout
                tc = canonical(t, levels)
                ta = _from_canonical_bottom(tc, a)
                pairs.append((g, ta.to(g.dtype)))
            if pairs:
                jv = _agrad([p[0] for p in pairs], us, [p[1] for p in pairs],
                            retain_graph=create, create_graph=create, allow_unused=True)
            else:
                jv = [None] * len(us)
            for k, u, j in zip(idx, us, jv):
                with _no_modes():
                    jj = ember.zeros_like(u) if j is None else j
                results[k] = jj
    final = []
    for k, o in enumerate(o_leaves):
        if results[k] is None:
            with _no_modes():
                c = ember.zeros_like(canonical(o, levels))
        else:
            c = results[k]
        r = _wrap_canonical(c, levels)
        final.append(r)
    inner = [bottom(a) for a in aliases] + us
    out_r = _own(out, create, inner)
    jout = tree_unflatten(_own(final, create, inner), o_spec)
    if has_aux:
        return out_r, jout, _own(aux, create, inner)
    return out_r, jout


def _from_canonical_bottom(c, like):
    from ember.func._vmap import _canon_perm
    b, perm = _canon_perm(like)
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    with _no_modes():
        return c.permute(inv) if inv != list(range(len(inv))) else c


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is the jvp at ``primals``."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return _detach_tree(out), jvp_fn


# ---------------------------------------------------------------------- jacobians

def _flat_numel(leaves):
    return [int(x.numel()) for x in leaves]


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """Jacobian of ``func`` w.r.t. ``argnums`` by reverse mode (vmap over vjp)."""
    import ember

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_select(args, argnums, "jacrev")

        f = _with_args_replaced(func, args, kwargs, nums)

        sel = tuple(args[i] for i in nums)
        res = vjp(f, *sel, has_aux=has_aux)
        out = res[0]
        aux = res[2] if has_aux else None
        o_leaves, o_spec = tree_flatten(out)
        sizes = _flat_numel(o_leaves)
        N = sum(sizes)
        in_leaves, in_spec = tree_flatten(sel)

        vfn = res[1]                    # rows of the identity through one backward

        def one_row(ct_flat):
            cts, off = [], 0
            for o, n in zip(o_leaves, sizes):
                cts.append(ct_flat[off:off + n].reshape(o.shape))
                off += n
            return tree_flatten(vfn(tree_unflatten(cts, o_spec)))[0]

        dt = o_leaves[0].dtype if o_leaves else ember.get_default_dtype()
        basis = ember.eye(N, dtype=dt)
        rows = vmap(one_row, chunk_size=chunk_size)(basis)     # per input leaf: [N, *in]
        # per output leaf: per input leaf jac [*out, *in]
        per_out = []
        off = 0
        for o, n in zip(o_leaves, sizes):
            js = [r[off:off + n].reshape(tuple(o.shape) + tuple(x.shape))
                  for r, x in zip(rows, in_leaves)]
            off += n
            jt = tree_unflatten(js, in_spec)
            per_out.append(jt[0] if isinstance(argnums, int) else tuple(jt))
        jac = tree_unflatten(per_out, o_spec)
        if has_aux:
            return jac, aux
        return jac
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """Jacobian of ``func`` w.r.t. ``argnums`` by forward mode (vmap over jvp)."""
    import ember

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_select(args, argnums, "jacfwd")

        f = _with_args_replaced(func, args, kwargs, nums)

        sel = tuple(args[i] for i in nums)
        in_leaves, in_spec = tree_flatten(sel)
        _check_tensor_leaves(in_leaves, "jacfwd")
        sizes = _flat_numel(in_leaves)
        M = sum(sizes)
        dt = in_leaves[0].dtype

        def one_col(t_flat):
            ts, off = [], 0
            for x, n in zip(in_leaves, sizes):
                ts.append(t_flat[off:off + n].reshape(x.shape))
                off += n
            r = jvp(f, sel, tuple(tree_unflatten(ts, in_spec)), has_aux=has_aux)
            if has_aux:
                return r[1], r[2]
            return r[1]

        basis = ember.eye(M, dtype=dt)
        res = vmap(one_col, randomness=randomness)(basis)
        if has_aux:
            cols, aux = res
            aux = tree_map(lambda a: a[0], aux)     # every vmapped column holds the same
        else:
            cols = res
        o_leaves, o_spec = tree_flatten(cols)
        per_out = []
        for c in o_leaves:                   # [M, *out]
            out_shape = tuple(c.shape[1:])
            no = len(out_shape)
            js, off = [], 0
            for x, n in zip(in_leaves, sizes):
                piece = c[off:off + n].reshape(tuple(x.shape) + out_shape)
                nx = x.dim()
                perm = list(range(nx, nx + no)) + list(range(nx))
                js.append(piece.permute(perm) if perm else piece)
                off += n
            jt = tree_unflatten(js, in_spec)
            per_out.append(jt[0] if isinstance(argnums, int) else tuple(jt))
        jac = tree_unflatten(per_out, o_spec)
        if has_aux:
            return jac, aux
        return jac
    return wrapper


def hessian(func, argnums=0):
    """Hessian of ``func`` (jacfwd of jacrev)."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------------- modules

def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Call ``module`` with its parameters and buffers replaced (torch.func.functional_call)."""
    from ember.nn.utils.stateless import _functional_call as _fc
    return _fc(module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights,
               strict=strict)


def stack_module_state(models):
    """(params, buffers): each model's parameters and buffers stacked along a new dim 0."""
    import ember
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    t0 = type(models[0])
    if not all(type(m) is t0 for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same "
                           "class.")
    all_p = [dict(m.named_parameters()) for m in models]
    all_b = [dict(m.named_buffers()) for m in models]

    def leaf(ts):
        s = ember.stack(list(ts))
        if all(t.requires_grad for t in ts):
            return s.detach().requires_grad_()
        return s.detach()
    params = {k: leaf([p[k] for p in all_p]) for k in all_p[0]}
    buffers = {k: ember.stack([b[k] for b in all_b]) for k in all_b[0]}
    return params, buffers
