"""Dynamically quantized recurrent modules (torch.ao.nn.quantized.dynamic LSTM, GRU and the
cells): float in, float out; the weights are int8 (per tensor or per channel) or float16,
the inputs and hidden states are quantized on the fly at each matrix product.

``LSTM``/``GRU`` keep one :class:`PackedParameter` per layer and direction (their state_dict:
``_all_weight_values.<k>.param``); the cells keep ``_packed_weight_ih``/``_packed_weight_hh``.
The maths is ``aten::quantized_lstm``/``quantized_gru`` and the ``quantized::*_cell_dynamic``
records (ember/_ops/quantized_rnn.py, where torch's rules are written down)."""
from __future__ import annotations

import numbers
import warnings
from typing import Optional, Tuple

import ember
from ember import Tensor, _dtype
from ember.nn.modules.module import Module, _addindent
from ember.nn.modules.container import ModuleList
from ember.nn.utils.rnn import PackedSequence
from ember.ops import quantized as Q

__all__ = ["PackedParameter", "RNNBase", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell",
           "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3}
_WEIGHT_DTYPES = (ember.qint8, ember.float16)


def _q():
    return ember.ops.quantized


def _check_dtype(dtype):
    if dtype not in _WEIGHT_DTYPES:
        raise NotImplementedError(f"dynamically quantized recurrent modules hold qint8 or "
                                  f"float16 weights, not {dtype}")


def _pack(weight, bias, dtype):
    """A float weight (already quantized for qint8) and bias -> linear packed params."""
    if dtype == ember.qint8:
        return _q().linear_prepack(weight, bias)
    return _q().linear_prepack_fp16(weight.float(), bias)


def _observe_weight(qconfig, weight):
    """Quantize one float weight as ``qconfig.weight`` asks: (tensor, dtype); float16 weights
    come back as they are."""
    observer = qconfig.weight()
    dtype = observer.dtype
    _check_dtype(dtype)
    if dtype == ember.float16:
        return weight.detach().float(), dtype
    observer(weight)
    scale, zero_point = observer.calculate_qparams()
    if observer.qscheme in (ember.per_channel_affine, ember.per_channel_symmetric):
        q = ember.quantize_per_channel(weight.detach().float(), scale.double(),
                                       zero_point.long(), observer.ch_axis, ember.qint8)
    else:
        q = ember.quantize_per_tensor(weight.detach().float(), float(scale), int(zero_point),
                                      ember.qint8)
    return q, dtype


def _random_weight(shape, dtype):
    """torch's placeholder weights: randn, quantized with scale 0.1 for qint8."""
    w = ember.randn(shape)
    if dtype == ember.qint8:
        return ember.quantize_per_tensor(w, 0.1, 0, ember.qint8)
    return w


def _check_float_input(input):
    if input.dtype is not ember.float32:
        raise RuntimeError(f"expected scalar type Float but found "
                           f"{_dtype._SCALAR_TYPE_NAMES[input.dtype.name]}")


class _PackedState(Module):
    """A module whose attributes named in ``_PACKED`` (packed, non-tensor params) are saved
    and loaded as ``<prefix><name>`` state_dict entries."""
    _PACKED = ()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination.update((prefix + name, getattr(self, name)) for name in self._PACKED)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        mine = {prefix + name: name for name in self._PACKED}
        for key, name in mine.items():
            if key in state_dict:
                setattr(self, name, state_dict[key])
            elif strict:
                missing_keys.append(key)
        rest = {k: v for k, v in state_dict.items() if k not in mine}
        super()._load_from_state_dict(rest, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


def _unpacked(part):
    """``get_weight``/``get_bias``: one half of ``self._weight_bias()``."""
    def getter(self):
        return self._weight_bias()[part]
    getter.__name__ = "get_" + part
    return getter


class PackedParameter(_PackedState):
    """Holds one layer and direction's cell params (``param``) so that they appear in the
    state_dict as ``<prefix>param``."""
    _PACKED = ("param",)

    def __init__(self, param):
        super().__init__()
        self.param = param


# ------------------------------------------------------------------ LSTM, GRU
class RNNBase(Module):
    """The stacked layers' settings, checks, weights and conversion; LSTM and GRU add their
    forward. ``dtype``: the weights' (``ember.qint8`` or ``ember.float16``)."""
    _FLOAT_MODULE = ember.nn.RNNBase
    _REPR_NAME = "DynamicQuantizedRNN"

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=ember.qint8):
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        if (isinstance(dropout, bool) or not isinstance(dropout, numbers.Number)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        _check_dtype(dtype)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.dtype = dtype
        self.version = 2
        self.training = False
        gates = _GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        params = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else hidden_size * dirs
            for _ in range(dirs):
                w_ih = _random_weight((gates, layer_in), dtype)
                w_hh = _random_weight((gates, hidden_size), dtype)
                b_ih, b_hh = ember.randn(gates), ember.randn(gates)   # bias=False too
                params.append(self._cell_params(w_ih, w_hh, b_ih, b_hh, dtype))
        self._all_weight_values = ModuleList([PackedParameter(p) for p in params])

    @staticmethod
    def _cell_params(w_ih, w_hh, b_ih, b_hh, dtype):
        p_ih, p_hh = _pack(w_ih, b_ih, dtype), _pack(w_hh, b_hh, dtype)
        if dtype == ember.qint8:
            return _q().make_quantized_cell_params_dynamic(p_ih, p_hh, b_ih, b_hh, True)
        return _q().make_quantized_cell_params_fp16(p_ih, p_hh)

    def _get_name(self):
        return self._REPR_NAME

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def __repr__(self):
        """As Module's, without the packed weights' containers (as torch prints it)."""
        extra = self.extra_repr()
        lines = [f"({name}): {_addindent(repr(m), 2)}" for name, m in self._modules.items()
                 if not isinstance(m, (PackedParameter, ModuleList))]
        if not lines:
            return f"{self._get_name()}({extra})"
        body = "\n  ".join(extra.split("\n") + lines)
        return f"{self._get_name()}(\n  {body}\n)"

    # ---- checks (torch's messages); these and the forwards are scriptable
    def check_input(self, input: Tensor, batch_sizes: Optional[Tensor]):
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError("input must have {} dimensions, got {}".format(
                expected, input.dim()))
        if self.input_size != input.size(-1):
            raise RuntimeError("input.size(-1) must be equal to input_size. Expected {}, "
                               "got {}".format(self.input_size, input.size(-1)))

    def get_expected_hidden_size(self, input: Tensor,
                                 batch_sizes: Optional[Tensor]) -> Tuple[int, int, int]:
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * (2 if self.bidirectional else 1), batch, self.hidden_size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: Tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}"):
        if list(hx.size()) != list(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Optional[Tensor]):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Optional[Tensor]) -> Tensor:
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # ---- weights
    def _names(self, kind):
        dirs = 2 if self.bidirectional else 1
        return [f"{kind}_l{layer}{'_reverse' if d else ''}"
                for layer in range(self.num_layers) for d in range(dirs)]

    def _weight_bias(self):
        """{'weight': {'weight_ih_l0': ..., 'weight_hh_l0': ...}, 'bias': {'bias_ih_l0': ...}}
        as the packed params hold them (qint8 tensors, or float32 holding float16 values)."""
        weights, biases = {}, {}
        for sfx, packed in zip(self._names(""), self._all_weight_values):
            (w_ih, b_ih), (w_hh, b_hh) = packed.param.unpack()
            weights["weight_ih" + sfx], weights["weight_hh" + sfx] = w_ih, w_hh
            biases["bias_ih" + sfx], biases["bias_hh" + sfx] = b_ih, b_hh
        return {"weight": weights, "bias": biases}

    get_weight, get_bias = _unpacked("weight"), _unpacked("bias")

    def set_weight_bias(self, weight_bias_dict):
        """Repack from a dict laid out as :meth:`_weight_bias` returns it."""
        weights, biases = weight_bias_dict["weight"], weight_bias_dict["bias"]
        params = []
        for sfx in self._names(""):
            params.append(self._cell_params(
                weights["weight_ih" + sfx], weights["weight_hh" + sfx],
                biases.get("bias_ih" + sfx), biases.get("bias_hh" + sfx), self.dtype))
        self._all_weight_values = ModuleList([PackedParameter(p) for p in params])

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A float ``nn.LSTM``/``nn.GRU`` with ``mod.qconfig`` (``default_dynamic_qconfig``,
        ``per_channel_dynamic_qconfig``, ``float16_dynamic_qconfig``...) -> its dynamic
        quantized twin: each weight observed by a fresh ``qconfig.weight()``."""
        if type(mod) not in (ember.nn.LSTM, ember.nn.GRU):
            raise AssertionError("nn.quantized.dynamic.RNNBase.from_float only works for "
                                 "nn.LSTM and nn.GRU")
        if getattr(mod, "qconfig", None) is None:
            raise AssertionError("Input float module must have qconfig defined")
        if mod.proj_size:
            raise NotImplementedError(f"dynamic quantization of an LSTM with projections "
                                      f"(proj_size={mod.proj_size}) is not supported")
        if not mod.bias:
            raise AssertionError("mod.bias must be True")
        target = LSTM if mod.mode == "LSTM" else GRU
        dtype = mod.qconfig.weight().dtype
        _check_dtype(dtype)
        qmod = target(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias,
                      mod.batch_first, mod.dropout, mod.bidirectional, dtype=dtype)
        weights, biases = {}, {}
        for sfx in qmod._names(""):
            for kind in ("ih", "hh"):
                weights[f"weight_{kind}{sfx}"], _ = _observe_weight(
                    mod.qconfig, getattr(mod, f"weight_{kind}{sfx}"))
                biases[f"bias_{kind}{sfx}"] = getattr(mod, f"bias_{kind}{sfx}").detach()
        qmod.set_weight_bias({"weight": weights, "bias": biases})
        return qmod

    def _zero_hidden(self, input: Tensor, batch: int) -> Tensor:
        dirs = 2 if self.bidirectional else 1
        return ember.zeros([self.num_layers * dirs, batch, self.hidden_size],
                           dtype=input.dtype)

    def _check_packed(self, input):
        if not ember.jit.is_scripting() and not isinstance(input, PackedSequence):
            raise TypeError(f"forward_packed expects a PackedSequence, got "
                            f"{type(input).__name__}")

    def _padded_batch(self, input: Tensor) -> int:
        return input.size(0) if self.batch_first else input.size(1)


class LSTM(RNNBase):
    """Dynamically quantized ``nn.LSTM`` (no projections). forward(input, (h_0, c_0)) ->
    (output, (h_n, c_n)), shapes as ``nn.LSTM``'s; PackedSequence input gives packed output."""
    _FLOAT_MODULE = ember.nn.LSTM

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    _REPR_NAME = "DynamicQuantizedLSTM"

    def check_forward_args(self, input: Tensor, hidden: Tuple[Tensor, Tensor],
                           batch_sizes: Optional[Tensor]):
        self.check_input(input, batch_sizes)
        expected = self.get_expected_hidden_size(input, batch_sizes)
        self.check_hidden_size(hidden[0], expected, "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], expected, "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: Tuple[Tensor, Tensor],
                       permutation: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input, hx: Optional[Tuple[Tensor, Tensor]] = None):
        """A tensor input runs :meth:`forward_tensor`, a PackedSequence
        :meth:`forward_packed` (in scripted code a tensor input only, as torch's)."""
        if isinstance(input, PackedSequence):
            return self.forward_packed(input, hx)
        return self.forward_tensor(input, hx)

    @ember.jit.export
    def forward_tensor(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None
                       ) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        """forward of a padded (T, B, in) / (B, T, in) input."""
        return self._forward_impl(input, hx, None, self._padded_batch(input), None)

    def forward_packed(self, input, hx=None):
        """forward of a PackedSequence input (output packed likewise)."""
        self._check_packed(input)
        data, batch_sizes, sorted_idx, unsorted_idx = input
        out, hidden = self._forward_impl(data, hx, batch_sizes, int(batch_sizes[0]),
                                         sorted_idx)
        return (PackedSequence(out, batch_sizes, sorted_idx, unsorted_idx),
                self.permute_hidden(hidden, unsorted_idx))

    def _forward_impl(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]],
                      batch_sizes: Optional[Tensor], max_batch_size: int,
                      sorted_indices: Optional[Tensor]) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        if hx is None:
            zeros = self._zero_hidden(input, max_batch_size)
            hx = (zeros, zeros)
        else:
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)
        if not ember.jit.is_scripting():
            _check_float_input(input)
        params = [m.param for m in self._all_weight_values]
        if batch_sizes is None:
            out, h, c = ember.quantized_lstm(
                input, [hx[0], hx[1]], params, self.bias, self.num_layers, self.dropout,
                self.training, self.bidirectional, self.batch_first, dtype=self.dtype,
                use_dynamic=True)
        else:
            out, h, c = ember.quantized_lstm(
                input, batch_sizes, [hx[0], hx[1]], params, self.bias, self.num_layers,
                self.dropout, self.training, self.bidirectional, dtype=self.dtype,
                use_dynamic=True)
        return out, (h, c)


