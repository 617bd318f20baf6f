"""Quantized tensors in torch's checkpoint format (``ember.save`` / ``ember.load``).

What torch 2.13 writes into ``data.pkl`` for a quantized tensor (read with ``pickletools``)::

    torch._utils._rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params,
                                  requires_grad=False, backward_hooks=OrderedDict())

- ``storage`` is the persistent id ``('storage', torch.QUInt8Storage, key, 'cpu', numel)``
  (``QInt8Storage``, ``QInt32Storage``, ``QUInt4x2Storage``); its record holds the integers
  as they lie in memory. quint4x2 holds two values a byte (even element in the low nibble),
  so its ``numel`` counts bytes while ``size``/``stride`` count elements.
- ``quantizer_params`` is ``(torch.per_tensor_affine, scale, zero_point)`` per tensor and
  ``(torch.per_channel_affine, scales, zero_points, axis)`` per channel, the scales and zero
  points being ordinary tensors (float64 and int64). ``per_channel_affine_float_qparams`` is
  written with the scheme ``torch.per_channel_affine`` and float32 scales and zero points;
  the float zero points tell the reader which scheme it was.
"""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import quantized as K


def quantizer_params(t, make_tensor, float_qparams_scheme=False):
    """The ``quantizer_params`` tuple torch writes for the quantized tensor ``t``
    (``make_tensor(array)`` wraps the per-channel parameters as tensors). TorchScript
    archives name ``per_channel_affine_float_qparams`` (``float_qparams_scheme``); torch.save
    writes ``per_channel_affine`` for it."""
    from ember._ops.quantized import qparams
    qp = qparams(t)
    scheme = qp.qscheme
    if not qp.per_channel:
        if scheme is not _dtype.per_tensor_affine:
            raise NotImplementedError(f"ember.save: quantized tensors with qscheme {scheme} "
                                      f"cannot be serialized")
        return (scheme, float(qp.scale), int(qp.zero_point))
    if scheme is _dtype.per_channel_affine_float_qparams:
        scales = np.asarray(qp.scale, np.float32)
        zero_points = np.asarray(qp.zero_point, np.float32)
    elif scheme is _dtype.per_channel_affine:
        scales = np.asarray(qp.scale, np.float64)
        zero_points = np.asarray(qp.zero_point, np.int64)
    else:
        raise NotImplementedError(f"ember.save: quantized tensors with qscheme {scheme} cannot "
                                  f"be serialized")
    if float_qparams_scheme:
        scheme = qp.qscheme
    else:
        scheme = _dtype.per_channel_affine
    return (scheme, make_tensor(scales.copy()),
            make_tensor(zero_points.copy()), int(qp.axis))


def packed_4bit(t):
    """The bytes torch stores for a quint4x2 tensor (values of ``t`` in row-major order)."""
    return K.pack_4bit(np.ascontiguousarray(K.ints(t._data)))


# ------------------------------------------------------------------ reading

def _as_array(v):
    data = getattr(v, "_data", v)
    return np.asarray(data)


def rebuild_qtensor(data, qdtype, storage_offset, size, stride, params):
    """A quantized tensor from the storage bytes ``data`` (uint8 array) of dtype ``qdtype``,
    and torch's ``quantizer_params``."""
    from ember._ops.quantized import QParams, from_ints
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    numel = int(np.prod(size, dtype=np.int64)) if size else 1
    storage = _dtype.QSTORAGE[qdtype]
    if qdtype is _dtype.quint4x2:
        flat = K.unpack_4bit(data, storage_offset + numel)[storage_offset:]
        ints = flat.reshape(size)
    else:
        flat = data[:data.shape[0] - data.shape[0] % storage.itemsize].view(storage)
        item = storage.itemsize
        if numel == 0:
            ints = np.zeros(size, storage)
        else:
            ints = np.lib.stride_tricks.as_strided(
                flat[storage_offset:], size, tuple(s * item for s in stride), writeable=False)
        ints = np.ascontiguousarray(ints).copy()
    scheme = params[0]
    if scheme is _dtype.per_tensor_affine:
        qp = QParams(scheme, float(params[1]), int(params[2]))
    elif scheme in (_dtype.per_channel_affine, _dtype.per_channel_affine_float_qparams):
        scales = _as_array(params[1]).astype(np.float64)
        zps = _as_array(params[2])
        if zps.dtype.kind == "f":
            qp = QParams(_dtype.per_channel_affine_float_qparams, scales,
                         zps.astype(np.float64), int(params[3]))
        else:
            qp = QParams(_dtype.per_channel_affine, scales, zps.astype(np.int64),
                         int(params[3]))
    else:
        raise RuntimeError(f"Can't deserialize quantized tensor with qscheme {scheme}")
    return from_ints(ints, qdtype, qp)


