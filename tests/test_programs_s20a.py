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
