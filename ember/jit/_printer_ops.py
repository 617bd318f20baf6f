"""Nodes that call a Python callable (``node.fn``) written as the aten call torch prints:
Python operators and builtins on numbers and containers (``torch.add(i, 1)``,
``torch.len(xs)``, ``xs[0]``), list/dict/str methods (``torch.append(xs, v)``), ``math``,
ember's ``nn.functional`` (``F.linear`` -> ``torch.linear``, ``F.batch_norm`` ->
``torch.batch_norm`` in ATen's argument order) and Tensor methods without an op record.
"""
from __future__ import annotations

import inspect
import operator

from ember.jit import _types as T
from ember.jit._ir import NOT_CONSTANT
from ember.jit._printer import _Expr, constant_str

_CASTS = {"Bool": "bool", "Int": "int", "Float": "float", "str": "str", "Complex": "complex"}
# scalar-on-the-left Tensor operators: name -> (torch op, swap operands)
_REFLECTED = {"add": ("add", True), "mul": ("mul", True), "sub": ("rsub", True),
              "__and__": ("bitwise_and", True), "__or__": ("bitwise_or", True),
              "__xor__": ("bitwise_xor", True), "pow": ("pow", False),
              "eq": ("eq", True), "ne": ("ne", True), "lt": ("gt", True), "gt": ("lt", True),
              "le": ("ge", True), "ge": ("le", True)}
_DTYPE_METHODS = {"float": 6, "double": 7, "half": 5, "long": 4, "int": 3, "short": 2,
                  "bool": 11, "byte": 0, "char": 1, "bfloat16": 15}


_ALIASES = {}


def public_name(fn, name, check=False):
    """The public ember / Tensor name of a callable whose ``__name__`` is internal
    (``_cat_front`` -> ``cat``); with ``check``, whether ``name`` is public."""
    import ember
    if not _ALIASES:
        for owner in (ember, ember.Tensor):
            for k in dir(owner):
                if k.startswith("__"):
                    continue
                v = getattr(owner, k, None)
                inner = getattr(v, "__name__", None)
                if callable(v) and isinstance(inner, str) and inner != k and not (
                        hasattr(ember, inner) or hasattr(ember.Tensor, inner)):
                    _ALIASES.setdefault(id(v), k)
        _ALIASES[None] = None
    if check:
        return hasattr(ember, name) or hasattr(ember.Tensor, name)
    return _ALIASES.get(id(fn), name)


# callables whose aten spelling uses an input twice: their inputs are never inlined
NAMED_INPUTS = {"interpolate", "upsample", "lp_pool1d", "lp_pool2d", "lp_pool3d", "kl_div",
                "softsign", "tanhshrink", "normalize", "_cross_entropy",
                "multilabel_soft_margin_loss"}


def fn_call(p, n):
    name = n.kind.split("::", 1)[1]
    fn = n.fn
    if not public_name(None, name, check=True):
        name = public_name(fn, name)
    args = [p.arg(v) for v in n.inputs]
    nkw = len(n.kwnames)
    pos, kw = (args[:len(args) - nkw], list(zip(n.kwnames, args[len(args) - nkw:]))) if nkw \
        else (args, [])
    if name in _CASTS and not kw:
        return f"{_CASTS[name]}({', '.join(a.text for a in pos)})"
    if "_py" in n.attrs:
        return _operator(p, n, name, pos)
    if fn in (max, min) and not kw:
        return f"ops.prim.{fn.__name__}(" + ", ".join(a.text for a in pos) + ")"
    if name == "__getitem__":
        from ember.jit._printer import subscript_base
        return f"{subscript_base(pos[0].text)}[{pos[1].text}]"
    if name == "slice" and len(pos) == 4:
        lo, hi, st = pos[1:]
        parts = [pos[0].text, lo.text, hi.text] + ([st.text] if st.const not in (None, 1) else [])
        return p.call("slice", parts)
    module = getattr(fn, "__module__", None) or ""
    if module.startswith("ember.nn.functional") or module.startswith("ember.nn.modules"):
        entry = FUNCTIONAL.get(getattr(fn, "__name__", name))
        if entry is None:
            return _scripted_call(p, fn, name, pos, kw)
        return entry(p, _bind(fn, pos, kw, name))
    if module.startswith("ember.jit"):
        return p.call(name, [a.text for a in pos], [(k, a.text) for k, a in kw])
    if module.startswith("ember") or _is_tensor_method(fn):
        return _ember_call(p, fn, name, pos, kw)
    if isinstance(fn, type) and issubclass(fn, BaseException):
        raise NotImplementedError(f"ember.jit.save: constructing {fn.__name__}")
    if module in ("math", "_operator", "operator") or getattr(fn, "__objclass__", None) in (list, dict, str, float) \
            or fn in (len, operator.contains, abs, min, max, round, divmod, sum, any, all,
                      sorted, reversed, list, tuple, ord, chr, hash, hex, oct, bin) \
            or name in ("format", "warn", "__range_length", "__derive_index", "Delete"):
        return p.call(name, [a.text for a in pos], [(k, a.text) for k, a in kw])
    raise NotImplementedError(f"ember.jit.save: {name} (a call to "
                              f"{getattr(fn, '__qualname__', fn)!s}) has no TorchScript form")


