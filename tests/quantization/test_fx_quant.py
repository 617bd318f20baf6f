"""FX graph mode quantization against torch: backend configs, prepared and converted
graphs (node ops/targets and generated code), converted integers."""
import operator

import pytest
import torch

import ember
from ember.fx._names import public_name
from ember.ao.quantization import backend_config as ebc
import torch.ao.quantization.quantize_fx  # noqa: F401  (loads torch's backend_config.utils)
from torch.ao.quantization import backend_config as tbc


def _name(p):
    if isinstance(p, tuple):
        return tuple(_name(x) for x in p)
    if isinstance(p, str):
        return p
    if not isinstance(p, type) and (getattr(p, "__module__", None) or "").startswith("ember"):
        public = public_name(p)        # ember.cat's function is named _cat_front
        if public:
            return public.rsplit(".", 1)[1]
    return getattr(p, "__name__", str(p))


@pytest.mark.parametrize("getter", ["get_native_backend_config", "get_fbgemm_backend_config",
                                    "get_qnnpack_backend_config"])
def test_backend_config_patterns_are_torchs(getter):
    """Every ember pattern is one of torch's, with the same observation type and dtypes."""
    mine = getattr(ebc, getter)()
    theirs = {(_name(c.pattern), c.observation_type.name): c for c in getattr(tbc, getter)().configs}
    assert mine.name == getattr(tbc, getter)().name
    for conf in mine.configs:
        key = (_name(conf.pattern), conf.observation_type.name)
        assert key in theirs, key
        want = [(str(d.input_dtype), str(d.output_dtype), str(d.weight_dtype), d.is_dynamic)
                for d in theirs[key].dtype_configs]
        got = [(str(d.input_dtype), str(d.output_dtype), str(d.weight_dtype), d.is_dynamic)
               for d in conf.dtype_configs]
        assert got == want, key
        assert conf._input_type_to_index == theirs[key]._input_type_to_index


def test_backend_config_core_patterns_present():
    names = {_name(c.pattern) for c in ebc.get_native_backend_config().configs}
    for p in [("Conv2d", "ReLU"), ("Conv2d", "BatchNorm2d", "ReLU"), "linear", "Linear",
              ("add", "relu"), "add", "cat", "flatten", "sigmoid", "hardswish", "reshape",
              "AdaptiveAvgPool2d", "shape", ("Linear", "ReLU")]:
        assert p in names, p
    sig = [c for c in ebc.get_native_backend_config().configs if c.pattern is ember.sigmoid][0]
    assert sig.dtype_configs[0].output_dtype_with_constraints.scale_exact_match == 1 / 256
    add = [c for c in ebc.get_native_backend_config().configs if c.pattern is operator.add][0]
    assert add.observation_type is ebc.ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT


def test_backend_config_dict_round_trip():
    conf = ebc.BackendPatternConfig(ember.add).add_dtype_config(
        ebc.DTypeConfig(ember.quint8, ember.quint8))
    back = ebc.BackendConfig("mine").set_backend_pattern_config(conf)
    again = ebc.BackendConfig.from_dict(back.to_dict())
    assert again.name == "mine" and again.configs[0].pattern is ember.add
    assert again.configs[0].dtype_configs[0].input_dtype is ember.quint8
