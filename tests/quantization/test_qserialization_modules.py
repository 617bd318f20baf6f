"""Whole quantized models and dynamic recurrences in torch's checkpoint format:
torch.save(model) read by ember.load (and back), dynamic LSTM/GRU state_dicts holding
``__torch__.torch.classes.rnn.CellParamsBase`` objects both ways."""
import copy
import io

import numpy as np
import pytest

import ember
from tests.quantization.conftest import assert_same_q, torch, to_torch
from tests.quantization.test_dynamic_rnn import torch_activations  # noqa: F401 (fixture)


def _torch_model():
    import torch.ao.nn.intrinsic.quantized as tnniq
    import torch.ao.nn.quantized as tnnq
    import torch.ao.nn.quantized.dynamic as tnnqd
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        tnnq.Quantize(0.1, 2, torch.quint8), tnnq.Conv2d(2, 4, 3, padding=1, stride=(1, 2)),
        tnniq.ConvReLU2d(4, 4, 3, padding=1, padding_mode="reflect"),
        tnnq.ConvTranspose2d(4, 2, 2), tnnq.DeQuantize(), torch.nn.Flatten(),
        tnnqd.Linear(2 * 6 * 6, 5)).eval()
    q = torch.quantize_per_tensor
    m[1].set_weight_bias(q(torch.randn(4, 2, 3, 3), 0.05, 0, torch.qint8), torch.randn(4))
    m[1].scale, m[1].zero_point = 0.3, 4
    m[2].set_weight_bias(q(torch.randn(4, 4, 3, 3), 0.04, 0, torch.qint8), torch.randn(4))
    m[2].scale, m[2].zero_point = 0.2, 0
    m[3].set_weight_bias(q(torch.randn(4, 2, 2, 2), 0.03, 0, torch.qint8), None)
    m[3].scale, m[3].zero_point = 0.25, 60
    return m


def test_torch_whole_quantized_model_loads_in_ember_and_back():
    tm = _torch_model()
    x = torch.rand(2, 2, 5, 10)
    buf = io.BytesIO()
    torch.save(tm, buf)
    em = ember.load(io.BytesIO(buf.getvalue()), weights_only=False)
    ex = ember.from_numpy(x.numpy())
    want = tm(x).numpy()
    np.testing.assert_array_equal(em(ex).numpy(), want)
    assert [type(m).__name__ for m in em] == [type(m).__name__ for m in tm]
    # ember's own file round trips; torch reads the same modules back
    again = io.BytesIO()
    ember.save(em, again)
    np.testing.assert_array_equal(
        ember.load(io.BytesIO(again.getvalue()), weights_only=False)(ex).numpy(), want)
    tm2 = torch.load(io.BytesIO(again.getvalue()), weights_only=False)
    for k in (1, 2, 3):
        assert type(tm2[k]) is type(tm[k])
        assert (tm2[k].scale, tm2[k].zero_point) == (tm[k].scale, tm[k].zero_point)
        assert (tm2[k].stride, tm2[k].padding, tm2[k].padding_mode) == \
            (tm[k].stride, tm[k].padding, tm[k].padding_mode)
        assert torch.equal(tm2[k].weight().int_repr(), tm[k].weight().int_repr())
        b2, b = tm2[k].bias(), tm[k].bias()
        assert (b2 is None and b is None) or torch.equal(b2, b)
    # (torch cannot run a convolution it unpickled this way: its __setstate__ leaves no
    # hook dicts; the rest of the model runs)
    assert torch.equal(tm2[6](torch.ones(3, 72)), tm[6](torch.ones(3, 72)))


