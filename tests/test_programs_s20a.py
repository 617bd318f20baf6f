"""Regressions of round 14a (session 20): the differences rounds 13a/13b left (torch's
parser texts for a mistyped first element of an int list, the output layout of binary ops
mixing memory formats, sparse Embedding gradients with ``padding_idx``, pack_padded_sequence's
order of tied lengths) and what quantization / FX / TorchScript / ONNX programs hit next,
each checked against torch."""
import numpy as np
import pytest

import ember
from helpers import assert_same_outcome

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


# ------------------------------------------------ int lists: a mistyped first element
# (Note [int lists] in ember/_dispatch.py). Each case is source text run with ``T`` the
# library and ``x`` a 4x4 tensor of it, so the call sites are the user's.

INT_LIST_CASES = [
    "x.view(4.0, 4)", "x.view(4, 4.0)", "x.view((4.0, 4))", "x.view([4, 'a'])",
    "x.view(size=(4.0, 4))", "x.view(None, 4)", "x.view(True, 16)", "x.view((True, 16))",
    "x.view(T.tensor(4.), 4)", "x.permute(0.0, 1)", "x.permute(0, 1.0)", "x.permute((0., 1))",
    "x.permute(dims=(0., 1))", "T.permute(x, (0., 1))", "T.permute(x, (0, 1.))",
    "T.zeros(2.0, 3)", "T.zeros(2, 3.0)", "T.zeros((2.0, 3))", "T.zeros(size=(2., 3))",
    "T.zeros((True, 2))", "T.ones(2., 3, 4)", "T.empty(2.0)", "T.full((2., 3), 1)",
    "x.new_zeros(2., 3)", "x.new_zeros((2., 3))", "T.empty_strided((2., 2), (1, 1))",
    "T.empty_strided((2, 2), (1., 1))", "T.flip(x, (0.0,))", "x.flip(0., 1)",
    "x.flip(dims=(0., 1))", "x.reshape(4.0, 4)", "T.reshape(x, (4., 4))", "x.expand(4.0, 4)",
    "x.expand((4., 4))", "x.repeat(2.0, 1)", "x.repeat((2., 1))", "x.tile((2., 1))",
    "x.amax((0., 1))", "x.amax(dim=(0., 1))", "x.roll((1., 1), (0, 1))", "x.sum((0., 1))",
    "T.sum(x, (0., 1))", "x.squeeze((0., 1))", "x.squeeze(dim=(0., 1))",
    "x.movedim((0., 1), (1, 0))", "x.movedim([0., 1], [1, 0])", "x.movedim(0., 1)",
    "x.movedim((0, 1), 'a')", "x.moveaxis((0., 1), (1, 0))", "T.movedim(x, (0., 1), (1, 0))",
    "x.std((0., 1))", "T.var(x, (0., 1))", "x.logsumexp((0., 1))", "x.nansum((0., 1))",
    "x.count_nonzero((0., 1))", "x.broadcast_to((4., 4))", "x.tensor_split([1., 2])",
    "x.split([2., 2])", "x.as_strided((2., 2), (1, 1))", "T.as_strided(x, (2, 2), (1., 1))",
    "T.linalg.vector_norm(x, 2, (0., 1))", "T.linalg.vector_norm(x, dim=(0., 1))",
    "T.fft.fftn(x, (2., 2))", "T.fft.fftn(x, s=(2., 2))", "x.clone().resize_((2., 2))",
    "x.clone().resize_(2., 2)", "T.tensordot(x, x, dims=([0.], [1]))",
    "T.nn.functional.max_pool2d(T.zeros(1, 1, 4, 4), (2., 2))",
    "x.narrow(0, start='a', length=1)", "x.narrow(dim=0, start='a', length=1)",
    "x.view(size=[4., 4])",
]


@pytest.mark.parametrize("src", INT_LIST_CASES)
def test_int_list_first_element_texts(src):
    code = compile(src, "<user>", "eval")

    def run(T):
        return eval(code, {"T": T, "x": T.zeros(4, 4)})
    assert_same_outcome(run)


# ------------------------------------------ binary ops of mixed memory formats
# (Note [binary layout] in ember/_ops/core.py): the first operand that tells two dims apart
# decides the result's layout, as torch's TensorIterator does.

