"""optimize_for_mobile: frozen, bn-folded, clamp-fused graphs that are smaller and give
eager's outputs; beside torch's optimize_for_mobile on the same weights."""
import io

import numpy as np
import pytest

import ember
from ember.utils.mobile_optimizer import MobileOptimizerType, optimize_for_mobile
from ember.vision.models import mobilenet_v2

from ._models import CNN, MLP, Control, seeded

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _kinds(m):
    return [n.kind for n in m.graph.all_nodes()]


def _count(m):
    return sum(1 for n in m.inlined_graph.all_nodes()) if hasattr(m, "inlined_graph") \
        else len(_kinds(m))


def _torch_copy(scripted):
    buf = io.BytesIO()
    ember.jit.save(scripted, buf)
    buf.seek(0)
    return torch.jit.load(buf)


def _torch_optimized(tm):
    """torch's optimize_for_mobile; this CPU wheel lacks XNNPACK, then torch's freeze
    (its conv-bn folding and dropout removal) is the oracle."""
    from torch.utils.mobile_optimizer import optimize_for_mobile as torch_ofm
    try:
        return torch_ofm(tm)
    except RuntimeError as e:
        if "XNNPACK" not in str(e):
            raise
        return torch.jit.freeze(tm.eval())


@pytest.mark.parametrize("cls,shape", [(CNN, (2, 3, 12, 12)), (MLP, (3, 6))])
def test_matches_eager_and_torch(cls, shape):
    m = seeded(cls)
    s = ember.jit.script(m)
    o = optimize_for_mobile(s)
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    want = m(ember.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(o(ember.from_numpy(x)).detach().numpy(), want, rtol=1e-5, atol=1e-5)
    kinds = _kinds(o)
    assert "aten::batch_norm" not in kinds and "aten::dropout" not in kinds
    assert "aten::relu" not in kinds and "aten::hardtanh" not in kinds
    assert any(k.startswith("ember::") for k in kinds)
    t = _torch_optimized(_torch_copy(s))
    np.testing.assert_allclose(t(torch.from_numpy(x)).numpy(), want, rtol=1e-4, atol=1e-5)


def test_mobilenet_v2_smaller_and_equal():
    ember.manual_seed(0)
    m = mobilenet_v2().eval()
    s = ember.jit.script(m)
    o = optimize_for_mobile(s)
    frozen = ember.jit.freeze(s)
    assert len(_kinds(o)) < len(_kinds(frozen))
    kinds = _kinds(o)
    assert kinds.count("ember::conv2d_clamp") == 35 and "aten::batch_norm" not in kinds
    x = ember.randn(1, 3, 64, 64)
    np.testing.assert_allclose(o(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_blocklist_and_preserved_methods():
    m = seeded(CNN)
    o = optimize_for_mobile(ember.jit.script(m), optimization_blocklist={
        MobileOptimizerType.INSERT_FOLD_PREPACK_OPS})
    kinds = _kinds(o)
    assert "aten::relu" in kinds and not any(k.startswith("ember::") for k in kinds)
    x = ember.randn(1, 3, 8, 8)
    np.testing.assert_allclose(o(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_control_flow_and_errors():
    m = seeded(Control)
    o = optimize_for_mobile(ember.jit.script(m))
    x = ember.randn(2, 4)
    for n in (0, 3):
        np.testing.assert_allclose(o(x, n).detach().numpy(), m(x, n).detach().numpy(), rtol=1e-6)
    with pytest.raises(TypeError):
        optimize_for_mobile(m)
    with pytest.raises(NotImplementedError, match="Vulkan"):
        optimize_for_mobile(ember.jit.script(m), backend="Vulkan")


class _Residual(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = ember.nn.Conv2d(4, 4, 3, padding=1)
        self.bn = ember.nn.BatchNorm2d(4)

    def forward(self, x):
        return ember.relu(x + self.bn(self.conv(x)))


def test_add_relu_fusion_and_lite_round_trip():
    m = seeded(_Residual)
    s = ember.jit.script(m)
    x = ember.randn(2, 4, 6, 6)
    o = optimize_for_mobile(s)
    assert "ember::add_relu" in _kinds(o) and "aten::relu" not in _kinds(o)
    np.testing.assert_allclose(o(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    kept = optimize_for_mobile(s, optimization_blocklist=[MobileOptimizerType.FUSE_ADD_RELU])
    assert "ember::add_relu" not in _kinds(kept) and "aten::relu" in _kinds(kept)
    buf = io.BytesIO()
    o._save_for_lite_interpreter(buf)
    from torch.jit.mobile import _load_for_lite_interpreter
    got = _load_for_lite_interpreter(io.BytesIO(buf.getvalue()))(torch.from_numpy(x.numpy()))
    np.testing.assert_allclose(got.detach().numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


class _Lintable(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = ember.nn.Conv2d(3, 4, 3)
        self.bn = ember.nn.BatchNorm2d(4)
        self.d = ember.nn.Dropout()

    def forward(self, x):
        return self.d(self.bn(self.c(x)))


def test_lints_as_torch():
    from ember.utils.mobile_optimizer import generate_mobile_module_lints
    m = _Lintable().eval()
    buf = io.BytesIO()
    s = ember.jit.script(m)
    ember.jit.save(s, buf)
    buf.seek(0)
    from torch.utils.mobile_optimizer import generate_mobile_module_lints as torch_lints
    t = torch.jit.load(buf)
    assert generate_mobile_module_lints(s) == torch_lints(t)
    assert generate_mobile_module_lints(optimize_for_mobile(s)) == torch_lints(torch.jit.freeze(t))
