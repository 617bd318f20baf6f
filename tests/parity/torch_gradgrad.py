"""Second-derivative parity harness: torch's op database and common nn modules, twice
differentiated, against ember.

Ops: every OpInfo of torch's ``op_db`` that ember resolves (``torch_opdb.resolve``), whose
``supports_gradgrad`` is set and that has float64 samples. For the first ``MAX_SAMPLES``
float64 samples (``requires_grad=True``), on both sides:

    out  = op(sample)                                  (gradcheck_wrapper, output_process_fn_grad)
    L    = sum(out_k * c_k)                            fixed random cotangents c_k
    g    = autograd.grad(L, leaves, create_graph=True)
    h    = autograd.grad(sum(g_i * v_i), leaves, allow_unused=True)   fixed random v_i

The first-order ``g`` and the second-order ``h`` are compared (torch_opdb's tolerances x
``GRAD_TOL_SCALE``). Missing gradients follow torch's ``materialize_grads``: None equals
zeros. The sum takes the ``g_i`` that carry a graph in torch; where ember's do not (its
``autograd.grad`` raises "does not require grad" while torch's gives zeros), that is a
failure. Samples torch cannot differentiate twice are skipped.

Modules: ``MODULES`` lists common nn modules with an input (and a target for losses); each
runs two checks, float64, parameters copied from torch's module:

* ``wgan_gp``: the gradient penalty ``((||d out / d x||_2 - 1)^2).mean()`` of WGAN-GP,
  differentiated w.r.t. the input and every parameter;
* ``hvp``: a Hessian-vector product ``grad(sum(g_i * v_i))`` over the input and parameters.

``check_gradgrad(op)`` / ``check_module(entry)`` return a ``GradGradResult`` (status pass /
fail / nosamples, reason). torch is the oracle only; ember never sees a torch object.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

import ember

from . import torch_opdb as H

MAX_SAMPLES = 3                 # float64 samples per op
OP_TIME_BUDGET = 2.0            # seconds per op; later samples are dropped after it
MAX_NUMEL = 100_000             # larger samples are skipped (seconds each, nothing new)
GRAD_TOL_SCALE = H.GRAD_TOL_SCALE


@dataclass
class GradGradResult:
    id: str
    status: str = "nosamples"   # pass | fail | nosamples
    reason: str = ""
    samples: int = 0


class _Skip(Exception):
    """torch itself cannot run or twice-differentiate this sample."""


# ------------------------------------------------------------------------------ ops

def gradgrad_ops():
    """The OpInfos ember resolves that torch twice-differentiates in float64."""
    import torch
    out = []
    for op in H.implemented_ops():
        if not (op.supports_autograd and op.supports_gradgrad) or op.name in H.NONDETERMINISTIC:
            continue
        try:
            if torch.float64 not in op.supported_backward_dtypes("cpu"):
                continue
        except Exception:
            continue
        out.append(op)
    return out


def _lib_tensor(lib, arr, like):
    """``arr`` (NumPy) as a tensor of ``lib`` with the dtype of ``like``."""
    if lib is ember:
        return ember.from_numpy(arr.copy()).to(like.dtype)
    return lib.from_numpy(arr.copy()).to(like.dtype)


def _weighted_sum(lib, tensors, weights):
    """sum_k (t_k * w_k).sum() (weights NumPy arrays or tensors), complex tensors through
    their real view."""
    total = None
    for t, w in zip(tensors, weights):
        if t.is_complex():
            t = lib.view_as_real(t)
        term = (t * (_lib_tensor(lib, w, t) if isinstance(w, np.ndarray) else w)).sum()
        total = term if total is None else total + term
    return total


def _real_shape(t):
    return tuple(t.shape) + ((2,) if t.is_complex() else ())


def _second_order(lib, outs, leaves, cots, vs, graph_of, cot_leaves=False):
    """(g, h): the first-order gradients of sum(out * cot) w.r.t. ``leaves`` (with a graph)
    and the gradients of sum(g_i * v_i) over the ``graph_of`` indices (None: h is not
    taken) w.r.t. ``leaves`` and, with ``cot_leaves``, the cotangents too (as torch's
    gradgradcheck, which differentiates w.r.t. the grad_outputs as well)."""
    if cot_leaves:
        cots = [_lib_tensor(lib, c, o if not o.is_complex() else lib.view_as_real(o))
                .requires_grad_(True) for c, o in zip(cots, outs)]
    L = _weighted_sum(lib, outs, cots)
    g = lib.autograd.grad(L, leaves, create_graph=True, allow_unused=True)
    if graph_of is None:
        return g, None
    terms = [g[i] for i in graph_of if g[i] is not None]
    if not terms:
        raise RuntimeError("no first-order gradient to differentiate (all None)")
    s = _weighted_sum(lib, terms, [vs[i] for i in graph_of if g[i] is not None])
    wrt = list(leaves) + (list(cots) if cot_leaves else [])
    return g, lib.autograd.grad(s, wrt, allow_unused=True)


def _compare_grads(eg, tg, tol, what):
    """Compare per-leaf gradient lists, None counting as zeros on either side."""
    for i, (e, t) in enumerate(zip(eg, tg)):
        where = f"{what} of input {i}"
        if t is None or e is None:
            other = t if e is None else e
            if other is not None:
                arr = H.torch_to_numpy(other) if e is None else H.ember_to_numpy(other)
                rtol, atol = tol(H._dtype_name(other.dtype))
                if not np.all(np.abs(arr) <= atol):
                    raise H.Mismatch(f"{where}: {'ember' if e is None else 'torch'} gives None, "
                                     f"the other a nonzero gradient (max abs "
                                     f"{np.abs(arr).max():.3g})")
            continue
        H.compare(e, t, tol, where)


def _check_sample(op, target, sample, tol):
    """Two passes: constant cotangents (ember's first-order gradients must carry a graph
    where torch's do), then cotangents that require grad (gradgradcheck's way: linear ops
    get a second order too). Raise H.Mismatch on a difference, _Skip when torch cannot do
    the sample."""
    import torch
    tensors = H._flat_tensors((sample.input, sample.args, sample.kwargs), [])
    if any(t.numel() > MAX_NUMEL for t in tensors):
        raise _Skip("large sample")
    t_leaves = [t for t in tensors if t.requires_grad]
    if not t_leaves:
        raise _Skip("no input requires grad")
    conv = H.Converter(grad=True, keep_storage=op.name in H.STORAGE_OPS)
    try:
        e_in, e_args, e_kwargs = conv(sample.input), conv(tuple(sample.args)), \
            conv(dict(sample.kwargs))
    except H.Unconvertible as e:
        raise _Skip(str(e))
    default_wrapper = type(op).__dataclass_fields__["gradcheck_wrapper"].default \
        if hasattr(type(op), "__dataclass_fields__") else None
    wrapper, proc = op.gradcheck_wrapper, sample.output_process_fn_grad

    def t_call():
        out = op.op(sample.input, *sample.args, **sample.kwargs) if wrapper is default_wrapper \
            else wrapper(op.op, sample.input, *sample.args, **sample.kwargs)
        return proc(out) if proc is not None else out

    def e_call():
        out = target.fn(e_in, *e_args, **e_kwargs) if wrapper is default_wrapper \
            else H.transplant(wrapper)(target.fn, e_in, *e_args, **e_kwargs)
        return H.transplant(proc)(out) if proc is not None else out

    rng = np.random.default_rng(1234)
    e_leaves = [conv.memo[id(t)][1] for t in t_leaves]
    gtol = (lambda n: tol(n, GRAD_TOL_SCALE))
    ran = False
    for cot_leaves in (False, True):
        try:
            t_all = H._flat_outputs(t_call(), [])
            keep = [k for k, o in enumerate(t_all)
                    if isinstance(o, torch.Tensor) and o.requires_grad]
            t_outs = [t_all[k] for k in keep]
            if not t_outs:
                raise _Skip("no differentiable output")
            if not cot_leaves:
                cots = [rng.standard_normal(_real_shape(o)) for o in t_outs]
                vs = [rng.standard_normal(tuple(t.shape)) for t in t_leaves]
            tg, _ = _second_order(torch, t_outs, t_leaves, cots, vs, None, cot_leaves)
            graph_of = [i for i, g in enumerate(tg) if g is not None and g.requires_grad]
            if not graph_of:
                continue
            tg, th = _second_order(torch, t_outs, t_leaves, cots, vs, graph_of, cot_leaves)
        except _Skip:
            raise
        except Exception as e:
            if ran:
                return
            raise _Skip(f"torch: {type(e).__name__}: {e}")
        ran = True
        e_all = H._flat_outputs(e_call(), [])
        if len(e_all) != len(t_all):
            raise H.Mismatch(f"{len(e_all)} outputs != expected {len(t_all)}")
        e_outs = [e_all[k] for k in keep]
        for k, o in zip(keep, e_outs):
            if not isinstance(o, ember.Tensor) or not o.requires_grad:
                raise H.Mismatch(f"output {k} does not require grad in ember")
        mode = "" if not cot_leaves else " (cotangents require grad)"
        eg, eh = _second_order(ember, e_outs, e_leaves, cots, vs, graph_of, cot_leaves)
        _compare_grads(eg, tg, gtol, "first-order grad" + mode)
        _compare_grads(eh, th, gtol, "second-order grad" + mode)
    if not ran:
        raise _Skip("torch's first-order gradients have no graph")


def check_gradgrad(op, max_samples=MAX_SAMPLES, time_budget=OP_TIME_BUDGET):
    """Run the second-order check of one OpInfo; returns a GradGradResult."""
    import torch
    res = GradGradResult(H.op_id(op))
    target = H.resolve(op)
    if target is None:
        res.reason = "ember lacks the op"
        return res
    tol = H._tolerances(op)
    t0 = time.monotonic()
    try:
        samples = H._samples(op, torch.float64, True, max_samples)
    except Exception as e:
        res.reason = f"torch's samples raised {type(e).__name__}"
        return res
    for sample in samples:
        if time.monotonic() - t0 > time_budget:
            break
        desc = H.describe_sample(sample)
        if H._random_sample(op, sample):        # dropout in effect
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _check_sample(op, target, sample, tol)
        except _Skip:
            continue
        except H.Mismatch as m:
            res.status, res.reason = "fail", f"{m} [{desc}]"
            res.samples += 1
            return res
        except Exception as e:
            res.status, res.reason = "fail", H._exc_reason(e, "ember") + f" [{desc}]"
            res.samples += 1
            return res
        res.samples += 1
    if res.samples:
        res.status = "pass"
    else:
        res.reason = "no sample torch differentiates twice"
    return res


# -------------------------------------------------------------------------- modules

@dataclass
class ModuleEntry:
    """A module built the same way in torch and ember (``make(lib)``), its input shape,
    and, for losses, a target (``target(lib, rng)``) passed after the input."""
    name: str
    make: object
    shape: tuple
    target: object = None
    train: bool = True
    call: object = None         # call(module, x, lib) -> outputs; default module(x[, target])


def _idx(shape, high):
    """A fixed int64 target (NumPy) of class indices."""
    return np.random.default_rng(7).integers(0, high, size=shape)


def _prob(shape):
    return np.random.default_rng(8).uniform(0.05, 0.95, size=shape)


def _seq(lib, m, x):
    out = m(x)
    return out[0] if isinstance(out, tuple) else out


def _ctc(lib, m, x):
    """CTC over log_softmax(x): x (T=6, N=2, C=4), targets of length 3 and 2."""
    tgt = lib.from_numpy(np.array([[1, 2, 1], [3, 1, 0]], dtype=np.int64))
    lp = x.log_softmax(2)
    return m(lp, tgt, lib.tensor([6, 5]), lib.tensor([3, 2]))


def _mha(lib, m, x):
    return m(x, x, x, need_weights=False)[0]


MODULES = [
    ModuleEntry("Conv1d", lambda t: t.nn.Conv1d(3, 4, 3, padding=1), (2, 3, 7)),
    ModuleEntry("Conv2d", lambda t: t.nn.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 7, 7)),
    ModuleEntry("Conv2d_groups", lambda t: t.nn.Conv2d(4, 4, 3, groups=2, dilation=2),
                (2, 4, 7, 7)),
    ModuleEntry("Conv3d", lambda t: t.nn.Conv3d(2, 3, 2), (1, 2, 4, 4, 4)),
    ModuleEntry("ConvTranspose1d", lambda t: t.nn.ConvTranspose1d(3, 2, 3, stride=2), (2, 3, 5)),
    ModuleEntry("ConvTranspose2d", lambda t: t.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1),
                (2, 3, 4, 4)),
    ModuleEntry("Linear", lambda t: t.nn.Linear(5, 3), (4, 5)),
    ModuleEntry("Bilinear", lambda t: t.nn.Bilinear(5, 5, 3), (4, 5),
                call=lambda lib, m, x: m(x, x * 2)),
    ModuleEntry("BatchNorm1d_train", lambda t: t.nn.BatchNorm1d(3), (4, 3, 5)),
    ModuleEntry("BatchNorm2d_train", lambda t: t.nn.BatchNorm2d(3), (4, 3, 3, 3)),
    ModuleEntry("BatchNorm2d_eval", lambda t: t.nn.BatchNorm2d(3), (4, 3, 3, 3), train=False),
    ModuleEntry("LayerNorm", lambda t: t.nn.LayerNorm(5), (3, 4, 5)),
    ModuleEntry("GroupNorm", lambda t: t.nn.GroupNorm(2, 4), (3, 4, 5)),
    ModuleEntry("InstanceNorm2d", lambda t: t.nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    ModuleEntry("LocalResponseNorm", lambda t: t.nn.LocalResponseNorm(3), (2, 5, 4)),
    ModuleEntry("RMSNorm", lambda t: t.nn.RMSNorm(5), (3, 5)),
    ModuleEntry("MaxPool1d", lambda t: t.nn.MaxPool1d(2), (2, 3, 8)),
    ModuleEntry("MaxPool2d", lambda t: t.nn.MaxPool2d(3, 2, padding=1), (2, 3, 7, 7)),
    ModuleEntry("MaxPool3d", lambda t: t.nn.MaxPool3d(2), (1, 2, 4, 4, 4)),
    ModuleEntry("AvgPool1d", lambda t: t.nn.AvgPool1d(3, 2, padding=1), (2, 3, 8)),
    ModuleEntry("AvgPool2d", lambda t: t.nn.AvgPool2d(2), (2, 3, 6, 6)),
    ModuleEntry("AvgPool2d_pad", lambda t: t.nn.AvgPool2d(3, 2, padding=1,
                                                         count_include_pad=False), (2, 3, 7, 7)),
    ModuleEntry("AvgPool3d", lambda t: t.nn.AvgPool3d(2), (1, 2, 4, 4, 4)),
    ModuleEntry("AdaptiveAvgPool1d", lambda t: t.nn.AdaptiveAvgPool1d(3), (2, 3, 7)),
    ModuleEntry("AdaptiveAvgPool2d", lambda t: t.nn.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5)),
    ModuleEntry("AdaptiveAvgPool2d_1", lambda t: t.nn.AdaptiveAvgPool2d(1), (2, 3, 4, 4)),
    ModuleEntry("AdaptiveMaxPool1d", lambda t: t.nn.AdaptiveMaxPool1d(3), (2, 3, 7)),
    ModuleEntry("AdaptiveMaxPool2d", lambda t: t.nn.AdaptiveMaxPool2d(2), (2, 3, 5, 5)),
    ModuleEntry("LPPool2d", lambda t: t.nn.LPPool2d(2, 2), (2, 3, 4, 4)),
    ModuleEntry("ReflectionPad1d", lambda t: t.nn.ReflectionPad1d(2), (2, 3, 5)),
    ModuleEntry("ReflectionPad2d", lambda t: t.nn.ReflectionPad2d((1, 2, 2, 1)), (2, 3, 4, 4)),
    ModuleEntry("ReplicationPad1d", lambda t: t.nn.ReplicationPad1d(2), (2, 3, 5)),
    ModuleEntry("ReplicationPad2d", lambda t: t.nn.ReplicationPad2d(1), (2, 3, 4, 4)),
    ModuleEntry("ReplicationPad3d", lambda t: t.nn.ReplicationPad3d(1), (1, 2, 3, 3, 3)),
    ModuleEntry("CircularPad2d", lambda t: t.nn.CircularPad2d(1), (2, 3, 4, 4)),
    ModuleEntry("ZeroPad2d", lambda t: t.nn.ZeroPad2d(1), (2, 3, 4, 4)),
    ModuleEntry("Upsample_nearest", lambda t: t.nn.Upsample(scale_factor=2), (2, 3, 3, 3)),
    ModuleEntry("Upsample_bilinear", lambda t: t.nn.Upsample(scale_factor=2, mode="bilinear"),
                (2, 3, 3, 3)),
    ModuleEntry("Upsample_bicubic", lambda t: t.nn.Upsample(size=(5, 4), mode="bicubic",
                                                           align_corners=True), (2, 3, 3, 3)),
    ModuleEntry("PixelShuffle", lambda t: t.nn.PixelShuffle(2), (2, 8, 3, 3)),
    ModuleEntry("Embedding", lambda t: t.nn.Embedding(10, 4), (3,),
                call=lambda lib, m, x: m(lib.tensor([[1, 2, 1], [4, 9, 0]])) * x.sum()),
    ModuleEntry("ReLU", lambda t: t.nn.ReLU(), (3, 5)),
    ModuleEntry("LeakyReLU", lambda t: t.nn.LeakyReLU(0.1), (3, 5)),
    ModuleEntry("PReLU", lambda t: t.nn.PReLU(), (3, 5)),
    ModuleEntry("ELU", lambda t: t.nn.ELU(), (3, 5)),
    ModuleEntry("SELU", lambda t: t.nn.SELU(), (3, 5)),
    ModuleEntry("CELU", lambda t: t.nn.CELU(0.7), (3, 5)),
    ModuleEntry("GELU", lambda t: t.nn.GELU(), (3, 5)),
    ModuleEntry("GELU_tanh", lambda t: t.nn.GELU(approximate="tanh"), (3, 5)),
    ModuleEntry("SiLU", lambda t: t.nn.SiLU(), (3, 5)),
    ModuleEntry("Mish", lambda t: t.nn.Mish(), (3, 5)),
    ModuleEntry("Sigmoid", lambda t: t.nn.Sigmoid(), (3, 5)),
    ModuleEntry("Tanh", lambda t: t.nn.Tanh(), (3, 5)),
    ModuleEntry("Softplus", lambda t: t.nn.Softplus(beta=2), (3, 5)),
    ModuleEntry("Hardtanh", lambda t: t.nn.Hardtanh(), (3, 5)),
    ModuleEntry("Hardswish", lambda t: t.nn.Hardswish(), (3, 5)),
    ModuleEntry("Hardsigmoid", lambda t: t.nn.Hardsigmoid(), (3, 5)),
    ModuleEntry("ReLU6", lambda t: t.nn.ReLU6(), (3, 5)),
    ModuleEntry("Softmax", lambda t: t.nn.Softmax(-1), (3, 5)),
    ModuleEntry("LogSoftmax", lambda t: t.nn.LogSoftmax(1), (3, 5)),
    ModuleEntry("GLU", lambda t: t.nn.GLU(), (3, 6)),
    ModuleEntry("Softmin", lambda t: t.nn.Softmin(1), (3, 5)),
    ModuleEntry("CrossEntropyLoss", lambda t: t.nn.CrossEntropyLoss(), (4, 5),
                target=lambda lib: lib.from_numpy(_idx((4,), 5))),
    ModuleEntry("CrossEntropyLoss_2d", lambda t: t.nn.CrossEntropyLoss(label_smoothing=0.1),
                (2, 4, 3, 3), target=lambda lib: lib.from_numpy(_idx((2, 3, 3), 4))),
    ModuleEntry("CrossEntropyLoss_probs", lambda t: t.nn.CrossEntropyLoss(), (4, 5),
                target=lambda lib: lib.from_numpy(_prob((4, 5)))),
    ModuleEntry("NLLLoss", lambda t: t.nn.NLLLoss(), (4, 5),
                target=lambda lib: lib.from_numpy(_idx((4,), 5))),
    ModuleEntry("NLLLoss_weight", lambda t: t.nn.NLLLoss(
        weight=t.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=t.float64), reduction="sum"), (4, 5),
        target=lambda lib: lib.from_numpy(_idx((4,), 5))),
    ModuleEntry("BCELoss", lambda t: t.nn.BCELoss(), (4, 5),
                call=lambda lib, m, x: m(x.sigmoid(), lib.from_numpy(_prob((4, 5))))),
    ModuleEntry("BCEWithLogitsLoss", lambda t: t.nn.BCEWithLogitsLoss(), (4, 5),
                target=lambda lib: lib.from_numpy(_prob((4, 5)))),
    ModuleEntry("MSELoss", lambda t: t.nn.MSELoss(), (4, 5),
                target=lambda lib: lib.from_numpy(_prob((4, 5)))),
    ModuleEntry("L1Loss", lambda t: t.nn.L1Loss(), (4, 5),
                target=lambda lib: lib.from_numpy(_prob((4, 5)))),
    ModuleEntry("SmoothL1Loss", lambda t: t.nn.SmoothL1Loss(beta=0.5), (4, 5),
                target=lambda lib: lib.from_numpy(_prob((4, 5)))),
    ModuleEntry("HuberLoss", lambda t: t.nn.HuberLoss(delta=0.5), (4, 5),
                target=lambda lib: lib.from_numpy(_prob((4, 5)))),
    ModuleEntry("KLDivLoss", lambda t: t.nn.KLDivLoss(reduction="batchmean"), (4, 5),
                call=lambda lib, m, x: m(x.log_softmax(1), lib.from_numpy(_prob((4, 5))))),
    ModuleEntry("KLDivLoss_log_target", lambda t: t.nn.KLDivLoss(reduction="sum",
                                                                log_target=True), (4, 5),
                call=lambda lib, m, x: m(x.log_softmax(1), lib.from_numpy(np.log(_prob((4, 5)))))),
    ModuleEntry("CTCLoss", lambda t: t.nn.CTCLoss(), (6, 2, 4), call=_ctc),
    ModuleEntry("MultiLabelSoftMarginLoss", lambda t: t.nn.MultiLabelSoftMarginLoss(), (4, 5),
                target=lambda lib: lib.from_numpy((_prob((4, 5)) > 0.5).astype(np.float64))),
    ModuleEntry("MarginRankingLoss", lambda t: t.nn.MarginRankingLoss(0.1), (4,),
                call=lambda lib, m, x: m(x, x.flip(0) * 0.5,
                                         lib.tensor([1.0, -1.0, 1.0, -1.0]))),
    ModuleEntry("CosineEmbeddingLoss", lambda t: t.nn.CosineEmbeddingLoss(), (4, 5),
                call=lambda lib, m, x: m(x, x.flip(0) + 0.5, lib.tensor([1.0, -1.0, 1.0, -1.0]))),
    ModuleEntry("GaussianNLLLoss", lambda t: t.nn.GaussianNLLLoss(), (4, 5),
                call=lambda lib, m, x: m(x, lib.from_numpy(_prob((4, 5))), x.exp())),
    ModuleEntry("PoissonNLLLoss", lambda t: t.nn.PoissonNLLLoss(), (4, 5),
                target=lambda lib: lib.from_numpy(_prob((4, 5)) * 3)),
    ModuleEntry("RNN", lambda t: t.nn.RNN(4, 3, num_layers=2), (5, 2, 4), call=_seq),
    ModuleEntry("LSTM", lambda t: t.nn.LSTM(4, 3, batch_first=True), (2, 5, 4), call=_seq),
    ModuleEntry("LSTM_proj", lambda t: t.nn.LSTM(4, 3, proj_size=2), (5, 2, 4), call=_seq),
    ModuleEntry("GRU", lambda t: t.nn.GRU(4, 3, bidirectional=True), (5, 2, 4), call=_seq),
    ModuleEntry("LSTMCell", lambda t: t.nn.LSTMCell(4, 3), (2, 4), call=_seq),
    ModuleEntry("GRUCell", lambda t: t.nn.GRUCell(4, 3), (2, 4)),
    ModuleEntry("MultiheadAttention", lambda t: t.nn.MultiheadAttention(8, 2), (3, 2, 8),
                call=_mha),
    ModuleEntry("TransformerEncoderLayer", lambda t: t.nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, dropout=0.0), (2, 3, 8), train=True),
    ModuleEntry("TransformerEncoderLayer_eval", lambda t: t.nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, dropout=0.0, batch_first=True), (2, 3, 8), train=False),
    ModuleEntry("Conv2d_reflect", lambda t: t.nn.Conv2d(2, 3, 3, padding=1,
                                                        padding_mode="reflect"), (2, 2, 5, 5)),
    ModuleEntry("EmbeddingBag", lambda t: t.nn.EmbeddingBag(10, 4, mode="mean"), (2,),
                call=lambda lib, m, x: m(lib.tensor([[1, 2, 1], [4, 9, 0]])) * (x ** 2).sum()),
    ModuleEntry("Unfold", lambda t: t.nn.Unfold(2, stride=1), (2, 3, 4, 4),
                call=lambda lib, m, x: m(x).tanh()),
    ModuleEntry("Fold", lambda t: t.nn.Fold((3, 3), 2), (2, 8, 4),
                call=lambda lib, m, x: m(x).tanh()),
    ModuleEntry("CosineSimilarity", lambda t: t.nn.CosineSimilarity(1), (4, 5),
                call=lambda lib, m, x: m(x, x.flip(0) + 1)),
    ModuleEntry("PairwiseDistance", lambda t: t.nn.PairwiseDistance(), (4, 5),
                call=lambda lib, m, x: m(x, x.flip(0) + 1)),
    ModuleEntry("TripletMarginLoss", lambda t: t.nn.TripletMarginLoss(margin=2.0), (4, 5),
                call=lambda lib, m, x: m(x, x.flip(0) * 0.5, x.roll(1, 0))),
    ModuleEntry("TransformerDecoderLayer", lambda t: t.nn.TransformerDecoderLayer(
        8, 2, dim_feedforward=16, dropout=0.0, batch_first=True), (2, 3, 8),
        call=lambda lib, m, x: m(x, x.flip(1))),
    ModuleEntry("spectral_norm_conv", lambda t: t.nn.utils.parametrizations.spectral_norm(
        t.nn.Conv2d(2, 3, 3)), (2, 2, 5, 5)),
    ModuleEntry("spectral_norm_linear_eval", lambda t: t.nn.utils.parametrizations.spectral_norm(
        t.nn.Linear(4, 3)), (2, 4), train=False),
    ModuleEntry("weight_norm_linear", lambda t: t.nn.utils.parametrizations.weight_norm(
        t.nn.Linear(4, 3)), (2, 4)),
    # small critics and meta-learners as users write them (second order through every layer)
    ModuleEntry("critic_dcgan", lambda t: _seq_of(
        t, t.nn.Conv2d(3, 4, 3, 2, 1), t.nn.BatchNorm2d(4), t.nn.LeakyReLU(0.2),
        t.nn.Conv2d(4, 4, 3, 1, 1), t.nn.AvgPool2d(2), t.nn.Flatten(), t.nn.Linear(16, 1)),
        (3, 3, 8, 8)),
    ModuleEntry("critic_instancenorm", lambda t: _seq_of(
        t, t.nn.Conv2d(3, 4, 3, padding=1), t.nn.InstanceNorm2d(4, affine=True), t.nn.ReLU(),
        t.nn.MaxPool2d(2), t.nn.Conv2d(4, 2, 3), t.nn.Flatten(), t.nn.Linear(8, 1)),
        (2, 3, 8, 8)),
    ModuleEntry("critic_groupnorm", lambda t: _seq_of(
        t, t.nn.Conv2d(3, 4, 3, padding=1), t.nn.GroupNorm(2, 4), t.nn.SiLU(),
        t.nn.AdaptiveAvgPool2d(2), t.nn.Flatten(), t.nn.Linear(16, 1)), (2, 3, 6, 6)),
    ModuleEntry("critic_layernorm_mlp", lambda t: _seq_of(
        t, t.nn.Linear(6, 8), t.nn.LayerNorm(8), t.nn.GELU(), t.nn.Linear(8, 1)), (5, 6)),
    ModuleEntry("maml_mlp_ce", lambda t: _seq_of(
        t, t.nn.Linear(6, 8), t.nn.Tanh(), t.nn.Linear(8, 3)), (5, 6),
        call=lambda lib, m, x: lib.nn.functional.cross_entropy(m(x), lib.tensor([0, 2, 1, 1, 0]))),
    ModuleEntry("cnn_maxpool_nll", lambda t: _seq_of(
        t, t.nn.Conv2d(1, 3, 3), t.nn.ReLU(), t.nn.MaxPool2d(2), t.nn.Flatten(),
        t.nn.Linear(12, 4), t.nn.LogSoftmax(1)), (2, 1, 6, 6),
        call=lambda lib, m, x: lib.nn.functional.nll_loss(m(x), lib.tensor([3, 1]))),
    ModuleEntry("lstm_regressor", lambda t: _seq_of(t, t.nn.LSTM(3, 4, batch_first=True)),
                (2, 4, 3), call=lambda lib, m, x: m[0](x)[0][:, -1].tanh()),
]


# also checked in float32 (the dtype WGAN-GP and MAML training run in)
FLOAT32_MODULES = ("Conv2d", "ConvTranspose2d", "BatchNorm2d_train", "LayerNorm", "GroupNorm",
                   "MaxPool2d", "AvgPool2d_pad", "AdaptiveAvgPool2d", "CrossEntropyLoss",
                   "NLLLoss", "LSTM", "MultiheadAttention", "TransformerEncoderLayer",
                   "critic_dcgan", "critic_instancenorm", "critic_groupnorm",
                   "critic_layernorm_mlp", "maml_mlp_ce", "cnn_maxpool_nll", "lstm_regressor")


def _seq_of(lib, *layers):
    return lib.nn.Sequential(*layers)


def _build(entry, dtype="float64"):
    """(torch module, ember module) with the same parameters and buffers, in ``dtype``."""
    import torch
    torch.manual_seed(0)
    tm = entry.make(torch).to(getattr(torch, dtype))
    em = entry.make(ember).to(getattr(ember, dtype))
    state = {k: ember.from_numpy(H.torch_to_numpy(v).copy()).to(getattr(ember, H._dtype_name(
        v.dtype))) for k, v in tm.state_dict().items()}
    em.load_state_dict(state)
    tm.train(entry.train)
    em.train(entry.train)
    return tm, em


def _forward(entry, lib, m, x):
    if entry.call is not None:
        out = entry.call(lib, m, x)
    elif entry.target is not None:
        target = entry.target(lib)
        out = m(x, target.to(x.dtype) if target.is_floating_point() else target)
    else:
        out = m(x)
    return out


def _wgan_gp(lib, entry, m, x, wrt):
    """d/d(wrt) of the WGAN-GP penalty of module ``m`` at ``x``."""
    out = _forward(entry, lib, m, x)
    cot = np.random.default_rng(3).standard_normal(tuple(out.shape))
    g, = lib.autograd.grad(_weighted_sum(lib, [out], [cot]), x, create_graph=True)
    norm = g.reshape(g.shape[0], -1).norm(2, dim=1) if g.dim() > 1 else g.norm(2)
    penalty = ((norm - 1) ** 2).mean()
    return lib.autograd.grad(penalty, wrt, allow_unused=True)


def _hvp(lib, entry, m, x, wrt):
    """(gradients, Hessian-vector products) of the module's reduced output over ``wrt``."""
    out = _forward(entry, lib, m, x)
    rng = np.random.default_rng(5)
    cot = rng.standard_normal(tuple(out.shape))
    g = lib.autograd.grad(_weighted_sum(lib, [out], [cot]), wrt, create_graph=True,
                          allow_unused=True)
    vs = [rng.standard_normal(tuple(w.shape)) for w in wrt]
    terms = [(gi, v) for gi, v in zip(g, vs) if gi is not None and gi.requires_grad]
    if not terms:
        return g, None
    s = _weighted_sum(lib, [t for t, _ in terms], [v for _, v in terms])
    return g, lib.autograd.grad(s, wrt, allow_unused=True)


