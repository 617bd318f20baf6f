"""ember.nn.modules.rnn (torch.nn.modules.rnn): RNN, LSTM, GRU and their cells.

Ported from torch's module code; the fused ``_VF`` kernels are replaced by ``_rnn_impl``,
written in ember ops so autograd comes from its parts: per layer and direction the input
projections of the whole sequence are one ``addmm``, then a Python loop runs over time
steps only (one ``addmm`` of the hidden state plus a few elementwise ops per step).
Packed sequences run the same loop with the batch shrinking (forward direction) or
growing (reverse direction) at each step, as cuDNN/ATen do."""
import math
import numbers
import warnings
import weakref

from typing_extensions import deprecated

import ember as torch
from ember import Tensor
from ember.nn import init
from ember.nn import functional as F
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence
from ember.nn.modules.module import Module

__all__ = ['RNNBase', 'RNN', 'LSTM', 'GRU', 'RNNCellBase', 'RNNCell', 'LSTMCell', 'GRUCell']


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


@deprecated('`apply_permutation` is deprecated, please use `tensor.index_select(dim, permutation)` instead', category=FutureWarning)
def apply_permutation(tensor, permutation, dim=1):
    return _apply_permutation(tensor, permutation, dim)


# ----------------------------------------------------------------------------- step math
def _lstm_step(gates, c, w_hr_t):
    i, f, g, o = gates.chunk(4, 1)
    i = torch.sigmoid(i)
    f = torch.sigmoid(f)
    g = torch.tanh(g)
    o = torch.sigmoid(o)
    c = f * c + i * g
    h = o * torch.tanh(c)
    if w_hr_t is not None:
        h = torch.mm(h, w_hr_t)
    return h, c


def _gru_step(gi, gh, h):
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return n + z * (h - n)


def _run_direction(mode, x, bs, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, reverse):
    """One layer, one direction over time. ``x``: (N, in) time-major rows, ``bs``: batch size
    of each time step (non-increasing). Returns (output (N, out), h_n, c_n)."""
    gru = mode == 'GRU'
    lstm = mode == 'LSTM'
    if b_ih is not None:
        bias_in = b_ih if gru else b_ih + b_hh
        xw = torch.addmm(bias_in, x, w_ih.t())
    else:
        xw = torch.mm(x, w_ih.t())
    T = len(bs)
    xs = xw.split(bs, 0) if T > 1 else (xw,)
    whh_t = w_hh.t()
    w_hr_t = w_hr.t() if w_hr is not None else None
    act = torch.relu if mode == 'RNN_RELU' else torch.tanh
    varying = bs[0] != bs[-1]
    outs = [None] * T
    finished = []
    if reverse:
        order = range(T - 1, -1, -1)
        h = h0.narrow(0, 0, bs[-1]) if varying else h0
        c = (c0.narrow(0, 0, bs[-1]) if varying else c0) if lstm else None
    else:
        order = range(T)
        h, c = h0, c0
    for t in order:
        cur = bs[t]
        if varying:
            prev = h.shape[0]
            if cur < prev:                      # forward: sequences end here
                h, h_done = h.split([cur, prev - cur], 0)
                if lstm:
                    c, c_done = c.split([cur, prev - cur], 0)
                else:
                    c_done = None
                finished.append((h_done, c_done))
            elif cur > prev:                    # reverse: sequences start here
                h = torch.cat([h, h0.narrow(0, prev, cur - prev)], 0)
                if lstm:
                    c = torch.cat([c, c0.narrow(0, prev, cur - prev)], 0)
        if lstm:
            h, c = _lstm_step(torch.addmm(xs[t], h, whh_t), c, w_hr_t)
        elif gru:
            gh = torch.addmm(b_hh, h, whh_t) if b_hh is not None else torch.mm(h, whh_t)
            h = _gru_step(xs[t], gh, h)
        else:
            h = act(torch.addmm(xs[t], h, whh_t))
        outs[t] = h
    out = torch.cat(outs, 0) if T > 1 else outs[0]
    if finished:
        h = torch.cat([h] + [p[0] for p in reversed(finished)], 0)
        if lstm:
            c = torch.cat([c] + [p[1] for p in reversed(finished)], 0)
    return out, h, c


