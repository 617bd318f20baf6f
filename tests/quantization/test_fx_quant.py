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
    theirs = {(_name(c.pattern), c.observation_type.name): c
              for c in getattr(tbc, getter)().configs}
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
        assert {k: v.name for k, v in conf._num_tensor_args_to_observation_type.items()} == \
            {k: v.name for k, v in theirs[key]._num_tensor_args_to_observation_type.items()}


@pytest.mark.parametrize("getter", ["get_native_backend_config", "get_fbgemm_backend_config",
                                    "get_qnnpack_backend_config"])
def test_backend_config_has_all_of_torchs_patterns_in_order(getter):
    mine = [(_name(c.pattern), c.observation_type.name) for c in getattr(ebc, getter)().configs]
    theirs = [(_name(c.pattern), c.observation_type.name)
              for c in getattr(tbc, getter)().configs]
    assert mine == theirs


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


# ---------------------------------------------------------------- prepare / convert
import copy  # noqa: E402

import numpy as np  # noqa: E402
import torch.nn as tnn  # noqa: E402
import torch.nn.functional as TF  # noqa: E402
import ember.nn as enn  # noqa: E402
import ember.nn.functional as EF  # noqa: E402
from torch.ao.quantization import get_default_qconfig_mapping as t_mapping  # noqa: E402
from torch.ao.quantization import quantize_fx as tq  # noqa: E402
from ember.ao.quantization import get_default_qconfig_mapping as e_mapping  # noqa: E402
from ember.ao.quantization import quantize_fx as eq  # noqa: E402

from tests.quantization._fx_models import build, SHAPES  # noqa: E402


def _code(gm):
    # torch prints F.linear as the C function it is; ember prints its public name
    return gm.code.replace("torch._C._nn.linear", "torch.nn.functional.linear")


def _nodes(gm):
    return [(n.op, n.name, str(n.target) if n.op != "call_function" else n.name)
            for n in gm.graph.nodes]


def _pair(kind, seed=0):
    torch.manual_seed(seed)
    tm = build(tnn, TF, torch, kind)
    em = build(enn, EF, ember, kind)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    xs = [torch.randn(*SHAPES[kind]) for _ in range(2)]
    return tm, em, xs, [ember.from_numpy(x.numpy().copy()) for x in xs]


_PREPARED = {}


def _prepared(kind, t_map=None, e_map=None, seed=0):
    """Both libraries' prepared models calibrated on the same inputs (default mappings:
    built once per kind, copied for each test)."""
    if t_map is None and e_map is None:
        if (kind, seed) not in _PREPARED:
            _PREPARED[kind, seed] = _prepare_new(kind, t_mapping(), e_mapping(), seed)
        return copy.deepcopy(_PREPARED[kind, seed])
    return _prepare_new(kind, t_map, e_map, seed)


def _prepare_new(kind, t_map, e_map, seed):
    tm, em, xs, es = _pair(kind, seed)
    tp = tq.prepare_fx(tm, t_map, (xs[0],))
    ep = eq.prepare_fx(em, e_map, (es[0],))
    for a, b in zip(xs, es):
        tp(a)
        ep(b)
    return tp, ep, xs, es


def _synced(kind, **kw):
    """Calibrated prepared models; ember's then takes torch's observer states and (fused)
    weights, which float rounding (conv accumulation, bn folding) leaves an ulp apart, so
    that converting compares prepare/convert and the integer kernels alone."""
    tp, ep, xs, es = _prepared(kind, **kw)
    state = tp.state_dict()
    mine = ep.state_dict()
    assert sorted(mine) == sorted(state)
    ep.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in state.items()})
    return tp, ep, xs, es


def _outs(result):
    return [r.detach().numpy() if hasattr(r, "detach") else r
            for r in (result if isinstance(result, tuple) else (result,))]


@pytest.mark.parametrize("kind", ["res", "lin", "cbr", "ops", "nest", "basic", "convt",
                                  "float_ops"])
