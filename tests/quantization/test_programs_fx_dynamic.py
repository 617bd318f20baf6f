"""FX dynamic and float16 quantization as programs use it, against torch: functional
linears lower to quantized::linear_dynamic(_fp16), reference graphs quantize dynamically,
reference modules save their weight scheme."""
import copy
from importlib import import_module

import numpy as np
import pytest
import torch

import ember


def _model(lib):
    nn, F = lib.nn, lib.nn.functional

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(4, 4)
            self.w = nn.Parameter(lib.randn(3, 4))

        def forward(self, x):
            return F.linear(F.relu(self.l(x)), self.w)
    return M


def _run(lib, qconfig_name, reference):
    fx = import_module(lib.__name__ + ".ao.quantization.quantize_fx")
    q = lib.ao.quantization
    lib.manual_seed(0)
    model = _model(lib)().eval()
    x = lib.randn(2, 4)
    mapping = q.QConfigMapping().set_global(getattr(q, qconfig_name))
    prepared = fx.prepare_fx(model, mapping, example_inputs=(x,))
    prepared(x)
    convert = fx.convert_to_reference_fx if reference else fx.convert_fx
    converted = convert(prepared)
    code = converted.code.replace("torch._C._nn.linear", "torch.nn.functional.linear")
    return code, converted(x).detach().numpy()


@pytest.mark.parametrize("qconfig_name", ["default_dynamic_qconfig", "float16_dynamic_qconfig",
                                          "float16_static_qconfig"])
@pytest.mark.parametrize("reference", [False, True])
def test_dynamic_graphs_as_torch(qconfig_name, reference):
    t_code, t_out = _run(torch, qconfig_name, reference)
    e_code, e_out = _run(ember, qconfig_name, reference)
    assert e_code == t_code
    np.testing.assert_allclose(e_out, t_out, rtol=1e-5, atol=1e-6)


def test_dynamic_functional_linear_lowered_bit_exact():
    """quantized::linear_dynamic on the same packed weight gives torch's floats."""
    t_code, t_out = _run(torch, "default_dynamic_qconfig", False)
    e_code, e_out = _run(ember, "default_dynamic_qconfig", False)
    assert "torch.ops.quantized.linear_dynamic(" in e_code
    np.testing.assert_array_equal(e_out, t_out)


QPARAMS = [
    lambda lib: {"qscheme": lib.per_tensor_affine, "dtype": lib.qint8, "scale": 0.1,
                 "zero_point": 0},
    lambda lib: {"qscheme": lib.per_channel_affine, "dtype": lib.qint8,
                 "scale": lib.tensor([0.1, 0.2], dtype=lib.float64),
                 "zero_point": lib.tensor([0, 1]), "axis": 0},
    lambda lib: {"qscheme": None, "dtype": lib.float16},
    lambda lib: None,
]


def _ref_state(lib, qparams):
    ref = lib.ao.nn.quantized.reference.Linear(3, 2, weight_qparams=qparams(lib))
    return {k: (str(v.dtype), tuple(v.shape)) if k.startswith("weight_") and
            isinstance(v, lib.Tensor) else str(v) if k.startswith("weight_") else k
            for k, v in ref.state_dict().items()}


@pytest.mark.parametrize("qparams", QPARAMS)
def test_reference_module_state_dict(qparams):
    assert _ref_state(ember, qparams) == _ref_state(torch, qparams)


def test_reference_module_loads_another_scheme():
    ref = ember.ao.nn.quantized.reference
    per_channel = ref.Linear(3, 2, weight_qparams=QPARAMS[1](ember))
    fp16 = ref.Linear(3, 2, weight_qparams=QPARAMS[2](ember))
    fp16.load_state_dict(per_channel.state_dict())
    assert fp16.weight_qscheme is ember.per_channel_affine
    assert fp16.weight_scale.dtype is ember.float64 and fp16.weight_scale.shape == (2,)
    assert ember.equal(fp16.get_weight(), per_channel.get_weight())
