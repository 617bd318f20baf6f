""".ptl files both ways with real torch 2.13: torch's lite models run in ember's lite
runtime, ember's run in torch's ``_load_for_lite_interpreter``; same outputs as eager."""
import io
import pickle
import zipfile

import numpy as np
import pytest

import ember
from ember import lite
from ember.jit.mobile import (_get_model_bytecode_version, _load_for_lite_interpreter,
                              export_opnames)
from ember.utils.mobile_optimizer import optimize_for_mobile
from ember.vision.models import mobilenet_v2

from ._models import CNN, MLP, Control, seeded

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
from torch.jit.mobile import _load_for_lite_interpreter as torch_lite_load  # noqa: E402


def _mobilenet():
    ember.manual_seed(0)
    m = mobilenet_v2(num_classes=10).eval()
    with ember.no_grad():
        for mod in m.modules():
            if isinstance(mod, ember.nn.BatchNorm2d):
                mod.weight.copy_(ember.rand(mod.weight.shape) + 0.5)
                mod.bias.copy_(ember.randn(mod.bias.shape) * 0.1)
                mod.running_mean.copy_(ember.randn(mod.running_mean.shape) * 0.1)
                mod.running_var.copy_(ember.rand(mod.running_var.shape) + 0.5)
            if isinstance(mod, ember.nn.Linear):
                mod.weight.copy_(ember.randn(mod.weight.shape) * 0.05)
    return m


MODELS = {"mlp": (lambda: seeded(MLP), (3, 6)), "cnn": (lambda: seeded(CNN), (2, 3, 12, 12)),
          "mobilenet_v2": (_mobilenet, (1, 3, 64, 64))}


def _input(shape):
    return np.random.RandomState(1).randn(*shape).astype(np.float32)


def _ptl(module):
    buf = io.BytesIO()
    module._save_for_lite_interpreter(buf)
    return buf.getvalue()


def _torch_module(scripted):
    buf = io.BytesIO()
    ember.jit.save(scripted, buf)
    buf.seek(0)
    return torch.jit.load(buf)


def _torch_ptl(tm, tmp_path, name="m.ptl"):
    """torch writes .ptl files to paths only."""
    path = str(tmp_path / name)
    tm._save_for_lite_interpreter(path)
    with open(path, "rb") as f:
        return f.read()


def _close(got, want, scale=None):
    scale = scale or max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


@pytest.fixture(scope="module", params=sorted(MODELS))
def case(request):
    make, shape = MODELS[request.param]
    m = make()
    x = _input(shape)
    return request.param, m, ember.jit.script(m), x, m(ember.from_numpy(x)).detach().numpy()


def test_ember_ptl_runs_in_torch_and_ember(case):
    _, m, s, x, want = case
    for module in (s, optimize_for_mobile(s)):
        data = _ptl(module)
        got_torch = torch_lite_load(io.BytesIO(data))(torch.from_numpy(x)).detach().numpy()
        _close(got_torch, want)
        got = _load_for_lite_interpreter(io.BytesIO(data))(ember.from_numpy(x)).numpy()
        _close(got, want)
        assert lite.load(io.BytesIO(data))(x).dtype == np.float32


def test_torch_ptl_runs_in_ember_lite(case, tmp_path):
    name, m, s, x, want = case
    tm = _torch_module(s)
    got = lite.load(io.BytesIO(_torch_ptl(tm, tmp_path)))(x)
    _close(got, want)
    frozen = _torch_ptl(torch.jit.freeze(tm), tmp_path, "f.ptl")   # tensor constants in bytecode
    _close(lite.load(io.BytesIO(frozen))(x), want)
    assert export_opnames(s) == sorted(torch.jit.export_opnames(tm))


def test_control_flow_both_ways(tmp_path):
    m = seeded(Control)
    s = ember.jit.script(m)
    x = _input((2, 4))
    data = _ptl(s)
    theirs = _torch_ptl(_torch_module(s), tmp_path)
    for n in (0, 1, 4):
        want = m(ember.from_numpy(x), n).detach().numpy()
        _close(torch_lite_load(io.BytesIO(data))(torch.from_numpy(x), n).detach().numpy(), want)
        _close(lite.load(io.BytesIO(data))(x, n), want)
        _close(lite.load(io.BytesIO(theirs))(x, n), want)
    # both branches of the If are taken
    _close(lite.load(io.BytesIO(data))(-np.abs(x) * 10, 0), m(ember.from_numpy(-np.abs(x) * 10), 0).detach().numpy())


def _bytecode(data):
    z = zipfile.ZipFile(io.BytesIO(data))
    name = next(n for n in z.namelist() if n.endswith("bytecode.pkl"))

    class U(pickle.Unpickler):
        def find_class(self, mod, n):
            return lambda *a: a[0] if a else None

        def persistent_load(self, pid):
            return None
    return U(io.BytesIO(z.read(name))).load(), z.namelist()


