"""A one-operand einsum that sums nothing is a view of its operand in torch (permutation,
diagonal where a subscript repeats): same values, strides, aliasing and gradients."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("eq,shape", [("ij->ji", (3, 4)), ("ii->i", (3, 3)), ("ij", (3, 4)),
                                      ("ji", (3, 4)), ("bij->jbi", (2, 3, 4)),
                                      ("...ij->...ji", (2, 3, 4)), ("iji->ij", (3, 2, 3)),
                                      ("ij->", (3, 4)), ("ij->i", (3, 4))])
def test_one_operand_einsum_views_as_torch(eq, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    res = []
    for lib in (ember, torch):
        t = lib.tensor(x, requires_grad=True)
        base = t.detach()
        r = lib.einsum(eq, base)
        aliased = r._base is base
        out = lib.einsum(eq, t)
        w = lib.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape)))
        (out * w).sum().backward()
        res.append((out.detach().numpy(), tuple(out.stride()), aliased, t.grad.numpy(),
                    type(out.grad_fn).__name__))
    e, t = res
    np.testing.assert_allclose(e[0], t[0], rtol=1e-12)
    np.testing.assert_allclose(e[3], t[3], rtol=1e-12)
    assert e[1:3] + (e[4],) == t[1:3] + (t[4],)


def test_einsum_view_writes_through_like_torch():
    for lib in (ember, torch):
        a = lib.zeros(3, 3)
        lib.einsum("ii->i", a).fill_(2.0)
        assert a.numpy().tolist() == np.diag([2.0] * 3).tolist()


@pytest.mark.parametrize("eq", ["ij->ji", "ii->i", "ij"])
def test_one_operand_einsum_under_vmap(eq):
    x = np.random.default_rng(2).standard_normal((5, 3, 3))
    got = ember.func.vmap(lambda t: ember.einsum(eq, t))(ember.tensor(x))
    want = torch.func.vmap(lambda t: torch.einsum(eq, t))(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
