"""Regressions of round 15a (session 22): ``Tensor.to``'s overloads, float16/bfloat16
arithmetic with Python numbers and 0-d tensors (bit for bit), batch norm of half inputs
with float32 parameters, and Dirichlet/Beta ``rsample`` gradients, each against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _result(fn):
    try:
        return ("ok", fn())
    except Exception as e:            # (the class's name: ember's may subclass torch's)
        return (type(e).__name__, str(e))


# ---------------------------------------------------------------- Tensor.to overloads

_TO_CALLS = [
    "x.to(L.float64)", "x.to(L.float32)", "x.to('cpu')", "x.to(L.device('cpu'))",
    "x.to('cpu', L.float64)", "x.to('cpu', L.float32)", "x.to(o)", "x.to(x)",
    "x.to(dtype=L.float64)", "x.to(device='cpu')", "x.to(device='cpu', dtype=L.float64)",
    "x.to(L.float32, copy=True)", "x.to(L.float32, False, True)", "x.to(L.float32, True)",
    "x.to('cpu', L.float32, False, True)", "x.to('cpu', None, False, True)",
    "x.to(None, L.float32, False, True)", "x.to(o, False, True)", "x.to(x, False, True)",
    "x.to(x, copy=True)", "x.to(tensor=o)", "x.to(tensor=o, copy=True)",
    "x.to(memory_format=L.channels_last)", "x.to(memory_format=L.preserve_format)",
    "x.to(L.float64, memory_format=L.channels_last)",
    "x.to(L.float32, memory_format=L.channels_last)", "x.to(memory_format=L.contiguous_format)",
    "x.to(o, memory_format=L.channels_last)", "x.to(copy=True)", "x.to(non_blocking=True)",
    "x.to()", "x.to(None)", "x.to(None, None)", "x.to(dtype=None)", "x.to(device=None)",
    "x.to('cpu:0')", "x.to(L.device('cpu', 0))", "x.to('meta')",
    "x.to(L.device('meta'), L.float64)",
    # Python types are dtypes; a Python number is a 0-d tensor (form 3)
    "x.to(float)", "x.to(int)", "x.to(bool)", "x.to(complex)", "x.to(dtype=float)",
    "x.to('cpu', float)", "x.to(True)", "x.to(False)", "x.to(1.5)", "x.to(1j)",
    "x.to(2, True)", "x.to(2.5, True)", "x.to(tensor=2)",
    # refused
    "x.to('cpu', 'float')", "x.to(L.float32, L.float64)", "x.to('cpu', 'cpu')",
    "x.to(L.float32, dtype=L.float64)", "x.to('cpu', device='cpu')", "x.to(o, L.float32)",
    "x.to(o, dtype=L.float32)", "x.to(L.float64, 'cpu')", "x.to('float')", "x.to(0)",
    "x.to(-1)", "x.to(3, L.float64)", "x.to(L.float32, memory_format=1)", "x.to(foo=1)",
    "x.to(L.float32, False, True, False)", "x.to('cpu', L.float32, False, True, 5)",
    "x.to(1, 2, 3, 4, 5, 6)", "x.to(1, 2, 3, 4, 5, dtype=1)", "x.to(1, 2, 3, 4, 5, 6, 7)",
    "x.to('cpu', L.float32, False, False, foo=1, bar=2)", "x.to(L.float64, 1)", "x.to(L.float64, False, 1)",
    "x.to(copy=1)", "x.to(non_blocking=None)", "x.to(dtype='float')", "x.to(device=1.5)",
    "x.to(L.float64, None)", "x.to(None, None, None)", "x.to(L.float32, device=None)",
    "x.to(dtype=L.float64, tensor=o)", "x.to(L.float64, False, non_blocking=True)",
    "x.to(None, device='cpu')", "x.to(L.strided)", "x.to([1])", "x.to(o, o)",
    "x.to(None, None, False, False, copy=True)", "x.to(None, None, False, False, memory_format=1)",
    "x.to('cpu', L.float32, False, 1, memory_format=None)",
    "x.to(1.5, L.float32, False, False, memory_format=None)",
    "x.to(dtype=L.float32, device='cpu', non_blocking=False, copy=False, foo=1)",
    "x.to(layout=L.strided)", "x[0].to(memory_format=L.channels_last)",
    "x.to(memory_format=L.channels_last_3d)",
]


def _describe(y, x):
    if y is x:
        return "self"
    if isinstance(y, (torch.Tensor, ember.Tensor)):
        values = y.flatten()[:5].tolist() if y.device.type != "meta" else None
        return (str(y.dtype).split(".")[-1], y.device.type, y.device.index, tuple(y.shape),
                y.stride(), values)
    return repr(y)


@pytest.mark.parametrize("call", _TO_CALLS)
def test_to_overloads_as_torch(call):
    def run(L):
        x = L.arange(24, dtype=L.float32).reshape(2, 3, 2, 2)
        o = L.zeros(2, dtype=L.float64)
        r = _result(lambda: _describe(eval(call, {"L": L, "x": x, "o": o}), x))
        if r[0] == "NotCompiledError":
            r = ("AssertionError", r[1])
        return r
    assert run(ember) == run(torch)


@pytest.mark.parametrize("make", [
    "x.permute(0, 2, 3, 1)", "x[:, :, :, ::2]", "x.contiguous(memory_format=L.channels_last)",
    "x.contiguous(memory_format=L.channels_last)[:, :, :, ::2]",
    "x.contiguous(memory_format=L.channels_last)[:, :, ::2, :]",
    "L.arange(20.).reshape(4, 5).t()[:, ::2]"])
@pytest.mark.parametrize("call", [
    "t.to(copy=True)", "t.to(L.float64)", "t.to(memory_format=L.contiguous_format)",
    "t.to(memory_format=L.channels_last)", "t.to(L.float64, memory_format=L.contiguous_format)",
    "t.to(L.float16, memory_format=L.preserve_format)", "t.clone()"])
def test_to_layouts_as_torch(make, call):
    def run(L):
        x = L.arange(24, dtype=L.float32).reshape(2, 3, 2, 2)
        t = eval(make, {"L": L, "x": x})
        return _result(lambda: _describe(eval(call, {"L": L, "t": t}), t))
    assert run(ember) == run(torch)


@pytest.mark.parametrize("call", [
    "x.to(L.float64)", "x.to(memory_format=L.channels_last)", "x.to(copy=True)", "x.to(o)",
    "x.to(L.float16)", "x.to(L.bfloat16)", "x.to(L.float64, memory_format=L.channels_last)",
    "x.to('cpu:0')", "x.to(L.float32)", "x.permute(0, 2, 3, 1).to(L.float64, copy=True)"])
def test_to_is_differentiable_as_torch(call):
    def run(L):
        x = L.linspace(-2, 3, 24).reshape(2, 3, 2, 2).requires_grad_()
        o = L.zeros(2, dtype=L.float64)
        y = eval(call, {"L": L, "x": x, "o": o})
        node = type(y.grad_fn).__name__ if y.grad_fn is not None else None
        w = L.linspace(-1, 1, y.numel()).reshape(y.shape).to(y.dtype)
        g, = L.autograd.grad((y * w).sum(), x)
        return (y is x, y.requires_grad, node, y.stride(), str(g.dtype), g.stride(),
                g.flatten().tolist())
    assert run(ember) == run(torch)


def test_to_other_takes_its_device_and_dtype():
    x = ember.ones(3)
    m = ember.empty(2, dtype=ember.float64, device="meta")
    y = x.to(m)
    assert y.device.type == "meta" and y.dtype is ember.float64
    assert x.to(ember.ones(1)) is x


def test_quantized_to_memory_format():
    q = ember.quantize_per_tensor(ember.randn(2, 3, 4, 5), 0.1, 3, ember.quint8)
    r = q.to(memory_format=ember.channels_last)
    assert r.stride() == (60, 1, 15, 3) and ember.equal(r.int_repr(), q.int_repr())


# ---------------------------------------------------------------- half arithmetic

_HALF_CALLS = [
    "x * s", "x / s", "x + s", "x - s", "s * x", "s / x", "s + x", "s - x",
    "x.add(y, alpha=s)", "x.sub(y, alpha=s)", "x.add(0.7, alpha=s)", "L.add(x, y, alpha=s)",
    "x + L.tensor(s)", "x + L.tensor(s, dtype=L.float64)", "x - L.tensor(s)",
    "x * L.tensor(s)", "x * L.tensor(s, dtype=L.float64)", "x / L.tensor(s)",
    "x * L.tensor(3)", "L.tensor(s) * x", "L.tensor(s) + x", "L.tensor(s) / x",
    "L.tensor(s) - x", "x.clone().mul_(s)", "x.clone().div_(s)", "x.clone().add_(s)",
    "x.clone().sub_(s)", "x.clone().add_(y, alpha=s)", "x.clone().sub_(y, alpha=s)",
    "x.clone().mul_(L.tensor(s))", "x.clone().add_(L.tensor(s))",
    "x.clone().div_(L.tensor(s, dtype=L.float64))", "L.mul(x, s)", "L.div(x, s)",
    "L.rsub(x, s)", "L.rsub(x, s, alpha=0.3)", "L.rsub(x, y, alpha=s)", "L.rsub(x, 2.5, alpha=s)",
    "L.rsub(x.t(), s, alpha=3) if x.dim() == 2 else L.rsub(x[::2], s, alpha=3)",
]


def _half_pair(L, dtype, shape, seed):
    rng = np.random.RandomState(seed)
    x = L.tensor((rng.randn(*shape) * 10).astype(np.float32)).to(getattr(L, dtype))
    y = L.tensor((rng.randn(*shape) * 10).astype(np.float32)).to(getattr(L, dtype))
    return x, y


def _bits(t):
    return t.detach().float().numpy()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(4099,), (7,), (31,), (33,), (100,), (3, 37)])
def test_half_arithmetic_bit_for_bit(dtype, shape):
    for s in (0.1, 0.3, 7.77, 1 / 3, 1e-3):
        xt, yt = _half_pair(torch, dtype, shape, 0)
        xe, ye = _half_pair(ember, dtype, shape, 0)
        for call in _HALF_CALLS:
            rt = eval(call, {"L": torch, "x": xt, "y": yt, "s": s})
            re = eval(call, {"L": ember, "x": xe, "y": ye, "s": s})
            assert str(re.dtype) == str(rt.dtype).replace("torch", "ember") or \
                str(re.dtype).split(".")[-1] == str(rt.dtype).split(".")[-1], call
            np.testing.assert_array_equal(_bits(re), _bits(rt), err_msg=f"{call} s={s}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(40000,), (100003,), (2, 3, 4, 5), (5, 70), (3, 33, 17)])
@pytest.mark.parametrize("call", [
    "x.add(y, alpha=s)", "x.sub(y, alpha=s)", "x.add(0.7, alpha=s)",
    "x.t().add(y.t(), alpha=s) if x.dim() == 2 else x.add(y, alpha=s)",
    "x.t().contiguous().t().add(y, alpha=s) if x.dim() == 2 else x.add(y, alpha=s)",
    "x.add(y[..., :1], alpha=s)", "x[..., ::2].add(y[..., ::2], alpha=s)",
    "x.add(y.mean(0, keepdim=True), alpha=s)",
    "x.contiguous(memory_format=L.channels_last).add(y, alpha=s) if x.dim() == 4 else x * s",
    "x.add(y.contiguous(memory_format=L.channels_last), alpha=s) if x.dim() == 4 else x / s"])
def test_half_alpha_vector_and_scalar_loops(dtype, shape, call):
    # torch's vector loop rounds alpha * y once, its scalar tail twice: which elements take
    # which depends on the inner loop's length and, from 32768 elements, its threads
    L_threads = torch.get_num_threads()
    old = ember.get_num_threads()
    ember.set_num_threads(L_threads)
    try:
        for s in (0.3, 7.77):
            xt, yt = _half_pair(torch, dtype, shape, 1)
            xe, ye = _half_pair(ember, dtype, shape, 1)
            rt = eval(call, {"L": torch, "x": xt, "y": yt, "s": s})
            re = eval(call, {"L": ember, "x": xe, "y": ye, "s": s})
            np.testing.assert_array_equal(_bits(re), _bits(rt), err_msg=f"{call} s={s}")
            assert re.stride() == rt.stride()
    finally:
        ember.set_num_threads(old)


def test_bf16_mul_by_float32_0d_tensor():
    # round 14c's finding: the 0-d factor is not rounded to bfloat16 first
    def run(L):
        x = L.tensor([3.0, 4.0]).bfloat16()
        y = x.clone()
        y.mul_(L.tensor(0.141421))
        return (x * L.tensor(0.141421)).float().tolist(), y.float().tolist()
    assert run(ember) == run(torch) == ([0.423828125, 0.56640625], [0.423828125, 0.56640625])


# ---------------------------------------------------------------- batch norm, half input

def _bn_run(L, dtype, train, channels_last, functional=False):
    bn = L.nn.BatchNorm2d(3)
    with L.no_grad():
        bn.weight.copy_(L.tensor([1.5, -0.7, 0.3]))
        bn.bias.copy_(L.tensor([0.1, 0.2, -0.3]))
        bn.running_mean.copy_(L.tensor([0.05, -0.1, 0.2]))
        bn.running_var.copy_(L.tensor([1.2, 0.8, 2.0]))
    bn.train(train)
    rng = np.random.RandomState(0)
    x = L.tensor(rng.randn(4, 3, 5, 7).astype(np.float32) * 2 + 0.5).to(getattr(L, dtype))
    g = L.tensor(rng.randn(4, 3, 5, 7).astype(np.float32)).to(getattr(L, dtype))
    if channels_last:
        x = x.contiguous(memory_format=L.channels_last)
    x.requires_grad_()
    y = bn(x)
    (y * g).sum().backward()
    return dict(y=y, rm=bn.running_mean, rv=bn.running_var, n=bn.num_batches_tracked,
                gx=x.grad, gw=bn.weight.grad, gb=bn.bias.grad, node=type(y.grad_fn).__name__)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_half_input_float32_module(dtype, train, channels_last):
    t = _bn_run(torch, dtype, train, channels_last)
    e = _bn_run(ember, dtype, train, channels_last)
    assert e["node"] == t["node"]
    for k in ("y", "rm", "rv", "gx", "gw", "gb"):
        assert str(e[k].dtype).split(".")[-1] == str(t[k].dtype).split(".")[-1], k
        assert e[k].stride() == t[k].stride(), k
    assert e["n"].item() == t["n"].item()
    np.testing.assert_array_equal(_bits(e["y"]), _bits(t["y"]))
    # running statistics: float32 batch statistics (torch's reduced-precision sums can
    # differ in the last bit of the variance)
    np.testing.assert_allclose(_bits(e["rm"]), _bits(t["rm"]), rtol=2e-7, atol=0)
    np.testing.assert_allclose(_bits(e["rv"]), _bits(t["rv"]), rtol=3e-7, atol=0)
    # parameter gradients are float32 sums, not rounded to the input's dtype (round 14c)
    # (gw: float32 sums in another order than torch's; its first channel cancels to -0.4
    # from terms near 10, so its last bits differ)
    np.testing.assert_allclose(_bits(e["gw"]), _bits(t["gw"]), rtol=2e-6, atol=1e-5)
    np.testing.assert_allclose(_bits(e["gb"]), _bits(t["gb"]), rtol=2e-6)
    if not channels_last:
        np.testing.assert_array_equal(_bits(e["gx"]), _bits(t["gx"]))
        np.testing.assert_array_equal(_bits(e["gb"]), _bits(t["gb"]))
    else:
        ulp = 2.0 ** (-7 if dtype == "bfloat16" else -10)
        np.testing.assert_allclose(_bits(e["gx"]), _bits(t["gx"]), rtol=ulp, atol=ulp)


def test_functional_batch_norm_bf16_running_stats():
    def run(L):
        rng = np.random.RandomState(2)
        x = L.tensor(rng.randn(2, 3, 4).astype(np.float32)).to(L.bfloat16)
        rm, rv = L.zeros(3), L.ones(3)
        w, b = L.ones(3) * 0.5, L.zeros(3) + 0.25
        y = L.nn.functional.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3)
        z = L.nn.functional.batch_norm(x, rm, rv, None, None, training=False)
        return _bits(y), _bits(z), rm.numpy().copy(), rv.numpy().copy(), str(y.dtype)[-8:]
    (y1, z1, m1, v1, d1), (y2, z2, m2, v2, d2) = run(ember), run(torch)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_allclose(v1, v2, rtol=3e-7)
    np.testing.assert_array_equal(z1, z2)
    assert d1 == d2


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("args", [
    "x, f, f, f, b", "x, b, b, f, f", "x, f, f, b, b", "x, b, f, f, f", "x.float(), b, b, f, f",
    "x.float(), f, f, b, f", "x.float(), f, f, h, f", "x.float(), f, f, d, f",
    "x.half(), f, f, b, f", "x.double(), f, f, f, f", "x, f, f, None, b", "x, f, f, None, None",
    "x, b, f, None, None", "x, f, b, None, None", "x, b, b, None, f", "x, f, f, f, d",
    "x, b, b, b, f", "x, h, b, b, b", "x.float(), d, f, f, f", "x.double(), f, d, d, d",
    "x, h, d, b, f", "x, b, d, b, f", "x, h, d, b, b", "x.half(), f, f, f, f"])
def test_batch_norm_dtype_checks_as_torch(training, args):
    def run(L):
        x = L.ones(2, 3, 4).bfloat16()
        f, b = L.ones(3), L.ones(3).bfloat16()
        h, d = L.ones(3).half(), L.ones(3).double()
        a = eval(f"({args})", {"x": x, "f": f, "b": b, "h": h, "d": d})
        r = _result(lambda: L.nn.functional.batch_norm(a[0], a[1], a[2], a[3], a[4],
                                                       training=training))
        return r if r[0] != "ok" else ("ok", str(r[1].dtype).split(".")[-1])
    assert run(ember) == run(torch)


# ---------------------------------------------------------------- Dirichlet / Beta rsample

def test_dirichlet_grad_values_against_torch():
    rng = np.random.RandomState(0)
    a = rng.uniform(0.3, 10, 3000)
    b = rng.uniform(0.3, 10, 3000)
    x = rng.beta(a, b)
    args = [x, a, a + b]
    want = torch._dirichlet_grad(*[torch.tensor(v) for v in args]).numpy()
    got = ember._dirichlet_grad(*[ember.tensor(v) for v in args]).numpy()
    rel = np.abs(got - want) / np.abs(want)
    # torch evaluates the derivative by an approximation (ember: the exact one)
    assert np.median(rel) < 3e-4 and np.percentile(rel, 99) < 1e-3 and rel.max() < 3e-3
    # edges, broadcasting, float32

    def edges(L):
        x = L.tensor([0.0, 1.0, 1e-30, 1 - 1e-12, 0.3])
        al, t = L.tensor([1.0, 2.0, 1.0, 2.0, 2.0]), L.tensor([3.0, 4.0, 3.0, 4.0, 3.0])
        r = L._dirichlet_grad(x, al, t)
        return str(r.dtype)[-7:], r.tolist(), L._dirichlet_grad(x[:2], al[:2], t[:1]).tolist()
    (d1, v1, w1), (d2, v2, w2) = edges(ember), edges(torch)
    assert d1 == d2
    np.testing.assert_allclose(v1, v2, rtol=1e-3)
    np.testing.assert_allclose(w1, w2, rtol=1e-3)


@pytest.mark.parametrize("call", [
    "L._dirichlet_grad(x.double(), a, t)", "L._dirichlet_grad(x, a.double(), t)",
    "L._dirichlet_grad(x.half(), a.half(), t.half())"])
def test_dirichlet_grad_errors(call):
    def run(L):
        x, a, t = L.tensor([0.3, 0.5]), L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0])
        return _result(lambda: eval(call, {"L": L, "x": x, "a": a, "t": t}))
    assert run(ember) == run(torch)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind, conc, shape", [
    ("dirichlet", [1.5, 2.0, 0.7], ()),
    ("dirichlet", [[0.5, 3.0, 8.0, 1.2], [2.0, 2.0, 2.0, 2.0]], (5,)),
    ("beta", (2.0, 3.0), ()), ("beta", (0.6, 5.5), (7,))])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_dirichlet_beta_rsample_gradients(seed, kind, conc, shape, dtype):
    def run(L):
        L.manual_seed(seed)
        dt = getattr(L, dtype)
        if kind == "dirichlet":
            a = L.tensor(conc, dtype=dt, requires_grad=True)
            x = L.distributions.Dirichlet(a).rsample(shape)
            w = L.linspace(-1, 2, x.numel(), dtype=dt).reshape(x.shape)
            (x * w).sum().backward()
            grads = a.grad.numpy()
        else:
            a = L.tensor(conc[0], dtype=dt, requires_grad=True)
            b = L.tensor(conc[1], dtype=dt, requires_grad=True)
            x = L.distributions.Beta(a, b).rsample(shape)
            (x * L.linspace(0.5, 1.5, x.numel(), dtype=dt).reshape(x.shape)).sum().backward()
            grads = np.array([a.grad.item(), b.grad.item()])
        return x.detach().numpy(), grads, type(x.grad_fn).__name__
    xe, ge, ne = run(ember)
    xt, gt, nt = run(torch)
    np.testing.assert_array_equal(xe, xt)                 # torch's draws
    assert ne == nt
    np.testing.assert_allclose(ge, gt, rtol=1e-3, atol=1e-6)


def test_sample_dirichlet_without_grad_is_unchanged():
    ember.manual_seed(3)
    torch.manual_seed(3)
    a = [0.4, 1.0, 6.0]
    assert ember.distributions.Dirichlet(ember.tensor(a)).rsample((3,)).tolist() == \
        torch.distributions.Dirichlet(torch.tensor(a)).rsample((3,)).tolist()
