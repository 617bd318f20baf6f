"""Note [attention by groups] (ember/_kernels/attention.py): the NumPy attention split by
ranges of its flattened batch and head dims over ember's threads. The same bits as on one
thread, and torch's values and gradients (causal, bool / float (L, S) masks, all-masked
rows, L != S, float32 and float64)."""
import numpy as np
import pytest

import ember
from ember._kernels import attention

torch = pytest.importorskip("torch")

CASES = [  # (B, H, L, S, E, Ev, mask kind, is_causal)
    (16, 4, 64, 64, 32, 32, None, True),
    (6, 5, 40, 47, 16, 24, "bool", False),
    (8, 4, 50, 30, 32, 16, "float", False),
    (8, 4, 50, 30, 32, 16, None, True),                      # L > S: rows with no key
]


@pytest.fixture
def numpy_attention(monkeypatch):
    """The NumPy passes for float32 too, with or without numba installed."""
    monkeypatch.setattr(attention, "_compiled", lambda: None)
    threads = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(threads)


def _mask(kind, L, S, lib, dtype):
    rng = np.random.default_rng(1)
    if kind == "bool":
        m = rng.random((L, S)) > 0.4
        m[1] = False                                        # an all-masked row
        return lib.tensor(m)
    if kind == "float":
        return lib.tensor(rng.standard_normal((L, S)), dtype=dtype)
    return None


def _run(lib, arrays, kind, causal, dtype):
    dt = getattr(lib, dtype)
    q, k, v, g = (lib.tensor(a, dtype=dt, requires_grad=True) for a in arrays)
    out = lib.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=_mask(kind, q.shape[-2], k.shape[-2], lib, dt), is_causal=causal)
    out.backward(g.detach())
    return [t.detach().numpy() for t in (out, q.grad, k.grad, v.grad)]


@pytest.mark.parametrize("B,H,L,S,E,Ev,kind,causal", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grouped_attention_matches_one_thread_and_torch(numpy_attention, B, H, L, S, E, Ev,
                                                        kind, causal, dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in
              ((B, H, L, E), (B, H, S, E), (B, H, S, Ev), (B, H, L, Ev))]
    assert attention._by_groups(*(np.zeros(a.shape, dtype) for a in arrays[:3]),
                                None) is not None                 # the split path is taken
    split = _run(ember, arrays, kind, causal, dtype)
    ember.set_num_threads(1)
    one = _run(ember, arrays, kind, causal, dtype)
    for a, b in zip(split, one):
        np.testing.assert_array_equal(a, b)
    expected = _run(torch, arrays, kind, causal, dtype)
    tol = 2e-5 if dtype == "float32" else 1e-12
    for a, b in zip(split, expected):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_dropout_mask_and_broadcast_key_keep_their_paths(numpy_attention):
    """A dropout mask is cut with the groups; a key broadcast over the batch is not split."""
    rng = np.random.default_rng(2)
    q, v = (rng.standard_normal((8, 4, 64, 32)).astype(np.float32) for _ in range(2))
    k = rng.standard_normal((1, 4, 64, 32)).astype(np.float32)
    assert attention._by_groups(q, k, v, None) is None
    drop = (rng.random((8, 4, 64, 64)) > 0.1).astype(np.float32) / np.float32(0.9)
    kk = np.ascontiguousarray(np.broadcast_to(k, q.shape))
    out, p = attention.sdpa_forward(q, kk, v, None, False, 0.2, drop)
    s = q @ np.swapaxes(kk, -1, -2) * np.float32(0.2)
    ref = np.exp(s - s.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    np.testing.assert_allclose(p, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, (ref * drop) @ v, rtol=1e-4, atol=1e-5)
    plain_out, plain_p = attention._plain_forward(q, kk, v, None, False, 0.2, drop)
    np.testing.assert_array_equal(out, plain_out)
    np.testing.assert_array_equal(p, plain_p)