class GRU(RNNBase):
    """Dynamically quantized ``nn.GRU``. forward(input, h_0) -> (output, h_n)."""
    _FLOAT_MODULE = ember.nn.GRU

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)

    _REPR_NAME = "DynamicQuantizedGRU"

    def forward(self, input, hx: Optional[Tensor] = None):
        """A tensor input runs :meth:`forward_tensor`, a PackedSequence
        :meth:`forward_packed` (in scripted code a tensor input only, as torch's)."""
        if isinstance(input, PackedSequence):
            return self.forward_packed(input, hx)
        return self.forward_tensor(input, hx)

    @ember.jit.export
    def forward_tensor(self, input: Tensor, hx: Optional[Tensor] = None
                       ) -> Tuple[Tensor, Tensor]:
        """forward of a padded (T, B, in) / (B, T, in) input."""
        return self._forward_impl(input, hx, None, self._padded_batch(input), None)

    def forward_packed(self, input, hx=None):
        """forward of a PackedSequence input (output packed likewise)."""
        self._check_packed(input)
        data, batch_sizes, sorted_idx, unsorted_idx = input
        out, h = self._forward_impl(data, hx, batch_sizes, int(batch_sizes[0]), sorted_idx)
        return (PackedSequence(out, batch_sizes, sorted_idx, unsorted_idx),
                self.permute_hidden(h, unsorted_idx))

    def _forward_impl(self, input: Tensor, hx: Optional[Tensor],
                      batch_sizes: Optional[Tensor], max_batch_size: int,
                      sorted_indices: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        if hx is None:
            hx = self._zero_hidden(input, max_batch_size)
        else:
            hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)
        if not ember.jit.is_scripting():
            _check_float_input(input)
        params = [m.param for m in self._all_weight_values]
        if batch_sizes is None:
            return ember.quantized_gru(input, hx, params, self.bias, self.num_layers,
                                       self.dropout, self.training, self.bidirectional,
                                       self.batch_first)
        return ember.quantized_gru(input, batch_sizes, hx, params, self.bias, self.num_layers,
                                   self.dropout, self.training, self.bidirectional)