def _scripted_call(p, fn, name, pos, kw):
    """A functional with no aten spelling, as torch does it: the function itself scripted
    (``__torch__.torch.nn.functional.<name>``) and called."""
    from ember.jit._script import compile_function
    try:
        function = compile_function(fn)
    except Exception as e:  # noqa: BLE001 - any failure means: no TorchScript form
        raise NotImplementedError(f"ember.jit.save: nn.functional.{name} has no aten mapping "
                                  f"and does not script ({type(e).__name__}: "
                                  f"{str(e).strip().splitlines()[0] if str(e).strip() else ''})"
                                  ) from None
    b = _fill(p, _bind(fn, pos, kw, name))
    args = []
    for arg_name, t, _has_def, _d, _kw in function.arg_schema:
        if arg_name not in b:
            raise NotImplementedError(f"ember.jit.save: cannot bind {name}'s argument "
                                      f"{arg_name}")
        e = b[arg_name]
        if e.type is not None and not T.is_subtype(e.type, t):
            raise NotImplementedError(f"ember.jit.save: nn.functional.{name} scripts with "
                                      f"{arg_name}: {t.annotation}, but is called with "
                                      f"{e.type.annotation}")
        args.append(b.text(arg_name))
    return f"{p.ctx.function_name(function)}(" + "".join(a + ", " for a in args) + ")"


def _is_tensor_method(fn):
    import ember
    return getattr(ember.Tensor, getattr(fn, "__name__", ""), None) is fn


def _operator(p, n, name, pos):
    if len(pos) == 2 and n.outputs[0].type is T.TensorType and pos[0].type is not T.TensorType:
        op, swap = _REFLECTED.get(name, (None, None))
        if op is None:
            if name == "div":
                return p.call("mul", [p.call("reciprocal", [pos[1].text]), pos[0].text])
            raise NotImplementedError(f"ember.jit.save: scalar {name} tensor")
        a, b = (pos[1], pos[0]) if swap else (pos[0], pos[1])
        return p.call(op, [a.text, b.text])
    if name == "pos":
        return pos[0].text
    if name == "__invert__":
        name = "__not__" if pos[0].type is T.BoolType else "__invert__"
    return p.call(name, [a.text for a in pos])


class _Bound(dict):
    """Argument name -> _Expr (defaults filled as constants)."""

    def text(self, name):
        return self[name].text

    def const(self, name):
        e = self[name]
        if e.const is NOT_CONSTANT and e.type is T.NoneType:
            return None              # a NoneType value (an attribute holding None) is None
        return e.const


def _const_expr(p, v):
    return _Expr(constant_str(v, p.ctx), v, None)


def _bind(fn, pos, kw, name):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise NotImplementedError(f"ember.jit.save: cannot read the signature of {name}") from None
    ba = sig.bind(*pos, **dict(kw))
    out = _Bound()
    for pname, prm in sig.parameters.items():
        if prm.kind in (prm.VAR_POSITIONAL, prm.VAR_KEYWORD):
            out[pname] = ba.arguments.get(pname, ())
            continue
        if pname in ba.arguments:
            out[pname] = ba.arguments[pname]
        elif prm.default is not inspect.Parameter.empty:
            out[pname] = _Expr(None, prm.default, None)
    return out


def _fill(p, b):
    for k, v in b.items():
        if isinstance(v, _Expr) and v.text is None:
            b[k] = _Expr(constant_str(v.const, p.ctx) if not isinstance(v.const, tuple)
                         else constant_str(list(v.const), p.ctx), v.const, None)
    return b


def _ember_call(p, fn, name, pos, kw):
    """A Tensor method / ember function without an op record: ordered by the op record of
    the same name when ember has one, else written as called."""
    if name in _DTYPE_METHODS and _is_tensor_method(fn) and len(pos) == 1 and not kw:
        return p.call("to", [pos[0].text, str(_DTYPE_METHODS[name])])
    if name in _TENSOR_SPECIAL:
        return _TENSOR_SPECIAL[name](p, pos, kw)
    try:
        sig = inspect.signature(fn)
        varargs = [k for k, prm in sig.parameters.items() if prm.kind == prm.VAR_POSITIONAL]
    except (TypeError, ValueError):
        sig, varargs = None, []
    if varargs and sig is not None:
        fixed = [k for k, prm in sig.parameters.items()
                 if prm.kind in (prm.POSITIONAL_ONLY, prm.POSITIONAL_OR_KEYWORD)]
        if not fixed and name == "einsum":
            fixed = ["equation"]
        head, rest = pos[:len(fixed)], pos[len(fixed):]
        if len(rest) == 1 and isinstance(rest[0].type, (T.ListType, T.TupleType)):
            packed = [rest[0].text]
        elif rest:
            packed = ["[" + ", ".join(a.text for a in rest) + "]"]
        else:
            packed = []
        kws = [(k, a.text) for k, a in kw if k not in _EMBER_ONLY_KW]
        return p.call(name, [a.text for a in head] + packed, kws)
    from ember._ops.registry import OPS
    op = OPS.get(name)
    if op is not None and sig is not None:
        try:
            b = _fill(p, _bind(fn, pos, kw, name))
        except TypeError:
            b = None
        if b is not None:
            sargs = op.schema.args
            vals = []
            ok = True
            for k, a in enumerate(sargs):
                key = a.name if a.name in b else ("input" if a.name == "self" and "input" in b
                                                  else "self" if a.name == "self" else None)
                if key is None or key not in b:
                    if k == 0 and sargs[0].type == "Tensor" and pos:
                        vals.append(pos[0])
                        continue
                    if a.has_default:
                        vals.append(_const_expr(p, a.default))
                        continue
                    ok = False
                    break
                vals.append(b[key])
            snames = [a.name for a in sargs]
            extra = [k for k, v in b.items() if isinstance(v, _Expr) and k not in snames
                     and k not in ("input", "self") and not _is_sig_default(sig, k, v)]
            if ok and not extra:
                return p.schema_call(name, sargs, vals)
    kws = [(k, a.text) for k, a in kw if k not in _EMBER_ONLY_KW]
    return p.call(name, [a.text for a in pos], kws)


