"""Batching rules, registered onto op records with ``def_batch_rule`` at import.

A rule is ``rule(op, vals, bdims, B) -> (result, out_bdim)`` or ``NotImplemented`` (the
mode then decomposes or loops). ``vals`` are the schema-ordered arguments with this
level's wrappers replaced by their values (tensors one level down); ``bdims`` gives the
batch dim of each (None: unbatched; a list for ``Tensor[]`` arguments). Ops called here
dispatch to the layers below the current vmap level.
"""
from __future__ import annotations

from ember._ops.registry import OPS
from ember._tensor import Tensor


def _front(v, bd):
    return v if bd is None or bd == 0 else v.movedim(bd, 0)


def _ldim(v, bd):
    """Logical rank."""
    return v.dim() - (0 if bd is None else 1)


def _pad_front(v, bd, rank):
    """Batched value with the batch dim first and the logical rank padded to ``rank``."""
    v = _front(v, bd)
    r = v.dim() - 1
    if r < rank:
        v = v.reshape((v.shape[0],) + (1,) * (rank - r) + tuple(v.shape[1:]))
    return v


# ------------------------------------------------------------------ elementwise

def _elementwise(op, vals, bdims, B):
    tens = [i for i, v in enumerate(vals) if isinstance(v, Tensor)]
    batched = [i for i in tens if bdims[i] is not None]
    if len(batched) == 1 and len(tens) == 1:
        i = batched[0]
        return op(*vals), bdims[i]
    ranks = [_ldim(vals[i], bdims[i]) for i in tens]
    R = max(ranks)
    # a batched logical 0-dim tensor would change torch's promotion: loop in mixed dtypes
    dts = {vals[i].dtype for i in tens}
    if len(dts) > 1 and any(_ldim(vals[i], bdims[i]) == 0 for i in batched) or \
            len(dts) > 1 and any(_ldim(vals[i], None) == 0 for i in tens if bdims[i] is None):
        return NotImplemented
    new = list(vals)
    for i in batched:
        new[i] = _pad_front(vals[i], bdims[i], R)
    return op(*new), 0


ELEMENTWISE = """
abs acos acosh add.Tensor addcdiv addcmul angle asin asinh atan atan2 atanh
bitwise_and.Tensor bitwise_left_shift.Tensor bitwise_not bitwise_or.Tensor
bitwise_right_shift.Tensor bitwise_xor.Tensor ceil clamp.Tensor clamp_max.Tensor
clamp_min.Tensor conj_physical copysign.Tensor cos cosh deg2rad digamma div.Tensor
div.Tensor_mode eq.Tensor erf erfc erfinv exp exp2 expm1 float_power.Tensor_Tensor floor
floor_divide fmax fmin fmod.Tensor frac gcd ge.Tensor gelu gt.Tensor heaviside hypot i0
igamma igammac imag isfinite isinf isnan isneginf isposinf isreal lcm ldexp.Tensor le.Tensor
lerp.Tensor lgamma log log10 log1p log2 logaddexp logaddexp2 logical_and logical_not
logical_or logical_xor logit lt.Tensor maximum minimum mul.Tensor mvlgamma nan_to_num
ne.Tensor neg nextafter polygamma pow.Tensor_Tensor rad2deg real reciprocal relu
remainder.Tensor round round.decimals rsqrt rsub.Tensor sgn sigmoid sign signbit silu sin
sinc sinh sqrt square sub.Tensor tan tanh threshold_backward trunc where.self xlogy.Tensor _sgn
masked_fill.Tensor complex polar special_entr special_erfcx special_i0e special_i1
special_i1e special_log_ndtr special_ndtr special_ndtri special_xlog1py special_zeta
special_bessel_j0 special_bessel_j1 special_bessel_y0 special_bessel_y1 _i1
special_modified_bessel_i0 special_modified_bessel_i1 special_modified_bessel_k0
special_modified_bessel_k1 special_scaled_modified_bessel_k0
special_scaled_modified_bessel_k1 special_spherical_bessel_j0 special_airy_ai
clone _to_copy alias_copy detach_copy zeros_like ones_like empty_like full_like rand_like
randn_like randint_like.low_dtype bernoulli.p bernoulli poisson
""".split()
# (unary-with-layout ops: clone keeps the value's layout; factories *_like keep the bdim)


# ------------------------------------------------------------------ reductions / dims

