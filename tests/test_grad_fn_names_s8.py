"""The nodes programs see (``out.grad_fn``, its ``next_functions``) for nn.LSTM / GRU / RNN,
their cells, packed sequences, einsum and cross_entropy, compared with torch's CPU graph;
gradients through the dressed graph stay torch's."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _name(node):
    return None if node is None else type(node).__name__


def _tree(node, depth, nr=0):
    """(name, output_nr, children) down to ``depth`` levels."""
    if node is None or depth == 0:
        return (_name(node), nr)
    return (_name(node), nr, tuple(_tree(f, depth - 1, i) for f, i in node.next_functions))


def _levels(node, depth):
    """The set of node names at each level below ``node`` (per-step nodes, which torch has
    one of per time step and ember one per layer, compare as a set)."""
    out, level = [], [node]
    for _ in range(depth):
        out.append({_name(n) for n in level})
        level = [f for n in level if n is not None for f, _ in n.next_functions]
    return out


def _pair(lib_name, cls, args, kw, dtype):
    torch.manual_seed(0)
    t = getattr(torch.nn, cls)(*args, **kw).to(getattr(torch, dtype))
    e = getattr(ember.nn, cls)(*args, **kw).to(getattr(ember, dtype))
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    return e, t


def _inputs(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    return ([ember.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def _flat(result):
    """An RNN module's or cell's outputs as a flat list of tensors."""
    if hasattr(result, "batch_sizes"):                      # a PackedSequence
        return [result.data]
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _flat(r)]
    return [result]


def _check_grads(outs_e, outs_t, leaves_e, leaves_t, params_e, params_t, dtype):
    rng = np.random.default_rng(1)
    le, lt = 0, 0
    for a, b in zip(outs_e, outs_t):
        w = rng.standard_normal(tuple(b.shape)).astype(dtype)
        le = le + (a * ember.tensor(w)).sum()
        lt = lt + (b * torch.tensor(w)).sum()
    le.backward()
    lt.backward()
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-9, atol=1e-10)
    for a, b in list(zip(leaves_e, leaves_t)) + list(zip(params_e, params_t)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


RNN_CASES = [
    ("LSTM", {}), ("LSTM", dict(bias=False)), ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(batch_first=True)), ("LSTM", dict(batch_first=True, bidirectional=True)),
    ("LSTM", dict(proj_size=3)), ("LSTM", dict(proj_size=3, batch_first=True, num_layers=2)),
    ("LSTM", dict(num_layers=2, dropout=0.5)),
    ("GRU", {}), ("GRU", dict(num_layers=2, bidirectional=True)), ("GRU", dict(batch_first=True)),
    ("GRU", dict(bias=False, num_layers=2, dropout=0.5)),
    ("RNN", {}), ("RNN", dict(nonlinearity="relu", bidirectional=True)),
    ("RNN", dict(num_layers=2, bidirectional=True, batch_first=True)),
]


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("cls,kw", RNN_CASES)
def test_rnn_module_nodes(cls, kw, batched, dtype):
    e, t = _pair(None, cls, (4, 5), kw, dtype)
    if kw.get("dropout"):
        e.eval()
        t.eval()
    dirs = 2 * kw.get("num_layers", 1) if kw.get("bidirectional") else kw.get("num_layers", 1)
    x_shape = ((2, 3, 4) if kw.get("batch_first") else (3, 2, 4)) if batched else (3, 4)
    h_out = kw.get("proj_size") or 5
    lead = (dirs, 2) if batched else (dirs,)
    shapes = [x_shape, lead + (h_out,)] + ([lead + (5,)] if cls == "LSTM" else [])
    ins_e, ins_t = _inputs(shapes, dtype)
    hx_e = tuple(ins_e[1:]) if cls == "LSTM" else ins_e[1]
    hx_t = tuple(ins_t[1:]) if cls == "LSTM" else ins_t[1]
    for hx in (False, True):
        outs_e = _flat(e(ins_e[0], hx_e if hx else None))
        outs_t = _flat(t(ins_t[0], hx_t if hx else None))
        for a, b in zip(outs_e, outs_t):
            assert _levels(a.grad_fn, 3 if cls == "RNN" else 2) == \
                _levels(b.grad_fn, 3 if cls == "RNN" else 2)
            one_dnn = cls == "LSTM" and dtype == "float32" and not kw.get("proj_size")
            if one_dnn:             # torch's one node per layer: the same graph, edge by edge
                assert _tree(a.grad_fn, 4) == _tree(b.grad_fn, 4)
    _check_grads(outs_e, outs_t, ins_e, ins_t, list(e.parameters()), list(t.parameters()),
                 dtype)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("kw", [{}, dict(bidirectional=True, num_layers=2)])
@pytest.mark.parametrize("lengths", [[3, 2], [3, 3]])
def test_packed_nodes(cls, kw, lengths):
    dtype = "float32"
    e, t = _pair(None, cls, (4, 5), kw, dtype)
    ins_e, ins_t = _inputs([(3, 2, 4)], dtype)
    pe = ember.nn.utils.rnn.pack_padded_sequence(ins_e[0], lengths)
    pt = torch.nn.utils.rnn.pack_padded_sequence(ins_t[0], lengths)
    outs_e, outs_t = _flat(e(pe)), _flat(t(pt))
    for a, b in zip(outs_e, outs_t):
        assert _levels(a.grad_fn, 2) == _levels(b.grad_fn, 2)
    _check_grads(outs_e, outs_t, ins_e, ins_t, list(e.parameters()), list(t.parameters()),
                 dtype)


def test_lstm_oneDNN_node_edges_are_torchs():
    """(input, w_ih, w_hh, b_ih, b_hh, hx, cx): a hook on the node sees the gradients in
    that order."""
    e, t = _pair(None, "LSTM", (4, 5), {}, "float32")
    ins_e, ins_t = _inputs([(3, 2, 4), (1, 2, 5), (1, 2, 5)], "float32")
    seen = {}
    for lib, m, ins in (("ember", e, ins_e), ("torch", t, ins_t)):
        out, _ = m(ins[0], (ins[1], ins[2]))
        node = out.grad_fn
        node.register_hook(lambda gi, go, lib=lib: seen.__setitem__(
            lib, [None if g is None else tuple(g.shape) for g in gi]))
        out.sum().backward()
    assert seen["ember"] == seen["torch"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls,kw", [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {}),
                                    ("RNNCell", dict(nonlinearity="relu")),
                                    ("LSTMCell", dict(bias=False))])
def test_cell_nodes(cls, kw, dtype):
    """One record per step, its node named as torch's node of h; LSTMCell's c shows
    torch's AddBackward0 over it (torch: over the two products)."""
    e, t = _pair(None, cls, (4, 5), kw, dtype)
    shapes = [(2, 4), (2, 5)] + ([(2, 5)] if cls == "LSTMCell" else [])
    ins_e, ins_t = _inputs(shapes, dtype)
    hx_e = tuple(ins_e[1:]) if cls == "LSTMCell" else ins_e[1]
    hx_t = tuple(ins_t[1:]) if cls == "LSTMCell" else ins_t[1]
    outs_e, outs_t = _flat(e(ins_e[0], hx_e)), _flat(t(ins_t[0], hx_t))
    for a, b in zip(outs_e, outs_t):
        assert _name(a.grad_fn) == _name(b.grad_fn)
    if cls == "LSTMCell":
        assert _levels(outs_e[1].grad_fn, 2) == _levels(outs_t[1].grad_fn, 2)
    _check_grads(outs_e, outs_t, ins_e, ins_t, list(e.parameters()), list(t.parameters()),
                 dtype)


