"""Loss modules: each stores its options and calls the matching functional loss.
``reduction`` is ``'none'`` (per-element, the input's shape), ``'mean'`` or ``'sum'``
(a scalar); the deprecated ``size_average``/``reduce`` flags map onto it.

The concrete classes are made from one table (``_TABLE``): the functional they call, the
names of their forward inputs, and their constructor's options in torch's order."""
import inspect
import warnings

from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.modules.distance import PairwiseDistance

__all__ = ["L1Loss", "NLLLoss", "NLLLoss2d", "PoissonNLLLoss", "GaussianNLLLoss",
           "KLDivLoss", "MSELoss", "BCELoss", "BCEWithLogitsLoss", "HingeEmbeddingLoss",
           "MultiLabelMarginLoss", "SmoothL1Loss", "HuberLoss", "SoftMarginLoss",
           "CrossEntropyLoss", "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss",
           "MarginRankingLoss", "MultiMarginLoss", "TripletMarginLoss",
           "TripletMarginWithDistanceLoss", "CTCLoss"]

_LEGACY = ("size_average", "reduce")       # deprecated flags: folded into ``reduction``
_BUFFERS = ("weight", "pos_weight")        # tensor options, kept as (possibly None) buffers


def _legacy_get_string(size_average, reduce, emit_warning=True):
    """The ``reduction`` named by the old flags (each defaults to True), with a warning."""
    if reduce is not None and not reduce:
        reduction = "none"
    elif size_average is not None and not size_average:
        reduction = "sum"
    else:
        reduction = "mean"
    if emit_warning:
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", stacklevel=2)
    return reduction


class _Loss(Module):
    """Base of the losses: holds ``reduction``."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        legacy = size_average is not None or reduce is not None
        self.reduction = _legacy_get_string(size_average, reduce) if legacy else reduction


class _WeightedLoss(_Loss):
    """A loss with an optional per-class ``weight`` buffer."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class _TableLoss(_Loss):
    """A loss made from a ``_TABLE`` row: the constructor binds the options to the row's
    signature; ``forward`` passes the inputs and every option to the functional."""
    _functional = None
    _forward_signature = None     # the forward inputs, by name
    _options = ()                 # attribute names handed to the functional as keywords
    _check = None                 # optional validation of the bound options

    def __init__(self, *args, **kwargs):
        bound = self.__signature__.bind(*args, **kwargs)
        bound.apply_defaults()
        options = bound.arguments
        if self._check is not None:
            self._check(options)
        Module.__init__(self)
        flags = [options.pop(k, None) for k in _LEGACY]
        reduction = options.pop("reduction")
        self.reduction = reduction if flags == [None, None] else _legacy_get_string(*flags)
        for name, value in options.items():
            if name in _BUFFERS:
                self.register_buffer(name, value)
            else:
                setattr(self, name, value)

    def forward(self, *args, **kwargs):
        inputs = args                 # the usual call: every input by position
        if kwargs or len(args) != len(self._forward_signature.parameters):
            inputs = self._forward_signature.bind(*args, **kwargs).arguments.values()
        options = {name: getattr(self, name) for name in self._options}
        return self._functional(*inputs, **options, reduction=self.reduction)


def _multi_margin_check(options):
    if options["p"] not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    weight = options["weight"]
    if weight is not None and weight.dim() != 1:
        raise ValueError("MultiMarginLoss: expected weight to be None or 1D tensor, got "
                         f"{weight.dim()}D instead")


def _huber_check(options):
    if not isinstance(options["delta"], (float, int)):
        raise TypeError(f"delta must be a float or int, got: {type(options['delta'])}")


def _margin_check(owner):
    def check(options):
        if options["margin"] <= 0:
            raise ValueError(f"{owner}: expected margin to be greater than 0, got "
                             f"{options['margin']} instead")
    return check


def _default_distance(options):
    if options["distance_function"] is None:
        options["distance_function"] = PairwiseDistance()
    _margin_check("TripletMarginWithDistanceLoss")(options)


_MEAN = ("reduction", "mean")
_PAIR, _TRIPLE = ("input1", "input2", "target"), ("anchor", "positive", "negative")
_W, _SA, _RD = ("weight", None), ("size_average", None), ("reduce", None)
_IGNORE = ("ignore_index", -100)