def _dim_rule(argname, is_list_full=False, full_is_empty=False):
    """Rule for ops reducing/operating over a ``dim`` argument (int or int list)."""
    def rule(op, vals, bdims, B):
        bd = bdims[0]
        if bd is None or any(b is not None for b in bdims[1:]):
            return NotImplemented
        x = _front(vals[0], bd)
        r = x.dim() - 1
        i = op.argnames.index(argname)
        d = vals[i]
        new = list(vals)
        new[0] = x
        if d is None or (full_is_empty and isinstance(d, (list, tuple)) and len(d) == 0):
            if not is_list_full:
                return NotImplemented
            if r == 0:
                # a full reduction of a logical 0-d value: of its one element, (B, 1) over 1
                if "keepdim" in op.argnames and vals[op.argnames.index("keepdim")]:
                    return NotImplemented
                new[0] = x.reshape(x.shape[0], 1)
                r = 1
            new[i] = list(range(1, r + 1))
        elif isinstance(d, (list, tuple)):
            if r == 0 or len(d) == 0:
                return NotImplemented
            new[i] = [(k % r) + 1 for k in d]
        else:
            if r == 0:
                return NotImplemented
            new[i] = (d % r) + 1
        return op(*new), 0
    return rule


REDUCTIONS = {
    "sum": ("dim", True, True), "mean": ("dim", True, True), "nansum": ("dim", True, True),
    "nanmean": ("dim", True, True), "amax": ("dim", True, True), "amin": ("dim", True, True),
    "logsumexp": ("dim", False, False), "var.correction": ("dim", True, False),
    "std.correction": ("dim", True, False), "prod.dim_int": ("dim", False, False),
    "max.dim": ("dim", False, False), "min.dim": ("dim", False, False),
    "softmax.int": ("dim", False, False), "log_softmax.int": ("dim", False, False),
    "cumsum": ("dim", False, False), "cumprod": ("dim", False, False),
    "logcumsumexp": ("dim", False, False), "all": ("dim", True, False),
    "any": ("dim", True, False), "argmax": ("dim", False, False),
    "argmin": ("dim", False, False), "norm": ("dim", False, False),
    "count_nonzero": ("dim", True, False), "var_mean.correction": ("dim", True, False),
    "std_mean.correction": ("dim", True, False), "cummax": ("dim", False, False),
    "cummin": ("dim", False, False), "select.int": ("dim", False, False),
    "narrow": ("dim", False, False), "unbind.int": ("dim", False, False),
    "split.Tensor": ("dim", False, False), "split_with_sizes": ("dim", False, False),
    "flip": ("dims", False, False), "roll": ("dims", False, False),
    "sort": ("dim", False, False), "argsort": ("dim", False, False),
    "topk": ("dim", False, False), "kthvalue": ("dim", False, False),
    "chunk": ("dim", False, False), "index_select": ("dim", False, False),
}


def _full_reduce(dim_op):
    def rule(op, vals, bdims, B):
        x = _front(vals[0], bdims[0])
        if x.dim() == 1:
            return NotImplemented
        return OPS[dim_op](x, list(range(1, x.dim()))), 0
    return rule


def _transpose(op, vals, bdims, B):
    x, bd = vals[0], bdims[0]
    r = x.dim() - 1
    if r == 0:
        return x, bd
    x = _front(x, bd)
    return op(x, vals[1] % r + 1, vals[2] % r + 1), 0


def _t(op, vals, bdims, B):
    x = _front(vals[0], bdims[0])
    if x.dim() - 1 < 2:
        return x, 0
    return x.transpose(1, 2), 0


def _permute(op, vals, bdims, B):
    x = _front(vals[0], bdims[0])
    r = x.dim() - 1
    return op(x, [0] + [d % r + 1 for d in vals[1]]), 0


def _movedim(op, vals, bdims, B):
    x = _front(vals[0], bdims[0])
    r = x.dim() - 1
    return op(x, [d % r + 1 for d in vals[1]], [d % r + 1 for d in vals[2]]), 0


def _unsqueeze(op, vals, bdims, B):
    x = _front(vals[0], bdims[0])
    r = x.dim() - 1
    return op(x, vals[1] % (r + 1) + 1), 0


def _squeeze(op, vals, bdims, B):
    x = _front(vals[0], bdims[0])
    r = x.dim() - 1
    d = vals[1]
    if d is None:
        dims = [i + 1 for i in range(r) if x.shape[i + 1] == 1]
    elif isinstance(d, (list, tuple)):
        dims = [k % r + 1 for k in d] if r else []
    else:
        dims = [d % r + 1] if r else []
    if not dims:
        return x, 0
    return op(x, dims), 0


