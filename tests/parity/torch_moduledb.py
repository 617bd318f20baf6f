"""Parity harness for modules: PyTorch's own module database (``module_db``) against ember.nn.

For every ``ModuleInfo`` of ``torch.testing._internal.common_modules.module_db`` whose class
ember has (``torch.nn.X`` -> ``ember.nn.X``), for float32 and float64 and for training and
eval mode, the first ``MAX_SAMPLES`` ``ModuleInput``s of ``module_inputs_func`` are run:

1. torch's module is built (RNG seeded) from the sample's constructor args and moved to the
   dtype; ember's class is built from the converted args (``torch_opdb.Converter``) and
   moved to the dtype; both get the same ``train()`` / ``eval()`` mode. ``repr(module)``,
   ``state_dict()`` keys and shapes and ``named_buffers()`` keys are compared; torch's
   state_dict is loaded into ember's module and every buffer (non-persistent ones too) is
   copied. Lazy modules run one forward on each side first, to materialize their
   parameters.
2. the converted forward inputs go through both modules; structure, dtype, shape and values
   of the outputs are compared with torch_opdb's tolerances (a float32 value mismatch passes
   when ember matches torch's float64 computation about as well as torch's float32 does),
   then the buffers (running statistics) afterwards. Modules with randomness in effect
   (dropout > 0 while training, fractional max pooling without fixed samples, RReLU while
   training) compare structure, dtype and shape only.
3. float64: ``backward`` with fixed random cotangents on every output that requires grad;
   the ``.grad`` of every input leaf and every parameter is compared.
4. on the first float64 sample of each mode, the same checks again with non-contiguous
   inputs, with ``inplace=True`` (modules that take it; inputs compared afterwards), with
   ``dtype=torch.float64`` at construction (state_dict dtypes compared), with channels_last
   inputs and module (values; layouts too with ``CHECK_LAYOUT``), and second-order
   gradients (grad of ``sum(grad * w)``); on the first float32 eval sample, ember's module
   after ``copy.deepcopy``, a pickle round trip and ``ember.save``/``ember.load``. Every
   ``ModuleErrorInput`` must make ember raise torch's class with a message matching torch's
   regex, at the same stage (constructor or forward).

``check_module(info)`` returns a ``ModuleResult``: ``status`` in pass / fail / missing /
nosamples and the first mismatch (or exception) as ``reason``. torch is the oracle only.
"""
from __future__ import annotations

import copy
import os
import random
import sys
import types
import warnings
from dataclasses import dataclass

import numpy as np

import ember

from . import torch_opdb as H

MAX_SAMPLES = 8                         # per module, dtype and mode
DTYPES = ("float32", "float64")
GRAD_DTYPE = "float64"
MODULE_SEED = 0
# channels_last variant: also require outputs contiguous / channels_last where torch's are
# (off by default: ember's values match, its output layouts differ for some ops, see
# docs/PARITY.md "Module database"); EMBER_MODULEDB_LAYOUT=1 turns it on
CHECK_LAYOUT = os.environ.get("EMBER_MODULEDB_LAYOUT", "") not in ("", "0")
SAMPLE_SEED = H.SAMPLE_SEED

# modules whose output is random while training, unless a sample fixes the randomness
RANDOM_IN_TRAINING = {"RReLU", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
                      "AlphaDropout", "FeatureAlphaDropout"}
RANDOM_ALWAYS = {"FractionalMaxPool2d", "FractionalMaxPool3d"}   # unless _random_samples


_MODULE_DB = None


def _import_module_db():
    global _MODULE_DB
    if _MODULE_DB is None:
        _MODULE_DB = list(H.import_torch_testing("common_modules", "module_db"))
    return _MODULE_DB


def all_modules():
    """Every ModuleInfo (first of each name)."""
    seen, out = set(), []
    for info in _import_module_db():
        if info.name not in seen:
            seen.add(info.name)
            out.append(info)
    return out


def ember_class(info):
    """ember's class of the same name (``ember.nn.X``) or None."""
    H._import_submodules()
    cls = H.resolve_ember("nn." + info.module_cls.__name__)
    return cls if isinstance(cls, type) else None


