"""jit.fork / jit.wait / Future against torch: scripted forks on the inter-op pool (the 1.6
ensemble example), errors through wait, grad mode and modes carried into tasks, tasks that
really run concurrently, eager fork, the Future API, set/get_num_interop_threads."""
import subprocess
import sys
import textwrap
import threading
from typing import List

import numpy as np
import pytest

import ember
from ember import Tensor

torch = pytest.importorskip("torch")
# torch 2.13 marks jit as deprecated on every call
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def add_n(a, n: int):
    return a * 2 + n


@ember.jit.script
def fork_add(a):
    fut = ember.jit.fork(add_n, a, n=3)
    return ember.jit.wait(fut) - 1


def test_scripted_fork_and_wait():
    x = ember.tensor([1.0, 2.0])
    np.testing.assert_allclose(fork_add(x).numpy(), [4.0, 6.0])
    kinds = [n.kind for n in fork_add.graph.nodes()]
    assert "prim::fork" in kinds and "aten::wait" in kinds
    fork_node = next(n for n in fork_add.graph.nodes() if n.kind == "prim::fork")
    assert str(fork_node.outputs[0].type).startswith("Future")


def ensemble(lib):
    nn = lib.nn

    class Member(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x):
            return self.lin(x).tanh()

    class Ensemble(nn.Module):
        def __init__(self):
            super().__init__()
            self.models = nn.ModuleList([Member() for _ in range(4)])

        def forward(self, x):
            futs: List[lib.jit.Future[lib.Tensor]] = []
            for m in self.models:
                futs.append(lib.jit.fork(m, x))
            results: List[lib.Tensor] = []
            for f in futs:
                results.append(lib.jit.wait(f))
            return lib.stack(results).sum(0)
    return Ensemble()