def _view_like(op, vals, bdims, B):
    x, bd = vals[0], bdims[0]
    shape = tuple(vals[1])
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    if bd == 0 and op.name == "view":
        return op(x, (x.shape[0],) + shape), 0
    x = _front(x, bd)
    return x.reshape((x.shape[0],) + shape), 0


def _flatten(op, vals, bdims, B):
    """flatten(start, end) of the logical dims: the same dims shifted past the batch dim."""
    x = _front(vals[0], bdims[0])
    r = x.dim() - 1
    if r == 0:
        return x.reshape(x.shape[0], 1), 0
    start, end = vals[1], vals[2]
    if not (-r <= start < r and -r <= end < r):
        return NotImplemented           # the loop raises torch's IndexError
    return op(x, start % r + 1, end % r + 1), 0


def _expand(op, vals, bdims, B):
    x = _front(vals[0], bdims[0])
    size = tuple(vals[1])
    r = x.dim() - 1
    if len(size) < r:
        return NotImplemented
    x = _pad_front(x, 0, len(size))
    return op(x, (x.shape[0],) + size, *vals[2:]), 0


def _basic_index(op, vals, bdims, B):
    x = _front(vals[0], bdims[0])
    idx = vals[1]
    idx = idx if isinstance(idx, tuple) else (idx,)
    return op(x, (slice(None),) + idx), 0


def _basic_index_backward(op, vals, bdims, B):
    """The slice's gradient scattered into zeros, batch first (the index kept as is)."""
    if bdims[0] is None:
        return NotImplemented
    g = _front(vals[0], bdims[0])
    idx = vals[2] if isinstance(vals[2], tuple) else (vals[2],)
    return op(g, [B] + list(vals[1]), (slice(None),) + idx), 0


def _sum_to_size(op, vals, bdims, B):
    """Sum a batched value to ``size``: the logical dims left of ``size`` first, then
    with the batch dim kept."""
    x = _front(vals[0], bdims[0])
    size = list(vals[1])
    extra = x.dim() - 1 - len(size)
    if extra < 0:
        return NotImplemented
    if extra:
        x = x.sum(list(range(1, 1 + extra)))
    return op(x, [B] + size), 0


def _cat_like(stack):
    def rule(op, vals, bdims, B):
        ts, bds = vals[0], bdims[0]
        moved = []
        r = None
        for t, b in zip(ts, bds):
            if b is None:
                t = t.unsqueeze(0).expand((B,) + tuple(t.shape))
            else:
                t = _front(t, b)
            moved.append(t)
        # cat skips legacy 1-D empty tensors; keep the loop for those
        ranks = {m.dim() for m in moved}
        if len(ranks) != 1:
            return NotImplemented
        r = moved[0].dim() - 1 + (1 if stack else 0)
        if r == 0:
            return NotImplemented
        return op(moved, vals[1] % r + 1), 0
    return rule


def _matmul(op, vals, bdims, B):
    a, b = vals[0], vals[1]
    ba, bb = bdims[0], bdims[1]
    ra, rb = _ldim(a, ba), _ldim(b, bb)
    if op.name == "mm" and (ra != 2 or rb != 2) or op.name == "bmm" and (ra != 3 or rb != 3) \
            or op.name == "mv" and (ra != 2 or rb != 1) or op.name == "dot" and \
            (ra != 1 or rb != 1):
        return NotImplemented
    import ember
    if ra == 0 or rb == 0:
        return NotImplemented
    if a.dtype != b.dtype:
        return NotImplemented
    if ra == 1 and rb == 1:
        if ba is not None:
            a = _front(a, ba)
        if bb is not None:
            b = _front(b, bb)
        return (a * b).sum(-1), 0
    if ba is not None:
        a, ba = _front(a, ba), 0
    if bb is not None:
        b, bb = _front(b, bb), 0
    sq = None
    if ra == 1:
        a = a.unsqueeze(-2)
        ra = 2
        sq = -2
    if rb == 1:
        b = b.unsqueeze(-1)
        rb = 2
        sq = -1
    R = max(ra, rb)
    if ba is not None:
        a = _pad_front(a, ba, R)
    if bb is not None:
        b = _pad_front(b, bb, R)
    out = ember.matmul(a, b)
    if sq is not None:
        out = out.squeeze(sq)
    return out, 0


