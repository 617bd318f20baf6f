"""Observers and fake quantizers as user programs load and misuse them, against torch."""
import pytest
import torch

import ember


def _load_error(lib, make, state):
    try:
        result = make(lib).load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        return repr(result)
    except RuntimeError as e:
        return str(e)


OBSERVERS = {
    "minmax": lambda lib: lib.ao.quantization.MinMaxObserver(),
    "per_channel": lambda lib: lib.ao.quantization.PerChannelMinMaxObserver(),
    "histogram": lambda lib: lib.ao.quantization.HistogramObserver(),
    "fake_quant": lambda lib: lib.ao.quantization.FakeQuantize(),
}
STATES = [{}, {"min_val": -1.0, "max_val": 2.0}, {"min_val": [-1.0], "max_val": [2.0]},
          {"eps": [1e-3]}]


@pytest.mark.parametrize("name", list(OBSERVERS))
@pytest.mark.parametrize("state", STATES)
def test_observer_load_state_dict_without_eps(name, state):
    """A missing ``eps`` is no error (torch's backward compatibility); other missing keys
    are listed as torch lists them (FakeQuantize names scale/zero_point twice)."""
    make = OBSERVERS[name]
    assert _load_error(ember, make, state) == _load_error(torch, make, state)


def test_loaded_observer_qparams():
    state = {"min_val": -1.0, "max_val": 2.0}
    t = torch.ao.quantization.MinMaxObserver()
    t.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    e = ember.ao.quantization.MinMaxObserver()
    e.load_state_dict({k: ember.tensor(v) for k, v in state.items()})
    (ts, tz), (es, ez) = t.calculate_qparams(), e.calculate_qparams()
    assert es.tolist() == ts.tolist() and ez.tolist() == tz.tolist()
    assert e.eps.tolist() == t.eps.tolist()


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.fake_quantize_per_tensor_affine(x, 0.1, 0, 10, 5),
    lambda lib, x: lib.fake_quantize_per_channel_affine(
        x, lib.tensor([0.1, 0.2, 0.3]), lib.tensor([0, 0, 0], dtype=lib.int32), 0, 10, 5),
])
def test_fake_quantize_bad_range_message(call):
    with pytest.raises(RuntimeError) as t_err:
        call(torch, torch.zeros(3, 2))
    with pytest.raises(RuntimeError) as e_err:
        call(ember, ember.zeros(3, 2))
    assert str(e_err.value) == str(t_err.value)


@pytest.mark.parametrize("make,kind", [(lambda nn: nn.LSTM(4, 3), "LSTM"),
                                       (lambda nn: nn.MultiheadAttention(4, 2),
                                        "MultiheadAttention")])
def test_static_prepare_of_lstm_swaps_in_quantizable(make, kind):
    """torch swaps these for its quantizable modules (ember too: ember.ao.nn.quantizable);
    dynamic qconfigs and qconfig None leave them alone."""
    q = ember.ao.quantization
    model = ember.nn.Sequential(q.QuantStub(), make(ember.nn)).eval()
    model.qconfig = q.default_qconfig
    assert type(q.prepare(model)[1]) is getattr(ember.ao.nn.quantizable, kind)
    model[1].qconfig = None
    assert type(q.prepare(model)[1]) is type(model[1])
    model.qconfig = q.default_dynamic_qconfig
    del model[1].qconfig
    q.prepare(model)