def _rnn_impl(mode, input, batch_sizes, hx, weights, has_biases, num_layers, dropout, train,
              bidirectional, batch_first):
    """torch._VF.{rnn_tanh,rnn_relu,lstm,gru} (padded when ``batch_sizes`` is None, packed
    otherwise). Returns (output, h_n) or, for LSTM, (output, h_n, c_n)."""
    D = 2 if bidirectional else 1
    lstm = mode == 'LSTM'
    h0, c0 = hx if lstm else (hx, None)
    if batch_sizes is None:
        if batch_first:
            input = input.transpose(0, 1)
        T, B = input.shape[0], input.shape[1]
        bs = [B] * T
        x = input.reshape(T * B, input.shape[2])
    else:
        bs = [int(v) for v in batch_sizes.tolist()]
        x = input
    per = len(weights) // (num_layers * D)
    has_proj = per in (3, 5)
    hn, cn = [], []
    if not bs:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            k = layer * D + d
            w = weights[k * per:(k + 1) * per]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            w_hr = w[-1] if has_proj else None
            out, h, c = _run_direction(mode, x, bs, h0[k], c0[k] if lstm else None, w[0], w[1],
                                       b_ih, b_hh, w_hr, d == 1)
            outs.append(out)
            hn.append(h)
            cn.append(c)
        x = outs[0] if D == 1 else torch.cat(outs, 1)
        if dropout and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    if batch_sizes is None:
        x = x.reshape(T, B, x.shape[-1])
        if batch_first:
            x = x.transpose(0, 1)
    h_n = torch.stack(hn, 0)
    if lstm:
        return x, h_n, torch.stack(cn, 0)
    return x, h_n


def _check_cell(input, hx, w_ih, w_hh, name="hidden"):
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")
    hs = [hx] if isinstance(hx, Tensor) else list(hx)
    for i, h in enumerate(hs):
        if input.shape[0] != h.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{i} "
                               f"batch size {h.shape[0]}")
        if h.shape[1] != w_hh.shape[1]:
            raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {w_hh.shape[1]}")


def _cell_gates(input, hx, w_ih, w_hh, b_ih, b_hh):
    gi = F.linear(input, w_ih, b_ih)
    return torch.addmm(gi, hx, w_hh.t()) if b_hh is None else \
        gi + torch.addmm(b_hh, hx, w_hh.t())


def _rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, hx, w_ih, w_hh)
    return torch.tanh(_cell_gates(input, hx, w_ih, w_hh, b_ih, b_hh))


def _rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, hx, w_ih, w_hh)
    return torch.relu(_cell_gates(input, hx, w_ih, w_hh, b_ih, b_hh))


def _lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, hx, w_ih, w_hh)
    return _lstm_step(_cell_gates(input, hx[0], w_ih, w_hh, b_ih, b_hh), hx[1], None)


def _gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell(input, hx, w_ih, w_hh)
    gi = F.linear(input, w_ih, b_ih)
    gh = F.linear(hx, w_hh, b_hh)
    return _gru_step(gi, gh, hx)