def test_bytecode_layout_matches_torch(tmp_path):
    m = seeded(MLP)
    s = ember.jit.script(m)
    ours, names = _bytecode(_ptl(s))
    theirs, _ = _bytecode(_torch_ptl(_torch_module(s), tmp_path))
    assert ours[0] == theirs[0] == 8 == _get_model_bytecode_version(io.BytesIO(_ptl(s)))
    code = dict(ours[1][1])
    assert set(code) == {"instructions", "operators", "constants", "types", "register_size"}
    assert {op for op, *_ in dict(theirs[1][1])["operators"]} == {op for op, *_ in code["operators"]}
    assert dict(ours[1][2])["arguments"][1] == dict(theirs[1][2])["arguments"][1]
    assert any(n.endswith("/bytecode.pkl") for n in names) and any(n.endswith("/data.pkl") for n in names)
    # the archive part still loads as TorchScript
    loaded = torch.jit.load(io.BytesIO(_ptl(s)))
    x = _input((2, 6))
    _close(loaded(torch.from_numpy(x)).detach().numpy(), m(ember.from_numpy(x)).detach().numpy())


def test_errors():
    with pytest.raises(ValueError, match="does not exist"):
        _load_for_lite_interpreter("/nonexistent/model.ptl")
    buf = io.BytesIO()
    ember.jit.save(ember.jit.script(seeded(MLP)), buf)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="bytecode.pkl"):
        lite.load(buf)
    with pytest.raises(TypeError):
        from ember.jit.mobile import _save_for_lite_interpreter
        _save_for_lite_interpreter(seeded(MLP), io.BytesIO())


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small", "squeezenet1_1"])
def test_more_vision_models_both_ways(name, tmp_path):
    import ember.vision.models as models
    ember.manual_seed(0)
    m = getattr(models, name)(num_classes=10).eval()
    s = ember.jit.script(m)
    x = _input((1, 3, 64, 64))
    want = m(ember.from_numpy(x)).detach().numpy()
    scale = float(np.abs(want).max())
    data = _ptl(optimize_for_mobile(s))
    _close(torch_lite_load(io.BytesIO(data))(torch.from_numpy(x)).detach().numpy(), want, scale)
    _close(lite.load(io.BytesIO(data))(x), want, scale)
    _close(lite.load(io.BytesIO(_torch_ptl(_torch_module(s), tmp_path)))(x), want, scale)


class _Twice(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ember.nn.Linear(3, 3)
        self.scale = 2.0

    def forward(self, x):
        return ember.relu(self.lin(x))

    @ember.jit.export
    def twice(self, x):
        return self.forward(x) * self.scale


def test_preserved_method_both_ways(tmp_path):
    m = seeded(_Twice)
    o = optimize_for_mobile(ember.jit.script(m), preserved_methods=["twice"])
    x = _input((2, 3))
    want = m.twice(ember.from_numpy(x)).detach().numpy()
    _close(o.twice(ember.from_numpy(x)).detach().numpy(), want)
    data = _ptl(o)
    _close(lite.load(io.BytesIO(data)).run_method("twice", x), want)
    _close(torch_lite_load(io.BytesIO(data)).run_method("twice", torch.from_numpy(x)).detach().numpy(), want)
    assert export_opnames(o) == ["aten::linear", "aten::mul.Scalar", "aten::relu"]



@pytest.mark.parametrize("make,shape", [(lambda: seeded(CNN), (1, 3, 10, 10)),
                                        (_mobilenet, (1, 3, 64, 64))])
def test_traced_modules_both_ways(make, shape):
    m = make()
    x = _input(shape)
    traced = ember.jit.trace(m, ember.from_numpy(x))
    data = _ptl(traced)
    want = m(ember.from_numpy(x)).detach().numpy()
    x2 = _input(shape) * 2                      # another input of the traced shape
    want2 = m(ember.from_numpy(x2)).detach().numpy()
    _close(lite.load(io.BytesIO(data))(x), want)
    _close(lite.load(io.BytesIO(data))(x2), want2)
    _close(torch_lite_load(io.BytesIO(data))(torch.from_numpy(x2)).detach().numpy(), want2)


def test_operator_info_as_torch(tmp_path):
    from ember.jit.mobile import _export_operator_list, _get_model_ops_and_info
    from torch.jit.mobile import _export_operator_list as t_export, _get_model_ops_and_info as t_info
    s = ember.jit.script(seeded(Control))
    path = str(tmp_path / "c.ptl")
    s._save_for_lite_interpreter(path)
    ours, theirs = _get_model_ops_and_info(path), t_info(path)
    assert sorted(ours) == sorted(theirs)
    assert all(ours[k].num_schema_args == theirs[k].num_schema_args for k in ours)
    assert _export_operator_list(_load_for_lite_interpreter(path)) == t_export(torch_lite_load(path))
