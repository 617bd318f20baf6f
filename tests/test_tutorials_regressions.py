"""Bugs found running pytorch/tutorials scripts on ember, each checked against torch."""
import weakref

import numpy as np
import pytest

import ember
import ember.utils.benchmark
import ember.nn.attention
import ember.profiler
import ember.autograd.forward_ad

torch = pytest.importorskip("torch")
import torch.utils.benchmark  # noqa: E402
import torch.nn.attention  # noqa: E402
import torch.profiler  # noqa: E402
import torch.autograd.forward_ad  # noqa: E402


def _both(fn):
    """``fn(lib)`` for ember and torch."""
    return fn(ember), fn(torch)


# recipes/timer_quick_start: stmt and setup written indented in triple-quoted strings
def test_timer_dedents_stmt_and_setup():
    def run(lib):
        t = lib.utils.benchmark.Timer("""
            z = x * y""", """
            x = torch.ones((128,))
            y = torch.ones((1,))
            """)
        m = t.timeit(3)
        return m.task_spec.stmt, m.task_spec.setup, m.number_per_run
    assert run(ember) == run(torch)


# recipes/swap_tensors: torch.utils.swap_tensors
def test_swap_tensors_exchanges_contents_class_and_dict():
    def run(lib):
        class Sub(lib.Tensor):
            pass
        a = lib.arange(3.).as_subclass(Sub)
        a.tag = "a"
        b = lib.ones(2, 2)
        ida, idb = id(a), id(b)
        lib.utils.swap_tensors(a, b)
        return (id(a) == ida, id(b) == idb, type(a).__name__, type(b).__name__, a.tolist(),
                b.tolist(), a.__dict__, b.__dict__)
    assert run(ember) == run(torch)


def test_swap_tensors_parameter_and_refusals():
    def run(lib):
        p, q = lib.nn.Parameter(lib.ones(2)), lib.zeros(3)
        lib.utils.swap_tensors(p, q)
        out = [type(p).__name__, p.requires_grad, q.requires_grad, type(q).__name__, q.tolist()]
        c = lib.ones(1)
        ref = weakref.ref(c)
        with pytest.raises(RuntimeError, match="weakref"):
            lib.utils.swap_tensors(c, lib.ones(1))
        del ref
        return out
    assert run(ember) == run(torch)


@pytest.mark.parametrize("switch", ["swap", "overwrite"])
def test_future_switches_on_module_conversion(switch):
    def run(lib):
        setter = getattr(lib.__future__, f"set_{switch}_module_params_on_conversion")
        setter(True)
        try:
            lib.manual_seed(0)
            m = lib.nn.Linear(2, 3)
            m(lib.ones(1, 2)).sum().backward()
            w, g = m.weight, m.weight.grad
            m.double()
            return (m.weight is w, m.weight.grad is g, type(m.weight).__name__,
                    str(m.weight.dtype), str(m.weight.grad.dtype), str(w.dtype), str(g.dtype),
                    m.weight.requires_grad, np.round(m.weight.detach().numpy(), 6).tolist(),
                    getattr(lib.__future__, f"get_{switch}_module_params_on_conversion")())
        finally:
            setter(False)
    e, t = run(ember), run(torch)
    assert e[:8] == t[:8] and e[9] == t[9]
    np.testing.assert_allclose(e[8], t[8])
    assert not ember.__future__.get_swap_module_params_on_conversion()


