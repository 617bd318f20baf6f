"""2-D ``torch.diag`` is torch's diagonal_copy: one DiagonalBackward0_copy node straight to
the input, same values and gradients (also under create_graph)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("offset", [0, 1, -2])
def test_diag_of_a_matrix_node_and_gradients_as_torch(offset):
    a_np = np.random.default_rng(0).standard_normal((3, 4))
    res = []
    for lib in (ember, torch):
        a = lib.tensor(a_np, requires_grad=True)
        d = lib.diag(a, offset)
        names = (type(d.grad_fn).__name__,
                 [type(n).__name__ for n, _ in d.grad_fn.next_functions])
        g, = lib.autograd.grad((d * d).sum(), a, create_graph=True)
        g.sum().backward()
        res.append((d.detach().numpy(), names, g.detach().numpy(), a.grad.numpy()))
    (ed, en, eg, eh), (td, tn, tg, th) = res
    assert en == tn
    for e, t in ((ed, td), (eg, tg), (eh, th)):
        np.testing.assert_allclose(e, t, rtol=1e-12)