# name: (functional, forward inputs, constructor options in order ("*" starts the
#        keyword-only ones), short description)
_TABLE = {
    "L1Loss": (F.l1_loss, None, (_SA, _RD, _MEAN), "``|input - target|``."),
    "MSELoss": (F.mse_loss, None, (_SA, _RD, _MEAN), "``(input - target) ** 2``."),
    "NLLLoss": (F.nll_loss, None, (_W, _SA, _IGNORE, _RD, _MEAN),
                "``-input[n, target[n]]`` for log-probabilities ``(N, C, *)`` and class "
                "indices ``(N, *)``; ``ignore_index`` targets contribute nothing."),
    "CrossEntropyLoss": (F.cross_entropy, None,
                         (_W, _SA, _IGNORE, _RD, _MEAN, ("label_smoothing", 0.0)),
                         "``nll_loss(log_softmax(input, 1), target)`` for class indices, or "
                         "the soft-label form for probabilities; optional smoothing."),
    "PoissonNLLLoss": (F.poisson_nll_loss, ("log_input", "target"),
                       (("log_input", True), ("full", False), _SA, ("eps", 1e-08), _RD, _MEAN),
                       "Negative log-likelihood of ``target ~ Poisson(input)``."),
    "GaussianNLLLoss": (F.gaussian_nll_loss, ("input", "target", "var"),
                        ("*", ("full", False), ("eps", 1e-06), _MEAN),
                        "Negative log-likelihood of ``target ~ N(input, var)``."),
    "KLDivLoss": (F.kl_div, None, (_SA, _RD, _MEAN, ("log_target", False)),
                  "``target * (log target - input)`` with log-probability input."),
    "BCELoss": (F.binary_cross_entropy, None, (_W, _SA, _RD, _MEAN),
                "Binary cross entropy of probabilities against targets in [0, 1]."),
    "BCEWithLogitsLoss": (F.binary_cross_entropy_with_logits, None,
                          (_W, _SA, _RD, _MEAN, ("pos_weight", None)),
                          "``BCELoss(sigmoid(input))`` computed stably."),
    "HingeEmbeddingLoss": (F.hinge_embedding_loss, None, (("margin", 1.0), _SA, _RD, _MEAN),
                           "``x`` where target is 1, ``max(0, margin - x)`` where -1."),
    "CosineEmbeddingLoss": (F.cosine_embedding_loss, _PAIR,
                            (("margin", 0.0), _SA, _RD, _MEAN),
                            "``1 - cos`` for target 1, ``max(0, cos - margin)`` for -1."),
    "MarginRankingLoss": (F.margin_ranking_loss, _PAIR, (("margin", 0.0), _SA, _RD, _MEAN),
                          "``max(0, -target * (x1 - x2) + margin)``."),
    "MultiLabelMarginLoss": (F.multilabel_margin_loss, None, (_SA, _RD, _MEAN),
                             "Multi-class hinge loss against -1-terminated indices."),
    "MultiLabelSoftMarginLoss": (F.multilabel_soft_margin_loss, None, (_W, _SA, _RD, _MEAN),
                                 "Mean over classes of the per-class logistic loss."),
    "MultiMarginLoss": (F.multi_margin_loss, None,
                        (("p", 1), ("margin", 1.0), _W, _SA, _RD, _MEAN),
                        "Multi-class hinge loss ``max(0, margin - x[y] + x[i]) ** p``."),
    "SmoothL1Loss": (F.smooth_l1_loss, None, (_SA, _RD, _MEAN, ("beta", 1.0)),
                     "Quadratic below ``beta`` (scaled by 1/beta), linear beyond."),
    "HuberLoss": (F.huber_loss, None, (_MEAN, ("delta", 1.0)),
                  "Quadratic below ``delta``, linear (slope ``delta``) beyond."),
    "SoftMarginLoss": (F.soft_margin_loss, None, (_SA, _RD, _MEAN),
                       "Logistic loss ``log(1 + exp(-y * x))``."),
    "TripletMarginLoss": (F.triplet_margin_loss, _TRIPLE,
                          (("margin", 1.0), ("p", 2.0), ("eps", 1e-06), ("swap", False),
                           _SA, _RD, _MEAN),
                          "``max(d(a, p) - d(a, n) + margin, 0)`` with a p-norm distance."),
    "TripletMarginWithDistanceLoss": (F.triplet_margin_with_distance_loss, _TRIPLE,
                                      ("*", ("distance_function", None), ("margin", 1.0),
                                       ("swap", False), _MEAN),
                                      "``TripletMarginLoss`` with any distance function."),
    "CTCLoss": (F.ctc_loss, ("log_probs", "targets", "input_lengths", "target_lengths"),
                (("blank", 0), _MEAN, ("zero_infinity", False)),
                "Connectionist temporal classification of unaligned target sequences."),
}

