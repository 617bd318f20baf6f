"""Recurrent layers (torch.nn.RNN, LSTM, GRU) and their single-step cells.

The maths is written in ember ops, so autograd comes from the parts. Per layer and
direction the whole sequence's input projection is one ``addmm``; a Python loop then runs
over time steps only, each step one ``addmm`` of the hidden state and a few elementwise
ops (``_step``, shared with the cells). Sequences are handled as time-major rows: a padded
(T, B, *) input is flattened to (T*B, *) rows with ``B`` rows per step, a PackedSequence
already is such rows with ``batch_sizes[t]`` rows per step; in the packed case the live
batch shrinks (forward direction) or grows (reverse direction) as sequences end.

An LSTM (projected or not) or a GRU over float32/float64 input skips the per-step ops:
each layer and direction is one fused record (``_lstm_layer`` / ``_gru_layer`` in
ember/_ops/nn_fused.py, with their own backward), run in a padded input's own layout; packed
rows are spread into a padded batch and the records told the batch size of each step. The
per-step path above stays for RNN, half dtypes and a GRU under autocast (torch runs it in
float32; an LSTM's layers are lowered by autocast, as torch's mkldnn_rnn_layer). The
records' nodes are dressed as torch's CPU graph (ember/_ops/rnn_nodes.py): ``out.grad_fn``
is torch's ``StackBackward0`` / ``TransposeBackward0`` / ``MkldnnRnnLayerBackward0``...

The cells (LSTMCell, GRUCell, RNNCell) run one record per step for float32/float64
outside dispatch modes (``_lstm_cell``, ``_gru_cell``, ``_rnn_tanh_cell``, ``_rnn_relu_cell``
in ember/_ops/rnn_cell.py, with their own backward); ``_step`` is their composite, which
vmap, forward-mode AD, tracing, ONNX export, autocast and half dtypes see."""
import math
import numbers
import warnings
from typing import List, Optional, Tuple

import numpy as np

import ember
from ember import Tensor
from ember.nn import init
from ember.nn import functional as F
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence
from ember.nn.modules.module import Module
from ember._ops.nn_fused import gru_layer as _gru_layer, lstm_layer as _lstm_layer
from ember._ops import rnn_cell as _cells
from ember._ops import rnn_nodes as _nodes

__all__ = ['RNNBase', 'RNN', 'LSTM', 'GRU', 'RNNCellBase', 'RNNCell', 'LSTMCell', 'GRUCell']

_GATES = {'RNN_TANH': 1, 'RNN_RELU': 1, 'LSTM': 4, 'GRU': 3}


def apply_permutation(tensor, permutation, dim=1):
    """Deprecated alias of ``tensor.index_select(dim, permutation)``."""
    warnings.warn('`apply_permutation` is deprecated, please use '
                  '`tensor.index_select(dim, permutation)` instead', FutureWarning, stacklevel=2)
    return tensor.index_select(dim, permutation)


def _each(hidden, fn):
    """Apply ``fn`` to a hidden state: one tensor, or LSTM's (h, c) pair."""
    if isinstance(hidden, (tuple, list)):
        return tuple(fn(h) for h in hidden)
    return fn(hidden)


# ------------------------------------------------------------------------------ maths
def _input_proj(mode, x, w_ih, b_ih, b_hh):
    """(N, in) -> (N, G*H): x W_ih^T plus every bias that sits outside the recurrence
    (both of them, except for GRU, whose b_hh is gated by r)."""
    if b_ih is None:
        return ember.mm(x, w_ih.t())
    bias = b_ih if mode == 'GRU' else b_ih + b_hh
    return ember.addmm(bias, x, w_ih.t())


def _step(mode, xw, h, c, w_hh_t, b_hh, w_hr_t):
    """One time step. xw: (B, G*H) from ``_input_proj``; h: (B, H_out); c: (B, H) for
    LSTM, else None; w_hh_t, w_hr_t: transposed weights. Returns the new (h, c)."""
    if mode == 'GRU':
        hw = ember.mm(h, w_hh_t) if b_hh is None else ember.addmm(b_hh, h, w_hh_t)
        x_r, x_z, x_n = xw.chunk(3, 1)
        h_r, h_z, h_n = hw.chunk(3, 1)
        reset = ember.sigmoid(x_r + h_r)
        update = ember.sigmoid(x_z + h_z)
        cand = ember.tanh(x_n + reset * h_n)
        return cand + update * (h - cand), None
    pre = ember.addmm(xw, h, w_hh_t)
    if mode == 'LSTM':
        i, f, g, o = pre.chunk(4, 1)
        c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
        h = ember.sigmoid(o) * ember.tanh(c)
        return (h if w_hr_t is None else ember.mm(h, w_hr_t)), c
    _nodes.renamed(pre, "AddBackward0")     # torch adds the two sides' linear layers
    return (ember.relu(pre) if mode == 'RNN_RELU' else ember.tanh(pre)), None