_EMBER_ONLY_KW = {"out"}


def _is_sig_default(sig, k, e):
    prm = sig.parameters.get(k)
    if prm is None or prm.default is inspect.Parameter.empty or e.const is NOT_CONSTANT:
        return False
    d = prm.default
    return e.const is d or (type(e.const) is type(d) and e.const == d)


def _size(p, pos, kw):
    return p.call("size", [a.text for a in pos] + [a.text for _, a in kw])


def _to(p, pos, kw):
    return p.call("to", [a.text for a in pos], [(k, a.text) for k, a in kw])


_TENSOR_SPECIAL = {"size": _size, "to": _to}


# ----------------------------------------------------------------------------- functional

def _inplace(p, b, name, args):
    """``torch.relu(x)`` / ``torch.relu_(x)`` by the ``inplace`` argument."""
    ip = b.const("inplace") if "inplace" in b else False
    if ip is NOT_CONSTANT:
        a = p.call(name + "_", args)
        c = p.call(name, args)
        return f"({a} if {b.text('inplace')} else {c})"
    return p.call(name + "_" if ip else name, args)


def _act(name, *extra):
    def write(p, b):
        _fill(p, b)
        return _inplace(p, b, name, [b.text("input")] + [b.text(e) for e in extra])
    return write


def _plain(name, *names):
    def write(p, b):
        _fill(p, b)
        return p.call(name, [b.text(k) for k in names])
    return write


def _kw(name, pos_names, kw_names):
    def write(p, b):
        _fill(p, b)
        kws = [(k, b.text(k)) for k in kw_names if b.const(k) is not None]
        return p.call(name, [b.text(k) for k in pos_names], kws)
    return write


def _list(p, b, name):
    v = b[name].const
    if isinstance(v, int) and not isinstance(v, bool):
        return None
    return b.text(name)


def _softmax(name):
    def write(p, b):
        _fill(p, b)
        if b.const("dim") is None:
            raise NotImplementedError(f"ember.jit.save: {name} without dim")
        args = [b.text("input"), b.text("dim")]
        if b.const("dtype") is not None:
            args.append(b.text("dtype"))
        return p.call(name, args)
    return write


def _dropout(name):
    def write(p, b):
        _fill(p, b)
        return _inplace(p, b, name, [b.text("input"), b.text("p"), b.text("training")])
    return write


def _conv(name, *names):
    def write(p, b):
        _fill(p, b)
        return p.call(name, [_as_list_text(p, b, k) for k in names])
    return write


def _as_list_text(p, b, k):
    e = b[k]
    if isinstance(e.const, tuple):
        return constant_str(list(e.const), p.ctx)
    return e.text


def _pool(name, names, with_indices=None):
    def write(p, b):
        _fill(p, b)
        if b.const("stride") is None:
            b["stride"] = _Expr("annotate(List[int], [])", [], None)
        args = [_as_list_text(p, b, k) for k in names]
        if with_indices is not None and b.const("return_indices") is not False:
            if b.const("return_indices") is True:
                return p.call(with_indices, args)
            raise NotImplementedError(f"ember.jit.save: {name} with a non-constant "
                                      f"return_indices")
        return p.call(name, args)
    return write


def _batch_norm(p, b):
    _fill(p, b)
    return p.call("batch_norm", [b.text(k) for k in (
        "input", "weight", "bias", "running_mean", "running_var", "training", "momentum",
        "eps")] + ["True"])


def _instance_norm(p, b):
    _fill(p, b)
    return p.call("instance_norm", [b.text(k) for k in (
        "input", "weight", "bias", "running_mean", "running_var", "use_input_stats",
        "momentum", "eps")] + ["True"])


def _embedding(p, b):
    _fill(p, b)
    if b.const("max_norm") is not None:
        raise NotImplementedError("ember.jit.save: F.embedding with max_norm")
    pad = b.const("padding_idx")
    pad_text = "-1" if pad is None else b.text("padding_idx")
    return p.call("embedding", [b.text("weight"), b.text("input"), pad_text,
                                b.text("scale_grad_by_freq"), b.text("sparse")])


def _adaptive_max(name):
    def write(p, b):
        _fill(p, b)
        call = p.call(name, [b.text("input"), _as_list_text(p, b, "output_size")])
        ri = b.const("return_indices")
        if ri is True:
            return call
        if ri is False:
            return f"{call}[0]"
        raise NotImplementedError(f"ember.jit.save: {name} with a non-constant return_indices")
    return write


def _pad(p, b):
    _fill(p, b)
    args = [b.text("input"), _as_list_text(p, b, "pad"), b.text("mode")]
    if b.const("value") is not None:
        args.append(b.text("value"))
    return p.call("pad", args)