def _layouts(T):
    g = np.random.default_rng(3)
    cl, cl3 = T.channels_last, T.channels_last_3d
    b = T.tensor(g.standard_normal((2, 3, 4, 5)), dtype=T.float32)
    a = b.flip(0).contiguous(memory_format=cl)
    a3 = T.tensor(g.standard_normal((2, 3, 2, 4, 5)), dtype=T.float32).contiguous(
        memory_format=cl3)
    b3 = T.tensor(g.standard_normal((2, 3, 2, 4, 5)), dtype=T.float32)
    bc = T.tensor(g.standard_normal((3, 1, 1)), dtype=T.float32)
    big = T.tensor(g.standard_normal((4, 16, 64, 64)), dtype=T.float32)
    bigc = big.flip(0).contiguous(memory_format=cl)
    t = a.transpose(2, 3)
    cases = [
        a + b, b + a, a - b, b - a, a * b, b * a, T.add(a, b), T.add(b, a, alpha=2),
        T.sub(a, b, alpha=2), T.mul(a, b), a + bc, bc + a, a * bc, a + 1, 2 - a,
        a3 + b3, b3 + a3, a3 * b3, a3 - b3, t + b.transpose(2, 3), b.transpose(2, 3) + t,
        a.clone().add_(b), b.clone().add_(a), T.add(a, b, out=T.empty(0)),
        T.mul(a, b, out=T.empty(0)), T.sub(b, a, out=T.empty(0)), a + b.double(),
        a.bfloat16() + b.bfloat16(), a.half() * b.half(), bigc + big, big + bigc,
        bigc * big, T.add(bigc, big, alpha=0.5), a.T + b.T, a.requires_grad_() * b,
    ]
    return [(tuple(r.shape), r.stride(), r.dtype == T.float32,
             float(r.detach().double().sum())) for r in cases]


def test_binary_ops_lay_out_mixed_formats_as_torch():
    got, want = _layouts(ember), _layouts(torch)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g[:3] == w[:3], k
        assert abs(g[3] - w[3]) <= 1e-3 * max(1.0, abs(w[3])), k


# ------------------------------------------ sparse Embedding gradients and padding_idx

def _sparse_embedding(T, pad, bag=False):
    T.manual_seed(0)
    idx = T.tensor([[0, 2, 3], [3, 5, 0], [1, 3, 5]])
    if bag:
        e = T.nn.EmbeddingBag(6, 3, mode="sum", sparse=True, padding_idx=pad)
        e.weight.data.copy_(T.arange(18.).reshape(6, 3))
        out = e(idx)
    else:
        e = T.nn.Embedding(6, 3, padding_idx=pad, sparse=True)
        e.weight.data.copy_(T.arange(18.).reshape(6, 3))
        out = e(idx)
    (out * T.arange(1., 4.)).sum().backward()
    g = e.weight.grad
    c = g.coalesce()
    return (g._nnz(), g._indices().tolist(), g._values().tolist(), c._nnz(),
            c.indices().tolist(), c.values().tolist(), g.to_dense().tolist())


@pytest.mark.parametrize("bag", [False, True])
@pytest.mark.parametrize("pad", [0, 3, -1, None])
def test_sparse_embedding_gradient_leaves_out_padding(pad, bag):
    assert _sparse_embedding(ember, pad, bag) == _sparse_embedding(torch, pad, bag)


def test_sparse_embedding_padding_only_and_frequency_scaling():
    def run(T):
        e = T.nn.Embedding(4, 2, padding_idx=1, sparse=True)
        e(T.tensor([1, 1])).sum().backward()
        g = e.weight.grad
        return g._nnz(), g._indices().tolist(), tuple(g._values().shape)
    assert run(ember) == run(torch)

    def scaled(T):
        e = T.nn.Embedding(6, 3, padding_idx=3, sparse=True, scale_grad_by_freq=True)
        e(T.tensor([3, 3, 1])).sum().backward()
    assert_same_outcome(scaled)