def test_prepare_fx_graph_is_torchs(kind):
    tp, ep, _, _ = _prepared(kind)
    assert _code(ep) == _code(tp)
    assert [type(m).__name__ for _, m in ep.named_children()] == \
        [type(m).__name__ for _, m in tp.named_children()]
    assert [n for n, _ in ep.named_children()] == [n for n, _ in tp.named_children()]
    assert [n for n, m in ep.named_modules() if hasattr(m, "qconfig")] == \
        [n for n, m in tp.named_modules() if hasattr(m, "qconfig")]


@pytest.mark.parametrize("kind", ["res", "lin", "cbr", "ops", "nest", "basic", "convt",
                                  "float_ops"])
def test_convert_fx_matches_torch(kind):
    tp, ep, xs, es = _synced(kind)
    tc, ec = tq.convert_fx(copy.deepcopy(tp)), eq.convert_fx(copy.deepcopy(ep))
    assert ec.code == tc.code
    assert str(ec).split("def forward")[0] == str(tc).split("def forward")[0]
    assert sorted(n for n, _ in ec.named_buffers()) == sorted(n for n, _ in tc.named_buffers())
    assert list(ec.state_dict()) == list(tc.state_dict())     # packed weights included
    assert not any(hasattr(m, "qconfig") for m in ec.modules())
    kept = eq.convert_fx(copy.deepcopy(ep), _remove_qconfig=False)
    assert [n for n, m in kept.named_modules() if hasattr(m, "qconfig")] == [
        n for n, m in tq.convert_fx(copy.deepcopy(tp), _remove_qconfig=False).named_modules()
        if hasattr(m, "qconfig")]
    for a, b in zip(xs, es):
        for got, want in zip(_outs(ec(b)), _outs(tc(a))):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["res", "lin", "cbr"])
def test_convert_to_reference_fx_matches_torch(kind):
    tp, ep, xs, es = _synced(kind)
    tr, er = tq.convert_to_reference_fx(copy.deepcopy(tp)), \
        eq.convert_to_reference_fx(copy.deepcopy(ep))
    assert _code(er) == _code(tr)
    mine = dict(er.named_buffers())
    assert sorted(mine) == sorted(n for n, _ in tr.named_buffers())
    for name, buf in tr.named_buffers():
        np.testing.assert_array_equal(mine[name].numpy(), buf.numpy())
    assert str(er) .split("def forward")[0] == str(tr).split("def forward")[0]
    # the float ops between quantize/dequantize pairs round in the last ulp differently
    # (conv, pool accumulation order); an ulp can flip one quantization step, which in "cbr"
    # the pool's flip carries through fc (3 output steps seen)
    step = float(getattr(tr, {"res": "_scale_1", "lin": "_scale_3", "cbr": "fc_scale_0"}[kind]))
    steps = {"res": 1, "lin": 1, "cbr": 4}[kind]
    for a, b in zip(xs, es):
        assert np.abs(er(b).numpy() - tr(a).numpy()).max() <= steps * step * 1.0001