def _normalize(p, b):
    _fill(p, b)
    if b.const("out") is not None:
        raise NotImplementedError("ember.jit.save: F.normalize with out=")
    x = b.text("input")
    norm = p.call("norm", [x, b.text("p"), f"[{b.text('dim')}]", "True"])
    denom = p.call("expand_as", [p.call("clamp_min", [norm, b.text("eps")]), x])
    return p.call("div", [x, denom])


def _relu6(p, b):
    _fill(p, b)
    return _inplace(p, b, "hardtanh", [b.text("input"), "0.", "6."])


def _gelu(p, b):
    _fill(p, b)
    kws = [("approximate", b.text("approximate"))] if b.const("approximate") != "none" else []
    return p.call("gelu", [b.text("input")], kws)


def _softmin(p, b):
    _fill(p, b)
    if b.const("dim") is None:
        raise NotImplementedError("ember.jit.save: softmin without dim")
    args = [p.call("neg", [b.text("input")]), b.text("dim")]
    if b.const("dtype") is not None:
        args.append(b.text("dtype"))
    return p.call("softmax", args)


def _softsign(p, b):
    _fill(p, b)
    x = b.text("input")
    return p.call("div", [x, p.call("add", [p.call("abs", [x]), "1"])])


def _tanhshrink(p, b):
    _fill(p, b)
    x = b.text("input")
    return p.call("sub", [x, p.call("tanh", [x])])


_INTERP_RANK = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _interpolate(p, b):
    """F.interpolate as torch's upsample ops (``upsample_nearest2d(x, size, scales)``...)."""
    _fill(p, b)
    names = ("mode", "size", "scale_factor", "align_corners", "recompute_scale_factor",
             "antialias")
    c = {k: b.const(k) for k in names}
    if any(v is NOT_CONSTANT for v in c.values()):
        raise NotImplementedError("ember.jit.save: F.interpolate with non-constant options")
    if c["antialias"] or c["recompute_scale_factor"]:
        raise NotImplementedError("ember.jit.save: F.interpolate with antialias or "
                                  "recompute_scale_factor")
    mode, size, sf = c["mode"], c["size"], c["scale_factor"]
    x = b.text("input")

    def spec(rank):
        out_size = "None" if size is None else constant_str(
            list(size) if isinstance(size, (tuple, list)) else [size] * rank, p.ctx)
        scales = "None" if sf is None else constant_str(
            [float(v) for v in sf] if isinstance(sf, (tuple, list)) else [float(sf)] * rank,
            p.ctx)
        return out_size, scales

    def one(rank):
        out_size, scales = spec(rank)
        if mode in ("nearest", "nearest-exact"):
            op = ("upsample_nearest" if mode == "nearest" else "_upsample_nearest_exact")
            return p.call(f"{op}{rank}d", [x, out_size, scales])
        if mode == "area":
            if size is None:
                raise NotImplementedError("ember.jit.save: F.interpolate(mode='area') with "
                                          "scale_factor")
            return p.call(f"adaptive_avg_pool{rank}d", [x, out_size])
        ac = "False" if c["align_corners"] is None else constant_str(c["align_corners"], p.ctx)
        kind = {"linear": "linear1d", "bilinear": "bilinear2d", "bicubic": "bicubic2d",
                "trilinear": "trilinear3d"}.get(mode)
        if kind is None:
            raise NotImplementedError(f"ember.jit.save: F.interpolate(mode={mode!r})")
        return p.call(f"upsample_{kind}", [x, out_size, ac, scales])

    if mode in _INTERP_RANK:
        return one(_INTERP_RANK[mode])
    for seq in (size, sf):
        if isinstance(seq, (tuple, list)):
            return one(len(seq))
    if not x.isidentifier():
        raise NotImplementedError("ember.jit.save: F.interpolate of an expression with a "
                                  "rank known only at run time")
    dim = p.call("dim", [x])
    return (f"({one(1)} if torch.eq({dim}, 3) else ({one(2)} if torch.eq({dim}, 4) "
            f"else {one(3)}))")


# ---------------------------------------------------------------- recurrent layers
# ember's nn.RNN/LSTM/GRU run their own recurrences; archives call torch's fused ops

_RNN_Q = "__torch__.torch.nn.modules.rnn"
_RNN_ARGS = ("input, hx, weights, has_biases, num_layers, dropout, training, bidirectional, "
             "batch_first")