# intermediate/autograd_saved_tensors_hooks: x.pow(2) saves x alone (ember also saved the
# result, so pack hooks ran twice and a hook's file was left unpacked)
def test_pow_saves_only_what_torch_saves():
    def run(lib):
        packed = []
        x = lib.arange(1., 5.).requires_grad_()
        e = lib.tensor([0.5, 1., 2., 3.]).requires_grad_()
        with lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t.shape) or t,
                                                    lambda t: t):
            y = x.pow(2)
        n_scalar = len(packed)
        (y.sum() + (x.pow(e) * 2).sum() + lib.pow(1.5, e).sum()).backward()
        gx, ge = x.grad.tolist(), e.grad.tolist()
        gg, = lib.autograd.grad(lib.autograd.grad(x.pow(e).sum(), e, create_graph=True)[0].sum(), e)
        return n_scalar, gx, ge, gg.tolist()
    e, t = run(ember), run(torch)
    assert e[0] == t[0] == 1
    for a, b in zip(e[1:], t[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-5)


# intermediate/scaled_dot_product_attention: CausalSelfAttention does
# ``y.transpose(1, 2).view(B, -1, H * D)`` on the output of a query made by
# ``.view(B, L, H, D).transpose(1, 2)``; torch's CPU flash kernel lays the output out like
# the query, so the view works (ember's contiguous output raised)
@pytest.mark.parametrize("make", [
    lambda lib: lib.rand(2, 10, 4, 8).transpose(1, 2),
    lambda lib: lib.rand(4, 2, 10, 8).transpose(0, 1),
    lambda lib: lib.rand(2, 4, 10, 16)[..., :8],
    lambda lib: lib.rand(2, 10, 4, 24)[..., :8].transpose(1, 2),
    lambda lib: lib.rand(2, 4, 10, 8),
])
def test_sdpa_output_layout_follows_query(make):
    def run(lib):
        lib.manual_seed(0)
        q = make(lib)
        F = lib.nn.functional
        out = F.scaled_dot_product_attention(q, q, q)
        drop = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
        with lib.nn.attention.sdpa_kernel(lib.nn.attention.SDPBackend.MATH):
            math = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        return out.stride(), drop.stride(), math.stride(), out.numpy()
    e, t = run(ember), run(torch)
    assert e[:3] == t[:3]
    np.testing.assert_allclose(e[3], t[3], rtol=1e-5, atol=1e-6)


def test_causal_self_attention_view_of_sdpa_output():
    def run(lib):
        lib.manual_seed(0)
        x = lib.rand(3, 10, 32)
        qkv = lib.nn.Linear(32, 96, bias=False)(x)
        q, k, v = (t.view(3, -1, 4, 8).transpose(1, 2) for t in qkv.chunk(3, -1))
        y = lib.nn.functional.scaled_dot_product_attention(q, k, v)
        return y.transpose(1, 2).view(3, -1, 32).detach().numpy()
    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-5, atol=1e-6)


# intermediate/memory_format: a channels-last input or weight gives a channels-last
# convolution output (ember's was contiguous)
@pytest.mark.parametrize("x_cl,w_cl,transposed", [(1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 0, 0),
                                                  (1, 0, 1)])
def test_conv_channels_last_output(x_cl, w_cl, transposed):
    def run(lib):
        lib.manual_seed(0)
        x, w = lib.randn(2, 3, 7, 6), lib.randn(3, 4, 3, 3) if transposed else lib.randn(4, 3, 3, 3)
        if x_cl:
            x = x.contiguous(memory_format=lib.channels_last)
        if w_cl:
            w = w.contiguous(memory_format=lib.channels_last)
        F = lib.nn.functional
        out = F.conv_transpose2d(x, w, stride=2) if transposed else F.conv2d(x, w, padding=1)
        return out.stride(), out.is_contiguous(memory_format=lib.channels_last), out.numpy()
    e, t = run(ember), run(torch)
    assert e[:2] == t[:2]
    np.testing.assert_allclose(e[2], t[2], rtol=1e-4, atol=1e-5)


# advanced/super_resolution_with_onnxruntime imports torch.utils.model_zoo
def test_model_zoo_load_url():
    import ember.utils.model_zoo as ez
    import torch.utils.model_zoo as tz
    assert ez.load_url is ember.hub.load_state_dict_from_url
    assert tz.load_url is torch.hub.load_state_dict_from_url


