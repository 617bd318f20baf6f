"""Training steps, ember vs torch, same architecture, same weights, plain SGD (AdamW for gpt).

    python benchmarks/training.py [--ember-only] [--same-process] [mlp cnn lstm gru ...]
    python benchmarks/training.py --memory [cases]   # peak RSS, each run in its own process

Each step is forward + cross-entropy + backward + SGD update. Prints per-step times and
the ratio ember/torch (lower is better). ember and torch each run in a process of their own,
which imports only that library (``bench_processes``: a user runs one of them), and are
timed in alternating blocks, so drift of a noisy host hits both; torch's model gets
ember's initial weights. ``--same-process`` times both in one process per case as earlier
sessions did (``bench_interleaved``; torch's threads and allocations then share ember's
process: Note [page faults] in ember/_allocator.py). ``--ember-only`` skips torch.

``--memory`` runs each (case, library) in a fresh subprocess that imports only that library,
builds the model, does a few steps, and reports its peak resident memory, and in brackets the
growth of the peak during the steps over the resident memory after imports and model build.
The children inherit the environment: ``EMBER_NO_NUMBA=1`` or ``EMBER_NO_ORT_CONV=1`` measure
ember without the compiled kernels or onnxruntime's convolutions (docs/PERFORMANCE.md).
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import (cpus, bench_interleaved, bench_processes, fmt_time, machine,  # noqa: E402
                    serve_blocks)

_CHILD_LIB = sys.argv[2] if sys.argv[1:2] in (["--memory-child"], ["--serve"]) else None
ember = torch = None
if _CHILD_LIB != "torch":
    import ember  # noqa: E402
if _CHILD_LIB != "ember":
    try:
        import torch
        torch.set_num_threads(cpus())
    except ImportError:
        torch = None


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                         nn.ReLU(), nn.Linear(512, 10))


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


def lstm_lm(lib, cell="LSTM"):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(1000, 128)
            self.rnn = getattr(nn, cell)(128, 256, batch_first=True)
            self.out = nn.Linear(256, 1000)

        def forward(self, x):
            h, _ = self.rnn(self.emb(x))
            return self.out(h).reshape(-1, 1000)
    return LM()


def transformer(lib):
    nn = lib.nn

    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(256, 10)

        def forward(self, x):
            return self.head(self.enc(x).mean(1))
    return Enc()


def resnet18ish(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = lib.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return lib.relu(y + (x if self.down is None else self.down(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            chans, layers, cin = [64, 128, 256, 512], [], 64
            for i, c in enumerate(chans):
                layers += [Block(cin, c, 1 if i == 0 else 2), Block(c, c, 1)]
                cin = c
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(512, 10)

        def forward(self, x):
            return self.fc(self.layers(self.stem(x)).mean((2, 3)))
    return Net()


def gpt(lib):
    """minGPT-style decoder: token + position embedding, 2 pre-LN blocks of causal
    self-attention (one Linear for q, k, v; ``scaled_dot_product_attention(is_causal=True)``)
    and a GELU MLP, final LayerNorm, vocabulary head. Input (B, T) tokens, output (B*T, V)."""
    nn, F = lib.nn, lib.nn.functional
    vocab, block, d, heads = 65, 64, 128, 4

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
            self.blocks = nn.Sequential(Block(), Block())
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(lib.arange(t))
            return self.head(self.ln_f(self.blocks(x))).reshape(-1, vocab)
    return GPT()


CASES = {
    "mlp": ("MLP 784-512-512-10, batch 128", mlp, lambda r: r.standard_normal((128, 784)),
            lambda r: r.integers(0, 10, 128), "float"),
    "cnn": ("CNN 2x(conv-BN-ReLU-pool), batch 64", cnn,
            lambda r: r.standard_normal((64, 1, 28, 28)), lambda r: r.integers(0, 10, 64),
            "float"),
    "lstm": ("LSTM LM emb 1000x128, LSTM 256, 32x35", lstm_lm,
             lambda r: r.integers(0, 1000, (32, 35)), lambda r: r.integers(0, 1000, 32 * 35),
             "long"),
    "gru": ("GRU LM emb 1000x128, GRU 256, 32x35", lambda lib: lstm_lm(lib, "GRU"),
            lambda r: r.integers(0, 1000, (32, 35)), lambda r: r.integers(0, 1000, 32 * 35),
            "long"),
    "transformer": ("TransformerEncoder 2L d256 h4 ff1024, 16x64", transformer,
                    lambda r: r.standard_normal((16, 64, 256)), lambda r: r.integers(0, 10, 16),
                    "float"),
    "resnet": ("ResNet-18-style 224x224, batch 8", resnet18ish,
               lambda r: r.standard_normal((8, 3, 224, 224)), lambda r: r.integers(0, 10, 8),
               "float"),
    "gpt": ("GPT 2L d128 h4 vocab 65, 16x64, AdamW", gpt,
            lambda r: r.integers(0, 65, (16, 64)), lambda r: r.integers(0, 65, 16 * 64), "long"),
}

# Optimizers other than plain SGD(lr=0.01), by case: (class name, keyword arguments).
OPTIMIZERS = {"gpt": ("AdamW", dict(lr=3e-4, weight_decay=0.1))}


def make_optimizer(lib, key, params):
    name, kwargs = OPTIMIZERS.get(key, ("SGD", dict(lr=0.01)))
    return getattr(lib.optim, name)(params, **kwargs)


def _case_inputs(key):
    title, build, make_x, make_y, xkind = CASES[key]
    rng = np.random.default_rng(0)
    x_np, y_np = make_x(rng), make_y(rng).astype(np.int64)
    x_np = x_np.astype(np.float32) if xkind == "float" else x_np.astype(np.int64)
    return x_np, y_np


def _step_fn(lib, key, weights):
    """One training step of case ``key`` in ``lib``; ember builds the model from its seed and
    saves its weights to ``weights`` (.npz), torch loads them from there."""
    build = CASES[key][1]
    x_np, y_np = _case_inputs(key)
    lib.manual_seed(0)
    model = build(lib)
    if lib is ember:
        np.savez(weights, **{k: v.detach().numpy() for k, v in model.state_dict().items()})
    else:
        with np.load(weights) as z:
            with torch.no_grad():
                model.load_state_dict({k: torch.from_numpy(z[k].copy()) for k in z.files})
    opt = make_optimizer(lib, key, model.parameters())
    x, y = lib.from_numpy(x_np), lib.from_numpy(y_np)

    def step():
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def serve(lib_name, key, weights):
    """A ``bench_processes`` child: one library, one case."""
    lib = ember if lib_name == "ember" else torch
    if lib is torch:
        torch.set_num_threads(cpus())
    serve_blocks(_step_fn(lib, key, weights))


_SLOW = ("resnet", "transformer", "lstm", "gru", "gpt")


def run_case_processes(key, ember_only=False):
    """Case ``key`` with ember and torch each in a process of its own, blocks alternating."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "weights.npz")
        children = {lib: [__file__, "--serve", lib, key, weights]
                    for lib in (["ember"] if ember_only else ["ember", "torch"])}
        times = bench_processes(children, min_time=1.0 if key in _SLOW else 0.5, repeat=5,
                                warmup=1)
    _print_row(key, times)