# ------------------------------------------------------------------ cells
class RNNCellBase(_PackedState):
    """One dynamically quantized step: packed ``_packed_weight_ih`` (G*H, in) and
    ``_packed_weight_hh`` (G*H, H) (the biases inside them; ``bias_ih``/``bias_hh`` kept as
    plain tensors too), ``weight_dtype`` ``ember.qint8`` or ``ember.float16``."""
    _FLOAT_MODULE = (ember.nn.LSTMCell, ember.nn.GRUCell, ember.nn.RNNCell)
    _PACKED = ("_packed_weight_ih", "_packed_weight_hh")
    _REPR_NAME = "DynamicQuantizedRNNBase"

    def __init__(self, input_size, hidden_size, bias=True, num_chunks=4, dtype=ember.qint8):
        super().__init__()
        _check_dtype(dtype)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_dtype = dtype
        rows = num_chunks * hidden_size
        self.bias_ih = ember.randn(rows) if bias else None
        self.bias_hh = ember.randn(rows) if bias else None
        self._packed_weight_ih = _pack(_random_weight((rows, input_size), dtype),
                                       self.bias_ih, dtype)
        self._packed_weight_hh = _pack(_random_weight((rows, hidden_size), dtype),
                                       self.bias_hh, dtype)

    def _get_name(self):
        return self._REPR_NAME

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.__dict__.get("nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    # ---- checks (torch's messages); scriptable, as the forwards below
    def check_forward_input(self, input: Tensor):
        if input.size(1) != self.input_size:
            raise RuntimeError("input has inconsistent input_size: got {}, expected {}".format(
                input.size(1), self.input_size))
        if not ember.jit.is_scripting():
            _check_float_input(input)

    def check_forward_hidden(self, input: Tensor, hx: Tensor, hidden_label: str = ""):
        if input.size(0) != hx.size(0):
            raise RuntimeError("Input batch size {} doesn't match hidden{} batch size {}"
                               .format(input.size(0), hidden_label, hx.size(0)))
        if hx.size(1) != self.hidden_size:
            raise RuntimeError("hidden{} has inconsistent hidden_size: got {}, expected {}"
                               .format(hidden_label, hx.size(1), self.hidden_size))

    def _zero_state(self, input: Tensor) -> Tensor:
        return ember.zeros([input.size(0), self.hidden_size], dtype=input.dtype)

    # ---- weights and state_dict
    def _weight_bias(self):
        """``{"weight": {"weight_ih", "weight_hh"}, "bias": {"bias_ih", "bias_hh"}}``,
        unpacked from the two packed parameters."""
        out = {"weight": {}, "bias": {}}
        for side in ("ih", "hh"):
            w, b = getattr(self, "_packed_weight_" + side).unpack()
            out["weight"]["weight_" + side], out["bias"]["bias_" + side] = w, b
        return out

    get_weight, get_bias = _unpacked("weight"), _unpacked("bias")

    def set_weight_bias(self, w_ih, w_hh, b_ih, b_hh):
        """Repack from float weights (G*H, in) / (G*H, H) and biases (G*H,)."""
        packed = [_pack(w, b, self.weight_dtype) for w, b in ((w_ih, b_ih), (w_hh, b_hh))]
        self._packed_weight_ih, self._packed_weight_hh = packed
        self.bias_ih, self.bias_hh = b_ih, b_hh

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """A float cell with ``mod.qconfig`` -> its dynamic quantized twin."""
        if type(mod) not in RNNCellBase._FLOAT_MODULE:
            raise AssertionError("nn.quantized.dynamic.RNNCellBase.from_float only works for "
                                 "nn.LSTMCell, nn.GRUCell and nn.RNNCell")
        if getattr(mod, "qconfig", None) is None:
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.bias:
            raise AssertionError("mod.bias must be True")
        dtype = mod.qconfig.weight().dtype
        _check_dtype(dtype)
        twin = {ember.nn.LSTMCell: LSTMCell, ember.nn.GRUCell: GRUCell,
                ember.nn.RNNCell: RNNCell}[type(mod)]
        extra = {"nonlinearity": mod.nonlinearity} if twin is RNNCell else {}
        qmod = twin(mod.input_size, mod.hidden_size, bias=mod.bias, dtype=dtype, **extra)
        weights = [_observe_weight(mod.qconfig, w)[0] for w in (mod.weight_ih, mod.weight_hh)]
        qmod.set_weight_bias(*weights, mod.bias_ih.detach(), mod.bias_hh.detach())
        return qmod


class RNNCell(RNNCellBase):
    """Dynamically quantized ``nn.RNNCell``: h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh",
                 dtype=ember.qint8):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, dtype=dtype)
        self.nonlinearity = nonlinearity

    _REPR_NAME = "DynamicQuantizedRNNCell"

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        """input (B, in), hx (B, H) (zeros when None) -> h' (B, H)."""
        self.check_forward_input(input)
        if hx is None:
            hx = self._zero_state(input)
        self.check_forward_hidden(input, hx, "")
        if self.nonlinearity == "tanh":
            return Q.quantized_rnn_tanh_cell_dynamic(input, hx, self._packed_weight_ih,
                                                     self._packed_weight_hh, self.bias_ih,
                                                     self.bias_hh)
        if self.nonlinearity == "relu":
            return Q.quantized_rnn_relu_cell_dynamic(input, hx, self._packed_weight_ih,
                                                     self._packed_weight_hh, self.bias_ih,
                                                     self.bias_hh)
        raise RuntimeError("Unknown nonlinearity: {}".format(self.nonlinearity))


class LSTMCell(RNNCellBase):
    """Dynamically quantized ``nn.LSTMCell``: forward(input, (h, c)) -> (h', c')."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, num_chunks=4, **kwargs)

    _REPR_NAME = "DynamicQuantizedLSTMCell"

    def forward(self, input: Tensor,
                hx: Optional[Tuple[Tensor, Tensor]] = None) -> Tuple[Tensor, Tensor]:
        self.check_forward_input(input)
        if hx is None:
            z = self._zero_state(input)
            hx = (z, z)
        self.check_forward_hidden(input, hx[0], "[0]")
        self.check_forward_hidden(input, hx[1], "[1]")
        return Q.quantized_lstm_cell_dynamic(input, [hx[0], hx[1]], self._packed_weight_ih,
                                             self._packed_weight_hh, self.bias_ih,
                                             self.bias_hh)


class GRUCell(RNNCellBase):
    """Dynamically quantized ``nn.GRUCell``: forward(input, h) -> h'."""

    def __init__(self, input_size, hidden_size, bias=True, dtype=ember.qint8):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, dtype=dtype)

    _REPR_NAME = "DynamicQuantizedGRUCell"

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        self.check_forward_input(input)
        if hx is None:
            hx = self._zero_state(input)
        self.check_forward_hidden(input, hx, "")
        return Q.quantized_gru_cell_dynamic(input, hx, self._packed_weight_ih,
                                            self._packed_weight_hh, self.bias_ih, self.bias_hh)