@dataclass
class ModuleResult:
    id: str
    status: str = "missing"             # pass | fail | missing | nosamples
    reason: str = ""
    samples: int = 0
    grad_samples: int = 0
    skipped_samples: int = 0            # torch itself raised on them

    def as_dict(self):
        return dict(self.__dict__)


class _Fail(Exception):
    pass


def _samples(info, dtype, requires_grad, training, n):
    """The first ``n`` ModuleInputs, generated with every RNG seeded (global random states
    restored afterwards)."""
    import torch
    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.random.default_generator.manual_seed(SAMPLE_SEED)
            random.seed(SAMPLE_SEED)
            np.random.seed(SAMPLE_SEED)
            got = info.module_inputs_func(info, device="cpu", dtype=dtype,
                                          requires_grad=requires_grad, training=training)
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    return [s for s in got if s.forward_input is not None][:n]


def _describe(mi, dtype, training):
    c = mi.constructor_input
    args = ", ".join([H.describe(a) for a in c.args] +
                     [f"{k}={H.describe(v)}" for k, v in c.kwargs.items()])
    f = mi.forward_input
    fwd = ", ".join([H.describe(a) for a in f.args] +
                    [f"{k}={H.describe(v)}" for k, v in f.kwargs.items()])
    mode = "train" if training else "eval"
    return f"{dtype} {mode}{' ' + mi.desc if mi.desc else ''}: ({args}) forward({fwd})"


def _is_random(tm, training):
    """True when torch's module draws random numbers in this mode."""
    for sub in tm.modules():
        name = type(sub).__name__
        if name in RANDOM_ALWAYS and getattr(sub, "_random_samples", None) is None:
            return True
        if training and name in RANDOM_IN_TRAINING and getattr(sub, "p", 1) != 0:
            return True
        if training and isinstance(getattr(sub, "dropout", None), float) and sub.dropout > 0:
            return True
    return False


class Converter(H.Converter):
    """torch_opdb's Converter, plus the torch modules and builtins that module constructors
    take: a TransformerEncoderLayer (for TransformerEncoder; rebuilt from its settings, its
    weights are loaded afterwards with the owner's state_dict) and ``torch._C._nn``
    functions (``F.gelu`` is one)."""

    def __call__(self, x):
        torch = sys.modules["torch"]
        if isinstance(x, types.BuiltinFunctionType) and \
                (getattr(x, "__module__", "") or "").startswith("torch._C._nn"):
            fn = H.resolve_ember("nn.functional." + x.__name__)
            if fn is None:
                raise H.Unconvertible(f"ember has no nn.functional.{x.__name__}")
            return fn
        if isinstance(x, torch.nn.TransformerEncoderLayer):
            return self._encoder_layer(x)
        return super().__call__(x)

    def _encoder_layer(self, m):
        attn, lin = m.self_attn, m.linear1
        act = m.activation
        if isinstance(act, types.FunctionType) and getattr(act, "__module__", "") == \
                "torch.nn.functional":
            act = act.__name__                         # F.relu / F.gelu: by name
        layer = ember.nn.TransformerEncoderLayer(
            attn.embed_dim, attn.num_heads, lin.out_features, m.dropout.p, self(act),
            m.norm1.eps, attn.batch_first, m.norm_first, lin.bias is not None)
        return layer.to(getattr(ember, H._dtype_name(lin.weight.dtype)))


def _shapes(sd):
    return {k: tuple(v.shape) for k, v in sd.items()}


def _compare_structure(tm, em):
    """repr, state_dict keys/shapes, named_buffers keys."""
    if repr(em) != repr(tm):
        raise _Fail(f"repr: {repr(em)!r} != expected {repr(tm)!r}")
    t_sd, e_sd = _shapes(tm.state_dict()), _shapes(em.state_dict())
    t_dt = {k: H._dtype_name(v.dtype) for k, v in tm.state_dict().items()}
    e_dt = {k: H._dtype_name(v.dtype) for k, v in em.state_dict().items()}
    if list(e_sd) != list(t_sd):
        raise _Fail(f"state_dict keys {list(e_sd)} != expected {list(t_sd)}")
    for k, shape in t_sd.items():
        if e_sd[k] != shape:
            raise _Fail(f"state_dict[{k!r}]: shape {e_sd[k]} != expected {shape}")
        if e_dt[k] != t_dt[k]:
            raise _Fail(f"state_dict[{k!r}]: dtype {e_dt[k]} != expected {t_dt[k]}")
    t_b = [k for k, _ in tm.named_buffers()]
    e_b = [k for k, _ in em.named_buffers()]
    if e_b != t_b:
        raise _Fail(f"named_buffers keys {e_b} != expected {t_b}")


