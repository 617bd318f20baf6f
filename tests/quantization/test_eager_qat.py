"""Eager quantization-aware training against torch: prepare_qat gives the same modules;
a few SGD steps through fake quantization give the same losses and gradients (to float32
tolerance); convert of the same trained state gives the same quantized model and output
integers."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.ao.quantization as TQ  # noqa: E402
import torch.ao.nn.intrinsic.qat as tiqat  # noqa: E402

import ember  # noqa: E402
import ember.ao.quantization as EQ  # noqa: E402
import ember.ao.nn.intrinsic.qat as eiqat  # noqa: E402

def _model(lib, Q):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = Q.QuantStub()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.relu = nn.ReLU()
            self.flat = nn.Flatten()
            self.fc = nn.Linear(8 * 6 * 6, 10)
            self.dequant = Q.DeQuantStub()

        def forward(self, x):
            x = self.relu(self.bn(self.conv(self.quant(x))))
            return self.dequant(self.fc(self.flat(x)))
    return Net()


def _pair():
    torch.manual_seed(0)
    t = _model(torch, TQ)
    e = _model(ember, EQ)
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    return t.train(), e.train()


def _load(dst, src):
    # (clone first: a torch tensor seen by numpy() can no longer be resized by its observer)
    dst.load_state_dict({k: ember.from_numpy(v.detach().clone().numpy().copy())
                         for k, v in src.state_dict().items()})


QCONFIGS = {"qat_v0": lambda Q: Q.get_default_qat_qconfig("x86", 0),
            "qat_v1": lambda Q: Q.get_default_qat_qconfig("x86", 1),
            "default_qat": lambda Q: Q.default_qat_qconfig,
            "qnnpack": lambda Q: Q.get_default_qat_qconfig("qnnpack")}


@pytest.mark.parametrize("name", list(QCONFIGS))
def test_qat_train_and_convert_equal_torch(name):
    t, e = _pair()
    t.qconfig, e.qconfig = QCONFIGS[name](TQ), QCONFIGS[name](EQ)
    t = TQ.fuse_modules_qat(t, [["conv", "bn", "relu"]])
    e = EQ.fuse_modules_qat(e, [["conv", "bn", "relu"]])
    tp, ep = TQ.prepare_qat(t), EQ.prepare_qat(e)
    assert repr(ep).replace("ember.", "torch.") == repr(tp)
    assert list(ep.state_dict()) == list(tp.state_dict())
    _load(ep, tp)        # the QAT ConvBn re-draws its batch-norm init: start from one state
    topt = torch.optim.SGD(tp.parameters(), lr=0.05, momentum=0.9)
    eopt = ember.optim.SGD(ep.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(1)
    for step in range(4):
        if step == 2:
            tp.apply(tiqat.freeze_bn_stats)
            ep.apply(eiqat.freeze_bn_stats)
        if step == 3:
            tp.apply(TQ.disable_observer)
            ep.apply(EQ.disable_observer)
        x = rng.standard_normal((5, 3, 6, 6)).astype(np.float32)
        y = rng.integers(0, 10, 5)
        lt = torch.nn.functional.cross_entropy(tp(torch.from_numpy(x)), torch.from_numpy(y))
        le = ember.nn.functional.cross_entropy(ep(ember.from_numpy(x)), ember.from_numpy(y))
        topt.zero_grad()
        eopt.zero_grad()
        lt.backward()
        le.backward()
        np.testing.assert_allclose(le.item(), lt.item(), rtol=1e-5)
        for (n, pt), pe in zip(tp.named_parameters(), ep.parameters()):
            np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-4,
                                       atol=1e-6, err_msg=n)
        topt.step()
        eopt.step()
    for (n, bt), be in zip(tp.named_buffers(), ep.buffers()):
        np.testing.assert_allclose(be.numpy(), bt.numpy(), rtol=1e-4, atol=1e-6, err_msg=n)
    tp.eval()
    ep.eval()
    _load(ep, tp)        # convert the very same trained state
    tq, eq = TQ.convert(tp), EQ.convert(ep)
    assert repr(eq) == repr(tq)
    tq.dequant, eq.dequant = torch.nn.Identity(), ember.nn.Identity()
    x = rng.standard_normal((4, 3, 6, 6)).astype(np.float32)
    to, eo = tq(torch.from_numpy(x)), eq(ember.from_numpy(x))
    assert eo.q_scale() == to.q_scale() and eo.q_zero_point() == to.q_zero_point()
    np.testing.assert_array_equal(eo.int_repr().numpy(), to.int_repr().numpy())


def test_quantize_qat_api():
    t, e = _pair()
    e.qconfig = EQ.get_default_qat_qconfig("x86")
    data = ember.randn(4, 3, 6, 6)

    def train(model, x):
        opt = ember.optim.SGD(model.parameters(), lr=0.01)
        model(x).sum().backward()
        opt.step()
    q = EQ.quantize_qat(e, train, [data])
    assert type(q.conv).__name__ == "Conv2d" and q.conv._get_name() == "QuantizedConv2d"
    assert q(data).shape == (4, 10)
    with pytest.raises(AssertionError, match="training mode"):
        EQ.prepare_qat(e.eval())


def test_qat_module_from_float_and_to_float():
    torch.manual_seed(1)
    tl = torch.nn.Linear(4, 3)
    el = ember.nn.Linear(4, 3)
    el.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tl.state_dict().items()})
    tl.qconfig, el.qconfig = TQ.default_qat_qconfig, EQ.default_qat_qconfig
    tq = torch.ao.nn.qat.Linear.from_float(tl)
    eq = ember.ao.nn.qat.Linear.from_float(el)
    assert eq.weight is el.weight
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    np.testing.assert_allclose(eq(ember.from_numpy(x)).detach().numpy(),
                               tq(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    back = eq.to_float()
    assert type(back) is ember.nn.Linear and back.weight is not eq.weight
    np.testing.assert_array_equal(back.weight.detach().numpy(), eq.weight.detach().numpy())


def test_qat_conv_bn_without_relu_converts_to_conv():
    """QAT ConvBn2d (no relu) becomes a quantized Conv2d with the batch norm folded in."""
    t, e = _pair()
    t.qconfig, e.qconfig = TQ.get_default_qat_qconfig("x86"), EQ.get_default_qat_qconfig("x86")
    tp = TQ.prepare_qat(TQ.fuse_modules_qat(t, [["conv", "bn"]]))
    ep = EQ.prepare_qat(EQ.fuse_modules_qat(e, [["conv", "bn"]]))
    assert repr(ep).replace("ember.", "torch.") == repr(tp)
    x = np.random.default_rng(3).standard_normal((5, 3, 6, 6)).astype(np.float32)
    tp(torch.from_numpy(x))
    _load(ep, tp)
    tp.eval()
    ep.eval()
    tq, eq = TQ.convert(tp), EQ.convert(ep)
    assert repr(eq) == repr(tq)
    np.testing.assert_array_equal(eq.conv.weight().int_repr().numpy(),
                                  tq.conv.weight().int_repr().numpy())
    np.testing.assert_array_equal(eq.conv.bias().detach().numpy(),
                                  tq.conv.bias().detach().numpy())
    tq.dequant, eq.dequant = torch.nn.Identity(), ember.nn.Identity()
    to, eo = tq(torch.from_numpy(x)), eq(ember.from_numpy(x))
    np.testing.assert_array_equal(eo.int_repr().numpy(), to.int_repr().numpy())


def test_qat_linear_bn_converts_to_linear():
    torch.manual_seed(0)

    def make(lib, Q):
        return lib.nn.Sequential(Q.QuantStub(), lib.nn.Linear(6, 5), lib.nn.BatchNorm1d(5),
                                 Q.DeQuantStub())
    t, e = make(torch, TQ), make(ember, EQ)
    _load(e, t)
    t.qconfig, e.qconfig = TQ.get_default_qat_qconfig("x86"), EQ.get_default_qat_qconfig("x86")
    tp = TQ.prepare_qat(TQ.fuse_modules_qat(t.train(), [["1", "2"]]))
    ep = EQ.prepare_qat(EQ.fuse_modules_qat(e.train(), [["1", "2"]]))
    assert repr(ep).replace("ember.", "torch.") == repr(tp)
    x = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    np.testing.assert_allclose(ep(ember.from_numpy(x)).detach().numpy(),
                               tp(torch.from_numpy(x)).detach().numpy(), atol=1e-5)
    _load(ep, tp)
    tq, eq = TQ.convert(tp.eval()), EQ.convert(ep.eval())
    assert repr(eq) == repr(tq)
    tq[3], eq[3] = torch.nn.Identity(), ember.nn.Identity()
    np.testing.assert_array_equal(eq(ember.from_numpy(x)).int_repr().numpy(),
                                  tq(torch.from_numpy(x)).int_repr().numpy())
