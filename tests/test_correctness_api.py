"""API that PyTorch's tutorials use, against torch 2.13: the meta device, utils.benchmark,
the device-agnostic API (accelerator, xpu/mps, Tensor.is_*, nn.parallel) and torch's
submodule paths (issue 14, part 4)."""
import copy

import numpy as np
import pytest

import ember
import ember.utils.benchmark  # noqa: F401
from helpers import torch

if torch is not None:
    import torch.utils.benchmark  # noqa: F401

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")


def _both(fn):
    """``fn(lib)`` for torch and for ember."""
    return fn(torch), fn(ember)


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:               # noqa: BLE001 - the error is what is compared
        return (type(e).__name__, str(e))


# ---------------------------------------------------------------------------- meta device

def test_meta_factories_shape_dtype_stride_and_repr():
    def make(lib):
        x = lib.empty(3, 4, device="meta")
        i = lib.zeros(2, 5, dtype=lib.int64, device=lib.device("meta"))
        g = lib.ones(2, requires_grad=True, device="meta")
        return [(repr(t), tuple(t.shape), str(t.dtype), t.stride(), t.is_meta, str(t.device),
                 t.is_cpu, t.is_cuda, t.requires_grad)
                for t in (x, i, g, lib.empty(0, device="meta"), lib.empty((), device="meta"),
                          lib.full((2, 2), 7, device="meta"), lib.arange(5, device="meta"),
                          lib.randn(3, device="meta"), lib.zeros(2, device="meta",
                                                                 dtype=lib.complex64))]
    t, e = _both(make)
    assert t == e


def test_meta_huge_tensor_costs_nothing():
    x = ember.empty(10 ** 12, device="meta")
    assert x.shape == torch.empty(10 ** 12, device="meta").shape
    y = x.view(1000, -1)[::2].t()           # views of a placeholder stay free
    assert y.is_meta and y.shape == torch.empty(10 ** 12, device="meta").view(1000, -1)[::2].t().shape


def test_meta_ops_follow_shape_rules():
    def run(lib):
        x = lib.empty(3, 4, device="meta")
        w = lib.empty(4, 5, device="meta")
        img = lib.empty(2, 3, 10, 10, device="meta")
        k = lib.empty(8, 3, 3, 3, device="meta")
        outs = [x + 1, x.t(), x.sum(0), x @ w, x + lib.tensor(1.0), x.view(-1), x[1:, ::2],
                lib.nn.functional.softmax(x, -1), x.mean(), x.argmax(1), x > 0,
                x.to(lib.float64), lib.cat([x, x]), lib.stack([x, x], 1),
                lib.nn.functional.conv2d(img, k, padding=1), img.permute(0, 2, 3, 1),
                lib.nn.functional.max_pool2d(img, 2), x.unsqueeze(0).expand(2, 3, 4)]
        mx = x.max(1)
        outs += [mx.values, mx.indices]
        return [(repr(o), o.is_meta, str(o.dtype), tuple(o.shape)) for o in outs]
    t, e = _both(run)
    assert t == e


def test_meta_errors_as_torch():
    def run(lib):
        x = lib.empty(3, 4, device="meta")
        s = lib.empty((), device="meta")
        return [_outcome(f) for f in (
            lambda: x.item(), lambda: s.item(), lambda: float(s), lambda: bool(s),
            lambda: x.numpy(), lambda: x.tolist(), lambda: x.cpu(), lambda: x.to("cpu"),
            lambda: x + lib.ones(3, 4), lambda: x.data_ptr(), lambda: x.storage_offset())]
    t, e = _both(run)
    assert t == e


def test_meta_in_place_is_a_no_op_and_draws_nothing():
    def run(lib):
        lib.manual_seed(0)
        x = lib.empty(3, device="meta")
        r = x.add_(1)
        x.uniform_()
        lib.nn.init.kaiming_uniform_(lib.empty(4, 4, device="meta"))
        with lib.device("meta"):
            lib.nn.Linear(3, 2)
        return r is x, repr(x), lib.rand(3).tolist()
    t, e = _both(run)
    assert t[:2] == e[:2]
    np.testing.assert_allclose(t[2], e[2], rtol=1e-6)


