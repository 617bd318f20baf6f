"""torch.ao.nn.quantizable LSTM: an LSTM written as modules eager quantization can observe.

Each cell step is ``igates(x) + hgates(h)`` (two Linears and a FloatFunctional add), the
four gate activations as modules, and the cell/hidden updates as FloatFunctional mul/add,
so ``prepare`` puts an observer after every one of them and ``convert`` turns the Linears
and FloatFunctionals into quantized ones (``ember.ao.nn.quantized.LSTM``). The sigmoid and
tanh modules stay float modules: on quantized tensors they give the fixed output qparams.
Module names and parameter names follow torch's (``layers.0.layer_fw.cell.igates.weight``).
"""
from __future__ import annotations

import ember
from ember import nn

__all__ = ["LSTMCell", "LSTM"]


class LSTMCell(nn.Module):
    """One LSTM step over (B, input_dim) with hidden (h, c), each (B, hidden_dim)."""
    _FLOAT_MODULE = nn.LSTMCell

    def __init__(self, input_dim, hidden_dim, bias=True, device=None, dtype=None, *,
                 split_gates=False):
        super().__init__()
        if split_gates:
            raise NotImplementedError("quantizable LSTMCell: split_gates=True is not "
                                      "supported by ember")
        from ember.ao.nn.quantized.modules.functional_modules import FloatFunctional
        kw = {"device": device, "dtype": dtype}
        self.input_size, self.hidden_size, self.bias = input_dim, hidden_dim, bias
        self.split_gates = split_gates
        self.igates = nn.Linear(input_dim, 4 * hidden_dim, bias=bias, **kw)
        self.hgates = nn.Linear(hidden_dim, 4 * hidden_dim, bias=bias, **kw)
        self.gates = FloatFunctional()
        self.input_gate, self.forget_gate = nn.Sigmoid(), nn.Sigmoid()
        self.cell_gate, self.output_gate = nn.Tanh(), nn.Sigmoid()
        self.fgate_cx, self.igate_cgate = FloatFunctional(), FloatFunctional()
        self.fgate_cx_igate_cgate, self.ogate_cy = FloatFunctional(), FloatFunctional()
        self.initial_hidden_state_qparams = (1.0, 0)
        self.initial_cell_state_qparams = (1.0, 0)
        self.hidden_state_dtype = ember.quint8
        self.cell_state_dtype = ember.quint8

    def forward(self, x, hidden=None):
        """(h', c') from x (B, input_dim) and hidden (h, c), zeros when None."""
        if hidden is None or hidden[0] is None or hidden[1] is None:
            hidden = self.initialize_hidden(x.shape[0], x.is_quantized)
        hx, cx = hidden
        gates = self.gates.add(self.igates(x), self.hgates(hx))
        i, f, g, o = gates.chunk(4, 1)
        i, f = self.input_gate(i), self.forget_gate(f)
        g, o = self.cell_gate(g), self.output_gate(o)
        cy = self.fgate_cx_igate_cgate.add(self.fgate_cx.mul(f, cx), self.igate_cgate.mul(i, g))
        hy = self.ogate_cy.mul(o, ember.tanh(cy))
        return hy, cy

    def initialize_hidden(self, batch_size, is_quantized=False):
        """Zero (h, c) of shape (B, hidden); quantized with the initial qparams if asked."""
        h = ember.zeros((batch_size, self.hidden_size))
        c = ember.zeros((batch_size, self.hidden_size))
        if is_quantized:
            (hs, hz), (cs, cz) = self.initial_hidden_state_qparams, \
                self.initial_cell_state_qparams
            h = ember.quantize_per_tensor(h, hs, hz, self.hidden_state_dtype)
            c = ember.quantize_per_tensor(c, cs, cz, self.cell_state_dtype)
        return h, c

    def _get_name(self):
        return "QuantizableLSTMCell"

    @classmethod
    def from_params(cls, wi, wh, bi=None, bh=None, split_gates=False):
        """A cell holding the given input / hidden weights (4*hidden, *) and biases."""
        cell = cls(wi.shape[1], wh.shape[1], bias=bi is not None and bh is not None,
                   split_gates=split_gates)
        with ember.no_grad():
            cell.igates.weight = nn.Parameter(wi.detach().clone())
            cell.hgates.weight = nn.Parameter(wh.detach().clone())
            if cell.bias:
                cell.igates.bias = nn.Parameter(bi.detach().clone())
                cell.hgates.bias = nn.Parameter(bh.detach().clone())
        return cell

    @classmethod
    def from_float(cls, other, use_precomputed_fake_quant=False, split_gates=False):
        if type(other) is not cls._FLOAT_MODULE:
            raise AssertionError(f"expected {cls._FLOAT_MODULE}, got {type(other)}")
        if not hasattr(other, "qconfig"):
            raise AssertionError("The float module must have 'qconfig'")
        cell = cls.from_params(other.weight_ih, other.weight_hh, other.bias_ih, other.bias_hh,
                               split_gates=split_gates)
        cell.qconfig = other.qconfig
        cell.igates.qconfig = cell.hgates.qconfig = other.qconfig
        return cell


