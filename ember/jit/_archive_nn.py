"""ATen ops of torch.nn's scripted code that archives call by their ATen signatures (losses
with an int ``reduction``, ``im2col``/``col2im``, ``embedding_bag``, ``max_unpool``...):
each adapter maps one ATen signature onto ember's ``nn.functional`` front.

Used by ``_archive_builtins.ADAPTERS`` when ``jit.load`` compiles archive code."""
from __future__ import annotations

from ember.jit import _types as T

_TT = T.TensorType
_TT2 = T.TupleType((_TT, _TT))
_TT4 = T.TupleType((_TT, _TT, _TT, _TT))

_REDUCTIONS = ("none", "mean", "sum")      # ATen's Reduction enum: 0, 1, 2


def _F():
    import ember.nn.functional as F
    return F


def _red(r):
    """ATen writes ``reduction`` as an int (0 none, 1 mean, 2 sum)."""
    return _REDUCTIONS[r] if isinstance(r, int) and not isinstance(r, bool) else r


def _loss(fname, *extra):
    """``aten::<loss>(input, target, reduction, *extra)`` -> ``F.<fname>(..., reduction=)``
    with ``extra`` passed by the keyword names given."""
    def run(input, target, reduction=1, *rest):
        kw = dict(zip(extra, rest))
        return getattr(_F(), fname)(input, target, reduction=_red(reduction), **kw)
    run.__qualname__ = fname
    return run


def _binary_cross_entropy(input, target, weight=None, reduction=1):
    return _F().binary_cross_entropy(input, target, weight, reduction=_red(reduction))


def _cross_entropy_loss(input, target, weight=None, reduction=1, ignore_index=-100,
                        label_smoothing=0.0):
    return _F().cross_entropy(input, target, weight, ignore_index=ignore_index,
                              reduction=_red(reduction), label_smoothing=label_smoothing)


def _multi_margin_loss(input, target, p=1, margin=1.0, weight=None, reduction=1):
    return _F().multi_margin_loss(input, target, p, margin, weight, reduction=_red(reduction))


def _feature_alpha_dropout(input, p, train):
    return _F().feature_alpha_dropout(input, p, train)


def _feature_alpha_dropout_(input, p, train):
    return input.copy_(_F().feature_alpha_dropout(input, p, train)) if train else input


def _im2col(input, kernel_size, dilation, padding, stride):
    return _F().unfold(input, kernel_size, dilation, padding, stride)


def _col2im(input, output_size, kernel_size, dilation, padding, stride):
    return _F().fold(input, output_size, kernel_size, dilation, padding, stride)


def _fractional(nd):
    def run(input, kernel_size, output_size, random_samples):
        f = getattr(_F(), f"fractional_max_pool{nd}d")
        return f(input, kernel_size, output_size, return_indices=True,
                 _random_samples=random_samples)
    run.__qualname__ = f"fractional_max_pool{nd}d"
    return run


def _embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                   per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """-> (output, offset2bag, bag_size, max_indices); ember computes the output only, the
    other three (ATen's backward bookkeeping) come back empty."""
    import ember
    out = _F().embedding_bag(indices, weight, offsets, None, 2.0, scale_grad_by_freq,
                             ("sum", "mean", "max")[mode], sparse, per_sample_weights,
                             include_last_offset, padding_idx)
    empty = ember.empty(0, dtype=ember.int64)
    return out, empty, empty, empty


def _max_unpool(nd):
    """``max_unpool2d(input, indices, output_size)`` / ``max_unpool3d(..., stride,
    padding)``: scatter each value to its flat index in the output plane."""
    def run(input, indices, output_size, *unused):
        import ember
        batched = input.dim() == nd + 2
        x = input if batched else input.unsqueeze(0)
        idx = indices if batched else indices.unsqueeze(0)
        n, c = x.shape[0], x.shape[1]
        plane = 1
        for s in output_size:
            plane *= s
        out = ember.zeros(n, c, plane, dtype=x.dtype)
        out = out.scatter(2, idx.reshape(n, c, -1), x.reshape(n, c, -1))
        out = out.reshape([n, c] + list(output_size))
        return out if batched else out.squeeze(0)
    run.__qualname__ = f"max_unpool{nd}d"
    return run


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """Rows of ``weight`` that ``input`` looks up rescaled in place to norm <= max_norm."""
    from ember.nn.functional._linear import _renorm_rows
    _renorm_rows(weight, input, max_norm, norm_type)
    return weight


def _channel_shuffle(input, groups):
    return _F().channel_shuffle(input, groups)


def _bilinear(input1, input2, weight, bias=None):
    return _F().bilinear(input1, input2, weight, bias)


# ATen name -> (callable, result type)
NN_ADAPTERS = {
    "l1_loss": (_loss("l1_loss"), _TT), "mse_loss": (_loss("mse_loss"), _TT),
    "huber_loss": (_loss("huber_loss", "delta"), _TT),
    "smooth_l1_loss": (_loss("smooth_l1_loss", "beta"), _TT),
    "soft_margin_loss": (_loss("soft_margin_loss"), _TT),
    "multilabel_margin_loss": (_loss("multilabel_margin_loss"), _TT),
    "binary_cross_entropy": (_binary_cross_entropy, _TT),
    "cross_entropy_loss": (_cross_entropy_loss, _TT),
    "multi_margin_loss": (_multi_margin_loss, _TT),
    "feature_alpha_dropout": (_feature_alpha_dropout, _TT),
    "feature_alpha_dropout_": (_feature_alpha_dropout_, _TT),
    "im2col": (_im2col, _TT), "col2im": (_col2im, _TT),
    "fractional_max_pool2d": (_fractional(2), _TT2),
    "fractional_max_pool3d": (_fractional(3), _TT2),
    "embedding_bag": (_embedding_bag, _TT4),
    "max_unpool2d": (_max_unpool(2), _TT), "max_unpool3d": (_max_unpool(3), _TT),
    "channel_shuffle": (_channel_shuffle, _TT), "native_channel_shuffle": (_channel_shuffle, _TT),
    "bilinear": (_bilinear, _TT),
    "embedding_renorm_": (_embedding_renorm_, _TT),
}
