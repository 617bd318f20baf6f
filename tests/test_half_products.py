"""float16 products run in float32 and round once (Note [half GEMMs] in
ember/_kernels/util.py): values equal the float32 product rounded to half, agree with torch
to half precision, and mixed dtypes still raise torch's errors."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F

rng = np.random.default_rng(8)


@pytest.fixture(autouse=True)
def _fresh_rng():
    """Each test draws the same numbers whatever ran before it (xdist reorders tests)."""
    global rng
    rng = np.random.default_rng(8)


def _h(*shape):
    return rng.standard_normal(shape).astype(np.float16)


CASES = {
    "mm": (lambda L, a, b: L.mm(a, b), ((6, 7), (7, 5))),
    "matmul": (lambda L, a, b: L.matmul(a, b), ((3, 6, 7), (7, 5))),
    "bmm": (lambda L, a, b: L.bmm(a, b), ((3, 6, 7), (3, 7, 5))),
    "mv": (lambda L, a, b: L.mv(a, b), ((6, 7), (7,))),
    "dot": (lambda L, a, b: L.dot(a, b), ((7,), (7,))),
    "linear": (lambda L, a, b: L.nn.functional.linear(a, b), ((4, 7), (5, 7))),
    "addmm": (lambda L, c, a, b: L.addmm(c, a, b), ((6, 5), (6, 7), (7, 5))),
    "baddbmm": (lambda L, c, a, b: L.baddbmm(c, a, b, beta=0.5),
                ((3, 6, 5), (3, 6, 7), (3, 7, 5))),
    "einsum": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), ((6, 7), (7, 5))),
    "conv2d": (lambda L, a, b: L.nn.functional.conv2d(a, b, padding=1),
               ((2, 3, 6, 6), (4, 3, 3, 3))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_half_products_round_the_float32_product(name):
    fn, shapes = CASES[name]
    arrays = [_h(*s) for s in shapes]
    e = fn(ember, *[ember.tensor(x) for x in arrays])
    assert e.dtype == ember.float16
    ref = fn(ember, *[ember.tensor(x.astype(np.float32)) for x in arrays])
    np.testing.assert_array_equal(e.numpy(), ref.numpy().astype(np.float16))
    t = fn(torch, *[torch.tensor(x) for x in arrays])
    scale = max(1.0, float(np.abs(t.numpy()).max()))
    np.testing.assert_allclose(e.numpy().astype(np.float32), t.numpy().astype(np.float32),
                               atol=2e-3 * scale, rtol=0)


def test_half_gradients_and_lstm():
    x = ember.tensor(_h(4, 7), requires_grad=True)
    w = ember.tensor(_h(5, 7), requires_grad=True)
    F.linear(x, w).sum().backward()
    assert x.grad.dtype == ember.float16 and w.grad.dtype == ember.float16
    np.testing.assert_allclose(w.grad.numpy().astype(np.float32),
                               np.broadcast_to(x.detach().numpy().astype(np.float32).sum(0),
                                               (5, 7)), atol=1e-2)
    lstm = ember.nn.LSTM(3, 4, batch_first=True).half()
    inp = ember.tensor(_h(2, 5, 3), requires_grad=True)
    out, _ = lstm(inp)
    assert out.dtype == ember.float16
    out.sum().backward()
    assert inp.grad.dtype == ember.float16 and np.isfinite(inp.grad.numpy()).all()
    ref = ember.nn.LSTM(3, 4, batch_first=True)
    ref.load_state_dict({k: v.float() for k, v in lstm.state_dict().items()})
    np.testing.assert_allclose(out.detach().numpy().astype(np.float32),
                               ref(inp.detach().float())[0].detach().numpy(), atol=5e-3)


def test_mixed_half_and_float_still_raise():
    a = ember.tensor(_h(3, 4))
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.mm(a, ember.ones(4, 2))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "neg", "exp", "relu", "sigmoid",
                                  "tanh", "sqrt_abs", "sum"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_elementwise_round_once_like_torch(name, dtype):
    x = rng.standard_normal(4000).astype(np.float32)
    y = rng.uniform(0.5, 2.0, 4000).astype(np.float32)
    fns = {"add": lambda L, a, b: a + b * 3, "sub": lambda L, a, b: a - 2.5 * b,
           "mul": lambda L, a, b: a * b, "div": lambda L, a, b: a / b,
           "neg": lambda L, a, b: -a, "exp": lambda L, a, b: a.exp(),
           "relu": lambda L, a, b: L.relu(a), "sigmoid": lambda L, a, b: a.sigmoid(),
           "tanh": lambda L, a, b: a.tanh(), "sqrt_abs": lambda L, a, b: a.abs().sqrt(),
           "sum": lambda L, a, b: (a * b).reshape(40, 100).sum(1)}
    e = fns[name](ember, *(ember.tensor(v).to(getattr(ember, dtype)) for v in (x, y)))
    t = fns[name](torch, *(torch.tensor(v).to(getattr(torch, dtype)) for v in (x, y)))
    assert str(e.dtype) == str(t.dtype)
    ef, tf = e.float().numpy(), t.float().numpy()
    if name == "sum":               # float32 accumulation in both; the order may differ
        np.testing.assert_allclose(ef, tf, rtol=2 ** -7)
    else:                           # one rounding of the float32 value: bit-identical
        np.testing.assert_array_equal(ef, tf)