class _LSTMSingleLayer(nn.Module):
    """One direction of one layer: the cell run over the time steps of x (T, B, in)."""

    def __init__(self, input_dim, hidden_dim, bias=True, device=None, dtype=None, *,
                 split_gates=False):
        super().__init__()
        self.cell = LSTMCell(input_dim, hidden_dim, bias=bias, device=device, dtype=dtype,
                             split_gates=split_gates)

    def forward(self, x, hidden=None):
        outs = []
        for t in range(x.shape[0]):
            hidden = self.cell(x[t], hidden)
            outs.append(hidden[0])
        return ember.stack(outs, 0), hidden

    @classmethod
    def from_params(cls, *args, **kwargs):
        layer = cls(1, 1)
        layer.cell = LSTMCell.from_params(*args, **kwargs)
        return layer


class _LSTMLayer(nn.Module):
    """One layer, both directions when ``bidirectional``: output (T, B, dirs * hidden) and
    hidden (h, c), each (dirs, B, hidden) (or (B, hidden) with one direction)."""

    def __init__(self, input_dim, hidden_dim, bias=True, batch_first=False,
                 bidirectional=False, device=None, dtype=None, *, split_gates=False):
        super().__init__()
        self.batch_first, self.bidirectional = batch_first, bidirectional
        kw = dict(bias=bias, device=device, dtype=dtype, split_gates=split_gates)
        self.layer_fw = _LSTMSingleLayer(input_dim, hidden_dim, **kw)
        if bidirectional:
            self.layer_bw = _LSTMSingleLayer(input_dim, hidden_dim, **kw)

    def forward(self, x, hidden=None):
        if self.batch_first:
            x = x.transpose(0, 1)
        hf = hb = None
        if hidden is not None:
            h, c = hidden
            if self.bidirectional:
                hf, hb = (h[0], c[0]), (h[1], c[1])
            else:
                hf = (h, c)
        y, (h_fw, c_fw) = self.layer_fw(x, hf)
        if self.bidirectional:
            yb, (h_bw, c_bw) = self.layer_bw(x.flip(0), hb)
            y = ember.cat([y, yb.flip(0)], y.dim() - 1)
            h_out, c_out = ember.stack([h_fw, h_bw], 0), ember.stack([c_fw, c_bw], 0)
        else:
            h_out, c_out = h_fw, c_fw
        if self.batch_first:
            y = y.transpose(0, 1)
        return y, (h_out, c_out)

    @classmethod
    def from_float(cls, other, layer_idx=0, qconfig=None, **kwargs):
        """Layer ``layer_idx`` of the float ``nn.LSTM`` ``other`` (its weights)."""
        split = kwargs.get("split_gates", False)
        layer = cls(1, 1, bias=other.bias, batch_first=False,    # (the LSTM transposes)
                    bidirectional=other.bidirectional, split_gates=split)
        layer.qconfig = getattr(other, "qconfig", qconfig)

        def weights(sfx):
            names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            return [getattr(other, f"{n}_l{layer_idx}{sfx}", None) for n in names]
        layer.layer_fw = _LSTMSingleLayer.from_params(*weights(""), split_gates=split)
        if other.bidirectional:
            layer.layer_bw = _LSTMSingleLayer.from_params(*weights("_reverse"),
                                                          split_gates=split)
        return layer


