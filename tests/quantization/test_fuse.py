"""fuse_modules / fuse_modules_qat and the fused module classes against torch's: same
structure (reprs), folded weights equal, fused float model computes what torch's does."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.ao.quantization as TQ  # noqa: E402

import ember  # noqa: E402
import ember.ao.quantization as EQ  # noqa: E402


def _model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Conv2d(4, 4, 1), nn.ReLU(), nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4),
                         nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(36, 5),
                         nn.BatchNorm1d(5), nn.Linear(5, 3), nn.ReLU())


GROUPS = [["0", "1", "2"], ["3", "4"], ["5", "6"], ["7", "8"], ["10", "11"], ["12", "13"]]


def _pair(train):
    torch.manual_seed(0)
    t = _model(torch)
    for m in t.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
            m.weight.data.uniform_(-2, 2)
            m.bias.data.uniform_(-1, 1)
    e = _model(ember)
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    return t.train(train), e.train(train)


def test_fuse_modules_eval_equals_torch():
    t, e = _pair(False)
    tf = TQ.fuse_modules(t, GROUPS)
    ef = EQ.fuse_modules(e, GROUPS)
    assert repr(ef) == repr(tf)
    for (kt, vt), (ke, ve) in zip(tf.state_dict().items(), ef.state_dict().items()):
        assert kt == ke
        np.testing.assert_array_equal(ve.numpy(), vt.numpy())
    x = np.random.default_rng(0).standard_normal((2, 2, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(ef(ember.from_numpy(x)).detach().numpy(),
                               tf(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    # the original model is untouched unless inplace
    assert isinstance(e[1], ember.nn.BatchNorm2d)
    EQ.fuse_modules(e, GROUPS, inplace=True)
    assert isinstance(e[1], ember.nn.Identity)


def test_fuse_modules_qat_equals_torch():
    t, e = _pair(True)
    tf = TQ.fuse_modules_qat(t, GROUPS)
    ef = EQ.fuse_modules_qat(e, GROUPS)
    assert repr(ef) == repr(tf)
    assert list(ef.state_dict()) == list(tf.state_dict())


def test_fusion_errors():
    t, e = _pair(True)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        EQ.fuse_modules(e, [["0", "1"]])
    with pytest.raises(AssertionError, match="did not find fuser method"):
        EQ.fuse_modules(e.eval(), [["2", "3"]])
    with pytest.raises(AssertionError, match="Incorrect types for input modules"):
        ember.ao.nn.intrinsic.ConvReLU2d(ember.nn.Conv1d(1, 2, 3), ember.nn.ReLU())


def test_hooks_move_to_fused_module():
    calls = {}
    for lib, Q, model in zip((torch, ember), (TQ, EQ), _pair(False)):
        seen = calls[lib.__name__] = []
        model[0].register_forward_pre_hook(lambda m, i: seen.append("pre"))
        model[2].register_forward_hook(lambda m, i, o: seen.append("post"))
        fused = Q.fuse_modules(model, [["0", "1", "2"]])
        fused[0](lib.randn(1, 2, 5, 5))
    # the fused module runs the conv's pre-hook; so does the conv copied into it (as torch)
    assert calls["ember"] == calls["torch"] == ["pre", "pre", "post"]


def test_intrinsic_and_qat_reprs_equal_torch():
    import torch.ao.nn.intrinsic.qat as tiq
    import torch.ao.nn.intrinsic.quantized as tiqq
    import torch.ao.nn.qat as tqat
    import ember.ao.nn.intrinsic.qat as eiq
    import ember.ao.nn.intrinsic.quantized as eiqq
    import ember.ao.nn.qat as eqat
    for name, args in [("ConvBn2d", (2, 3, 3)), ("ConvBnReLU2d", (2, 3, 3)),
                       ("ConvReLU2d", (2, 3, 3)), ("LinearReLU", (2, 3)),
                       ("LinearBn1d", (2, 3)), ("ConvBn1d", (2, 3, 3)), ("ConvBnReLU3d", (2, 3, 1))]:
        t = getattr(tiq, name)(*args, qconfig=TQ.default_qat_qconfig)
        e = getattr(eiq, name)(*args, qconfig=EQ.default_qat_qconfig)
        assert repr(e) == repr(t)
        assert list(e.state_dict()) == list(t.state_dict())
        assert [c.__name__ for c in type(e).__mro__] == [c.__name__ for c in type(t).__mro__]
    for name, args in [("Linear", (2, 3)), ("Conv2d", (2, 3, 3)), ("Conv1d", (2, 3, 3))]:
        assert repr(getattr(eqat, name)(*args, qconfig=EQ.default_qat_qconfig)) == \
            repr(getattr(tqat, name)(*args, qconfig=TQ.default_qat_qconfig))
    for name in ["Embedding", "EmbeddingBag"]:
        assert repr(getattr(eqat, name)(5, 3, qconfig=EQ.default_embedding_qat_qconfig)) == \
            repr(getattr(tqat, name)(5, 3, qconfig=TQ.default_embedding_qat_qconfig))
    with pytest.raises(AssertionError, match="per_channel_affine_float_qparams"):
        eqat.Embedding(5, 3, qconfig=EQ.default_qat_qconfig)
    with pytest.raises(AssertionError, match="qconfig must be provided"):
        eqat.Linear(2, 3)
    for name, args in [("ConvReLU2d", (2, 3, 3)), ("LinearReLU", (2, 3)), ("BNReLU2d", (3,)),
                       ("ConvAdd2d", (2, 3, 3)), ("ConvReLU1d", (2, 3, 3))]:
        assert repr(getattr(eiqq, name)(*args)) == repr(getattr(tiqq, name)(*args))