def _linear(op, vals, bdims, B):
    """x (..., in) @ w^T + b. Only x batched: the batch is one more leading dim. Batched
    weights (ensembles): a batched matmul against w^T, then the bias."""
    import ember
    x, w, b = vals
    bx, bw, bb = bdims
    if bw is None and bb is None:
        return op(_front(x, bx), w, b), 0
    w = _front(w, bw) if bw is not None else w
    rx = _ldim(x, bx)
    if bx is not None:
        x = _front(x, bx)
        x = x.unsqueeze(1) if rx == 1 else x.reshape(x.shape[0], -1, x.shape[-1])
    elif rx != 2 and rx != 1:
        return NotImplemented
    elif rx == 1:
        x = x.unsqueeze(0)
    out = ember.matmul(x, w.mT)                         # (B, rows, out)
    if b is not None:
        b = _front(b, bb) if bb is not None else b
        out = out + (b.unsqueeze(1) if bb is not None else b)
    if bx is not None:
        lead = tuple(vals[0].movedim(bx, 0).shape[1:-1])
        return out.reshape((out.shape[0],) + lead + (out.shape[-1],)), 0
    return (out.squeeze(1) if rx == 1 else out), 0


def _trailing_pool(op, vals, bdims, B):
    """Ops over the trailing dims only (average pooling): the batch is one more lead dim."""
    return op(_front(vals[0], bdims[0]), *vals[1:]), 0


def _trailing_pool_backward(op, vals, bdims, B):
    g, input_size = vals[0], vals[1]
    return op(_front(g, bdims[0]), [B] + list(input_size), *vals[2:]), 0


def _addmm_like(op, vals, bdims, B):
    # self + alpha * (m1 @ m2): beta/alpha keyword scalars
    import ember
    mm_op = {"addmm": OPS["mm"], "addmv": OPS["mv"], "baddbmm": OPS["bmm"]}[op.name]
    r = _matmul(mm_op, [vals[1], vals[2]], [bdims[1], bdims[2]], B)
    if r is NotImplemented:
        return r
    prod, _ = r
    if bdims[1] is None and bdims[2] is None:       # only ``self`` batched: prod has no batch
        prod = prod.unsqueeze(0)
    beta, alpha = vals[3], vals[4]
    s, sb = vals[0], bdims[0]
    R = prod.dim() - 1
    if sb is not None:
        s = _pad_front(s, sb, R)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod + 0 * s, 0
    return (prod + (s if beta == 1 else s * beta)), 0


def _convolution(op, vals, bdims, B):
    (x, w, bias, stride, padding, dilation, transposed, output_padding, groups) = vals
    bx, bw, bb = bdims[0], bdims[1], bdims[2]
    if transposed:
        return NotImplemented
    xr = _ldim(x, bx)
    wr = _ldim(w, bw)
    if xr != wr:
        return NotImplemented
    if bw is None and bb is None:
        x = _front(x, bx)
        N = x.shape[1]
        flat = x.reshape((B * N,) + tuple(x.shape[2:]))
        out = op(flat, w, bias, stride, padding, dilation, transposed, output_padding, groups)
        return out.reshape((B, N) + tuple(out.shape[1:])), 0
    if bx is None and groups == 1:
        # shared input, batched weight: the batch folded into the output channels, one
        # convolution over the input as it is (folding it into groups would copy the input B
        # times: the NTK tutorial's per-sample weight gradients, 200 copies)
        w = _front(w, bw) if bw is not None else w.unsqueeze(0).expand((B,) + tuple(w.shape))
        O = w.shape[1]
        wf = w.reshape((B * O,) + tuple(w.shape[2:]))
        bf = None
        if bias is not None:
            bias = _front(bias, bb) if bb is not None else bias.unsqueeze(0).expand(B, O)
            bf = bias.reshape(B * O)
        out = op(x, wf, bf, stride, padding, dilation, transposed, output_padding, groups)
        return out.reshape((out.shape[0], B, O) + tuple(out.shape[2:])), 1
    # batched weight: fold the batch into groups
    if bx is None:
        x = x.unsqueeze(0).expand((B,) + tuple(x.shape))
    else:
        x = _front(x, bx)
    N, C = x.shape[1], x.shape[2]
    xg = x.movedim(0, 1).reshape((N, B * C) + tuple(x.shape[3:]))
    if bw is None:
        w = w.unsqueeze(0).expand((B,) + tuple(w.shape))
    else:
        w = _front(w, bw)
    O = w.shape[1]
    wg = w.reshape((B * O,) + tuple(w.shape[2:]))
    bg = None
    if bias is not None:
        if bb is None:
            bias = bias.unsqueeze(0).expand(B, O)
        else:
            bias = _front(bias, bb)
        bg = bias.reshape(B * O)
    out = op(xg, wg, bg, stride, padding, dilation, transposed, output_padding, groups * B)
    out = out.reshape((N, B, O) + tuple(out.shape[2:]))
    return out, 1


