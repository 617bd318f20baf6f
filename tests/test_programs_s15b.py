"""Regressions found diffing everyday programs (round 10b, session 15: modern architectures
written by hand: diffusion UNets, ViTs, BERT/LLaMA blocks, mixture of experts, LoRA, EMA,
schedulers, torch.compile, GNNs, contrastive losses, VQ-VAE, scans, TCNs) run under torch and
under ``python -m ember.run``; each checked against torch."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("shape,dim", [((4, 8), 0), ((32, 8), 0), ((8, 33), 1), ((1000,), None),
                                       ((5, 7, 9), (0, 2))])
def test_float32_var_and_std_are_float64_two_pass_rounded_once(shape, dim):
    # a float32 two-pass variance missed torch's value in a few outputs in ten (a SimCLR
    # projection head's BatchNorm1d running_var check, `x.var(0) * 0.1 + 0.9`, drifted)
    rng = np.random.default_rng(sum(shape))
    for _ in range(10):
        x = (rng.standard_normal(shape) * 5 + 3).astype(np.float32)
        e, t = ember.tensor(x), torch.tensor(x)
        np.testing.assert_array_equal(_np(e.var(dim)), _np(t.var(dim)))
        np.testing.assert_array_equal(_np(e.std(dim, correction=0)), _np(t.std(dim, correction=0)))
        for fn in ("var_mean", "std_mean"):
            ev, _ = getattr(ember, fn)(e, dim)
            tv, _ = getattr(torch, fn)(t, dim)
            np.testing.assert_array_equal(_np(ev), _np(tv))
        for dt in ("float16", "bfloat16"):
            np.testing.assert_array_equal(
                _np(e.to(getattr(ember, dt)).var(dim).float()),
                _np(t.to(getattr(torch, dt)).var(dim).float()))


def test_compile_checks_mode_options_backend_and_callable_as_torch():
    def outcome(lib, model, **kw):
        try:
            r = lib.compile(model, **kw)
        except Exception as e:       # noqa: BLE001 - the class and text are compared
            return type(e).__name__, str(e), isinstance(e, RuntimeError)
        return "ok", callable(r)
    cases = [dict(mode="bogus"), dict(mode="bogus", backend="eager"),
             dict(mode="bogus", backend="aot_eager"), dict(mode="default", options={"a": 1}),
             dict(backend="eager", mode="max-autotune", options={}), dict(backend="nope"),
             dict(backend="nope", mode="bogus", disable=True), dict(mode=""),
             dict(mode="reduce-overhead", fullgraph=True), dict(backend="cudagraphs")]
    for kw in cases:
        assert outcome(ember, ember.sin, **kw) == outcome(torch, torch.sin, **kw), kw
    for kw in (dict(), dict(backend="nope"), dict(mode="bogus")):
        assert outcome(ember, 3, **kw) == outcome(torch, 3, **kw), kw
    with pytest.raises(RuntimeError, match="^Unrecognized mode=x, should be one of: default"):
        ember.compile(mode="x")(ember.sin)
    from ember._dynamo import exc
    assert issubclass(exc.InvalidBackend, exc.TorchDynamoException)


def _warnings_of(lib, fn):
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(lib)
    return [(x.category.__name__, str(x.message).split(" (Triggered internally")[0]) for x in w]


def test_rms_norm_warns_once_when_weight_dtype_differs_from_input():
    # torch's fused rms_norm refuses mixed dtypes (a bfloat16 activation into a float32
    # nn.RMSNorm weight, as under autocast) and says so once a process
    from ember import _runtime_flags
    pairs = [("bfloat16", "float32"), ("float32", "bfloat16"), ("float16", "float32"),
             ("float64", "float32"), ("float32", "float64"), ("float32", "float32")]
    for xd, wd in pairs:
        def run(lib):
            x = lib.randn(2, 3).to(getattr(lib, xd))
            return lib.nn.functional.rms_norm(x, (3,), lib.ones(3, dtype=getattr(lib, wd)))
        _runtime_flags._warned.discard("rms_norm dtype mismatch")
        import subprocess, sys
        code = ("import torch, warnings\nwarnings.simplefilter('always')\n"
                f"x = torch.randn(2, 3).to(torch.{xd})\n"
                f"torch.nn.functional.rms_norm(x, (3,), torch.ones(3, dtype=torch.{wd}))\n"
                f"torch.nn.functional.rms_norm(x, (3,), torch.ones(3, dtype=torch.{wd}))\n")
        got = _warnings_of(ember, lambda lib: (run(lib), run(lib)))
        err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stderr
        want = [line.split("UserWarning: ")[1].split(" (Triggered internally")[0]
                for line in err.splitlines() if "UserWarning: " in line]
        assert [m for _, m in got] == want, (xd, wd)
        assert run(ember).dtype == getattr(ember, xd)


def test_encoder_nested_fast_path_warns_the_nested_prototype_warning_once():
    # torch's TransformerEncoder in eval with a padding mask builds a nested tensor and
    # warns (once a process) that nested tensors are a prototype
    from ember import _runtime_flags
    _runtime_flags._warned.discard("nested tensor prototype")

    def run(lib):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
        enc = lib.nn.TransformerEncoder(layer, 1).eval()
        x = lib.randn(2, 3, 8)
        pad = lib.tensor([[False, False, True], [False, False, False]])
        with lib.no_grad():
            enc(x, src_key_padding_mask=pad)
            enc(x, src_key_padding_mask=pad)
            enc.train()(x, src_key_padding_mask=pad)
    got = _warnings_of(ember, run)
    assert len(got) == 1 and got[0][1].startswith("The PyTorch API of nested tensors is in "
                                                  "prototype stage")
    assert got[0][1].endswith("has better operator coverage, and works with torch.compile.")


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 31, 37, 63, 1000, 4100,
                               100003])
def test_float32_two_norm_sums_squares_in_torchs_order(n):
    # NumPy's pairwise sum of squares missed torch's 2-norm in about a third of short rows:
    # gradient norms printed by training loops, F.normalize'd embeddings (CLIP, DINO heads)
    rng = np.random.default_rng(n)
    for _ in range(4 if n > 1000 else 20):
        x = rng.standard_normal(n).astype(np.float32)
        e, t = ember.tensor(x), torch.tensor(x)
        assert e.norm().item() == t.norm().item()
        assert ember.linalg.vector_norm(e).item() == torch.linalg.vector_norm(t).item()
    rows = rng.standard_normal((6, n if n < 1000 else 50)).astype(np.float32)
    e, t = ember.tensor(rows), torch.tensor(rows)
    np.testing.assert_array_equal(_np(e.norm(dim=-1)), _np(t.norm(dim=-1)))
    np.testing.assert_array_equal(_np(e.norm(dim=1, keepdim=True)), _np(t.norm(dim=1, keepdim=True)))
    np.testing.assert_array_equal(_np(ember.nn.functional.normalize(e, dim=-1)),
                                  _np(torch.nn.functional.normalize(t, dim=-1)))
    np.testing.assert_array_equal(_np(e.view(2, 3, -1).norm(dim=(1, 2))),
                                  _np(t.view(2, 3, -1).norm(dim=(1, 2))))


def test_clip_grad_norm_takes_vector_norms_of_each_gradient_and_of_the_norms():
    # torch: linalg.vector_norm of each gradient, then of the stacked norms; ember summed
    # the squares with `.sum()`, an ulp off the total in some steps
    rng = np.random.default_rng(0)
    for _ in range(20):
        shapes = [(7,), (16, 3), (5, 5), (100,), (33, 9)]
        grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        got = []
        for lib in (ember, torch):
            ps = [lib.nn.Parameter(lib.zeros(s)) for s in shapes]
            for p, g in zip(ps, grads):
                p.grad = lib.tensor(g)
            total = lib.nn.utils.clip_grad_norm_(ps, 1.0)
            got.append((total.item(), [p.grad.numpy().copy() for p in ps],
                        lib.nn.utils.get_total_norm([lib.tensor(g) for g in grads]).item(),
                        [t.item() for t in lib._foreach_norm([lib.tensor(g) for g in grads])]))
        assert got[0][0] == got[1][0] and got[0][2] == got[1][2] and got[0][3] == got[1][3]
        for a, b in zip(got[0][1], got[1][1]):
            np.testing.assert_array_equal(a, b)


def _error_of(fn):
    try:
        fn()
    except Exception as e:           # noqa: BLE001 - the class and text are compared
        return type(e).__name__, str(e)
    return None


def test_rms_norm_shape_errors_have_torchs_texts():
    # torch's rms_norm writes "[*5]" (no ", " after the star, unlike layer_norm) and refuses
    # an input of fewer dims than the normalized shape with a ValueError
    for ns, shape in [((5,), (2, 4)), ((4, 5), (2, 3, 5)), ((3, 4, 5), (2, 4, 5)),
                      ((4, 5), (4,)), ((2,), ())]:
        for name in ("rms_norm", "layer_norm"):
            got = _error_of(lambda: getattr(ember.nn.functional, name)(ember.randn(shape), ns))
            want = _error_of(lambda: getattr(torch.nn.functional, name)(torch.randn(shape), ns))
            assert got == want, (name, ns, shape)


def test_sdpa_mask_and_gqa_errors_are_torchs():
    # a mask that does not fit the scores: torch adds it in place (scores first in the size
    # text; a mask that would grow the scores is the in-place broadcast error); the GQA
    # head-count text ends after "in "
    masks = [((5, 6), "bool"), ((6, 5), "bool"), ((5, 6), "float32"), ((2, 1, 6, 5), "bool"),
             ((3, 6, 6), "bool"), ((3, 6, 6), "float32"), ((2, 4, 6, 6), "float32"),
             ((2, 4, 6, 6), "bool")]
    x = np.random.default_rng(0).standard_normal((4, 6, 8)).astype(np.float32)
    for shape, dt in masks:
        for sub in (x, x[0]):
            def run(lib):
                t = lib.tensor(sub)
                m = lib.ones(shape, dtype=getattr(lib, dt))
                return lib.nn.functional.scaled_dot_product_attention(t, t, t, attn_mask=m)
            got, want = _error_of(lambda: run(ember)), _error_of(lambda: run(torch))
            assert got == want, (shape, dt, sub.ndim)
    q = np.zeros((2, 4, 6, 8), np.float32)
    got, want = [_error_of(lambda: lib.nn.functional.scaled_dot_product_attention(
        lib.tensor(q), lib.tensor(q[:, :3]), lib.tensor(q[:, :3]), enable_gqa=True))
        for lib in (ember, torch)]
    assert got == want


def test_sparse_coo_mm_checks_sizes_and_dtypes_as_torchs_addmm():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a, b in [((3, 3), (4, 2)), ((3, 5), (3, 2)), ((3, 5), (4, 2))]:
            for fn in ("sparse_mm", "matmul"):
                def run(lib):
                    s = lib.ones(a).to_sparse()
                    return lib.sparse.mm(s, lib.ones(b)) if fn == "sparse_mm" else s @ lib.ones(b)
                assert _error_of(lambda: run(ember)) == _error_of(lambda: run(torch))
        for sd, dd in [("float32", "float64"), ("float64", "float32")]:
            def run(lib):
                s = lib.eye(3, dtype=getattr(lib, sd)).to_sparse()
                return lib.sparse.mm(s, lib.ones(3, 2, dtype=getattr(lib, dd)))
            assert _error_of(lambda: run(ember)) == _error_of(lambda: run(torch))


def test_sdpa_dropout_outside_zero_one_as_torch():
    # a negative dropout_p reaches torch's flash kernel for flash-shaped (4-d) operands and
    # is refused there; 3-d/2-d ones run the math path without dropout; p > 1 is the math
    # path's RuntimeError (F.dropout's own check is a ValueError)
    x = np.random.default_rng(1).standard_normal((2, 4, 6, 8)).astype(np.float32)
    for p in (-0.1, 1.5, 2.0):
        for sub in (x, x[0], x[0, 0]):
            outs = []
            for lib in (ember, torch):
                t = lib.tensor(sub)
                got = _error_of(lambda: lib.nn.functional.scaled_dot_product_attention(
                    t, t, t, dropout_p=p))
                outs.append(got)
            assert outs[0] == outs[1], (p, sub.ndim)
    t3 = ember.tensor(x[0])
    np.testing.assert_allclose(
        _np(ember.nn.functional.scaled_dot_product_attention(t3, t3, t3, dropout_p=-0.1)),
        _np(torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(x[0]),) * 3)),
        rtol=1e-6, atol=1e-6)