def test_deepcopy_of_quantized_conv_keeps_hooks_and_values():
    import ember.ao.nn.quantized as nnq
    m = nnq.Conv2d(2, 3, 3, padding=1)
    calls = []
    m.register_forward_hook(lambda mod, i, o: calls.append(1))
    c = copy.deepcopy(m)
    x = ember.quantize_per_tensor(ember.rand(1, 2, 4, 4), 0.1, 2, ember.quint8)
    assert_same_q(c(x), to_torch(m(x)))
    assert len(calls) == 2


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", ["qint8", "float16"])
def test_dynamic_rnn_state_dict_both_ways(cls, dtype, torch_activations):  # noqa: F811
    import ember.ao.nn.quantized.dynamic as nnqd
    import torch.ao.nn.quantized.dynamic as tnnqd
    torch.manual_seed(1)
    tm = getattr(tnnqd, cls)(3, 4, num_layers=2, bidirectional=True,
                             dtype=getattr(torch, dtype))
    buf = io.BytesIO()
    torch.save(tm.state_dict(), buf)
    sd = ember.load(io.BytesIO(buf.getvalue()), weights_only=False)
    em = getattr(nnqd, cls)(3, 4, num_layers=2, bidirectional=True,
                            dtype=getattr(ember, dtype))
    em.load_state_dict(sd)
    x = torch.randn(5, 2, 3)
    want = tm(x)[0].detach().numpy()
    np.testing.assert_array_equal(em(ember.from_numpy(x.numpy()))[0].numpy(), want)
    back = io.BytesIO()
    ember.save(em.state_dict(), back)
    tm2 = getattr(tnnqd, cls)(3, 4, num_layers=2, bidirectional=True,
                              dtype=getattr(torch, dtype))
    tm2.load_state_dict(torch.load(io.BytesIO(back.getvalue()), weights_only=False))
    np.testing.assert_array_equal(tm2(x)[0].detach().numpy(), want)


def _whole(name):
    import torch.ao.nn.quantized as tnnq
    import torch.ao.nn.quantized.dynamic as tnnqd
    torch.manual_seed(2)
    q = torch.nn.Sequential
    return {
        "Embedding": (tnnq.Embedding(10, 4), (torch.tensor([1, 2, 3]),)),
        "EmbeddingBag": (tnnq.EmbeddingBag(10, 4, include_last_offset=True),
                         (torch.tensor([1, 2, 3]), torch.tensor([0, 1, 3]))),
        "Conv1d": (q(tnnq.Quantize(0.1, 2, torch.quint8), tnnq.Conv1d(2, 3, 3, stride=2),
                     tnnq.DeQuantize()), (torch.rand(1, 2, 7),)),
        "Linear": (q(tnnq.Quantize(0.1, 2, torch.quint8), tnnq.Linear(3, 2),
                     tnnq.DeQuantize()), (torch.rand(2, 3),)),
        "DynamicConv2d": (tnnqd.Conv2d(2, 3, 3), (torch.rand(1, 2, 5, 5),)),
        "DynamicLSTM": (tnnqd.LSTM(3, 4), (torch.rand(5, 1, 3),)),
        "DynamicLSTMCell": (tnnqd.LSTMCell(3, 4), (torch.rand(2, 3),)),
    }[name]


@pytest.mark.parametrize("name", ["Embedding", "EmbeddingBag", "Conv1d", "Linear",
                                  "DynamicConv2d", "DynamicLSTM", "DynamicLSTMCell"])
def test_torch_saved_whole_modules_run_in_ember(name, torch_activations):  # noqa: F811
    tm, args = _whole(name)
    buf = io.BytesIO()
    torch.save(tm, buf)
    em = ember.load(io.BytesIO(buf.getvalue()), weights_only=False)
    got, want = em(*[ember.from_numpy(a.numpy()) for a in args]), tm(*args)
    got, want = (got[0], want[0]) if isinstance(want, tuple) else (got, want)
    np.testing.assert_array_equal(got.numpy(), want.detach().numpy())
    again = io.BytesIO()
    ember.save(em, again)
    assert type(torch.load(io.BytesIO(again.getvalue()), weights_only=False)) is type(tm)
