"""API that PyTorch's tutorials use, against torch 2.13: the meta device, utils.benchmark,
the device-agnostic API (accelerator, xpu/mps, Tensor.is_*, nn.parallel) and torch's
submodule paths (issue 14, part 4)."""
import copy

import numpy as np
import pytest

import ember
from helpers import torch

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
    with pytest.raises(NotImplementedError, match="torch.distributed"):
        DistributedDataParallel(ember.nn.Linear(2, 2))