# recipes/profiler_recipe: the table's rows are torch's op names (aten::conv2d,
# aten::batch_norm, aten::max_pool2d...), with conv2d's argument shapes as torch lists them
def test_profiler_names_functional_ops_as_torch():
    names = ["aten::conv2d", "aten::batch_norm", "aten::max_pool2d", "aten::adaptive_avg_pool2d",
             "aten::layer_norm", "aten::dropout", "aten::cross_entropy_loss", "aten::mse_loss",
             "aten::scaled_dot_product_attention", "aten::avg_pool2d", "aten::group_norm"]

    def run(lib):
        lib.manual_seed(0)
        nn, F = lib.nn, lib.nn.functional
        model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.MaxPool2d(2),
                              nn.AvgPool2d(1), nn.GroupNorm(2, 4), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.LayerNorm(4), nn.Dropout(0.2))
        x = lib.randn(2, 3, 8, 8)
        with lib.profiler.profile(record_shapes=True) as prof:
            y = model(x)
            F.cross_entropy(y, lib.tensor([1, 2]))
            F.mse_loss(y, y)
            q = y.view(1, 1, 2, 4)
            F.scaled_dot_product_attention(q, q, q)
        counts = {e.key: e.count for e in prof.key_averages()}
        shapes = sorted(str(e.input_shapes) for e in prof.key_averages(group_by_input_shape=True)
                        if e.key == "aten::conv2d")
        return [counts.get(n) for n in names], shapes
    assert run(ember) == run(torch)


# memory_format tutorial: batch norm and pooling keep a channels-last input's layout
@pytest.mark.parametrize("op", ["bn_eval", "bn_train", "max_pool", "avg_pool", "adaptive_max"])
def test_norm_and_pooling_keep_channels_last(op):
    def run(lib):
        lib.manual_seed(0)
        F = lib.nn.functional
        x = lib.randn(2, 3, 6, 8).contiguous(memory_format=lib.channels_last)
        out = {"bn_eval": lambda: F.batch_norm(x, lib.zeros(3), lib.ones(3)),
               "bn_train": lambda: F.batch_norm(x, None, None, training=True),
               "max_pool": lambda: F.max_pool2d(x, 2),
               "avg_pool": lambda: F.avg_pool2d(x, 2),
               "adaptive_max": lambda: F.adaptive_max_pool2d(x, (3, 2))}[op]()
        return out.stride(), out.numpy()
    e, t = run(ember), run(torch)
    assert e[0] == t[0]
    np.testing.assert_allclose(e[1], t[1], rtol=1e-5, atol=1e-6)


# intermediate/forward_ad_usage: a tangent keeps its graph to the inputs that require grad,
# so backward through a jvp (reverse-over-forward: Hessian-vector products, gradients of
# directional derivatives) works (ember's tangents were detached)
def test_backward_through_forward_ad_tangent():
    def run(lib):
        fwAD = lib.autograd.forward_ad
        lib.manual_seed(0)
        x, v = lib.randn(5, requires_grad=True), lib.randn(5)
        W = lib.randn(5, 5, requires_grad=True)
        m = lib.nn.Linear(5, 3)
        with fwAD.dual_level():
            out = ((W @ fwAD.make_dual(x, v)).tanh() * fwAD.make_dual(x, v).sin()).sum()
            jvp = fwAD.unpack_dual(out).tangent
            t = fwAD.unpack_dual(m(fwAD.make_dual(x.detach(), v)).exp().sum()).tangent
        (jvp + t).backward()
        with fwAD.dual_level():       # no grad needed: the tangent stays detached
            plain = fwAD.unpack_dual(fwAD.make_dual(x.detach(), v).exp()).tangent
        return [a.detach().numpy() for a in (jvp, x.grad, W.grad, m.weight.grad, m.bias.grad)], \
            plain.requires_grad
    (e, eg), (t, tg) = run(ember), run(torch)
    assert eg == tg is False
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# custom_function_double_backward: gradgradcheck's random grad_outputs come from the global
# generator as torch's (U(-1, 1) in the output's dtype), so the script's later random
# numbers match torch's (ember drew them from a private NumPy generator)
@pytest.mark.parametrize("dtype,non_contig", [("float64", False), ("float64", True),
                                              ("complex128", False), ("float32", True)])