_WEIGHTED = {"NLLLoss", "CrossEntropyLoss", "BCELoss", "MultiLabelSoftMarginLoss",
             "MultiMarginLoss"}    # subclasses of _WeightedLoss in torch
_CHECKS = {"MultiMarginLoss": _multi_margin_check, "HuberLoss": _huber_check,
           "TripletMarginLoss": _margin_check("TripletMarginLoss"),
           "TripletMarginWithDistanceLoss": _default_distance}

# torch's __constants__ lists, where a class declares one
_CONSTANTS = {
    "L1Loss": ["reduction"], "MSELoss": ["reduction"], "BCELoss": ["reduction"],
    "NLLLoss": ["ignore_index", "reduction"],
    "CrossEntropyLoss": ["ignore_index", "reduction", "label_smoothing"],
    "PoissonNLLLoss": ["log_input", "full", "eps", "reduction"],
    "GaussianNLLLoss": ["full", "eps", "reduction"], "KLDivLoss": ["reduction"],
    "HingeEmbeddingLoss": ["margin", "reduction"], "CosineEmbeddingLoss": ["margin", "reduction"],
    "MarginRankingLoss": ["margin", "reduction"], "MultiLabelMarginLoss": ["reduction"],
    "MultiLabelSoftMarginLoss": ["reduction"], "MultiMarginLoss": ["p", "margin", "reduction"],
    "SmoothL1Loss": ["reduction"], "HuberLoss": ["reduction", "delta"],
    "SoftMarginLoss": ["reduction"], "TripletMarginLoss": ["margin", "p", "eps", "swap", "reduction"],
    "TripletMarginWithDistanceLoss": ["margin", "swap", "reduction"],
    "CTCLoss": ["blank", "reduction"],
}


def _signature(options):
    """``inspect.Signature`` of ``(name, default)`` pairs, ``"*"`` marking keyword-only."""
    kind, params = inspect.Parameter.POSITIONAL_OR_KEYWORD, []
    for option in options:
        if option == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
        else:
            params.append(inspect.Parameter(option[0], kind, default=option[1]))
    return inspect.Signature(params)


# forward of each loss written out (TorchScript compiles these; the table's generic
# ``_TableLoss.forward`` serves the rest)
class _Forwards:
    """Namespace of the written-out forwards (one per loss, torch's argument names)."""

    def L1Loss(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)

    def MSELoss(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)

    def NLLLoss(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)

    def CrossEntropyLoss(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)

    def PoissonNLLLoss(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)

    def GaussianNLLLoss(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)

    def KLDivLoss(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)

    def BCELoss(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)

    def BCEWithLogitsLoss(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)

    def HingeEmbeddingLoss(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)

    def CosineEmbeddingLoss(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)

    def MarginRankingLoss(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)

    def MultiLabelMarginLoss(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)

    def MultiLabelSoftMarginLoss(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)

    def MultiMarginLoss(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)

    def SmoothL1Loss(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)

    def HuberLoss(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)

    def SoftMarginLoss(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)

    def TripletMarginLoss(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)

    def CTCLoss(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


def _make(name, functional, inputs, options, doc):
    names = [o[0] for o in options if o != "*"]
    body = {
        "__doc__": doc, "__module__": __name__, "_functional": staticmethod(functional),
        "__signature__": _signature(options),
        "_forward_signature": _signature([(i, inspect.Parameter.empty)
                                          for i in inputs or ("input", "target")]),
        "_options": tuple(n for n in names if n not in _LEGACY + ("reduction",)),
        "_check": staticmethod(_CHECKS[name]) if name in _CHECKS else None,
    }
    if name in _CONSTANTS:
        body["__constants__"] = _CONSTANTS[name]
    if name in vars(_Forwards):
        body["forward"] = vars(_Forwards)[name]
    base = (_TableLoss, _WeightedLoss) if name in _WEIGHTED else (_TableLoss,)
    return type(name, base, body)


for _name, _row in _TABLE.items():
    globals()[_name] = _make(_name, *_row)


class NLLLoss2d(NLLLoss):  # noqa: F821 (made from the table above)
    """Deprecated alias of ``NLLLoss``."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see https://pytorch.org/docs/main/nn.html"
                      "#torch.nn.NLLLoss for more details.", FutureWarning, stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


# torch defines LinearCrossEntropyLoss in nn.modules.loss; ember keeps it in its own file
from ember.nn.modules.linear_cross_entropy import LinearCrossEntropyLoss  # noqa: E402,F401