def _conv_backward(op, vals, bdims, B):
    """The fused conv backward with only ``grad_output`` batched (a backward run once for
    many cotangents, as jacrev's): the input gradient is the transposed convolution of the
    batched gradient (batch folded into N), the weight gradient one grouped weight-gradient
    with the batch folded into each group's output channels (the input is not copied), the
    bias gradient a sum."""
    g, x, w, stride, padding, dilation, groups, mask = vals
    if bdims[1] is not None or bdims[2] is not None or bdims[0] is None:
        return NotImplemented
    import ember
    from ember._ops.nn_conv import _ntuple, _tpad, conv_weight_grad, convolution
    g = _front(g, bdims[0])                              # (B, N, G*Og, *S')
    n = w.dim() - 2
    stride, padding, dilation = (_ntuple(v, n) for v in (stride, padding, dilation))
    N, O, S = g.shape[1], g.shape[2], tuple(g.shape[3:])
    G, Og = groups, O // groups
    empty = ember.zeros(0, dtype=g.dtype)
    gi = gw = gb = empty
    if mask[0]:
        flat = g.reshape((B * N, O) + S)
        pad = _tpad(tuple(x.shape), tuple(flat.shape), tuple(w.shape[2:]), stride, padding,
                    dilation)
        gi = convolution(flat, w, None, stride, padding, dilation, True, pad, groups)
        gi = gi.reshape((B, N) + tuple(gi.shape[1:]))
    if mask[1]:
        per_group = g.reshape((B, N, G, Og) + S).permute(
            (1, 2, 0, 3) + tuple(range(4, 4 + len(S)))).reshape((N, G * B * Og) + S)
        size = [G * B * Og] + list(w.shape[1:])
        gw = conv_weight_grad(x, per_group, size, stride, padding, dilation, groups)
        k = tuple(w.shape[1:])
        gw = gw.reshape((G, B, Og) + k).movedim(1, 0).reshape((B, O) + k)
    if mask[2]:
        gb = g.sum([1] + list(range(3, 3 + len(S))))
    return (gi, gw, gb), [0 if mask[0] else None, 0 if mask[1] else None,
                          0 if mask[2] else None]


def _nll_loss(op, vals, bdims, B):
    x, t, weight, reduction, ignore_index = vals
    bx, bt = bdims[0], bdims[1]
    if weight is not None or bdims[2] is not None:
        return NotImplemented
    xr = _ldim(x, bx)
    if xr not in (1, 2):
        return NotImplemented
    x = x.unsqueeze(0).expand((B,) + tuple(x.shape)) if bx is None else _front(x, bx)
    t = t.unsqueeze(0).expand((B,) + tuple(t.shape)) if bt is None else _front(t, bt)
    if xr == 1:
        x = x.unsqueeze(1)
        t = t.unsqueeze(1)
    N = x.shape[1]
    flat = op(x.reshape((B * N,) + tuple(x.shape[2:])), t.reshape(B * N), None, 0,
              ignore_index).reshape(B, N)
    if reduction == 0:
        return (flat.squeeze(1) if xr == 1 else flat), 0
    s = flat.sum(1)
    if reduction == 2:
        return s, 0
    cnt = (t != ignore_index).sum(1).to(s.dtype)
    return s / cnt, 0


def register_all():
    for n in ELEMENTWISE:
        op = OPS.get(n)
        if op is not None:
            op.def_batch_rule(_elementwise)
    for n, (arg, full, empty) in REDUCTIONS.items():
        op = OPS.get(n)
        if op is not None and arg in op.argnames:
            op.def_batch_rule(_dim_rule(arg, full, empty))
    for n, dim_op in (("max", "amax"), ("min", "amin")):
        OPS[n].def_batch_rule(_full_reduce(dim_op))
    OPS["transpose.int"].def_batch_rule(_transpose)
    OPS["t"].def_batch_rule(_t)
    OPS["permute"].def_batch_rule(_permute)
    OPS["movedim.intlist"].def_batch_rule(_movedim)
    OPS["unsqueeze"].def_batch_rule(_unsqueeze)
    OPS["squeeze"].def_batch_rule(_squeeze)
    OPS["view"].def_batch_rule(_view_like)
    OPS["reshape"].def_batch_rule(_view_like)
    OPS["expand"].def_batch_rule(_expand)
    OPS["flatten.using_ints"].def_batch_rule(_flatten)
    OPS["_basic_index"].def_batch_rule(_basic_index)
    OPS["_basic_index_backward"].def_batch_rule(_basic_index_backward)
    OPS["sum_to_size"].def_batch_rule(_sum_to_size)
    OPS["cat"].def_batch_rule(_cat_like(False))
    OPS["stack"].def_batch_rule(_cat_like(True))
    for n in ("matmul", "mm", "bmm", "mv", "dot"):
        OPS[n].def_batch_rule(_matmul)
    for n in ("addmm", "addmv", "baddbmm"):
        OPS[n].def_batch_rule(_addmm_like)
    OPS["linear"].def_batch_rule(_linear)
    OPS["_avg_pool"].def_batch_rule(_trailing_pool)
    OPS["_avg_pool_backward"].def_batch_rule(_trailing_pool_backward)
    OPS["convolution"].def_batch_rule(_convolution)
    OPS["_conv_backward"].def_batch_rule(_conv_backward)
    OPS["nll_loss_nd"].def_batch_rule(_nll_loss)
    register_more()


