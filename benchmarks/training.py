"""Training steps, ember vs torch, same architecture, same weights, plain SGD.

    python benchmarks/training.py [--ember-only] [mlp cnn lstm transformer resnet]

Each step is forward + cross-entropy + backward + SGD update. Prints per-step times and
the ratio ember/torch (lower is better); ember and torch are timed in alternating blocks
(``bench_interleaved``), so drift of a noisy host hits both. ``--ember-only`` times ember as
a user without torch runs it (torch's allocations change the C heap's state in a shared
process; Note [page faults] in ember/_allocator.py).
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import bench_interleaved, fmt_time, machine  # noqa: E402

import ember  # noqa: E402

try:
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
except ImportError:
    torch = None


def copy_weights(src_ember, dst_torch):
    """Make the torch model's parameters equal the ember model's (same names)."""
    with torch.no_grad():
        sd = {k: torch.from_numpy(np.array(v.detach().numpy()))
              for k, v in src_ember.state_dict().items()}
        dst_torch.load_state_dict(sd)


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
}


def run_case(key):
    title, build, make_x, make_y, xkind = CASES[key]
    rng = np.random.default_rng(0)
    x_np, y_np = make_x(rng), make_y(rng).astype(np.int64)
    x_np = x_np.astype(np.float32) if xkind == "float" else x_np.astype(np.int64)
    ember.manual_seed(0)
    em = build(ember)
    e_opt = ember.optim.SGD(em.parameters(), lr=0.01)
    ex, ey = ember.from_numpy(x_np), ember.from_numpy(y_np)

    def e_step():
        e_opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(em(ex), ey)
        loss.backward()
        e_opt.step()
    slow = key in ("resnet", "transformer", "lstm")
    fns = {"ember": e_step}
    if torch is not None:
        tm = build(torch)
        copy_weights(em, tm)
        t_opt = torch.optim.SGD(tm.parameters(), lr=0.01)
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)

        def t_step():
            t_opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(tm(tx), ty)
            loss.backward()
            t_opt.step()
        fns["torch"] = t_step
    times = bench_interleaved(fns, min_time=1.0 if slow else 0.5, repeat=5, warmup=1)
    te, tt = times["ember"], times.get("torch")
    ratio = f"{te / tt:6.2f}x" if tt else "   -   "
    print(f"{title:<46} {fmt_time(te)} {fmt_time(tt) if tt else '':>11}  {ratio}", flush=True)


def main(argv):
    global torch
    if "--ember-only" in argv:
        argv = [a for a in argv if a != "--ember-only"]
        torch = None
    print(f"# training steps (SGD), ember vs torch\nmachine: {machine()}"
          + (f"; torch {torch.__version__}, {torch.get_num_threads()} threads" if torch else ""))
    print(f"{'model':<46} {'ember':>11} {'torch':>11}  {'ratio':>7}")
    for key in (argv or list(CASES)):
        try:
            run_case(key)
        except Exception as e:      # a missing layer should not hide the other rows
            print(f"{CASES[key][0]:<46} failed: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main(sys.argv[1:])