class RNNBase(Module):
    __constants__ = ['mode', 'input_size', 'hidden_size', 'num_layers', 'bias', 'batch_first', 'dropout', 'bidirectional', 'proj_size']
    __jit_unused_properties__ = ['all_weights']
    mode: str
    input_size: int
    hidden_size: int
    num_layers: int
    bias: bool
    batch_first: bool
    dropout: float
    bidirectional: bool
    proj_size: int

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int=1, bias: bool=True, batch_first: bool=False, dropout: float=0.0, bidirectional: bool=False, proj_size: int=0, device=None, dtype=None) -> None:
        factory_kwargs = {'device': device, 'dtype': dtype}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        self._flat_weight_refs: list[weakref.ReferenceType[Parameter] | None] = []
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError('dropout should be a number in range [0, 1] representing the probability of an element being zeroed')
        if dropout > 0 and num_layers == 1:
            warnings.warn(f'dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}', stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f'bias should be of type bool, got: {type(bias).__name__}')
        if not isinstance(batch_first, bool):
            raise TypeError(f'batch_first should be of type bool, got: {type(batch_first).__name__}')
        if not isinstance(input_size, int):
            raise TypeError(f'input_size should be of type int, got: {type(input_size).__name__}')
        if input_size <= 0:
            raise ValueError('input_size must be greater than zero')
        if not isinstance(hidden_size, int):
            raise TypeError(f'hidden_size should be of type int, got: {type(hidden_size).__name__}')
        if hidden_size <= 0:
            raise ValueError('hidden_size must be greater than zero')
        if num_layers <= 0:
            raise ValueError('num_layers must be greater than zero')
        if proj_size < 0:
            raise ValueError('proj_size should be a positive integer or zero to disable projections')
        if proj_size >= hidden_size:
            raise ValueError('proj_size has to be smaller than hidden_size')
        if mode == 'LSTM':
            gate_size = 4 * hidden_size
        elif mode == 'GRU':
            gate_size = 3 * hidden_size
        elif mode == 'RNN_TANH':
            gate_size = hidden_size
        elif mode == 'RNN_RELU':
            gate_size = hidden_size
        else:
            raise ValueError('Unrecognized RNN mode: ' + mode)
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                real_hidden_size = proj_size if proj_size > 0 else hidden_size
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                w_ih = Parameter(torch.empty((gate_size, layer_input_size), **factory_kwargs))
                w_hh = Parameter(torch.empty((gate_size, real_hidden_size), **factory_kwargs))
                b_ih = Parameter(torch.empty(gate_size, **factory_kwargs))
                b_hh = Parameter(torch.empty(gate_size, **factory_kwargs))
                layer_params: tuple[Tensor, ...] = ()
                if self.proj_size == 0:
                    if bias:
                        layer_params = (w_ih, w_hh, b_ih, b_hh)
                    else:
                        layer_params = (w_ih, w_hh)
                else:
                    w_hr = Parameter(torch.empty((proj_size, hidden_size), **factory_kwargs))
                    if bias:
                        layer_params = (w_ih, w_hh, b_ih, b_hh, w_hr)
                    else:
                        layer_params = (w_ih, w_hh, w_hr)
                suffix = '_reverse' if direction == 1 else ''
                param_names = ['weight_ih_l{}{}', 'weight_hh_l{}{}']
                if bias:
                    param_names += ['bias_ih_l{}{}', 'bias_hh_l{}{}']
                if self.proj_size > 0:
                    param_names += ['weight_hr_l{}{}']
                param_names = [x.format(layer, suffix) for x in param_names]
                for name, param in zip(param_names, layer_params, strict=True):
                    setattr(self, name, param)
                self._flat_weights_names.extend(param_names)
                self._all_weights.append(param_names)
        self._init_flat_weights()
        self.reset_parameters()

    def _init_flat_weights(self) -> None:
        self._flat_weights = [getattr(self, wn) if hasattr(self, wn) else None for wn in self._flat_weights_names]
        self._flat_weight_refs = [weakref.ref(w) if w is not None else None for w in self._flat_weights]
        self.flatten_parameters()

    def __setattr__(self, attr, value) -> None:
        if hasattr(self, '_flat_weights_names') and attr in self._flat_weights_names:
            idx = self._flat_weights_names.index(attr)
            self._flat_weights[idx] = value
        super().__setattr__(attr, value)

    def flatten_parameters(self) -> None:
        """No-op: there is no cuDNN weight buffer to compact on NumPy."""
        return

    def _apply(self, fn, recurse=True):
        self._flat_weight_refs = []
        ret = super()._apply(fn, recurse)
        self._init_flat_weights()
        return ret

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        if True:
            if input.dtype != self._flat_weights[0].dtype:
                raise ValueError(f'RNN input dtype ({input.dtype}) does not match weight dtype ({self._flat_weights[0].dtype}). Convert input: input.to({self._flat_weights[0].dtype}), or convert model: model.to({input.dtype})')
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f'input must have {expected_input_dim} dimensions, got {input.dim()}')
        if self.input_size != input.size(-1):
            raise RuntimeError(f'input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.size(-1)}')

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Tensor | None) :
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        if self.proj_size > 0:
            expected_hidden_size = (self.num_layers * num_directions, mini_batch, self.proj_size)
        else:
            expected_hidden_size = (self.num_layers * num_directions, mini_batch, self.hidden_size)
        return expected_hidden_size

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple[int, int, int], msg: str='Expected hidden size {}, got {}') -> None:
        if hx.size() != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def _weights_have_changed(self):
        weights_changed = False
        for ref, name in zip(self._flat_weight_refs, self._flat_weights_names, strict=True):
            weight = getattr(self, name) if hasattr(self, name) else None
            if weight is not None and ref is not None and (ref() is not weight):
                weights_changed = True
                break
        return weights_changed

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Tensor | None) -> None:
        self.check_input(input, batch_sizes)
        expected_hidden_size = self.get_expected_hidden_size(input, batch_sizes)
        self.check_hidden_size(hidden, expected_hidden_size)

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self) -> str:
        s = '{input_size}, {hidden_size}'
        if self.proj_size != 0:
            s += ', proj_size={proj_size}'
        if self.num_layers != 1:
            s += ', num_layers={num_layers}'
        if self.bias is not True:
            s += ', bias={bias}'
        if self.batch_first is not False:
            s += ', batch_first={batch_first}'
        if self.dropout != 0:
            s += ', dropout={dropout}'
        if self.bidirectional is not False:
            s += ', bidirectional={bidirectional}'
        return s.format(**self.__dict__)

    def _update_flat_weights(self) -> None:
        if True:
            if self._weights_have_changed():
                self._init_flat_weights()

    def __getstate__(self):
        self._update_flat_weights()
        state = self.__dict__.copy()
        del state['_flat_weight_refs']
        return state

    def __setstate__(self, d):
        super().__setstate__(d)
        if 'all_weights' in d:
            self._all_weights = d['all_weights']
        if 'proj_size' not in d:
            self.proj_size = 0
        if not isinstance(self._all_weights[0][0], str):
            num_layers = self.num_layers
            num_directions = 2 if self.bidirectional else 1
            self._flat_weights_names = []
            self._all_weights = []
            for layer in range(num_layers):
                for direction in range(num_directions):
                    suffix = '_reverse' if direction == 1 else ''
                    weights = ['weight_ih_l{}{}', 'weight_hh_l{}{}', 'bias_ih_l{}{}', 'bias_hh_l{}{}', 'weight_hr_l{}{}']
                    weights = [x.format(layer, suffix) for x in weights]
                    if self.bias:
                        if self.proj_size > 0:
                            self._all_weights += [weights]
                            self._flat_weights_names.extend(weights)
                        else:
                            self._all_weights += [weights[:4]]
                            self._flat_weights_names.extend(weights[:4])
                    elif self.proj_size > 0:
                        self._all_weights += [weights[:2]] + [weights[-1:]]
                        self._flat_weights_names.extend(weights[:2] + [weights[-1:]])
                    else:
                        self._all_weights += [weights[:2]]
                        self._flat_weights_names.extend(weights[:2])
            self._flat_weights = [getattr(self, wn) if hasattr(self, wn) else None for wn in self._flat_weights_names]
        self._flat_weight_refs = [weakref.ref(w) if w is not None else None for w in self._flat_weights]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, weight) for weight in weights] for weights in self._all_weights]

    def _replicate_for_data_parallel(self):
        replica = super()._replicate_for_data_parallel()
        replica._flat_weights = replica._flat_weights[:]
        replica._flat_weights_names = replica._flat_weights_names[:]
        return replica