def test_fuse_fx_is_torchs():
    tm, em, xs, es = _pair("cbr")
    tf, ef = tq.fuse_fx(tm), eq.fuse_fx(em)
    assert ef.code == tf.code
    assert str(ef) == str(tf)
    np.testing.assert_allclose(ef(es[0]).detach().numpy(), tf(xs[0]).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


_VARIANTS = {
    "module_name": ("res", lambda m, nn, F, T: m.set_module_name("c2", None)),
    "object_type_function": ("lin", lambda m, nn, F, T: m.set_object_type(F.hardswish, None)),
    "object_type_add": ("res", lambda m, nn, F, T: m.set_object_type(T.add, None)),
    "module_name_regex": ("cbr", lambda m, nn, F, T: m.set_module_name_regex("f.*", None)),
    "object_type_module": ("cbr", lambda m, nn, F, T: m.set_object_type(nn.Linear, None)),
    "module_name_object_type_order": (
        "res", lambda m, nn, F, T: m.set_module_name_object_type_order("", operator.add, 0,
                                                                       None)),
}


@pytest.mark.parametrize("variant", sorted(_VARIANTS))
def test_qconfig_mapping_variants_match_torch(variant):
    """Parts left in float: the dequantize/quantize nodes, their names (``_input_scale_0``
    for an input observer) and the lowering of what stays quantized are torch's."""
    kind, edit = _VARIANTS[variant]
    tp, ep, xs, es = _synced(kind, t_map=edit(t_mapping(), tnn, TF, torch),
                             e_map=edit(e_mapping(), enn, EF, ember))
    assert _code(ep) == _code(tp)
    tc, ec = tq.convert_fx(copy.deepcopy(tp)), eq.convert_fx(copy.deepcopy(ep))
    assert ec.code == tc.code
    default = tq.convert_fx(copy.deepcopy(_prepared(kind)[0]))
    assert tc.code != default.code                    # the variant changes something
    for a, b in zip(xs, es):
        want, got = tc(a).detach().numpy(), ec(b).detach().numpy()
        if kind == "cbr":      # a float Linear at the end: float rounding
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["cbr", "res", "lin", "basic", "nest"])
def test_prepare_qat_fx_and_convert_match_torch(kind):
    from torch.ao.quantization import get_default_qat_qconfig_mapping as t_qat
    from ember.ao.quantization import get_default_qat_qconfig_mapping as e_qat
    tm, em, xs, es = _pair(kind)
    tm.train()
    em.train()
    tp = tq.prepare_qat_fx(tm, t_qat(), (xs[0],))
    ep = eq.prepare_qat_fx(em, e_qat(), (es[0],))
    assert _code(ep) == _code(tp)
    assert str(ep).split("def forward")[0] == str(tp).split("def forward")[0]
    for a, b in zip(xs, es):
        tp(a)
        ep(b)
    ep.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tp.state_dict().items()})
    tr = tq.convert_to_reference_fx(copy.deepcopy(tp).eval())
    er = eq.convert_to_reference_fx(copy.deepcopy(ep).eval())
    assert _code(er) == _code(tr)
    assert str(er).split("def forward")[0] == str(tr).split("def forward")[0]
    mine = dict(er.named_buffers())        # the QAT weights' qparams (bn folded) included
    for name, buf in tr.named_buffers():
        np.testing.assert_array_equal(mine[name].numpy(), buf.numpy())
    tc = tq.convert_fx(copy.deepcopy(tp).eval())
    ec = eq.convert_fx(copy.deepcopy(ep).eval())
    assert ec.code == tc.code
    assert str(ec).split("def forward")[0] == str(tc).split("def forward")[0]
    for a, b in zip(xs, es):
        np.testing.assert_array_equal(ec(b).numpy(), tc(a).numpy())


def _two_linears(nn):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.relu = nn.ReLU()
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(self.relu(self.fc1(x)))
    return M().eval()


@pytest.mark.parametrize("qconfig", ["default_dynamic_qconfig", "float16_dynamic_qconfig"])
def test_dynamic_quantization_fx_matches_torch(qconfig):
    import torch.ao.quantization as tqa
    import ember.ao.quantization as eqa
    torch.manual_seed(0)
    tm, em = _two_linears(tnn), _two_linears(enn)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    x = torch.randn(5, 4)
    ex = ember.from_numpy(x.numpy().copy())
    tmap = tqa.QConfigMapping().set_object_type(tnn.Linear, getattr(tqa, qconfig))
    emap = eqa.QConfigMapping().set_object_type(enn.Linear, getattr(eqa, qconfig))
    with pytest.raises(LookupError, match="During fusion, we need to specify the same "
                                          "qconfigs for all module types in .*LinearReLU"):
        eq.prepare_fx(copy.deepcopy(em), emap, (ex,))
    tmap.set_object_type(tnn.ReLU, getattr(tqa, qconfig))
    emap.set_object_type(enn.ReLU, getattr(eqa, qconfig))
    tp, ep = tq.prepare_fx(tm, tmap, (x,)), eq.prepare_fx(em, emap, (ex,))
    assert _code(ep) == _code(tp)
    assert str(ep).split("def forward")[0] == str(tp).split("def forward")[0]
    tp(x)
    ep(ex)
    tc, ec = tq.convert_fx(tp), eq.convert_fx(ep)
    assert ec.code == tc.code
    assert str(ec).split("def forward")[0] == str(tc).split("def forward")[0]
    np.testing.assert_array_equal(ec(ex).numpy(), tc(x).detach().numpy())