_RNN_SOURCE = f"""def _ember_rnn(mode: str,
    input: Tensor,
    batch_sizes: Optional[Tensor],
    h0: Tensor,
    c0: Optional[Tensor],
    weights: List[Tensor],
    names: List[str],
    num_layers: int,
    bidirectional: bool,
    dropout: float,
    training: bool,
    batch_first: bool,
    proj_size: int) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
  if torch.__isnot__(batch_sizes, None):
    ops.prim.RaiseException("packed sequences are not supported by this archive")
  else:
    pass
  has_biases = torch.__contains__(names, "bias_ih_l0")
  c_n = annotate(Optional[Tensor], None)
  if torch.eq(mode, "LSTM"):
    if torch.__isnot__(c0, None):
      hx = [h0, unchecked_cast(Tensor, c0)]
    else:
      ops.prim.RaiseException("an LSTM needs a cell state")
      hx = uninitialized(List[Tensor])
    output, h_n, c = torch.lstm({_RNN_ARGS})
    c_n = c
  else:
    hx = h0
    if torch.eq(mode, "GRU"):
      output, h_n = torch.gru({_RNN_ARGS})
    else:
      if torch.eq(mode, "RNN_TANH"):
        output, h_n = torch.rnn_tanh({_RNN_ARGS})
      else:
        output, h_n = torch.rnn_relu({_RNN_ARGS})
  return (output, h_n, c_n)
"""
_CELL_SOURCE = """def _ember_cell(mode: str,
    input: Tensor,
    h: Tensor,
    c: Optional[Tensor],
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Optional[Tensor],
    b_hh: Optional[Tensor]) -> Tuple[Tensor, Optional[Tensor]]:
  c_n = annotate(Optional[Tensor], None)
  if torch.eq(mode, "LSTM"):
    if torch.__isnot__(c, None):
      hx = [h, unchecked_cast(Tensor, c)]
    else:
      ops.prim.RaiseException("an LSTM cell needs a cell state")
      hx = uninitialized(List[Tensor])
    h_n, c1 = torch.lstm_cell(input, hx, w_ih, w_hh, b_ih, b_hh)
    c_n = c1
  else:
    if torch.eq(mode, "GRU"):
      h_n = torch.gru_cell(input, h, w_ih, w_hh, b_ih, b_hh)
    else:
      if torch.eq(mode, "RNN_TANH"):
        h_n = torch.rnn_tanh_cell(input, h, w_ih, w_hh, b_ih, b_hh)
      else:
        h_n = torch.rnn_relu_cell(input, h, w_ih, w_hh, b_ih, b_hh)
  return (h_n, c_n)
"""


def _source_call(p, name, source, b, names):
    """A call to a helper written into the archive (``__torch__...rnn.<name>``)."""
    _fill(p, b)
    q = f"{_RNN_Q}.{name}"
    p.ctx.sources.setdefault(q, source)
    return f"{q}(" + "".join(b.text(k) + ", " for k in names) + ")"


def _recurrent(p, b):
    return _source_call(p, "_ember_rnn", _RNN_SOURCE, b, (
        "mode", "input", "batch_sizes", "h0", "c0", "weights", "names", "num_layers",
        "bidirectional", "dropout", "training", "batch_first", "proj_size"))


def _cell(p, b):
    return _source_call(p, "_ember_cell", _CELL_SOURCE, b, (
        "mode", "input", "h", "c", "w_ih", "w_hh", "b_ih", "b_hh"))


def _lstm_recurrent(p, b):
    _fill(p, b)
    has_biases = p.call("__contains__", [b.text("names"), '"bias_ih_l0"'])
    return p.call("lstm", [b.text("input"), f"[{b.text('h0')}, {b.text('c0')}]",
                           b.text("weights"), has_biases] + [b.text(k) for k in (
                               "num_layers", "dropout", "training", "bidirectional",
                               "batch_first")])


def _mha(p, b):
    from ember.jit import _archive_mha as M
    _fill(p, b)
    p.ctx.sources.setdefault(M.QUALNAME, M.SOURCE)
    return f"{M.QUALNAME}(" + "".join(b.text(k) + ", " for k in M.ARGS) + ")"


def _additive_mask(p, b):
    from ember.jit import _archive_mha as M
    _fill(p, b)
    p.ctx.sources.setdefault(M.MASK_QUALNAME, M.MASK_SOURCE)
    return f"{M.MASK_QUALNAME}(" + "".join(b.text(k) + ", " for k in M.MASK_ARGS) + ")"


def _lstm_cell(p, b):
    _fill(p, b)
    return p.call("lstm_cell", [b.text("input"), f"[{b.text('h')}, {b.text('c')}]"] +
                  [b.text(k) for k in ("w_ih", "w_hh", "b_ih", "b_hh")])


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _loss(name, before, after=()):
    """A loss as its aten op: ``reduction`` as torch's enum (none 0, mean 1, sum 2)."""
    def write(p, b):
        _fill(p, b)
        for legacy in ("size_average", "reduce"):
            if legacy in b and b.const(legacy) is not None:
                raise NotImplementedError(f"ember.jit.save: {name} with {legacy}=")
        if "weight" in b and "weight" not in before + after and b.const("weight") is not None:
            raise NotImplementedError(f"ember.jit.save: {name} with weight=")
        return p.call(name, [b.text(k) for k in before] + [_reduction(p, b, name)] +
                      [b.text(k) for k in after])
    return write


_REDUCTION_Q = "__torch__.torch.nn.functional._reduction_enum"
_REDUCTION_SOURCE = """def _reduction_enum(reduction: str) -> int:
  if torch.eq(reduction, "none"):
    r = 0
  else:
    if torch.eq(reduction, "mean"):
      r = 1
    else:
      if torch.eq(reduction, "sum"):
        r = 2
      else:
        ops.prim.RaiseException(torch.add(reduction, " is not a valid value for reduction"), "builtins.ValueError")
        r = uninitialized(int)
  return r
"""


def _reduction(p, b, name):
    """torch's reduction enum of a loss's ``reduction`` (converted at run time when it is
    an attribute)."""
    for legacy in ("size_average", "reduce"):
        if legacy in b and b.const(legacy) is not None:
            raise NotImplementedError(f"ember.jit.save: {name} with {legacy}=")
    red = b.const("reduction")
    if red is NOT_CONSTANT:
        p.ctx.sources.setdefault(_REDUCTION_Q, _REDUCTION_SOURCE)
        return f"{_REDUCTION_Q}({b.text('reduction')}, )"
    if red not in _REDUCTIONS:
        raise NotImplementedError(f"ember.jit.save: {name}(reduction={red!r})")
    return str(_REDUCTIONS[red])


