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