def _sparse_adam(T):
    T.manual_seed(1)
    emb = T.nn.Embedding(10, 4, padding_idx=0, sparse=True)
    lin = T.nn.Linear(4, 1)
    with T.no_grad():
        emb.weight.copy_(T.linspace(-1, 1, 40).reshape(10, 4))
        emb.weight[0].zero_()
        lin.weight.copy_(T.tensor([[0.5, -0.25, 0.125, 1.0]]))
        lin.bias.zero_()
    opt = T.optim.SparseAdam(list(emb.parameters()), lr=0.05)
    data = T.tensor([[0, 1, 2, 3, 0], [4, 0, 5, 6, 7], [8, 9, 0, 0, 1]])
    y = T.tensor([0.5, -1.0, 2.0])
    losses, nnz = [], []
    for _ in range(4):
        opt.zero_grad()
        loss = ((lin(emb(data).mean(1)).squeeze(1) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        nnz.append(emb.weight.grad._nnz())
    return losses, nnz, emb.weight.detach().numpy().copy()


def test_sparse_adam_with_padding_idx_as_torch():
    le, ne, we = _sparse_adam(ember)
    lt, nt, wt = _sparse_adam(torch)
    assert ne == nt
    np.testing.assert_allclose(le, lt, rtol=1e-6)
    np.testing.assert_allclose(we, wt, rtol=1e-5, atol=1e-7)
    assert not we[0].any()


# ------------------------------------------ pack_padded_sequence: torch's order of ties

def _packed(T, n, k, seed):
    rng = np.random.default_rng(seed)
    lengths = [int(v) for v in rng.integers(1, k + 1, n)]
    x = T.arange(n * k, dtype=T.float32).reshape(k, n)
    p = T.nn.utils.rnn.pack_padded_sequence(x, T.tensor(lengths), enforce_sorted=False)
    seqs = [T.arange(float(m)) + 10 * i for i, m in enumerate(lengths)]
    q = T.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
    return (p.sorted_indices.tolist(), p.unsorted_indices.tolist(), p.data.tolist(),
            p.batch_sizes.tolist(), q.sorted_indices.tolist(), q.data.tolist())


@pytest.mark.parametrize("n,k", [(17, 2), (20, 3), (33, 5), (64, 1), (100, 4), (200, 8)])
def test_pack_padded_sequence_orders_ties_as_torch(n, k):
    assert _packed(ember, n, k, n) == _packed(torch, n, k, n)


# ------------------------------------------ quantization, FX, TorchScript, ONNX programs

def test_unobserved_histogram_observer_warns_as_torch():
    import warnings

    def run(T):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = T.ao.quantization.HistogramObserver().calculate_qparams()
        return [str(x.message) for x in w], w[0].filename, r[0].tolist(), r[1].tolist()
    got, want = run(ember), run(torch)
    assert got[0] == want[0] and got[2:] == want[2:]
    assert got[1] == __file__           # (stacklevel: the caller's line, as torch's)


def _traced_indexing(T):
    import io

    class E(T.nn.Module):
        def forward(self, h):
            return (h[-1] * 2, h[..., 0], h[:, None], h[0, 1:], h[1:, ::2],
                    h[None, ..., 1:3], h[..., None])
    x = T.arange(12.).reshape(3, 4)
    tm = T.jit.trace(E(), x)
    buf = io.BytesIO()
    T.jit.save(tm, buf)
    buf.seek(0)
    loaded = T.jit.load(buf)
    y = T.arange(12.).reshape(3, 4) * 3 - 5
    return [r.tolist() for r in loaded(y)]


def test_traced_basic_indexing_saves_and_loads():
    assert _traced_indexing(ember) == _traced_indexing(torch)


def _traced_lstm_round_trip(T):
    import io

    class Enc(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = T.nn.Embedding(10, 4)
            self.rnn = T.nn.LSTM(4, 6, batch_first=True)
            self.out = T.nn.Linear(6, 2)

        def forward(self, x):
            o, (h, c) = self.rnn(self.emb(x))
            return self.out(h[-1])
    T.manual_seed(0)
    m = Enc().eval()
    x = T.tensor([[1, 2, 3, 4, 5], [0, 9, 8, 7, 6], [3, 3, 3, 3, 3]])
    tm = T.jit.trace(m, x)
    buf = io.BytesIO()
    T.jit.save(tm, buf)
    buf.seek(0)
    loaded = T.jit.load(buf)
    return T.equal(loaded(x), tm(x)), sorted(k for k, _ in loaded.named_parameters())


def test_traced_lstm_model_saves_and_loads():
    assert _traced_lstm_round_trip(ember) == _traced_lstm_round_trip(torch)