# ------------------------------------------------------------------ indexing / embedding

def _bexpand(v, bd, B):
    """A value with its batch dim first; an unbatched one expanded (a view) to the batch."""
    if bd is None:
        return v.unsqueeze(0).expand((B,) + tuple(v.shape))
    return _front(v, bd)


def _embedding(op, vals, bdims, B):
    """Unbatched weight: one lookup of the batched indices. Batched weight (B, V, D): each
    sample's rows taken by one gather along the rows (indices flattened per sample)."""
    w, idx = vals
    bw, bi = bdims
    if bw is None:
        return op(w, _front(idx, bi)), 0
    w = _front(w, bw)
    if w.dim() != 3:
        return NotImplemented
    idx = _bexpand(idx, bi, B)
    if idx.dtype.is_floating_point or idx.dtype.is_complex or idx.dtype == _bool():
        return NotImplemented
    lead = tuple(idx.shape[1:])
    D = w.shape[2]
    flat = idx.reshape(B, -1, 1).long().expand(B, -1, D)
    return w.gather(1, flat).reshape((B,) + lead + (D,)), 0


def _bool():
    import ember
    return ember.bool


def _embedding_backward(op, vals, bdims, B):
    """Rows of each sample's gradient summed into that sample's block of a (B * V, D)
    table: one accumulation with the indices offset by sample * V."""
    import ember
    g, idx, nw = vals
    bg, bi = bdims[0], bdims[1]
    g = _bexpand(g, bg, B)
    idx = _bexpand(idx, bi, B).long()
    off = ember.arange(B, dtype=idx.dtype).reshape((B,) + (1,) * (idx.dim() - 1)) * nw
    out = op(g, idx + off, B * nw)
    return out.reshape(B, nw, out.shape[-1]), 0


def _gather(op, vals, bdims, B):
    """gather / take_along_dim-like: self and index batch-first, the dim shifted by one."""
    x, dim, idx = vals[0], vals[1], vals[2]
    bx, bi = bdims[0], bdims[2]
    r = _ldim(x, bx)
    if r == 0 or _ldim(idx, bi) != r or not -r <= dim < r:
        return NotImplemented                   # (the loop raises torch's error)
    return op(_bexpand(x, bx, B), dim % r + 1, _bexpand(idx, bi, B), *vals[3:]), 0


def _scatter(op, vals, bdims, B):
    """scatter.src / scatter.value / scatter_add / scatter_reduce: self, index (and src)
    batch-first (unbatched ones expanded; the op writes into a fresh result), dim + 1."""
    x, dim, idx = vals[0], vals[1], vals[2]
    r = _ldim(x, bdims[0])
    if r == 0 or _ldim(idx, bdims[2]) != r or not -r <= dim < r:
        return NotImplemented
    new = list(vals)
    new[0] = _bexpand(x, bdims[0], B)
    new[1] = dim % r + 1
    new[2] = _bexpand(idx, bdims[2], B)
    if len(vals) > 3 and isinstance(vals[3], Tensor):
        if _ldim(vals[3], bdims[3]) != r:
            return NotImplemented
        new[3] = _bexpand(vals[3], bdims[3], B)
    elif len(bdims) > 3 and bdims[3] is not None:
        return NotImplemented
    return op(*new), 0


def _broadcast_tensors(op, vals, bdims, B):
    """The batched tensors batch-first and padded to the highest logical rank; the
    unbatched ones broadcast against them as they are: every result carries the batch."""
    ts, bds = vals[0], bdims[0]
    if not isinstance(bds, (list, tuple)):
        return NotImplemented
    R = max(_ldim(t, b) for t, b in zip(ts, bds))
    new = [t if b is None else _pad_front(t, b, R) for t, b in zip(ts, bds)]
    return op(new), 0