def _print_row(key, times):
    te, tt = times["ember"], times.get("torch")
    ratio = f"{te / tt:6.2f}x" if tt else "   -   "
    print(f"{CASES[key][0]:<46} {fmt_time(te)} {fmt_time(tt) if tt else '':>11}  {ratio}",
          flush=True)


def run_case(key):
    """Case ``key`` with ember and torch in this process (``--same-process``)."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "weights.npz")
        fns = {"ember": _step_fn(ember, key, weights)}     # (saves the weights torch loads)
        if torch is not None:
            fns["torch"] = _step_fn(torch, key, weights)
    times = bench_interleaved(fns, min_time=1.0 if key in _SLOW else 0.5, repeat=5, warmup=1)
    _print_row(key, times)


MEMORY_STEPS = 3


def _status_kb(field):
    """A ``/proc/self/status`` field in KiB (``VmRSS``: resident now; ``VmHWM``: its peak), or
    0 where /proc is absent."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak_rss():
    """Restart the kernel's peak-RSS count at the current RSS (Linux ``clear_refs`` 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def memory_child(lib_name, key, steps):
    """In a fresh process: build ``key`` with one library, run ``steps`` training steps, print
    ``base peak step_peak`` in KiB: RSS after imports + build, the process's peak RSS, and the
    peak RSS during the steps. Peaks are VmHWM, not ``ru_maxrss``: a child's ``ru_maxrss``
    starts at its parent's RSS at fork (the exec keeps the larger of the two)."""
    import gc
    lib = ember if lib_name == "ember" else torch
    build = CASES[key][1]
    x_np, y_np = _case_inputs(key)
    lib.manual_seed(0)
    model = build(lib)
    opt = make_optimizer(lib, key, model.parameters())
    x, y = lib.from_numpy(x_np), lib.from_numpy(y_np)
    gc.collect()
    base, import_peak = _status_kb("VmRSS"), _status_kb("VmHWM")
    _reset_peak_rss()
    for _ in range(steps):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    step_peak = _status_kb("VmHWM")
    print(base, max(import_peak, step_peak), step_peak, flush=True)


