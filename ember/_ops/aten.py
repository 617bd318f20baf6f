"""ATen's internal ops that torch's op database tests: backward ops
(``_softmax_backward_data`` lives with softmax in reduction.py, ``native_dropout_backward``,
``max_pool2d_with_indices_backward``), functional batch-norm variants, the antialiased
bilinear upsample, ``slice``, masked indexing, ``_chunk_cat`` and ``segment_reduce``.

Most are composites of ember ops (autograd from their parts). They are reached through
``ember.ops.aten.<name>`` (ember/ops.py); the ones torch also has at top level
(``torch._chunk_cat``...) are listed in ``TORCH_PRIVATE``.
"""
from __future__ import annotations

import math

import ember
from ember._kernels import aten as K
from ember._ops.registry import defop, public, FUNCTIONS

# private names torch exposes as torch.<name> (ember/__init__.py exports them)
TORCH_PRIVATE = ("_softmax_backward_data", "_log_softmax_backward_data",
                 "_native_batch_norm_legit", "_safe_softmax", "_unsafe_masked_index",
                 "_unsafe_masked_index_put_accumulate", "_chunk_cat", "_segment_reduce")


def _record(schema, composite):
    """A composite record with no public front (reached through ember.ops.aten)."""
    return defop(schema, composite=composite, function=False, method=False)


# -------------------------------------------------------------------- backward ops

def _native_dropout_backward(grad_output, mask, scale):
    return grad_output * mask * scale


native_dropout_backward = _record(
    "native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor",
    _native_dropout_backward)


max_pool2d_with_indices_backward = defop(
    "max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "
    "int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",
    K.max_pool2d_with_indices_backward, promote=None, function=False, method=False,
    saves=("indices",))


@max_pool2d_with_indices_backward.def_backward
def _(ctx, grad, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
      indices):
    """Gathers back what each output position sent; ``self`` only gave the shape."""
    picked = grad.flatten(-2).gather(-1, indices.flatten(-2)).reshape(ctx.shapes[0])
    return (picked, ember.zeros(ctx.shapes[1], dtype=grad.dtype)) + (None,) * 6


# -------------------------------------------------------------------- batch norm