def _scan(mode, xw, steps, h0, c0, w_hh, b_hh, w_hr, reverse, stacked=False):
    """One layer, one direction. xw: (N, G*H) projections as time-major rows, ``steps``:
    rows per time step (non-increasing); h0, c0: (B, *) with B = steps[0].
    Returns the outputs (N, H_out), stacked to (T, B, H_out) when ``stacked`` (a padded
    input: torch's StackBackward0), and the final h, c (B, *)."""
    w_hh_t = w_hh.t()
    w_hr_t = None if w_hr is None else w_hr.t()
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    xs = xw.split(steps, 0)
    h, c = h0, c0
    first = steps[order[0]]
    if first < h0.shape[0]:    # reverse over packed rows: start with the longest sequences
        h = h0.narrow(0, 0, first)
        c = None if c0 is None else c0.narrow(0, 0, first)
    ended = []                 # final states of sequences that stop early (forward only)
    outs = [None] * len(steps)
    for t in order:
        live, want = h.shape[0], steps[t]
        if want < live:        # the last live - want sequences have ended
            ended.append((h.narrow(0, want, live - want),
                          None if c is None else c.narrow(0, want, live - want)))
            h = h.narrow(0, 0, want)
            c = None if c is None else c.narrow(0, 0, want)
        elif want > live:      # reverse: more sequences start here
            h = ember.cat([h, h0.narrow(0, live, want - live)], 0)
            if c is not None:
                c = ember.cat([c, c0.narrow(0, live, want - live)], 0)
        h, c = _step(mode, xs[t], h, c, w_hh_t, b_hh, w_hr_t)
        outs[t] = h
    # later endings hold lower batch indices; over packed rows torch always cats, going forward
    if ended or not (stacked or reverse):
        h = ember.cat([h] + [e[0] for e in reversed(ended)], 0)
        if c is not None:
            c = ember.cat([c] + [e[1] for e in reversed(ended)], 0)
    return (ember.stack(outs, 0) if stacked else ember.cat(outs, 0)), h, c


def _layer_weights(named, layer, direction):
    """The parameters of one layer and direction by role (None where absent)."""
    sfx = f"l{layer}{'_reverse' if direction else ''}"
    return {k: named.get(f'{k}_{sfx}')
            for k in ('weight_ih', 'weight_hh', 'bias_ih', 'bias_hh', 'weight_hr')}


def _recurrent(mode: str, input: Tensor, batch_sizes: Optional[Tensor], h0: Tensor,
               c0: Optional[Tensor], weights: List[Tensor], names: List[str], num_layers: int,
               bidirectional: bool, dropout: float, training: bool, batch_first: bool,
               proj_size: int) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
    """The stacked layers over a padded (``batch_sizes`` None) or packed input, torch's
    _VF.{rnn_tanh,rnn_relu,lstm,gru}: (output, h_n, c_n (LSTM, else None)). ``weights`` are
    the module's flat weights, ``names`` their attribute names. Called by the modules'
    forward, scripted or not."""
    named = dict(zip(names, weights))
    dirs = 2 if bidirectional else 1
    lstm = mode == 'LSTM'
    if mode in ('LSTM', 'GRU') and \
            input.dtype in (ember.float32, ember.float64) and \
            (lstm or not ember.is_autocast_enabled('cpu')):   # autocast lowers _lstm_layer
        if batch_sizes is None:
            return _run_fused(mode, input, h0, c0, named, num_layers, dirs, dropout, training,
                              batch_first)
        return _run_fused_packed(mode, input, batch_sizes, h0, c0, named, num_layers, dirs,
                                 dropout, training)
    if batch_sizes is None:
        if batch_first:
            input = input.transpose(0, 1)
        T, B = input.shape[0], input.shape[1]
        steps = [B] * T
        x = input.reshape(T * B, input.shape[2])
    else:
        steps = [int(n) for n in batch_sizes.tolist()]
        x = input
    if not steps:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            w = _layer_weights(named, layer, d)
            k = layer * dirs + d
            xw = _input_proj(mode, x, w['weight_ih'], w['bias_ih'], w['bias_hh'])
            out, h, c = _scan(mode, xw, steps, h0[k], c0[k] if lstm else None,
                              w['weight_hh'], w['bias_hh'], w['weight_hr'], d == 1,
                              batch_sizes is None)
            outs.append(out)
            hs.append(h)
            cs.append(c)
        x = outs[0] if len(outs) == 1 else ember.cat(outs, outs[0].dim() - 1)
        if dropout and training and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
        if batch_sizes is None and layer < num_layers - 1:
            x = x.reshape(T * B, x.shape[-1])
    if batch_sizes is None and batch_first:
        x = x.transpose(0, 1)
        if not lstm:
            _nodes.renamed(x, "TransposeBackward1")     # torch's in-place transpose_
    return x, ember.stack(hs, 0), (ember.stack(cs, 0) if lstm else None)