class RNN(RNNBase):



    def __init__(self, *args, **kwargs):
        if 'proj_size' in kwargs:
            raise ValueError('proj_size argument is only supported for LSTM, not RNN or GRU')
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop('nonlinearity', 'tanh')
        if self.nonlinearity == 'tanh':
            mode = 'RNN_TANH'
        elif self.nonlinearity == 'relu':
            mode = 'RNN_RELU'
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)



    def forward(self, input, hx=None):
        self._update_flat_weights()
        num_directions = 2 if self.bidirectional else 1
        orig_input = input
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            max_batch_size = int(batch_sizes[0])
            if hx is None:
                hx = torch.zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.dtype, device=input.device)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                raise ValueError(f'RNN: Expected input to be 2D or 3D, got {input.dim()}D tensor instead')
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    if hx.dim() != 2:
                        raise RuntimeError(f'For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor')
                    hx = hx.unsqueeze(1)
            elif hx is not None and hx.dim() != 3:
                raise RuntimeError(f'For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor')
            max_batch_size = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = None
            unsorted_indices = None
            if hx is None:
                hx = torch.zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.dtype, device=input.device)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        if hx is None:
            raise AssertionError('hx must not be None')
        self.check_forward_args(input, hx, batch_sizes)
        if self.mode != 'RNN_TANH' and self.mode != 'RNN_RELU':
            raise AssertionError(f'mode must be RNN_TANH or RNN_RELU, got {self.mode}')
        if batch_sizes is None:
            if self.mode == 'RNN_TANH':
                result = _rnn_impl('RNN_TANH', input, None, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional, self.batch_first)
            else:
                result = _rnn_impl('RNN_RELU', input, None, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional, self.batch_first)
        elif self.mode == 'RNN_TANH':
            result = _rnn_impl('RNN_TANH', input, batch_sizes, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional, False)
        else:
            result = _rnn_impl('RNN_RELU', input, batch_sizes, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional, False)
        output = result[0]
        hidden = result[1]
        if isinstance(orig_input, PackedSequence):
            output_packed = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
            return (output_packed, self.permute_hidden(hidden, unsorted_indices))
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return (output, self.permute_hidden(hidden, unsorted_indices))