def test_gradgradcheck_draws_grad_outputs_like_torch(dtype, non_contig):
    def run(lib):
        seen = []

        class Spy(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a.clone()

            @staticmethod
            def backward(ctx, g):
                seen.append(g.detach().clone())
                return g
        x = lib.randn(2, 3, dtype=getattr(lib, dtype), requires_grad=True)
        lib.manual_seed(0)
        lib.autograd.gradgradcheck(lambda a: Spy.apply(a * a), (x,), eps=1e-3, atol=1e-1,
                                   rtol=1e-1, gen_non_contig_grad_outputs=non_contig)
        return seen[0].numpy(), seen[0].is_contiguous(), lib.rand(2).tolist()
    e, t = run(ember), run(torch)
    np.testing.assert_array_equal(e[0], t[0])
    assert e[1:] == t[1:]


def test_view_as_complex_of_empty():
    for lib in (ember, torch):
        assert tuple(lib.view_as_complex(lib.empty(0, 4, 2, dtype=lib.float64)).shape) == (0, 4)


# intermediate/spatial_transformer: MaxPool2d followed by ReLU(inplace=True); max pooling
# kept its values output for backward, so the in-place ReLU broke backward (torch saves the
# input and the indices only)
@pytest.mark.parametrize("pool", ["max_pool2d", "adaptive_max_pool2d"])
def test_inplace_relu_after_max_pool_backward(pool):
    def run(lib):
        lib.manual_seed(0)
        x = lib.randn(2, 3, 8, 8, requires_grad=True)
        F = lib.nn.functional
        y = F.max_pool2d(x, 2) if pool == "max_pool2d" else F.adaptive_max_pool2d(x, 3)
        F.relu(y, inplace=True).pow(2).sum().backward()
        return x.grad.numpy()
    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-6)


# the same for the (values, indices) ops: backward needs the indices only, so changing the
# values in place afterwards is allowed (as in torch)
@pytest.mark.parametrize("name", ["max", "min", "sort", "topk", "cummax", "cummin", "kthvalue",
                                  "median", "nanmedian", "mode"])
def test_inplace_on_values_of_indices_ops(name):
    def run(lib):
        lib.manual_seed(0)
        x = lib.randn(3, 5, dtype=lib.float64, requires_grad=True)
        call = {"topk": lambda: x.topk(2, 1), "kthvalue": lambda: x.kthvalue(2, 1)}.get(
            name, lambda: getattr(x, name)(1))
        values = call()[0]
        values.mul_(3)
        values.pow(2).sum().backward()
        return x.grad.numpy()
    np.testing.assert_allclose(run(ember), run(torch))


# LSTM / GRU outputs changed in place (ReLU(inplace=True), masked dropout...) before backward:
# torch allows it (its workspace holds what backward needs); ember's fused layers kept the
# returned output itself
@pytest.mark.parametrize("cell,batch_first", [("LSTM", False), ("LSTM", True), ("GRU", False),
                                              ("GRU", True)])
def test_inplace_on_rnn_output_backward(cell, batch_first):
    def run(lib):
        lib.manual_seed(0)
        rnn = getattr(lib.nn, cell)(3, 4, num_layers=2, batch_first=batch_first).double()
        x = lib.randn(5, 2, 3, dtype=lib.float64, requires_grad=True)
        out, _ = rnn(x)
        out.mul_((lib.arange(out.numel(), dtype=lib.float64) % 3).view(out.shape))
        out.pow(2).sum().backward()
        return [x.grad.numpy()] + [p.grad.numpy() for p in rnn.parameters()]
    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["sdpa", "cross_entropy"])
def test_inplace_on_fused_outputs_backward(name):
    def run(lib):
        lib.manual_seed(0)
        F = lib.nn.functional
        x = lib.randn(2, 4, 3, dtype=lib.float64, requires_grad=True)
        if name == "sdpa":
            y = F.scaled_dot_product_attention(x, x, x)
        else:
            y = F.cross_entropy(x[0], lib.tensor([0, 2, 1, 1]), reduction="none")
        y.mul_(3)
        y.pow(2).sum().backward()
        return x.grad.numpy()
    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2", "frexp", "erfinv", "slogdet"])