def _kl_div(p, b):
    _fill(p, b)
    if b.const("reduction") == "batchmean":
        x = b.text("input")
        total = p.call("kl_div", [x, b.text("target"), "2"], [("log_target", b.text("log_target"))])
        return p.call("div", [total, p.call("size", [x, "0"])])
    return p.call("kl_div", [b.text("input"), b.text("target"), _reduction(p, b, "kl_div")],
                  [("log_target", b.text("log_target"))])


def _multilabel_soft_margin(p, b):
    _fill(p, b)
    x, y = b.text("input"), b.text("target")
    red = b.const("reduction")
    if red not in _REDUCTIONS:
        raise NotImplementedError(f"ember.jit.save: multilabel_soft_margin_loss(reduction="
                                  f"{red!r})")
    for legacy in ("size_average", "reduce"):
        if b.const(legacy) is not None:
            raise NotImplementedError(f"ember.jit.save: multilabel_soft_margin_loss with "
                                      f"{legacy}=")
    pos = p.call("mul", [y, p.call("log_sigmoid", [x])])
    neg = p.call("mul", [p.call("rsub", [y, "1"]), p.call("log_sigmoid", [p.call("neg", [x])])])
    loss = p.call("neg", [p.call("add", [pos, neg])])
    if b.const("weight") is not None:
        loss = p.call("mul", [loss, b.text("weight")])
    loss = p.call("div", [p.call("sum", [loss, "[1]"]), p.call("size", [x, "1"])])
    return {"none": loss, "mean": p.call("mean", [loss]), "sum": p.call("sum", [loss])}[red]


_BAG_Q = "__torch__.torch.nn.functional._ember_embedding_bag"
_BAG_SOURCE = """def _ember_embedding_bag(weight: Tensor,
    input: Tensor,
    offsets: Optional[Tensor],
    scale_grad_by_freq: bool,
    mode: int,
    sparse: bool,
    per_sample_weights: Optional[Tensor],
    include_last_offset: bool,
    padding_idx: Optional[int]) -> Tensor:
  if torch.__is__(offsets, None):
    n = torch.size(input, 1)
    offsets0 = torch.arange(0, torch.numel(input), n, dtype=4, device=ops.prim.device(input))
    input0 = torch.reshape(input, [-1])
    if torch.__isnot__(per_sample_weights, None):
      per_sample_weights0 = annotate(Optional[Tensor], torch.reshape(unchecked_cast(Tensor, per_sample_weights), [-1]))
    else:
      per_sample_weights0 = per_sample_weights
  else:
    offsets0 = unchecked_cast(Tensor, offsets)
    input0 = input
    per_sample_weights0 = per_sample_weights
  _0, _1, _2, _3 = torch.embedding_bag(weight, input0, offsets0, scale_grad_by_freq, mode, sparse, per_sample_weights0, include_last_offset, padding_idx)
  return _0
"""


def _lp_pool(n):
    """torch's formula: (sign(a) * relu(|a|) * area) ** (1 / p), a = avg_pool(x ** p)."""
    def write(p, b):
        _fill(p, b)
        x, nt = b.text("input"), b.text("norm_type")
        k = b.const("kernel_size")
        if k is NOT_CONSTANT:
            raise NotImplementedError(f"ember.jit.save: lp_pool{n}d with a non-constant kernel")
        ks = list(k) if isinstance(k, (tuple, list)) else [k] * n
        area = 1
        for v in ks:
            area *= v
        stride = "annotate(List[int], [])" if b.const("stride") is None else \
            _as_list_text(p, b, "stride")
        a = p.call(f"avg_pool{n}d", [p.call("pow", [x, nt]), constant_str(ks, p.ctx), stride,
                                     "0", b.text("ceil_mode")])
        signed = p.call("mul", [p.call("sign", [a]), p.call("relu", [p.call("abs", [a])])])
        return p.call("pow", [p.call("mul", [signed, str(area)]), f"torch.div(1., {nt})"])
    return write


def _embedding_bag(p, b):
    _fill(p, b)
    if b.const("max_norm") is not None:
        raise NotImplementedError("ember.jit.save: F.embedding_bag with max_norm")
    mode = {"sum": 0, "mean": 1, "max": 2}.get(b.const("mode"))
    if mode is None:
        raise NotImplementedError(f"ember.jit.save: embedding_bag(mode={b.const('mode')!r})")
    p.ctx.sources.setdefault(_BAG_Q, _BAG_SOURCE)
    args = [b.text("weight"), b.text("input"), b.text("offsets"), b.text("scale_grad_by_freq"),
            str(mode), b.text("sparse"), b.text("per_sample_weights"),
            b.text("include_last_offset"), b.text("padding_idx")]
    return f"{_BAG_Q}(" + "".join(a + ", " for a in args) + ")"


def _fold(p, b):
    _fill(p, b)
    return p.call("col2im", [b.text("input")] + [_pair_list(p, b, k, 2) for k in (
        "output_size", "kernel_size", "dilation", "padding", "stride")])


def _unfold(p, b):
    _fill(p, b)
    return p.call("im2col", [b.text("input")] + [_pair_list(p, b, k, 2) for k in (
        "kernel_size", "dilation", "padding", "stride")])


def _pair_list(p, b, k, n):
    v = b.const(k)
    if isinstance(v, int) and not isinstance(v, bool):
        return constant_str([v] * n, p.ctx)
    return _as_list_text(p, b, k)


