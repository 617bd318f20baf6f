"""Regressions found running pytorch/examples programs on ember (``python -m ember.run``),
each checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _both(fn, *arrays, requires_grad=()):
    """``fn(lib, *tensors)`` under torch and ember; tensors listed in ``requires_grad`` track
    gradients. Returns (torch result, ember result, torch tensors, ember tensors)."""
    out = []
    for lib in (torch, ember):
        ts = [lib.tensor(a, requires_grad=i in requires_grad) for i, a in enumerate(arrays)]
        out.append((fn(lib, *ts), ts))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def _close(t, e, **kw):
    np.testing.assert_allclose(e.detach().numpy() if hasattr(e, "detach") else e,
                               t.detach().numpy() if hasattr(t, "detach") else t, **kw)


def test_bce_gradient_finite_at_saturated_input():
    # siamese_network: sigmoid outputs of exactly 0/1 made BCELoss's gradient NaN
    x = np.array([1.0, 0.0, 0.5, 0.3, 1e-30], np.float32)
    t = np.array([0.0, 1.0, 1.0, 0.2, 0.5], np.float32)

    def run(lib, x, t):
        loss = lib.nn.BCELoss()(x, t)
        gx, gt = lib.autograd.grad(loss, (x, t))
        return loss, gx, gt
    (tl, tgx, tgt), (el, egx, egt), _, _ = _both(run, x, t, requires_grad=(0, 1))
    _close(tl, el, rtol=1e-6)
    _close(tgx, egx, rtol=1e-6)
    _close(tgt, egt, rtol=1e-6)          # +-inf where x is 0 or 1, as torch


def test_bce_double_backward_interior():
    x = np.array([0.2, 0.5, 0.7], np.float64)
    t = np.array([0.0, 1.0, 0.4], np.float64)
    w = np.array([1.0, 2.0, 0.5], np.float64)

    def run(lib, x, t, w):
        loss = lib.nn.functional.binary_cross_entropy(x, t, weight=w, reduction="sum")
        gx, = lib.autograd.grad(loss, x, create_graph=True)
        return lib.autograd.grad(gx.sum(), (x, t))
    (tx, tt), (ex, et), _, _ = _both(run, x, t, w, requires_grad=(0, 1))
    _close(tx, ex, rtol=1e-10)
    _close(tt, et, rtol=1e-10)


def test_pretrained_weights_load_from_hub_cache(tmp_path, monkeypatch):
    # fast_neural_style: vgg16(weights=VGG16_Weights.IMAGENET1K_V1) loads torchvision's
    # checkpoint from $TORCH_HOME/hub/checkpoints when it is there (torch does, offline)
    from helpers import import_torchvision
    tv = import_torchvision()
    import ember.vision.models as models
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    ckpt = tmp_path / "hub" / "checkpoints"
    ckpt.mkdir(parents=True)
    torch.manual_seed(0)
    ref = tv.models.resnet18().eval()
    torch.save(ref.state_dict(), ckpt / "resnet18-f37072fd.pth")
    assert models.ResNet18_Weights.DEFAULT.url == tv.models.ResNet18_Weights.DEFAULT.url
    assert models.ResNet50_Weights.DEFAULT.name == tv.models.ResNet50_Weights.DEFAULT.name
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    for m in (models.resnet18(weights=models.ResNet18_Weights.IMAGENET1K_V1),
              models.resnet18(weights="DEFAULT")):
        with ember.no_grad(), torch.no_grad():
            _close(ref(torch.tensor(x)), m.eval()(ember.tensor(x)), rtol=1e-4, atol=1e-5)
    with pytest.warns(UserWarning, match="'pretrained' is deprecated"):
        models.resnet18(pretrained=True)
    with pytest.raises(ValueError, match="'num_classes' expected value 1000 but got 10"):
        models.resnet18(weights="DEFAULT", num_classes=10)
    with pytest.raises(TypeError, match="expected ResNet18_Weights but received VGG16_Weights"):
        models.resnet18(weights=models.VGG16_Weights.DEFAULT)
    with pytest.raises(RuntimeError, match="downloads nothing"):       # not in the cache
        models.resnet34(weights="DEFAULT")


@pytest.mark.parametrize("n", [16385, 50000, 300000])
def test_randperm_large_n_follows_torchs_stream(n):
    # imagenet --dummy: a shuffling DataLoader over 1.28M samples drew another order than
    # torch (ember used NumPy's permutation above 16384 elements)
    out = []
    for lib in (torch, ember):
        g = lib.Generator()
        g.manual_seed(123)
        out.append((lib.randperm(n, generator=g).numpy(),
                    lib.randint(0, 1000, (3,), generator=g).numpy()))
    np.testing.assert_array_equal(out[1][0], out[0][0])
    np.testing.assert_array_equal(out[1][1], out[0][1])      # the generator advanced alike


def test_bce_range_check_reads_data_under_vmap_trace_and_meta():
    # the [0, 1] check branched on a tensor: vmap refused it, jit.trace warned
    x = np.array([[0.2, 0.7, 0.5], [0.9, 0.1, 0.3]])
    t = np.array([[0.0, 1.0, 0.4], [1.0, 0.0, 0.5]])
    res = []
    for lib in (torch, ember):
        F = lib.nn.functional
        f = lib.func.vmap(lambda a, b: F.binary_cross_entropy(a, b))
        res.append(f(lib.tensor(x), lib.tensor(t)))
        with pytest.raises(RuntimeError, match="between 0 and 1"):
            f(lib.tensor(x * 2), lib.tensor(t))
        meta = F.binary_cross_entropy(lib.rand(3, device="meta"), lib.rand(3, device="meta"))
        assert meta.device.type == "meta" and tuple(meta.shape) == ()
    _close(res[0], res[1], rtol=1e-12)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", DeprecationWarning)     # torch.jit.* are deprecated
        ember.jit.trace(lambda a, b: ember.nn.functional.binary_cross_entropy(a.sigmoid(), b),
                        (ember.randn(4), ember.rand(4)))


def test_sparse_constructor_warns_once_invariants_implicitly_off():
    # gcn: torch warns (once a process) that invariant checks are implicitly disabled
    from ember._ops import sparse as S
    import warnings
    assert ember.sparse.check_sparse_tensor_invariants.is_enabled() == \
        torch.sparse.check_sparse_tensor_invariants.is_enabled() == False  # noqa: E712
    S._invariants_warned[0] = False
    idx, vals = ember.tensor([[0, 1], [1, 0]]), ember.ones(2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ember.sparse_coo_tensor(idx, vals, (2, 2), check_invariants=False)
        ember.sparse_coo_tensor(idx, vals, (2, 2))
        ember.sparse_coo_tensor(idx, vals, (2, 2))
    msgs = [str(x.message) for x in w if "invariant checks" in str(x.message)]
    assert len(msgs) == 1 and msgs[0].startswith("Sparse invariant checks are implicitly disabled")
