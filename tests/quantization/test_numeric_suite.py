"""Eager Numeric Suite (ember.ao.ns._numeric_suite) against torch's: result keys, shapes,
dtypes and values for a QuantStub-conv-relu-linear model."""
import copy

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.ao.ns._numeric_suite as tns
import torch.ao.quantization as tqa

import ember
import ember.nn as enn
import ember.ao.ns._numeric_suite as ens
import ember.ao.quantization as eqa

from tests.quantization.conftest import assert_same_q


def _build(nn, qa):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = qa.QuantStub()
            self.conv = nn.Conv2d(3, 4, 3)
            self.relu = nn.ReLU()
            self.fc = nn.Linear(4 * 6 * 6, 2)
            self.dequant = qa.DeQuantStub()

        def forward(self, x):
            x = self.relu(self.conv(self.quant(x)))
            return self.dequant(self.fc(x.reshape(x.shape[0], -1)))
    return M().eval()


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    tm, em = _build(tnn, tqa), _build(enn, eqa)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    x = torch.randn(2, 3, 8, 8)
    ex = ember.from_numpy(x.numpy().copy())
    tm.qconfig = tqa.get_default_qconfig("x86")
    em.qconfig = eqa.get_default_qconfig("x86")
    tp, ep = tqa.prepare(copy.deepcopy(tm)), eqa.prepare(copy.deepcopy(em))
    tp(x)
    ep(ex)
    return tm, em, tqa.convert(tp), eqa.convert(ep), x, ex


def _close_q(e, t, steps=2):
    """Same dtype and shape; values within ``steps`` quantization steps (the scales come
    from observers of float outputs that differ from torch's in the last ulp)."""
    assert str(e.dtype) == str(t.dtype) and e.shape == tuple(t.shape)
    if t.is_quantized:
        np.testing.assert_allclose(e.dequantize().numpy(), t.dequantize().numpy(),
                                   atol=steps * t.q_scale() * 1.0001)
    else:
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_compare_weights(models):
    tm, em, tq, eq, _, _ = models
    want = tns.compare_weights(tm.state_dict(), tq.state_dict())
    got = ens.compare_weights(em.state_dict(), eq.state_dict())
    assert list(got) == list(want) == ["conv.weight", "fc._packed_params._packed_params"]
    for key in want:
        np.testing.assert_array_equal(got[key]["float"].detach().numpy(),
                                      want[key]["float"].detach().numpy())
        assert_same_q(got[key]["quantized"], want[key]["quantized"])


def test_compare_model_outputs(models):
    tm, em, tq, eq, x, ex = models
    want = tns.compare_model_outputs(copy.deepcopy(tm), copy.deepcopy(tq), x)
    got = ens.compare_model_outputs(copy.deepcopy(em), copy.deepcopy(eq), ex)
    assert list(got) == list(want) == ["quant.stats", "conv.stats", "fc.stats"]
    for key in want:
        for side in ("float", "quantized"):
            assert len(got[key][side]) == len(want[key][side]) == 1
            _close_q(got[key][side][0], want[key][side][0])


def test_compare_model_stub_logs_first_sample_as_torch(models):
    tm, em, tq, eq, x, ex = models
    want = tns.compare_model_stub(copy.deepcopy(tm), copy.deepcopy(tq), [tnn.Conv2d, tnn.Linear], x)
    got = ens.compare_model_stub(copy.deepcopy(em), copy.deepcopy(eq), [enn.Conv2d, enn.Linear],
                                 ex)
    assert list(got) == list(want) == ["conv.stats", "fc.stats"]
    for key in want:
        for side in ("float", "quantized"):
            # ShadowLogger logs x[0] of a value with len() > 1: the batch's first sample
            assert got[key][side][0].shape == tuple(want[key][side][0].shape)
            _close_q(got[key][side][0], want[key][side][0])


def test_prepare_model_with_stubs_and_outputs_structure(models):
    tm, em, tq, eq, x, ex = models
    tq2, eq2 = copy.deepcopy(tq), copy.deepcopy(eq)
    tns.prepare_model_with_stubs(copy.deepcopy(tm), tq2, [tnn.Conv2d], tns.ShadowLogger)
    ens.prepare_model_with_stubs(copy.deepcopy(em), eq2, [enn.Conv2d], ens.ShadowLogger)
    assert [n for n, _ in eq2.named_modules()] == [n for n, _ in tq2.named_modules()]
    assert type(eq2.conv).__name__ == "Shadow"
    tf3, tq3, ef3, eq3 = copy.deepcopy(tm), copy.deepcopy(tq), copy.deepcopy(em), \
        copy.deepcopy(eq)
    tns.prepare_model_outputs(tf3, tq3)
    ens.prepare_model_outputs(ef3, eq3)
    assert [n for n, _ in ef3.named_modules()] == [n for n, _ in tf3.named_modules()]
    assert [n for n, _ in eq3.named_modules()] == [n for n, _ in tq3.named_modules()]
    tf3(x), tq3(x), ef3(ex), eq3(ex)
    assert list(ens.get_logger_dict(eq3)) == list(tns.get_logger_dict(tq3))
    act_t, act_e = tns.get_matching_activations(tf3, tq3), ens.get_matching_activations(ef3, eq3)
    assert list(act_e) == list(act_t)


def test_loggers():
    x = ember.randn(3, 2)
    out = ens.OutputLogger()
    assert out(x) is x and out.stats["tensor_val"][0] is x and out.dtype is ember.quint8
    shadow = ens.ShadowLogger()
    shadow(x, x + 1)
    assert shadow.stats["quantized"][0].shape == (2,)        # x[0]: len(x) > 1
    one = ember.randn(1, 3)
    shadow(one, one)
    assert shadow.stats["float"][1].shape == (1, 3)


def _build_ff(nn, qa, nnq):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = qa.QuantStub()
            self.conv = nn.Conv2d(3, 3, 1)
            self.ff = nnq.FloatFunctional()
            self.dequant = qa.DeQuantStub()

        def forward(self, x):
            x = self.quant(x)
            return self.dequant(self.ff.add(self.conv(x), x))
    return M().eval()


def test_compare_model_stub_shadows_float_functional_add():
    import torch.ao.nn.quantized as tnnq
    import ember.ao.nn.quantized as ennq
    torch.manual_seed(0)
    tm, em = _build_ff(tnn, tqa, tnnq), _build_ff(enn, eqa, ennq)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    x = torch.randn(2, 3, 4, 4)
    ex = ember.from_numpy(x.numpy().copy())
    tm.qconfig, em.qconfig = tqa.get_default_qconfig("x86"), eqa.get_default_qconfig("x86")
    tp, ep = tqa.prepare(copy.deepcopy(tm)), eqa.prepare(copy.deepcopy(em))
    tp(x)
    ep(ex)
    tq, eq = tqa.convert(tp), eqa.convert(ep)
    want = tns.compare_model_stub(tm, tq, [tnnq.FloatFunctional], x)
    got = ens.compare_model_stub(em, eq, [ennq.FloatFunctional], ex)
    assert list(got) == list(want) == ["ff.stats"]
    for side in ("float", "quantized"):
        _close_q(got["ff.stats"][side][0], want["ff.stats"][side][0])


def test_default_compare_output_module_list_is_torchs():
    def name(c):
        path = f"{c.__module__}.{c.__qualname__}"
        return "torch" + path[len("ember"):] if path.startswith("ember") else path
    theirs = {name(c) for c in tns.get_default_compare_output_module_list()}
    mine = {name(c) for c in ens.get_default_compare_output_module_list()}
    assert mine == theirs