def _conv_keep(nn):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(3, 3, 1)
            self.keep = 7

        def forward(self, x):
            return self.c(x)
    return M().eval()


def test_prepare_custom_config_quantized_io_and_preserved_attributes():
    from torch.ao.quantization.fx.custom_config import PrepareCustomConfig as TP, \
        ConvertCustomConfig as TC
    from ember.ao.quantization.fx.custom_config import PrepareCustomConfig as EP, \
        ConvertCustomConfig as EC
    torch.manual_seed(0)
    tm, em = _conv_keep(tnn), _conv_keep(enn)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    x = torch.randn(1, 3, 4, 4)
    ex = ember.from_numpy(x.numpy().copy())
    tconf = TP().set_input_quantized_indexes([0]).set_output_quantized_indexes([0]) \
        .set_preserved_attributes(["keep"])
    econf = EP().set_input_quantized_indexes([0]).set_output_quantized_indexes([0]) \
        .set_preserved_attributes(["keep"])
    assert econf.to_dict() == tconf.to_dict()
    tp = tq.prepare_fx(tm, t_mapping(), (x,), prepare_custom_config=tconf)
    ep = eq.prepare_fx(em, e_mapping(), (ex,), prepare_custom_config=econf)
    assert ep.code == tp.code and ep.keep == tp.keep == 7
    tp(x)
    ep(ex)
    assert eq.convert_to_reference_fx(copy.deepcopy(ep)).code == \
        tq.convert_to_reference_fx(copy.deepcopy(tp)).code
    assert eq.convert_fx(copy.deepcopy(ep)).code == tq.convert_fx(copy.deepcopy(tp)).code
    assert not hasattr(eq.convert_fx(copy.deepcopy(ep)), "keep")      # as torch's
    ec = eq.convert_fx(ep, convert_custom_config=EC().set_preserved_attributes(["keep"]))
    tc = tq.convert_fx(tp, convert_custom_config=TC().set_preserved_attributes(["keep"]))
    assert ec.keep == tc.keep
    qx = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
    from tests.quantization.conftest import to_ember, assert_same_q
    assert_same_q(ec(to_ember(qx)), tc(qx))


def test_non_traceable_module_names():
    from torch.ao.quantization.fx.custom_config import PrepareCustomConfig as TP
    tm, em, xs, es = _pair("res")
    tp = tq.prepare_fx(tm, t_mapping(), (xs[0],),
                       prepare_custom_config=TP().set_non_traceable_module_names(["c2"]))
    ep = eq.prepare_fx(em, e_mapping(), (es[0],),
                       prepare_custom_config={"non_traceable_module_name": ["c2"]})
    assert _code(ep) == _code(tp)


def test_errors_as_torchs():
    tm, em, xs, es = _pair("cbr")
    tm.train()
    em.train()
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        eq.prepare_fx(em, e_mapping(), (es[0],))
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        tq.prepare_fx(tm, t_mapping(), (xs[0],))
    with pytest.raises(ValueError, match="input model must be a GraphModule, Got type:"):
        eq.convert_fx(enn.Linear(2, 2))
    with pytest.raises(TypeError, match="example_inputs"):
        eq.prepare_fx(em.eval(), e_mapping())
    eq.prepare_fx(em.eval(), e_mapping(), None)        # torch takes None too