def _einsum(op, vals, bdims, B):
    """One einsum with a fresh subscript for the batch on every batched operand and first in
    the output."""
    eq, ts, bds = vals[0], vals[1], bdims[1]
    if not isinstance(bds, (list, tuple)) or not isinstance(eq, str):
        return NotImplemented
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs = eq
        letters = lhs.replace(".", "").replace(",", "")
        out = ("..." if "..." in lhs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != len(ts):
        return NotImplemented
    used = set(eq)
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    if not free:
        return NotImplemented
    z = free[0]
    new_ts, new_ins = [], []
    for t, b, s in zip(ts, bds, ins):
        if b is None:
            new_ts.append(t)
            new_ins.append(s)
        else:
            new_ts.append(_front(t, b))
            new_ins.append(z + s)
    return op(",".join(new_ins) + "->" + z + out, new_ts, *vals[2:]), 0


# ------------------------------------------------------------------ shape ops

def _shifted_dims(*argidx):
    """Rule for ops of one batched tensor whose int arguments at ``argidx`` are logical
    dims: the batch first, those dims shifted past it (logical rank >= 1)."""
    def rule(op, vals, bdims, B):
        if bdims[0] is None or any(b is not None for b in bdims[1:]):
            return NotImplemented
        x = _front(vals[0], bdims[0])
        r = x.dim() - 1
        new = list(vals)
        new[0] = x
        for i in argidx:
            d = vals[i]
            if r == 0 or not -r <= d < r:
                return NotImplemented           # the loop raises torch's error
            new[i] = d % r + 1
        return op(*new), 0
    return rule


def _diagonal(op, vals, bdims, B):
    if _ldim(vals[0], bdims[0]) < 2:
        return NotImplemented
    return _shifted_dims(2, 3)(op, vals, bdims, B)


def _trailing_matrix(op, vals, bdims, B):
    """tril / triu: over the last two dims, so the batch is one more leading dim."""
    if bdims[0] is None or _ldim(vals[0], bdims[0]) < 2:
        return NotImplemented
    return op(_front(vals[0], bdims[0]), *vals[1:]), 0


def _trace(op, vals, bdims, B):
    """The sum of each sample's diagonal."""
    x, bd = vals[0], bdims[0]
    if _ldim(x, bd) != 2 or x.dtype == _bool():
        return NotImplemented
    return _front(x, bd).diagonal(0, 1, 2).sum(-1), 0


def _repeat(op, vals, bdims, B):
    x = _front(vals[0], bdims[0])
    reps = list(vals[1])
    if len(reps) < x.dim() - 1:
        return NotImplemented
    return op(_pad_front(x, 0, len(reps)), [1] + reps), 0


def _tile(op, vals, bdims, B):
    x = _front(vals[0], bdims[0])
    dims = list(vals[1])
    r = x.dim() - 1
    dims = [1] * (r - len(dims)) + dims
    return OPS["repeat"](_pad_front(x, 0, len(dims)), [1] + dims), 0


def _cross(op, vals, bdims, B):
    """Both operands batch-first (an unbatched one gets a broadcasting size-1 batch dim);
    the dim (None: torch's first dim of size 3 of ``self``) shifted by one."""
    a, b, dim = vals
    ba, bb = bdims[0], bdims[1]
    r = _ldim(a, ba)
    if r == 0 or _ldim(b, bb) != r:
        return NotImplemented
    a = a.unsqueeze(0) if ba is None else _front(a, ba)
    b = b.unsqueeze(0) if bb is None else _front(b, bb)
    if dim is None:
        shape = tuple(a.shape[1:])
        if 3 not in shape:
            return NotImplemented
        dim = shape.index(3)
    elif not -r <= dim < r:
        return NotImplemented
    return op(a, b, dim % r + 1), 0


def _index_select(op, vals, bdims, B):
    """An unbatched index: the dim rule. A batched index (logical 0-d or 1-d) with an
    unbatched ``self``: one selection of all samples' indices, the dim split into
    (batch, k); with a batched ``self``: one gather of the index broadcast along the other
    dims."""
    x, dim, idx = vals
    bx, bi = bdims[0], bdims[2]
    if bi is None:
        return _dim_rule("dim")(op, vals, bdims, B)
    r = _ldim(x, bx)
    if _ldim(idx, bi) > 1 or r == 0:
        return NotImplemented
    idx = _front(idx, bi).reshape(B, -1)
    k = idx.shape[1]
    d = dim % r
    if not -r <= dim < r:
        return NotImplemented
    if bx is None:
        out = op(x, d, idx.reshape(-1))
        return out.reshape(tuple(x.shape[:d]) + (B, k) + tuple(x.shape[d + 1:])), d
    x = _front(x, bx)
    shape = list(x.shape)
    shape[d + 1] = k
    ix = idx.reshape((B,) + (1,) * d + (k,) + (1,) * (r - d - 1)).expand(shape)
    return x.gather(d + 1, ix.long()), 0


def _take_along_dim(op, vals, bdims, B):
    """Both batch-first and padded to one logical rank (an unbatched one broadcasts); the
    dim shifted by one. dim None: each sample flattened."""
    x, idx, dim = vals
    bx, bi = bdims[0], bdims[1]
    if dim is None:
        x = _front(x, bx).reshape(B, -1) if bx is not None else x.reshape(1, -1)
        idx = _front(idx, bi).reshape(B, -1) if bi is not None else idx.reshape(1, -1)
        return op(x, idx, 1), 0
    r = _ldim(x, bx)
    if r == 0 or _ldim(idx, bi) != r or not -r <= dim < r:
        return NotImplemented
    x = x.unsqueeze(0) if bx is None else _front(x, bx)
    idx = idx.unsqueeze(0) if bi is None else _front(idx, bi)
    return op(x, idx, dim % r + 1), 0


def _index_add_like(op, vals, bdims, B):
    """index_add / index_copy / index_fill with an unbatched index (their backward's and
    index_select's): self and source batch-first (unbatched ones expanded; the op writes
    into a fresh result), the dim shifted by one."""
    x, dim, idx, src = vals[0], vals[1], vals[2], vals[3]
    if bdims[2] is not None:
        return NotImplemented
    r = _ldim(x, bdims[0])
    if r == 0 or not -r <= dim < r:
        return NotImplemented
    new = list(vals)
    new[0] = _bexpand(x, bdims[0], B)
    new[1] = dim % r + 1
    if op.name.startswith("index_fill"):
        if bdims[3] is not None:
            return NotImplemented               # a batched fill value
    elif _ldim(src, bdims[3]) != r:
        return NotImplemented
    else:
        new[3] = _bexpand(src, bdims[3], B)
    return op(*new), 0


def _view_scatter(*dimidx):
    """diagonal_scatter / select_scatter / slice_scatter (view backwards): self and src
    batch-first, the dim arguments at ``dimidx`` shifted by one."""
    def rule(op, vals, bdims, B):
        x, src = vals[0], vals[1]
        r = _ldim(x, bdims[0])
        new = list(vals)
        new[0] = _bexpand(x, bdims[0], B)
        new[1] = _bexpand(src, bdims[1], B)
        for i in dimidx:
            d = vals[i]
            if r == 0 or not -r <= d < r:
                return NotImplemented
            new[i] = d % r + 1
        return op(*new), 0
    return rule


def register_more():
    """Indexing, embedding, broadcasting and einsum rules."""
    OPS["embedding"].def_batch_rule(_embedding)
    OPS["_embedding_backward"].def_batch_rule(_embedding_backward)
    OPS["gather"].def_batch_rule(_gather)
    for n in ("scatter.src", "scatter.value", "scatter_add", "scatter_reduce.two"):
        OPS[n].def_batch_rule(_scatter)
    OPS["broadcast_tensors"].def_batch_rule(_broadcast_tensors)
    OPS["einsum"].def_batch_rule(_einsum)
    OPS["unfold"].def_batch_rule(_shifted_dims(1))
    OPS["unflatten.int"].def_batch_rule(_shifted_dims(1))
    OPS["diagonal"].def_batch_rule(_diagonal)
    OPS["tril"].def_batch_rule(_trailing_matrix)
    OPS["triu"].def_batch_rule(_trailing_matrix)
    OPS["trace"].def_batch_rule(_trace)
    OPS["repeat"].def_batch_rule(_repeat)
    OPS["tile"].def_batch_rule(_tile)
    OPS["cross"].def_batch_rule(_cross)
    OPS["index_select"].def_batch_rule(_index_select)
    OPS["take_along_dim"].def_batch_rule(_take_along_dim)
    for n in ("index_add", "index_copy", "index_fill.int_Tensor"):
        OPS[n].def_batch_rule(_index_add_like)
    OPS["diagonal_scatter"].def_batch_rule(_view_scatter(3, 4))
    OPS["select_scatter"].def_batch_rule(_view_scatter(2))
    OPS["slice_scatter"].def_batch_rule(_view_scatter(2))