# ------------------------------------------------------------------ packed parameters
#
# torch's packed parameters are TorchBind objects (``torch.classes.quantized.*``). A
# TorchScript archive pickles one as ``GLOBAL __torch__.torch.classes.quantized.<Class>``,
# ``NEWOBJ``, then ``BUILD`` with its state; ``torch.save`` writes ``torch.ScriptObject`` and
# ``BUILD`` with ``(state, '__torch__.torch.classes.quantized.<Class>')``. The states:
#
#   LinearPackedParamsBase        (weight, bias)
#   Conv{2,3}dPackedParamsBase    ('2', [config, weight], [bias])  with ``config`` an int16
#       tensor [spatial dims, *stride, *padding, *dilation, *output_padding, groups,
#       transpose] (a 1-d convolution is a 2-d one of height 1)
#   EmbeddingPackedParamsBase     (1, [qweight], [], [bit_rate])
#
# and a dynamic LSTM/GRU layer's ``__torch__.torch.classes.rnn.CellParamsBase``:
#   ('quantized_dynamic', [b_ih, b_hh], [], [reduce_range], [packed w_ih, packed w_hh])
#   ('quantized_fp16', [], [], [], [packed w_ih, packed w_hh])     (packed: Linear's above)

TORCHBIND_PREFIX = "__torch__.torch.classes.quantized."
CELL_PARAMS_NAME = "__torch__.torch.classes.rnn.CellParamsBase"


def _packed_classes():
    from ember._ops.quantized_conv import ConvPackedParamsBase
    from ember._ops.quantized_linear import LinearPackedParamsBase
    from ember._ops.quantized_embedding import EmbeddingPackedParamsBase
    from ember._ops.quantized_rnn import CellParams
    return LinearPackedParamsBase, ConvPackedParamsBase, EmbeddingPackedParamsBase, CellParams


def torchbind_name(obj):
    """The TorchScript class name of a packed-parameters object, or None."""
    try:
        linear, conv, embedding, cell = _packed_classes()
    except ImportError:
        return None
    if isinstance(obj, linear):
        return TORCHBIND_PREFIX + "LinearPackedParamsBase"
    if isinstance(obj, conv):
        return TORCHBIND_PREFIX + f"Conv{len(obj.stride())}dPackedParamsBase"
    if isinstance(obj, embedding):
        return TORCHBIND_PREFIX + "EmbeddingPackedParamsBase"
    if isinstance(obj, cell):
        return CELL_PARAMS_NAME
    return None


def torchbind_state(obj):
    """The state torch pickles for the packed-parameters object ``obj``."""
    from ember._tensor import _make
    linear, conv, embedding, cell = _packed_classes()
    if isinstance(obj, linear):
        return tuple(obj.unpack())
    if isinstance(obj, embedding):
        return obj.__getstate__()[0]
    if isinstance(obj, cell):
        return obj.__getstate__()
    weight, bias = obj.unpack()
    config = [len(obj.stride()), *obj.stride(), *obj.padding(), *obj.dilation(),
              *obj.output_padding(), obj.groups(), int(obj.transpose())]
    return ("2", [_make(np.array(config, np.int16)), weight], [bias])


def from_torchbind(qualname, state):
    """A packed-parameters object from its TorchScript class name and pickled state."""
    linear, conv, embedding, cell = _packed_classes()
    if qualname == CELL_PARAMS_NAME:
        kind, tensors, doubles, longs, packed = state
        if kind not in ("quantized_dynamic", "quantized_fp16"):
            raise NotImplementedError(f"ember.load: {qualname} of kind {kind!r}")
        obj = cell.__new__(cell)
        obj.__setstate__((kind, list(tensors), list(doubles), list(longs), list(packed)))
        return obj
    name = qualname[len(TORCHBIND_PREFIX):] if qualname.startswith(TORCHBIND_PREFIX) else None
    if name == "LinearPackedParamsBase":
        obj = linear.__new__(linear)
        obj.__setstate__((tuple(state), qualname))
        return obj
    if name == "EmbeddingPackedParamsBase":
        version, tensors, _, _ = state
        if int(version) != 1:
            raise NotImplementedError(f"ember.load: {name} state version {version}")
        return embedding(tensors[0])
    if name in ("Conv2dPackedParamsBase", "Conv3dPackedParamsBase"):
        version, tensors, optional = state
        if str(version) != "2":
            raise NotImplementedError(f"ember.load: {name} state version {version}")
        config = [int(v) for v in _as_array(tensors[0]).reshape(-1)]
        n = config[0]
        fields = [config[1 + k * n:1 + (k + 1) * n] for k in range(4)]
        groups, transpose = config[1 + 4 * n], bool(config[2 + 4 * n])
        stride, padding, dilation, output_padding = fields
        return conv(tensors[1], optional[0] if optional else None, stride, padding,
                    output_padding, dilation, groups, transpose)
    raise NotImplementedError(f"ember.load: the TorchScript class {qualname} cannot be "
                              f"loaded")


class ScriptObjectShell:
    """``torch.ScriptObject`` while ``ember.load`` reads a ``torch.save`` file: created empty
    (``NEWOBJ``), then ``BUILD`` hands it ``(state, qualified class name)`` and it becomes the
    ember packed-parameters object of that class."""

    def __setstate__(self, state):
        inner, qualname = state
        obj = from_torchbind(qualname, inner)
        self.__class__ = type(obj)
        self.__dict__.update(obj.__dict__)


def packed_classes():
    """The packed-parameters classes ember has (none while their module is absent)."""
    try:
        return _packed_classes()
    except ImportError:
        return ()
