"""linear, bilinear, embedding, embedding_bag, the dropout family and one_hot
(torch.nn.functional), written in ember ops."""
import math
import warnings

import numpy as np

import ember
from ember._ops.blas import linear as _linear_op
from ember._ops.nn_fused import embedding as _embedding_op
from ember._tensor import Tensor
from ember.autograd.linear_layout import dress_linear
from ember.autograd.linear_layout import named, torch_node
from ember.autograd.profiler import torch_op_range

__all__ = ["linear", "bilinear", "embedding", "embedding_bag", "dropout", "dropout1d",
           "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "one_hot"]


# ------------------------------------------------------------------------- linear
def linear(input, weight, bias=None):
    """y = x W^T + b: x (..., in), W (out, in), b (out,) -> (..., out)."""
    if isinstance(input, Tensor) and isinstance(weight, Tensor) and weight.dim() == 2 and \
            input.dim() >= 1 and input.dtype == weight.dtype and \
            (bias is None or isinstance(bias, Tensor) and bias.dtype == weight.dtype and
             tuple(bias.shape) == (weight.shape[0],)):
        out = _linear_op(input, weight, bias)           # one record: one GEMM per pass
        if out._grad_fn is not None:
            dress_linear(out, input, weight, bias)      # torch's grad_fn chain around it
        return out
    for pos, (name, v) in enumerate((("input", input), ("weight", weight)), 1):
        if not isinstance(v, Tensor):
            raise TypeError(f"linear(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{input.dim()}D and {weight.dim()}D")
    if ember.is_autocast_enabled("cpu") and all(
            t.is_floating_point() for t in (input, weight, bias) if isinstance(t, Tensor)):
        # autocast casts every operand of linear (a lower-precision op): a bfloat16 input
        # with float32 weight and bias gives bfloat16 whatever the input's rank, as torch
        dt = ember.get_autocast_dtype("cpu")
        if input.dtype != dt or weight.dtype != dt or \
                isinstance(bias, Tensor) and bias.dtype != dt:
            with ember.autocast("cpu", enabled=False):
                return linear(input.to(dt), weight.to(dt),
                              bias.to(dt) if isinstance(bias, Tensor) else bias)
    # anything else (mixed dtypes, a 1-D weight, a broadcasting bias): torch's composite
    if input.dim() == 2 and bias is not None and bias.dim() <= 1:
        return ember.addmm(bias, input, weight.t())
    out = ember.matmul(input, weight.t())
    if bias is not None:
        out = out + bias
    return out


@torch_node(lambda out, x1, x2, w, bias=None: "ViewBackward0" if bias is None else None)
def bilinear(input1, input2, weight, bias=None):
    """y = x1^T A x2 + b, with A of shape (out, in1, in2)."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and "
                           f"{input2.dim()}")
    for d in range(input1.dim() - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: "
                               f"got {input1.shape[d]} and {input2.shape[d]}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3D, got {weight.dim()}D")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    w = weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    tmp = ember.matmul(input1, w).reshape(*input1.shape[:-1], out_f, in2)
    out = (tmp * input2.unsqueeze(-2)).sum(-1, dtype=tmp.dtype)      # integers stay, as in torch
    if bias is not None:
        out = out + bias
    return out


# ------------------------------------------------------------------------- embedding
def _renorm_rows(weight, idx, max_norm, norm_type):
    with ember.no_grad():
        rows = np.unique(idx._data.reshape(-1))
        w = weight._data
        sel = w[rows]
        if norm_type == math.inf:
            norms = np.abs(sel).max(axis=1)
        else:
            norms = (np.abs(sel) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
        big = norms > max_norm
        if big.any():
            scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
            w[rows[big]] = sel[big] * scale[:, None]
            from ember.autograd.graph import increment_version
            increment_version(weight)


def _check_index(input, fname):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'indices' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype not in (ember.int64, ember.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.type()} instead "
                           f"(while checking arguments for {fname})")


def _no_sparse_scaling(g):
    raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                       "gradients")


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    _check_index(input, "embedding")
    if padding_idx is not None:
        rows = weight.shape[0]
        if padding_idx < -rows or padding_idx >= max(rows, 1):
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:             # counted from the end
            padding_idx += rows
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    n = weight.shape[0]
    if _under_vmap(input) or _under_vmap(weight):
        return _embedding_batched(input, weight, padding_idx, scale_grad_by_freq)
    idx = input._data
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if sparse:                          # a sparse weight gradient (ember/_ops/sparse.py)
        from ember._ops.sparse import embedding_sparse_grad
        out = embedding_sparse_grad(weight, input, -1 if padding_idx is None else padding_idx)
        if scale_grad_by_freq and out.requires_grad:
            out.register_hook(_no_sparse_scaling)
    else:
        out = _embedding_op(weight, input)
    if out.requires_grad and (padding_idx is not None or scale_grad_by_freq):
        scale = np.ones(idx.shape, dtype=weight._data.dtype)
        if scale_grad_by_freq:
            _, inv, counts = np.unique(idx.reshape(-1), return_inverse=True,
                                       return_counts=True)
            scale = (1.0 / counts[inv]).astype(scale.dtype).reshape(idx.shape)
        if padding_idx is not None:
            scale = np.where(idx == padding_idx, 0, scale).astype(scale.dtype)
        s = ember.from_numpy(scale[..., None])
        out.register_hook(lambda g: g * s)
    return out


@named("EmbeddingBagBackward0")
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    _check_index(input, "embedding_bag")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) "
                         f"is not None, then it must have the same shape as the input "
                         f"({input.shape})")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, {-n} "
                               f"through {n - 1}, but got {padding_idx}")
        if padding_idx < 0:
            padding_idx = n + padding_idx
    if input.dim() == 2:
        if offsets is not None:
            type_str = str(type(offsets))
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type_str}")
        B, L = input.shape
        if L == 0:                                 # torch's arange(0, B*L, L) refuses it too
            raise RuntimeError("embedding_bag: a 2-D input needs bags of length >= 1 "
                               f"(got shape {list(input.shape)}): step must be nonzero")
        offs = np.arange(0, B * L, L, dtype=np.int64)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        fixed = L
    elif input.dim() == 1:
        if offsets is None or offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor"
                             + (" but got None" if offsets is None else ""))
        offs = np.asarray(offsets._data, dtype=np.int64)
        if offs.size and offs[0] != 0:        # (torch shows the value as a C++ 0-d tensor)
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                               f"mini-batch has to start from position 0. However, got "
                               f"{offs[0]}\n[ torch.LongTensor{{}} ]")
        if offs.size and offs[-1] > input.shape[0]:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length "
                               f"{input.shape[0]} but got offsets[-1] of {offs[-1]}")
        if include_last_offset:
            offs = offs[:-1]
        fixed = None
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    if sparse and mode == "max":
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    idx = input._data
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        at = int(np.flatnonzero((idx < 0) | (idx >= n))[0])
        if mode == "max":
            raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but "
                               f"found idx to be {idx[at]}")
        raise RuntimeError(f"Index {at} of input takes value {idx[at]} which is not in the "
                           f"valid range [0, {n})")
    B = len(offs)
    D = weight.shape[1]
    if sparse:                          # the rows' gradient as a sparse COO tensor
        from ember._ops.sparse import embedding_sparse_grad
        emb = embedding_sparse_grad(weight, input, -1 if padding_idx is None else padding_idx)
    else:
        emb = ember.index_select(weight, 0, input)
    if per_sample_weights is not None:
        emb = emb * per_sample_weights.unsqueeze(1)
    if fixed is not None and padding_idx is None and fixed > 0:
        e3 = emb.reshape(B, fixed, D)
        if mode == "sum":
            return e3.sum(1)
        if mode == "mean":
            return e3.mean(1)
        return e3.amax(1)
    total = idx.shape[0]
    bag = np.zeros(total, dtype=np.int64)
    if B:
        starts = np.clip(offs, 0, total)
        np.add.at(bag, starts[1:][starts[1:] < total], 1)
        bag = np.cumsum(bag)
        first = starts[0]
        valid = np.arange(total) >= first
    else:
        valid = np.zeros(total, dtype=bool)
    if padding_idx is not None:
        valid &= idx != padding_idx
    keep = np.nonzero(valid)[0]
    bag_k = ember.from_numpy(bag[keep])
    emb_k = emb if len(keep) == total else \
        ember.index_select(emb, 0, ember.from_numpy(keep.astype(np.int64)))
    zeros = ember.zeros(B, D, dtype=weight.dtype)
    if mode in ("sum", "mean"):
        out = zeros.index_add(0, bag_k, emb_k)
        if mode == "mean":
            counts = np.bincount(bag[keep], minlength=B).astype(weight._data.dtype)
            counts = np.maximum(counts, 1)
            out = out / ember.from_numpy(counts[:, None])
        return out
    return zeros.scatter_reduce(0, bag_k.unsqueeze(1).expand(len(keep), D), emb_k, "amax",
                                include_self=False)


# ------------------------------------------------------------------------- dropout
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(shape, p, like):
    """Bernoulli(1-p) mask, already scaled by 1/(1-p), in ``like``'s dtype: torch's recipe
    (``empty_like(x).bernoulli_(1 - p).div_(1 - p)``), so a seeded run drops the same
    elements as torch's (its non-MKL CPU path; one double uniform per element)."""
    if p == 1.0:
        return ember.zeros(shape, dtype=like.dtype)
    noise = ember.empty_like(like) if tuple(shape) == tuple(like.shape) else \
        ember.empty(shape, dtype=like.dtype)           # (empty_like keeps vmap's batch)
    return noise.bernoulli_(1.0 - p).div_(1.0 - p)


@torch_op_range("aten::dropout")
def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    mask = _keep_mask(input.shape, p, input)
    return input.mul_(mask) if inplace else input * mask


def _feature_dropout(input, p, inplace, batched=True):
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    mask = _keep_mask(shape, p, input)
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    if not training or p == 0.0:
        return input
    is_batched = inp_dim == 3
    if not is_batched:
        x = input.unsqueeze(0)
        out = _feature_dropout(x, p, inplace)
        return input if inplace else out.squeeze(0)
    return _feature_dropout(input, p, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warn_msg = (f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is "
                    "deprecated and will result in an error in a future release. To retain the "
                    "behavior and silence this warning, please use dropout instead. Note that "
                    "dropout2d exists to provide channel-wise dropout on inputs with 2 spatial "
                    "dimensions, a channel dimension, and an optional batch dimension (i.e. "
                    "3D or 4D inputs).")
        warnings.warn(warn_msg, stacklevel=2)
    if inp_dim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", stacklevel=2)
    if not training or p == 0.0:
        return input
    if inp_dim < 2:
        return dropout(input, p, training, inplace)
    return _feature_dropout(input, p, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (4, 5):
        warn_msg = (f"dropout3d: Received a {inp_dim}-D input to dropout3d, which is "
                    "deprecated and will result in an error in a future release. To retain the "
                    "behavior and silence this warning, please use dropout instead. Note that "
                    "dropout3d exists to provide channel-wise dropout on inputs with 3 spatial "
                    "dimensions, a channel dimension, and an optional batch dimension (i.e. "
                    "4D or 5D inputs).")
        warnings.warn(warn_msg, stacklevel=2)
    if not training or p == 0.0:
        return input
    is_batched = inp_dim in (5, 3)
    if not is_batched:
        x = input.unsqueeze(0)
        out = _feature_dropout(x, p, inplace)
        return input if inplace else out.squeeze(0)
    return _feature_dropout(input, p, inplace)


_SELU_ALPHA_SCALE = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, feature):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    else:
        shape = tuple(input.shape)
    noise = ember.empty(shape, dtype=input.dtype).bernoulli_(1 - p)    # torch's stream
    alpha = _SELU_ALPHA_SCALE
    # affine correction a * x + b restoring zero mean and unit variance (same float ops)
    a = 1.0 / math.sqrt((1 - p) * (1 + alpha * alpha * p))
    b = alpha * a * p + (noise - 1) * (alpha * a)
    noise = noise * a
    if inplace:
        return input.mul_(noise).add_(b)
    return input * noise + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, True)


def _embedding_batched(input, weight, padding_idx, scale_grad_by_freq):
    """``embedding`` under vmap: a batched wrapper holds no index data to scale gradients
    with, so the padding row's zero gradient and the per-frequency scale are built from ops
    (forward values unchanged, gradients scaled as torch's backward scales them)."""
    out = _embedding_op(weight, input)
    scale = None
    if scale_grad_by_freq:
        flat = input.reshape(-1)
        counts = (flat.unsqueeze(-1) == ember.arange(weight.shape[0])).sum(0)
        scale = (1.0 / counts[input]).to(out.dtype)
    if padding_idx is not None:
        keep = (input != padding_idx).to(out.dtype)
        scale = keep if scale is None else scale * keep
    if scale is None:
        return out
    frozen = out.detach()
    return frozen + (out - frozen) * scale.unsqueeze(-1)


# ------------------------------------------------------------------------- one_hot
def _under_vmap(tensor):
    from ember._state import state
    if not state.modes:
        return False
    from ember.func._vmap import is_batched
    return is_batched(tensor)


def one_hot(tensor, num_classes=-1):
    if tensor.dtype != ember.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if _under_vmap(tensor):         # a batched wrapper holds no data to infer or check from
        if num_classes == -1:
            raise RuntimeError("When vmap-ing torch.nn.functional.one_hot, please provide an "
                               "explicit positive num_classes argument.")
        return (tensor.unsqueeze(-1) == ember.arange(num_classes)).to(ember.int64)
    a = tensor._data
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1
    if a.size:
        if a.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if a.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = ember.arange(num_classes, dtype=ember.int64)
    return (tensor.unsqueeze(-1) == classes).to(ember.int64)
