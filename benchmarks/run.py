"""ember vs torch (and NumPy), side by side in one process. Prints a table of ratios.

    python benchmarks/run.py            # everything
    python benchmarks/run.py core       # only the core group

Ratios are ember time / torch time (lower is better; < 1 means ember is faster).
"""
from __future__ import annotations

import subprocess
import sys
import os

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import cpus, bench, bench_interleaved, fmt_time, machine  # noqa: E402

import ember  # noqa: E402

try:
    import torch
    torch.set_num_threads(cpus())
except ImportError:
    torch = None

ROWS = []


def row(name, ember_s, torch_s=None, numpy_s=None, note=""):
    ROWS.append((name, ember_s, torch_s, numpy_s, note))
    r_t = f"{ember_s / torch_s:6.2f}x" if torch_s else "   -   "
    r_n = f"{ember_s / numpy_s:6.2f}x" if numpy_s else "   -   "
    print(f"{name:<34} {fmt_time(ember_s)} {fmt_time(torch_s) if torch_s else ' ' * 11} "
          f"{fmt_time(numpy_s) if numpy_s else ' ' * 11}  {r_t}  {r_n}  {note}", flush=True)


def header(title):
    print(f"\n## {title}\n{'case':<34} {'ember':>11} {'torch':>11} {'numpy':>11}  "
          f"{'vs torch':>7}  {'vs numpy':>7}")


def _small(name, ember_fn, torch_fn, numpy_fn=None, **kw):
    """A small-op row: ember and torch (and NumPy) timed in alternating blocks, so that a
    noisy host slows all of them alike (the ratio is what matters here)."""
    fns = {"ember": ember_fn}
    if torch is not None:
        fns["torch"] = torch_fn
    if numpy_fn is not None:
        fns["numpy"] = numpy_fn
    t = bench_interleaved(fns, **kw)
    row(name, t["ember"], t.get("torch"), t.get("numpy"))


def _dynamic_net(lib, steps):
    """One SGD step per call of PyTorch's "dynamic net" tutorial model: Linear 1000->100,
    a middle Linear(100, 100) applied 0-3 times (fixed per step here), Linear 100->10,
    ReLU by clamp(min=0), MSE (sum) loss, SGD with momentum; batch 64."""
    gen = lib.Generator().manual_seed(0)
    depth = np.random.default_rng(0).integers(0, 4, size=steps)
    w = [lib.randn(shape, generator=gen) * 0.05 for shape in ((100, 1000), (100, 100), (10, 100))]
    params = []
    for t in w:
        params += [t.requires_grad_(), lib.zeros(t.shape[0], requires_grad=True)]
    x, y = lib.randn(64, 1000, generator=gen), lib.randn(64, 10, generator=gen)
    opt = lib.optim.SGD(params, lr=1e-4, momentum=0.9)
    F = lib.nn.functional
    k = [0]

    def step():
        (w0, b0, w1, b1, w2, b2) = params
        h = F.linear(x, w0, b0).clamp(min=0)
        for _ in range(depth[k[0] % steps]):
            h = F.linear(h, w1, b1).clamp(min=0)
        k[0] += 1
        loss = F.mse_loss(F.linear(h, w2, b2), y, reduction="sum")
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def core():
    header("core: dispatcher overhead, matmul, large elementwise, reductions")
    a, b = ember.ones(4, 4), ember.ones(4, 4)
    ta, tb = (torch.ones(4, 4), torch.ones(4, 4)) if torch else (None, None)
    na = np.ones((4, 4), np.float32)
    _small("add 4x4 (no grad)", lambda: a + b, lambda: ta + tb, lambda: na + na)
    ag = ember.ones(4, 4, requires_grad=True)
    tg = torch.ones(4, 4, requires_grad=True) if torch else None
    _small("add 4x4 (requires grad)", lambda: ag + b, lambda: tg + tb)

    x = ember.from_numpy(np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32))
    x.requires_grad_(True)

    def e_step():
        (x * x).exp().sum().backward()

    t_step = None
    if torch:
        tx = torch.from_numpy(x.detach().numpy().copy()).requires_grad_(True)

        def t_step():
            (tx * tx).exp().sum().backward()
    _small("mul-exp-sum fwd+bwd 16x16", e_step, t_step)
    _small("dynamic-net SGD step (64, 1000-100-10)", _dynamic_net(ember, 64),
           _dynamic_net(torch, 64) if torch else None, min_time=1, repeat=5)

    for n in (256, 1024, 2048):
        A = np.random.default_rng(1).standard_normal((n, n)).astype(np.float32)
        ea, eb = ember.from_numpy(A), ember.from_numpy(A.copy())
        flop = 2 * n ** 3
        te = bench(lambda: ember.matmul(ea, eb), min_time=0.5, repeat=3)
        tn = bench(lambda: A @ A, min_time=0.5, repeat=3)
        tt = None
        if torch:
            T = torch.from_numpy(A)
            tt = bench(lambda: T @ T, min_time=0.5, repeat=3)
        row(f"matmul {n} f32", te, tt, tn,
            f"{flop / te / 1e9:6.1f} GFLOP/s (numpy {flop / tn / 1e9:.1f}"
            + (f", torch {flop / tt / 1e9:.1f})" if tt else ")"))

    big = np.random.default_rng(2).standard_normal(16 * 1024 * 1024).astype(np.float32)
    eb_ = ember.from_numpy(big)
    tb_ = torch.from_numpy(big) if torch else None
    row("x * 2 + 1, 16M f32", bench(lambda: eb_ * 2 + 1, min_time=1, repeat=3),
        bench(lambda: tb_ * 2 + 1, min_time=1, repeat=3) if torch else None,
        bench(lambda: big * 2 + 1, min_time=1, repeat=3))
    row("exp, 16M f32", bench(lambda: eb_.exp(), min_time=1, repeat=3),
        bench(lambda: tb_.exp(), min_time=1, repeat=3) if torch else None,
        bench(lambda: np.exp(big), min_time=1, repeat=3))
    row("sum, 16M f32", bench(lambda: eb_.sum(), min_time=1, repeat=3),
        bench(lambda: tb_.sum(), min_time=1, repeat=3) if torch else None,
        bench(lambda: big.sum(), min_time=1, repeat=3))

    def import_time(mod):
        # with bytecode caches, as any installed package has them (a first run writes them)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        code = f"import time; t=time.perf_counter(); import {mod}; print(time.perf_counter()-t)"
        runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                     text=True, check=True, env=env).stdout) for _ in range(4)]
        return min(runs[1:])
    row("import", import_time("ember"), import_time("torch") if torch else None,
        import_time("numpy"))


