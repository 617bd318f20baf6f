"""torch's ``grad_fn`` names around ember's fused recurrent records.

ember runs a layer of nn.LSTM / nn.GRU as one record (ember/_ops/nn_fused.py) and a cell
step as one record (ember/_ops/rnn_cell.py, its node named after torch's node of h:
``MulBackward0`` for LSTMCell, whose c gets ``AddBackward0`` here, ``AddBackward0`` for
GRUCell). torch on CPU shows other nodes:

* an LSTM layer over float32 input without projection (padded, or packed sequences of one
  length) is one oneDNN node, ``MkldnnRnnLayerBackward0`` with edges (input, w_ih, w_hh,
  b_ih, b_hh, hx, cx); with ``batch_first`` torch transposes around it
  (``TransposeBackward0`` on the output, [``CloneBackward0`` ->] ``TransposeBackward0`` on
  the input);
* every other layer (LSTM float64, with ``proj_size`` or over packed sequences of several
  lengths; GRU; RNN) is torch's per-step graph: the output is ``StackBackward0`` of the
  steps' last nodes (``MulBackward0`` o*tanh(c), ``MmBackward0`` with a projection,
  ``AddBackward0`` for GRU), packed rows ``CatBackward0`` of them, ``h_n``/``c_n`` stack
  each layer's last step (``AddBackward0`` for c), packed ones going forward a
  ``CatBackward0`` of the sequences' final states.

The functions here give ember's graph those names at the top: the fused node is renamed
after the step node it stands for, and thin relay nodes (which only pass the gradient on)
stand where torch has a stack, transpose, clone or cat. Gradients still come from the one
fused backward. They change what ``grad_fn`` shows, never what backward computes.
"""
from __future__ import annotations

from ember.autograd.graph import rename_node, _next_seq
from ember.autograd.linear_layout import _pass, _relay

_LSTM_ROUTE = (0, 3, 4, 5, 6, 1, 2)   # _lstm_layer's edges in torch's order (no batch_sizes)
_ROUTED: dict = {}


def _routed_flatten(self, res):
    out = self._unrouted_flatten(res)
    return [out[i] for i in self._route]


def _route_edges(node, route):
    """Show ``node``'s edges in the order ``route`` (indices into its own edges; the others
    are dropped: they never carry a gradient)."""
    cls = type(node)
    sub = _ROUTED.get(cls)
    if sub is None:
        sub = _ROUTED[cls] = type(cls.__name__, (cls,), {
            "__slots__": (), "_flatten": _routed_flatten, "_unrouted_flatten": cls._flatten})
    edges = node.all_edges or node.next_functions
    node.__class__ = sub
    node.all_edges = edges
    node._route = route
    node.next_functions = tuple(edges[i] for i in route)


def _relay_output(t, name, seq=None):
    """Put a relay node named ``name`` between tensor ``t`` and the node that made it."""
    edge = (t._grad_fn, t._output_nr)
    t._grad_fn = _relay(name, (edge,), _pass, _next_seq() if seq is None else seq)[0]
    t._output_nr = 0


def lstm_layer(out, h, c, oneDNN, proj, bf_input, packed, forward):
    """Dress the node of one ``_lstm_layer`` call (outputs ``out``, ``h``, ``c``).
    oneDNN: torch runs this layer as its one oneDNN node (float32, padded, no projection);
    bf_input: the batch-first input this layer reads (torch transposes it to time-major
    first, and copies it where that is not contiguous), or None;
    packed, forward: over packed rows; in the forward direction (where torch concatenates
    the final states of the sequences as they end)."""
    node = out._grad_fn
    if node is None:
        return
    if not oneDNN:
        rename_node(node, "MmBackward0" if proj else "MulBackward0")
    _route_edges(node, _LSTM_ROUTE + ((8,) if proj else ()))
    if oneDNN:
        if bf_input is not None and node.next_functions[0][0] is not None:
            seq = node._seq
            edge = _relay("TransposeBackward0", (node.next_functions[0],), _pass, seq)
            if not bf_input.transpose(0, 1).is_contiguous():      # torch's .contiguous()
                edge = _relay("CloneBackward0", (edge,), _pass, seq)
            node.next_functions = (edge,) + node.next_functions[1:]
        return
    ends = packed and forward
    if ends:
        _relay_output(h, "CatBackward0")
    _relay_output(c, "CatBackward0" if ends else "AddBackward0")
    if not packed:
        _relay_output(out, "StackBackward0")


def gru_layer(out, h, packed, forward):
    """Dress the node of one ``_gru_layer`` call: torch's steps end in ``AddBackward0``."""
    node = out._grad_fn
    if node is None:
        return
    rename_node(node, "AddBackward0")
    if packed and forward:
        _relay_output(h, "CatBackward0")
    if not packed:
        _relay_output(out, "StackBackward0")


def batch_first_output(x, mode):
    """The output of a batch-first layer stack: torch transposes it back
    (``transpose`` for LSTM, in-place ``transpose_`` for GRU and RNN)."""
    if x._grad_fn is not None:
        _relay_output(x, "TransposeBackward0" if mode == 'LSTM' else "TransposeBackward1")


def packed_rows(rows, step_name=None):
    """``rows``: the packed output taken from the padded one (index_select of a reshape, or
    the reshape where no sequence ends early); torch concatenates the steps' outputs:
    ``CatBackward0`` over ``step_name`` nodes (over ``CatBackward0`` per direction when
    bidirectional)."""
    node = rows._grad_fn
    if node is None:
        return
    rename_node(node, "CatBackward0")
    below = node.next_functions[0][0]
    if step_name and below is not None and type(below).__name__ == "ViewBackward0":
        rename_node(below, step_name)


def lstm_cell_state(c):
    """LSTMCell's c (an output of the record named after h's ``MulBackward0``): torch's
    ``AddBackward0`` of f * c + i * g."""
    if c._grad_fn is not None:
        _relay_output(c, "AddBackward0")


def renamed(t, name):
    """Name the node that made ``t`` as torch names its counterpart."""
    if t._grad_fn is not None:
        rename_node(t._grad_fn, name)