def test_meta_copies_contiguity_and_data_dependent_shapes():
    def run(lib):
        x = lib.empty(3, 4, device="meta", requires_grad=True)
        d = copy.deepcopy(x)
        return [(repr(d), d.is_meta, d.is_leaf), x.contiguous() is x, x.is_contiguous(),
                repr(lib.zeros(3, device="meta").copy_(lib.ones(3))),
                _outcome(lambda: lib.zeros(3).copy_(lib.ones(3, device="meta"))),
                type(_outcome(lambda: x.nonzero())[0]) is str and
                _outcome(lambda: x.nonzero())[0],
                _outcome(lambda: x.unique())[0], repr(x.topk(2).values),
                repr(lib.nn.Embedding(10, 3).to("meta")(lib.zeros(2, dtype=lib.long,
                                                                  device="meta")))]
    t, e = _both(run)
    assert t == e


def test_device_context_manager_builds_on_meta():
    def run(lib):
        with lib.device("meta"):
            lin = lib.nn.Linear(3, 2)
            bn = lib.nn.BatchNorm1d(3)
            made = [lib.zeros(2), lib.randn(2), lib.arange(3), lib.tensor([1.0, 2.0]),
                    lib.empty(2, 2)]
        after = lib.zeros(2)
        return ([repr(lin.weight), repr(lin.bias)],
                {k: str(v.device) for k, v in bn.state_dict().items()},
                [(str(t.device), tuple(t.shape)) for t in made], str(after.device))
    t, e = _both(run)
    assert t == e


def test_set_default_device_meta():
    def run(lib):
        seen = [str(lib.get_default_device())]
        lib.set_default_device("meta")
        try:
            seen += [str(lib.zeros(2).device), str(lib.get_default_device()),
                     repr(lib.nn.Linear(2, 2).weight)]
            with lib.device("cpu"):
                seen += [str(lib.zeros(1).device), str(lib.get_default_device())]
        finally:
            lib.set_default_device(None)
        return seen + [str(lib.zeros(2).device), str(lib.get_default_device())]
    t, e = _both(run)
    assert t == e


def test_module_to_meta_to_empty_and_assign():
    def run(lib):
        lib.manual_seed(0)
        src = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
        m = copy.deepcopy(src).to("meta")
        reprs = [repr(p) for p in m.parameters()]
        err = _outcome(lambda: copy.deepcopy(m).to("cpu"))
        out = m(lib.empty(5, 3, device="meta"))
        empty = copy.deepcopy(m).to_empty(device="cpu")
        devices = sorted({str(p.device) for p in empty.parameters()})
        res = m.load_state_dict(src.state_dict(), assign=True)
        x = lib.linspace(-1, 1, 15).reshape(5, 3)
        return reprs, err, repr(out), devices, str(res), m(x).detach().numpy().copy(), \
            [str(p.device) for p in m.parameters()]
    t, e = _both(run)
    assert t[:5] == e[:5] and t[6] == e[6]
    np.testing.assert_allclose(t[5], e[5], rtol=1e-5, atol=1e-6)