def _lstm_recurrent(input: Tensor, h0: Tensor, c0: Tensor, weights: List[Tensor],
                    names: List[str], num_layers: int, bidirectional: bool, dropout: float,
                    training: bool, batch_first: bool,
                    proj_size: int) -> Tuple[Tensor, Tensor, Tensor]:
    """``_recurrent`` of an LSTM over a padded input: (output, h_n, c_n)."""
    return _recurrent('LSTM', input, None, h0, c0, weights, names, num_layers, bidirectional,
                      dropout, training, batch_first, proj_size)


def _run_fused_packed(mode, data, batch_sizes, h0, c0, named, num_layers, dirs, dropout,
                      training):
    """``_run_fused`` over packed rows: they are spread into a padded time-major batch
    (one gather, zeros where no sequence runs), the fused records run with the batch sizes
    (columns of ended or not yet started sequences keep their state), and the running
    positions are gathered back into rows."""
    import numpy as np
    sizes = np.asarray(batch_sizes.tolist(), dtype=np.int64)
    if not sizes.size:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    T, B, N = sizes.size, int(sizes[0]), data.shape[0]
    if sizes[-1] == B:          # no sequence ends early: the rows are the padded batch
        out, h, c = _run_fused(mode, data.reshape(T, B, -1), h0, c0, named, num_layers, dirs,
                               dropout, training, False, None, True)
        rows = out.reshape(T * B, -1)
        if out._grad_fn is not None and not _one_dnn(mode, named, data, False):
            _nodes.packed_rows(rows)
        return rows, h, c
    live = np.arange(B)[None, :] < sizes[:, None]                 # (T, B)
    src = np.full((T, B), N, np.int64)                            # N: the zero row
    src[live] = np.arange(N)
    rows = ember.cat([data, data.new_zeros((1,) + tuple(data.shape[1:]))], 0)
    x = rows.index_select(0, ember.from_numpy(src.reshape(-1))).reshape(T, B, -1)
    out, h, c = _run_fused(mode, x, h0, c0, named, num_layers, dirs, dropout, training,
                           False, batch_sizes)
    pos = ember.from_numpy(np.flatnonzero(live.reshape(-1)))
    rows = out.reshape(T * B, -1).index_select(0, pos)
    _nodes.packed_rows(rows, "CatBackward0" if dirs == 2 else _step_node(mode, named))
    return rows, h, c


def _step_node(mode, named):
    """The name of torch's node for a step's output h (nodes below the fused records)."""
    if mode == 'GRU':
        return "AddBackward0"
    return "MmBackward0" if named.get('weight_hr_l0') is not None else "MulBackward0"


def _one_dnn(mode, named, x, varying):
    """Would torch run this LSTM as its oneDNN layers (float32, no projection, no packed
    sequences of several lengths)? Else its graph is per step."""
    return mode == 'LSTM' and x.dtype == ember.float32 and not varying and \
        named.get('weight_hr_l0') is None