def side_by_side(name, ember_fn, torch_fn, numpy_fn, **kw):
    """One row timed in alternating blocks (``bench_interleaved``)."""
    fns = {"ember": ember_fn, "numpy": numpy_fn}
    if torch is not None:
        fns["torch"] = torch_fn
    t = bench_interleaved(fns, **kw)
    row(name, t["ember"], t.get("torch"), t["numpy"])


def science():
    header("scientific: fft, linalg")
    rng = np.random.default_rng(3)
    z = (rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20)).astype(np.complex64)
    ez = ember.from_numpy(z)
    tz = torch.from_numpy(z) if torch else None
    side_by_side("fft 2^20 complex64", lambda: ember.fft.fft(ez), lambda: torch.fft.fft(tz),
                 lambda: np.fft.fft(z), min_time=1, repeat=5)
    a = rng.standard_normal((512, 512))
    b = rng.standard_normal((512, 8))
    ea, eb = ember.from_numpy(a), ember.from_numpy(b)
    ta, tb = (torch.from_numpy(a), torch.from_numpy(b)) if torch else (None, None)
    side_by_side("linalg.solve 512x512 f64", lambda: ember.linalg.solve(ea, eb),
                 lambda: torch.linalg.solve(ta, tb), lambda: np.linalg.solve(a, b),
                 min_time=0.5, repeat=7)
    side_by_side("linalg.svd 512x512 f64", lambda: ember.linalg.svd(ea),
                 lambda: torch.linalg.svd(ta), lambda: np.linalg.svd(a), min_time=1, repeat=5)
    s_ = rng.standard_normal((64, 32, 32))
    s_ = s_ + np.swapaxes(s_, -1, -2)
    es = ember.from_numpy(s_)
    ts = torch.from_numpy(s_) if torch else None
    side_by_side("linalg.eigh batched 64x32x32 f64", lambda: ember.linalg.eigh(es),
                 lambda: torch.linalg.eigh(ts), lambda: np.linalg.eigh(s_), min_time=0.5,
                 repeat=7)


GROUPS = {"core": core, "science": science}


def main(argv):
    print(f"# ember benchmarks\nmachine: {machine()}\nnumpy {np.__version__}"
          + (f", torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch else ""))
    for name in (argv or list(GROUPS)):
        GROUPS[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