def _func_hessian(lib, entry, m, x, wrt):
    """``func.hessian`` (forward over reverse) of the reduced output w.r.t. the input."""
    cot = np.random.default_rng(3).standard_normal(tuple(_forward(entry, lib, m, x).shape))

    def f(xi):
        return _weighted_sum(lib, [_forward(entry, lib, m, xi)], [cot])
    return [lib.func.hessian(f)(x.detach())]


# also checked through func.hessian (jacfwd over jacrev: forward-mode AD of each backward)
FUNC_HESSIAN_MODULES = ("Conv1d", "BatchNorm1d_train", "LayerNorm", "GroupNorm", "MaxPool1d",
                        "AvgPool1d", "AdaptiveAvgPool1d", "GELU", "Softmax", "CrossEntropyLoss",
                        "NLLLoss", "SmoothL1Loss", "GaussianNLLLoss", "GRUCell",
                        "critic_layernorm_mlp", "maml_mlp_ce")
KINDS = {"wgan_gp": "gradient", "hvp": None, "func_hessian": "Hessian"}
FLOAT32_TOL = (1e-4, 1e-4)      # second derivatives of float32 modules: rtol, atol


def check_module(entry, kind, dtype="float64"):
    """``kind`` "wgan_gp", "hvp" or "func_hessian" for one ModuleEntry; returns a
    GradGradResult. With
    ``dtype="float32"`` (what WGAN-GP training runs in), values within ``FLOAT32_TOL``."""
    import torch
    res = GradGradResult(f"{entry.name}.{kind}")
    x_np = np.random.default_rng(11).standard_normal(entry.shape).astype(dtype)
    tm, em = _build(entry, dtype)
    tx = torch.from_numpy(x_np.copy()).requires_grad_(True)
    ex = ember.from_numpy(x_np.copy()).requires_grad_(True)
    t_wrt = [tx] + [p for _, p in tm.named_parameters()]
    e_params = dict(em.named_parameters())
    names = ["input"] + [k for k, _ in tm.named_parameters()]
    try:
        e_wrt = [ex] + [e_params[k] for k, _ in tm.named_parameters()]
    except KeyError as e:
        res.status, res.reason = "fail", f"ember's module lacks parameter {e}"
        return res
    fn = {"wgan_gp": _wgan_gp, "hvp": _hvp, "func_hessian": _func_hessian}[kind]
    if kind == "func_hessian":
        names = ["input"]
    try:
        # torch's CPU flash attention has no double backward: its math kernel has
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with warnings.catch_warnings(), sdpa_kernel(SDPBackend.MATH):
            warnings.simplefilter("ignore")
            t_res = fn(torch, entry, tm, tx, t_wrt)
    except Exception as e:
        res.reason = f"torch: {type(e).__name__}: {e}"
        return res
    tol = (lambda n: tuple(v * GRAD_TOL_SCALE for v in H.DEFAULT_TOL[n])) \
        if dtype == "float64" else (lambda n: FLOAT32_TOL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e_res = fn(ember, entry, em, ex, e_wrt)
        pairs = [(e_res, t_res, KINDS[kind])] if KINDS[kind] else \
            [(e_res[0], t_res[0], "first-order grad"), (e_res[1], t_res[1], "Hessian-vector product")]
        for e, t, what in pairs:
            if t is None:
                continue
            if e is None:
                raise H.Mismatch(f"{what}: ember's first-order gradients have no graph")
            for n, eg, tg in zip(names, e, t):
                _compare_grads([eg], [tg], tol, f"{what} ({n})")
    except H.Mismatch as m:
        res.status, res.reason = "fail", str(m)
        return res
    except Exception as e:
        res.status, res.reason = "fail", H._exc_reason(e, "ember")
        return res
    res.status, res.samples = "pass", 1
    return res