def _run_fused(mode, x, h0, c0, named, num_layers, dirs, dropout, training, batch_first,
               batch_sizes=None, packed=False):
    """LSTM or GRU over a padded batch, in the input's own layout: per layer and direction
    one fused record (``_lstm_layer`` / ``_gru_layer``: the input projection as one GEMM
    over all steps, then the recurrence)."""
    if x.shape[1 if batch_first else 0] == 0:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    packed = packed or batch_sizes is not None
    varying = batch_sizes is not None      # (the caller passes them only when they vary)
    proj = named.get('weight_hr_l0') is not None
    oneDNN = _one_dnn(mode, named, x, varying)
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            w = _layer_weights(named, layer, d)
            k = layer * dirs + d
            if mode == 'LSTM':
                out, h, c, _ = _lstm_layer(x, h0[k], c0[k], w['weight_ih'], w['weight_hh'],
                                           w['bias_ih'], w['bias_hh'], d == 1, batch_first,
                                           batch_sizes, w['weight_hr'])
                _nodes.lstm_layer(out, h, c, oneDNN, proj, x if batch_first and layer == 0
                                  else None, packed, d == 0)
                cs.append(c)
            else:
                out, h, _ = _gru_layer(x, h0[k], w['weight_ih'], w['weight_hh'],
                                       w['bias_ih'], w['bias_hh'], d == 1, batch_first,
                                       batch_sizes)
                _nodes.gru_layer(out, h, packed, d == 0)
            outs.append(out)
            hs.append(h)
        x = outs[0] if len(outs) == 1 else ember.cat(outs, 2)
        if dropout and training and layer < num_layers - 1:
            x = _layer_dropout(x, dropout, batch_first, batch_sizes)
    if batch_first:
        _nodes.batch_first_output(x, mode)
        _time_major_storage(x)
    return x, ember.stack(hs, 0), (ember.stack(cs, 0) if cs else None)


def _time_major_storage(x):
    """torch's batch-first output (B, T, H) is a transposed view of its time-major result,
    strides (H, B*H, 1): give ``x`` that memory layout (same values, same graph), so that what
    follows its strides (a dropout mask drawn after the layer, ``.view`` errors) is torch's."""
    a = x._data
    if type(a) is np.ndarray and a.ndim == 3:
        x._data = np.ascontiguousarray(a.swapaxes(0, 1)).swapaxes(0, 1)


def _layer_dropout(x, p, batch_first, batch_sizes):
    """Dropout between stacked layers with torch's mask: drawn over the time-major output
    (T, B, H), and for packed sequences of several lengths over the running rows only (the
    packed data), as torch's layers see them."""
    if batch_first:
        return F.dropout(x.transpose(0, 1).contiguous(), p, True).transpose(0, 1)
    if batch_sizes is None:
        return F.dropout(x, p, True)
    import numpy as np
    sizes = np.asarray(batch_sizes.tolist(), dtype=np.int64)
    T, B = x.shape[0], x.shape[1]
    live = ember.from_numpy(np.flatnonzero(np.arange(B)[None, :] < sizes[:, None]))
    rows = x.reshape(T * B, -1)
    kept = F.dropout(rows.index_select(0, live), p, True)
    return rows.index_copy(0, live, kept).reshape(x.shape)


def _cell(mode: str, input: Tensor, h: Tensor, c: Optional[Tensor], w_ih: Tensor, w_hh: Tensor,
          b_ih: Optional[Tensor], b_hh: Optional[Tensor]) -> Tuple[Tensor, Optional[Tensor]]:
    """One step of a cell: the next (h, c) (c None except for LSTM). One record
    (ember/_ops/rnn_cell.py) where ``_cells.fusable``, else the composite ``_step``."""
    _check_cell(input, h if c is None else (h, c), w_ih, w_hh)
    if _cells.fusable(input, h, c, w_ih, w_hh, b_ih, b_hh):
        if mode == 'LSTM':
            h, c, _ = _cells.lstm_cell(input, h, c, w_ih, w_hh, b_ih, b_hh)
            _nodes.lstm_cell_state(c)
            return h, c
        if mode == 'GRU':
            return _cells.gru_cell(input, h, w_ih, w_hh, b_ih, b_hh)[0], None
        op = _cells.rnn_relu_cell if mode == 'RNN_RELU' else _cells.rnn_tanh_cell
        return op(input, h, w_ih, w_hh, b_ih, b_hh), None
    xw = _input_proj(mode, input, w_ih, b_ih, b_hh)
    return _step(mode, xw, h, c, w_hh.t(), b_hh, None)


def _lstm_cell(input: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor,
               b_ih: Optional[Tensor], b_hh: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
    return _cell('LSTM', input, h, c, w_ih, w_hh, b_ih, b_hh)


def _check_cell(input, hx, w_ih, w_hh):
    """torch's checks of a cell's operands (input (B, E), each state (B, H))."""
    (batch, size), expected, hidden = input.shape, w_ih.shape[1], w_hh.shape[1]
    if size != expected:
        raise RuntimeError(f"input has inconsistent input_size: got {size} expected "
                           f"{expected}")
    for i, h in enumerate(hx if isinstance(hx, (tuple, list)) else (hx,)):
        shape = h.shape
        if batch != shape[0]:
            raise RuntimeError(f"Input batch size {batch} doesn't match hidden{i} "
                               f"batch size {shape[0]}")
        if shape[1] != hidden:
            raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {shape[1]}, "
                               f"expected {hidden}")


