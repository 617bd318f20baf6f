"""jit.load of archives written by real torch (torch.jit.script(...).save): the loaded
modules give torch's outputs, gradients and state; archive code that is not TorchScript
(os.system, __import__, foreign pickle globals) is refused."""

import io
import zipfile
import math
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import ember  # noqa: E402
from ember.jit._serialization_load import load  # noqa: E402


# --------------------------------------------------------------------------- models (torch)

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(64, 5)

    def forward(self, x):
        x = self.pool(self.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


class BasicBlock(nn.Module):
    def __init__(self, inp, out, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inp, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.downsample = None
        if stride != 1 or inp != out:
            self.downsample = nn.Sequential(nn.Conv2d(inp, out, 1, stride, bias=False),
                                            nn.BatchNorm2d(out))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    """torchvision's resnet18 layout (2, 2, 2, 2 basic blocks), narrow to stay fast."""

    def __init__(self, width=4, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        chans = [width, width * 2, width * 4, width * 8]
        layers, inp = [], width
        for k, c in enumerate(chans):
            stride = 1 if k == 0 else 2
            layers.append(nn.Sequential(BasicBlock(inp, c, stride), BasicBlock(c, c)))
            inp = c
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(chans[-1], num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class LSTMModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True)
        self.fc = nn.Linear(6, 2)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.fc(out[:, -1]) + h.sum(0).mean() + c.mean()


class GRUModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 5, bidirectional=True)

    def forward(self, x):
        out, h = self.gru(x)
        return out.sum(0) + h.mean()


class Control(nn.Module):
    scale: Optional[torch.Tensor]

    def __init__(self, with_scale):
        super().__init__()
        self.sizes: List[int] = [1, 2, 3]
        self.table: Dict[str, int] = {"a": 2, "b": 3}
        self.scale = torch.full((3,), 0.5) if with_scale else None
        self.lin = nn.Linear(3, 3)

    def forward(self, x, n: int = 2):
        out: List[torch.Tensor] = []
        for i in range(n):
            if bool(x.sum() > 0):
                x = self.lin(x) * self.table["a"]
            else:
                x = x - float(i) + len(self.sizes)
            out.append(x)
        s = self.scale
        if s is not None:
            x = x * s
        while n > 0:
            n -= 1
            x = x + 1
        d: Dict[str, torch.Tensor] = {"x": x}
        return torch.stack(out, 0).sum(0) + d["x"] + x.to(torch.float64).sum(dtype=torch.float32)


class Pair(NamedTuple):
    value: torch.Tensor
    count: int


@torch.jit.script
class Accumulator:
    def __init__(self, x: torch.Tensor):
        self.total = x
        self.n = 0

    def add(self, y: torch.Tensor) -> int:
        self.total = self.total + y
        self.n += 1
        return self.n


class Mixed(nn.Module):
    """A scripted class, a NamedTuple result, interpolate, group norm, conv1d, dict items,
    string building, functional activations."""

    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(2, 4)
        self.conv = nn.Conv1d(4, 4, 3)

    def forward(self, x) -> Pair:
        y = F.gelu(self.gn(x)) + F.silu(x) * F.softmax(x, -1) + F.log_softmax(x, 1)
        y = F.interpolate(F.avg_pool1d(self.conv(y), 2), scale_factor=2.0, mode="linear")
        z = F.adaptive_avg_pool1d(y, 3)
        acc = Accumulator(z)
        k = acc.add(z)
        label = ""
        for part in torch.chunk(z, 2, 1):
            label += str(part.shape[1])
        weights: Dict[str, int] = {"x": 1, "yy": 2}
        total = 0
        for key, w in weights.items():
            total += w * len(key)
        if label == "21":
            total += 100
        return Pair(acc.total * total + F.dropout(z, 0.5, False).mean(), k + 4)


class Packed(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, bidirectional=True)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, (h, c) = self.lstm(packed)
        padded, lens = nn.utils.rnn.pad_packed_sequence(out)
        return padded.sum(2) + h.sum() + c.mean() + lens.sum()


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.enc = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)

    def forward(self, idx):
        return self.enc(self.emb(idx))


class Raises(nn.Module):
    def forward(self, x):
        if x.sum() > 100:
            raise ValueError("too big")
        return x.relu()


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.acts = nn.ModuleList([
            nn.ELU(), nn.ELU(inplace=True), nn.LeakyReLU(0.2), nn.Hardtanh(-0.5, 0.5),
            nn.Softplus(2.0), nn.PReLU(), nn.GELU("tanh"), nn.SiLU(), nn.Mish(), nn.Hardswish(),
            nn.Sigmoid(), nn.Tanh(), nn.LogSoftmax(1), nn.Softmax(1), nn.ReLU6(),
            nn.Hardsigmoid(), nn.Softsign(), nn.Tanhshrink(), nn.CELU(), nn.SELU(),
            nn.Threshold(0.1, 2.0), nn.LogSigmoid(), nn.Softshrink(), nn.Hardshrink()])

    def forward(self, x):
        out = x
        for a in self.acts:
            out = out + a(x.clone())
        return out


class NormsPools(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm([4, 5])
        self.inorm = nn.InstanceNorm2d(3, affine=True)
        self.gn = nn.GroupNorm(3, 3)
        self.bn1 = nn.BatchNorm1d(3)
        self.convs = nn.ModuleDict({
            "reflect": nn.Conv2d(3, 3, 3, padding=1, padding_mode="reflect"),
            "circular": nn.Conv2d(3, 3, 3, padding=1, padding_mode="circular")})
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.shuffle = nn.PixelShuffle(2)
        self.unflat = nn.Unflatten(1, (3, 20))

    def forward(self, x):
        y = self.ln(x) + self.inorm(x) + self.gn(x) + self.convs["reflect"](x) \
            + self.convs["circular"](x)
        z = self.shuffle(torch.cat([self.up(y)] * 4, 1))
        w = self.unflat(torch.flatten(x, 1))
        pooled, idx = F.adaptive_max_pool2d(x, 2, return_indices=True)
        return z.sum((1, 2)) + w.mean() + F.avg_pool2d(x, 2).sum() + pooled.sum() \
            + idx.sum() + self.bn1(x.flatten(2)).sum()


class TensorOps(nn.Module):
    def forward(self, x, idx, mask):
        a = torch.where(x > 0, x, x * 0.1).clamp(-1.0, 1.0)
        v, i = torch.topk(x, 2, dim=1)
        s, j = torch.sort(x, 1, descending=True)
        m = x.masked_fill(mask, 0.5)
        n = x.norm(2, 1) + x.cumsum(1).mean(1) + x.std(1) + x.var(1, unbiased=False)
        y = x[:, 1:3] + x[..., None][:, :2, 0] + x[idx[:, 0]][:, 1:3]
        x2 = x.clone()
        x2[0] = 1.0
        x2[:, 0] += 2.0
        ar = torch.arange(x.size(1)).float() + torch.zeros_like(x) + x.new_zeros(x.shape) \
            + torch.full([x.size(0), x.size(1)], 2.0)
        rows = [r.sum() for r in x]
        return (a.sum() + v.sum() + i.sum() + s.sum() + j.sum() + torch.gather(x, 1, idx).sum()
                + torch.einsum("ij,kj->ik", x, x).sum() + m.sum() + n.sum() + y.sum()
                + x2.sum() + x.size(0) // 2 + float(x.shape[1]) ** 0.5 + ar.sum()
                + torch.stack(rows).sum() + x.argmax() + x.long().sum()
                + torch.bmm(x[None], x.t()[None]).sum())


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(3, 4, num_layers=2)
        self.gru_cell, self.lstm_cell = nn.GRUCell(3, 4), nn.LSTMCell(3, 4)
        self.rnn_cell = nn.RNNCell(3, 4, nonlinearity="relu")
        self.mha = nn.MultiheadAttention(4, 2)

    def forward(self, x):
        out, h = self.rnn(x)
        hl, cl = self.lstm_cell(x[0])
        a, w = self.mha(out, out, out)
        assert w is not None
        return out.sum() + h.sum() + self.gru_cell(x[0]).sum() + hl.sum() + cl.sum() \
            + self.rnn_cell(x[0]).sum() + a.sum() + w.sum()


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.dec = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
        self.emb = nn.Embedding(10, 8, padding_idx=0)

    def forward(self, tgt, mem):
        n = tgt.size(0)
        mask = torch.triu(torch.full((n, n), float("-inf")), 1)
        return self.dec(self.emb(tgt), mem, tgt_mask=mask)


class NoGradFormat(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, scale: Optional[float] = None) -> Tuple[torch.Tensor, str]:
        with torch.no_grad():
            y = self.lin(x)
        s = 1.0 if scale is None else scale
        return y * s, "n={} s={} {}".format(x.size(0), s, [s, 2.0])


class ToVariants(nn.Module):
    """aten::to's overloads and dtypes as ScalarType codes (compared, passed as dtype=)."""

    def forward(self, x, y):
        a = x.to(torch.float64)
        b = x.to(device="cpu")
        d = x.to("cpu", torch.float16)
        e = x.to(torch.device("cpu"), torch.int32, False, True)
        return a.sum() + b.sum() + x.to(y).sum() + d.float().sum() + e.sum() \
            + x.to(dtype=torch.int64).sum() + (a.dtype == torch.float64) \
            + (torch.float32 == x.dtype) + x.sum(dtype=torch.float64)


def _double(xs: List[int], k: int = 2) -> List[int]:
    return [x * k for x in xs]


class PythonLevel(nn.Module):
    names: List[str]
    history: List[float]

    def __init__(self):
        super().__init__()
        self.names = ["alpha", "beta", "gamma"]
        self.cfg: Dict[str, float] = {"lr": 0.1}
        self.maybe: Optional[int] = None
        self.pair: Tuple[int, float] = (3, 0.5)
        self.calls = 0
        self.history = []
        self.register_buffer("acc", torch.zeros(3))

    def forward(self, x, n: int, tag: str = "z") -> Tuple[torch.Tensor, List[int], str,
                                                          Dict[str, int]]:
        self.calls += 1
        self.acc.add_(x)
        ys = _double(list(range(n)))
        total = 0
        for i, y in enumerate(ys):
            total += i * y
        for a, b in zip(ys, self.names):
            total += a + len(b)
        words = [w.upper() for w in self.names]
        counts: Dict[str, int] = {}
        for w in self.names:
            counts[w[0]] = counts.get(w[0], 0) + len(w)
        if "a" in counts and not ("q" in counts):
            total += counts["a"]
        m = self.maybe
        if m is not None:
            total += m
        k, f = self.pair
        z = x * self.cfg["lr"] * f + total + k
        z = z + math.sqrt(float(n)) + math.floor(2.7) + abs(-3) + max(2, n) + min([4, 1, 3]) \
            + int(3.9) + (n // 3) + (n % 3) + (-n) ** 2 + (2 ** n) / 4
        if n > 2 and (n < 10 or tag == "y"):
            z = z * 2
        s = "-".join(words)[1:3] + str(n) + tag
        ys.append(len(s))
        ys.extend([7, 8])
        ys.insert(0, -1)
        ys.pop()
        ys.sort()
        ys.reverse()
        self.history.append(float(z.sum()))
        return z * self.calls, ys, s, counts

    @torch.jit.export
    def reset(self, v: float) -> int:
        self.acc.fill_(v)
        old = self.calls
        self.calls = 0
        return old


def scripted_fn(x: torch.Tensor, k: int) -> torch.Tensor:
    y = x.clone()
    for i in range(k):
        y = torch.sigmoid(y) + i
    return y.view(-1)


# --------------------------------------------------------------------------- helpers

def _save(tmp_path, module, name="m.pt", **kw):
    path = tmp_path / name
    torch.jit.script(module).save(str(path), **kw)
    return path


def _e(t):
    return ember.tensor(t.detach().numpy()) if isinstance(t, torch.Tensor) else t


def _check(out, ref, tol=1e-5):
    np.testing.assert_allclose(np.asarray(out.detach()._data), ref.detach().numpy(),
                               rtol=tol, atol=tol)


def _run_both(path, *args):
    """torch's and ember's outputs; ember's also under no_grad (the array fast path, and
    torch's fused-kernel branches that inference takes) must agree."""
    ref = torch.jit.load(str(path))(*args)
    em = load(str(path))
    out = em(*[_e(a) for a in args])
    with ember.no_grad():
        again = em(*[_e(a) for a in args])
    np.testing.assert_allclose(np.asarray(again._data), np.asarray(out.detach()._data),
                               rtol=1e-6, atol=1e-6)
    return out, ref


# --------------------------------------------------------------------------- models

def test_mlp(tmp_path):
    torch.manual_seed(0)
    _check(*_run_both(_save(tmp_path, MLP()), torch.randn(5, 4)))


def test_cnn_eval(tmp_path):
    torch.manual_seed(0)
    m = CNN()
    m.bn.running_mean.uniform_(-1, 1)
    m.bn.running_var.uniform_(0.5, 2)
    _check(*_run_both(_save(tmp_path, m.eval()), torch.randn(2, 3, 8, 8)))


def test_cnn_train_updates_running_stats(tmp_path):
    torch.manual_seed(0)
    path = _save(tmp_path, CNN())
    x = torch.randn(4, 3, 8, 8)
    tm, em = torch.jit.load(str(path)), load(str(path))
    assert em.training
    _check(em(_e(x)), tm(x))
    _check(em.bn.running_mean, tm.bn.running_mean)
    _check(em.bn.running_var, tm.bn.running_var)
    assert int(em.bn.num_batches_tracked.item()) == 1


def test_resnet18(tmp_path):
    torch.manual_seed(0)
    path = _save(tmp_path, ResNet18().eval())
    out, ref = _run_both(path, torch.randn(2, 3, 32, 32))
    _check(out, ref, 1e-4)
    em = load(str(path))
    assert em.original_name == "ResNet18"
    assert em.layer2._modules["0"].downsample.original_name == "Sequential"


class Reshapes(nn.Module):
    def forward(self, x):
        n = x.size(0)
        y = x.view(n, -1)
        z = y[:, : y.size(1) // 2]
        up = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        return up.sum() + z.reshape(n, 2, -1).mean(1).sum() + torch.zeros(x.shape[0]).sum()


@pytest.mark.parametrize("make", [lambda: (ResNet18().eval(), torch.randn(2, 3, 32, 32)),
                                  lambda: (LSTMModel(), torch.randn(3, 5, 4)),
                                  lambda: (Reshapes(), torch.randn(2, 3, 4, 4))])
def test_traced_archives(tmp_path, make):
    """torch.jit.trace writes other forms (aten::_convolution, prim::NumToTensor...)."""
    torch.manual_seed(0)
    module, x = make()
    path = tmp_path / "traced.pt"
    torch.jit.trace(module, (x,), check_trace=False).save(str(path))
    _check(*_run_both(path, x), 1e-5)


def test_lstm(tmp_path):
    torch.manual_seed(0)
    _check(*_run_both(_save(tmp_path, LSTMModel()), torch.randn(3, 5, 4)))


def test_bidirectional_gru(tmp_path):
    torch.manual_seed(0)
    _check(*_run_both(_save(tmp_path, GRUModel()), torch.randn(4, 2, 3)))


@pytest.mark.parametrize("with_scale", [True, False])
def test_control_flow_lists_dicts_optional(tmp_path, with_scale):
    torch.manual_seed(0)
    path = _save(tmp_path, Control(with_scale))
    for x, n in ((torch.randn(2, 3), 3), (-torch.rand(2, 3), 1), (torch.randn(2, 3), 4)):
        _check(*_run_both(path, x, n))
    em = load(str(path))
    with pytest.raises(RuntimeError, match="stack"):       # torch: an empty TensorList
        em(_e(torch.randn(2, 3)), 0)
    _check(em(_e(torch.ones(2, 3))), torch.jit.load(str(path))(torch.ones(2, 3)))  # default n
    assert em.sizes == [1, 2, 3] and em.table == {"a": 2, "b": 3}


def test_scripted_function(tmp_path):
    path = tmp_path / "fn.pt"
    torch.jit.script(scripted_fn).save(str(path))
    x = torch.randn(3, 2)
    out, ref = _run_both(path, x, 3)
    _check(out, ref)
    assert load(str(path)).original_name == torch.jit.load(str(path)).original_name


def test_class_namedtuple_interpolate_dict_str(tmp_path):
    torch.manual_seed(0)
    path = _save(tmp_path, Mixed())
    x = torch.randn(2, 4, 9)
    ref = torch.jit.load(str(path))(x)
    out = load(str(path))(_e(x))
    assert type(out).__name__ == "Pair" and out.count == ref.count == 5
    _check(out.value, ref.value, 1e-4)


def test_packed_bidirectional_lstm(tmp_path):
    torch.manual_seed(0)
    path = _save(tmp_path, Packed())
    _check(*_run_both(path, torch.randn(5, 3, 3), torch.tensor([5, 2, 3])))


def test_transformer_encoder_layer(tmp_path):
    torch.manual_seed(0)
    path = _save(tmp_path, Encoder().eval())
    _check(*_run_both(path, torch.randint(0, 10, (2, 5))), 1e-5)


def test_frozen_module_constants(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "frozen.pt"
    torch.jit.freeze(torch.jit.script(CNN().eval())).save(str(path))
    with zipfile.ZipFile(path) as z:
        assert any("/constants/" in n for n in z.namelist())     # weights are CONSTANTS
    _check(*_run_both(path, torch.randn(2, 3, 8, 8)))


def test_scripted_raise(tmp_path):
    path = _save(tmp_path, Raises())
    em = load(str(path))
    _check(em(_e(torch.ones(3))), torch.ones(3), 0)
    with pytest.raises(Exception, match="too big"):
        em(ember.full((3,), 50.0))


_ZOO = {
    "activations": (Activations, lambda: (torch.randn(2, 5),)),
    "norms_pools": (NormsPools, lambda: (torch.randn(2, 3, 4, 5),)),
    "tensor_ops": (TensorOps, lambda: (torch.randn(3, 4), torch.tensor([[0, 1], [2, 0], [1, 1]]),
                                       torch.randn(3, 4) > 0.5)),
    "recurrent": (Recurrent, lambda: (torch.randn(5, 2, 3),)),
    "decoder": (Decoder, lambda: (torch.randint(0, 10, (4, 2)), torch.randn(3, 2, 8))),
    "to_variants": (ToVariants, lambda: (torch.randn(3) * 5, torch.zeros(2, dtype=torch.float64))),
}


@pytest.mark.parametrize("name", list(_ZOO))
def test_layer_zoo(tmp_path, name):
    torch.manual_seed(0)
    cls, make = _ZOO[name]
    path = _save(tmp_path, cls().eval())
    _check(*_run_both(path, *make()), 1e-4)


def test_no_grad_block_and_format(tmp_path):
    torch.manual_seed(0)
    path = _save(tmp_path, NoGradFormat())
    x = torch.randn(2, 3)
    for args in ((x,), (x, 2.5)):
        ref = torch.jit.load(str(path))(*args)
        out = load(str(path))(_e(x), *args[1:])
        _check(out[0], ref[0])
        assert out[1] == ref[1]
        assert not out[0].requires_grad and ember.is_grad_enabled()


def test_python_level_code_and_exported_method(tmp_path):
    path = _save(tmp_path, PythonLevel())
    tm, em = torch.jit.load(str(path)), load(str(path))
    for n, tag in ((5, "z"), (2, "y"), (0, "q")):
        x = torch.randn(3)
        ref, out = tm(x, n, tag), em(_e(x), n, tag)
        _check(out[0], ref[0])
        assert out[1:] == ref[1:]
    assert em.calls == tm.calls == 3
    _check(em.acc, tm.acc)
    np.testing.assert_allclose(em.history, tm.history, rtol=1e-5)
    assert em.reset(1.5) == tm.reset(1.5) == 3
    assert em.calls == 0
    _check(em.acc, tm.acc, 0)


def test_state_dict_parameters_and_gradients(tmp_path):
    torch.manual_seed(0)
    path = _save(tmp_path, MLP())
    tm, em = torch.jit.load(str(path)), load(str(path))
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(tsd) == list(esd)
    for k in tsd:
        _check(esd[k], tsd[k], 0)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x = torch.randn(5, 4)
    tm(x).square().sum().backward()
    em(_e(x)).square().sum().backward()
    for (n, tp), (_, ep) in zip(tm.named_parameters(), em.named_parameters()):
        _check(ep.grad, tp.grad)
    em.eval()
    assert not em.training and not em.l1.training
    import copy
    twin = copy.deepcopy(em)
    assert twin.l1.weight is not em.l1.weight
    _check(twin(_e(x)), em(_e(x)), 0)
    assert repr(em) == repr(tm)


def test_file_object_extra_files_map_location(tmp_path):
    torch.manual_seed(0)
    path = _save(tmp_path, MLP(), _extra_files={"meta.txt": "hello", "cfg.json": "{}"})
    extra = {"meta.txt": "", "missing.txt": "x"}
    with open(path, "rb") as fh:
        em = load(fh, map_location="cpu", _extra_files=extra)
    torch_extra = {"meta.txt": "", "missing.txt": "x"}
    torch.jit.load(str(path), _extra_files=torch_extra)
    assert extra == torch_extra
    em2 = load(io.BytesIO(path.read_bytes()), map_location=ember.device("cpu"))
    x = torch.randn(2, 4)
    _check(em(_e(x)), em2(_e(x)), 0)
    assert em.l1.weight.device.type == "cpu"


@pytest.mark.parametrize("make", [lambda: (CNN().eval(), torch.randn(2, 3, 8, 8)),
                                  lambda: (LSTMModel(), torch.randn(3, 5, 4)),
                                  lambda: (NormsPools().eval(), torch.randn(2, 3, 4, 5)),
                                  lambda: (Encoder().eval(), torch.randint(0, 10, (2, 5)))],
                         ids=["CNN", "LSTMModel", "NormsPools", "Encoder"])
def test_loaded_module_saves_back_for_torch(tmp_path, make):
    """torch archive -> ember load -> ember jit.save -> torch.jit.load: same outputs."""
    save_mod = pytest.importorskip("ember.jit._serialization_save")
    torch.manual_seed(0)
    module, x = make()
    path = _save(tmp_path, module)
    again = tmp_path / "again.pt"
    save_mod.save(load(str(path)), str(again))
    np.testing.assert_allclose(torch.jit.load(str(again))(x).detach().numpy(),
                               torch.jit.load(str(path))(x).detach().numpy(), rtol=1e-6)


def test_public_name(tmp_path):
    if getattr(ember.jit, "load", None) is None:
        pytest.skip("ember.jit.load not wired yet")
    torch.manual_seed(0)
    path = _save(tmp_path, MLP())
    x = torch.randn(2, 4)
    _check(ember.jit.load(str(path))(_e(x)), torch.jit.load(str(path))(x))


def test_bad_paths(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load(str(tmp_path / "nope.pt"))
    (tmp_path / "junk.pt").write_bytes(b"not a zip")
    with pytest.raises(RuntimeError):
        load(str(tmp_path / "junk.pt"))
    torch.save({"a": torch.ones(1)}, str(tmp_path / "plain.pt"))
    with pytest.raises(RuntimeError, match="constants.pkl"):
        load(str(tmp_path / "plain.pt"))


# --------------------------------------------------------------------------- safety

def _rewrite(path, out, fn):
    """Copy the archive at ``path`` to ``out`` with each member's bytes passed through
    ``fn(name, data)``."""
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, fn(info.filename, zin.read(info.filename)))
    return out


_EVIL = [
    ('os.system("touch {marker}")', "'os'"),
    ('__import__("os").system("touch {marker}")', "'__import__'"),
    ('torch.save(x, "{marker}")', "aten::save"),
    ('x.__class__.__init__.__globals__["os"].system("touch {marker}")', "attribute '__"),
    ('getattr(torch, "load")("{marker}")', "aten::load"),
    ('eval("1")', "'eval'"),
    ('x.numpy().tofile("{marker}")', "method call"),
    ('unchecked_cast(Any, x).forward(x)', "prim::CallAny"),
    ('(x).numpy()', "Tensor.numpy"),       # an archive method named numpy (below) admits the name
]


@pytest.mark.parametrize("evil,what", _EVIL)
def test_archive_code_cannot_run_python(tmp_path, evil, what):
    path = _save(tmp_path, MLP())
    marker = tmp_path / "pwned"
    line = "    _e = " + evil.format(marker=marker) + "\n"

    def inject(name, data):
        if name.endswith(".py") and b"    l2 = self.l2\n" in data:
            text = data.decode()
            head, sep, tail = text.partition("    l2 = self.l2\n")
            text = head + line + sep + tail
            return (text + "  def numpy(self: int) -> int:\n    return 1\n").encode()
        return data
    bad = _rewrite(path, tmp_path / "bad.pt", inject)
    with pytest.raises(RuntimeError) as info:
        load(str(bad))
    assert what in str(info.value)
    assert not marker.exists()


def test_pickle_globals_are_restricted(tmp_path):
    path = _save(tmp_path, MLP())
    marker = tmp_path / "pwned"

    def inject(name, data):
        if name.endswith("/data.pkl"):
            # a pickle whose root is os.system("touch marker")
            return (b"\x80\x02cos\nsystem\nq\x00X" + len(f"touch {marker}").to_bytes(4, "little")
                    + f"touch {marker}".encode() + b"\x85R.")
        return data
    bad = _rewrite(path, tmp_path / "bad.pt", inject)
    with pytest.raises(RuntimeError, match="os.system"):
        load(str(bad))
    assert not marker.exists()


def test_unused_method_is_checked_too(tmp_path):
    path = _save(tmp_path, MLP())

    def inject(name, data):
        if name.endswith(".py") and b"    l2 = self.l2\n" in data:
            return data + (b"  def unused(self: __torch__.MLP, x: Tensor) -> Any:\n"
                           b"    return unchecked_cast(Any, x).forward(x)\n")
        return data
    with pytest.raises(RuntimeError, match="prim::CallAny"):
        load(str(_rewrite(path, tmp_path / "bad.pt", inject)))


def test_attribute_names_must_be_identifiers(tmp_path):
    path = _save(tmp_path, MLP())

    def inject(name, data):
        if name.endswith(".py") and b"    l2 = self.l2\n" in data:
            return data.replace(b"  training : bool\n", b"  training : bool\n"
                                b"  __annotations__[\"x if 1 else y\"] = int\n", 1)
        return data
    with pytest.raises(RuntimeError, match="attribute name"):
        load(str(_rewrite(path, tmp_path / "bad.pt", inject)))


def test_top_level_statements_refused(tmp_path):
    path = _save(tmp_path, MLP())

    def inject(name, data):
        if name.endswith(".py") and b"    l2 = self.l2\n" in data:
            return b"import os\n" + data
        return data
    with pytest.raises(RuntimeError, match="Import"):
        load(str(_rewrite(path, tmp_path / "bad.pt", inject)))


# --------------------------------------------------------------------------- fork closures

def _fork_helper(x: torch.Tensor, k: int) -> torch.Tensor:
    return x * k


class Forks(nn.Module):
    """torch writes each fork as ``def __forked_function(): return (a).forward(x, )`` then
    ``fork(__forked_function)`` inside the method."""

    def __init__(self):
        super().__init__()
        self.a, self.b = MLP(), MLP()

    def forward(self, x):
        fa = torch.jit.fork(self.a, x)
        fb = torch.jit.fork(self.b, x + 1)
        fc = torch.jit.fork(_fork_helper, x, 3)
        return torch.jit.wait(fa) + torch.jit.wait(fb) + torch.jit.wait(fc).sum(1, keepdim=True)


class ForkPair(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.l(x))

    @torch.jit.export
    def pair(self, x: torch.Tensor, k: int) -> Tuple[torch.Tensor, int]:
        return x * k, k + 1


class ForksInBlocks(nn.Module):
    """Closures inside a loop and a branch, a fork of an exported method returning a tuple."""

    def __init__(self):
        super().__init__()
        self.a = ForkPair()

    def forward(self, x):
        futs = [torch.jit.fork(self.a, x + i) for i in range(3)]
        out = x
        for f in futs:
            out = out + torch.jit.wait(f)
        if bool(x.sum() > 0):
            y, k = torch.jit.wait(torch.jit.fork(self.a.pair, x, 2))
            out = out + y * k
        return out


@pytest.mark.parametrize("make,forks", [(Forks, 3), (ForksInBlocks, 2)], ids=["Forks", "InBlocks"])
def test_fork_closures_load_run_and_save_back(tmp_path, make, forks):
    torch.manual_seed(0)
    path = _save(tmp_path, make())
    z = zipfile.ZipFile(str(path))
    code = "".join(z.read(n).decode() for n in z.namelist() if n.endswith(".py"))
    assert "def __forked_function():" in code and "fork(__forked_function)" in code
    x = torch.rand(2, 4)
    out, ref = _run_both(path, x)
    _check(out, ref)
    _check(*_run_both(path, -x))
    em = load(str(path))
    assert str(em.graph).count("prim::fork") == forks
    again = tmp_path / "again.pt"
    ember.jit.save(em, str(again))
    assert "def __forked_function():" in em.code and "fork(__forked_function)" in em.code
    _check(_e(torch.jit.load(str(again))(x)), ref)


def _nested_fork(x):
    def task():
        return x + 1
    return torch.jit.wait(torch.jit.fork(task))


def test_nested_def_outside_archives_is_refused_like_torch():
    """Only archive code has closures: scripted Python source with a nested def is refused
    by torch's frontend, and by ember's."""
    from ember.jit.frontend import UnsupportedNodeError
    with pytest.raises(Exception, match="function definitions aren't supported"):
        torch.jit.script(_nested_fork)
    with pytest.raises(UnsupportedNodeError, match="function definitions aren't supported"):
        ember.jit.script(_nested_fork)