class LSTM(RNNBase):



    def __init__(self, *args, **kwargs):
        super().__init__('LSTM', *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Tensor | None) :
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        expected_hidden_size = (self.num_layers * num_directions, mini_batch, self.hidden_size)
        return expected_hidden_size

    def check_forward_args(self, input: Tensor, hidden: tuple[Tensor, Tensor], batch_sizes: Tensor | None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes), 'Expected hidden[0] size {}, got {}')
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes), 'Expected hidden[1] size {}, got {}')

    def permute_hidden(self, hx: tuple[Tensor, Tensor], permutation: Tensor | None) -> tuple[Tensor, Tensor]:
        if permutation is None:
            return hx
        return (_apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation))



    def forward(self, input, hx=None):
        self._update_flat_weights()
        orig_input = input
        batch_sizes = None
        num_directions = 2 if self.bidirectional else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            max_batch_size = int(batch_sizes[0])
            if hx is None:
                h_zeros = torch.zeros(self.num_layers * num_directions, max_batch_size, real_hidden_size, dtype=input.dtype, device=input.device)
                c_zeros = torch.zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.dtype, device=input.device)
                hx = (h_zeros, c_zeros)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f'LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead')
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            max_batch_size = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = None
            unsorted_indices = None
            if hx is None:
                h_zeros = torch.zeros(self.num_layers * num_directions, max_batch_size, real_hidden_size, dtype=input.dtype, device=input.device)
                c_zeros = torch.zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.dtype, device=input.device)
                hx = (h_zeros, c_zeros)
                self.check_forward_args(input, hx, batch_sizes)
            else:
                if is_batched:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        msg = f'For batched 3-D input, hx and cx should also be 3-D but got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors'
                        raise RuntimeError(msg)
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        msg = f'For unbatched 2-D input, hx and cx should also be 2-D but got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors'
                        raise RuntimeError(msg)
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
                self.check_forward_args(input, hx, batch_sizes)
                hx = self.permute_hidden(hx, sorted_indices)
        if batch_sizes is None:
            result = _rnn_impl('LSTM', input, None, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional, self.batch_first)
        else:
            result = _rnn_impl('LSTM', input, batch_sizes, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional, False)
        output = result[0]
        hidden = result[1:]
        if isinstance(orig_input, PackedSequence):
            output_packed = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
            return (output_packed, self.permute_hidden(hidden, unsorted_indices))
        else:
            if not is_batched:
                output = output.squeeze(batch_dim)
                hidden = (hidden[0].squeeze(1), hidden[1].squeeze(1))
            return (output, self.permute_hidden(hidden, unsorted_indices))

class GRU(RNNBase):



    def __init__(self, *args, **kwargs):
        if 'proj_size' in kwargs:
            raise ValueError('proj_size argument is only supported for LSTM, not RNN or GRU')
        super().__init__('GRU', *args, **kwargs)



    def forward(self, input, hx=None):
        self._update_flat_weights()
        orig_input = input
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            max_batch_size = int(batch_sizes[0])
            if hx is None:
                num_directions = 2 if self.bidirectional else 1
                hx = torch.zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.dtype, device=input.device)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                raise ValueError(f'GRU: Expected input to be 2D or 3D, got {input.dim()}D instead')
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    if hx.dim() != 2:
                        raise RuntimeError(f'For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor')
                    hx = hx.unsqueeze(1)
            elif hx is not None and hx.dim() != 3:
                raise RuntimeError(f'For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor')
            max_batch_size = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = None
            unsorted_indices = None
            if hx is None:
                num_directions = 2 if self.bidirectional else 1
                hx = torch.zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.dtype, device=input.device)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        self.check_forward_args(input, hx, batch_sizes)
        if batch_sizes is None:
            result = _rnn_impl('GRU', input, None, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional, self.batch_first)
        else:
            result = _rnn_impl('GRU', input, batch_sizes, hx, self._flat_weights, self.bias, self.num_layers, self.dropout, self.training, self.bidirectional, False)
        output = result[0]
        hidden = result[1]
        if isinstance(orig_input, PackedSequence):
            output_packed = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
            return (output_packed, self.permute_hidden(hidden, unsorted_indices))
        else:
            if not is_batched:
                output = output.squeeze(batch_dim)
                hidden = hidden.squeeze(1)
            return (output, self.permute_hidden(hidden, unsorted_indices))