def _measure(lib_name, key, steps):
    """(base, peak, step peak) in MiB of one (library, case) run in its own process."""
    import subprocess
    out = subprocess.run([sys.executable, __file__, "--memory-child", lib_name, key, str(steps)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    return tuple(int(v) / 1024 for v in out.stdout.split()[-3:])


def memory_main(keys, steps=MEMORY_STEPS):
    """Peak RSS per case, ember beside torch, each (case, library) in its own process."""
    libs = ["ember"] + (["torch"] if torch is not None else [])
    print(f"# peak resident memory over {steps} training steps (MiB), each run in its own "
          f"process\nmachine: {machine()}")
    print(f"{'model':<46} {'ember peak (+step)':>19} {'torch peak (+step)':>19}"
          f"  {'ratio peak':>10} {'ratio +step':>11}")
    for key in keys:
        title = CASES[key][0]
        try:
            res = {lib: _measure(lib, key, steps) for lib in libs}
        except Exception as e:
            print(f"{title:<46} failed: {e}")
            continue
        cells = [f"{peak:8.0f} (+{step - base:6.0f})" for base, peak, step in res.values()]
        row = f"{title:<46} " + " ".join(f"{c:>19}" for c in cells)
        if "torch" in res:
            (eb, ep, es), (tb, tp, ts) = res["ember"], res["torch"]
            row += f"  {ep / tp:9.2f}x {(es - eb) / max(ts - tb, 1e-9):10.2f}x"
        print(row, flush=True)


def main(argv):
    global torch
    if argv[:1] == ["--memory-child"]:
        memory_child(argv[1], argv[2], int(argv[3]))
        return
    if argv[:1] == ["--serve"]:
        serve(*argv[1:4])
        return
    if "--memory" in argv:
        memory_main([a for a in argv if a != "--memory"] or list(CASES))
        return
    same = "--same-process" in argv
    ember_only = "--ember-only" in argv or torch is None
    argv = [a for a in argv if a not in ("--same-process", "--ember-only")]
    if argv[:1] == ["--row"]:           # one case in this process (--same-process)
        if ember_only:
            torch = None
        run_case(argv[1])
        return
    keys = argv or list(CASES)
    unknown = [k for k in keys if k not in CASES]
    if unknown:
        sys.exit(f"unknown case(s) {', '.join(unknown)}; cases: {' '.join(CASES)}\n"
                 + __doc__.split("\n\n")[1])
    print(f"# training steps ({'one process' if same else 'a process per library'}), "
          f"ember vs torch\nmachine: {machine()}"
          + (f"; torch {torch.__version__}, {cpus()} threads" if not ember_only else ""))
    print(f"{'model':<46} {'ember':>11} {'torch':>11}  {'ratio':>7}")
    if not same:
        for key in keys:
            try:
                run_case_processes(key, ember_only)
            except Exception as e:
                print(f"{CASES[key][0]:<46} failed: {e}", flush=True)
        return
    # --same-process: each case in its own process, ember and torch both in it (Note [one
    # thread plan] in ember/_kernels/numpy_blas.py: once onnxruntime's convolutions ran,
    # ember's GEMMs stay on its own pool for the rest of the process)
    import subprocess
    flags = ["--ember-only"] if ember_only else []
    for key in keys:
        out = subprocess.run([sys.executable, __file__, *flags, "--row", key],
                             capture_output=True, text=True)
        row = out.stdout.strip().splitlines()[-1:] if out.returncode == 0 else []
        print(row[0] if row else f"{CASES[key][0]:<46} failed: "
              f"{(out.stderr.strip().splitlines() or ['?'])[-1]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