EINSUMS = [("ij->ij", [(3, 4)]), ("ij", [(3, 4)]), ("ij->ji", [(3, 4)]), ("ii->i", [(3, 3)]),
           ("ii", [(3, 3)]), ("ij->j", [(3, 4)]), ("ijk->kji", [(2, 3, 4)]),
           ("ij,ij->ij", [(3, 4), (3, 4)]), ("ij,ij->i", [(3, 4), (3, 4)]),
           ("i,i->", [(4,), (4,)]), ("i,j->ij", [(3,), (4,)]), ("i,j->", [(3,), (4,)]),
           ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]),
           ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
           ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]), ("i,i,i->i", [(3,), (3,), (3,)]),
           ("ij,j,k->ik", [(3, 4), (4,), (5,)]), ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
           ("...i,...i", [(2, 3), (2, 3)]), ("...i,...i->", [(2, 3), (2, 3)]),
           ("b i, b j -> b i j", [(2, 3), (2, 4)])]


@pytest.mark.parametrize("equation,shapes", EINSUMS)
def test_einsum_node(equation, shapes):
    ins_e, ins_t = _inputs(shapes, "float64")
    oe, ot = ember.einsum(equation, *ins_e), torch.einsum(equation, *ins_t)
    assert _name(oe.grad_fn) == _name(ot.grad_fn)
    _check_grads([oe], [ot], ins_e, ins_t, [], [], "float64")


def test_einsum_sublist_form_node():
    ins_e, ins_t = _inputs([(3, 4), (4, 5)], "float64")
    oe = ember.einsum(ins_e[0], [0, 1], ins_e[1], [1, 2], [0, 2])
    ot = torch.einsum(ins_t[0], [0, 1], ins_t[1], [1, 2], [0, 2])
    assert _name(oe.grad_fn) == _name(ot.grad_fn) == "ViewBackward0"


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4), (2, 3, 4, 4), (2, 3, 2, 2, 2)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_loss_nodes(fn, reduction, shape):
    """NllLossBackward0 -> LogSoftmaxBackward0 (the fused cross_entropy record too);
    NllLoss2DBackward0 for spatial inputs, with torch's views unless 4-D."""
    ins_e, ins_t = _inputs([shape], "float64")
    target = np.random.default_rng(2).integers(0, 3, (shape[0],) + shape[2:])
    outs = []
    for lib, x in ((ember, ins_e[0]), (torch, ins_t[0])):
        t = lib.tensor(target)
        if fn == "nll_loss":
            x = x.log_softmax(1)
        outs.append(getattr(lib.nn.functional, fn)(x, t, reduction=reduction))
    assert _tree(outs[0].grad_fn, 3) == _tree(outs[1].grad_fn, 3)
    _check_grads(outs[:1], outs[1:], ins_e, ins_t, [], [], "float64")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_label_smoothing_nodes(reduction, weighted):
    """torch scales the two terms with mul's Scalar overload (MulBackward1)."""
    ins_e, ins_t = _inputs([(4, 3)], "float64")
    w = np.random.default_rng(3).random(3)
    outs = []
    for lib, x in ((ember, ins_e[0]), (torch, ins_t[0])):
        outs.append(lib.nn.functional.cross_entropy(
            x, lib.tensor([0, 1, 2, 1]), weight=lib.tensor(w) if weighted else None,
            label_smoothing=0.2, reduction=reduction, ignore_index=1))
    assert _levels(outs[0].grad_fn, 3) == _levels(outs[1].grad_fn, 3)
    _check_grads(outs[:1], outs[1:], ins_e, ins_t, [], [], "float64")