# ----------------------------------------------------------------------------- layers
class RNNBase(Module):
    """Shared machinery of RNN, LSTM and GRU: parameters, checks and the forward pass.
    The forward passes are written for TorchScript too (``jit.script`` compiles them; the
    recurrence itself is one call, ``_recurrent``, as torch's is one ``_VF`` op)."""
    __constants__ = ['mode', 'input_size', 'hidden_size', 'num_layers', 'bias',
                     'batch_first', 'dropout', 'bidirectional', 'proj_size',
                     '_flat_weights_names']

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if (isinstance(dropout, bool) or not isinstance(dropout, numbers.Number)
                or not 0 <= dropout <= 1):
            raise ValueError('dropout should be a number in range [0, 1] representing the '
                             'probability of an element being zeroed')
        if dropout > 0 and num_layers == 1:
            warnings.warn('dropout option adds dropout after all but last recurrent layer, so '
                          'non-zero dropout expects num_layers greater than 1, but got '
                          f'dropout={dropout} and num_layers={num_layers}', stacklevel=2)
        for name, value, kind in (('bias', bias, bool), ('batch_first', batch_first, bool),
                                  ('input_size', input_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f'{name} should be of type {kind.__name__}, got: '
                                f'{type(value).__name__}')
        if input_size <= 0:
            raise ValueError('input_size must be greater than zero')
        if not isinstance(hidden_size, int):
            raise TypeError(f'hidden_size should be of type int, got: {type(hidden_size).__name__}')
        if hidden_size <= 0:
            raise ValueError('hidden_size must be greater than zero')
        if num_layers <= 0:
            raise ValueError('num_layers must be greater than zero')
        if proj_size < 0:
            raise ValueError('proj_size should be a positive integer or zero to disable '
                             'projections')
        if proj_size >= hidden_size:
            raise ValueError('proj_size has to be smaller than hidden_size')
        if mode not in _GATES:
            raise ValueError('Unrecognized RNN mode: ' + mode)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        self._dirs = 2 if bidirectional else 1

        gates, out_size = _GATES[mode] * hidden_size, proj_size or hidden_size
        shapes = {'weight_ih': None, 'weight_hh': (gates, out_size)}
        if bias:
            shapes.update(bias_ih=(gates,), bias_hh=(gates,))
        if proj_size:
            shapes['weight_hr'] = (proj_size, hidden_size)
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            shapes['weight_ih'] = (gates, input_size if layer == 0 else out_size * self._dirs)
            for d in range(self._dirs):
                names = []
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{'_reverse' if d else ''}"
                    setattr(self, name, Parameter(ember.empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names += names
                self._all_weights.append(names)
        self.reset_parameters()

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault('_dirs', 2 if self.bidirectional else 1)   # older pickles

    @property
    def _flat_weights(self):
        return [getattr(self, n, None) for n in self._flat_weights_names]

    def _weights(self) -> List[Tensor]:
        """The flat weights (``_flat_weights``; unrolled over the constant names when
        scripted)."""
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """No-op: there is no cuDNN weight buffer to compact on NumPy."""

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -bound, bound)

    def extra_repr(self):
        s = f'{self.input_size}, {self.hidden_size}'
        for name, default in (('proj_size', 0), ('num_layers', 1), ('bias', True),
                              ('batch_first', False), ('dropout', 0), ('bidirectional', False)):
            value = getattr(self, name)
            if value != default or (isinstance(default, bool) and value is not default):
                s += f', {name}={value}'
        return s

    # ---- checks (public in torch; messages kept)
    def check_input(self, input: Tensor, batch_sizes: Optional[Tensor]):
        w_dtype = self.weight_ih_l0.dtype
        # under autocast torch lets the ops cast (a bfloat16 input runs in bfloat16); the
        # autocast query stays out of scripted code, as torch's own module keeps it
        if not ember.jit.is_scripting() and input.dtype != w_dtype and \
                not ember.is_autocast_enabled('cpu'):
            raise ValueError(f'RNN input dtype ({input.dtype}) does not match weight dtype '
                             f'({w_dtype}). Convert input: input.to({w_dtype}), or convert '
                             f'model: model.to({input.dtype})')
        ndim = 2 if batch_sizes is not None else 3
        if input.dim() != ndim:
            raise RuntimeError(f'input must have {ndim} dimensions, got {input.dim()}')
        if self.input_size != input.size(-1):
            raise RuntimeError(f'input.size(-1) must be equal to input_size. Expected '
                               f'{self.input_size}, got {input.size(-1)}')

    def _batch_size(self, input: Tensor, batch_sizes: Optional[Tensor]) -> int:
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.size(0) if self.batch_first else input.size(1)

    def _out_size(self) -> int:
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def get_expected_hidden_size(self, input: Tensor,
                                 batch_sizes: Optional[Tensor]) -> Tuple[int, int, int]:
        return (self.num_layers * self._dirs, self._batch_size(input, batch_sizes),
                self._out_size())

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: Tuple[int, int, int],
                          msg: str = 'Expected hidden size {}, got {}'):
        actual = list(hx.shape) if isinstance(hx, Tensor) else list(hx.size())   # (torch's text)
        if actual != list(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, actual))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Optional[Tensor]):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _each(hx, lambda h: h.index_select(1, permutation))

    # ---- forward
    def _check_dims(self, input: Tensor, hx: Optional[Tensor]):
        """Dimension checks of an unpacked input and its optional hx (RNN and GRU wording)."""
        if input.dim() not in (2, 3):
            tail = ' tensor' if self.mode.startswith('RNN') else ''
            raise ValueError(f'{self._name}: Expected input to be 2D or 3D, got '
                             f'{input.dim()}D{tail} instead')
        if hx is not None and hx.dim() != input.dim():
            kind = 'batched 3-D' if input.dim() == 3 else 'unbatched 2-D'
            raise RuntimeError(f'For {kind} input, hx should also be {input.dim()}-D but got '
                               f'{hx.dim()}-D tensor')

    def _zero_hidden(self, input: Tensor, batch: int) -> Tensor:
        shape = (self.num_layers * self._dirs, batch, self._out_size())
        return ember.zeros(shape, dtype=input.dtype, device=input.device)

    def forward(self, input, hx: Optional[Tensor] = None):
        """input: (T, B, in) / (B, T, in) with batch_first / (T, in) / PackedSequence;
        hx: (L*D, B, H_out); zeros when omitted. Returns (output, h_n): output
        (T, B, D*H_out) or a PackedSequence."""
        if isinstance(input, PackedSequence):          # never in scripted code
            return self._forward_packed(input, hx)
        self._check_dims(input, hx)
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1 - int(self.batch_first))
            if hx is not None:
                hx = hx.unsqueeze(1)
        if hx is None:
            hx = self._zero_hidden(input, self._batch_size(input, None))
        self.check_forward_args(input, hx, None)
        output, hidden, _ = _recurrent(self.mode, input, None, hx, None, self._weights(),
                                       self._flat_weights_names, self.num_layers,
                                       self.bidirectional, self.dropout, self.training,
                                       self.batch_first, self.proj_size)
        if not batched:
            output = output.squeeze(1 - int(self.batch_first))
            hidden = hidden.squeeze(1)
        return output, hidden

    def _forward_packed(self, input, hx):
        """forward of a PackedSequence (hx, like the result's h_n, in the caller's order)."""
        input, batch_sizes, sorted_idx, unsorted_idx = input
        if hx is not None and self.mode == 'LSTM' and sorted_idx is None and \
                isinstance(hx, Tensor):
            raise TypeError(_packed_lstm_parser_text(len(self._flat_weights)))
        hx = self.permute_hidden(hx, sorted_idx) if hx is not None else None
        if hx is not None and self.mode == 'LSTM':
            _check_packed_lstm_hx(self, batch_sizes, hx)
        if hx is None:
            hx = self._zero_hidden(input, self._batch_size(input, batch_sizes))
        self.check_forward_args(input, hx, batch_sizes)
        output, hidden = self._run(input, batch_sizes, hx)
        output = PackedSequence(output, batch_sizes, sorted_idx, unsorted_idx)
        return output, self.permute_hidden(hidden, unsorted_idx)

    def _run(self, input, batch_sizes, hx):
        """The stacked layers (``_recurrent``) with this module's weights and options;
        hx and the returned hidden state are LSTM's (h, c) pair or one tensor."""
        lstm = self.mode == 'LSTM'
        h0, c0 = hx if lstm else (hx, None)
        x, h, c = _recurrent(self.mode, input, batch_sizes, h0, c0, self._flat_weights,
                             self._flat_weights_names, self.num_layers, self.bidirectional,
                             self.dropout, self.training, self.batch_first, self.proj_size)
        return x, ((h, c) if lstm else h)