FUNCTIONAL = {
    "linear": _plain("linear", "input", "weight", "bias"),
    "bilinear": _plain("bilinear", "input1", "input2", "weight", "bias"),
    "relu": _act("relu"), "relu6": _relu6, "silu": _act("silu"), "mish": _act("mish"),
    "hardswish": _act("hardswish"), "hardsigmoid": _act("hardsigmoid"),
    "selu": _act("selu"), "celu": _act("celu", "alpha"), "elu": _act("elu", "alpha"),
    "leaky_relu": _act("leaky_relu", "negative_slope"),
    "hardtanh": _act("hardtanh", "min_val", "max_val"),
    "threshold": _act("threshold", "threshold", "value"),
    "rrelu": _act("rrelu", "lower", "upper", "training"),
    "gelu": _gelu, "sigmoid": _plain("sigmoid", "input"), "tanh": _plain("tanh", "input"),
    "logsigmoid": _plain("log_sigmoid", "input"), "softsign": _softsign,
    "tanhshrink": _tanhshrink,
    "softplus": _plain("softplus", "input", "beta", "threshold"),
    "softshrink": _plain("softshrink", "input", "lambd"),
    "hardshrink": _plain("hardshrink", "input", "lambd"),
    "glu": _plain("glu", "input", "dim"), "prelu": _plain("prelu", "input", "weight"),
    "softmax": _softmax("softmax"), "log_softmax": _softmax("log_softmax"),
    "softmin": _softmin, "interpolate": _interpolate, "upsample": _interpolate,
    "dropout": _dropout("dropout"), "alpha_dropout": _dropout("alpha_dropout"),
    "feature_alpha_dropout": _dropout("feature_alpha_dropout"),
    "dropout1d": _dropout("feature_dropout"), "dropout2d": _dropout("feature_dropout"),
    "dropout3d": _dropout("feature_dropout"),
    "conv1d": _conv("conv1d", "input", "weight", "bias", "stride", "padding", "dilation", "groups"),
    "conv2d": _conv("conv2d", "input", "weight", "bias", "stride", "padding", "dilation", "groups"),
    "conv3d": _conv("conv3d", "input", "weight", "bias", "stride", "padding", "dilation", "groups"),
    "conv_transpose1d": _conv("conv_transpose1d", "input", "weight", "bias", "stride", "padding",
                              "output_padding", "groups", "dilation"),
    "conv_transpose2d": _conv("conv_transpose2d", "input", "weight", "bias", "stride", "padding",
                              "output_padding", "groups", "dilation"),
    "conv_transpose3d": _conv("conv_transpose3d", "input", "weight", "bias", "stride", "padding",
                              "output_padding", "groups", "dilation"),
    "max_pool1d": _pool("max_pool1d", ("input", "kernel_size", "stride", "padding", "dilation",
                                       "ceil_mode"), "max_pool1d_with_indices"),
    "max_pool2d": _pool("max_pool2d", ("input", "kernel_size", "stride", "padding", "dilation",
                                       "ceil_mode"), "max_pool2d_with_indices"),
    "max_pool3d": _pool("max_pool3d", ("input", "kernel_size", "stride", "padding", "dilation",
                                       "ceil_mode"), "max_pool3d_with_indices"),
    "avg_pool1d": _pool("avg_pool1d", ("input", "kernel_size", "stride", "padding", "ceil_mode",
                                       "count_include_pad")),
    "avg_pool2d": _pool("avg_pool2d", ("input", "kernel_size", "stride", "padding", "ceil_mode",
                                       "count_include_pad", "divisor_override")),
    "avg_pool3d": _pool("avg_pool3d", ("input", "kernel_size", "stride", "padding", "ceil_mode",
                                       "count_include_pad", "divisor_override")),
    "adaptive_avg_pool1d": _conv("adaptive_avg_pool1d", "input", "output_size"),
    "adaptive_avg_pool2d": _conv("adaptive_avg_pool2d", "input", "output_size"),
    "adaptive_avg_pool3d": _conv("adaptive_avg_pool3d", "input", "output_size"),
    "adaptive_max_pool1d": _adaptive_max("adaptive_max_pool1d"),
    "adaptive_max_pool2d": _adaptive_max("adaptive_max_pool2d"),
    "adaptive_max_pool3d": _adaptive_max("adaptive_max_pool3d"),
    "batch_norm": _batch_norm, "instance_norm": _instance_norm,
    "layer_norm": _conv("layer_norm", "input", "normalized_shape", "weight", "bias", "eps"),
    "group_norm": _plain("group_norm", "input", "num_groups", "weight", "bias", "eps"),
    "embedding": _embedding, "pad": _pad, "normalize": _normalize,
    "_recurrent": _recurrent, "_lstm_recurrent": _lstm_recurrent, "_cell": _cell,
    "_lstm_cell": _lstm_cell, "multi_head_attention_forward": _mha,
    "_additive_mask": _additive_mask,
    "one_hot": _plain("one_hot", "tensor", "num_classes"),
    "mse_loss": _loss("mse_loss", ("input", "target")),
    "l1_loss": _loss("l1_loss", ("input", "target")),
    "smooth_l1_loss": _loss("smooth_l1_loss", ("input", "target"), ("beta",)),
    "huber_loss": _loss("huber_loss", ("input", "target"), ("delta",)),
    "soft_margin_loss": _loss("soft_margin_loss", ("input", "target")),
    "binary_cross_entropy": _loss("binary_cross_entropy", ("input", "target", "weight")),
    "binary_cross_entropy_with_logits": _loss("binary_cross_entropy_with_logits",
                                              ("input", "target", "weight", "pos_weight")),
    "cross_entropy": _loss("cross_entropy_loss", ("input", "target", "weight"),
                           ("ignore_index", "label_smoothing")),
    "nll_loss": _loss("nll_loss_nd", ("input", "target", "weight"), ("ignore_index",)),
    "kl_div": _kl_div, "lp_pool1d": _lp_pool(1), "lp_pool2d": _lp_pool(2),
    "lp_pool3d": _lp_pool(3), "multilabel_soft_margin_loss": _multilabel_soft_margin,
    "embedding_bag": _embedding_bag, "fold": _fold, "unfold": _unfold,
    "rms_norm": _conv("rms_norm", "input", "normalized_shape", "weight", "eps"),
    "margin_ranking_loss": _loss("margin_ranking_loss", ("input1", "input2", "target",
                                                          "margin")),
    "hinge_embedding_loss": _loss("hinge_embedding_loss", ("input", "target", "margin")),
    "cosine_embedding_loss": _loss("cosine_embedding_loss", ("input1", "input2", "target",
                                                              "margin")),
    "multi_margin_loss": _loss("multi_margin_loss", ("input", "target", "p", "margin",
                                                      "weight")),
    "multilabel_margin_loss": _loss("multilabel_margin_loss", ("input", "target")),
    "poisson_nll_loss": _loss("poisson_nll_loss", ("input", "target", "log_input", "full",
                                                    "eps")),
    "triplet_margin_loss": _loss("triplet_margin_loss", ("anchor", "positive", "negative",
                                                          "margin", "p", "eps", "swap")),
    "pixel_shuffle": _plain("pixel_shuffle", "input", "upscale_factor"),
    "pixel_unshuffle": _plain("pixel_unshuffle", "input", "downscale_factor"),
    "channel_shuffle": _plain("channel_shuffle", "input", "groups"),
    "cosine_similarity": _plain("cosine_similarity", "x1", "x2", "dim", "eps"),
    "pairwise_distance": _plain("pairwise_distance", "x1", "x2", "p", "eps", "keepdim"),
}
FUNCTIONAL = {k: v for k, v in FUNCTIONAL.items() if v is not None}