def test_model_ensembling_tutorial_pattern():
    """PyTorch's model-ensembling tutorial: a meta base model, stacked state, vmap."""
    def run(lib):
        nn, F = lib.nn, lib.nn.functional
        from_func = lib.func

        class SimpleMLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(784, 128)
                self.fc2 = nn.Linear(128, 128)
                self.fc3 = nn.Linear(128, 10)

            def forward(self, x):
                x = x.flatten(1)
                x = F.relu(self.fc1(x))
                x = F.relu(self.fc2(x))
                return self.fc3(x)

        lib.manual_seed(0)
        minibatches = lib.randn(3, 64, 1, 28, 28)
        models = [SimpleMLP() for _ in range(4)]
        params, buffers = from_func.stack_module_state(models)
        base = copy.deepcopy(models[0]).to("meta")

        def fmodel(params, buffers, x):
            return from_func.functional_call(base, (params, buffers), (x,))

        same = from_func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatches[0])
        each = from_func.vmap(fmodel)(params, buffers, minibatches[:1].expand(4, 64, 1, 28, 28))
        loop = lib.stack([m(minibatches[0]) for m in models])
        return (base.fc1.weight.is_meta, tuple(same.shape), same.detach().numpy().copy(),
                each.detach().numpy().copy(), loop.detach().numpy().copy())
    t, e = _both(run)
    assert t[:2] == e[:2]
    for a, b in zip(t[2:], e[2:]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(e[2], e[4], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- device-agnostic API

def _answers(ns, calls):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = [(name, args, _outcome(lambda: getattr(ns, name)(*args))) for name, args in calls]
    return out, sorted({(w.category.__name__, str(w.message)) for w in caught})


def test_accelerator_answers_as_a_cpu_build():
    calls = [("is_available", ()), ("current_accelerator", ()),
             ("current_accelerator", (True,)), ("device_count", ()),
             ("current_device_index", ()), ("current_device_idx", ()), ("synchronize", ()),
             ("set_device_index", (0,)), ("set_device_idx", (0,)), ("current_stream", ()),
             ("empty_cache", ()), ("empty_host_cache", ()), ("memory_allocated", ()),
             ("max_memory_allocated", ()), ("memory_reserved", ()),
             ("max_memory_reserved", ()), ("memory_stats", ()), ("get_memory_info", ()),
             ("reset_peak_memory_stats", ()), ("reset_accumulated_memory_stats", ()),
             ("get_device_capability", ())]
    assert _answers(torch.accelerator, calls) == _answers(ember.accelerator, calls)

    def ctx(lib):
        with lib.accelerator.device_index(None):
            pass
        return _outcome(lambda: lib.accelerator.device_index(0).__enter__())
    t, e = _both(ctx)
    assert t == e


def test_xpu_and_mps_say_not_available():
    xpu = [("is_available", ()), ("is_initialized", ()), ("device_count", ()),
           ("current_device", ()), ("synchronize", ()), ("empty_cache", ()),
           ("manual_seed", (0,)), ("manual_seed_all", (0,)), ("seed", ()),
           ("get_rng_state", ()), ("is_bf16_supported", ()), ("init", ()),
           ("get_device_name", ()), ("get_device_properties", ()), ("memory_allocated", ()),
           ("max_memory_allocated", ()), ("memory_reserved", ()), ("memory_stats", ()),
           ("get_arch_list", ()), ("set_device", (0,)), ("initial_seed", ()),
           ("mem_get_info", ())]
    mps = [("is_available", ()), ("device_count", ()), ("synchronize", ()),
           ("empty_cache", ()), ("manual_seed", (0,)), ("seed", ()), ("get_rng_state", ()),
           ("current_allocated_memory", ()), ("driver_allocated_memory", ()),
           ("recommended_max_memory", ())]
    assert _answers(torch.xpu, xpu) == _answers(ember.xpu, xpu)
    assert _answers(torch.mps, mps) == _answers(ember.mps, mps)


def test_tensor_is_attributes_match_torch():
    names = sorted(n for n in dir(torch.Tensor) if n.startswith("is_"))
    missing = [n for n in names if not hasattr(ember.Tensor, n)]
    assert not missing
    flags = [n for n in names if not callable(getattr(torch.ones(2), n))]
    assert {n: getattr(torch.ones(2), n) for n in flags} == \
        {n: getattr(ember.ones(2), n) for n in flags}
    assert {n: getattr(torch.ones(2, device="meta"), n) for n in flags} == \
        {n: getattr(ember.ones(2, device="meta"), n) for n in flags}


def test_data_parallel_is_transparent_on_cpu():
    def run(lib):
        lib.manual_seed(0)
        inner = lib.nn.Linear(3, 2)
        dp = lib.nn.DataParallel(inner)
        x = lib.linspace(-1, 1, 12).reshape(4, 3)
        same = dp(x)
        return (repr(dp), list(dp.state_dict()), dp.module is inner, dp.device_ids,
                lib.nn.parallel.DataParallel is lib.nn.DataParallel,
                same.detach().numpy().copy(), inner(x).detach().numpy().copy(),
                _outcome(lambda: lib.nn.parallel.data_parallel(inner, x)))
    t, e = _both(run)
    assert t[:5] == e[:5] and t[7] == e[7]
    np.testing.assert_allclose(e[5], e[6])
    np.testing.assert_allclose(t[5], e[5], rtol=1e-5, atol=1e-6)


def test_distributed_data_parallel_import_path():
    from ember.nn.parallel import DistributedDataParallel
    assert DistributedDataParallel is ember.nn.parallel.DistributedDataParallel
    assert DistributedDataParallel.__module__ == "ember.nn.parallel.distributed"
    with pytest.raises(ValueError, match="Default process group has not been initialized, "
                                         "please make sure to call init_process_group."):
        DistributedDataParallel(ember.nn.Linear(2, 2))      # as torch without a group


# ------------------------------------------------------------------- utils.benchmark

def _no_address(text):
    import re
    return re.sub(r"<[\w.]+ object at 0x[0-9a-f]+>", "<Measurement>", text) \
        .replace("ember.", "torch.")


def _numbers_masked(text):
    import re
    return re.sub(r"\d+\.\d+", "N", text)


def _measurement(lib, raw, number=10, **spec):
    B = lib.utils.benchmark
    return B.Measurement(number, raw, B.TaskSpec(spec.pop("stmt", "x"),
                                                 spec.pop("setup", "pass"), **spec))


@pytest.mark.parametrize("raw", [[1e-3], [1e-3, 2e-3], [3e-9, 4e-9, 3.5e-9],
                                 [1e-3, 1.1e-3, 1.2e-3, 0.9e-3, 5e-3], [2e-6] * 7,
                                 [1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10], [123.456] * 4])
@pytest.mark.parametrize("spec", [{}, {"label": "L", "sub_label": "S", "description": "D",
                                       "num_threads": 2, "setup": "x=1"},
                                  {"stmt": "a\nb", "sub_label": "S", "setup": "c\nd"},
                                  {"stmt": "a\nb", "env": "E", "global_setup": "import a"}])
def test_measurement_statistics_and_repr(raw, spec):
    import importlib
    importlib.import_module("ember.utils.benchmark")
    t = _measurement(torch, raw, **dict(spec))
    e = _measurement(ember, raw, **dict(spec))
    assert _no_address(repr(t)) == _no_address(repr(e))
    for name in ("median", "mean", "iqr"):
        assert getattr(e, name) == pytest.approx(getattr(t, name), rel=1e-12, abs=1e-15)
    assert e.times == pytest.approx(t.times)
    assert (e.title, e.as_row_name, e.has_warnings, e.meets_confidence(),
            e.meets_confidence(0.5), e.number_per_run, e.raw_times) == \
        (t.title, t.as_row_name, t.has_warnings, t.meets_confidence(),
         t.meets_confidence(0.5), t.number_per_run, t.raw_times)
    if len(set(raw)) == 1:           # no spread: the figures come from the timer's resolution
        assert e.significant_figures == t.significant_figures


def test_benchmark_helpers_and_merge():
    import ember.utils.benchmark as EB
    import torch.utils.benchmark as TB
    for x in (3e-10, 2e-9, 3e-5, 0.02, 5.0, 5000.0):
        assert EB.select_unit(x) == TB.select_unit(x)
    assert [EB.unit_to_english(u) for u in ("ns", "us", "ms", "s")] == \
        [TB.unit_to_english(u) for u in ("ns", "us", "ms", "s")]
    assert EB.trim_sigfig(123.456, 2) == TB.trim_sigfig(123.456, 2)
    assert EB.trim_sigfig(0.0123456, 3) == pytest.approx(TB.trim_sigfig(0.0123456, 3), rel=1e-6)
    assert [c.value for c in EB.Colorize] == [c.value for c in TB.Colorize]

    def merged(lib):
        ms = [_measurement(lib, [1e-3] * 3), _measurement(lib, [2e-3] * 2, number=5),
              _measurement(lib, [4e-3], stmt="y")]
        return [(m.times, m.number_per_run, m.task_spec.stmt)
                for m in lib.utils.benchmark.Measurement.merge(ms)]
    t, e = _both(merged)
    assert t == e


def _compare_inputs(lib, spread=True):
    res = []
    jitter = (1.0, 1.02, 0.99, 1.01, 1.5) if spread else (1.0,) * 5
    for sub, f in (("small", 1.0), ("large", 30.0)):
        for desc, g in (("1", 1.0), ("4", 0.31)):
            res.append(_measurement(lib, [f * g * 1e-5 * x for x in jitter], number=1,
                                    label="add", sub_label=sub, description=desc))
            res.append(_measurement(lib, [f * g * 1.234e-5] * 4, number=1, label="add",
                                    sub_label=sub, description=desc, num_threads=4))
    res.append(_measurement(lib, [3e-3, 3.1e-3], number=1, label="mul", sub_label="small",
                            description="1", env="E"))
    return res


def test_compare_tables_as_torch():
    import importlib
    importlib.import_module("ember.utils.benchmark")

    def tables(lib):
        B = lib.utils.benchmark
        out = [str(B.Compare([]))]
        c = B.Compare(_compare_inputs(lib))
        out.append(str(c))
        c.colorize()
        out.append(str(c))
        c2 = B.Compare(_compare_inputs(lib)[:4])
        c2.colorize(rowwise=True)
        c2.highlight_warnings()
        out.append(str(c2))
        c3 = B.Compare(_compare_inputs(lib, spread=False))
        c3.trim_significant_figures()
        c3.colorize()
        out.append(str(c3))
        for r in (1.0, 1.005, 1.05, 1.5, 2.5, 10):
            c = B.Compare([_measurement(lib, [1e-5] * 3, label="L", sub_label="a",
                                        description="d"),
                           _measurement(lib, [1e-5 * r] * 3, label="L", sub_label="b",
                                        description="d")])
            c.colorize()
            out.append(str(c))
        noisy = [_measurement(lib, [1.234e-3] * 40, label="L", sub_label="a", description="d"),
                 _measurement(lib, [5.67e-3] * 40, label="L", sub_label="b", description="d"),
                 _measurement(lib, [2e-3, 2.5e-3, 3e-3, 3.5e-3, 4e-3], label="L",
                              sub_label="c", description="d")]
        c = B.Compare(noisy)
        c.highlight_warnings()
        out.append(str(c))
        c = B.Compare([_measurement(lib, [1.23456e-5] * 3, label="L", sub_label="s",
                                    description="d", env="E1"),
                       _measurement(lib, [1.5e-5] * 3, label="L", sub_label="s",
                                    description="d", env="E2"),
                       _measurement(lib, [1.7e-5] * 3, label="L", sub_label="t",
                                    description="d", env="E2")])
        out.append(str(c))
        c = B.Compare([_measurement(lib, [1e-5] * 3, label="L", sub_label="a_long_sub_label",
                                    description="d"),
                       _measurement(lib, [2e-5] * 3, label="L", sub_label="s",
                                    description="a_long_description")])
        out.append(str(c))
        return out
    t, e = _both(tables)
    assert t == e


def test_compare_trimmed_values_follow_each_measurement(capsys):
    import ember.utils.benchmark as B
    ms = _compare_inputs(ember)
    c = B.Compare(ms)
    c.trim_significant_figures()
    c.print()
    text = capsys.readouterr().out
    assert text.startswith("[") and "Times are in microseconds (us)." in text
    table = text.split("\n\n")[0].splitlines()          # the "add" table
    rows = [line.split("|") for line in table if "|" in line and line.split("|")[0].strip()]
    shown = [float(v) for row in rows for v in row[1:] if v.strip()]
    merged = [m for m in B.Measurement.merge(ms) if m.label == "add"]
    digits = [len(str(int(m.median * 1e6))) for m in merged]
    decimals = max(0, min(m.significant_figures - d for m, d in zip(merged, digits)))
    expected = sorted(round(B.trim_sigfig(m.median * 1e6, m.significant_figures), decimals)
                      for m in merged)
    assert sorted(shown) == pytest.approx(expected)


def test_timer_measurements_have_the_requested_structure():
    import ember.utils.benchmark as EB
    import torch.utils.benchmark as TB

    def timers(B, lib):
        return B.Timer(stmt="x + y", setup="x = torch.ones(3)", globals={"y": lib.ones(3)},
                       label="add", sub_label="ones(3)", description="eager", num_threads=2)
    t, e = timers(TB, torch).timeit(50), timers(EB, ember).timeit(50)
    assert _numbers_masked(_no_address(repr(t))) == _numbers_masked(_no_address(repr(e)))
    assert (e.number_per_run, len(e.times), e.task_spec.num_threads) == (50, 1, 2)
    assert e.median == e.raw_times[0] / 50

    b = timers(EB, ember).blocked_autorange(min_run_time=0.02)
    assert sum(b.raw_times) >= 0.02 and b.median == pytest.approx(np.median(b.times))
    assert b.times == pytest.approx([r / b.number_per_run for r in b.raw_times])
    seen = []
    a = timers(EB, ember).adaptive_autorange(threshold=0.5, min_run_time=0.005,
                                             max_run_time=0.2,
                                             callback=lambda n, t: seen.append((n, t)))
    assert len(seen) == len(a.times) and sum(a.raw_times) <= 0.2 + max(a.raw_times)
    assert a.meets_confidence(0.5) or sum(a.raw_times) >= 0.2
    assert a.iqr == pytest.approx(np.percentile(a.times, 75) - np.percentile(a.times, 25))
    for lib in (TB, EB):
        with pytest.raises(ValueError, match="only a `str` stmt"):
            lib.Timer(lambda: 1)
        with pytest.raises(NotImplementedError, match="blocked_autorange"):
            lib.Timer("pass").autorange()
    assert "Median" in repr(b) or len(b.times) == 1


# ---------------------------------------------------------------------- module paths

PATH_NAMESPACES = ("nn", "nn.functional", "nn.init", "nn.modules", "nn.parallel", "nn.utils",
                   "nn.utils.rnn", "nn.utils.parametrize", "nn.utils.parametrizations",
                   "nn.utils.prune", "nn.utils.stateless", "nn.utils.spectral_norm",
                   "nn.utils.weight_norm", "nn.utils.clip_grad", "optim", "optim.lr_scheduler",
                   "optim.swa_utils", "optim.optimizer", "utils.data", "autograd",
                   "autograd.functional", "autograd.graph", "autograd.forward_ad",
                   "distributions", "fft", "linalg", "special", "func", "amp", "profiler",
                   "testing", "fx", "jit", "futures")

# Systems still to be built: nothing under these dotted paths is required yet.
NOT_BUILT_SYSTEMS = (
    "onnx", "export", "compiler", "_dynamo",      # compilers and exporters
    "ao", "nn.quantized", "nn.qat", "nn.intrinsic",   # quantization
    "distributed",                                             # multi-device
    "utils.data.datapipes",                                    # datapipes (deprecated in torch)
)

# Single objects ember lacks (features, not paths): (dotted path, name).
NOT_YET_IN_EMBER = {
    # nn.functional: low-precision matmuls and its re-exported internals
    *[("nn.functional", n) for n in (
        "scaled_mm", "scaled_grouped_mm", "grouped_mm", "ScalingType", "SwizzleType",
        "_ScalingType", "_SwizzleType", "_threshold", "assert_int_or_pair",
        "boolean_dispatch", "Tensor", "handle_torch_function", "has_torch_function",
        "has_torch_function_unary", "has_torch_function_variadic")],
    ("fft", "Tensor"),
    # the private names torch defines clip_grads_with_norm_ / get_total_norm under
    ("nn.utils.clip_grad", "_clip_grads_with_norm_"), ("nn.utils.clip_grad", "_get_total_norm"),
    # autograd, func, profiler, testing
    ("autograd", "enforce_grad_layout_policy"),
    ("autograd.grad_mode", "enforce_grad_layout_policy"),
    ("autograd.graph", "region_activation_memory_budget"),
    ("autograd.graph", "set_override_stale_capture_stream"),
    ("autograd.graph", "set_warn_on_accumulate_grad_stream_mismatch"),
    ("profiler", "ExecutionTraceObserver"), ("profiler.profiler", "ExecutionTraceObserver"),
    ("testing", "FileCheck"), ("", "FileCheck"),            # a jit tool
}


def _torch_public_paths():
    """(dotted path, name) pairs a torch program may import: every public name of the
    namespaces above, and each object again at its defining module (``__module__``)."""
    import importlib
    import inspect
    import types
    pairs = set()
    for ns in PATH_NAMESPACES:
        module = importlib.import_module(f"torch.{ns}")
        names = getattr(module, "__all__", None) or \
            [n for n in dir(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name, None)
            if isinstance(obj, types.ModuleType):
                if obj.__name__.startswith("torch."):
                    pairs.add((ns, name))
                continue
            home = getattr(obj, "__module__", None)
            if not (callable(obj) and isinstance(home, str) and
                    (home == "torch" or home.startswith("torch."))):
                continue                    # typing helpers, docs strings, stdlib imports
            pairs.add((ns, name))
            if any(part.startswith("_") for part in home.split(".")):
                continue                    # defined in a private module
            defining = importlib.import_module(home)
            pairs.add((home[len("torch."):] if home != "torch" else "",
                       name if hasattr(defining, name) else obj.__name__))
    return pairs


def _excluded(path, name):
    return (path, name) in NOT_YET_IN_EMBER or any(
        path == s or path.startswith(s + ".") or (path + "." + name).strip(".") == s
        for s in NOT_BUILT_SYSTEMS)


def test_torch_module_paths_resolve_in_ember():
    import importlib
    missing = []
    pairs = _torch_public_paths()
    assert len(pairs) > 1000
    for path, name in sorted(pairs):
        if _excluded(path, name):
            continue
        try:
            module = importlib.import_module(f"ember.{path}" if path else "ember")
            getattr(module, name)
        except (ImportError, AttributeError) as e:
            missing.append(f"torch.{path}.{name}: {type(e).__name__}: {e}")
    assert not missing, "\n".join(missing)


def test_alias_modules_hold_ember_objects():
    from ember.nn.modules.activation import MultiheadAttention
    from ember.nn.modules.linear import Linear
    from ember.nn.modules.loss import _Loss
    from ember.optim.optimizer import Optimizer
    from ember.utils.data.dataloader import DataLoader
    from ember.profiler.profiler import profile
    from ember.distributions.chi2 import Chi2
    assert MultiheadAttention is ember.nn.MultiheadAttention and Linear is ember.nn.Linear
    assert issubclass(ember.nn.MSELoss, _Loss) and Optimizer is ember.optim.Optimizer
    assert DataLoader is ember.utils.data.DataLoader and profile is ember.profiler.profile
    assert Chi2 is ember.distributions.Chi2