def _copy_state(tm, em):
    """torch's parameters and buffers -> ember's module (values only)."""
    conv = H.Converter()
    em.load_state_dict({k: conv(v.detach()) for k, v in tm.state_dict().items()})
    e_buffers = dict(em.named_buffers())
    with ember.no_grad():
        for k, b in tm.named_buffers():
            if k in e_buffers and b is not None and e_buffers[k] is not None:
                e_buffers[k].copy_(conv(b.detach()))


def _build(info, ecls, mi, dtype, training):
    """(torch module, ember module) built and moved to ``dtype``, or raise."""
    import torch
    c = mi.constructor_input
    torch.manual_seed(MODULE_SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = info.module_cls(*c.args, **c.kwargs).to(getattr(torch, dtype))
    tm.train(training)
    conv = Converter()
    args, kwargs = conv(tuple(c.args)), conv(dict(c.kwargs))
    ember.manual_seed(MODULE_SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        em = ecls(*args, **kwargs).to(getattr(ember, dtype))
    em.train(training)
    return tm, em


def _params(m):
    return list(m.named_parameters())


def _check_sample(info, ecls, mi, dtype, training, tol, result, transform=None):
    """One ModuleInput; ``transform(tm, em)`` (if given) replaces both modules after the
    state is loaded (ember's by a deepcopy or a pickle round trip, both converted to a
    memory format...). Raises _Fail on the first difference."""
    import torch
    where = _describe(mi, dtype, training)
    try:
        tm, em = _build(info, ecls, mi, dtype, training)
    except _Fail:
        raise
    except Exception as e:
        if isinstance(e, H.Unconvertible):
            raise _Fail(H._exc_reason(e, "harness") + f" [{where}]")
        try:                                   # torch refusing the constructor: skip
            torch.manual_seed(MODULE_SEED)
            info.module_cls(*mi.constructor_input.args, **mi.constructor_input.kwargs)
        except Exception:
            result.skipped_samples += 1
            return
        raise _Fail(H._exc_reason(e, "ember constructor") + f" [{where}]")
    f = mi.forward_input
    random_values = _is_random(tm, training)
    grad = dtype == GRAD_DTYPE and not random_values
    # lazy modules materialize on a first forward (on detached copies of the inputs)
    if info.is_lazy:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tm(*H._detached(tuple(f.args)), **H._detached(dict(f.kwargs)))
        except Exception:
            result.skipped_samples += 1
            return
        try:
            c0 = Converter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                em(*c0(H._detached(tuple(f.args))), **c0(H._detached(dict(f.kwargs))))
        except Exception as e:
            raise _Fail(H._exc_reason(e, "ember (lazy first forward)") + f" [{where}]")
    try:
        _compare_structure(tm, em)
        _copy_state(tm, em)
        if transform is not None:
            tm, em = transform(tm, em)
    except _Fail as e:
        raise _Fail(f"{e} [{where}]")
    except Exception as e:
        raise _Fail(H._exc_reason(e, "ember (loading torch's state_dict)") + f" [{where}]")
    for t in H._flat_tensors((f.args, f.kwargs), []):    # a sample may run more than once
        if (t.is_leaf or t.retains_grad) and t.grad is not None:
            t.grad = None
    conv = Converter(grad=grad)
    try:
        e_args, e_kwargs = conv(tuple(f.args)), conv(dict(f.kwargs))
    except Exception as e:
        raise _Fail(H._exc_reason(e, "harness") + f" [{where}]")
    if grad:                       # inputs computed in the sample (x.log()...) keep a .grad
        for t in H._flat_tensors((f.args, f.kwargs), []):
            if t.requires_grad and not t.is_leaf:
                t.retain_grad()
    t_state = {k: v.detach().clone() for k, v in tm.state_dict().items()}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if random_values:
                torch.manual_seed(MODULE_SEED)
            t_out = tm(*f.args, **f.kwargs)
    except Exception:
        result.skipped_samples += 1
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e_out = em(*e_args, **e_kwargs)
    except Exception as e:
        raise _Fail(H._exc_reason(e, "ember forward") + f" [{where}]")
    result.samples += 1
    try:
        _check_output(info, tm, mi, e_out, t_out, t_state, tol, random_values)
        if not random_values:
            t_sd = tm.state_dict()
            for k, v in em.state_dict().items():
                H.compare(v, t_sd[k], tol, f"state_dict[{k!r}] after forward")
            for i, (t, e) in enumerate(list(conv.memo.values())):   # inplace=True writes
                H.compare(e, t, tol, f"input tensor {i} after forward")
        if getattr(mi, "check_layout", False) and CHECK_LAYOUT:
            _compare_layout(e_out, t_out)
    except H.Mismatch as m:
        raise _Fail(f"{m} [{where}]")
    if grad:
        _check_grads(tm, em, f, conv, t_out, e_out, tol, where, result)


def _compare_layout(e_out, t_out):
    """Output tensors contiguous (row-major / channels_last) where torch's are."""
    import torch
    t_all = H._flat_outputs(t_out, [])
    e_all = H._flat_outputs(e_out, [])
    for i, (t, e) in enumerate(zip(t_all, e_all)):
        if not isinstance(t, torch.Tensor) or t.dim() not in (4, 5):
            continue
        t_mf = torch.channels_last if t.dim() == 4 else torch.channels_last_3d
        e_mf = ember.channels_last if t.dim() == 4 else ember.channels_last_3d
        for label, tv, ev in [("contiguous", t.is_contiguous(), e.is_contiguous()),
                              (str(t_mf).split(".")[-1], t.is_contiguous(memory_format=t_mf),
                               e.is_contiguous(memory_format=e_mf))]:
            if tv != ev:
                raise H.Mismatch(f"output {i}: is_contiguous({label}) {ev} != expected {tv} "
                                 f"(strides {tuple(e.stride())}, torch's {tuple(t.stride())})")


def _check_output(info, tm, mi, e_out, t_out, t_state, tol, random_values):
    """compare(); for float32 a value mismatch passes when ember is as accurate as torch
    with respect to torch's own float64 computation (same weights, upcast inputs)."""
    try:
        H.compare(e_out, t_out, tol, "output", values=not random_values)
    except H.ValueMismatch:
        if not H._has_low_float(t_out):
            raise
        ref = _float64_reference(tm, mi, t_state)
        if ref is None:
            raise
        try:
            H.compare(e_out, H._downcast_like(ref, t_out), tol, "output")
            return
        except H.Mismatch:
            pass
        if not H._as_accurate(e_out, t_out, ref, tol):
            raise


def _float64_reference(tm, mi, t_state):
    import torch
    try:
        hi = copy.deepcopy(tm).double()
        hi.load_state_dict({k: v.double() if v.is_floating_point() else v
                            for k, v in t_state.items()})
        f = mi.forward_input
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return hi(*H._upcast(tuple(f.args)), **H._upcast(dict(f.kwargs)))
    except Exception:
        return None


def _check_grads(tm, em, f, conv, t_out, e_out, tol, where, result):
    import torch
    t_outs = [o for o in H._flat_outputs(t_out, []) if isinstance(o, torch.Tensor)]
    e_outs = H._flat_outputs(e_out, [])
    e_outs = [e for e, t in zip(e_outs, H._flat_outputs(t_out, [])) if isinstance(t, torch.Tensor)]
    rng = np.random.default_rng(1234)
    cots = [H._cotangent(o, rng) for o in t_outs]
    pick = [i for i, o in enumerate(t_outs) if o.requires_grad]
    t_leaves = [t for t in H._flat_tensors((f.args, f.kwargs), []) if t.requires_grad]
    if not pick:
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.autograd.backward([t_outs[i] for i in pick], [cots[i][1] for i in pick])
    except Exception:
        return
    result.grad_samples += 1
    gtol = (lambda n: tol(n, H.GRAD_TOL_SCALE))
    try:
        e_sel, e_cots = [], []
        for i in pick:
            eo = e_outs[i] if i < len(e_outs) else None
            if not isinstance(eo, ember.Tensor) or not eo.requires_grad:
                raise H.Mismatch(f"grad: output {i} does not require grad in ember")
            e_sel.append(eo)
            e_cots.append(ember.from_numpy(cots[i][0].copy()).to(
                getattr(ember, H._dtype_name(t_outs[i].dtype))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ember.autograd.backward(e_sel, e_cots)
        pairs = [(f"grad of input {i}", conv.memo[id(t)][1].grad, t.grad)
                 for i, t in enumerate(t_leaves)]
        e_params = dict(em.named_parameters())
        pairs += [(f"grad of parameter {k!r}", e_params[k].grad if k in e_params else None,
                   p.grad) for k, p in tm.named_parameters()]
        for label, eg, tg in pairs:
            if tg is None:
                if eg is not None and np.any(H.ember_to_numpy(eg) != 0):
                    raise H.Mismatch(f"{label}: torch's is None, ember's is nonzero")
                continue
            if eg is None:
                if np.any(H.torch_to_numpy(tg) != 0):
                    raise H.Mismatch(f"{label}: ember's is None, expected nonzero")
                continue
            H.compare(eg, tg, gtol, label)
    except H.Mismatch as m:
        raise _Fail(f"{m} [{where}]")
    except Exception as e:
        raise _Fail(H._exc_reason(e, "ember backward") + f" [{where}]")


# ------------------------------------------------------------ further checks
# On the first float64 sample of each mode (float32 for the copies), as torch's own module
# tests do: non-contiguous inputs, inplace=True, dtype= at construction, deepcopy and
# pickle round trips, second-order gradients; and every error input of the ModuleInfo.

def _noncontiguous(x):
    """Tensors of ``x`` -> non-contiguous views with the same values (and requires_grad)."""
    def strided(t):
        if t.dim() == 0 or t.numel() < 2:
            return t
        import torch
        v = torch.repeat_interleave(t.detach(), 2, dim=-1)[..., ::2]
        return v.requires_grad_(t.requires_grad)
    return H.map_tensors(strided, x)


def _fresh(x):
    """Tensors of ``x`` -> new leaves with the same values and requires_grad (a sample's
    inputs computed from others (``x.log()``) can't be backpropagated through twice)."""
    return H.map_tensors(lambda t: t.detach().clone().requires_grad_(t.requires_grad), x)


def _variant(mi, desc, args=None, kwargs=None, ctor_kwargs=None):
    """A ModuleInput-like copy of ``mi`` with other forward args (default: fresh copies of
    its own) / constructor kwargs."""
    f, c = mi.forward_input, mi.constructor_input
    args = _fresh(tuple(f.args)) if args is None else args
    kwargs = _fresh(dict(f.kwargs)) if kwargs is None else kwargs
    ctor = types.SimpleNamespace(args=c.args, kwargs={**c.kwargs, **(ctor_kwargs or {})})
    fwd = types.SimpleNamespace(args=args, kwargs=kwargs)
    return types.SimpleNamespace(constructor_input=ctor, forward_input=fwd,
                                 desc=(mi.desc + " " if mi.desc else "") + desc)


def _accepts(info, name):
    import inspect
    try:
        return name in inspect.signature(info.module_cls).parameters
    except (TypeError, ValueError):
        return False


def _pickled(em):
    import pickle
    return pickle.loads(pickle.dumps(em))


def _saved(em):
    """ember.save / ember.load of the whole module."""
    import io
    buf = io.BytesIO()
    ember.save(em, buf)
    buf.seek(0)
    return ember.load(buf, weights_only=False)


def _channels_last(x):
    """4-D / 5-D tensors of ``x`` -> channels_last(_3d) copies (leaves, same requires_grad)."""
    def relaid(t):
        import torch
        mf = {4: torch.channels_last, 5: torch.channels_last_3d}.get(t.dim())
        if mf is None:
            return t
        return t.detach().contiguous(memory_format=mf).requires_grad_(t.requires_grad)
    return H.map_tensors(relaid, x)


def _to_channels_last(tm, em):
    import torch
    ndim = max((p.dim() for p in tm.parameters()), default=0)
    if ndim in (4, 5):
        t_mf = torch.channels_last if ndim == 4 else torch.channels_last_3d
        e_mf = ember.channels_last if ndim == 4 else ember.channels_last_3d
        tm, em = tm.to(memory_format=t_mf), em.to(memory_format=e_mf)
    return tm, em


def _check_variants(info, ecls, mi, dtype, training, tol, res):
    f, c = mi.forward_input, mi.constructor_input
    nc = _variant(mi, "(non-contiguous inputs)", _noncontiguous(tuple(f.args)),
                  _noncontiguous(dict(f.kwargs)))
    _check_sample(info, ecls, nc, dtype, training, tol, res)
    if _accepts(info, "inplace") and "inplace" not in c.kwargs:
        ip = _variant(mi, "(inplace=True)", H._detached(tuple(f.args)),
                      H._detached(dict(f.kwargs)), {"inplace": True})
        _check_sample(info, ecls, ip, dtype, training, tol, res)
    if _accepts(info, "dtype") and "dtype" not in c.kwargs:
        import torch
        fk = _variant(mi, "(dtype=torch.float64)", ctor_kwargs={"dtype": torch.float64})
        _check_sample(info, ecls, fk, dtype, training, tol, res)
    if any(isinstance(t, sys.modules["torch"].Tensor) and t.dim() in (4, 5)
           for t in H._flat_tensors((f.args, f.kwargs), [])):
        cl = _variant(mi, "(channels_last)", _channels_last(tuple(f.args)),
                      _channels_last(dict(f.kwargs)))
        cl.check_layout = True
        _check_sample(info, ecls, cl, dtype, training, tol, res, transform=_to_channels_last)
    if dtype == GRAD_DTYPE and not info.is_lazy:
        _check_hooks(info, ecls, mi, dtype, training, tol, res)
    if dtype == GRAD_DTYPE and info.supports_gradgrad:
        _check_gradgrad(info, ecls, mi, dtype, training, tol, res)


def _check_hooks(info, ecls, mi, dtype, training, tol, res):
    """A forward hook and a full backward hook on both modules: same calls, same outputs,
    grad_input and grad_output."""
    rec = {"t": [], "e": []}

    def hook_both(tm, em):
        for key, m in (("t", tm), ("e", em)):
            m.register_forward_hook(lambda mod, args, out, k=key: rec[k].append(("forward",
                                                                                 out)))
            m.register_full_backward_hook(
                lambda mod, gi, go, k=key: rec[k].append(("backward", tuple(gi), tuple(go))))
        return tm, em
    v = _variant(mi, "(forward and full backward hooks)")
    _check_sample(info, ecls, v, dtype, training, tol, res, transform=hook_both)
    where = _describe(v, dtype, training)
    gtol = (lambda n: tol(n, H.GRAD_TOL_SCALE))
    calls = lambda r: [c[0] for c in r]                       # noqa: E731
    try:
        if calls(rec["e"]) != calls(rec["t"]):
            raise H.Mismatch(f"hook calls {calls(rec['e'])} != expected {calls(rec['t'])}")
        for e, t in zip(rec["e"], rec["t"]):
            if e[0] == "forward":
                H.compare(e[1], t[1], tol, "forward hook's output",
                          values=not _is_random_module(info, training))
            else:
                H.compare(e[1], t[1], gtol, "backward hook's grad_input")
                H.compare(e[2], t[2], gtol, "backward hook's grad_output")
    except H.Mismatch as m:
        raise _Fail(f"{m} [{where}]")


def _is_random_module(info, training):
    return info.module_cls.__name__ in RANDOM_ALWAYS or (
        training and info.module_cls.__name__ in RANDOM_IN_TRAINING)


def _check_gradgrad(info, ecls, mi, dtype, training, tol, res):
    """Second-order: d/d(inputs, params) of sum(grad . w) for fixed random w."""
    import torch
    where = _describe(mi, dtype, training) + " (gradgrad)"
    try:
        tm, em = _build(info, ecls, mi, dtype, training)
        if info.is_lazy or _is_random(tm, training):
            return
        _copy_state(tm, em)
    except Exception:
        return
    f = _variant(mi, "").forward_input
    conv = Converter(grad=True)
    t_in = [t for t in H._flat_tensors((f.args, f.kwargs), []) if t.requires_grad]
    e_args, e_kwargs = conv(tuple(f.args)), conv(dict(f.kwargs))
    e_in = [conv.memo[id(t)][1] for t in t_in]
    t_wrt = t_in + [p for _, p in tm.named_parameters()]
    e_params = dict(em.named_parameters())
    e_wrt = e_in + [e_params.get(k) for k, _ in tm.named_parameters()]
    if any(e is None for e in e_wrt) or not t_wrt:
        return
    rng = np.random.default_rng(4321)

    def run(lib, mod, wrt, args, kwargs, cots=None, ws=None):
        outs = [o for o in H._flat_outputs(mod(*args, **kwargs), [])
                if isinstance(o, lib.Tensor) and o.requires_grad]
        if cots is None:
            cots = [H._cotangent(o, rng) for o in outs]
        conv_c = [c[1] if lib is torch else ember.from_numpy(c[0].copy()).to(o.dtype)
                  for o, c in zip(outs, cots)]
        g1 = lib.autograd.grad(outs, wrt, conv_c, create_graph=True, allow_unused=True)
        if ws is None:
            ws = [None if g is None else rng.standard_normal(tuple(g.shape)) for g in g1]
        terms = [(g * (torch.from_numpy(w.copy()) if lib is torch else
                       ember.from_numpy(w.copy())).to(g.dtype)).sum()
                 for g, w in zip(g1, ws) if g is not None and g.requires_grad]
        if not terms:
            return g1, None, cots, ws
        g2 = lib.autograd.grad(sum(terms), wrt, allow_unused=True)
        return g1, g2, cots, ws
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t1, t2, cots, ws = run(torch, tm, t_wrt, f.args, f.kwargs)
    except Exception:
        return
    if t2 is None:
        return
    names = [f"input {i}" for i in range(len(t_in))] + \
        [f"parameter {k!r}" for k, _ in tm.named_parameters()]
    gtol = (lambda n: tol(n, H.GRAD_TOL_SCALE))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e1, e2, _, _ = run(ember, em, e_wrt, e_args, e_kwargs, cots, ws)
        if e2 is None:          # ember's first-order grads are constants (max pooling,
            e2 = [None] * len(t2)        # hardtanh, pads...): torch's second order is 0
        for label, eg, tg in [(f"grad of {n}", a, b) for n, a, b in zip(names, e1, t1)] + \
                [(f"second-order grad of {n}", a, b) for n, a, b in zip(names, e2, t2)]:
            if tg is None or eg is None:
                a = tg if eg is None else eg
                if a is not None and np.any((H.torch_to_numpy(a) if eg is None
                                             else H.ember_to_numpy(a)) != 0):
                    raise H.Mismatch(f"{label}: one side None, the other nonzero")
                continue
            H.compare(eg, tg, gtol, label)
    except H.Mismatch as m:
        raise _Fail(f"{m} [{where}]")
    except Exception as e:
        raise _Fail(H._exc_reason(e, "ember double backward") + f" [{where}]")
    res.grad_samples += 1


def _check_errors(info, ecls):
    """Every ModuleErrorInput: ember raises torch's class, message matching torch's
    regex, at the same stage (construction or forward)."""
    import re
    import torch
    if info.module_error_inputs_func is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        errs = info.module_error_inputs_func(info, device="cpu", dtype=torch.float32,
                                             requires_grad=False, training=True)
    for ei in errs:
        mi = ei.module_error_input
        c, f = mi.constructor_input, mi.forward_input
        expect_ctor = "CONSTRUCTION" in str(ei.error_on)
        ctor = ", ".join([H.describe(a) for a in c.args] +
                         [f"{k}={H.describe(v)}" for k, v in c.kwargs.items()])
        where = f"error input ({ctor})"
        if f is not None:
            where += " forward(" + ", ".join([H.describe(a) for a in f.args] + [
                f"{k}={H.describe(v)}" for k, v in f.kwargs.items()]) + ")"
        want = f"{ei.error_type.__name__} matching {ei.error_regex!r}"
        conv = Converter()
        stage = "constructor"
        try:
            args, kwargs = conv(tuple(c.args)), conv(dict(c.kwargs))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                em = ecls(*args, **kwargs)
                if expect_ctor:
                    raise _Fail(f"{where}: ember's constructor raised nothing, expected {want}")
                stage = "forward"
                em(*conv(tuple(f.args)), **conv(dict(f.kwargs)))
        except _Fail:
            raise
        except H.Unconvertible as e:
            raise _Fail(H._exc_reason(e, "harness") + f" [{where}]")
        except Exception as e:
            if (stage == "constructor") != expect_ctor:
                raise _Fail(f"{where}: ember's {stage} raised {type(e).__name__}: {e}; "
                            f"expected the {'constructor' if expect_ctor else 'forward'} "
                            f"to raise {want}")
            if not isinstance(e, ei.error_type) or not re.search(ei.error_regex, str(e)):
                msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
                raise _Fail(f"{where}: ember raised {type(e).__name__}: {msg}; expected "
                            f"{want}")
            continue
        raise _Fail(f"{where}: ember's forward raised nothing, expected {want}")


def check_module(info, max_samples=None, dtypes=None, extras=True, variant_modes=(True, False)):
    """Run one ModuleInfo against ember; returns a ModuleResult. ``extras``: the further
    checks (variants of the first sample in the ``variant_modes`` training modes, error
    inputs)."""
    import torch
    max_samples = MAX_SAMPLES if max_samples is None else max_samples
    dtypes = DTYPES if dtypes is None else dtypes
    res = ModuleResult(info.name)
    ecls = ember_class(info)
    if ecls is None:
        res.reason = f"ember lacks ember.nn.{info.module_cls.__name__}"
        return res
    tol = H._tolerances(info)
    supported = {H._dtype_name(d) for d in info.dtypes}
    for dt in dtypes:
        if dt not in supported:
            continue
        for training in (True, False):
            try:
                samples = _samples(info, getattr(torch, dt), dt == GRAD_DTYPE, training,
                                   max_samples)
            except Exception:
                continue
            for i, mi in enumerate(samples):
                try:
                    _check_sample(info, ecls, mi, dt, training, tol, res)
                    if extras and i == 0 and dt == GRAD_DTYPE and training in variant_modes:
                        _check_variants(info, ecls, mi, dt, training, tol, res)
                    if extras and i == 0 and dt != GRAD_DTYPE and not training:
                        for copy_fn in (copy.deepcopy, _pickled, _saved):
                            _check_sample(info, ecls, _variant(mi, f"({copy_fn.__name__})"),
                                          dt, training, tol, res,
                                          transform=lambda tm, em: (tm, copy_fn(em)))
                except _Fail as e:
                    res.status, res.reason = "fail", str(e)
                    return res
    if extras:
        try:
            _check_errors(info, ecls)
        except _Fail as e:
            res.status, res.reason = "fail", str(e)
            return res
    if res.samples == 0:
        res.status, res.reason = "nosamples", "no sample ran"
    else:
        res.status = "pass"
    return res


def check_modules(infos=None, progress=None, **kw):
    out = []
    for info in all_modules() if infos is None else infos:
        r = check_module(info, **kw)
        out.append(r)
        if progress:
            progress(r)
    return out


if __name__ == "__main__":           # python -m tests.parity.torch_moduledb [names...]
    import time
    names = set(sys.argv[1:])
    infos = [i for i in all_modules() if not names or i.name in names
             or i.name[3:] in names]
    counts = {}

    def show(r):
        counts[r.status] = counts.get(r.status, 0) + 1
        print(f"{r.id:28s} {r.status:9s} {r.samples:3d} {r.grad_samples:3d}  {r.reason[:400]}",
              flush=True)
    t0 = time.time()
    check_modules(infos, show)
    print(counts, f"{time.time() - t0:.1f}s")