def _batch_norm_legit(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    return ember.native_batch_norm(input, weight, bias, running_mean, running_var, training,
                                   momentum, eps)


def _batch_norm_legit_no_stats(input, weight, bias, training, momentum, eps):
    return ember.native_batch_norm(input, weight, bias, None, None, training, momentum, eps)


def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    """Training-mode batch norm; the fourth output (cuDNN's reserve space) is empty."""
    out, mean, invstd = ember.native_batch_norm(input, weight, bias, running_mean, running_var,
                                                True, momentum, eps)
    return out, mean, invstd, ember.empty((0,), dtype=ember.uint8)


_BN_ARGS = "Tensor input, Tensor? weight, Tensor? bias, "
batch_norm_legit = _record(
    f"_native_batch_norm_legit({_BN_ARGS}Tensor running_mean, Tensor running_var, "
    "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)", _batch_norm_legit)
batch_norm_legit_no_stats = _record(
    f"_native_batch_norm_legit.no_stats({_BN_ARGS}bool training, float momentum, float eps) "
    "-> (Tensor, Tensor, Tensor)", _batch_norm_legit_no_stats)
batch_norm_with_update = _record(
    f"_batch_norm_with_update({_BN_ARGS}Tensor running_mean, Tensor running_var, "
    "float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor)", _batch_norm_with_update)


@public("_native_batch_norm_legit")
def _native_batch_norm_legit(input, weight, bias, *args, **kwargs):
    """With running statistics (``running_mean, running_var, training, momentum, eps``) or
    without (``training, momentum, eps``)."""
    if len(args) + len(kwargs) == 3 and "running_mean" not in kwargs:
        return batch_norm_legit_no_stats(input, weight, bias, *args, **kwargs)
    return batch_norm_legit(input, weight, bias, *args, **kwargs)


# -------------------------------------------------------------------- upsampling

def _upsample_aa(input, output_size, align_corners, scales_h=None, scales_w=None):
    """Antialiased bilinear resize to ``output_size``; the scales, when given, set the
    source coordinates (torch's ``1/scale``)."""
    from ember.nn.functional._vision import _interp_aa
    if input.dim() != 4:
        raise RuntimeError(f"Non-empty 4D data tensor expected but got a tensor with sizes "
                           f"{list(input.shape)}")
    return _interp_aa(input, list(input.shape[2:]), [int(s) for s in output_size],
                      [scales_h, scales_w], align_corners, "bilinear")


def _upsample_aa_vec(input, output_size, align_corners, scale_factors):
    if output_size is not None:
        return _upsample_aa(input, output_size, align_corners)
    sizes = [int(math.floor(n * s)) for n, s in zip(input.shape[2:], scale_factors)]
    return _upsample_aa(input, sizes, align_corners, *scale_factors)


upsample_bilinear2d_aa = _record(
    "_upsample_bilinear2d_aa(Tensor self, int[2] output_size, bool align_corners, "
    "float? scales_h=None, float? scales_w=None) -> Tensor", _upsample_aa)
upsample_bilinear2d_aa_vec = _record(
    "_upsample_bilinear2d_aa.vec(Tensor input, int[]? output_size, bool align_corners, "
    "Any scale_factors) -> Tensor", _upsample_aa_vec)


# -------------------------------------------------------------------- softmax

def _safe_softmax_composite(self, dim, dtype=None):
    """softmax, with 0 (not NaN) along rows that are entirely -inf."""
    masked = (self == -math.inf).all(dim, keepdim=True)
    out = ember.softmax(self.masked_fill(masked, 0), dim, dtype=dtype)
    return out.masked_fill(masked, 0)


safe_softmax = defop("_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
                     composite=_safe_softmax_composite, method=False)


# -------------------------------------------------------------------- slicing, indexing

slice_tensor = defop(
    "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
    "SymInt step=1) -> Tensor(a)", K.slice_view, promote=None, function=False, method=False)


@slice_tensor.def_backward
def _(ctx, grad, self, dim, start, end, step):
    zeros = ember.zeros(ctx.shapes[0], dtype=grad.dtype)
    return ember.slice_scatter(zeros, grad, dim, start, end, step), None, None, None, None


def _in_range(indices, shape):
    """Index tensors wrapped into range: the masked-off ones may point anywhere."""
    return tuple(i.remainder(n) if n else i for i, n in zip(indices, shape))


def _unsafe_masked_index_composite(self, mask, indices, fill):
    """``self[indices]`` where ``mask`` holds, ``fill`` elsewhere."""
    picked = self[_in_range(indices, self.shape)]
    return ember.where(mask, picked, fill).to(self.dtype)


def _unsafe_masked_index_put_accumulate_composite(self, mask, indices, values):
    """``self.index_put(indices, values, accumulate=True)`` for the positions ``mask`` holds."""
    values = values.expand(ember.broadcast_shapes(values.shape, mask.shape))
    kept = values.masked_fill(mask.logical_not(), 0)
    return self.index_put(_in_range(indices, self.shape), kept, accumulate=True)


unsafe_masked_index = defop(
    "_unsafe_masked_index(Tensor self, Tensor mask, Any indices, Scalar fill) -> Tensor",
    composite=_unsafe_masked_index_composite, method=False)
unsafe_masked_index_put_accumulate = defop(
    "_unsafe_masked_index_put_accumulate(Tensor self, Tensor mask, Any indices, "
    "Tensor values) -> Tensor", composite=_unsafe_masked_index_put_accumulate_composite,
    method=False)


# -------------------------------------------------------------------- _chunk_cat

def _chunk_cat_composite(tensors, dim, num_chunks):
    """Each tensor split into ``num_chunks`` equal chunks along ``dim`` (zero-padded at the
    end), each chunk flattened from ``dim`` on; chunk ``k`` of every tensor, concatenated,
    is row ``k`` of the result: shape ``shape[:dim] + (num_chunks, total)``."""
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    d = dim + tensors[0].ndim if dim < 0 else dim
    rows = []
    for t in tensors:
        size = t.shape[d]
        per_chunk = -(-size // num_chunks)
        pad = per_chunk * num_chunks - size
        if pad:
            t = ember.nn.functional.pad(t, (0, 0) * (t.ndim - d - 1) + (0, pad))
        rows.append(t.reshape(tuple(t.shape[:d]) + (num_chunks, -1)))
    return ember.cat(rows, d + 1)


chunk_cat = defop("_chunk_cat(Tensor[] tensors, int dim, int num_chunks) -> Tensor",
                  composite=_chunk_cat_composite, method=False)


# -------------------------------------------------------------------- segment_reduce

# reduce -> (scatter_reduce mode, its identity: an empty segment's value; a mean's is 0/0)
_SEGMENT = {"max": ("amax", -math.inf), "min": ("amin", math.inf), "sum": ("sum", 0.0),
            "prod": ("prod", 1.0), "mean": ("sum", 0.0)}


def _segment_reduce_composite(data, reduce, lengths=None, indices=None, offsets=None,
                              axis=0, unsafe=False, initial=None):
    """Reduces consecutive segments of ``data`` along ``axis``: segment ``j`` has
    ``lengths[..., j]`` elements (or runs from ``offsets[..., j]`` to ``offsets[..., j+1]``).
    ``initial`` takes part in every segment (and is an empty one's value)."""
    reduce = {"amax": "max", "amin": "min"}.get(reduce, reduce)
    if reduce not in _SEGMENT:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    axis = axis + data.ndim if axis < 0 else axis
    size = data.shape[axis]
    if offsets is not None:
        first, ends = offsets[..., :1], offsets[..., 1:]
    else:
        ends = lengths.cumsum(-1)
        first = ember.zeros_like(ends[..., :1])
    segments = ends.shape[-1]
    lead = tuple(ends.shape[:-1])
    position = ember.arange(size).expand(lead + (size,)).contiguous()
    seg = ember.searchsorted(ends.contiguous(), position, right=True)
    seg = seg.masked_fill(position < first, segments)      # before the first segment: spare
    trailing = data.ndim - axis - 1
    seg = seg.reshape(seg.shape + (1,) * trailing).expand(data.shape)
    mode, identity = _SEGMENT[reduce]
    start = initial if initial is not None and reduce in ("sum", "prod") else identity
    shape = lead + (segments + 1,) + tuple(data.shape[axis + 1:])
    base = ember.full(shape, start, dtype=data.dtype)
    out = base.scatter_reduce(axis, seg, data, mode).narrow(axis, 0, segments)
    if initial is not None and reduce in ("max", "min"):
        # ``initial`` wins only when strictly beyond the data: tied elements keep the
        # whole gradient (shared among themselves, as torch does)
        beyond = out < initial if reduce == "max" else out > initial
        out = out.masked_fill(beyond, initial)
    if reduce == "mean":
        count = lengths if offsets is None else ends - offsets[..., :-1]
        count = count.reshape(count.shape + (1,) * trailing).to(data.dtype)
        if initial is not None:
            out = ember.where(count == 0, ember.full_like(out, initial), (out + initial) / count)
        else:
            out = out / count
    return out


segment_reduce = defop(
    "segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, "
    "Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor",
    composite=_segment_reduce_composite, method=False)
FUNCTIONS["_segment_reduce"] = FUNCTIONS["segment_reduce"]