def test_ensemble_forks_module_forwards_like_torch():
    tm, em = ensemble(torch), ensemble(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    ts, es = torch.jit.script(tm), ember.jit.script(em)
    x = np.random.randn(5, 3).astype("float32")
    want = ts(torch.tensor(x)).detach().numpy()
    got = es(ember.tensor(x))
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.detach().numpy(), em(ember.tensor(x)).detach().numpy(),
                               rtol=1e-6)
    assert [n.kind for n in es.graph.nodes()].count("prim::fork") == 4
    # gradients flow back through the forked forwards
    got.sum().backward()
    tm_out = tm(torch.tensor(x))
    tm_out.sum().backward()
    for (name, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def raises_in_task(x):
    raise ValueError("bad value in task")
    return x


@ember.jit.script
def wait_on_failure(x):
    return ember.jit.wait(ember.jit.fork(raises_in_task, x))


def test_error_in_task_propagates_through_wait():
    with pytest.raises(ember.jit.Error) as info:
        wait_on_failure(ember.ones(1))
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "Traceback of TorchScript" in msg
    assert msg.rstrip().endswith("builtins.ValueError: bad value in task")
    assert 'raise ValueError("bad value in task")' in msg


# --------------------------------------------------------------------------- modes

def grad_task(a):
    return a * 3


@ember.jit.script
def fork_grad(a):
    return ember.jit.wait(ember.jit.fork(grad_task, a))


def test_grad_mode_is_carried_into_tasks():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert fork_grad(x).grad_fn is None
    y = fork_grad(x)
    assert y.grad_fn is not None
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def profiled_task(a):
    return a.tanh()


@ember.jit.script
def fork_profiled(a):
    return ember.jit.wait(ember.jit.fork(profiled_task, a))


def test_profiler_records_forked_ops():
    from ember.autograd import profiler
    with profiler.profile() as prof:
        fork_profiled(ember.ones(3))
    assert "aten::tanh" in {e.name for e in prof.function_events}


# --------------------------------------------------------------------------- concurrency

EVENTS = {}


@ember.jit.ignore
def rendezvous(x: Tensor, mine: str, other: str) -> Tensor:
    """Sets this task's event and waits for the other task's: both see the other's only
    when they run at the same time (the timeout only bounds a failing run)."""
    EVENTS[mine].set()
    met = EVENTS[other].wait(20)
    return x + (1.0 if met else 0.0)


def task_a(x):
    return rendezvous(x, "a", "b")


def task_b(x):
    return rendezvous(x, "b", "a")


@ember.jit.script
def meet(x):
    fa = ember.jit.fork(task_a, x)
    fb = ember.jit.fork(task_b, x)
    return ember.jit.wait(fa) + ember.jit.wait(fb)


def test_forked_tasks_run_concurrently():
    if ember.get_num_interop_threads() < 2:
        pytest.skip("needs an inter-op pool of at least two threads")
    EVENTS.update(a=threading.Event(), b=threading.Event())
    np.testing.assert_allclose(meet(ember.zeros(1)).numpy(), [2.0])


def inner(x):
    return x + 1


def middle(x):
    futs = [ember.jit.fork(inner, x) for _ in range(3)]
    return ember.jit.wait(futs[0]) + ember.jit.wait(futs[1]) + ember.jit.wait(futs[2])


@ember.jit.script
def outer(x):
    futs = [ember.jit.fork(middle, x) for _ in range(6)]
    out = x * 0
    for f in futs:
        out = out + ember.jit.wait(f)
    return out


def test_nested_forks_do_not_exhaust_the_pool():
    # 6 tasks each waiting on 3 more: more waiters than workers
    np.testing.assert_allclose(outer(ember.ones(1)).numpy(), [36.0])


# --------------------------------------------------------------------------- eager

def test_eager_fork_runs_at_once_like_torch():
    for lib in (torch, ember):
        fut = lib.jit.fork(lambda a: a * 2, lib.ones(1))
        assert fut.done()
        assert fut.value().tolist() == [2.0] and lib.jit.wait(fut).tolist() == [2.0]
        assert fut.then(lambda f: f.value() + 1).wait().tolist() == [3.0]

        def err(a):
            raise KeyError("k")
        with pytest.raises(KeyError):          # raised by fork itself, as torch does
            lib.jit.fork(err, 1)


def _future_errors(lib):
    out = []
    f = lib.jit.Future()
    assert not f.done()
    f.set_result(5)
    assert f.wait() == 5 and f.value() == 5 and f.done()
    with pytest.raises(RuntimeError) as info:
        f.set_result(6)
    out.append(str(info.value))
    g = lib.jit.Future()
    h = g.then(lambda fut: 1 / 0)
    seen = []
    g.add_done_callback(lambda fut: seen.append(fut.value()))
    g.set_result(1)
    assert seen == [1] and h.done()
    with pytest.raises(RuntimeError) as info:
        h.wait()
    out.append(str(info.value).split("\n")[0])
    e = lib.jit.Future()
    e.set_exception(ValueError("x"))
    with pytest.raises(ValueError, match="x"):
        e.wait()
    return out


def test_future_api_like_torch():
    assert _future_errors(ember) == _future_errors(torch)


# --------------------------------------------------------------------------- interop threads

INTEROP = """
import sys
lib = __import__(sys.argv[1])
out = [lib.get_num_interop_threads() >= 1]
for bad in (0, -1, "a"):
    try:
        lib.set_num_interop_threads(bad)
    except RuntimeError as e:
        out.append(str(e))
lib.set_num_interop_threads(1)
out.append(lib.get_num_interop_threads())
try:
    lib.set_num_interop_threads(2)
except RuntimeError as e:
    out.append(str(e))
print(out)
"""

ONE_THREAD = """
import threading
import ember
from ember import Tensor
ember.set_num_interop_threads(1)
EVENTS = {"a": threading.Event(), "b": threading.Event()}

@ember.jit.ignore
def rendezvous(x: Tensor, mine: str, other: str) -> Tensor:
    EVENTS[mine].set()
    return x + (1.0 if EVENTS[other].wait(0.5) else 0.0)

def task_a(x):
    return rendezvous(x, "a", "b")

def task_b(x):
    return rendezvous(x, "b", "a")

@ember.jit.script
def meet(x):
    fa = ember.jit.fork(task_a, x)
    fb = ember.jit.fork(task_b, x)
    return ember.jit.wait(fa), ember.jit.wait(fb)

a, b = meet(ember.zeros(1))
print(a.item(), b.item(), ember.get_num_interop_threads())
try:
    ember.set_num_interop_threads(2)
except RuntimeError as e:
    print(e)
"""


def _run(src, *args, tmp_path):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(src))
    r = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                       timeout=120, cwd=str(tmp_path),
                       env={"PYTHONPATH": str(__import__("pathlib").Path(ember.__file__)
                                              .parent.parent), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_set_num_interop_threads_like_torch(tmp_path):
    assert _run(INTEROP, "ember", tmp_path=tmp_path) == _run(INTEROP, "torch",
                                                            tmp_path=tmp_path)


def test_one_interop_thread_runs_tasks_one_after_another(tmp_path):
    # with one worker the first task cannot meet the second (it times out), the second
    # then finds the first's event set
    out = _run(ONE_THREAD, tmp_path=tmp_path).splitlines()
    assert out[0] == "0.0 1.0 1"
    assert out[1] == ("Error: cannot set number of interop threads after parallel work has "
                      "started or set_num_interop_threads called")


# --------------------------------------------------------------------------- traced forks

def traced_kinds(graph):
    out = []
    for n in graph.nodes():
        k = n.kind() if callable(n.kind) else n.kind
        if k != "prim::Constant":
            out.append("prim::fork" if k.startswith("prim::fork") else k)
    return out


def tanh2(x):
    return x.tanh() * 2


def test_fork_while_tracing_records_prim_fork_like_torch():
    def make(lib):
        def f(x):
            fut = lib.jit.fork(tanh2, x)
            y = x + 1
            return lib.jit.wait(fut) + y
        return f
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tt = torch.jit.trace(make(torch), torch.ones(2))
    et = ember.jit.trace(make(ember), ember.ones(2))
    assert traced_kinds(et.graph) == traced_kinds(tt.graph)
    x = np.random.default_rng(0).standard_normal(64).astype("float32")
    # the sum tanh2(x) + (x + 1) cancels to small values: float32 rounding of terms near 1
    np.testing.assert_allclose(et(ember.tensor(x)).numpy(), tt(torch.tensor(x)).numpy(),
                               rtol=1e-6, atol=2e-7)


def traced_ensemble(lib):
    nn = lib.nn

    class Ens(nn.Module):
        def __init__(self):
            super().__init__()
            self.ms = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])

        def forward(self, x):
            futs = [lib.jit.fork(m, x) for m in self.ms]
            return sum(lib.jit.wait(f) for f in futs)
    return Ens()


def test_traced_ensemble_forks_module_calls_like_torch():
    import warnings
    tm, em = traced_ensemble(torch), traced_ensemble(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tt = torch.jit.trace(tm, torch.ones(1, 2))
    et = ember.jit.trace(em, ember.ones(1, 2))
    assert traced_kinds(et.graph) == traced_kinds(tt.graph)
    fork = next(n for n in et.graph.nodes() if n.kind == "prim::fork")
    assert [n.kind for n in fork.fn.graph.nodes()] == \
        ["prim::GetAttr", "prim::GetAttr", "prim::CallMethod"]
    x = np.random.randn(4, 2).astype("float32")
    out = et(ember.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    out.sum().backward()
    assert em.ms[2].weight.grad is not None