def test_inplace_on_outputs_of_input_saving_ops(name):
    def run(lib):
        lib.manual_seed(0)
        x = lib.randn(3, 3, dtype=lib.float64, requires_grad=True)
        eye = lib.eye(3, dtype=lib.float64)
        y = {"logaddexp": lambda: x.logaddexp(2 * x), "logaddexp2": lambda: x.logaddexp2(2 * x),
             "frexp": lambda: lib.frexp(x)[0], "erfinv": lambda: (x / 4).erfinv(),
             "slogdet": lambda: lib.linalg.slogdet(x + 3 * eye)[1].reshape(1)}[name]()
        y.mul_(3)
        y.pow(2).sum().backward()
        return x.grad.numpy()
    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-7, atol=1e-9)


# intermediate/tensorboard_tutorial: SummaryWriter.add_embedding and add_pr_curve were missing
def _tb_files(lib, tmp_path, name):
    pytest.importorskip("tensorboard")
    pytest.importorskip("PIL")
    from PIL import Image
    import torch.utils.tensorboard  # noqa: F401
    import ember.utils.tensorboard  # noqa: F401
    root = tmp_path / name
    lib.manual_seed(0)
    w = lib.utils.tensorboard.SummaryWriter(str(root))
    w.add_embedding(lib.randn(5, 3), metadata=list("abcde"), label_img=lib.rand(5, 3, 4, 4),
                    tag="x/y", global_step=7)
    w.add_embedding(lib.randn(2, 2).double(), metadata=[[1, "p"], [2, "q"]],
                    metadata_header=["id", "name"])
    w.add_embedding(lib.arange(4.).view(2, 2), label_img=lib.rand(2, 1, 2, 3), tag='a"b\\c')
    w.add_pr_curve("pr", lib.randint(0, 2, (64,)), lib.rand(64), global_step=2)
    w.add_pr_curve("pr5", lib.tensor([1, 0, 1, 1, 0]), lib.tensor([.9, .8, .55, .3, .1]),
                   num_thresholds=5)
    w.close()
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and "tfevents" not in p.name:
            rel = str(p.relative_to(root))
            out[rel] = np.asarray(Image.open(p)).tolist() if p.suffix == ".png" else p.read_text()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util
    ea = EventAccumulator(str(root), size_guidance={"tensors": 0})
    ea.Reload()
    for tag in ("pr", "pr5"):
        ev = ea.Tensors(tag)[0]
        out[tag] = (ev.step, tensor_util.make_ndarray(ev.tensor_proto).tolist(),
                    ea.SummaryMetadata(tag).plugin_data.content)
    return out


def test_tensorboard_embedding_and_pr_curve(tmp_path):
    assert _tb_files(ember, tmp_path, "e") == _tb_files(torch, tmp_path, "t")


def test_channels_last_3d_contiguity_and_rank_checks_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (ember, torch):
        x = lib.arange(2 * 3 * 4 * 5 * 6.).reshape(2, 3, 4, 5, 6)
        y = x.contiguous(memory_format=lib.channels_last_3d)
        assert y.stride() == (360, 1, 90, 18, 3) and bool((y == x).all())
        assert x.to(memory_format=lib.channels_last_3d).stride() == (360, 1, 90, 18, 3)
        assert y.is_contiguous(memory_format=lib.channels_last_3d)
        assert not x.is_contiguous(memory_format=lib.channels_last_3d)
        assert not y.is_contiguous() and not x.is_contiguous(memory_format=lib.channels_last)
        x4 = lib.ones(2, 3, 4, 5)
        assert not x4.is_contiguous(memory_format=lib.channels_last_3d)
        with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
            x4.contiguous(memory_format=lib.channels_last_3d)
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
            x.clone(memory_format=lib.channels_last)