def test_resnet18_with_shared_relu_converts():
    """torchvision's BasicBlock calls one ReLU twice; the fused conv-bn-relu holds that
    instance, which must stay reachable under its own name (no torch oracle here:
    torchvision does not load in this environment)."""
    import ember.vision.models as models
    ember.manual_seed(0)
    model = models.resnet18(num_classes=10).eval()
    x = ember.randn(1, 3, 32, 32)
    prepared = eq.prepare_fx(model, e_mapping(), (x,))
    prepared(x)
    converted = eq.convert_fx(prepared)
    assert converted.code.count("torch.ops.quantized.add_relu(") == 8
    assert type(converted.get_submodule("layer1.0.conv1")).__name__ == "ConvReLU2d"
    want = model(x).detach().numpy()
    got = converted(x).numpy()
    assert np.abs(got - want).max() < 0.1 * np.abs(want).max()


def _lstm_model(nn):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 5)
            self.fc = nn.Linear(5, 2)

        def forward(self, x):
            y, (h, c) = self.lstm(x)
            return self.fc(y)
    return M().eval()


def test_dynamic_lstm_fx_matches_torch():
    import torch.ao.quantization as tqa
    import ember.ao.quantization as eqa
    torch.manual_seed(0)
    tm, em = _lstm_model(tnn), _lstm_model(enn)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    x = torch.randn(3, 2, 4)
    ex = ember.from_numpy(x.numpy().copy())
    tmap, emap = tqa.QConfigMapping(), eqa.QConfigMapping()
    for mapping, nn, q in ((tmap, tnn, tqa), (emap, enn, eqa)):
        mapping.set_object_type(nn.LSTM, q.default_dynamic_qconfig)
        mapping.set_object_type(nn.Linear, q.default_dynamic_qconfig)
    tp, ep = tq.prepare_fx(tm, tmap, (x,)), eq.prepare_fx(em, emap, (ex,))
    assert _code(ep) == _code(tp)
    tp(x)
    ep(ex)
    tc, ec = tq.convert_fx(tp), eq.convert_fx(ep)
    assert ec.code == tc.code
    assert str(ec).split("def forward")[0] == str(tc).split("def forward")[0]
    np.testing.assert_array_equal(ec(ex).numpy(), tc(x).detach().numpy())


def _embedding_model(nn):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(self.emb(x))
    return M().eval()


def test_weight_only_embedding_fx_matches_torch():
    """float_qparams_weight_only_qconfig: no observers around the Embedding (float
    activations), quantized Embedding after convert, the Linear after it static."""
    import torch.ao.quantization as tqa
    import ember.ao.quantization as eqa
    torch.manual_seed(0)
    tm, em = _embedding_model(tnn), _embedding_model(enn)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    x = torch.tensor([[1, 2, 3], [4, 5, 9]])
    ex = ember.from_numpy(x.numpy().copy())
    tmap = t_mapping().set_object_type(tnn.Embedding, tqa.float_qparams_weight_only_qconfig)
    emap = e_mapping().set_object_type(enn.Embedding, eqa.float_qparams_weight_only_qconfig)
    tp, ep = tq.prepare_fx(tm, tmap, (x,)), eq.prepare_fx(em, emap, (ex,))
    assert _code(ep) == _code(tp)
    assert str(ep).split("def forward")[0] == str(tp).split("def forward")[0]
    tp(x)
    ep(ex)
    tc, ec = tq.convert_fx(tp), eq.convert_fx(ep)
    assert ec.code == tc.code
    assert str(ec).split("def forward")[0] == str(tc).split("def forward")[0]
    np.testing.assert_array_equal(ec(ex).numpy(), tc(x).detach().numpy())