class RNNCellBase(Module):
    __constants__ = ['input_size', 'hidden_size', 'bias']
    input_size: int
    hidden_size: int
    bias: bool
    weight_ih: Tensor
    weight_hh: Tensor

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None) -> None:
        factory_kwargs = {'device': device, 'dtype': dtype}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(torch.empty((num_chunks * hidden_size, input_size), **factory_kwargs))
        self.weight_hh = Parameter(torch.empty((num_chunks * hidden_size, hidden_size), **factory_kwargs))
        if bias:
            self.bias_ih = Parameter(torch.empty(num_chunks * hidden_size, **factory_kwargs))
            self.bias_hh = Parameter(torch.empty(num_chunks * hidden_size, **factory_kwargs))
        else:
            self.register_parameter('bias_ih', None)
            self.register_parameter('bias_hh', None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = '{input_size}, {hidden_size}'
        if 'bias' in self.__dict__ and self.bias is not True:
            s += ', bias={bias}'
        if 'nonlinearity' in self.__dict__ and self.nonlinearity != 'tanh':
            s += ', nonlinearity={nonlinearity}'
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

class RNNCell(RNNCellBase):
    __constants__ = ['input_size', 'hidden_size', 'bias', 'nonlinearity']
    nonlinearity: str

    def __init__(self, input_size: int, hidden_size: int, bias: bool=True, nonlinearity: str='tanh', device=None, dtype=None) -> None:
        factory_kwargs = {'device': device, 'dtype': dtype}
        super().__init__(input_size, hidden_size, bias, num_chunks=1, **factory_kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None=None) -> Tensor:
        if input.dim() not in (1, 2):
            raise ValueError(f'RNNCell: Expected input to be 1D or 2D, got {input.dim()}D instead')
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f'RNNCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead')
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = torch.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        else:
            hx = hx.unsqueeze(0) if not is_batched else hx
        if self.nonlinearity == 'tanh':
            ret = _rnn_tanh_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        elif self.nonlinearity == 'relu':
            ret = _rnn_relu_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            ret = input
            raise RuntimeError(f'Unknown nonlinearity: {self.nonlinearity}')
        if not is_batched:
            ret = ret.squeeze(0)
        return ret

class LSTMCell(RNNCellBase):

    def __init__(self, input_size: int, hidden_size: int, bias: bool=True, device=None, dtype=None) -> None:
        factory_kwargs = {'device': device, 'dtype': dtype}
        super().__init__(input_size, hidden_size, bias, num_chunks=4, **factory_kwargs)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None=None) -> tuple[Tensor, Tensor]:
        if input.dim() not in (1, 2):
            raise ValueError(f'LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead')
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f'LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead')
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = torch.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (zeros, zeros)
        else:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0)) if not is_batched else hx
        ret = _lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not is_batched:
            ret = (ret[0].squeeze(0), ret[1].squeeze(0))
        return ret

class GRUCell(RNNCellBase):

    def __init__(self, input_size: int, hidden_size: int, bias: bool=True, device=None, dtype=None) -> None:
        factory_kwargs = {'device': device, 'dtype': dtype}
        super().__init__(input_size, hidden_size, bias, num_chunks=3, **factory_kwargs)

    def forward(self, input: Tensor, hx: Tensor | None=None) -> Tensor:
        if input.dim() not in (1, 2):
            raise ValueError(f'GRUCell: Expected input to be 1D or 2D, got {input.dim()}D instead')
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f'GRUCell: Expected hidden to be 1D or 2D, got {hx.dim()}D instead')
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = torch.zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        else:
            hx = hx.unsqueeze(0) if not is_batched else hx
        ret = _gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not is_batched:
            ret = ret.squeeze(0)
        return ret