def _packed_lstm_parser_text(n_weights):
    """torch's argument-parser TypeError for a packed LSTM given one Tensor as hx."""
    params = ", ".join(["Parameter"] * n_weights)
    return ("lstm() received an invalid combination of arguments - got (Tensor, Tensor, Tensor, "
            "list, bool, int, float, bool, bool), but expected one of:\n"
            " * (Tensor data, Tensor batch_sizes, tuple of Tensors hx, tuple of Tensors params, "
            "bool has_biases, int num_layers, float dropout, bool train, bool bidirectional)\n"
            "      didn't match because some of the arguments have invalid types: (Tensor, "
            f"Tensor, !Tensor!, !list of [{params}]!, bool, int, float, bool, bool)\n"
            " * (Tensor input, tuple of Tensors hx, tuple of Tensors params, bool has_biases, "
            "int num_layers, float dropout, bool train, bool bidirectional, bool batch_first)\n"
            "      didn't match because some of the arguments have invalid types: (Tensor, "
            f"!Tensor!, !Tensor!, !list of [{params}]!, !bool!, int, !float!, bool, bool)\n")


def _check_packed_lstm_hx(m, batch_sizes, hx):
    """torch checks no (h_0, c_0) given to a packed LSTM in Python: its kernel's errors come
    out, in its order (found by experiment; a count of cell states that is off is left to
    ``check_forward_args``: torch reads past them)."""
    if len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    h, c = hx
    for t in (h, c):
        if t.dim() < 3:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{t.dim()}, {t.dim() - 1}], but got 2)")
    if (h.shape[2] != c.shape[2]) != (m.proj_size > 0):
        raise RuntimeError("got an incorrect number of RNN parameters")
    layers = m.num_layers * m._dirs
    if h.shape[0] != layers:
        if m.bidirectional and h.shape[0] % 2:
            raise RuntimeError("Odd number of params or hiddens given to a bidirectional RNN")
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    if h.dim() != 3:
        return
    b0 = int(batch_sizes[0])
    out = m._out_size()
    if h.shape[2] != out:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({min(h.shape[1], b0)}x{h.shape[2]} and {out}x{4 * m.hidden_size})")
    w = m._flat_weights[1]
    if h.dtype != w.dtype:
        from ember import _dtype
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_dtype.scalar_type_name(h._data.dtype)} and "
                           f"{_dtype.scalar_type_name(w._data.dtype)}")
    if h.shape[1] != b0:
        raise RuntimeError(f"The size of tensor a ({h.shape[1]}) must match the size of tensor "
                           f"b ({b0}) at non-singleton dimension 0")
    if c.dim() == 3 and c.shape[1] != b0:
        raise RuntimeError(f"The size of tensor a ({b0}) must match the size of tensor b "
                           f"({c.shape[1]}) at non-singleton dimension 0")


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu."""
    _name = 'RNN'

    def __init__(self, *args, **kwargs):
        if 'proj_size' in kwargs:
            raise ValueError('proj_size argument is only supported for LSTM, not RNN or GRU')
        if len(args) > 3:          # RNN(input_size, hidden_size, num_layers, nonlinearity, ...)
            nonlinearity, args = args[3], args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop('nonlinearity', 'tanh')
        if nonlinearity not in ('tanh', 'relu'):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        super().__init__('RNN_' + nonlinearity.upper(), *args, **kwargs)
        self.nonlinearity = nonlinearity


class GRU(RNNBase):
    """Gated recurrent unit; gates r, z and candidate n in that order in the weights."""
    _name = 'GRU'

    def __init__(self, *args, **kwargs):
        if 'proj_size' in kwargs:
            raise ValueError('proj_size argument is only supported for LSTM, not RNN or GRU')
        super().__init__('GRU', *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory; gates i, f, g, o in that order; optional projection of h."""
    _name = 'LSTM'

    def __init__(self, *args, **kwargs):
        super().__init__('LSTM', *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor,
                               batch_sizes: Optional[Tensor]) -> Tuple[int, int, int]:
        return (self.num_layers * self._dirs, self._batch_size(input, batch_sizes),
                self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: Tuple[Tensor, Tensor],
                           batch_sizes: Optional[Tensor]):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               'Expected hidden[0] size {}, got {}')
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               'Expected hidden[1] size {}, got {}')

    def _check_dims(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]]):
        if input.dim() not in (2, 3):
            raise ValueError(f'LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead')
        if hx is not None and (hx[0].dim() != input.dim() or hx[1].dim() != input.dim()):
            kind = 'batched 3-D' if input.dim() == 3 else 'unbatched 2-D'
            raise RuntimeError(f'For {kind} input, hx and cx should also be {input.dim()}-D but '
                               f'got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors')

    def _zero_hidden(self, input: Tensor, batch: int) -> Tuple[Tensor, Tensor]:
        layers = self.num_layers * self._dirs
        h = ember.zeros((layers, batch, self._out_size()), dtype=input.dtype,
                        device=input.device)
        c = ember.zeros((layers, batch, self.hidden_size), dtype=input.dtype,
                        device=input.device)
        return h, c

    def forward(self, input, hx: Optional[Tuple[Tensor, Tensor]] = None):
        """input as RNN's; hx: (h_0 (L*D, B, H_out), c_0 (L*D, B, H)), zeros when omitted.
        Returns (output, (h_n, c_n))."""
        if isinstance(input, PackedSequence):          # never in scripted code
            return self._forward_packed(input, hx)
        self._check_dims(input, hx)
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(1 - int(self.batch_first))
            if hx is not None:
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        if hx is None:
            hx = self._zero_hidden(input, self._batch_size(input, None))
        self.check_forward_args(input, hx, None)
        output, h, c = _lstm_recurrent(input, hx[0], hx[1], self._weights(),
                                       self._flat_weights_names, self.num_layers,
                                       self.bidirectional, self.dropout, self.training,
                                       self.batch_first, self.proj_size)
        if not batched:
            output = output.squeeze(1 - int(self.batch_first))
            h, c = h.squeeze(1), c.squeeze(1)
        return output, (h, c)


