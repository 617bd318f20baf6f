"""FX graph mode as user programs see it: convert_fx moves the global random generator as
torch's does (it builds every reference module with its float constructor), so numbers a
program draws after converting equal torch's."""
import copy

import pytest
import torch

import ember


def _cases(lib):
    nn, q = lib.nn, lib.ao.quantization
    return {
        "linear": (lambda: nn.Sequential(nn.Linear(8, 6)), q.get_default_qconfig_mapping(),
                   (3, 8)),
        "linear_relu": (lambda: nn.Sequential(nn.Linear(8, 6), nn.ReLU()),
                        q.get_default_qconfig_mapping(), (3, 8)),
        "conv_bn_relu": (lambda: nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3),
                                               nn.ReLU()), q.get_default_qconfig_mapping(),
                         (1, 2, 5, 5)),
        "unquantized": (lambda: nn.Sequential(nn.Linear(8, 6)), q.QConfigMapping(), (3, 8)),
        "dynamic": (lambda: nn.Sequential(nn.Linear(8, 6)),
                    q.QConfigMapping().set_global(q.default_dynamic_qconfig), (3, 8)),
        "float16": (lambda: nn.Sequential(nn.Linear(8, 6)),
                    q.QConfigMapping().set_global(q.float16_dynamic_qconfig), (3, 8)),
    }


def _draw_after_convert(lib, name, mode):
    from importlib import import_module
    fx = import_module(lib.__name__ + ".ao.quantization.quantize_fx")
    make, mapping, shape = _cases(lib)[name]
    lib.manual_seed(0)
    model = make()
    x = lib.randn(*shape)
    if mode == "qat":
        model.train()
        mapping = lib.ao.quantization.get_default_qat_qconfig_mapping()
        prepared = fx.prepare_qat_fx(model, mapping, example_inputs=(x,))
        prepared(x)
        prepared.eval()
    else:
        prepared = fx.prepare_fx(model.eval(), mapping, example_inputs=(x,))
        prepared(x)
    convert = fx.convert_to_reference_fx if mode == "reference" else fx.convert_fx
    converted = convert(copy.deepcopy(prepared))
    return converted, x, lib.randn(4).tolist()


@pytest.mark.parametrize("name", list(_cases(torch)))
@pytest.mark.parametrize("mode", ["convert", "reference"])
def test_convert_fx_draws_as_torch(name, mode):
    _, _, expected = _draw_after_convert(torch, name, mode)
    _, _, got = _draw_after_convert(ember, name, mode)
    assert got == expected


@pytest.mark.parametrize("name", ["linear", "linear_relu", "conv_bn_relu"])
def test_convert_qat_fx_draws_as_torch(name):
    t_model, t_x, expected = _draw_after_convert(torch, name, "qat")
    e_model, e_x, got = _draw_after_convert(ember, name, "qat")
    assert got == expected


def test_float16_reference_module():
    """A float16 weight observer (no quantization parameters) gives a reference module whose
    weight is float16-typed, as torch's."""
    t_model, _, _ = _draw_after_convert(torch, "float16", "reference")
    e_model, _, _ = _draw_after_convert(ember, "float16", "reference")
    t_ref, e_ref = getattr(t_model, "0"), getattr(e_model, "0")
    assert e_ref.weight_qscheme is None and t_ref.weight_qscheme is None
    assert str(e_ref.weight_dtype) == str(t_ref.weight_dtype) == "torch.float16"


def _converted(lib):
    from importlib import import_module
    fx = import_module(lib.__name__ + ".ao.quantization.quantize_fx")
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(4, 2)).eval()
    x = lib.randn(2, 3, 6, 6)
    mapping = lib.ao.quantization.get_default_qconfig_mapping("x86")
    prepared = fx.prepare_fx(model, mapping, example_inputs=(x,))
    prepared(x)
    return fx.convert_fx(prepared), x


def test_jit_script_of_convert_fx_model():
    """jit.script compiles the generated forward under its own globals (``torch``)."""
    import io
    import numpy as np
    t_model, t_x = _converted(torch)
    e_model, e_x = _converted(ember)
    scripted = ember.jit.script(e_model)
    buf = io.BytesIO()
    ember.jit.save(scripted, buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    expected = t_model(t_x).numpy()
    for out in (e_model(e_x), scripted(e_x), loaded(e_x)):
        np.testing.assert_allclose(out.numpy(), expected, atol=0.05)
        assert ember.equal(out, e_model(e_x))


def _shadow_of_prepared(lib):
    """add_shadow_loggers with the prepared model as model A (the tutorials' way)."""
    from importlib import import_module
    fx = import_module(lib.__name__ + ".ao.quantization.quantize_fx")
    ns = import_module(lib.__name__ + ".ao.ns._numeric_suite_fx")
    nn = lib.nn
    lib.manual_seed(30)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3)).eval()
    x = lib.randn(5, 4)
    prepared = fx.prepare_fx(copy.deepcopy(model),
                             lib.ao.quantization.get_default_qconfig_mapping(),
                             example_inputs=(x,))
    prepared(x)
    converted = fx.convert_fx(copy.deepcopy(prepared))
    shadow = ns.add_shadow_loggers("fp32", prepared, "int8", converted, ns.OutputLogger)
    shadow(x)
    info = ns.extract_shadow_logger_info(shadow, ns.OutputLogger, "int8")
    entries = {layer: {model: [(e["ref_node_name"], e["prev_node_name"],
                                e["prev_node_target_type"], e["ref_node_target_type"])
                               for e in lst]
                       for model, lst in info[layer]["node_output"].items()}
               for layer in info}
    return shadow.code, [n for n, _ in shadow.named_children()], entries


def test_shadow_loggers_of_prepared_model():
    """The copy of model A's subgraph takes its observer along; fused modules and observers
    are called positionally, torch.nn's modules with keywords."""
    t_code, t_children, t_entries = _shadow_of_prepared(torch)
    e_code, e_children, e_entries = _shadow_of_prepared(ember)
    assert e_code == t_code
    assert e_children == t_children
    strip = lambda d: repr(d).replace("ember.", "torch.")  # noqa: E731
    assert strip(e_entries) == strip(t_entries)