# ----------------------------------------------------------------------------- op records
# ember's own op records (what a trace records) with no aten op of the same name

def _rank_of(e, what):
    if isinstance(e.const, (list, tuple)):
        return len(e.const)
    raise NotImplementedError(f"ember.jit.save: {what} with a non-constant size list")


def _list_arg(p, e):
    return constant_str(list(e.const), p.ctx) if isinstance(e.const, tuple) else e.text


def _i_batch_norm(p, a):
    return p.call("native_batch_norm", [e.text for e in a])


def _i_layer_norm(p, a):
    return p.call("layer_norm", [a[0].text, _list_arg(p, a[1])] + [e.text for e in a[2:]])


def _i_max_pool(p, a):
    n = _rank_of(a[1], "max pooling")
    return p.call(f"max_pool{n}d_with_indices", [a[0].text] + [_list_arg(p, e) for e in a[1:5]]
                  + [a[5].text])


def _i_avg_pool(p, a):
    n = _rank_of(a[1], "average pooling")
    return p.call(f"avg_pool{n}d", [a[0].text, _list_arg(p, a[1]), _list_arg(p, a[2])])


def _i_adaptive_max_pool(p, a):
    n = _rank_of(a[1], "adaptive max pooling")
    return p.call(f"adaptive_max_pool{n}d", [a[0].text, _list_arg(p, a[1])])


def _i_cross_entropy(p, a):
    x = a[0].text
    loss = p.call("cross_entropy_loss", [x, a[1].text, "None", a[2].text, a[3].text])
    return f"({loss}, {p.call('logsumexp', [x, '[1]'])})"


def _i_reverse_cumsum(p, a):
    x, d = a[0].text, a[1].text
    return p.call("flip", [p.call("cumsum", [p.call("flip", [x, f"[{d}]"]), d]), f"[{d}]"])


def _i_compare(p, a):
    if a[2].const not in ("eq", "ne", "lt", "le", "gt", "ge"):
        raise NotImplementedError(f"ember.jit.save: _compare_mask({a[2].const!r})")
    return p.call(a[2].const, [a[0].text, a[1].text])


def _rename(name):
    return lambda p, a: p.call(name, [e.text for e in a])


INTERNAL_OPS = {
    "_batch_norm_impl": _i_batch_norm, "_layer_norm_impl": _i_layer_norm,
    "_max_pool_with_indices": _i_max_pool, "_avg_pool": _i_avg_pool,
    "_adaptive_max_pool": _i_adaptive_max_pool, "_cross_entropy": _i_cross_entropy,
    "_sgn": _rename("sgn"), "_i1": _rename("special_i1"),
    "_abs_pow": lambda p, a: p.call("pow", [p.call("abs", [a[0].text]), a[1].text]),
    "_blas_pow": _rename("pow"), "_take_along_dim": _rename("take_along_dim"),
    "_reverse_cumsum": _i_reverse_cumsum, "_compare_mask": _i_compare,
    "polygamma": lambda p, a: p.call("polygamma", [a[1].text, a[0].text]),
}
