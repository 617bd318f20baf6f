"""scaled_dot_product_attention's fused record (_sdpa_fused, ember/_ops/attention.py) against
torch: values and gradients (causal, bool / float masks, all-masked rows, GQA, float32 and
float64), gradcheck and double backward, and nn.MultiheadAttention's path into it."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

CASES = [  # (q shape, k shape, v shape, mask kind, is_causal)
    ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 6), None, False),
    ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4), None, True),
    ((2, 6, 4), (2, 7, 4), (2, 7, 3), None, True),          # L < S
    ((2, 7, 4), (2, 5, 4), (2, 5, 3), None, True),          # L > S: rows with no key
    ((2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 4), "bool", False),
    ((2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 4), "float", False),
    ((5, 4), (6, 4), (6, 2), "float", False),
]


def _mask(kind, L, S, rng, lib, dtype, lead=(1,)):
    if kind == "bool":
        m = rng.random((L, S)) > 0.4
        m[1] = False                                        # an all-masked row
        return lib.tensor(m)
    if kind == "float":
        return lib.tensor(rng.standard_normal(lead + (L, S)), dtype=dtype, requires_grad=True)
    return None


@pytest.mark.parametrize("qs,ks,vs,kind,causal", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sdpa_fused_values_and_gradients_match_torch(qs, ks, vs, kind, causal, dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in (qs, ks, vs)]
    L, S = qs[-2], ks[-2]
    mask_rng = np.random.default_rng(1)
    results = []
    for lib in (ember, torch):
        dt = getattr(lib, dtype)
        q, k, v = (lib.tensor(a, dtype=dt, requires_grad=True) for a in arrays)
        m = _mask(kind, L, S, np.random.default_rng(1), lib, dt, (1,) * (len(qs) > 2))
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m,
                                                             is_causal=causal)
        w = lib.tensor(mask_rng.standard_normal(out.shape), dtype=dt)
        mask_rng = np.random.default_rng(1)
        (out * w).sum().backward()
        grads = [t.grad.numpy() for t in (q, k, v)]
        if kind == "float":
            grads.append(m.grad.numpy())
        results.append((out.detach().numpy(), grads, out.grad_fn))
    (ours, ours_g, fn), (theirs, theirs_g, tfn) = results
    assert fn.op.name == "_sdpa_fused" and fn.name() == tfn.name()   # torch's node name
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours, theirs, **tol)
    for a, b in zip(ours_g, theirs_g):
        np.testing.assert_allclose(a, b, **tol)


def test_sdpa_fused_gqa_and_scale():
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in ((1, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 3))]
    outs = []
    for lib in (ember, torch):
        q, k, v = (lib.tensor(a, requires_grad=True) for a in arrays)
        o = lib.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.3, enable_gqa=True)
        o.sum().backward()
        outs.append([o.detach().numpy()] + [t.grad.numpy() for t in (q, k, v)])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind,causal", [(None, True), ("bool", False), ("float", False)])
def test_sdpa_fused_gradcheck_and_double_backward(kind, causal):
    rng = np.random.default_rng(3)
    q, k, v = (ember.tensor(rng.standard_normal(s), dtype=ember.float64, requires_grad=True)
               for s in ((2, 4, 3), (2, 4, 3), (2, 4, 2)))
    m = _mask(kind, 4, 4, np.random.default_rng(4), ember, ember.float64)
    inputs = (q, k, v) + ((m,) if kind == "float" else ())

    def f(q, k, v, *rest):
        mask = rest[0] if rest else m
        return ember.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                                is_causal=causal)
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_multihead_attention_eval_dropout_takes_the_fused_record():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 8)).astype(np.float32)
    mods = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        mods.append(lib.nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True).eval())
    mods[0].load_state_dict({k: ember.tensor(v.detach().numpy())
                             for k, v in mods[1].state_dict().items()})
    mask = np.triu(np.ones((6, 6), bool), 1)
    outs = []
    for lib, mod in zip((ember, torch), mods):
        xt = lib.tensor(x, requires_grad=True)
        o, _ = mod(xt, xt, xt, attn_mask=lib.tensor(mask), need_weights=False)
        o.sum().backward()
        outs.append((o.detach().numpy(), xt.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_compiled_softmax_rows_against_numpy():
    pytest.importorskip("numba")
    from ember._kernels.compiled import attention as C
    rng = np.random.default_rng(6)
    s = (rng.standard_normal((6, 70)) * 30).astype(np.float32)
    s[1] = -np.inf                                  # nothing to attend: zeros
    s[2, 5] = np.nan                                # nan: the row is nan (as torch)
    s[3, 7:] = -np.inf
    ref = s.astype(np.float64) * 0.5
    with np.errstate(invalid="ignore"):
        ref = np.exp(ref - ref.max(-1, keepdims=True))
        ref /= ref.sum(-1, keepdims=True)
    ref[1] = 0
    causal = np.tril(np.ones((3, 70), bool))
    got = s.copy()
    C.softmax_rows(got, 6, 0.5, False)
    np.testing.assert_allclose(got[[0, 3, 4, 5]], ref[[0, 3, 4, 5]], rtol=2e-6, atol=1e-7)
    assert (got[1] == 0).all() and np.isnan(got[2]).all()
    got = s[[0, 4, 5]].copy()
    C.softmax_rows(got, 3, 0.5, True)
    want = np.where(causal, s[[0, 4, 5]].astype(np.float64) * 0.5, -np.inf)
    want = np.exp(want - want.max(-1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(-1, keepdims=True), rtol=2e-6, atol=1e-7)
    dp = rng.standard_normal((6, 70)).astype(np.float32)
    p = ref.astype(np.float32)
    want = 0.5 * p * (dp - (dp * p).sum(-1, keepdims=True))
    C.softmax_grad_rows(dp, p, 0.5)
    np.testing.assert_allclose(dp[[0, 3, 4, 5]], want[[0, 3, 4, 5]], rtol=1e-5, atol=1e-6)


def test_sdpa_fused_same_bits_on_one_and_two_threads():
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((8, 2, 64, 16)).astype(np.float32) for _ in range(3)]
    before = ember.get_num_threads()
    results = []
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            q, k, v = (ember.tensor(a, requires_grad=True) for a in arrays)
            o = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            o.sum().backward()
            results.append([o.detach().numpy()] + [t.grad.numpy() for t in (q, k, v)])
    finally:
        ember.set_num_threads(before)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_fused_dropout_draws_and_grads_as_the_composite(causal):
    import ember.nn.functional._attention as A
    rng = np.random.default_rng(8)
    arrays = [rng.standard_normal((2, 3, 6, 4)) for _ in range(3)]
    results = []
    for fusable in (A._fusable, lambda *a: False):
        q, k, v = (ember.tensor(a, dtype=ember.float32, requires_grad=True) for a in arrays)
        real, A._fusable = A._fusable, fusable
        try:
            ember.manual_seed(3)
            o = ember.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.4,
                                                                 is_causal=causal)
        finally:
            A._fusable = real
        o.backward(ember.tensor(arrays[0][..., :4], dtype=ember.float32))
        results.append([o.detach().numpy(), o.grad_fn.op.name] +
                       [t.grad.numpy() for t in (q, k, v)])
    fused, composite = results
    assert fused[1] == "_sdpa_fused" != composite[1]
    for a, b in zip(fused[:1] + fused[2:], composite[:1] + composite[2:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_sdpa_fused_dropout_gradcheck():
    rng = np.random.default_rng(9)
    q, k, v = (ember.tensor(rng.standard_normal((2, 4, 3)), dtype=ember.float64,
                            requires_grad=True) for _ in range(3))

    def f(q, k, v):
        ember.manual_seed(1)                # the same keep mask on every evaluation
        return ember.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    assert gradcheck(f, (q, k, v))
    assert gradgradcheck(f, (q, k, v))


@pytest.mark.parametrize("shape_q, shape_kv, causal, strided", [
    ((16, 4, 64, 32), (16, 4, 64, 32), True, True),      # the GPT benchmark's blocks
    ((2, 3, 5, 7), (2, 3, 6, 7), False, True),
    ((3, 9, 8), (3, 4, 8), True, False),                  # L > S, 3-d
    ((5, 8), (6, 8), False, False),                       # 2-d
])
@pytest.mark.parametrize("pooled", [True, False])
def test_attention_blocks_bits(shape_q, shape_kv, causal, strided, pooled, monkeypatch):
    """Note [attention blocks]: float32 attention without a mask by the compiled (batch,
    head) blocks, on OpenBLAS's threads or the caller's, gives the NumPy path's bits and
    torch's values, forward and backward, for strided views (q, k, v split from one
    projection and transposed, as GPT code writes them) and 2-d to 4-d operands."""
    from ember._kernels import attention as A
    if A._compiled() is None:
        pytest.skip("needs numba")
    def inputs(lib, rng):
        if strided:      # one (B, L, H, 3E) array, q/k/v views of it, heads second
            B, H, L, E = shape_q
            S = shape_kv[2]
            n = max(L, S)
            base = lib.tensor(np.asarray(rng.standard_normal((B, n, H, 3 * E)),
                                         np.float32), requires_grad=True)
            q = base[:, :L, :, :E].transpose(1, 2)
            k = base[:, :S, :, E:2 * E].transpose(1, 2)
            v = base[:, :S, :, 2 * E:].transpose(1, 2)
            return [base], (q, k, v)
        leaves = [lib.tensor(np.asarray(rng.standard_normal(s), np.float32),
                             requires_grad=True) for s in (shape_q, shape_kv, shape_kv)]
        return leaves, tuple(leaves)

    def run(lib):
        leaves, (q, k, v) = inputs(lib, np.random.default_rng(7))
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        w = lib.tensor(np.cos(np.arange(out.numel(), dtype=np.float32)).reshape(out.shape))
        (out * w).sum().backward()
        return [out.detach().numpy().copy()] + [a.grad.numpy().copy() for a in leaves]

    calls = []
    real_run = A._run_blocks
    if not pooled:
        from ember._kernels import blas_pool
        monkeypatch.setattr(blas_pool, "kernels", lambda: None)
    monkeypatch.setattr(A, "_run_blocks", lambda *a: (calls.append(a[1]), real_run(*a)))
    blocks = run(ember)
    assert calls == ["sdpa_forward_blocks", "sdpa_backward_blocks"]
    monkeypatch.setattr(A, "_blocks", lambda *a: None)
    for a, b in zip(blocks, run(ember)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(blocks, run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