# ------------------------------------------------------------------------------ cells
class RNNCellBase(Module):
    """One time step of an RNN, LSTM or GRU layer (no sequence dimension)."""
    _lstm = False

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        rows = num_chunks * hidden_size
        kw = dict(device=device, dtype=dtype)
        self.weight_ih = Parameter(ember.empty((rows, input_size), **kw))
        self.weight_hh = Parameter(ember.empty((rows, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(ember.empty(rows, **kw))
            self.bias_hh = Parameter(ember.empty(rows, **kw))
        else:
            self.register_parameter('bias_ih', None)
            self.register_parameter('bias_hh', None)
        self.reset_parameters()

    def extra_repr(self):
        s = f'{self.input_size}, {self.hidden_size}'
        if self.__dict__.get('bias', True) is not True:
            s += f', bias={self.bias}'
        if self.__dict__.get('nonlinearity', 'tanh') != 'tanh':
            s += f', nonlinearity={self.nonlinearity}'
        return s

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -bound, bound)

    def _check_rank(self, t: Tensor, what: str):
        if t.dim() not in (1, 2):
            raise ValueError(f'{self._name}: Expected {what} to be 1D or 2D, got '
                             f'{t.dim()}D instead')

    def forward(self, input, hx: Optional[Tensor] = None):
        """input: (B, in) or (in,); hx: (B, H) or (H,); zeros when omitted. Returns the next
        hidden state (LSTMCell: see its forward)."""
        self._check_rank(input, 'input')
        if hx is not None:
            self._check_rank(hx, 'hidden')
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = input.new_zeros((input.shape[0], self.hidden_size))
        elif not batched:
            hx = hx.unsqueeze(0)
        out, _ = _cell(self._mode(), input, hx, None, self.weight_ih, self.weight_hh,
                       self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)


class RNNCell(RNNCellBase):
    _name = 'RNNCell'

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity='tanh', device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def _mode(self) -> str:
        if self.nonlinearity not in ('tanh', 'relu'):
            raise RuntimeError(f'Unknown nonlinearity: {self.nonlinearity}')
        return 'RNN_' + self.nonlinearity.upper()


class LSTMCell(RNNCellBase):
    _name = 'LSTMCell'
    _lstm = True

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def _mode(self) -> str:
        return 'LSTM'

    def forward(self, input, hx: Optional[Tuple[Tensor, Tensor]] = None):
        """input: (B, in) or (in,); hx: (h, c), each (B, H) or (H,); zeros when omitted.
        Returns (h', c')."""
        self._check_rank(input, 'input')
        if hx is not None:
            self._check_rank(hx[0], 'hx[0]')
            self._check_rank(hx[1], 'hx[1]')
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = input.new_zeros((input.shape[0], self.hidden_size))
            hx = (zeros, zeros)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = _lstm_cell(input, hx[0], hx[1], self.weight_ih, self.weight_hh, self.bias_ih,
                          self.bias_hh)
        if batched:
            return h, c
        return h.squeeze(0), c.squeeze(0)


class GRUCell(RNNCellBase):
    _name = 'GRUCell'

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def _mode(self) -> str:
        return 'GRU'