class LSTM(nn.Module):
    """torch.ao.nn.quantizable.LSTM: ``nn.LSTM``'s interface (no ``proj_size``), built of
    observable modules; forward returns (output, (h_n, c_n))."""
    _FLOAT_MODULE = nn.LSTM

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, *,
                 split_gates=False):
        super().__init__()
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, \
            num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        self.training = False           # torch's quantizable LSTM starts in eval mode
        if dropout and num_layers > 1:
            import warnings
            warnings.warn("dropout option for quantizable LSTM is ignored. If you are "
                          "training, please, use nn.LSTM version followed by `prepare` step.")
        kw = dict(bias=bias, batch_first=False, bidirectional=bidirectional, device=device,
                  dtype=dtype, split_gates=split_gates)
        dirs = 2 if bidirectional else 1
        self.layers = nn.ModuleList(
            [_LSTMLayer(input_size if i == 0 else hidden_size * dirs, hidden_size, **kw)
             for i in range(num_layers)])

    def _get_name(self):
        return "QuantizableLSTM"

    def forward(self, x, hidden=None):
        if self.batch_first:
            x = x.transpose(0, 1)
        dirs = 2 if self.bidirectional else 1
        per_layer = [None] * self.num_layers
        if hidden is not None:
            h, c = hidden
            h = h.reshape(self.num_layers, dirs, *h.shape[-2:])
            c = c.reshape(self.num_layers, dirs, *c.shape[-2:])
            per_layer = [(h[i], c[i]) if self.bidirectional else (h[i, 0], c[i, 0])
                         for i in range(self.num_layers)]
        hs, cs = [], []
        for layer, hid in zip(self.layers, per_layer):
            x, (h_i, c_i) = layer(x, hid)
            hs.append(h_i)
            cs.append(c_i)
        h_n, c_n = ember.stack(hs, 0), ember.stack(cs, 0)
        h_n = h_n.reshape(-1, *h_n.shape[-2:])
        c_n = c_n.reshape(-1, *c_n.shape[-2:])
        if self.batch_first:
            x = x.transpose(0, 1)
        return x, (h_n, c_n)

    @classmethod
    def from_float(cls, other, qconfig=None, split_gates=False):
        """The observed LSTM for float ``other`` (an nn.LSTM with a ``qconfig``): its weights
        in cells, observers attached by ``prepare``."""
        if not isinstance(other, cls._FLOAT_MODULE):
            raise AssertionError(f"expected {cls._FLOAT_MODULE}, got {type(other)}")
        if not (hasattr(other, "qconfig") or qconfig):
            raise AssertionError("The float module must have 'qconfig'")
        if getattr(other, "proj_size", 0):
            raise NotImplementedError("quantizable LSTM: proj_size is not supported")
        observed = cls(other.input_size, other.hidden_size, other.num_layers, other.bias,
                       other.batch_first, other.dropout, other.bidirectional,
                       split_gates=split_gates)
        observed.qconfig = getattr(other, "qconfig", qconfig)
        for i in range(other.num_layers):
            observed.layers[i] = _LSTMLayer.from_float(other, i, qconfig,
                                                       split_gates=split_gates)
        if other.training:
            observed.train()
            observed = ember.ao.quantization.prepare_qat(observed, inplace=True)
        else:
            observed.eval()
            observed = ember.ao.quantization.prepare(observed, inplace=True)
        return observed

    @classmethod
    def from_observed(cls, other):
        raise NotImplementedError("It looks like you are trying to convert a non-quantizable "
                                  "LSTM module. Please, see the examples on quantizable LSTMs.")