def test_backend_config_dict_and_repr_forms_are_torchs():
    mine = ebc.get_native_backend_config().configs
    theirs = tbc.get_native_backend_config().configs
    for m, t in zip(mine, theirs):
        if _name(t.pattern) in ("GRUCell", "LSTMCell", "RNNCell", "LSTM", "GRU"):
            continue      # ember has no reference (weight-simulating) recurrent modules
        assert list(m.to_dict()) == list(t.to_dict()), _name(t.pattern)
        assert [list(d) for d in m.to_dict()["dtype_configs"]] == \
            [list(d) for d in t.to_dict()["dtype_configs"]]
    assert repr(ebc.BackendConfig("x")) == repr(tbc.BackendConfig("x"))
    assert repr(mine[0]).split("'observation_type'")[0].startswith(
        "BackendPatternConfig({'pattern': ")
    dc = ebc.DTypeConfig.from_dict({"input_dtype": ember.quint8, "bias_dtype": ember.float32})
    assert dc.bias_dtype is ember.float32 and dc.input_dtype is ember.quint8


def test_convert_fx_qconfig_mapping_can_only_unset():
    """convert_fx(qconfig_mapping=...) with c2 set to None gives what preparing with c2
    None gives (torch's behaviour); changing a qconfig otherwise is refused."""
    tp, ep, xs, es = _synced("res")
    tc = tq.convert_fx(copy.deepcopy(tp), qconfig_mapping=t_mapping().set_module_name("c2", None))
    ec = eq.convert_fx(copy.deepcopy(ep), qconfig_mapping=e_mapping().set_module_name("c2", None))
    assert ec.code == tc.code
    assert str(ec).split("def forward")[0] == str(tc).split("def forward")[0]
    for a, b in zip(xs, es):
        np.testing.assert_array_equal(ec(b).numpy(), tc(a).numpy())
    import ember.ao.quantization as eqa
    other = eqa.QConfig(activation=eqa.default_weight_observer, weight=eqa.default_weight_observer)
    with pytest.raises(AssertionError, match="Expected k c2 to have the same value in prepare "
                                             "and convert QConfigMappings"):
        eq.convert_fx(copy.deepcopy(ep), qconfig_mapping=e_mapping().set_module_name("c2", other))


@pytest.mark.parametrize("kind", ["res", "lin"])
def test_converted_model_pickles(kind):
    import pickle
    _, ep, _, es = _synced(kind)
    ec = eq.convert_fx(ep)
    again = pickle.loads(pickle.dumps(ec))
    assert again.code == ec.code
    np.testing.assert_array_equal(again(es[0]).numpy(), ec(es[0]).numpy())


def test_module_called_twice_converts_as_torch():
    """A module called at two places: torch lowers both calls to the one quantized module
    (the second reads quantized input and gives the module's output grid)."""
    from torch.ao.quantization.quantize_fx import prepare_fx as tprep, convert_fx as tconv
    from ember.ao.quantization.quantize_fx import prepare_fx as eprep, convert_fx as econv

    def build(m):
        class M(m.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = m.nn.Conv2d(3, 8, 3, padding=1)
                self.bn = m.nn.BatchNorm2d(8)

            def forward(self, x):
                return m.relu(self.bn(self.conv(x))) + self.conv(x)
        return M().eval()

    torch.manual_seed(0)
    tm = build(torch)
    em = build(ember)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    tp = tprep(tm, torch.ao.quantization.get_default_qconfig_mapping("x86"),
               (torch.from_numpy(x),))
    ep = eprep(em, ember.ao.quantization.get_default_qconfig_mapping("x86"),
               (ember.from_numpy(x),))
    tp(torch.from_numpy(x))
    ep(ember.from_numpy(x))
    tq, eq = tconv(tp), econv(ep)
    assert eq.code == tq.code
    np.testing.assert_allclose(eq(ember.from_numpy(x)).numpy(),
                               tq(torch.from_numpy(x)).numpy(), atol=0.2)
