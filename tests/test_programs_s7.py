"""Regressions found diffing everyday PyTorch programs (round 2, session 7) run under torch
and under ``python -m ember.run``; each checked against torch."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().float().numpy() if t.is_floating_point() else t.detach().numpy()


def test_lstm_under_cpu_autocast_runs_in_bfloat16():
    # torch lowers nn.LSTM's layers (mkldnn_rnn_layer): output and (h, c) are bfloat16;
    # a GRU stays float32
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    res = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
        gru = lib.nn.GRU(3, 4)
        with lib.no_grad():
            for p in list(lstm.parameters()) + list(gru.parameters()):
                p.copy_(lib.from_numpy(np.linspace(-0.5, 0.5, p.numel(), dtype=np.float32)
                                       .reshape(p.shape)))
        xt = lib.from_numpy(x)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            o, (h, c) = lstm(xt)
            g, _ = gru(xt)
        o.float().sum().backward()
        res.append((o, h, c, g, lstm.weight_ih_l0.grad))
    for t, e in zip(*res):
        assert str(e.dtype) == str(t.dtype)
        np.testing.assert_allclose(_np(e), _np(t), rtol=0.05, atol=0.03)


def test_checkpoint_non_reentrant_double_backward():
    # autograd.grad(create_graph=True) through a checkpointed region returned a gradient
    # without a graph (the recomputation ran on detached inputs)
    res = []
    for lib in (torch, ember):
        a = lib.tensor([0.5, 1.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([2.0, -1.0], dtype=lib.float64, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(lambda x, w: (x.sin() * w).exp() * x, a, w,
                                              use_reentrant=False)
        g = lib.autograd.grad(out.sum(), (a, w), create_graph=True)
        assert all(t.requires_grad for t in g)
        h = lib.autograd.grad(g[0].sum() + (g[1] ** 2).sum(), (a, w))
        res.append(g + h)
    for t, e in zip(*res):
        np.testing.assert_allclose(_np(e), _np(t), rtol=1e-12)


def test_float32_matmul_precision_round_trip():
    # training scripts call torch.set_float32_matmul_precision("high"); ember lacked it
    try:
        for lib in (torch, ember):
            assert lib.get_float32_matmul_precision() == "highest"
            lib.set_float32_matmul_precision("high")
            assert lib.get_float32_matmul_precision() == "high"
            assert lib.backends.cuda.matmul.allow_tf32 is True
            with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
                lib.set_float32_matmul_precision("HIGH")
            assert lib.get_float32_matmul_precision() == "high"
            with pytest.raises(RuntimeError, match="expects a str, but got int"):
                lib.set_float32_matmul_precision(3)
    finally:
        for lib in (torch, ember):
            lib.set_float32_matmul_precision("highest")
            lib.backends.cuda.matmul.allow_tf32 = False


class _Plain:
    pass


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_is_storage_and_typename():
    for lib in (torch, ember):
        t = lib.ones(2)
        assert lib.is_storage(t.untyped_storage()) and lib.is_storage(t.storage())
        assert not lib.is_storage(t) and not lib.is_storage(1)
    objs = lambda lib: [lib.ones(1), lib.ones(1, dtype=lib.int8), lib.ones(1, dtype=lib.float64),
                        _Plain(), _Plain, 1, "s", None, len, lib.nn.Linear(1, 1),
                        lib.ones(1).untyped_storage()]
    assert [ember.typename(o) for o in objs(ember)] == [torch.typename(o) for o in objs(torch)]


def test_torch_compiler_namespace():
    # `@torch.compiler.disable` and `torch.compiler.is_compiling()` in model code: ember
    # had no torch.compiler
    def f(x):
        return x * 2
    for lib in (torch, ember):
        c = lib.compiler
        assert c.is_compiling() is False and c.is_dynamo_compiling() is False
        assert c.is_exporting() is False and lib._dynamo.is_compiling() is False
        assert c.disable(f)(3) == 6 and c.disable(recursive=False)(f)(2) == 4
        assert c.allow_in_graph(f) is f and c.assume_constant_result(f) is f
        assert c.reset() is None and c.cudagraph_mark_step_begin() is None
        with c.set_stance("force_eager"):
            g = lib.compile(f)
            assert g(lib.ones(1)).item() == 2
    torch.distributions.Distribution.set_default_validate_args(True)   # torch.compile's reset


def test_top_level_function_forms():
    # torch.multiply / subtract (and methods), positional dropouts, torch.embedding,
    # function forms of tensor methods, set_default_tensor_type: all were missing
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    res = []
    for lib in (torch, ember):
        t = lib.from_numpy(x.copy())
        z = lib.zeros(3)
        lib.fill_(z, 2.0)
        lib.index_put_(z, (lib.tensor([0]),), lib.tensor(5.0))
        lib.manual_seed(0)
        res.append([lib.multiply(t, 3), lib.subtract(t, 1, alpha=2), t.multiply(t),
                    t.subtract(2), t.clone().multiply_(2), t.clone().subtract_(1, alpha=3),
                    lib.dropout(t, 0.5, False), lib.alpha_dropout(t, 0.5, False),
                    lib.dropout(t, 0.5, True),
                    lib.embedding(t, lib.tensor([[1, 0]])), z,
                    lib.nuclear_norm(t), lib.frobenius_norm(t, (1,), True),
                    lib.tensor([lib.is_same_size(t, t.t()), lib.is_signed(t),
                                lib.is_inference(t), lib.detach(t).requires_grad,
                                lib.get_device(t)])])
    for a, b in zip(*res):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-6)
    try:
        for lib in (torch, ember):
            with warnings.catch_warnings():     # deprecated (torch warns once a process)
                warnings.simplefilter("ignore")
                lib.set_default_tensor_type(lib.DoubleTensor)
                assert lib.ones(1).dtype == lib.float64
                lib.set_default_tensor_type("torch.FloatTensor")
                assert lib.ones(1).dtype == lib.float32
                with pytest.raises(TypeError, match="only floating-point types"):
                    lib.set_default_tensor_type(lib.LongTensor)
    finally:
        torch.set_default_dtype(torch.float32)
        ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("writer", ["ember", "torch"])
def test_legacy_save_format_round_trip(writer, tmp_path):
    # torch.save(..., _use_new_zipfile_serialization=False) raised NotImplementedError
    libs = {"ember": ember, "torch": torch}
    w, r = libs[writer], libs["torch" if writer == "ember" else "ember"]
    base = w.arange(10.0)
    obj = {"a": base, "v": base[2:5], "t": base.view(2, 5).t(),
           "i": w.arange(3, dtype=w.int16), "c": w.tensor([1 + 2j]),
           "p": w.nn.Parameter(w.ones(2)), "n": 3, "e": w.empty(0)}
    path = tmp_path / "legacy.pt"
    w.save(obj, path, _use_new_zipfile_serialization=False)
    with open(path, "rb") as fh:
        assert fh.read(2) != b"PK"                     # not a zip archive
    got = r.load(path)
    got["a"][3] = 100.0                                # views still share the storage
    assert got["v"].tolist() == [2.0, 100.0, 4.0] and got["t"][1].tolist() == [1.0, 6.0]
    assert got["t"].stride() == (1, 5) and got["i"].dtype == r.int16
    assert got["c"].tolist() == [1 + 2j] and type(got["p"]).__name__ == "Parameter"
    assert got["p"].requires_grad and got["n"] == 3 and got["e"].shape == (0,)


def test_uniform_validates_low_against_high_like_torch():
    # ember raised 'Uniform is not defined when low>= high'; torch checks arg_constraints
    # (low < high, high > low) and names the parameter
    for lo, hi in ((2.0, 1.0), ([2.0, 0.0], [1.0, 1.0])):
        msgs = []
        for lib in (torch, ember):
            with pytest.raises(ValueError) as e:
                lib.distributions.Uniform(lib.tensor(lo), lib.tensor(hi))
            msgs.append(str(e.value))
        assert msgs[1] == msgs[0]
    for lib in (torch, ember):
        u = lib.distributions.Uniform(lib.zeros(2), 1.0)
        assert str(u.arg_constraints["low"]) == "LessThan(upper_bound=tensor([1., 1.]))"
        assert lib.distributions.Uniform(2.0, 1.0, validate_args=False).high.item() == 1.0


def test_gammainc_gradient_with_a_python_number():
    # the public functions refuse a number for `a`, as torch's; ember's own code may still
    # pass one to the op record, whose backward called a.lgamma()
    from ember._ops.registry import OPS
    x = np.array([0.3, 1.7, 4.2])
    for fn, op in (("gammainc", "igamma"), ("gammaincc", "igammac")):
        xt = torch.tensor(x, requires_grad=True)
        a = torch.tensor(2.0, dtype=torch.float64)
        want, = torch.autograd.grad(getattr(torch.special, fn)(a, xt).sum(), xt)
        xe = ember.tensor(x, requires_grad=True)
        with pytest.raises(TypeError, match="must be Tensor, not float"):
            getattr(ember.special, fn)(2.0, xe)
        got, = ember.autograd.grad(OPS[op](2.0, xe).sum(), xe)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("case", ["nonzero", "unique", "unique_dim", "unique_consecutive",
                                  "masked_select"])
def test_vmap_refuses_dynamic_shape_ops(case):
    # ember looped per sample: nonzero / masked_select gave a result whenever the per-sample
    # sizes agreed, unique failed in stack; torch refuses them with its own message
    fns = {"nonzero": lambda lib: lambda t: t.nonzero(),
           "unique": lambda lib: lambda t: lib.unique(t),
           "unique_dim": lambda lib: lambda t: lib.unique(t.view(3, 1), dim=0),
           "unique_consecutive": lambda lib: lambda t: lib.unique_consecutive(t),
           "masked_select": lambda lib: lambda t: t.masked_select(t > 0)}
    x = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 3.0]], np.float32)
    msgs = []
    for lib in (torch, ember):
        with pytest.raises(RuntimeError) as e:
            lib.vmap(fns[case](lib))(lib.from_numpy(x))
        msgs.append(str(e.value))
    assert msgs[1] == msgs[0]
    for lib in (torch, ember):       # an unbatched mask keeps the size fixed: allowed
        out = lib.vmap(lambda t: t.masked_select(lib.tensor([True, False, True])))(
            lib.from_numpy(x))
        assert out.tolist() == [[1.0, 2.0], [0.0, 3.0]]


def test_vmap_indexing_with_batched_index_tensors():
    # indexing read a batched index's placeholder data: vmap(lambda lp, y: -lp[y]) picked
    # entry 0 for every sample; setitem with a batched index likewise
    def run(lib):
        x = lib.arange(6.0).view(2, 3)
        t3 = lib.arange(12.0).view(2, 2, 3)
        ii = lib.tensor([[0, 1], [2, 2]])

        def put(t, i, v):
            t = t.clone()
            t[i] = v
            return t
        w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        picked = lib.vmap(lambda i: w[i] * 2)(lib.tensor([0, 2, 2]))
        picked.sum().backward()
        grad_fn = lib.func.grad(lambda v, i: (v[i] ** 2).sum())
        return [lib.vmap(lambda t, i: t[i])(x, lib.tensor([[0], [2]])),
                lib.vmap(lambda t, i, j: t[i, j])(t3, lib.tensor([1, 0]), lib.tensor([2, 0])),
                lib.vmap(lambda t, i: t[..., i])(t3, lib.tensor([1, 2])),
                lib.vmap(lambda t, i: t[None, i, 1:])(t3, lib.tensor([1, 0])),
                lib.vmap(lambda i: x[i])(lib.tensor([1, 0])),
                lib.vmap(lib.vmap(lambda t, i: t[i]))(t3, ii),
                lib.vmap(lambda i: lib.vmap(lambda t: t[i])(x))(lib.tensor([2, 0, 1])),
                lib.vmap(put)(x, ii, lib.tensor([[7.0, 8.0], [9.0, 9.0]])),
                lib.vmap(grad_fn, in_dims=(None, 0))(lib.arange(3.0), ii),
                picked, w.grad]
    for a, b in zip(run(torch), run(ember)):
        np.testing.assert_array_equal(_np(b), _np(a))
    msgs = []
    for lib in (torch, ember):
        def into_unbatched(i):
            y = lib.zeros(3)
            y[i] = 1.0
            return y
        for fn, arg in ((into_unbatched, lib.tensor([0, 2])),
                        (lambda t: t[t > 2], lib.arange(6.0).view(2, 3))):
            with pytest.raises(RuntimeError) as e:
                lib.vmap(fn)(arg)
            msgs.append(str(e.value))
    assert msgs[2:] == msgs[:2]


def test_vmap_one_hot():
    # one_hot inferred num_classes from a batched wrapper's placeholder data (all zeros):
    # vmap(F.one_hot)(tensor([2, 0])) gave [[0], [1]]; torch wants num_classes under vmap
    y = np.array([2, 0])
    outs, msgs = [], []
    for lib in (torch, ember):
        outs.append(lib.vmap(lambda i: lib.nn.functional.one_hot(i, 4))(lib.from_numpy(y)))
        with pytest.raises(RuntimeError) as e:
            lib.vmap(lib.nn.functional.one_hot)(lib.from_numpy(y))
        msgs.append(str(e.value))
    np.testing.assert_array_equal(outs[1].numpy(), outs[0].numpy())
    assert msgs[1] == msgs[0]


@pytest.mark.parametrize("kw", [dict(padding_idx=0), dict(scale_grad_by_freq=True),
                                dict(padding_idx=2, scale_grad_by_freq=True)])
def test_per_sample_grads_of_embedding_with_padding_or_freq_scale(kw):
    # vmap(grad) through nn.Embedding(padding_idx=...) failed registering its gradient hook on
    # the batched output (and scaled from the wrapper's placeholder index data)
    idx = np.array([[0, 2, 2], [3, 0, 1], [4, 4, 4]])
    w = np.linspace(-1, 1, 15).reshape(5, 3).astype(np.float32)
    res = []
    for lib in (torch, ember):
        emb = lib.nn.Embedding.from_pretrained(lib.from_numpy(w.copy()), freeze=False, **kw)
        params = {k: v.detach() for k, v in emb.named_parameters()}
        loss = lambda p, i: lib.func.functional_call(emb, p, (i,)).pow(2).sum()
        g = lib.vmap(lib.func.grad(loss), in_dims=(None, 0))(params, lib.from_numpy(idx))
        res.append((g["weight"], lib.vmap(emb)(lib.from_numpy(idx))))
    for a, b in zip(*res):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-6)
